"""Convolution and pooling (`tf.nn.conv1d`, `conv2d`, `conv3d`, `convolution`,
`max_pool*`, `avg_pool*`), channels last: TensorFlow's argument conventions, checked here,
on the `conv` primitive (tapec/ops/conv.py) and on pooling composites.

A window op reads, for every output position p and window offset k, the input at
p * stride + k * dilation (after padding). Convolution is one primitive whose derivatives
are primitives too (the transposed convolution and the kernel correlation). Pooling is a
composite: each offset k is one strided slice of the padded input, so the windows are a
handful of slices laid side by side:

    max pool:  y[n, p, c] = max_k slice_k(x_pad)[n, p, c]   (padding is -inf)
    avg pool:  y[n, p, c] = sum_k slice_k(x_pad)[n, p, c] / (number of real inputs)

Padding is a scatter into zeros (then a `where` for max pooling's -inf); pooling
windows that tile the input are a reshape and a transpose instead. The derivatives (a
slice's is a scatter), vectorized jacobians and Hessians come from the parts. Max pooling
routes the gradient to the first maximum of each window (in row-major window order), as
TensorFlow's MaxPoolGrad does, by selecting the window entry at `argmax` instead of
differentiating `reduce_max` (which shares ties).
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from . import elementwise as ew
from .indexing import SCATTER, normalize_index
from .reduce import argmax, reduce_sum
from .conv import CONV, CONV_BACKPROP_INPUT
from .registry import apply, to_tensors
from .shape import expand_dims, reshape, stack, transpose

_CHANNELS_FIRST = {"NCW", "NCHW", "NCDHW"}
_CHANNELS_LAST = {"NWC", "NHWC", "NDHWC"}


# --- window geometry ----------------------------------------------------------------------

def _per_axis(op_name, what, value, spatial, data_format=None):
    """TensorFlow's int-or-list convention for strides, dilations and window sizes: one
    int for every spatial axis, a list of 1, `spatial` or `spatial + 2` ints (the last
    form includes the batch and channel axes, which must be 1)."""
    if hasattr(value, "numpy"):
        value = value.numpy().tolist()
    values = [value] if np.ndim(value) == 0 else list(np.asarray(value).reshape(-1))
    if any(isinstance(v, (bool, np.bool_)) or np.asarray(v).dtype.kind not in "iu"
           for v in values):
        raise TypeError(f"{op_name}: {what} must be an int or a list of ints, got {value!r}")
    values = [int(v) for v in values]
    if len(values) == 1:
        values = values * spatial
    elif len(values) == spatial + 2:
        outer = (values[0], values[1]) if data_format in _CHANNELS_FIRST else \
            (values[0], values[-1])
        if outer != (1, 1):
            raise ValueError(f"{op_name}: {what} {value} must be 1 on the batch and channel "
                             "axes")
        values = values[2:] if data_format in _CHANNELS_FIRST else values[1:-1]
    elif len(values) != spatial:
        raise ValueError(f"{op_name}: {what} must have 1, {spatial} or {spatial + 2} "
                         f"entries, got {value}")
    if any(v < 1 for v in values):
        raise ValueError(f"{op_name}: {what} must be positive, got {value}")
    return tuple(values)


def _paddings(op_name, padding, spatial, data_format=None, causal=False):
    """'VALID', 'SAME' (case-insensitive; 'CAUSAL' too where `causal`) or explicit
    [before, after] pairs for every axis (TensorFlow's explicit padding; the batch and
    channel pairs must be [0, 0]) as the mode string or a tuple of spatial pairs."""
    if isinstance(padding, str):
        mode = padding.upper()
        modes = ("VALID", "SAME", "CAUSAL") if causal else ("VALID", "SAME")
        if mode not in modes:
            raise ValueError(f"{op_name}: padding must be one of {modes} or explicit pairs, "
                             f"got {padding!r}")
        return mode
    pairs = np.asarray(padding)
    if pairs.dtype.kind not in "iu" or pairs.shape != (spatial + 2, 2) or np.any(pairs < 0):
        raise ValueError(f"{op_name}: explicit padding must be {spatial + 2} pairs of "
                         f"non-negative ints, got {padding!r}")
    outer = (0, 1) if data_format in _CHANNELS_FIRST else (0, spatial + 1)
    if np.any(pairs[list(outer)] != 0):
        raise ValueError(f"{op_name}: explicit padding of the batch and channel axes must be "
                         f"0, got {padding!r}")
    inner = pairs[2:] if data_format in _CHANNELS_FIRST else pairs[1:-1]
    return tuple((int(b), int(a)) for b, a in inner)


def _window_geometry(op_name, size, window, stride, dilation, padding, axis=0):
    """(output size, padding before, padding after) of one spatial axis of length `size`,
    with TensorFlow's rules: VALID reads only whole windows, SAME gives ceil(size /
    stride) outputs and pads the larger half at the end, CAUSAL pads only the start."""
    span = (window - 1) * dilation + 1
    if padding == "SAME":
        out = -(-size // stride)
        total = max((out - 1) * stride + span - size, 0)
        before, after = total // 2, total - total // 2
    elif padding == "CAUSAL":
        before, after = span - 1, 0
    elif padding == "VALID":
        before, after = 0, 0
    else:
        before, after = padding[axis]
    padded = size + before + after
    if padded < span:
        raise ValueError(f"{op_name}: a window spanning {span} does not fit spatial axis "
                         f"{axis} of size {size} (padded to {padded}); the output would be "
                         "empty")
    return (padded - span) // stride + 1, before, after


def _window_slices(x, window, strides, dilations, outs):
    """The slices of `x` (already padded, channels last) that one window offset reads,
    one per offset in row-major order: each has shape (N, *outs, C)."""
    slices = []
    for offset in itertools.product(*(range(k) for k in window)):
        index = (slice(None),) + tuple(
            slice(k * d, k * d + (o - 1) * s + 1, s)
            for k, d, s, o in zip(offset, dilations, strides, outs)) + (slice(None),)
        slices.append(x[index])
    return slices


def _padded(x, pads, fill):
    """`x` with `pads` [(before, after) per spatial axis] filled with `fill`. Written as
    a scatter into zeros (its derivative is the slice back) and a `where` on a mask
    with no batch axis, so a trace stays one program for every batch size (tf.pad's
    constant blocks would embed the batch size)."""
    if not any(b or a for b, a in pads):
        return x
    inner = tuple(slice(b, b + n) for (b, _), n in zip(pads, x._shape[1:-1]))
    shape = (x._shape[0],) + tuple(n + b + a for (b, a), n in zip(pads, x._shape[1:-1])) + \
        (x._shape[-1],)
    padded = apply(SCATTER, x, index=normalize_index((slice(None),) + inner), shape=shape)
    if fill == 0:
        return padded
    inside = np.zeros((1,) + shape[1:-1] + (1,), dtype=bool)
    inside[(slice(None),) + inner] = True
    return ew.where(inside, padded, np.asarray(fill, dtype=x._dtype))


def _geometry(op_name, x, window, strides, dilations, padding):
    spatial_sizes = x._shape[1:-1]
    rows = [_window_geometry(op_name, n, k, s, d, padding, axis)
            for axis, (n, k, s, d) in enumerate(zip(spatial_sizes, window, strides, dilations))]
    return tuple(r[0] for r in rows), tuple((r[1], r[2]) for r in rows)


# --- layouts --------------------------------------------------------------------------------

def _to_channels_last(op_name, x, spatial, data_format):
    if data_format is None or data_format in _CHANNELS_LAST:
        return x
    if data_format in _CHANNELS_FIRST:
        return transpose(x, [0, *range(2, spatial + 2), 1])
    raise ValueError(f"{op_name}: data_format must be one of "
                     f"{sorted(_CHANNELS_LAST | _CHANNELS_FIRST)}, got {data_format!r}")


def _from_channels_last(y, spatial, data_format):
    if data_format in _CHANNELS_FIRST:
        return transpose(y, [0, spatial + 1, *range(1, spatial + 1)])
    return y


def _input(op_name, x, spatial, kinds="f"):
    (x,) = to_tensors(op_name, [x])
    if len(x._shape) != spatial + 2:
        raise ValueError(f"{op_name}: input must have rank {spatial + 2} (batch, {spatial} "
                         f"spatial axes, channels), got shape {x._shape}")
    if x._dtype.kind not in kinds:
        raise TypeError(f"{op_name}: input must be a floating tensor"
                        f"{' or an integer one' if 'i' in kinds else ''}, got "
                        f"{x._dtype.name}")
    return x


# --- convolution ----------------------------------------------------------------------------

def convolve(op_name, input, filters, strides, padding, data_format, dilations, spatial,  # noqa: A002
             causal=False, groups=1):
    """The convolution behind every public form: validation with TensorFlow's argument
    conventions, then the `conv` primitive (`causal` admits Keras' 'causal' padding,
    which TensorFlow's ops do not take; `groups` splits the channels as Keras' `groups`
    and TensorFlow's grouped kernels of shape (*window, in_channels / groups, filters))."""
    # Converted together: a NumPy kernel takes the input tensor's dtype, as in TensorFlow.
    x, w = to_tensors(op_name, [input, filters])
    x = _to_channels_last(op_name, _input(op_name, x, spatial), spatial, data_format)
    if w._dtype != x._dtype:
        raise TypeError(f"{op_name}: input and filters must have one dtype, got "
                        f"{x._dtype.name} and {w._dtype.name}")
    channels = x._shape[-1]
    if len(w._shape) != spatial + 2 or w._shape[-2] * groups != channels or \
            w._shape[-1] % groups:
        per_group = "in_channels" if groups == 1 else f"in_channels / groups ({groups})"
        raise ValueError(f"{op_name}: filters must have shape (*window, {per_group}, "
                         f"out_channels) with {spatial} window axes and in_channels = "
                         f"{channels} (input shape {tuple(x._shape)})"
                         + ("" if groups == 1 else ", out_channels a multiple of groups")
                         + f", got {w._shape}")
    window = w._shape[:-2]
    strides = _per_axis(op_name, "strides", strides, spatial, data_format)
    dilations = _per_axis(op_name, "dilations", 1 if dilations is None else dilations,
                          spatial, data_format)
    padding = _paddings(op_name, padding, spatial, data_format, causal)
    _, pads = _geometry(op_name, x, window, strides, dilations, padding)
    y = apply(CONV, x, w, strides=strides, dilations=dilations, pads=pads, groups=groups)
    return _from_channels_last(y, spatial, data_format)


def conv1d(input, filters, stride, padding, data_format="NWC", dilations=None,  # noqa: A002
           name=None):
    """1-D convolution (cross-correlation, as TensorFlow's) of `input` (batch, width,
    in_channels) with `filters` (width, in_channels, out_channels): `tf.nn.conv1d`.
    `padding` is 'VALID', 'SAME' or explicit pairs; `data_format` 'NWC' or 'NCW'."""
    return convolve("conv1d", input, filters, stride, padding, data_format, dilations, 1)


def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None,  # noqa: A002
           name=None):
    """2-D convolution of `input` (batch, height, width, in_channels) with `filters`
    (height, width, in_channels, out_channels): `tf.nn.conv2d`. `strides` and
    `dilations` are an int or 1, 2 or 4 ints; `padding` 'VALID', 'SAME' or explicit
    [[0, 0], [top, bottom], [left, right], [0, 0]]; `data_format` 'NHWC' or 'NCHW'."""
    return convolve("conv2d", input, filters, strides, padding, data_format, dilations, 2)


