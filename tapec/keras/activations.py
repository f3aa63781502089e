"""Keras activations (`tf.keras.activations`): functions by name, as Keras 3 defines them.

Each is written with tapec's ops, so it differentiates (and traces) like any other
composition; at a kink the gradient is the one of the branch `where` selects there,
which for relu, elu, selu, leaky_relu and relu6 is TensorFlow's.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..ops import activations as _act
from ..ops import nn as _nn
from ..ops.elementwise import exp, greater, less, multiply, where
from ..ops.elementwise import sigmoid as _sigmoid
from ..ops.elementwise import softplus as _softplus
from ..ops.elementwise import tanh as _tanh
from ..ops.registry import to_tensors

__all__ = ["relu", "relu6", "leaky_relu", "elu", "selu", "gelu", "sigmoid", "hard_sigmoid",
           "tanh", "softmax", "log_softmax", "softplus", "softsign", "silu", "swish",
           "hard_silu", "hard_swish", "mish", "exponential", "linear", "get", "serialize",
           "deserialize"]


def relu(x, negative_slope=0.0, max_value=None, threshold=0.0):
    """max(x, 0); with the options, Keras' generalized relu: max_value for
    x >= max_value, x for threshold < x < max_value, negative_slope * (x - threshold)
    otherwise (at x == threshold that is 0, as Keras 3 computes it; its docstring says
    the linear branch starts at the threshold)."""
    if negative_slope == 0.0 and max_value is None and threshold == 0.0:
        return _nn.relu(x)
    (x,) = to_tensors("relu", [x])
    below = multiply(x - threshold, negative_slope) if negative_slope else x * 0.0
    y = where(greater(x, threshold), x, below)
    if max_value is not None:
        y = where(less(x, max_value), y, x * 0.0 + max_value)
    return y


def relu6(x):
    """min(max(x, 0), 6)."""
    return _act.relu6(x)


def leaky_relu(x, negative_slope=0.2):
    """x for x > 0, negative_slope * x otherwise (Keras 3's default slope 0.2)."""
    return _act.leaky_relu(x, alpha=negative_slope)


def elu(x, alpha=1.0):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    y = _act.elu(x)
    if alpha == 1.0:
        return y
    (x,) = to_tensors("elu", [x])
    return where(greater(x, 0), y, multiply(y, alpha))


def selu(x):
    """scale * elu(x, alpha), alpha = 1.67326324, scale = 1.05070098."""
    return _act.selu(x)


def gelu(x, approximate=False):
    """x * Phi(x); `approximate=True` uses the tanh form."""
    return _act.gelu(x, approximate=approximate)


def sigmoid(x):
    """1 / (1 + exp(-x))."""
    return _sigmoid(x)


def hard_sigmoid(x):
    """relu6(x + 3) / 6: 0 below -3, 1 above 3, x / 6 + 1/2 between (Keras 3)."""
    return _act.relu6(x + 3.0) / 6.0


def tanh(x):
    return _tanh(x)


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along `axis`."""
    return _nn.softmax(x, axis=axis)


def log_softmax(x, axis=-1):
    """x - logsumexp(x) along `axis`."""
    return _nn.log_softmax(x, axis=axis)


def softplus(x):
    """log(1 + exp(x))."""
    return _softplus(x)


def softsign(x):
    """x / (1 + |x|)."""
    return _act.softsign(x)


def silu(x):
    """x * sigmoid(x) (also `swish`)."""
    return _act.silu(x)


swish = silu


def hard_silu(x):
    """x * hard_sigmoid(x) (also `hard_swish`)."""
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def mish(x):
    """x * tanh(softplus(x))."""
    return x * _tanh(_softplus(x))


def exponential(x):
    return exp(x)


def linear(x):
    """The identity."""
    return x


_BY_NAME: dict[str, Callable] = {f.__name__: f for f in (
    relu, relu6, leaky_relu, elu, selu, gelu, sigmoid, hard_sigmoid, tanh, softmax,
    log_softmax, softplus, softsign, silu, hard_silu, mish, exponential, linear)}
_BY_NAME.update(swish=silu, hard_swish=hard_silu)


def get(identifier: Any) -> Callable:
    """An activation from a name ("relu", ...), None (linear) or a callable."""
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        if identifier not in _BY_NAME:
            raise ValueError(f"Could not interpret activation function identifier: "
                             f"{identifier!r} (known: {sorted(_BY_NAME)})")
        return _BY_NAME[identifier]
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret activation function identifier: "
                     f"{identifier!r:.60}")


def serialize(activation: Callable) -> str:
    """The name of a built-in activation (ValueError for other callables)."""
    name = getattr(activation, "__name__", None)
    if _BY_NAME.get(name) is not activation:
        raise ValueError(f"Cannot serialize activation {activation!r:.60}: only the "
                         f"built-in activations {sorted(_BY_NAME)} have names")
    return name


def deserialize(config: Any) -> Callable:
    if isinstance(config, dict):
        config = config.get("config", config.get("class_name"))
    return get(config)
