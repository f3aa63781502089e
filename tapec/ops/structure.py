"""Shape and structure: reversing, rolling, repeating, padding, band parts, cumulative
sums and products, linspace, meshgrid and unstack, under TensorFlow's names.

Two primitives are declared here: `cumsum` (its VJP is the cumulative sum taken the
other way) and `cumprod` (its VJP is written without dividing by the input, so it is
exact where the input has zeros, as JAX's). Everything else is a composite of slicing,
`concat`, `gather`, `where` with a constant mask, `transpose` and `broadcast_to`, whose
derivatives are already declared.
"""
from __future__ import annotations

import numpy as np

from .registry import Op, apply, declare, to_tensors
from .shape import (_int_arg, _normalize_axis, broadcast_to, cast, concat, expand_dims, eye,
                    reshape, transpose)
from .indexing import gather


def _tensor(op_name, x):
    (x,) = to_tensors(op_name, [x])
    return x


def _axes(op_name, axis, rank):
    """`axis` (an int or a sequence of them) as non-negative ints, checked in range."""
    axes = [axis] if np.ndim(axis) == 0 else list(np.asarray(axis).reshape(-1))
    return [_normalize_axis(op_name, a, rank) for a in axes]


def _along(axis, item):
    """An index that applies `item` along `axis` and keeps every other axis whole."""
    return (slice(None),) * axis + (item,)


def moveaxis(x, source, destination):
    """`x` with axis `source` moved to position `destination` (NumPy's `moveaxis`, for
    one axis or matching sequences of them)."""
    x = _tensor("moveaxis", x)
    rank = len(x._shape)
    source = _axes("moveaxis", source, rank)
    destination = _axes("moveaxis", destination, rank)
    if len(source) != len(destination) or len(set(source)) != len(source) \
            or len(set(destination)) != len(destination):
        raise ValueError(f"moveaxis: source {source} and destination {destination} must be "
                         "distinct axes, as many of one as of the other")
    order = [a for a in range(rank) if a not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return x if order == list(range(rank)) else transpose(x, order)


# --- reversing and rolling ---------------------------------------------------------------

def reverse(tensor, axis, name=None):
    """`tensor` with the order of its elements reversed along each of `axis`
    (`tf.reverse`): a slice with step -1, whose VJP is the same reversal."""
    x = _tensor("reverse", tensor)
    axes = _axes("reverse", axis, len(x._shape))
    if len(set(axes)) != len(axes):
        raise ValueError(f"reverse: axis {list(np.ravel(axis))} repeats an axis")
    if not axes:
        return x
    index = tuple(slice(None, None, -1) if a in axes else slice(None)
                  for a in range(max(axes) + 1))
    return x[index]


def roll(input, shift, axis, name=None):  # noqa: A002  (TensorFlow's name)
    """`input` rolled by `shift` along `axis` (`tf.roll`): element i moves to
    (i + shift) mod n. `shift` and `axis` may be matching sequences; shifts of a
    repeated axis add up. Each roll is two slices joined by `concat`."""
    x = _tensor("roll", input)
    shifts = [shift] if np.ndim(shift) == 0 else list(np.asarray(shift).reshape(-1))
    axes = _axes("roll", axis, len(x._shape))
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift {shift!r} and axis {axis!r} must have the same "
                         "length")
    total = {}
    for s, a in zip(shifts, axes):
        total[a] = total.get(a, 0) + _int_arg("roll", "shift", s)
    for a, s in total.items():
        n = x._shape[a]
        if n == 0 or s % n == 0:
            continue
        s %= n
        x = concat([x[_along(a, slice(n - s, None))],
                    x[_along(a, slice(None, n - s))]], axis=a)
    return x


# --- repeating -----------------------------------------------------------------------------