def conv3d(input, filters, strides, padding, data_format="NDHWC", dilations=None,  # noqa: A002
           name=None):
    """3-D convolution of `input` (batch, depth, height, width, in_channels) with
    `filters` (depth, height, width, in_channels, out_channels): `tf.nn.conv3d`."""
    return convolve("conv3d", input, filters, strides, padding, data_format, dilations, 3)


def convolution(input, filters, strides=None, padding="VALID", data_format=None,  # noqa: A002
                dilations=None, name=None):
    """N-D convolution (N = 1, 2 or 3 from the filters' rank): `tf.nn.convolution`."""
    shape = tuple(filters.shape) if hasattr(filters, "shape") else np.shape(filters)
    spatial = len(shape) - 2
    if spatial not in (1, 2, 3):
        raise ValueError(f"convolution: filters must have rank 3, 4 or 5, got shape {shape}")
    return convolve("convolution", input, filters, 1 if strides is None else strides,
                    padding, data_format, dilations, spatial)


# --- depthwise, separable and transposed convolutions ---------------------------------------

def _channel_axis(data_format, spatial):
    return 1 if data_format in _CHANNELS_FIRST else spatial + 1


def depthwise_convolve(op_name, input, filter, strides, padding, data_format,  # noqa: A002
                       dilations, spatial, causal=False):
    """Each input channel c convolved with its own `channel_multiplier` filters
    filter[..., c, :], giving channels c * multiplier + m: a convolution in C groups of
    one channel, with the kernel (*window, C, M) read as (*window, 1, C * M)."""
    x, w = to_tensors(op_name, [input, filter])
    x = _input(op_name, x, spatial)
    channels = x._shape[_channel_axis(data_format, spatial)]
    if len(w._shape) != spatial + 2 or w._shape[-2] != channels:
        raise ValueError(f"{op_name}: filter must have shape (*window, in_channels, "
                         f"channel_multiplier) with {spatial} window axes and in_channels = "
                         f"{channels} (input shape {x._shape}), got {w._shape}")
    w = reshape(w, (*w._shape[:-2], 1, channels * w._shape[-1]))
    return convolve(op_name, x, w, strides, padding, data_format, dilations, spatial,
                    causal=causal, groups=channels)


