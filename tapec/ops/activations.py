"""TensorFlow's activations and small nn helpers, as composites of existing primitives.

Each is written so that its gradient, from the primitives' rules, is TensorFlow's at
the kinks: elu, leaky_relu and relu6 branch with `where` on `x > 0`, selu on `x >= 0`
(elu' = 1, selu' = scale and leaky_relu' = alpha at 0, relu6' = 0 at 0 and at 6, as
TensorFlow's EluGrad, SeluGrad, LeakyReluGrad and Relu6Grad). A branch that would
overflow where it is not selected is evaluated on a safe argument (elu's expm1 on
min(x, 0)), so that its zero cotangent never meets an inf.
"""
from __future__ import annotations

import math

import numpy as np

from ..tensor import Tensor
from .elementwise import (abs, add, erf, expm1, greater, greater_equal, less, minimum,
                          multiply, sigmoid, softplus, square, tanh, where)
from .reduce import normalize_axis, reduce_mean, reduce_sum
from .registry import to_tensors
from .shape import cast, reshape

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _floating(name, x, arg="features"):
    """`x` as a tensor of a floating dtype (TypeError naming `name` otherwise)."""
    (x,) = to_tensors(name, [x])
    if x._dtype.kind != "f":
        raise TypeError(f"{name}: {arg} must be a floating tensor (float16, float32 or "
                        f"float64), got dtype {x._dtype.name} {x._shape}")
    return x


def elu(features, name=None):
    """Exponential linear unit: x for x > 0, exp(x) - 1 otherwise."""
    x = _floating("elu", features)
    return where(greater(x, 0), x, expm1(minimum(x, 0)))


def selu(features, name=None):
    """Scaled exponential linear unit: scale * elu with alpha = 1.6732632...,
    scale = 1.0507009... (Klambauer et al., 2017)."""
    x = _floating("selu", features)
    negative = multiply(expm1(minimum(x, 0)), _SELU_ALPHA)
    # x >= 0 selects the linear branch at 0, so selu'(0) = scale (TensorFlow's SeluGrad)
    return multiply(where(greater_equal(x, 0), x, negative), _SELU_SCALE)


def leaky_relu(features, alpha=0.2, name=None):
    """x for x > 0, alpha * x otherwise (the gradient at 0 is alpha). Integer features
    are cast to float32 first, as TensorFlow does."""
    (x,) = to_tensors("leaky_relu", [features])
    if x._dtype.kind in "iu":
        x = cast(x, np.float32)
    x = _floating("leaky_relu", x)
    if isinstance(alpha, np.ndarray) and alpha.ndim == 0:
        alpha = alpha.item()
    if not isinstance(alpha, (int, float, np.integer, np.floating)) or \
            isinstance(alpha, (bool, np.bool_)):
        raise TypeError(f"leaky_relu: alpha must be a Python number, got "
                        f"{type(alpha).__name__} {alpha!r:.60}")
    return where(greater(x, 0), x, multiply(x, float(alpha)))


def gelu(features, approximate=False, name=None):
    """Gaussian error linear unit: x * Phi(x) = x/2 (1 + erf(x / sqrt 2)); with
    `approximate=True` the tanh form x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    x = _floating("gelu", features)
    if not isinstance(approximate, (bool, np.bool_)):
        raise TypeError(f"gelu: approximate must be a bool, got {approximate!r:.60}")
    if approximate:
        inner = multiply(add(x, multiply(x * x * x, 0.044715)), math.sqrt(2 / math.pi))
        return multiply(multiply(x, 0.5), add(tanh(inner), 1))
    return multiply(multiply(x, 0.5), add(erf(multiply(x, 1 / math.sqrt(2))), 1))


def silu(features, beta=1.0):
    """x * sigmoid(beta * x) (`swish`); `beta` may be a tensor, which gets a gradient."""
    x = _floating("silu", features)
    if isinstance(beta, (int, float)) and not isinstance(beta, bool) and beta == 1.0:
        return multiply(x, sigmoid(x))
    x, beta = to_tensors("silu", [x, beta])
    return multiply(x, sigmoid(multiply(beta, x)))


swish = silu


def relu6(features, name=None):
    """min(max(x, 0), 6); the gradient is 1 strictly inside (0, 6), 0 elsewhere."""
    (x,) = to_tensors("relu6", [features])
    if x._dtype.kind not in "fiu":
        raise TypeError(f"relu6: features must be a real tensor, got dtype {x._dtype.name}")
    return where(greater(x, 0), where(less(x, 6), x, 6), 0)


def softsign(features, name=None):
    """x / (1 + |x|)."""
    x = _floating("softsign", features)
    return x / add(abs(x), 1)


def log_sigmoid(x, name=None):
    """log(sigmoid(x)) = -softplus(-x), without overflow for large |x|."""
    x = _floating("log_sigmoid", x, "x")
    return -softplus(-x)


def l2_loss(t, name=None):
    """sum(t ** 2) / 2, a scalar of t's dtype."""
    t = _floating("l2_loss", t, "t")
    return multiply(reduce_sum(square(t)), 0.5)


