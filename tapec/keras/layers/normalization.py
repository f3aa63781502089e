"""Normalization layers: BatchNormalization (moving statistics) and LayerNormalization.

Both normalize as Keras 3 on TensorFlow does, with TensorFlow's `nn.moments` and
`nn.batch_normalization`:

    mean = mean(x),  variance = mean((x - stop_gradient(mean))^2)   over the reduced axes
    inv  = gamma / sqrt(variance + epsilon)
    y    = x * inv + (beta - mean * inv)

The stop_gradient is TensorFlow's: first derivatives are the true ones (the term it
drops sums to zero), and second derivatives (Hessians through a normalization in
training mode) are TensorFlow's, which leave out the variance's dependence on the
mean (docs/keras_layers.md).

BatchNormalization in training (`training=True` and the layer trainable) normalizes
with the batch's statistics and moves its moving statistics towards them:

    moving_mean     <- moving_mean * momentum + mean * (1 - momentum)
    moving_variance <- moving_variance * momentum + variance * (1 - momentum)

(`Variable.assign`, eagerly or inside tapec.function); otherwise it normalizes with
the moving statistics.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...ops import elementwise as ew
from ...ops.math_extra import rsqrt
from ...ops.reduce import reduce_mean, reduce_sum
from ...ops.shape import cast, expand_dims, reshape, stop_gradient
from ...tensor import convert_to_tensor
from .. import initializers, regularizers
from .base import Layer
from .core import _constraint, _serialized_initializer, _serialized_regularizer

__all__ = ["BatchNormalization", "LayerNormalization"]

_MASK_EPSILON = 1e-7        # Keras' backend.epsilon(), guarding a fully masked batch


def moments(x, axes):
    """TensorFlow's `nn.moments` with keepdims: (mean, variance), the variance's mean
    held by stop_gradient."""
    mean = reduce_mean(x, axis=axes, keepdims=True)
    variance = reduce_mean(ew.square(ew.subtract(x, stop_gradient(mean))), axis=axes,
                           keepdims=True)
    return mean, variance


def normalize(x, mean, variance, offset, scale, epsilon):
    """TensorFlow's `nn.batch_normalization`: x * inv + (offset - mean * inv) with
    inv = scale / sqrt(variance + epsilon); `offset` and `scale` may be None."""
    inv = rsqrt(ew.add(variance, epsilon))
    if scale is not None:
        inv = ew.multiply(inv, scale)
    shift = ew.negative(ew.multiply(mean, inv)) if offset is None else \
        ew.subtract(offset, ew.multiply(mean, inv))
    return ew.add(ew.multiply(x, inv), shift)


def _move(moving, batch, momentum, dtype):
    """moving <- moving * momentum + batch * (1 - momentum); returns the new value."""
    moved = ew.add(ew.multiply(cast(moving, dtype), momentum),
                   ew.multiply(reshape(batch, (-1,)), 1.0 - momentum))
    moving.assign(cast(moved, moving.dtype))
    return moved


def _renorm_clipping(clipping):
    """Keras 3's checks of `renorm_clipping`: keys rmax, rmin, dmax; rmax >= rmin; dmax >= 0."""
    clipping = dict(clipping or {})
    if set(clipping) - {"rmax", "rmin", "dmax"}:
        raise ValueError(f"Received invalid keys for `renorm_clipping` argument: {clipping}. "
                         "Supported values: ['rmax', 'rmin', 'dmax'].")
    rmax, rmin, dmax = clipping.get("rmax"), clipping.get("rmin"), clipping.get("dmax")
    if rmax is not None and rmin is not None and rmax < rmin:
        raise ValueError(f"rmax should be greater than rmin in the `renorm_clipping` "
                         f"argument. Received: rmax={rmax}, rmin={rmin}.")
    if dmax is not None and dmax < 0:
        raise ValueError(f"dmax should be non-negative in the `renorm_clipping` argument. "
                         f"Received: dmax={dmax}.")
    return clipping


def _upcast(x):
    """float16 inputs are normalized in float32 (their statistics overflow), as Keras."""
    return cast(x, "float32") if x.dtype == "float16" else x


