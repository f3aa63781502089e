"""Keras initializers (`tf.keras.initializers`), with Keras 3's formulas and seeding.

An initializer is called as `init(shape, dtype="float32")` and returns a tensor. The
variance-scaling family draws with standard deviation sqrt(scale / n), where n is the
fan-in, the fan-out or their mean (`mode`); a truncated normal (cut at two standard
deviations) is widened by 1 / 0.87962566103423978, the standard deviation of a unit
normal truncated to [-2, 2], so that the samples have the intended variance; a
uniform draws from [-limit, limit] with limit = sqrt(3 scale / n).

Seeds: an initializer given an int `seed` returns the same values at every call (as
Keras 3); without one it draws from `tapec.random`, so `tapec.random.set_seed` (and
`keras.utils.set_random_seed`) makes a program's weights reproducible.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import random
from ..tensor import Tensor, convert_to_tensor

__all__ = ["Initializer", "Zeros", "Ones", "Constant", "RandomNormal", "RandomUniform",
           "TruncatedNormal", "VarianceScaling", "GlorotUniform", "GlorotNormal",
           "HeUniform", "HeNormal", "LecunUniform", "LecunNormal", "get", "serialize",
           "deserialize"]

_TRUNCATED_STDDEV = 0.87962566103423978   # stddev of a unit normal truncated to [-2, 2]


def compute_fans(shape: tuple) -> tuple[float, float]:
    """(fan_in, fan_out) as Keras computes them: a kernel (..., in, out) counts its
    receptive field (the leading dimensions) in both."""
    shape = tuple(shape)
    if len(shape) == 0:
        return 1.0, 1.0
    if len(shape) == 1:
        return float(shape[0]), float(shape[0])
    receptive_field = math.prod(shape[:-2])
    return float(shape[-2] * receptive_field), float(shape[-1] * receptive_field)


class Initializer:
    """The base class: `__call__(shape, dtype=None)`, `get_config`, `from_config`."""

    def __call__(self, shape: Any, dtype: Any = None) -> Tensor:
        raise NotImplementedError

    def get_config(self) -> dict[str, Any]:
        return {}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Initializer:
        return cls(**config)


def _dtype(dtype):
    if dtype is None:
        return np.dtype(np.float32)
    return np.dtype(dtype.as_numpy_dtype if hasattr(dtype, "as_numpy_dtype") else dtype)


def _floating(dtype, name):
    dtype = _dtype(dtype)
    if dtype.kind != "f":
        raise ValueError(f"{name}: expected a floating dtype, got {dtype.name}")
    return dtype


class _Seeded(Initializer):
    """A random initializer: one NumPy generator per call when seeded, else tapec.random."""

    def __init__(self, seed: int | None = None) -> None:
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int,
                                                                               np.integer))):
            raise ValueError(f"{type(self).__name__}: seed must be an int or None, got "
                             f"{seed!r:.60}")
        self.seed = None if seed is None else int(seed)

    def _normal(self, shape, mean, stddev, dtype):
        if self.seed is None:
            return random.normal(shape, mean, stddev, dtype=dtype)
        return np.random.default_rng(self.seed).normal(mean, stddev, shape).astype(dtype)

    def _uniform(self, shape, low, high, dtype):
        if self.seed is None:
            return random.uniform(shape, low, high, dtype=dtype)
        return np.random.default_rng(self.seed).uniform(low, high, shape).astype(dtype)

    def _truncated_normal(self, shape, mean, stddev, dtype):
        if self.seed is None:
            return random.truncated_normal(shape, mean, stddev, dtype=dtype)
        gen = np.random.default_rng(self.seed)
        standard = gen.standard_normal(shape)
        outside = np.abs(standard) > 2
        while outside.any():
            standard[outside] = gen.standard_normal(int(outside.sum()))
            outside = np.abs(standard) > 2
        return (mean + stddev * standard).astype(dtype)

    def get_config(self) -> dict[str, Any]:
        return {"seed": self.seed}


class Zeros(Initializer):
    """All zeros."""

    def __call__(self, shape, dtype=None):
        return convert_to_tensor(np.zeros(shape, _dtype(dtype)))


class Ones(Initializer):
    """All ones."""

    def __call__(self, shape, dtype=None):
        return convert_to_tensor(np.ones(shape, _dtype(dtype)))


class Constant(Initializer):
    """Every element `value` (a scalar)."""

    def __init__(self, value: float = 0.0) -> None:
        self.value = value

    def __call__(self, shape, dtype=None):
        return convert_to_tensor(np.full(shape, self.value, _dtype(dtype)))

    def get_config(self):
        value = self.value
        return {"value": value.tolist() if isinstance(value, np.ndarray) else value}


class RandomNormal(_Seeded):
    """Normal samples with `mean` and `stddev` (defaults 0 and 0.05)."""

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None):
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def __call__(self, shape, dtype=None):
        dtype = _floating(dtype, "RandomNormal")
        return convert_to_tensor(self._normal(tuple(shape), self.mean, self.stddev, dtype))

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class TruncatedNormal(_Seeded):
    """Normal samples with `mean` and `stddev`, redrawn beyond two standard deviations."""

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None):
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def __call__(self, shape, dtype=None):
        dtype = _floating(dtype, "TruncatedNormal")
        return convert_to_tensor(self._truncated_normal(tuple(shape), self.mean, self.stddev,
                                                        dtype))

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class RandomUniform(_Seeded):
    """Uniform samples in [minval, maxval) (defaults -0.05 and 0.05)."""

    def __init__(self, minval: float = -0.05, maxval: float = 0.05, seed: int | None = None):
        super().__init__(seed)
        self.minval, self.maxval = minval, maxval

    def __call__(self, shape, dtype=None):
        dtype = _floating(dtype, "RandomUniform")
        return convert_to_tensor(self._uniform(tuple(shape), self.minval, self.maxval, dtype))

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class VarianceScaling(_Seeded):
    """Samples with variance scale / n, n the fan-in, fan-out or their mean (`mode`);
    `distribution` "truncated_normal", "untruncated_normal" or "uniform"."""

    _MODES = ("fan_in", "fan_out", "fan_avg")
    _DISTRIBUTIONS = ("truncated_normal", "untruncated_normal", "uniform")

    def __init__(self, scale: float = 1.0, mode: str = "fan_in",
                 distribution: str = "truncated_normal", seed: int | None = None) -> None:
        super().__init__(seed)
        if scale <= 0:
            raise ValueError(f"VarianceScaling: scale must be positive, got {scale!r}")
        if mode not in self._MODES:
            raise ValueError(f"VarianceScaling: mode must be one of {self._MODES}, got "
                             f"{mode!r}")
        distribution = distribution.lower()
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in self._DISTRIBUTIONS:
            raise ValueError(f"VarianceScaling: distribution must be one of "
                             f"{self._DISTRIBUTIONS}, got {distribution!r}")
        self.scale, self.mode, self.distribution = scale, mode, distribution

    def __call__(self, shape, dtype=None):
        dtype = _floating(dtype, type(self).__name__)
        shape = tuple(shape)
        fan_in, fan_out = compute_fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[
            self.mode]
        variance = self.scale / max(1.0, n)
        if self.distribution == "truncated_normal":
            stddev = math.sqrt(variance) / _TRUNCATED_STDDEV
            values = self._truncated_normal(shape, 0.0, stddev, dtype)
        elif self.distribution == "untruncated_normal":
            values = self._normal(shape, 0.0, math.sqrt(variance), dtype)
        else:
            limit = math.sqrt(3.0 * variance)
            values = self._uniform(shape, -limit, limit, dtype)
        return convert_to_tensor(values)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed}


def _variance_scaling(name, scale, mode, distribution, doc):
    class Preset(VarianceScaling):
        def __init__(self, seed: int | None = None) -> None:
            super().__init__(scale, mode, distribution, seed)

        def get_config(self):
            return {"seed": self.seed}
    Preset.__name__ = Preset.__qualname__ = name
    Preset.__doc__ = doc
    return Preset


GlorotUniform = _variance_scaling(
    "GlorotUniform", 1.0, "fan_avg", "uniform",
    "Uniform in [-limit, limit], limit = sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio).")
GlorotNormal = _variance_scaling(
    "GlorotNormal", 1.0, "fan_avg", "truncated_normal",
    "Truncated normal, stddev = sqrt(2 / (fan_in + fan_out)) / 0.87962566103423978.")
HeUniform = _variance_scaling(
    "HeUniform", 2.0, "fan_in", "uniform",
    "Uniform in [-limit, limit], limit = sqrt(6 / fan_in) (He et al.).")
HeNormal = _variance_scaling(
    "HeNormal", 2.0, "fan_in", "truncated_normal",
    "Truncated normal, stddev = sqrt(2 / fan_in) / 0.87962566103423978.")
LecunUniform = _variance_scaling(
    "LecunUniform", 1.0, "fan_in", "uniform",
    "Uniform in [-limit, limit], limit = sqrt(3 / fan_in).")
LecunNormal = _variance_scaling(
    "LecunNormal", 1.0, "fan_in", "truncated_normal",
    "Truncated normal, stddev = sqrt(1 / fan_in) / 0.87962566103423978.")

_CLASSES = {cls.__name__: cls for cls in (
    Zeros, Ones, Constant, RandomNormal, RandomUniform, TruncatedNormal, VarianceScaling,
    GlorotUniform, GlorotNormal, HeUniform, HeNormal, LecunUniform, LecunNormal)}
_ALIASES = {"zeros": Zeros, "ones": Ones, "constant": Constant,
            "random_normal": RandomNormal, "random_uniform": RandomUniform,
            "truncated_normal": TruncatedNormal, "variance_scaling": VarianceScaling,
            "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal,
            "he_uniform": HeUniform, "he_normal": HeNormal, "lecun_uniform": LecunUniform,
            "lecun_normal": LecunNormal}


def get(identifier: Any) -> Any:
    """An initializer from a name ("glorot_uniform", "GlorotUniform", "zeros", ...), a
    config dict, an Initializer or any callable(shape, dtype=...)."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        cls = _ALIASES.get(identifier) or _CLASSES.get(identifier)
        if cls is None:
            raise ValueError(f"Could not interpret initializer identifier: {identifier!r} "
                             f"(known: {sorted(_ALIASES)})")
        return cls()
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret initializer identifier: {identifier!r:.60}")