def depthwise_conv2d(input, filter, strides, padding, data_format=None,  # noqa: A002
                     dilations=None, name=None):
    """Depthwise 2-D convolution, `tf.nn.depthwise_conv2d`: `filter` (height, width,
    in_channels, channel_multiplier) convolves each input channel with its own filters;
    output channel c * channel_multiplier + m is channel c with filter m. As in
    TensorFlow, dilations above 1 need strides of 1."""
    spatial_strides = _per_axis("depthwise_conv2d", "strides", strides, 2, data_format)
    if dilations is not None and max(spatial_strides) > 1 and \
            max(_per_axis("depthwise_conv2d", "dilations", dilations, 2, data_format)) > 1:
        raise ValueError(f"depthwise_conv2d: dilations {dilations} above 1 need strides of "
                         f"1, got {strides}")
    return depthwise_convolve("depthwise_conv2d", input, filter, strides, padding,
                              data_format, dilations, 2)


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding,  # noqa: A002
                     data_format=None, dilations=None, name=None):
    """A depthwise convolution followed by a 1 x 1 convolution mixing its channels,
    `tf.nn.separable_conv2d`: `depthwise_filter` (height, width, in_channels, multiplier)
    and `pointwise_filter` (1, 1, in_channels * multiplier, out_channels)."""
    y = depthwise_conv2d(input, depthwise_filter, strides, padding, data_format, dilations)
    return convolve("separable_conv2d", y, pointwise_filter, 1, "VALID", data_format, None, 2)


