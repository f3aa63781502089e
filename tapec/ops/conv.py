"""The convolution primitives: `conv` and its two derivatives, `conv_backprop_input` (the
transposed convolution) and `conv_backprop_filter`, channels last, any number of spatial
axes, grouped.

For input x (N, *S, C), kernel w (*K, C/G, F) in G groups, strides s, dilations d and
padding pads [(before, after) per spatial axis], with x_pad x padded by zeros:

    conv:                 y[n, p, f]  = sum_{k, c in group(f)} x_pad[n, p*s + k*d, c] w[k, c, f]
    conv_backprop_input:  dx = conv^T(g, w): dx_pad[n, p*s + k*d, c] += g[n, p, f] w[k, c, f]
    conv_backprop_filter: dw[k, c, f] = sum_{n, p} x_pad[n, p*s + k*d, c] g[n, p, f]

All three are bilinear and each is the adjoint of another in one argument, so their
VJPs are each other and Hessians of any order stay within these three ops:

    conv(x, w):                 dx = backprop_input(g, w),   dw = backprop_filter(x, g)
    backprop_input(g, w) -> dx: dg = conv(h, w),             dw = backprop_filter(h, g)
    backprop_filter(x, g) -> dw: dx = backprop_input(g, h),  dg = conv(x, h)

(h is the cotangent of each op's output). The batching rule folds the vmapped axis into
the groups: B independent convolutions are one convolution with B times the groups.

The NumPy code is im2col by a strided view (`sliding_window_view`, no copy) and one
(batched, for G > 1) matrix product; the input gradient scatters the product's columns
back with one strided add per window offset. Eager evaluation runs the same lines that
generated code contains, compiled once per geometry, so the two cannot disagree.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from .registry import Op, apply, declare
from .shape import expand_dims, reshape, tile, transpose

# --- geometry and validation ----------------------------------------------------------------


def output_size(size, window, stride, dilation, pad):
    """The number of window positions on one padded spatial axis (0 when none fits)."""
    span = (window - 1) * dilation + 1
    padded = size + pad[0] + pad[1]
    return 0 if padded < span else (padded - span) // stride + 1


def _check(op_name, what, tensors, strides, dilations, pads, groups):
    """Common validation: floating tensors of one dtype, rank 2 + spatial, G | channels."""
    spatial = len(strides)
    first = tensors[0][1]
    for name, t in tensors:
        if t._dtype.kind != "f":
            raise TypeError(f"{op_name}: {name} must be a floating tensor, got "
                            f"{t._dtype.name} {t._shape}")
        if t._dtype != first._dtype:
            raise TypeError(f"{op_name}: {what} must have one dtype, got "
                            + " and ".join(f"{t._dtype.name} {t._shape}" for _, t in tensors))
        if len(t._shape) != spatial + 2:
            raise ValueError(f"{op_name}: {name} must have rank {spatial + 2} ({spatial} "
                             f"spatial axes), got shape {t._shape}")
    if not (len(dilations) == len(pads) == spatial) or groups < 1:
        raise ValueError(f"{op_name}: strides {strides}, dilations {dilations} and paddings "
                         f"{pads} must have one entry per spatial axis, groups {groups} >= 1")


def _outputs(op_name, sizes, window, strides, dilations, pads):
    outs = tuple(output_size(n, k, s, d, p)
                 for n, k, s, d, p in zip(sizes, window, strides, dilations, pads))
    if None in sizes or not all(outs):
        raise ValueError(f"{op_name}: a window of size {tuple(window)} (dilations "
                         f"{tuple(dilations)}) does not fit the spatial axes {tuple(sizes)} "
                         f"padded by {tuple(pads)}: the output would be empty")
    return outs


def _kernel_channels(op_name, w, channels, groups):
    """Check a kernel (*K, C/G, F) against C input channels in G groups."""
    if channels % groups or w._shape[-2] * groups != channels or w._shape[-1] % groups:
        raise ValueError(f"{op_name}: with groups={groups} the kernel must have shape "
                         f"(*window, in_channels / groups, out_channels) with out_channels "
                         f"a multiple of groups, for {channels} input channels; got kernel "
                         f"shape {w._shape}")


def _conv_infer(x, w, strides, dilations, pads, groups):
    _check("conv", "input and kernel", [("input", x), ("kernel", w)], strides, dilations,
           pads, groups)
    _kernel_channels("conv", w, x._shape[-1], groups)
    outs = _outputs("conv", x._shape[1:-1], w._shape[:-2], strides, dilations, pads)
    return (x._shape[0], *outs, w._shape[-1]), x._dtype


def _backprop_input_infer(g, w, input_size, strides, dilations, pads, groups):
    name = "conv_backprop_input"
    _check(name, "output gradient and kernel", [("output gradient", g), ("kernel", w)],
           strides, dilations, pads, groups)
    channels = w._shape[-2] * groups
    _kernel_channels(name, w, channels, groups)
    outs = _outputs(name, input_size, w._shape[:-2], strides, dilations, pads)
    if g._shape[1:] != (*outs, w._shape[-1]):
        raise ValueError(f"{name}: the output gradient must have shape (batch, *{outs}, "
                         f"{w._shape[-1]}) for an input of spatial size {tuple(input_size)} "
                         f"and kernel {w._shape}, got {g._shape}")
    return (g._shape[0], *input_size, channels), g._dtype


def _backprop_filter_infer(x, g, window, strides, dilations, pads, groups):
    name = "conv_backprop_filter"
    _check(name, "input and output gradient", [("input", x), ("output gradient", g)],
           strides, dilations, pads, groups)
    channels, filters = x._shape[-1], g._shape[-1]
    if channels % groups or filters % groups:
        raise ValueError(f"{name}: groups={groups} must divide the input's {channels} and "
                         f"the output gradient's {filters} channels")
    outs = _outputs(name, x._shape[1:-1], window, strides, dilations, pads)
    if g._shape[0] != x._shape[0] or g._shape[1:-1] != outs:
        raise ValueError(f"{name}: the output gradient must have shape ({x._shape[0]}, "
                         f"*{outs}, filters) for input {x._shape} and window {tuple(window)}, "
                         f"got {g._shape}")
    return (*window, channels // groups, filters), x._dtype


# --- NumPy source (generated code and, compiled once per geometry, eager values) ------------

def _windows_lines(out, x, window, strides, dilations, pads):
    """Lines binding `{out}_win`: every window of `x` as a view (N, *outs, *window, C),
    channels innermost, so that flattening it (the im2col copy) moves whole channel rows."""
    spatial = len(window)
    lines = []
    if any(b or a for b, a in pads):
        lines.append(f"{out}_pad = np.pad({x}, {((0, 0), *pads, (0, 0))})")
        x = f"{out}_pad"
    spans = tuple((k - 1) * d + 1 for k, d in zip(window, dilations))
    picks = ", ".join([":"] + [f"::{s}" for s in strides] + [":"] + [f"::{d}" for d in dilations])
    # sliding_window_view appends the window axes after the channels: move them before.
    perm = (*range(spatial + 1), *range(spatial + 2, 2 * spatial + 2), spatial + 1)
    lines.append(f"{out}_win = np.lib.stride_tricks.sliding_window_view({x}, {spans}, "
                 f"axis={tuple(range(1, spatial + 1))})[{picks}].transpose({perm})")
    return lines


def _columns(win, offsets, channels, groups):
    """The windows (N, *outs, *K, C) as im2col columns: (M, K*C), or (G, M, K*C/G) where
    group g reads channels [g C/G, (g+1) C/G) at every offset (M = N * prod(outs))."""
    if groups == 1:
        return f"{win}.reshape(-1, {offsets * channels})"
    return (f"{win}.reshape(-1, {offsets}, {groups}, {channels // groups}).transpose(2, 0, 1, "
            f"3).reshape({groups}, -1, {offsets * channels // groups})")


def _kernel(w, taps, filters, groups):
    """The kernel (*K, C/G, F) as a matrix (K*C/G, F), or (G, K*C/G, F/G) for G groups:
    rows in the (offset, channel) order of the columns."""
    if groups == 1:
        return f"{w}.reshape({taps}, {filters})"
    return f"{w}.reshape({taps}, {groups}, {filters // groups}).transpose(1, 0, 2)"


def _by_group(t, groups, filters):
    """An output gradient (N, *outs, F) as (G, M, F/G), or (M, F) for one group."""
    if groups == 1:
        return f"{t}.reshape(-1, {filters})"
    return f"{t}.reshape(-1, {groups}, {filters // groups}).transpose(1, 0, 2)"


def _conv_lines(out, args, attrs, shapes):
    x, w = args
    strides, dilations, pads, groups = (attrs[k] for k in ("strides", "dilations", "pads",
                                                           "groups"))
    window, spatial, channels, filters = shapes[1][:-2], len(strides), shapes[0][-1], \
        shapes[1][-1]
    offsets = math.prod(window)
    lines = _windows_lines(out, x, window, strides, dilations, pads)
    product = (f"{_columns(out + '_win', offsets, channels, groups)} @ "
               f"{_kernel(w, offsets * channels // groups, filters, groups)}")
    if groups > 1:
        product = f"({product}).transpose(1, 0, 2)"
    lines.append(f"{out} = ({product}).reshape({out}_win.shape[:{spatial + 1}] + "
                 f"({filters},))")
    return lines


def _backprop_filter_lines(out, args, attrs, shapes):
    x, g = args
    window, strides, dilations, pads, groups = (
        attrs[k] for k in ("window", "strides", "dilations", "pads", "groups"))
    channels, filters = shapes[0][-1], shapes[1][-1]
    offsets = math.prod(window)
    lines = _windows_lines(out, x, window, strides, dilations, pads)
    columns = _columns(out + "_win", offsets, channels, groups)
    if groups == 1:
        product = f"{columns}.T @ {_by_group(g, 1, filters)}"
    else:
        product = (f"({columns}.transpose(0, 2, 1) @ {_by_group(g, groups, filters)})"
                   ".transpose(1, 0, 2)")
    lines.append(f"{out} = ({product}).reshape({(*window, channels // groups, filters)})")
    return lines


def _backprop_input_lines(out, args, attrs, shapes):
    g, w = args
    size, strides, dilations, pads, groups = (
        attrs[k] for k in ("input_size", "strides", "dilations", "pads", "groups"))
    window, spatial = shapes[1][:-2], len(strides)
    channels, filters, outs = shapes[1][-2] * groups, shapes[1][-1], shapes[0][1:-1]
    offsets = math.prod(window)
    taps = offsets * channels // groups
    kernel = _kernel(w, taps, filters, groups)
    if groups == 1:
        columns = f"{_by_group(g, 1, filters)} @ {kernel}.T"
    else:
        columns = (f"({_by_group(g, groups, filters)} @ {kernel}.transpose(0, 2, 1))"
                   f".reshape({groups}, -1, {offsets}, {channels // groups})"
                   ".transpose(1, 2, 0, 3)")
    lines = [f"{out}_col = ({columns}).reshape({g}.shape[:{spatial + 1}] + "
             f"{(*window, channels)})"]
    padded = tuple(n + b + a for n, (b, a) in zip(size, pads))
    lines.append(f"{out}_pad = np.zeros(({g}.shape[0],) + {padded + (channels,)}, "
                 f"dtype={g}.dtype)")
    # One strided add per window offset: where offset k of output position p reads.
    for offset in itertools.product(*(range(k) for k in window)):
        reads = ", ".join(f"{k * d}:{k * d + (o - 1) * s + 1}:{s}"
                          for k, d, o, s in zip(offset, dilations, outs, strides))
        lines.append(f"{out}_pad[:, {reads}, :] += {out}_col[..., "
                     f"{', '.join(map(str, offset))}, :]")
    inner = ", ".join(f"{b}:{b + n}" for (b, _), n in zip(pads, size))
    lines.append(f"{out} = {out}_pad[:, {inner}, :]")
    return lines


_COMPILED = {}
_COMPILED_SIZE = 1024       # geometries kept; a process that meets more starts again


def _eager(lines_of):
    """An op's `impl`: its generated lines compiled once per (attributes, input shapes
    without the batch axis), so eager values come from the code tapec emits."""
    def impl(*arrays, **attrs):
        shapes = [a.shape for a in arrays]
        key = (lines_of, tuple(sorted(attrs.items())), tuple(s[1:] for s in shapes))
        fn = _COMPILED.get(key)
        if fn is None:
            names = [f"a{i}" for i in range(len(arrays))]
            body = "\n".join("    " + line for line in lines_of("out", names, attrs, shapes))
            source = f"def conv_op({', '.join(names)}):\n{body}\n    return out\n"
            namespace = {"np": np}
            exec(compile(source, f"<tapec {lines_of.__name__}>", "exec"), namespace)
            if len(_COMPILED) >= _COMPILED_SIZE:
                _COMPILED.clear()
            fn = _COMPILED[key] = namespace["conv_op"]
        return fn(*arrays)
    return impl


def _template(lines_of):
    return lambda out, args, node: lines_of(out, args, node.attrs,
                                            [i.shape for i in node.inputs])


# --- batching: B convolutions are one convolution in B times the groups ---------------------

def _fold(t, batched, size, lead):
    """The channels (last) axis of `t` with the vmapped axis folded in, as B*C: `t` is
    (B, *axes, C), or (*axes, C) shared by all B; `lead` marks a leading batch axis of
    `t` (read at run time as -1)."""
    rank = len(t._shape) - batched
    if batched:
        t = transpose(t, (*range(1, rank), 0, rank))
    else:
        t = tile(expand_dims(t, -2), (1,) * (rank - 1) + (size, 1))
    middle = (-1, *t._shape[1:-2]) if lead else t._shape[:-2]
    return reshape(t, (*middle, size * t._shape[-1]))


def _unfold(y, size, lead):
    """(*lead axes, B*F) as (B, *lead axes, F)."""
    rank = len(y._shape)
    y = reshape(y, (-1, *y._shape[1:-1], size, y._shape[-1] // size) if lead else
                (*y._shape[:-1], size, y._shape[-1] // size))
    return transpose(y, (rank - 1, *range(rank - 1), rank))


def _conv_batch(args, batched, size, groups, **geometry):
    x, w = _fold(args[0], batched[0], size, True), _fold(args[1], batched[1], size, False)
    return _unfold(apply(CONV, x, w, groups=groups * size, **geometry), size, True)


def _backprop_input_batch(args, batched, size, groups, **geometry):
    g, w = _fold(args[0], batched[0], size, True), _fold(args[1], batched[1], size, False)
    return _unfold(apply(CONV_BACKPROP_INPUT, g, w, groups=groups * size, **geometry),
                   size, True)


def _backprop_filter_batch(args, batched, size, groups, **geometry):
    x, g = _fold(args[0], batched[0], size, True), _fold(args[1], batched[1], size, True)
    return _unfold(apply(CONV_BACKPROP_FILTER, x, g, groups=groups * size, **geometry),
                   size, False)


# --- the three ops ----------------------------------------------------------------------------

def _geometry(attrs):
    return {k: attrs[k] for k in ("strides", "dilations", "pads", "groups")}


def _conv_vjp(h, out, x, w, **attrs):
    geometry = _geometry(attrs)
    return (apply(CONV_BACKPROP_INPUT, h, w, input_size=x._shape[1:-1], **geometry),
            apply(CONV_BACKPROP_FILTER, x, h, window=w._shape[:-2], **geometry))


def _backprop_input_vjp(h, out, g, w, input_size, **attrs):
    geometry = _geometry(attrs)
    return (apply(CONV, h, w, **geometry),
            apply(CONV_BACKPROP_FILTER, h, g, window=w._shape[:-2], **geometry))


def _backprop_filter_vjp(h, out, x, g, window, **attrs):
    geometry = _geometry(attrs)
    return (apply(CONV_BACKPROP_INPUT, g, h, input_size=x._shape[1:-1], **geometry),
            apply(CONV, x, h, **geometry))


CONV = declare(Op(
    name="conv", impl=_eager(_conv_lines), infer=_conv_infer, vjp=_conv_vjp,
    batch=_conv_batch, numpy_lines=_template(_conv_lines),
    latex=r"\operatorname{{conv}}({0}, {1})"))

CONV_BACKPROP_INPUT = declare(Op(
    name="conv_backprop_input", short="conv_t", impl=_eager(_backprop_input_lines),
    infer=_backprop_input_infer, vjp=_backprop_input_vjp, batch=_backprop_input_batch,
    numpy_lines=_template(_backprop_input_lines),
    latex=r"\operatorname{{conv}}^{{T}}({0}, {1})"))

CONV_BACKPROP_FILTER = declare(Op(
    name="conv_backprop_filter", short="conv_dw", impl=_eager(_backprop_filter_lines),
    infer=_backprop_filter_infer, vjp=_backprop_filter_vjp, batch=_backprop_filter_batch,
    numpy_lines=_template(_backprop_filter_lines),
    latex=r"\operatorname{{conv}}_{{w}}({0}, {1})"))
