"""Convolution layers: Conv1D, Conv2D and Conv3D (Keras 3's), on `tapec.nn`'s convolution,
and the base class of every convolution layer.

    y = activation(conv(x, kernel) + bias)

with a kernel of shape (*kernel_size, input_channels / groups, filters) and a bias of
shape (filters,). The convolution is tapec's `conv` primitive (tapec/ops/conv.py), whose
derivatives are primitives too, so gradients, jacobians and Hessians are symbolic.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...ops import elementwise as ew
from ...ops.convolution import convolve
from ...ops.shape import reshape
from .. import activations, initializers, regularizers
from .base import Layer
from .core import _constraint, _serialized_initializer, _serialized_regularizer

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Convolution1D", "Convolution2D", "Convolution3D"]

_FORMATS = {("channels_last", 1): "NWC", ("channels_first", 1): "NCW",
            ("channels_last", 2): "NHWC", ("channels_first", 2): "NCHW",
            ("channels_last", 3): "NDHWC", ("channels_first", 3): "NCDHW"}


def int_tuple(layer, what, value, rank):
    """An int or a tuple of `rank` ints, as a tuple (Keras' standardize_tuple)."""
    values = (value,) * rank if isinstance(value, (int, np.integer)) else tuple(value)
    if len(values) != rank or any(isinstance(v, bool) or not isinstance(v, (int, np.integer))
                                  for v in values):
        raise ValueError(f"{layer}: the `{what}` argument must be a tuple of {rank} "
                         f"integers. Received {what}={value!r}")
    return tuple(int(v) for v in values)


def data_format_of(layer, data_format):
    """Keras' data_format: None is the default image format, channels_last."""
    data_format = "channels_last" if data_format is None else data_format
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"{layer}: data_format must be 'channels_last' or "
                         f"'channels_first', got {data_format!r}")
    return data_format