def transpose_convolve(op_name, input, filters, output_size, strides, padding,  # noqa: A002
                       data_format, dilations, spatial):
    """The transposed convolution (the gradient of a convolution with respect to its
    input) of `input` (batch, *spatial, in_channels) with `filters` (*window,
    out_channels, in_channels), to `output_size` (the spatial sizes of the result)."""
    x, w = to_tensors(op_name, [input, filters])
    x = _to_channels_last(op_name, _input(op_name, x, spatial), spatial, data_format)
    if w._dtype != x._dtype:
        raise TypeError(f"{op_name}: input and filters must have one dtype, got "
                        f"{x._dtype.name} and {w._dtype.name}")
    if len(w._shape) != spatial + 2 or w._shape[-1] != x._shape[-1]:
        raise ValueError(f"{op_name}: filters must have shape (*window, out_channels, "
                         f"in_channels) with {spatial} window axes and in_channels = "
                         f"{x._shape[-1]} (input shape {x._shape}), got {w._shape}")
    strides = _per_axis(op_name, "strides", strides, spatial, data_format)
    dilations = _per_axis(op_name, "dilations", 1 if dilations is None else dilations,
                          spatial, data_format)
    padding = _paddings(op_name, padding, spatial, data_format)
    rows = [_window_geometry(op_name, n, k, s, d, padding, axis) for axis, (n, k, s, d) in
            enumerate(zip(output_size, w._shape[:-2], strides, dilations))]
    if tuple(r[0] for r in rows) != x._shape[1:-1]:
        raise ValueError(f"{op_name}: an output of spatial size {tuple(output_size)} with "
                         f"window {w._shape[:-2]}, strides {strides} and padding {padding} "
                         f"convolves back to {tuple(r[0] for r in rows)}, not to the input's "
                         f"{x._shape[1:-1]}")
    y = apply(CONV_BACKPROP_INPUT, x, w, input_size=tuple(output_size), strides=strides,
              dilations=dilations, pads=tuple((r[1], r[2]) for r in rows), groups=1)
    return _from_channels_last(y, spatial, data_format)