def _axis(layer, axis, rank):
    if not -rank <= axis < rank:
        raise ValueError(f"{layer}: axis {axis} is out of bounds for an input of rank "
                         f"{rank}")
    return axis % rank


def _weights_config(layer):
    return {"beta_initializer": _serialized_initializer(layer.beta_initializer),
            "gamma_initializer": _serialized_initializer(layer.gamma_initializer),
            "beta_regularizer": _serialized_regularizer(layer.beta_regularizer),
            "gamma_regularizer": _serialized_regularizer(layer.gamma_regularizer)}


class BatchNormalization(Layer):
    """Normalize each feature (the `axis` entries) with the batch's mean and variance in
    training and with moving averages of them in inference, then scale by `gamma` and
    shift by `beta` (Keras 3's `BatchNormalization`).

    Weights, in Keras' order: gamma (if `scale`), beta (if `center`), moving_mean and
    moving_variance (non-trainable), and with `renorm` (batch renormalization)
    moving_stddev, renorm_mean and renorm_stddev. A frozen layer (`trainable=False`) runs in
    inference mode even when called with `training=True`, as in Keras 3."""

    def __init__(self, axis: int = -1, momentum: float = 0.99, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True, beta_initializer: Any = "zeros",
                 gamma_initializer: Any = "ones", moving_mean_initializer: Any = "zeros",
                 moving_variance_initializer: Any = "ones", beta_regularizer: Any = None,
                 gamma_regularizer: Any = None, beta_constraint: Any = None,
                 gamma_constraint: Any = None, renorm: bool = False,
                 renorm_clipping: Any = None, renorm_momentum: float = 0.99,
                 synchronized: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.renorm = bool(renorm)
        self.renorm_clipping = _renorm_clipping(renorm_clipping) if renorm else renorm_clipping
        self.renorm_momentum = float(renorm_momentum)
        if isinstance(axis, (list, tuple)) or isinstance(axis, bool):
            raise TypeError(f"BatchNormalization: axis must be an int (Keras 3), got "
                            f"{axis!r}")
        self.axis = int(axis)
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.center = bool(center)
        self.scale = bool(scale)
        # One process: the batch is the whole batch, so synchronized changes nothing.
        self.synchronized = bool(synchronized)
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = _constraint("BatchNormalization", beta_constraint)
        self.gamma_constraint = _constraint("BatchNormalization", gamma_constraint)
        self.supports_masking = True
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None

    def build(self, input_shape):
        axis = _axis(f"BatchNormalization {self.name!r}", self.axis, len(input_shape))
        if input_shape[axis] is None:
            raise ValueError(f"BatchNormalization {self.name!r}: axis {self.axis} of the "
                             f"input must have a known size, got shape {input_shape}")
        shape = (input_shape[axis],)
        if self.scale:
            self.gamma = self.add_weight(shape=shape, name="gamma",
                                         initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint)
        if self.center:
            self.beta = self.add_weight(shape=shape, name="beta",
                                        initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint)
        self.moving_mean = self.add_weight(shape=shape, name="moving_mean",
                                           initializer=self.moving_mean_initializer,
                                           trainable=False)
        self.moving_variance = self.add_weight(shape=shape, name="moving_variance",
                                               initializer=self.moving_variance_initializer,
                                               trainable=False)
        if self.renorm:
            # Batch renormalization tracks standard deviations (Keras 3, after the paper):
            # moving_stddev for inference and renorm_mean / renorm_stddev for training.
            def stddev(shape, dtype=None):
                variance = initializers.get(self.moving_variance_initializer)(shape, dtype)
                return ew.sqrt(convert_to_tensor(variance))

            self.moving_stddev = self.add_weight(shape=shape, name="moving_stddev",
                                                 initializer=stddev, trainable=False)
            self.renorm_mean = self.add_weight(shape=shape, name="renorm_mean",
                                               initializer=self.moving_mean_initializer,
                                               trainable=False)
            self.renorm_stddev = self.add_weight(shape=shape, name="renorm_stddev",
                                                 initializer=stddev, trainable=False)
        self._rank = len(input_shape)
        self.built = True

    def call(self, inputs, training=None, mask=None):
        rank = len(inputs.shape)
        if rank != self._rank:
            raise ValueError(f"BatchNormalization {self.name!r}: built for inputs of rank "
                             f"{self._rank}, got shape {tuple(inputs.shape)}")
        axis = _axis(f"BatchNormalization {self.name!r}", self.axis, rank)
        reduced = [a for a in range(rank) if a != axis]
        # The statistics broadcast against the input: (1, ..., features, ..., 1).
        kept = tuple(-1 if a == axis else 1 for a in range(rank))
        given_dtype, inputs = inputs.dtype, _upcast(inputs)

        def feature(v):
            return None if v is None else reshape(cast(v, inputs.dtype), kept)

        beta, gamma = feature(self.beta), feature(self.gamma)
        if training and self.trainable:
            mean, variance = self._moments(inputs, reduced, mask)
            if self.renorm:
                gamma, beta = self._renormalized(mean, variance, gamma, beta, feature)
            else:
                _move(self.moving_mean, mean, self.momentum, inputs.dtype)
                _move(self.moving_variance, variance, self.momentum, inputs.dtype)
        else:
            mean, variance = feature(self.moving_mean), feature(self.moving_variance)
        return cast(normalize(inputs, mean, variance, beta, gamma, self.epsilon), given_dtype)

    def _renormalized(self, mean, variance, gamma, beta, feature):
        """Batch renormalization (Keras 3's): the batch-normalized x becomes x r + d, with
        r = stddev / renorm_stddev and d = (mean - renorm_mean) / renorm_stddev clipped by
        `renorm_clipping` and held constant in the gradient, folded into (gamma, beta);
        then the statistics move (moving_variance = relu(moving_stddev^2 - epsilon))."""
        stddev = ew.sqrt(ew.add(variance, self.epsilon))
        floor = np.sqrt(np.asarray(self.epsilon, mean.dtype.name))
        renorm_stddev = ew.maximum(feature(self.renorm_stddev), floor)
        r = ew.divide(stddev, renorm_stddev)
        d = ew.divide(ew.subtract(mean, feature(self.renorm_mean)), renorm_stddev)
        clip = self.renorm_clipping
        if clip.get("rmin") is not None:
            r = ew.maximum(r, clip["rmin"])
        if clip.get("rmax") is not None:
            r = ew.minimum(r, clip["rmax"])
        if clip.get("dmax") is not None:
            d = ew.minimum(ew.maximum(d, -clip["dmax"]), clip["dmax"])
        r, d = stop_gradient(r), stop_gradient(d)
        new_gamma = r if gamma is None else ew.multiply(r, gamma)
        new_beta = d if gamma is None else ew.multiply(d, gamma)
        new_beta = new_beta if beta is None else ew.add(new_beta, beta)
        dtype = mean.dtype
        _move(self.renorm_mean, mean, self.renorm_momentum, dtype)
        _move(self.renorm_stddev, stddev, self.renorm_momentum, dtype)
        _move(self.moving_mean, mean, self.momentum, dtype)
        moved = _move(self.moving_stddev, stddev, self.momentum, dtype)
        self.moving_variance.assign(cast(ew.relu(ew.subtract(ew.square(moved), self.epsilon)),
                                         self.moving_variance.dtype))
        return new_gamma, new_beta

    def _moments(self, x, reduced, mask):
        if mask is None:
            return moments(x, reduced)
        # Keras 3's masked moments: the masked-out positions (mask has x's rank minus
        # the feature axis) take no part in the mean or the variance.
        mask = convert_to_tensor(mask)
        if len(mask.shape) != len(x.shape) - 1:
            raise ValueError(f"BatchNormalization {self.name!r}: the mask must have one "
                             f"dimension less than the inputs, got mask shape "
                             f"{tuple(mask.shape)} and inputs shape {tuple(x.shape)}")
        if reduced[-1] == len(x.shape) - 1:
            raise ValueError(f"BatchNormalization {self.name!r}: a mask needs the feature "
                             f"axis last (axis=-1), got axis={self.axis}")
        keep = cast(expand_dims(mask, -1), x.dtype)
        weight = ew.add(reduce_sum(keep, axis=reduced, keepdims=True), _MASK_EPSILON)
        mean = ew.divide(reduce_sum(ew.multiply(x, keep), axis=reduced, keepdims=True),
                         weight)
        variance = ew.divide(reduce_sum(ew.multiply(ew.square(ew.subtract(x, mean)), keep),
                                        axis=reduced, keepdims=True), weight)
        return mean, variance

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "momentum": self.momentum,
                "epsilon": self.epsilon, "center": self.center, "scale": self.scale,
                **_weights_config(self),
                "moving_mean_initializer": _serialized_initializer(
                    self.moving_mean_initializer),
                "moving_variance_initializer": _serialized_initializer(
                    self.moving_variance_initializer),
                "synchronized": self.synchronized, "renorm": self.renorm,
                "renorm_clipping": self.renorm_clipping,
                "renorm_momentum": self.renorm_momentum}