def repeat(input, repeats, axis=None, name=None):  # noqa: A002  (TensorFlow's name)
    """Each element of `input` repeated `repeats` times along `axis` (`tf.repeat`;
    `axis=None` flattens first). `repeats` is an int or one int per element of the axis.
    A `gather` with constant indices: its VJP adds the copies back up."""
    x = _tensor("repeat", input)
    if axis is None:
        x = reshape(x, (-1,))
        axis = 0
    axis = _normalize_axis("repeat", axis, len(x._shape))
    if hasattr(repeats, "numpy"):
        repeats = repeats.numpy()
    counts = np.asarray(repeats)
    if counts.dtype.kind not in "iu" or counts.ndim > 1:
        raise TypeError(f"repeat: repeats must be an int or a 1-D sequence of ints, got "
                        f"{repeats!r:.60}")
    n = x._shape[axis]
    if counts.ndim == 1 and counts.size not in (1, n):
        raise ValueError(f"repeat: {counts.size} repeats do not match axis {axis} of shape "
                         f"{x._shape} (size {n})")
    if np.any(counts < 0):
        raise ValueError(f"repeat: repeats must be non-negative, got {repeats!r:.60}")
    indices = np.repeat(np.arange(n), counts.reshape(-1) if counts.ndim else int(counts))
    return gather(x, indices.astype(np.int64), axis=axis)


# --- padding -------------------------------------------------------------------------------

_PAD_MODES = ("CONSTANT", "REFLECT", "SYMMETRIC")


def _pad_widths(op_name, paddings, rank):
    if hasattr(paddings, "numpy"):
        paddings = paddings.numpy()
    widths = np.asarray(paddings)
    if widths.dtype.kind not in "iu" or widths.shape != (rank, 2):
        raise ValueError(f"{op_name}: paddings must be ints of shape ({rank}, 2) for a tensor "
                         f"of rank {rank}, got {paddings!r:.80}")
    if np.any(widths < 0):
        raise ValueError(f"{op_name}: paddings must be non-negative, got {widths.tolist()}")
    return [(int(b), int(a)) for b, a in widths]


def pad_axis(x, axis, before, after, mode, constant=None):
    """`x` padded along one axis: `before` and `after` entries, a constant (a tensor or
    number broadcast to the block), the edge entry repeated ('edge'), a mirror that
    leaves out the edge ('reflect') or repeats it ('symmetric'), or the far end ('wrap')."""
    if before == 0 and after == 0:
        return x
    n = x._shape[axis]

    def part(start, stop, step=None):
        if step == -1 and stop is not None and stop < 0:
            stop = None              # a reversed slice through index 0
        return x[_along(axis, slice(start, stop, step))]

    if mode == "constant":
        def block(width):
            shape = x._shape[:axis] + (width,) + x._shape[axis + 1:]
            return broadcast_to(constant, shape)
        pieces = [block(before), x, block(after)]
    else:
        if n == 0:
            raise ValueError(f"pad: mode {mode!r} cannot pad an empty axis {axis} "
                             f"(shape {x._shape})")
        limit = {"edge": None, "reflect": n - 1, "symmetric": n, "wrap": n}[mode]
        if limit is not None and max(before, after) > limit:
            raise ValueError(f"pad: mode {mode!r} pads axis {axis} of shape {x._shape} by at "
                             f"most {limit} entries on a side, got ({before}, {after})")
        if mode == "edge":
            def side(width, at_end):
                edge = part(n - 1, n) if at_end else part(0, 1)
                shape = x._shape[:axis] + (width,) + x._shape[axis + 1:]
                return broadcast_to(edge, shape)
        elif mode == "reflect":
            def side(width, at_end):
                return part(n - 2, n - 2 - width, -1) if at_end else \
                    part(width, 0, -1)
        elif mode == "symmetric":
            def side(width, at_end):
                return part(n - 1, n - 1 - width, -1) if at_end else \
                    part(width - 1, None, -1)
        else:
            def side(width, at_end):
                return part(0, width) if at_end else part(n - width, n)
        pieces = [side(before, False) if before else None, x,
                  side(after, True) if after else None]
    pieces = [p for p in pieces if p is not None and p._shape[axis] > 0]
    return concat(pieces, axis=axis) if len(pieces) > 1 else pieces[0]