def _output_spatial(op_name, output_shape, input, filters, spatial, data_format):  # noqa: A002
    """The spatial sizes in TensorFlow's `output_shape` (batch, *spatial, channels in
    `data_format`'s order), checked against the input's batch and the filters' channels."""
    if hasattr(output_shape, "numpy"):
        output_shape = output_shape.numpy()
    shape = [int(s) for s in np.asarray(output_shape).reshape(-1)]
    channel = _channel_axis(data_format, spatial)
    if len(shape) != spatial + 2:
        raise ValueError(f"{op_name}: output_shape must have {spatial + 2} entries (batch, "
                         f"{spatial} spatial sizes, channels), got {output_shape!r}")
    batch, channels = np.shape(input)[0], np.shape(filters)[-2]
    if shape[0] != batch or shape[channel] != channels:
        raise ValueError(f"{op_name}: output_shape {tuple(shape)} must have the input's batch "
                         f"size {batch} and the filters' {channels} output channels")
    return tuple(s for i, s in enumerate(shape) if i not in (0, channel))


def conv_transpose(input, filters, output_shape, strides, padding="SAME",  # noqa: A002
                   data_format=None, dilations=None, name=None):
    """The transposed N-D convolution (N from the filters' rank), `tf.nn.conv_transpose`:
    the gradient of `tf.nn.convolution` with respect to its input, for an input of
    `output_shape`; `filters` is (*window, out_channels, in_channels)."""
    spatial = len(np.shape(filters)) - 2
    if spatial not in (1, 2, 3):
        raise ValueError(f"conv_transpose: filters must have rank 3, 4 or 5, got shape "
                         f"{np.shape(filters)}")
    return transpose_convolve("conv_transpose", input, filters, _output_spatial(
        "conv_transpose", output_shape, input, filters, spatial, data_format), strides,
        padding, data_format, dilations, spatial)


