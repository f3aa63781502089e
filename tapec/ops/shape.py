"""Structural ops: leaves, constants, creation, casts, reshapes, transposes, broadcasting,
concatenation and tiling. Indexing (`getitem`, `scatter`, `gather`) lives in `indexing`
and is re-exported here.

`sum_to` and `broadcast_to` are each other's derivative; the reverse pass inserts
`sum_to` wherever a cotangent is broader than its input (the one place NumPy
broadcasting is undone). `concat` and slicing are likewise a pair.
"""
from __future__ import annotations

import builtins
import keyword
import math
import operator

import numpy as np

from .. import context
from ..dtypes import as_numpy_dtype
from ..namespaces.errors import invalid_argument
from ..tensor import shape_arg
from .literals import python_literal, xp_dtype, xp_full, xp_literal, xp_scalar
from .scalar_forms import c_argument, c_literal
from .registry import REGISTRY, Op, apply, declare, to_tensors

# This module defines TensorFlow's `range`, which shadows the builtin for its own code.
_range = builtins.range


def _printed(value) -> str:
    return python_literal(value)


def _dtype_name(dtype) -> str:
    return "np." + np.dtype(dtype).name


def _as_np_dtype(dtype) -> np.dtype:
    return as_numpy_dtype(dtype)


def _int_arg(op_name, what, value) -> int:
    """`value` as an int when it is one (Python or NumPy int, integer 0-d tensor); floats
    (NaN and inf included), strings and None raise TypeError naming the op."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{op_name}: {what} must be an int, got "
                        f"{type(value).__name__} {value!r:.60}") from None


def _normalize_axis(op_name, axis, rank, what="tensors of rank"):
    """One axis in [-rank, rank) as a non-negative int."""
    axis = _int_arg(op_name, "axis", axis)
    if not -rank <= axis < rank:
        raise ValueError(f"{op_name}: axis {axis} is out of range for {what} {rank}")
    return axis % rank


# --- leaves, constants and creation -----------------------------------------------------

PLACEHOLDER = declare(Op(
    name="placeholder", impl=None,
    infer=lambda **a: (a["shape"], np.dtype(a["dtype"])),
    latex=r"\operatorname{{placeholder}}", differentiable=False))

CONSTANT = declare(Op(
    name="constant",
    impl=lambda value, dtype, **sign: np.asarray(value, dtype=dtype),
    infer=lambda value, dtype, **sign: ((), np.dtype(dtype)),
    numpy=lambda args, node: _printed(np.asarray(node.attrs["value"],
                                                 dtype=node.attrs["dtype"])),
    # A float64 or bool literal prints as the Python float or bool it is.
    scalar=lambda args, node: _printed(np.asarray(node.attrs["value"],
                                                  dtype=node.attrs["dtype"])),
    c=lambda args, node: c_literal(node.attrs["value"], node.attrs["dtype"]),
    array_api=lambda args, node: xp_scalar(node.attrs["value"], node.attrs["dtype"]),
    latex=r"\operatorname{{constant}}", differentiable=False))

FILL = declare(Op(
    name="fill",
    impl=lambda value, shape, dtype: np.full(shape, value, dtype=dtype),
    infer=lambda value, shape, dtype: (tuple(shape), np.dtype(dtype)),
    numpy=lambda args, node: (
        f"{_dtype_name(node.dtype)}({_printed(node.attrs['value'])})" if node.shape == ()
        else f"np.full({node.shape}, {_printed(node.attrs['value'])}, "
             f"dtype={_dtype_name(node.dtype)})"),
    scalar=lambda args, node: (_printed(np.asarray(node.attrs["value"], dtype=node.dtype))
                               if node.shape == () else None),
    c=lambda args, node: (c_literal(node.attrs["value"], node.dtype) if node.shape == ()
                          else None),
    array_api=lambda args, node: (xp_scalar(node.attrs["value"], node.dtype)
                                  if node.shape == () else
                                  xp_full(node.shape, node.attrs["value"], node.dtype)),
    latex="\\operatorname{{fill}}", differentiable=False))


def fill(dims, value, dtype=None, name=None):
    """A tensor of shape `dims` filled with the scalar `value` (TensorFlow's `tf.fill`).

    The dtype is the value's (Python floats give float32, ints int32); `dtype`, a tapec
    extension, converts it. A tensor `value` gets a gradient, the sum of the cotangent,
    as in TensorFlow; a number is a constant, part of the graph's structure."""
    shape = shape_arg("fill", dims)
    if hasattr(value, "_dtype"):                 # Tensor or Variable
        (v,) = to_tensors("fill", [value])
        if v._shape != ():
            raise ValueError(f"fill: value must be a scalar, got shape {v._shape}")
        return broadcast_to(v if dtype is None else cast(v, dtype), shape)
    if np.ndim(value) != 0:
        raise ValueError(f"fill: value must be a scalar, got shape {np.shape(value)}")
    if dtype is None:
        from ..tensor import _python_scalar_dtype
        dtype = value.dtype if isinstance(value, (np.ndarray, np.generic)) \
            else _python_scalar_dtype(value)
    dtype = _as_np_dtype(dtype)
    return apply(FILL, value=np.asarray(value, dtype=dtype).item(), shape=shape,
                 dtype=dtype.str)


def zeros(shape, dtype=np.float32, name=None):
    """A tensor of zeros (TensorFlow's `tf.zeros`; float32 by default)."""
    return fill(shape, 0, dtype)


def ones(shape, dtype=np.float32, name=None):
    """A tensor of ones (TensorFlow's `tf.ones`; float32 by default)."""
    return fill(shape, 1, dtype)


FILL_LIKE = declare(Op(
    name="fill_like",
    impl=lambda x, value, dtype: np.full(np.shape(x), value, dtype=dtype),
    infer=lambda x, value, dtype: (x._shape, np.dtype(dtype)),
    numpy=lambda args, node: (f"np.full(np.shape({args[0]}), {_printed(node.attrs['value'])}"
                              f", dtype={_dtype_name(node.dtype)})"),
    array_api=lambda args, node: (f"xp.full({args[0]}.shape, "
                                  f"{xp_literal(node.attrs['value'], node.dtype)}, "
                                  f"dtype={xp_dtype(node.dtype)}, device=device)"),
    latex="\\operatorname{{fill}}", differentiable=False))


def _filled_like(what, input, value, dtype):
    """`value` in the shape of `input`. In a traced function the shape is read from
    `input` when the program runs, so one trace serves every size of its None
    dimensions; elsewhere the shape is known, and the fill is a constant."""
    (x,) = to_tensors(what, [input])
    dtype = x._dtype if dtype is None else _as_np_dtype(dtype)
    if context.tracing_tape() is None:
        return fill(x._shape, value, dtype)
    return apply(FILL_LIKE, x, value=np.asarray(value, dtype=dtype).item(), dtype=dtype.str)


def zeros_like(input, dtype=None, name=None):  # noqa: A002  (TensorFlow's name)
    """Zeros with the shape (and by default the dtype) of `input`; no gradient flows."""
    return _filled_like("zeros_like", input, 0, dtype)


def ones_like(input, dtype=None, name=None):  # noqa: A002  (TensorFlow's name)
    """Ones with the shape (and by default the dtype) of `input`; no gradient flows."""
    return _filled_like("ones_like", input, 1, dtype)


def _range_length(start, limit, delta):
    # NumPy's arange length, ceil((limit - start) / delta), never negative.
    return max(0, math.ceil((limit - start) / delta))


RANGE = declare(Op(
    name="range",
    impl=lambda start, limit, delta, dtype: np.arange(start, limit, delta).astype(dtype),
    infer=lambda start, limit, delta, dtype: ((_range_length(start, limit, delta),),
                                              np.dtype(dtype)),
    numpy=lambda args, node: (
        "np.arange({start!r}, {limit!r}, {delta!r})".format(**node.attrs)
        + f".astype({_dtype_name(node.dtype)})"),
    # counted in the Python numbers' own type (float64 or int64), as NumPy, then cast
    array_api=lambda args, node: (
        "xp.astype(xp.arange({start!r}, {limit!r}, {delta!r}, ".format(**node.attrs)
        + f"dtype=xp.{'float64' if isinstance(node.attrs['start'], float) else 'int64'}, "
        f"device=device), {xp_dtype(node.dtype)})"),
    latex="\\operatorname{{range}}", differentiable=False))


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001
    """`start, start + delta, ...` up to but excluding `limit` (TensorFlow's `tf.range`).

    With one argument it is the limit and counting starts at 0. The dtype is int32 when
    every argument is an integer and float32 otherwise, unless `dtype` is given."""
    if limit is None:
        start, limit = 0, start
    values = []
    for what, v in (("start", start), ("limit", limit), ("delta", delta)):
        v = v.numpy() if hasattr(v, "numpy") else v
        if np.ndim(v) != 0 or np.asarray(v).dtype.kind not in "iuf":
            raise TypeError(f"range: {what} must be a real scalar, got {v!r:.60}")
        values.append(np.asarray(v).item())
    if dtype is None:
        floating = any(isinstance(v, float) for v in values)
        dtype = np.float32 if floating else np.int32
    dtype = _as_np_dtype(dtype)
    start, limit, delta = (float(v) if dtype.kind == "f" else int(v) for v in values)
    if delta == 0 or not all(math.isfinite(v) for v in (start, limit, delta)):
        raise ValueError(f"range: delta must be nonzero and the arguments finite; got "
                         f"start={start}, limit={limit}, delta={delta}")
    return apply(RANGE, start=start, limit=limit, delta=delta, dtype=dtype.str)


EYE = declare(Op(
    name="eye", impl=lambda n, m, dtype: np.eye(n, m, dtype=dtype),
    infer=lambda n, m, dtype: ((n, m), np.dtype(dtype)),
    numpy=lambda args, node: "np.eye({n}{cols}, dtype={dtype})".format(
        n=node.attrs["n"], cols="" if node.attrs["m"] == node.attrs["n"]
        else f", {node.attrs['m']}", dtype=_dtype_name(node.dtype)),
    array_api=lambda args, node: (f"xp.eye({node.attrs['n']}, {node.attrs['m']}, "
                                  f"dtype={xp_dtype(node.dtype)}, device=device)"),
    latex="I", differentiable=False))


def eye(num_rows, num_columns=None, batch_shape=None, dtype=np.float32, name=None):
    """The identity matrix, `num_rows` x `num_columns` (TensorFlow's `tf.eye`), optionally
    repeated over `batch_shape`."""
    n = int(num_rows)
    m = n if num_columns is None else int(num_columns)
    if n < 0 or m < 0:
        raise ValueError(f"eye: num_rows and num_columns must be >= 0, got {n} and {m}")
    result = apply(EYE, n=n, m=m, dtype=_as_np_dtype(dtype).str)
    if batch_shape is None:
        return result
    batch = shape_arg("eye", batch_shape)
    return broadcast_to(result, batch + (n, m))


def _identity_infer(x, **attrs):
    return x._shape, x._dtype


READ_VARIABLE = declare(Op(
    name="read_variable", short="read", impl=lambda x: x, infer=_identity_infer,
    vjp=lambda g, out, handle: (g,), numpy=lambda args, node: args[0],
    scalar=lambda args, node: args[0], c=c_argument, latex="{0}", stateful=True))

IDENTITY = declare(Op(
    name="identity", impl=lambda x: x, infer=_identity_infer,
    vjp=lambda g, out, x: (g,), batch=lambda args, batched, size: identity(args[0]),
    numpy=lambda args, node: args[0], scalar=lambda args, node: args[0], c=c_argument,
    latex="{0}"))


def identity(input, name=None):  # noqa: A002  (TensorFlow's name)
    """The same value as a new tensor; gradients pass through unchanged."""
    return apply(IDENTITY, input)


def _shape_infer(x, out_type):
    dtype = np.dtype(out_type)
    if dtype not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise TypeError(f"shape: out_type must be int32 or int64, got {dtype.name}")
    return (len(x._shape),), dtype


SHAPE = declare(Op(
    name="shape", impl=lambda x, out_type: np.array(x.shape, dtype=out_type),
    infer=_shape_infer, differentiable=False,
    numpy=lambda args, node: f"np.array(np.shape({args[0]}), dtype=np.{node.dtype.name})",
    array_api=lambda args, node: (f"xp.asarray({args[0]}.shape, dtype={xp_dtype(node.dtype)}, "
                                  "device=device)"),
    latex=r"\operatorname{{shape}}\left({0}\right)"))


def shape(input, out_type=np.int32, name=None):  # noqa: A002  (TensorFlow's name)
    """The shape of `input` as a 1-d integer tensor computed when the program runs
    (`tf.shape`): in a `tapec.function` with None dimensions it follows the sizes of
    each call, where `input.shape` holds None."""
    return apply(SHAPE, input, out_type=as_numpy_dtype(out_type).str)


STOP_GRADIENT = declare(Op(
    name="stop_gradient", impl=lambda x: x, infer=_identity_infer,
    vjp=lambda g, out, x: (None,),
    batch=lambda args, batched, size: stop_gradient(args[0]),
    numpy=lambda args, node: args[0], scalar=lambda args, node: args[0], c=c_argument,
    latex="{0}"))


def stop_gradient(input, name=None):  # noqa: A002  (TensorFlow's name)
    """The same value, but no gradient flows back through it."""
    return apply(STOP_GRADIENT, input)


# --- cast ------------------------------------------------------------------------------

def _cast_vjp(g, out, x, dtype):
    if x._dtype.kind in "fc":
        return (cast(g, x._dtype),)
    return (None,)


CAST = declare(Op(
    name="cast",
    impl=lambda x, dtype: x.astype(dtype),
    infer=lambda x, dtype: (x._shape, np.dtype(dtype)),
    vjp=_cast_vjp,
    batch=lambda args, batched, size, dtype: apply(CAST, args[0], dtype=dtype),
    numpy=lambda args, node: f"{_array_text(args[0])}.astype({_dtype_name(node.dtype)})",
    array_api=lambda args, node: (f"xp.astype({_array_text(args[0], xp=True)}, "
                                  f"{xp_dtype(node.dtype)})"),
    latex="{0}"))


def _array_text(text: str, xp=False) -> str:
    """Generated code for an array operand: a name as it is, a literal (inlined when
    simplification is off: `2`, `-1.5`) made an array first."""
    named = text.isidentifier() and not keyword.iskeyword(text)      # True is a literal
    if named:
        return text
    return f"xp.asarray({text}, device=device)" if xp else f"np.asarray({text})"


def cast(x, dtype, name=None):
    """`x` converted to `dtype`; gradients flow between floating dtypes only."""
    from ..tensor import _dtype_arg
    if dtype is None:
        raise TypeError("cast: dtype must be a dtype such as tf.float32, got None")
    target = _dtype_arg("cast", dtype)
    (x,) = to_tensors("cast", [x])
    if x._dtype == target:
        return x
    return apply(CAST, x, dtype=target.str)


# --- reshape and transpose -------------------------------------------------------------

def _reshape_infer(x, shape):
    return shape, x._dtype


RESHAPE = declare(Op(
    name="reshape", impl=lambda x, shape: np.reshape(x, shape), infer=_reshape_infer,
    vjp=lambda g, out, x, shape: (reshape(g, x._shape),),
    batch=lambda args, batched, size, shape: reshape(args[0], (size,) + shape),
    numpy=lambda args, node: f"np.reshape({args[0]}, {node.attrs['shape']})",
    latex=r"\operatorname{{reshape}}\left({0}\right)"))


def _resolve_shape(op_name, old_shape, shape):
    try:
        shape = tuple(operator.index(s) for s in
                      (shape.numpy() if hasattr(shape, "numpy") else shape))
    except TypeError:
        raise TypeError(f"{op_name}: shape must be a sequence of ints, got {shape!r:.60}") \
            from None
    size = int(np.prod(old_shape, dtype=np.int64))
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1 or any(s < -1 for s in shape):
        raise ValueError(f"{op_name}: invalid target shape {shape}")
    if unknown:
        known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
        if known == 0 or size % known:
            raise invalid_argument(f"{op_name}: cannot reshape {old_shape} ({size} "
                                   f"elements) into {shape}")
        shape = tuple(size // known if s == -1 else s for s in shape)
    if int(np.prod(shape, dtype=np.int64)) != size:
        # TensorFlow raises InvalidArgumentError here; it is also a ValueError
        raise invalid_argument(f"{op_name}: cannot reshape {old_shape} ({size} elements) "
                               f"into {shape}")
    return shape


def reshape(tensor, shape, name=None):
    """`tensor` with a new shape of the same size (one entry may be -1)."""
    (x,) = to_tensors("reshape", [tensor])
    shape = _resolve_shape("reshape", x._shape, shape)
    if shape == x._shape:
        return x
    return apply(RESHAPE, x, shape=shape)


def _transpose_infer(x, perm):
    return tuple(x._shape[p] for p in perm), x._dtype


TRANSPOSE = declare(Op(
    name="transpose", impl=lambda x, perm: np.transpose(x, perm), infer=_transpose_infer,
    vjp=lambda g, out, x, perm: (apply(TRANSPOSE, g, perm=tuple(np.argsort(perm).tolist())),),
    batch=lambda args, batched, size, perm: apply(TRANSPOSE, args[0],
                                                  perm=(0,) + tuple(p + 1 for p in perm)),
    numpy=lambda args, node: (f"{args[0]}.T" if node.attrs["perm"] == (1, 0)
                              else f"np.transpose({args[0]}, {node.attrs['perm']})"),
    # `.T` is the standard's transpose of a 2-D array, and NumPy's is 7x faster than
    # permute_dims (a view either way).
    array_api=lambda args, node: (f"{args[0]}.T" if node.attrs["perm"] == (1, 0)
                                  else f"xp.permute_dims({args[0]}, {node.attrs['perm']})"),
    latex="{0}^{{T}}"))


def transpose(a, perm=None, conjugate=False, name=None):
    """Permute the axes of `a`; by default reverse them (TensorFlow's `tf.transpose`)."""
    (x,) = to_tensors("transpose", [a])
    rank = len(x._shape)
    if perm is None:
        perm = tuple(_range(rank - 1, -1, -1))
    else:
        if hasattr(perm, "numpy"):
            perm = perm.numpy()
        try:
            perm = tuple(operator.index(p) for p in perm)
        except TypeError:
            raise TypeError(f"transpose: perm must be a sequence of ints, got "
                            f"{perm!r:.60}") from None
        if sorted(p % rank if rank else p for p in perm) != list(_range(rank)):
            raise ValueError(f"transpose: perm {perm} is not a permutation of the {rank} axes "
                             f"of a tensor of shape {x._shape}")
        perm = tuple(p % rank for p in perm)
    if perm == tuple(_range(rank)):
        return x
    return apply(TRANSPOSE, x, perm=perm)


def matrix_transpose(x):
    """Swap the last two axes."""
    rank = len(x._shape)
    return transpose(x, tuple(_range(rank - 2)) + (rank - 1, rank - 2))


def expand_dims(input, axis, name=None):  # noqa: A002  (TensorFlow's name)
    """`input` with a new axis of size 1 at `axis` (in [-rank - 1, rank])."""
    (x,) = to_tensors("expand_dims", [input])
    rank = len(x._shape)
    axis = _normalize_axis("expand_dims", axis, rank + 1, "a result of rank")
    return reshape(x, x._shape[:axis] + (1,) + x._shape[axis:])


def squeeze(input, axis=None, name=None):  # noqa: A002  (TensorFlow's name)
    """`input` without its size-1 axes (all of them, or those listed in `axis`)."""
    (x,) = to_tensors("squeeze", [input])
    rank = len(x._shape)
    if axis is None:
        axes = {i for i, s in enumerate(x._shape) if s == 1}
    else:
        axes = {_normalize_axis("squeeze", a, rank) for a in np.atleast_1d(axis).tolist()}
        wide = [a for a in sorted(axes) if x._shape[a] != 1]
        if wide:
            raise ValueError(f"squeeze: cannot squeeze axis {wide[0]} of shape {x._shape}: "
                             f"its size is {x._shape[wide[0]]}, not 1")
    return reshape(x, tuple(s for i, s in enumerate(x._shape) if i not in axes))


# --- broadcasting and its inverse --------------------------------------------------------

def _sum_to_axes(from_shape, to_shape):
    """Axes of `from_shape` to sum so that the result reshapes to `to_shape`."""
    lead = len(from_shape) - len(to_shape)
    kept = tuple(lead + i for i, size in enumerate(to_shape)
                 if size == 1 and from_shape[lead + i] != 1)
    return tuple(_range(lead)) + kept


def _broadcast_to_infer(x, shape):
    try:
        if np.broadcast_shapes(x._shape, shape) != shape:
            raise ValueError
    except ValueError:
        raise invalid_argument(f"broadcast_to: shape {x._shape} cannot be broadcast to "
                               f"{shape}") from None
    return shape, x._dtype


def _sum_to_infer(x, shape):
    try:
        if np.broadcast_shapes(x._shape, shape) != x._shape:
            raise ValueError
    except ValueError:
        raise ValueError(f"sum_to: shape {x._shape} cannot be summed to {shape}") from None
    return shape, x._dtype


def _sum_to_impl(x, shape):
    return np.sum(x, axis=_sum_to_axes(x.shape, shape)).reshape(shape)


BROADCAST_TO = declare(Op(
    name="broadcast_to", short="broadcast", impl=lambda x, shape: np.broadcast_to(x, shape),
    infer=_broadcast_to_infer,
    vjp=lambda g, out, x, shape: (sum_to(g, x._shape),),
    batch=lambda args, batched, size, shape: broadcast_to(
        _pad_batched(args[0], len(shape)), (size,) + shape),
    numpy=lambda args, node: f"np.broadcast_to({args[0]}, {node.attrs['shape']})",
    latex=r"\operatorname{{broadcast\_to}}\left({0}\right)"))

def _sum_to_source(args, node, xp=False):
    """NumPy's source, or with `xp` the array-API form's (which names an integer sum's
    dtype: the standard sums integers in the default integer dtype, int64, where tapec
    keeps the input's, as TensorFlow)."""
    from_shape = node.inputs[0].shape
    axes = _sum_to_axes(from_shape, node.shape)
    summed = f"xp.sum({args[0]}, axis={axes}{_sum_dtype(node.dtype)})" if xp else \
        f"np.sum({args[0]}, axis={axes})"
    remaining = tuple(size for i, size in enumerate(from_shape) if i not in axes)
    if remaining == node.shape:
        return summed
    return f"xp.reshape({summed}, {node.shape})" if xp else f"{summed}.reshape({node.shape})"


def _sum_dtype(dtype) -> str:
    """The `dtype=` of an array-API sum of `dtype` values ("" for floats)."""
    return "" if np.dtype(dtype).kind in "fc" else f", dtype={xp_dtype(dtype)}"


SUM_TO = declare(Op(
    name="sum_to", impl=_sum_to_impl, infer=_sum_to_infer,
    vjp=lambda g, out, x, shape: (broadcast_to(g, x._shape),),
    batch=lambda args, batched, size, shape: _batched_sum_to(args[0], size, shape),
    numpy=_sum_to_source,
    array_api=lambda args, node: _sum_to_source(args, node, xp=True), latex=r"\operatorname{{sum\_to}}\left({0}\right)"))


def _batched_sum_to(x, size, shape):
    from .reduce import reduce_sum
    axes = _sum_to_axes(x._shape[1:], shape)
    summed = reduce_sum(x, axis=[a + 1 for a in axes]) if axes else x
    return reshape(summed, (size,) + shape)


def _pad_batched(x, rank):
    from .elementwise import pad_batched
    return pad_batched(x, rank)


def broadcast_to(input, shape, name=None):  # noqa: A002  (TensorFlow's name)
    (x,) = to_tensors("broadcast_to", [input])
    shape = tuple(int(s) for s in shape)
    if shape == x._shape:
        return x
    return apply(BROADCAST_TO, x, shape=shape)


def sum_to(x, shape):
    """Sum `x` over the axes along which `shape` was broadcast to `x`'s shape."""
    shape = tuple(shape)
    if x._shape == shape:
        return x
    return apply(SUM_TO, x, shape=shape)


# --- concatenation and tiling ------------------------------------------------------------

def _concat_infer(*values, axis):
    first = values[0]
    shapes = " and ".join(str(v._shape) for v in values)
    for v in values[1:]:
        if v._dtype != first._dtype:
            raise TypeError(f"concat: values have different dtypes, {first._dtype.name} "
                            f"{first._shape} and {v._dtype.name} {v._shape}")
    if not 0 <= axis < len(first._shape):
        raise ValueError(f"concat: axis {axis} is out of range for shapes {shapes}")
    for v in values[1:]:
        if len(v._shape) != len(first._shape) or any(
                a != b for i, (a, b) in enumerate(zip(v._shape, first._shape)) if i != axis):
            raise ValueError(f"concat: shapes {shapes} differ outside axis {axis}")
    size = sum(v._shape[axis] for v in values)
    return first._shape[:axis] + (size,) + first._shape[axis + 1:], first._dtype


def _slice_along(x, axis, start, stop):
    # getitem is declared in `indexing`, which builds on this module: found by name
    index = (("slice", None, None, None),) * axis + (("slice", start, stop, None),)
    return apply(REGISTRY["getitem"], x, index=index)


def _concat_vjp(g, out, *values, axis):
    bounds = np.cumsum([0] + [v._shape[axis] for v in values]).tolist()
    return tuple(_slice_along(g, axis, bounds[i], bounds[i + 1]) for i in _range(len(values)))


CONCAT = declare(Op(
    name="concat", impl=lambda *values, axis: np.concatenate(values, axis=axis),
    infer=_concat_infer, vjp=_concat_vjp,
    batch=lambda args, batched, size, axis: apply(
        CONCAT, *(a if flag else broadcast_to(a, (size,) + a._shape)
                  for a, flag in zip(args, batched)), axis=axis + 1),
    numpy=lambda args, node: f"np.concatenate(({''.join(a + ', ' for a in args)}), "
                             f"axis={node.attrs['axis']})",
    array_api=lambda args, node: f"xp.concat(({''.join(a + ', ' for a in args)}), "
                                 f"axis={node.attrs['axis']})",
    latex="\\operatorname{{concat}}({0}, \\ldots)"))


def _value_list(op_name, values):
    if hasattr(values, "_dtype") or not isinstance(values, (list, tuple)) or not values:
        raise ValueError(f"{op_name}: values must be a non-empty list of tensors, got "
                         f"{type(values).__name__}")
    return to_tensors(op_name, list(values))


def concat(values, axis, name="concat"):
    """`values` joined along the existing axis `axis` (TensorFlow's `tf.concat`)."""
    tensors = _value_list("concat", values)
    rank = len(tensors[0]._shape)
    if rank == 0:
        raise ValueError("concat: cannot concatenate 0-d tensors; use stack")
    axis = _normalize_axis("concat", axis, rank)
    if len(tensors) == 1:
        _concat_infer(*tensors, axis=axis)
        return tensors[0]
    return apply(CONCAT, *tensors, axis=axis)


def stack(values, axis=0, name="stack"):
    """`values`, all of one shape, joined along a new axis (TensorFlow's `tf.stack`)."""
    tensors = _value_list("stack", values)
    shape = tensors[0]._shape
    if any(t._shape != shape for t in tensors):
        raise ValueError(f"stack: shapes {' and '.join(str(t._shape) for t in tensors)} "
                         "must all be equal")
    axis = _normalize_axis("stack", axis, len(shape) + 1, "a result of rank")
    return concat([expand_dims(t, axis) for t in tensors], axis)


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """`value` cut along `axis` into a list: `num_or_size_splits` equal pieces, or pieces
    of the listed sizes (one may be -1). Each piece is a slice of `value`."""
    (x,) = to_tensors("split", [value])
    axis = _normalize_axis("split", axis, len(x._shape))
    total = x._shape[axis]
    if hasattr(num_or_size_splits, "numpy"):
        num_or_size_splits = num_or_size_splits.numpy()
    if np.ndim(num_or_size_splits) == 0:
        count = int(num_or_size_splits)
        if count <= 0 or total % count:
            raise ValueError(f"split: axis {axis} of shape {x._shape} (size {total}) cannot "
                             f"be split into {count} equal pieces")
        sizes = [total // count] * count
    else:
        sizes = [int(s) for s in np.asarray(num_or_size_splits).reshape(-1)]
        if sizes.count(-1) == 1 and all(s >= 0 for s in sizes if s != -1):
            sizes[sizes.index(-1)] = total - sum(s for s in sizes if s != -1)
        if any(s < 0 for s in sizes) or sum(sizes) != total:
            raise ValueError(f"split: sizes {list(num_or_size_splits)} do not add up to "
                             f"{total}, the size of axis {axis} of shape {x._shape}")
    bounds = np.cumsum([0] + sizes).tolist()
    return [_slice_along(x, axis, bounds[i], bounds[i + 1]) for i in _range(len(sizes))]


def _tile_infer(x, multiples):
    if len(multiples) != len(x._shape) or any(m < 0 for m in multiples):
        raise ValueError(f"tile: multiples {multiples} must be {len(x._shape)} non-negative "
                         f"ints for a tensor of shape {x._shape}")
    return tuple(m * s for m, s in zip(multiples, x._shape)), x._dtype


def _tile_vjp(g, out, x, multiples):
    # Axis i of the output is (m_i copies) x (s_i): sum over the copies.
    from .reduce import reduce_sum
    pairs = tuple(d for m, s in zip(multiples, x._shape) for d in (m, s))
    return (reduce_sum(reshape(g, pairs), axis=tuple(_range(0, len(pairs), 2))),)


TILE = declare(Op(
    name="tile", impl=lambda x, multiples: np.tile(x, multiples), infer=_tile_infer,
    vjp=_tile_vjp,
    batch=lambda args, batched, size, multiples: apply(TILE, args[0],
                                                       multiples=(1,) + multiples),
    numpy=lambda args, node: f"np.tile({args[0]}, {node.attrs['multiples']})",
    latex="\\operatorname{{tile}}({0})"))


def tile(input, multiples, name=None):  # noqa: A002  (TensorFlow's name)
    """`input` repeated `multiples[i]` times along each axis i (TensorFlow's `tf.tile`)."""
    (x,) = to_tensors("tile", [input])
    if hasattr(multiples, "numpy"):
        multiples = multiples.numpy()
    multiples = tuple(int(m) for m in np.asarray(multiples).reshape(-1))
    _tile_infer(x, multiples)     # validates before the all-ones shortcut
    if all(m == 1 for m in multiples):
        return x
    return apply(TILE, x, multiples=multiples)


def op(name: str) -> Op:
    return REGISTRY[name]


__all__ = ["reshape", "transpose", "broadcast_to", "cast", "identity", "stop_gradient", "shape",
           "expand_dims", "squeeze", "concat", "stack", "split", "tile", "zeros",
           "ones", "zeros_like", "ones_like", "fill", "range", "eye"]