class LayerNormalization(Layer):
    """Normalize each example over `axis` (an int or a list of ints, default the last)
    with its own mean and variance, then scale by `gamma` and shift by `beta` (Keras 3's
    `LayerNormalization`). With `rms_scaling=True` the input is divided by
    sqrt(variance + epsilon) and multiplied by gamma, without centering (Keras 3's
    formula, which uses the variance)."""

    def __init__(self, axis: Any = -1, epsilon: float = 1e-3, center: bool = True,
                 scale: bool = True, rms_scaling: bool = False,
                 beta_initializer: Any = "zeros", gamma_initializer: Any = "ones",
                 beta_regularizer: Any = None, gamma_regularizer: Any = None,
                 beta_constraint: Any = None, gamma_constraint: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.supports_masking = True
        if isinstance(axis, (list, tuple)):
            self.axis = [int(a) for a in axis]
        elif isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
            self.axis = int(axis)
        else:
            raise TypeError(f"LayerNormalization: axis must be an int or a list of ints, "
                            f"got {axis!r}")
        self.epsilon = float(epsilon)
        self.center = bool(center)
        self.scale = bool(scale)
        self.rms_scaling = bool(rms_scaling)
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = _constraint("LayerNormalization", beta_constraint)
        self.gamma_constraint = _constraint("LayerNormalization", gamma_constraint)
        self.supports_masking = True
        self.gamma = self.beta = None

    def _axes(self, rank):
        axes = self.axis if isinstance(self.axis, list) else [self.axis]
        return sorted(_axis(f"LayerNormalization {self.name!r}", a, rank) for a in axes)

    def build(self, input_shape):
        axes = self._axes(len(input_shape))
        shape = tuple(input_shape[a] for a in axes)
        if None in shape:
            raise ValueError(f"LayerNormalization {self.name!r}: the normalized axes "
                             f"{self.axis} must have known sizes, got shape {input_shape}")
        if self.scale or self.rms_scaling:
            self.gamma = self.add_weight(shape=shape, name="gamma",
                                         initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint)
        if self.center and not self.rms_scaling:
            self.beta = self.add_weight(shape=shape, name="beta",
                                        initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint)
        self.built = True

    def call(self, inputs):
        rank = len(inputs.shape)
        axes = self._axes(rank)
        given_dtype, inputs = inputs.dtype, _upcast(inputs)
        kept = tuple(inputs.shape[a] if a in axes else 1 for a in range(rank))

        def weight(v):
            return None if v is None else reshape(cast(v, inputs.dtype), kept)

        if self.rms_scaling:
            # tf.math.reduce_variance: no stop_gradient here.
            variance = reduce_mean(ew.square(ew.subtract(
                inputs, reduce_mean(inputs, axis=axes, keepdims=True))), axis=axes,
                keepdims=True)
            y = ew.multiply(inputs, rsqrt(ew.add(variance, self.epsilon)))
            y = y if self.gamma is None else ew.multiply(y, weight(self.gamma))
        else:
            mean, variance = moments(inputs, axes)
            y = normalize(inputs, mean, variance, weight(self.beta), weight(self.gamma),
                          self.epsilon)
        return cast(y, given_dtype)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon,
                "center": self.center, "scale": self.scale, "rms_scaling": self.rms_scaling,
                **_weights_config(self)}