def conv1d_transpose(input, filters, output_shape, strides, padding="SAME",  # noqa: A002
                     data_format="NWC", dilations=None, name=None):
    """`tf.nn.conv1d_transpose`: filters (width, out_channels, in_channels)."""
    return transpose_convolve("conv1d_transpose", input, filters, _output_spatial(
        "conv1d_transpose", output_shape, input, filters, 1, data_format), strides, padding,
        data_format, dilations, 1)


def conv2d_transpose(input, filters, output_shape, strides, padding="SAME",  # noqa: A002
                     data_format="NHWC", dilations=None, name=None):
    """`tf.nn.conv2d_transpose`: the gradient of `conv2d` with respect to its input, for an
    input of `output_shape` (batch, height, width, out_channels); filters (height, width,
    out_channels, in_channels)."""
    return transpose_convolve("conv2d_transpose", input, filters, _output_spatial(
        "conv2d_transpose", output_shape, input, filters, 2, data_format), strides, padding,
        data_format, dilations, 2)


def conv3d_transpose(input, filters, output_shape, strides, padding="SAME",  # noqa: A002
                     data_format="NDHWC", dilations=None, name=None):
    """`tf.nn.conv3d_transpose`: filters (depth, height, width, out_channels, in_channels)."""
    return transpose_convolve("conv3d_transpose", input, filters, _output_spatial(
        "conv3d_transpose", output_shape, input, filters, 3, data_format), strides, padding,
        data_format, dilations, 3)


# --- pooling --------------------------------------------------------------------------------

def _windows(op_name, x, ksize, strides, padding, data_format, spatial, fill):
    """Every window of `x` (channels last) stacked on axis -2: (N, *outs, K, C), the
    padding filled with `fill`, plus the output sizes and the paddings."""
    window = _per_axis(op_name, "ksize", ksize, spatial, data_format)
    strides = _per_axis(op_name, "strides", strides, spatial, data_format)
    padding = _paddings(op_name, padding, spatial, data_format)
    ones = (1,) * spatial
    outs, pads = _geometry(op_name, x, window, strides, ones, padding)
    if strides == window and not any(b or a for b, a in pads):
        return _tiles(x, window, outs), window, strides, outs, pads
    slices = _window_slices(_padded(x, pads, fill), window, strides, ones, outs)
    return stack(slices, axis=-2), window, strides, outs, pads


def _tiles(x, window, outs):
    """Windows that tile the input (stride = window, no padding) by a reshape: (N, o1, k1,
    o2, k2, ..., C) with the window axes moved together, row-major as `_window_slices`
    orders them. Its gradient is the transpose back, not a scatter per offset."""
    spatial = len(window)
    covered = tuple(o * k for o, k in zip(outs, window))
    if covered != x._shape[1:-1]:              # VALID drops a remainder
        x = x[(slice(None),) + tuple(slice(0, c) for c in covered) + (slice(None),)]
    split = (-1,) + tuple(d for o, k in zip(outs, window) for d in (o, k)) + (x._shape[-1],)
    perm = [0] + [1 + 2 * i for i in range(spatial)] + [2 + 2 * i for i in range(spatial)] + \
        [2 * spatial + 1]
    tiles = transpose(reshape(x, split), perm)
    return reshape(tiles, (-1, *outs, math.prod(window), x._shape[-1]))


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _max_pool(op_name, input, ksize, strides, padding, data_format, spatial):  # noqa: A002
    x = _input(op_name, input, spatial, kinds="fiu")
    x = _to_channels_last(op_name, x, spatial, data_format)
    windows, window, *_ = _windows(op_name, x, ksize, strides, padding, data_format,
                                   spatial, _lowest(x._dtype))
    # The entry at the window's first argmax: its value is the maximum, and the gradient
    # reaches that one input, as TensorFlow's MaxPoolGrad (reduce_max would share ties).
    first = expand_dims(argmax(windows, axis=-2), -2)
    chosen = ew.equal(first, np.arange(math.prod(window)).reshape(-1, 1))
    y = reduce_sum(ew.where(chosen, windows, np.zeros((), x._dtype)), axis=-2)
    return _from_channels_last(y, spatial, data_format)