def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    """`tensor` padded by `paddings[i] = [before, after]` entries along each axis i
    (`tf.pad`). Modes CONSTANT (`constant_values`), REFLECT (a mirror without the edge)
    and SYMMETRIC (with it), case-insensitive as in TensorFlow."""
    x = _tensor("pad", tensor)
    if not isinstance(mode, str) or mode.upper() not in _PAD_MODES:
        raise ValueError(f"pad: mode must be one of {_PAD_MODES}, got {mode!r}")
    widths = _pad_widths("pad", paddings, len(x._shape))
    constant = None
    if mode.upper() == "CONSTANT":
        if np.ndim(constant_values) != 0:
            raise ValueError(f"pad: constant_values must be a scalar, got shape "
                             f"{np.shape(constant_values)}")
        constant = _tensor_like(x, constant_values)
    for axis, (before, after) in enumerate(widths):
        x = pad_axis(x, axis, before, after, mode.lower(), constant)
    return x


def _tensor_like(x, value):
    """`value` as a tensor of `x`'s dtype: a tensor is kept (its gradient flows), a
    number or array takes the dtype."""
    if hasattr(value, "_dtype"):
        (value,) = to_tensors("pad", [value])
        return value
    (_, value) = to_tensors("pad", [x, np.asarray(value, dtype=x._dtype)])
    return value


# --- band parts ----------------------------------------------------------------------------

def band_mask(rows, cols, lower, upper):
    """The constant [rows, cols] mask of a band: j - i <= upper and i - j <= lower (a
    negative bound keeps that whole triangle)."""
    i, j = np.arange(rows)[:, None], np.arange(cols)[None, :]
    keep = np.ones((rows, cols), dtype=bool)
    if lower >= 0:
        keep &= i - j <= lower
    if upper >= 0:
        keep &= j - i <= upper
    return keep


def masked(x, mask):
    """`x` where the constant `mask` holds, else zeros: `where`, so an inf or nan outside
    the mask does not leak into the result or the gradient."""
    from .elementwise import where
    return where(mask, x, np.zeros((), dtype=x._dtype))


def band_part(input, num_lower, num_upper, name=None):  # noqa: A002  (TensorFlow's name)
    """The band of the last two axes with `num_lower` subdiagonals and `num_upper`
    superdiagonals kept, zeros elsewhere (`tf.linalg.band_part`); a negative count keeps
    that whole triangle: `band_part(x, -1, 0)` is the lower triangle."""
    x = _tensor("band_part", input)
    if len(x._shape) < 2:
        raise ValueError(f"band_part: expects a matrix or a batch of them, shape [..., M, N], "
                         f"got shape {x._shape}")
    lower = _int_arg("band_part", "num_lower", num_lower)
    upper = _int_arg("band_part", "num_upper", num_upper)
    return masked(x, band_mask(*x._shape[-2:], lower, upper))


# --- cumulative sums and products -------------------------------------------------------------

def _cumulative_infer(name):
    def infer(x, axis, **attrs):
        if x._dtype.kind not in "iufc":
            raise TypeError(f"{name}: expects a numeric tensor, got dtype {x._dtype.name}")
        if not 0 <= axis < len(x._shape):
            raise ValueError(f"{name}: axis {axis} is out of range for shape {x._shape}")
        return x._shape, x._dtype
    return infer


def _cumsum_impl(x, axis, reverse):
    if reverse:
        return np.flip(np.cumsum(np.flip(x, axis), axis=axis), axis)
    return np.cumsum(x, axis=axis)


def _cumsum_source(args, node):
    axis, (x,) = node.attrs["axis"], args
    if node.attrs["reverse"]:
        return f"np.flip(np.cumsum(np.flip({x}, {axis}), axis={axis}), {axis})"
    return f"np.cumsum({x}, axis={axis})"