class BaseConv(Layer):
    """What every Keras 3 convolution layer shares: the window arguments (kernel_size,
    strides, padding, data_format, dilation_rate), the bias, the activation and the
    activity regularizer. Subclasses create their kernels in `build` and convolve in
    `convolution_op`."""

    rank = 0
    paddings = ("valid", "same")

    def __init__(self, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                 data_format: str | None = None, dilation_rate: Any = 1,
                 activation: Any = None, use_bias: bool = True,
                 bias_initializer: Any = "zeros", bias_regularizer: Any = None,
                 activity_regularizer: Any = None, bias_constraint: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        kind = type(self).__name__
        self.kernel_size = int_tuple(kind, "kernel_size", kernel_size, self.rank)
        self.strides = int_tuple(kind, "strides", strides, self.rank)
        self.dilation_rate = int_tuple(kind, "dilation_rate", dilation_rate, self.rank)
        if not all(self.kernel_size):
            raise ValueError(f"The argument `kernel_size` cannot contain 0. Received "
                             f"kernel_size={self.kernel_size}.")
        if not all(self.strides):
            raise ValueError(f"The argument `strides` cannot contains 0. Received "
                             f"strides={self.strides}")
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"`strides > 1` not supported in conjunction with "
                             f"`dilation_rate > 1`. Received: strides={self.strides} and "
                             f"dilation_rate={self.dilation_rate}")
        padding = padding.lower() if isinstance(padding, str) else padding
        if padding not in self.paddings:
            raise ValueError(f"{kind}: padding must be one of {self.paddings}, got "
                             f"{padding!r}")
        self.padding = padding
        self.data_format = data_format_of(kind, data_format)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.bias_initializer = initializers.get(bias_initializer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.activity_regularizer = regularizers.get(activity_regularizer)
        self.bias_constraint = _constraint(kind, bias_constraint)
        self.bias = None

    def _channel_axis(self):
        return -1 if self.data_format == "channels_last" else 1

    def _input_channels(self, input_shape):
        """The input's channel count, after checking its rank."""
        if len(input_shape) != self.rank + 2:
            raise ValueError(f"{type(self).__name__} {self.name!r}: expected inputs of rank "
                             f"{self.rank + 2} (batch, {self.rank} spatial axes, channels), "
                             f"got shape {input_shape}")
        channels = input_shape[self._channel_axis()]
        if channels is None:
            raise ValueError(f"{type(self).__name__} {self.name!r}: the channel axis of the "
                             f"input must have a known size, got shape {input_shape}")
        return channels

    def _kernel(self, name, shape, initializer, regularizer, constraint):
        return self.add_weight(shape=shape, initializer=initializer, name=name,
                               regularizer=regularizer, constraint=constraint)

    def _build_bias(self, size):
        if self.use_bias:
            self.bias = self.add_weight(shape=(size,), initializer=self.bias_initializer,
                                        name="bias", regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.built = True

    def _tf_format(self):
        return _FORMATS[self.data_format, self.rank]

    def convolution_op(self, inputs):
        raise NotImplementedError

    def call(self, inputs):
        y = self.convolution_op(inputs)
        if self.bias is not None:
            size = self.bias.shape[0]
            shape = (1,) * (self.rank + 1) + (size,) \
                if self.data_format == "channels_last" else (1, size) + (1,) * self.rank
            y = ew.add(y, reshape(self.bias, shape))
        y = self.activation(y)
        if self.activity_regularizer is not None:
            self.add_loss(self.activity_regularizer(y))
        return y

    def get_config(self):
        return {**super().get_config(), "kernel_size": self.kernel_size,
                "strides": self.strides, "padding": self.padding,
                "data_format": self.data_format, "dilation_rate": self.dilation_rate,
                "activation": activations.serialize(self.activation),
                "use_bias": self.use_bias,
                "bias_initializer": _serialized_initializer(self.bias_initializer),
                "bias_regularizer": _serialized_regularizer(self.bias_regularizer),
                "activity_regularizer": _serialized_regularizer(self.activity_regularizer)}


def positive_int(what, value):
    """Keras' check of `filters` and `depth_multiplier`: a strictly positive int."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"Invalid value for argument `{what}`. Expected a strictly "
                         f"positive value. Received {what}={value!r}.")
    return int(value)


class _Conv(BaseConv):
    """Keras 3's BaseConv for rank 1, 2 and 3: kernel (*kernel_size, input_channels /
    groups, filters); `groups` splits the channels into independent convolutions."""

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1,
                 padding: str = "valid", data_format: str | None = None,
                 dilation_rate: Any = 1, groups: int = 1, activation: Any = None,
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", kernel_regularizer: Any = None,
                 bias_regularizer: Any = None, activity_regularizer: Any = None,
                 kernel_constraint: Any = None, bias_constraint: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate,
                         activation, use_bias, bias_initializer, bias_regularizer,
                         activity_regularizer, bias_constraint, **kwargs)
        self.filters = positive_int("filters", filters)
        self.groups = positive_int("groups", groups)
        if self.filters % self.groups:
            raise ValueError(f"The number of filters must be evenly divisible by the number "
                             f"of groups. Received: groups={self.groups}, "
                             f"filters={self.filters}.")
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.kernel_constraint = _constraint(type(self).__name__, kernel_constraint)
        self.kernel = None

    def build(self, input_shape):
        channels = self._input_channels(input_shape)
        if channels % self.groups:
            raise ValueError(f"The number of input channels must be evenly divisible by the "
                             f"number of groups. Received groups={self.groups}, but the input "
                             f"has {channels} channels (full input shape is {input_shape}).")
        self.kernel = self._kernel("kernel", self.kernel_size + (channels // self.groups,
                                                                 self.filters),
                                   self.kernel_initializer, self.kernel_regularizer,
                                   self.kernel_constraint)
        self._build_bias(self.filters)

    def convolution_op(self, inputs):
        return convolve(type(self).__name__, inputs, self.kernel, self.strides,
                        self.padding.upper(), self._tf_format(), self.dilation_rate,
                        self.rank, causal=True, groups=self.groups)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters, "groups": self.groups,
                "kernel_initializer": _serialized_initializer(self.kernel_initializer),
                "kernel_regularizer": _serialized_regularizer(self.kernel_regularizer)}


class Conv1D(_Conv):
    """1-D convolution over (batch, steps, channels) (Keras 3's `Conv1D`); padding
    "valid", "same" or "causal" (left padding only, so output t sees inputs <= t)."""

    rank = 1
    paddings = ("valid", "same", "causal")


class Conv2D(_Conv):
    """2-D convolution over (batch, height, width, channels) (Keras 3's `Conv2D`);
    padding "valid" or "same"."""

    rank = 2


class Conv3D(_Conv):
    """3-D convolution over (batch, depth, height, width, channels) (Keras 3's
    `Conv3D`); padding "valid" or "same"."""

    rank = 3


Convolution1D, Convolution2D, Convolution3D = Conv1D, Conv2D, Conv3D