def _avg_pool(op_name, input, ksize, strides, padding, data_format, spatial):  # noqa: A002
    x = _input(op_name, input, spatial)
    x = _to_channels_last(op_name, x, spatial, data_format)
    windows, window, strides, outs, pads = _windows(op_name, x, ksize, strides, padding,
                                                    data_format, spatial, 0)
    total = reduce_sum(windows, axis=-2)
    # TensorFlow averages over the real inputs only: padding is not counted.
    counts = np.ones(x._shape[1:-1])
    counts = np.pad(counts, list(pads))
    counts = sum(counts[tuple(slice(k, k + (o - 1) * s + 1, s)
                              for k, s, o in zip(offset, strides, outs))]
                 for offset in itertools.product(*(range(k) for k in window)))
    y = ew.divide(total, counts.reshape(*outs, 1).astype(x._dtype))
    return _from_channels_last(y, spatial, data_format)


def _pool_rank(op_name, input, data_format):
    (x,) = to_tensors(op_name, [input])
    if len(x._shape) not in (3, 4, 5):
        raise ValueError(f"{op_name}: input must have rank 3, 4 or 5, got shape {x._shape}")
    return x, len(x._shape) - 2


def max_pool(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    """The maximum of each window (1, 2 or 3 spatial axes, from the input's rank):
    `tf.nn.max_pool`. The gradient goes to the first maximum of each window."""
    x, spatial = _pool_rank("max_pool", input, data_format)
    return _max_pool("max_pool", x, ksize, strides, padding, data_format, spatial)


def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    """`tf.nn.max_pool1d`: the maximum of each window of (batch, width, channels)."""
    return _max_pool("max_pool1d", input, ksize, strides, padding, data_format, 1)


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """`tf.nn.max_pool2d`: the maximum of each window of (batch, height, width, channels);
    `ksize` and `strides` an int or 1, 2 or 4 ints, `padding` 'VALID', 'SAME' or explicit
    pairs. The gradient goes to the first maximum of each window, as TensorFlow's."""
    return _max_pool("max_pool2d", input, ksize, strides, padding, data_format, 2)


def max_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
    """`tf.nn.max_pool3d`: the maximum of each window of (batch, depth, height, width,
    channels)."""
    return _max_pool("max_pool3d", input, ksize, strides, padding, data_format, 3)


def avg_pool(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    """The mean of each window (1, 2 or 3 spatial axes): `tf.nn.avg_pool`. With 'SAME'
    padding a border window averages only the inputs it covers, as TensorFlow's."""
    x, spatial = _pool_rank("avg_pool", input, data_format)
    return _avg_pool("avg_pool", x, ksize, strides, padding, data_format, spatial)


def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    """`tf.nn.avg_pool1d`: the mean of each window of (batch, width, channels)."""
    return _avg_pool("avg_pool1d", input, ksize, strides, padding, data_format, 1)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """`tf.nn.avg_pool2d`: the mean of each window of (batch, height, width, channels);
    with 'SAME' padding a border window averages only the inputs it covers."""
    return _avg_pool("avg_pool2d", input, ksize, strides, padding, data_format, 2)


def avg_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
    """`tf.nn.avg_pool3d`: the mean of each window of (batch, depth, height, width,
    channels)."""
    return _avg_pool("avg_pool3d", input, ksize, strides, padding, data_format, 3)


__all__ = ["conv1d", "conv2d", "conv3d", "convolution", "depthwise_conv2d", "separable_conv2d",
           "conv_transpose", "conv1d_transpose", "conv2d_transpose", "conv3d_transpose",
           "max_pool", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool", "avg_pool1d", "avg_pool2d", "avg_pool3d"]
