"""Pooling layers: Max/Average pooling 1D, 2D and 3D (on `tapec.nn.max_pool` and
`avg_pool`), and global average / max pooling 1D, 2D and 3D (reductions over the
spatial axes). As in Keras 3, `strides=None` means the pool size, and "same" average pooling
averages a border window over the inputs it covers (TensorFlow's rule)."""
from __future__ import annotations

from typing import Any

from ...ops import elementwise as ew
from ...ops.convolution import avg_pool, max_pool
from ...ops.reduce import reduce_max, reduce_mean, reduce_sum
from ...ops.shape import cast, expand_dims
from ...tensor import convert_to_tensor
from .base import Layer
from .convolutional import _FORMATS, data_format_of, int_tuple

__all__ = ["MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "AveragePooling1D",
           "AveragePooling2D", "AveragePooling3D", "MaxPool1D", "MaxPool2D", "MaxPool3D",
           "AvgPool1D", "AvgPool2D", "AvgPool3D", "GlobalAveragePooling1D",
           "GlobalAveragePooling2D", "GlobalAveragePooling3D", "GlobalMaxPooling1D",
           "GlobalMaxPooling2D", "GlobalMaxPooling3D", "GlobalAvgPool1D", "GlobalAvgPool2D",
           "GlobalAvgPool3D", "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPool3D"]