# y_j = sum_{i <= j} x_i, so dL/dx_i = sum_{j >= i} g_j: the cumulative sum the other way.
CUMSUM = declare(Op(
    name="cumsum", impl=_cumsum_impl, infer=_cumulative_infer("cumsum"),
    vjp=lambda g, out, x, axis, reverse: (apply(CUMSUM, g, axis=axis, reverse=not reverse),),
    batch=lambda args, batched, size, axis, reverse: apply(CUMSUM, args[0], axis=axis + 1,
                                                           reverse=reverse),
    numpy=_cumsum_source,
    array_api=lambda args, node: (
        f"xp.flip(xp.cumulative_sum(xp.flip({args[0]}, axis={node.attrs['axis']}), "
        f"axis={node.attrs['axis']}), axis={node.attrs['axis']})" if node.attrs["reverse"]
        else f"xp.cumulative_sum({args[0]}, axis={node.attrs['axis']})"),
    latex=r"\operatorname{{cumsum}}\left({0}\right)"))


def _cumprod_vjp(g, out, x, axis):
    # y_j = prod_{k <= j} x_k, so dy_j/dx_i = prod_{k <= j, k != i} x_k for j >= i: the
    # cumulative product of x with x_i replaced by 1 (row i of an [n, n] matrix), masked to
    # j >= i. No division by x_i, so the gradient is exact where x has zeros.
    from .elementwise import where
    from .linalg import einsum
    last = len(x._shape) - 1
    x_last, g_last = moveaxis(x, axis, last), moveaxis(g, axis, last)
    n = x._shape[axis]
    # the masks are ops (eye, cumsum), not arrays: a derivative rule builds only graph nodes
    diagonal = eye(n, dtype=np.bool_)
    upper = cast(apply(CUMSUM, eye(n, dtype=x._dtype), axis=1, reverse=False), np.bool_)
    rows = broadcast_to(expand_dims(x_last, -2), x_last._shape[:-1] + (n, n))
    others = where(diagonal, 1, rows)
    partial = where(upper, apply(CUMPROD, others, axis=last + 1), 0)
    return (moveaxis(einsum("...ij,...j->...i", partial, g_last), last, axis),)


CUMPROD = declare(Op(
    name="cumprod", impl=lambda x, axis: np.cumprod(x, axis=axis),
    infer=_cumulative_infer("cumprod"), vjp=_cumprod_vjp,
    batch=lambda args, batched, size, axis: apply(CUMPROD, args[0], axis=axis + 1),
    numpy=lambda args, node: f"np.cumprod({args[0]}, axis={node.attrs['axis']})",
    array_api=lambda args, node: (  # the helper runs along the last axis
        f"xp.moveaxis(tapec_xp_cumprod(xp, xp.moveaxis({args[0]}, {node.attrs['axis']}, -1)), "
        f"-1, {node.attrs['axis']})"),
    latex=r"\operatorname{{cumprod}}\left({0}\right)"))


def _cumulative(op_name, x, axis, exclusive, reverse, unit):
    x = _tensor(op_name, x)
    if not x._shape:
        raise ValueError(f"{op_name}: expects a tensor of rank >= 1, got a scalar")
    axis = _normalize_axis(op_name, axis, len(x._shape))
    if x._dtype.kind == "b":
        raise TypeError(f"{op_name}: expects a numeric tensor, got dtype bool")
    if reverse and op_name == "cumprod":
        x = reverse_axis(x, axis)
    if op_name == "cumsum":
        out = apply(CUMSUM, x, axis=axis, reverse=bool(reverse))
    else:
        out = apply(CUMPROD, x, axis=axis)
    if exclusive:
        # shift by one along the axis (towards the end, or the start when reversed)
        n = x._shape[axis]
        first = broadcast_to(np.asarray(unit, dtype=x._dtype),
                             x._shape[:axis] + (1,) + x._shape[axis + 1:])
        if reverse and op_name == "cumsum":
            out = concat([out[_along(axis, slice(1, n))], first], axis=axis)
        else:
            out = concat([first, out[_along(axis, slice(0, n - 1))]], axis=axis)
    if reverse and op_name == "cumprod":
        out = reverse_axis(out, axis)
    return out


