"""Random tensors (`tapec.random`), seeded like TensorFlow.

`set_seed(s)` fixes the global seed and restarts every sequence, so a program run
twice after the same `set_seed` draws the same values. An op-level `seed` picks its
own reproducible sequence under the global one. Random ops have no tensor inputs,
so tapes never record them.
"""
from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from .tensor import Tensor, _dtype_arg, shape_arg

__all__ = ["set_seed", "normal", "uniform"]

_lock = threading.Lock()
_global_seed = None
_generators = {}


def _seed(seed, what):
    """A seed: None or an int (TypeError otherwise)."""
    if seed is not None and (not isinstance(seed, (int, np.integer)) or
                             isinstance(seed, (bool, np.bool_))):
        raise TypeError(f"{what}: seed must be an int or None, got "
                        f"{type(seed).__name__} {seed!r:.60}")
    return None if seed is None else int(seed)


def set_seed(seed: int | None) -> None:
    """Set the global random seed and restart all random sequences."""
    global _global_seed
    seed = _seed(seed, "set_seed")
    with _lock:
        _global_seed = seed
        _generators.clear()


def _entropy(x: int) -> int:
    """NumPy seeds must be non-negative: a negative seed maps to its two's complement (in
    128 bits), so every int seeds its own sequence and non-negative seeds are unchanged."""
    return x if x >= 0 else x % (1 << 128)


def _generator(op_seed):
    key = (_global_seed, op_seed)
    with _lock:
        gen = _generators.get(key)
        if gen is None:
            if _global_seed is None and op_seed is None:
                gen = np.random.default_rng()
            else:
                entropy = [_entropy(x) for x in key if x is not None] + \
                    [0 if op_seed is None else 1]
                gen = np.random.default_rng(entropy)
            _generators[key] = gen
        return gen


def _shape(shape, what):
    """A shape argument as a tuple of non-negative ints (None: a scalar)."""
    return () if shape is None else shape_arg(what, shape)


def _number(value, what, name) -> float:
    """A real scalar parameter (a number or a 0-d tensor) as a float; NaN and inf pass."""
    if hasattr(value, "numpy"):
        value = value.numpy()
    kind = np.asarray(value).dtype.kind if not isinstance(value, (str, bytes)) else "U"
    if kind not in "iuf" or np.ndim(value) != 0 or isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what}: {name} must be a real number, got "
                        f"{type(value).__name__} {value!r:.60}")
    return float(value)


def _floating(dtype, what):
    dtype = _dtype_arg(what, dtype)
    if dtype.kind != "f":
        raise TypeError(f"{what}: dtype must be floating, got {dtype.name}")
    return dtype


def _tensor(array, dtype):
    array = np.asarray(array, dtype=dtype)
    array.flags.writeable = False
    return Tensor._eager(array)


def normal(shape: int | Sequence[int], mean: float = 0.0, stddev: float = 1.0,
           dtype: Any = "float32", seed: int | None = None, name: str | None = None) -> Tensor:
    """Samples from a normal distribution. A NaN or infinite mean or stddev gives NaN or
    infinite samples, as NumPy; a negative stddev raises ValueError."""
    what = "random.normal"
    dtype = _floating(dtype, what)
    shape = _shape(shape, what)
    mean, stddev = _number(mean, what, "mean"), _number(stddev, what, "stddev")
    if stddev < 0:
        raise ValueError(f"{what}: stddev must be >= 0, got {stddev!r}")
    seed = _seed(seed, what)
    return _tensor(_generator(seed).normal(mean, stddev, shape), dtype)


def uniform(shape: int | Sequence[int], minval: float = 0, maxval: float | None = None,
            dtype: Any = "float32", seed: int | None = None, name: str | None = None) -> Tensor:
    """Samples from a uniform distribution on [minval, maxval) (maxval defaults to 1).
    The bounds must be finite with minval <= maxval (minval < maxval for integers)."""
    what = "random.uniform"
    dtype = _dtype_arg(what, dtype)
    shape = _shape(shape, what)
    seed = _seed(seed, what)
    if dtype.kind in "iu":
        if maxval is None:
            raise ValueError("random.uniform: maxval must be given for integer dtypes")
        low, high = (_integer_bound(v, name) for v, name in ((minval, "minval"),
                                                            (maxval, "maxval")))
        if low >= high:
            raise ValueError(f"{what}: minval must be less than maxval for integer dtypes, "
                             f"got minval={low}, maxval={high}")
        return _tensor(_generator(seed).integers(low, high, shape), dtype)
    dtype = _floating(dtype, what)
    low = _number(minval, what, "minval")
    high = 1.0 if maxval is None else _number(maxval, what, "maxval")
    if not (math.isfinite(low) and math.isfinite(high)) or low > high:
        raise ValueError(f"{what}: minval and maxval must be finite with minval <= maxval, "
                         f"got minval={low!r}, maxval={high!r}")
    return _tensor(_generator(seed).uniform(low, high, shape), dtype)


def _integer_bound(value, name) -> int:
    number = _number(value, "random.uniform", name)
    if not number.is_integer():
        raise (ValueError if not math.isfinite(number) else TypeError)(
            f"random.uniform: {name} must be an integer for integer dtypes, got {value!r}")
    return int(value) if not isinstance(value, float) else int(number)
