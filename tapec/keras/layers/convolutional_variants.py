"""Keras 3's depthwise, separable and transposed convolution layers, on the `conv`
primitive: a depthwise convolution is a convolution in as many groups as input channels,
a separable one a depthwise convolution then a 1 x 1 convolution, and a transposed one
the input gradient of a convolution (`conv_backprop_input`).

Weights, as Keras names and shapes them:
    DepthwiseConv:  depthwise_kernel (*kernel_size, input_channels, depth_multiplier)
    SeparableConv:  depthwise_kernel, and pointwise_kernel (1, ..., 1, input_channels *
                    depth_multiplier, filters)
    ConvTranspose:  kernel (*kernel_size, filters, input_channels)
each with a bias (output channels,) when `use_bias`.
"""
from __future__ import annotations

from typing import Any

from ...ops.convolution import convolve, depthwise_convolve, transpose_convolve
from .. import initializers, regularizers
from .convolutional import BaseConv, int_tuple, positive_int
from .core import _constraint, _serialized_initializer, _serialized_regularizer

__all__ = ["DepthwiseConv1D", "DepthwiseConv2D", "SeparableConv1D", "SeparableConv2D",
           "SeparableConvolution1D", "SeparableConvolution2D", "Conv1DTranspose",
           "Conv2DTranspose", "Conv3DTranspose", "Convolution1DTranspose",
           "Convolution2DTranspose", "Convolution3DTranspose"]


class _Weights:
    """One kernel's initializer, regularizer and constraint, from the layer's arguments."""

    def __init__(self, layer, initializer, regularizer, constraint):
        self.initializer = initializers.get(initializer)
        self.regularizer = regularizers.get(regularizer)
        self.constraint = _constraint(type(layer).__name__, constraint)

    def config(self, name):
        return {f"{name}_initializer": _serialized_initializer(self.initializer),
                f"{name}_regularizer": _serialized_regularizer(self.regularizer)}


class _DepthwiseConv(BaseConv):
    """Keras 3's BaseDepthwiseConv: each input channel convolved with its own
    `depth_multiplier` filters (output channel c * depth_multiplier + m)."""

    def __init__(self, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                 depth_multiplier: int = 1, data_format: str | None = None,
                 dilation_rate: Any = 1, activation: Any = None, use_bias: bool = True,
                 depthwise_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", depthwise_regularizer: Any = None,
                 bias_regularizer: Any = None, activity_regularizer: Any = None,
                 depthwise_constraint: Any = None, bias_constraint: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate,
                         activation, use_bias, bias_initializer, bias_regularizer,
                         activity_regularizer, bias_constraint, **kwargs)
        self.depth_multiplier = positive_int("depth_multiplier", depth_multiplier)
        self._depthwise = _Weights(self, depthwise_initializer, depthwise_regularizer,
                                   depthwise_constraint)
        self.depthwise_kernel = None

    def _build_depthwise(self, channels):
        w = self._depthwise
        self.depthwise_kernel = self._kernel(
            "depthwise_kernel", self.kernel_size + (channels, self.depth_multiplier),
            w.initializer, w.regularizer, w.constraint)

    def build(self, input_shape):
        channels = self._input_channels(input_shape)
        self._build_depthwise(channels)
        self._build_bias(channels * self.depth_multiplier)

    def _depthwise_op(self, inputs):
        return depthwise_convolve(type(self).__name__, inputs, self.depthwise_kernel,
                                  self.strides, self.padding.upper(), self._tf_format(),
                                  self.dilation_rate, self.rank)

    def convolution_op(self, inputs):
        return self._depthwise_op(inputs)

    def get_config(self):
        return {**super().get_config(), "depth_multiplier": self.depth_multiplier,
                **self._depthwise.config("depthwise")}


class DepthwiseConv1D(_DepthwiseConv):
    """Depthwise 1-D convolution over (batch, steps, channels) (Keras 3's)."""

    rank = 1


class DepthwiseConv2D(_DepthwiseConv):
    """Depthwise 2-D convolution over (batch, height, width, channels) (Keras 3's)."""

    rank = 2