def reverse_axis(x, axis):
    return x[_along(axis, slice(None, None, -1))]


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative sum along `axis` (`tf.math.cumsum`): `exclusive` leaves out each
    element itself (starting from 0), `reverse` sums from the end."""
    return _cumulative("cumsum", x, axis, exclusive, reverse, 0)


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative product along `axis` (`tf.math.cumprod`): `exclusive` leaves out each
    element itself (starting from 1), `reverse` multiplies from the end. Its gradient is
    exact where `x` has zeros (no division by `x`)."""
    return _cumulative("cumprod", x, axis, exclusive, reverse, 1)


# --- linspace, meshgrid, unstack ------------------------------------------------------------

def linspace(start, stop, num, name=None, axis=0):
    """`num` evenly spaced values from `start` to `stop`, both included (`tf.linspace`).
    Tensor endpoints of shape S give a result of shape S with a new axis of `num` at
    `axis`; the gradient flows to both endpoints."""
    start, stop = to_tensors("linspace", [start, stop])
    if start._dtype.kind not in "fc" or stop._dtype.kind not in "fc":
        raise TypeError(f"linspace: start and stop must be floating, got "
                        f"{start._dtype.name} and {stop._dtype.name}")
    num = _int_arg("linspace", "num", num)
    return linspace_along(start, stop, num, True, axis)


def linspace_along(start, stop, num, endpoint, axis):
    """NumPy's linspace on tensors (start + i * step, with the last value exactly `stop`
    when `endpoint`), the new axis at `axis`."""
    if num < 0:
        raise ValueError(f"linspace: num must be non-negative, got {num}")
    shape = np.broadcast_shapes(start._shape, stop._shape)
    start, stop = broadcast_to(start, shape), broadcast_to(stop, shape)
    axis = _normalize_axis("linspace", axis, len(shape) + 1)
    div = (num - 1) if endpoint else num
    steps = np.arange(num, dtype=start._dtype).reshape((num,) + (1,) * len(shape))
    if div > 0:
        values = expand_dims(start, 0) + steps * expand_dims((stop - start) / div, 0)
        if endpoint and num > 1:
            values = concat([values[:num - 1], expand_dims(stop, 0)], axis=0)
    else:
        values = broadcast_to(expand_dims(start, 0), (num,) + shape)
    return moveaxis(values, 0, axis)


def meshgrid(*args, **kwargs):
    """Coordinate grids from 1-D tensors (`tf.meshgrid`): `indexing='xy'` (Cartesian, the
    default: the first two axes swapped) or 'ij' (matrix)."""
    indexing = kwargs.pop("indexing", "xy")
    kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"meshgrid: unexpected keyword(s) {sorted(kwargs)}")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    tensors = [reshape(t, (-1,)) for t in to_tensors("meshgrid", list(args))]
    sizes = [t._shape[0] for t in tensors]
    if indexing == "xy" and len(tensors) >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    grids = []
    for k, t in enumerate(tensors):
        axis = 1 - k if indexing == "xy" and len(tensors) >= 2 and k < 2 else k
        shape = [1] * len(tensors)
        shape[axis] = t._shape[0]
        grids.append(broadcast_to(reshape(t, tuple(shape)), tuple(sizes)))
    return grids


def unstack(value, num=None, axis=0, name="unstack"):
    """The tensors along `axis` of `value`, as a list (`tf.unstack`)."""
    x = _tensor("unstack", value)
    if not x._shape:
        raise ValueError("unstack: cannot unstack a scalar")
    axis = _normalize_axis("unstack", axis, len(x._shape))
    n = x._shape[axis]
    if num is not None and num != n:
        raise ValueError(f"unstack: num={num} does not match axis {axis} of shape "
                         f"{x._shape} (size {n})")
    return [x[_along(axis, i)] for i in range(n)]


__all__ = ["reverse", "roll", "repeat", "pad", "cumsum", "cumprod", "linspace", "meshgrid",
           "unstack"]