class _Pooling(Layer):
    rank = 0
    pool = None

    def __init__(self, pool_size: Any = 2, strides: Any = None, padding: str = "valid",
                 data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        kind = type(self).__name__
        self.pool_size = int_tuple(kind, "pool_size", pool_size, self.rank)
        self.strides = self.pool_size if strides is None else \
            int_tuple(kind, "strides", strides, self.rank)
        if min(self.pool_size + self.strides) < 1:
            raise ValueError(f"{kind}: pool_size and strides must be positive, got "
                             f"pool_size={self.pool_size}, strides={self.strides}")
        padding = padding.lower() if isinstance(padding, str) else padding
        if padding not in ("valid", "same"):
            raise ValueError(f"{kind}: padding must be 'valid' or 'same', got {padding!r}")
        self.padding = padding
        self.data_format = data_format_of(kind, data_format)

    def call(self, inputs):
        if len(inputs.shape) != self.rank + 2:
            raise ValueError(f"{type(self).__name__} {self.name!r}: expected inputs of rank "
                             f"{self.rank + 2} (batch, {self.rank} spatial axes, channels), "
                             f"got shape {tuple(inputs.shape)}")
        return type(self).pool(inputs, self.pool_size, self.strides, self.padding.upper(),
                               data_format=_FORMATS[self.data_format, self.rank])

    def get_config(self):
        return {**super().get_config(), "pool_size": self.pool_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format}


class MaxPooling1D(_Pooling):
    """The maximum of each window of (batch, steps, channels) (Keras 3's
    `MaxPooling1D`); the gradient reaches the first maximum of each window."""
    rank, pool = 1, staticmethod(max_pool)


class MaxPooling2D(_Pooling):
    """The maximum of each window of (batch, height, width, channels) (Keras 3's
    `MaxPooling2D`); the gradient reaches the first maximum of each window."""
    rank, pool = 2, staticmethod(max_pool)


class MaxPooling3D(_Pooling):
    """The maximum of each window of (batch, depth, height, width, channels) (Keras 3's
    `MaxPooling3D`)."""
    rank, pool = 3, staticmethod(max_pool)


class AveragePooling1D(_Pooling):
    """The mean of each window of (batch, steps, channels) (Keras 3's
    `AveragePooling1D`)."""
    rank, pool = 1, staticmethod(avg_pool)

    def __init__(self, pool_size: Any, strides: Any = None, padding: str = "valid",
                 data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class AveragePooling2D(_Pooling):
    """The mean of each window of (batch, height, width, channels) (Keras 3's
    `AveragePooling2D`)."""
    rank, pool = 2, staticmethod(avg_pool)

    def __init__(self, pool_size: Any, strides: Any = None, padding: str = "valid",
                 data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class AveragePooling3D(_Pooling):
    """The mean of each window of (batch, depth, height, width, channels) (Keras 3's
    `AveragePooling3D`)."""
    rank, pool = 3, staticmethod(avg_pool)

    def __init__(self, pool_size: Any, strides: Any = None, padding: str = "valid",
                 data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class _GlobalPooling(Layer):
    rank = 0
    reduce = None

    def __init__(self, data_format: str | None = None, keepdims: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_format = data_format_of(type(self).__name__, data_format)
        self.keepdims = bool(keepdims)

    def _spatial_axes(self):
        first = 1 if self.data_format == "channels_last" else 2
        return list(range(first, first + self.rank))

    def call(self, inputs):
        if len(inputs.shape) != self.rank + 2:
            raise ValueError(f"{type(self).__name__} {self.name!r}: expected inputs of rank "
                             f"{self.rank + 2}, got shape {tuple(inputs.shape)}")
        return type(self).reduce(inputs, axis=self._spatial_axes(), keepdims=self.keepdims)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format,
                "keepdims": self.keepdims}


class GlobalAveragePooling1D(_GlobalPooling):
    """The mean over the steps of (batch, steps, channels) (Keras 3's
    `GlobalAveragePooling1D`); with a `mask` (batch, steps), the mean of the unmasked
    steps."""
    rank, reduce = 1, staticmethod(reduce_mean)

    def __init__(self, data_format: str | None = None, keepdims: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(data_format, keepdims, **kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if mask is None:
            return super().call(inputs)
        axis = self._spatial_axes()[0]
        # Keras 3: the masked steps set to 0 (so a NaN there does not spread), then
        # sum(x * mask) / sum(mask) over the steps.
        keep = expand_dims(cast(convert_to_tensor(mask), "bool"), 2 if axis == 1 else 1)
        weights = cast(keep, inputs.dtype)
        inputs = ew.where(keep, inputs, convert_to_tensor(0, dtype=inputs.dtype))
        total = reduce_sum(ew.multiply(inputs, weights), axis=axis, keepdims=self.keepdims)
        return ew.divide(total, reduce_sum(weights, axis=axis, keepdims=self.keepdims))

    def compute_mask(self, inputs, mask=None):
        return None                            # the steps are averaged away


class GlobalAveragePooling2D(_GlobalPooling):
    """The mean over height and width (Keras 3's `GlobalAveragePooling2D`)."""
    rank, reduce = 2, staticmethod(reduce_mean)


class GlobalMaxPooling1D(_GlobalPooling):
    """The maximum over the steps (Keras 3's `GlobalMaxPooling1D`; ties share the
    gradient, as TensorFlow's reduce_max)."""
    rank, reduce = 1, staticmethod(reduce_max)


class GlobalMaxPooling2D(_GlobalPooling):
    """The maximum over height and width (Keras 3's `GlobalMaxPooling2D`)."""
    rank, reduce = 2, staticmethod(reduce_max)


class GlobalAveragePooling3D(_GlobalPooling):
    """The mean over depth, height and width (Keras 3's `GlobalAveragePooling3D`)."""
    rank, reduce = 3, staticmethod(reduce_mean)


class GlobalMaxPooling3D(_GlobalPooling):
    """The maximum over depth, height and width (Keras 3's `GlobalMaxPooling3D`)."""
    rank, reduce = 3, staticmethod(reduce_max)


MaxPool1D, MaxPool2D, MaxPool3D = MaxPooling1D, MaxPooling2D, MaxPooling3D
AvgPool1D, AvgPool2D, AvgPool3D = AveragePooling1D, AveragePooling2D, AveragePooling3D
GlobalAvgPool1D, GlobalAvgPool2D, GlobalAvgPool3D = (
    GlobalAveragePooling1D, GlobalAveragePooling2D, GlobalAveragePooling3D)
GlobalMaxPool1D, GlobalMaxPool2D, GlobalMaxPool3D = (
    GlobalMaxPooling1D, GlobalMaxPooling2D, GlobalMaxPooling3D)