class _SeparableConv(_DepthwiseConv):
    """Keras 3's BaseSeparableConv: a depthwise convolution, then a 1 x 1 convolution to
    `filters` channels (stride 1, no padding), then the bias and the activation."""

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1,
                 padding: str = "valid", data_format: str | None = None,
                 dilation_rate: Any = 1, depth_multiplier: int = 1, activation: Any = None,
                 use_bias: bool = True, depthwise_initializer: Any = "glorot_uniform",
                 pointwise_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", depthwise_regularizer: Any = None,
                 pointwise_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, depthwise_constraint: Any = None,
                 pointwise_constraint: Any = None, bias_constraint: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(kernel_size, strides, padding, depth_multiplier, data_format,
                         dilation_rate, activation, use_bias, depthwise_initializer,
                         bias_initializer, depthwise_regularizer, bias_regularizer,
                         activity_regularizer, depthwise_constraint, bias_constraint,
                         **kwargs)
        self.filters = positive_int("filters", filters)
        self._pointwise = _Weights(self, pointwise_initializer, pointwise_regularizer,
                                   pointwise_constraint)
        self.pointwise_kernel = None

    def build(self, input_shape):
        channels = self._input_channels(input_shape)
        self._build_depthwise(channels)
        w = self._pointwise
        self.pointwise_kernel = self._kernel(
            "pointwise_kernel", (1,) * self.rank + (channels * self.depth_multiplier,
                                                    self.filters),
            w.initializer, w.regularizer, w.constraint)
        self._build_bias(self.filters)

    def convolution_op(self, inputs):
        return convolve(type(self).__name__, self._depthwise_op(inputs),
                        self.pointwise_kernel, 1, "VALID", self._tf_format(), None,
                        self.rank)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                **self._pointwise.config("pointwise")}


class SeparableConv1D(_SeparableConv):
    """Depthwise separable 1-D convolution (Keras 3's `SeparableConv1D`)."""

    rank = 1


class SeparableConv2D(_SeparableConv):
    """Depthwise separable 2-D convolution (Keras 3's `SeparableConv2D`)."""

    rank = 2


def transposed_length(size, kernel, stride, dilation, padding, output_padding):
    """Keras 3's output length of a transposed convolution along one axis."""
    span = (kernel - 1) * dilation + 1
    if output_padding is None:
        return size * stride + max(span - stride, 0) if padding == "valid" else size * stride
    pad = span // 2 if padding == "same" else 0
    return (size - 1) * stride + span - 2 * pad + output_padding


class _ConvTranspose(BaseConv):
    """Keras 3's BaseConvTranspose: the gradient of a convolution with respect to its
    input, kernel (*kernel_size, filters, input_channels); `output_padding` (each below
    its stride) fixes the output size where several would convolve back to the input's."""

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1,
                 padding: str = "valid", output_padding: Any = None,
                 data_format: str | None = None, dilation_rate: Any = 1,
                 activation: Any = None, use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", kernel_regularizer: Any = None,
                 bias_regularizer: Any = None, activity_regularizer: Any = None,
                 kernel_constraint: Any = None, bias_constraint: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate,
                         activation, use_bias, bias_initializer, bias_regularizer,
                         activity_regularizer, bias_constraint, **kwargs)
        self.filters = positive_int("filters", filters)
        self.output_padding = None
        if output_padding is not None:
            self.output_padding = int_tuple(type(self).__name__, "output_padding",
                                            output_padding, self.rank)
            if any(p < 0 or p >= s for p, s in zip(self.output_padding, self.strides)):
                raise ValueError(f"Strides must be greater than output padding. Received "
                                 f"strides={self.strides}, "
                                 f"output_padding={self.output_padding}.")
        self._weights = _Weights(self, kernel_initializer, kernel_regularizer,
                                 kernel_constraint)
        self.kernel = None

    def build(self, input_shape):
        channels = self._input_channels(input_shape)
        w = self._weights
        self.kernel = self._kernel("kernel", self.kernel_size + (self.filters, channels),
                                   w.initializer, w.regularizer, w.constraint)
        self._build_bias(self.filters)

    def convolution_op(self, inputs):
        spatial = tuple(inputs.shape)[1:-1] if self.data_format == "channels_last" else \
            tuple(inputs.shape)[2:]
        paddings = self.output_padding or (None,) * self.rank
        size = tuple(transposed_length(n, k, s, d, self.padding, p) for n, k, s, d, p in
                     zip(spatial, self.kernel_size, self.strides, self.dilation_rate,
                         paddings))
        return transpose_convolve(type(self).__name__, inputs, self.kernel, size,
                                  self.strides, self.padding.upper(), self._tf_format(),
                                  self.dilation_rate, self.rank)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                "output_padding": self.output_padding, **self._weights.config("kernel")}


class Conv1DTranspose(_ConvTranspose):
    """Transposed 1-D convolution (Keras 3's `Conv1DTranspose`)."""

    rank = 1


class Conv2DTranspose(_ConvTranspose):
    """Transposed 2-D convolution (Keras 3's `Conv2DTranspose`): (batch, height, width,
    channels) to (batch, new height, new width, filters)."""

    rank = 2


class Conv3DTranspose(_ConvTranspose):
    """Transposed 3-D convolution (Keras 3's `Conv3DTranspose`)."""

    rank = 3


SeparableConvolution1D, SeparableConvolution2D = SeparableConv1D, SeparableConv2D
Convolution1DTranspose, Convolution2DTranspose, Convolution3DTranspose = \
    Conv1DTranspose, Conv2DTranspose, Conv3DTranspose