def serialize(initializer: Any) -> dict[str, Any]:
    """{"class_name": ..., "config": ...} for a built-in initializer."""
    name = type(initializer).__name__
    if _CLASSES.get(name) is not type(initializer):
        raise ValueError(f"Cannot serialize initializer {initializer!r:.60}: only the "
                         f"built-in initializers {sorted(_CLASSES)} can be saved")
    return {"class_name": name, "config": initializer.get_config()}


def deserialize(config: dict[str, Any]) -> Initializer:
    cls = _CLASSES.get(config.get("class_name"))
    if cls is None:
        raise ValueError(f"Unknown initializer in config: {config!r:.100}")
    return cls.from_config(config.get("config", {}))


# Keras' lower-case spellings of the classes.
zeros, ones, constant = Zeros, Ones, Constant
random_normal, random_uniform, truncated_normal = RandomNormal, RandomUniform, TruncatedNormal
glorot_uniform, glorot_normal, he_uniform, he_normal = (GlorotUniform, GlorotNormal,
                                                        HeUniform, HeNormal)
lecun_uniform, lecun_normal, variance_scaling = LecunUniform, LecunNormal, VarianceScaling

# Keras 3's short names for the random initializers (Embedding's default is "uniform").
_ALIASES.update(uniform=RandomUniform, normal=RandomNormal)