def moments(x, axes, shift=None, keepdims=False, name=None):
    """(mean, variance) of `x` over `axes` (a list of ints), kept as size-1 dimensions
    with `keepdims=True`. The variance is mean((x - mean)^2); its derivative includes
    the mean's dependence on x (TensorFlow stops that gradient, which changes only
    second derivatives; see docs/semantics.md). `shift` is accepted and unused, as in
    TensorFlow 2."""
    x = _floating("moments", x, "x")
    if axes is None:
        raise TypeError("moments: axes must be a list of ints, got None")
    axes = normalize_axis("moments", axes, len(x._shape))
    mean = reduce_mean(x, axes, keepdims=True)
    variance = reduce_mean(square(x - mean), axes, keepdims=True)
    if not keepdims:
        kept = tuple(s for i, s in enumerate(x._shape) if i not in axes)
        mean, variance = reshape(mean, kept), reshape(variance, kept)
    return mean, variance


def _noise_shape(noise_shape, shape):
    """TensorFlow's noise shape: None entries take x's dimension; it must broadcast."""
    if noise_shape is None:
        return shape
    if hasattr(noise_shape, "numpy"):
        noise_shape = noise_shape.numpy().tolist()
    noise_shape = list(noise_shape)
    if len(noise_shape) != len(shape):
        raise ValueError(f"dropout: noise_shape {noise_shape} must have x's rank "
                         f"{len(shape)} (x has shape {shape})")
    result = tuple(s if n is None else int(n) for n, s in zip(noise_shape, shape))
    if any(n not in (1, s) for n, s in zip(result, shape)):
        raise ValueError(f"dropout: noise_shape {noise_shape} does not broadcast to x's "
                         f"shape {shape}")
    return result


def dropout(x, rate, noise_shape=None, seed=None, name=None):
    """Zero each element with probability `rate` and scale the kept ones by
    1 / (1 - rate). The gradient is the same scaled mask.

    The mask is drawn from `tapec.random` (seeded by `seed` and the global seed): a
    uniform draw u of `noise_shape` (x's shape by default), keeping the elements
    where u >= rate. Inside a `tapec.function` the draw is a random input of the
    program: every call draws a fresh mask, and a gradient taken in that call uses
    the same mask as its value."""
    from .. import random
    x = _floating("dropout", x, "x")
    if hasattr(rate, "numpy"):
        rate = rate.numpy()
    if not isinstance(rate, (int, float, np.integer, np.floating)) or \
            isinstance(rate, (bool, np.bool_)) or not 0 <= rate < 1:
        raise ValueError(f"dropout: rate must be a scalar tensor or a float in the range "
                         f"[0, 1), got {rate!r:.60}")
    if rate == 0:
        return x
    # a noise shape computed in a trace (tf.shape(x)) is read when the program runs
    traced = None if noise_shape is None else random._traced_shape(noise_shape)
    if traced is not None and (traced._dtype.kind not in "iu" or len(traced._shape) != 1):
        traced = None
    shape = _noise_shape(noise_shape if traced is None else traced._value.tolist(),
                         x._shape)
    uniform = random._draw("uniform", shape, x._dtype, random._seed(seed, "nn.dropout"),
                           (0.0, 1.0), "nn.dropout", shape_tensor=traced)
    keep = cast(greater_equal(uniform, float(rate)), x._dtype)
    return multiply(multiply(x, 1 / (1 - float(rate))), keep)


__all__ = ["elu", "selu", "leaky_relu", "gelu", "silu", "swish", "relu6", "softsign",
           "log_sigmoid", "l2_loss", "moments", "dropout"]
