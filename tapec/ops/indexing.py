"""Indexing: `x[...]` (basic and advanced, NumPy semantics), `gather`, and their adjoints.

`getitem` and `scatter` are each other's derivative. An index is stored as a tuple of
hashable items (it is part of the cache key):

    ("int", i)  ("slice", start, stop, step)  ("newaxis",)  ("ellipsis",)
    ("array", shape, values)      an integer array, values flattened in C order
    ("mask", shape, positions)    a boolean mask, as the flat positions of its True entries

Masks are stored by value because the output shape depends on them; NumPy indexes
with a mask exactly as with its `nonzero()` integer arrays, which is how the mask is
applied (and printed in generated code). Integer arrays may repeat an index, so the
adjoint of an advanced index accumulates with `np.add.at`; the adjoint of a basic
index stays a plain slice assignment.

`gather` takes its indices as a tensor *input* rather than an attribute: the compiled
gradient is then reused for any index values of the same shape.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..tensor import _used
from .registry import Op, apply, declare, to_tensors
from .shape import _dtype_name, _int_arg, broadcast_to, cast, reshape, transpose

# --- index specifications --------------------------------------------------------------

_ADVANCED = ("array", "mask")


def normalize_index(index) -> tuple:
    """A hashable description of an index: ints, slices, None, Ellipsis, integer arrays
    and boolean masks (lists, NumPy arrays or eager tensors)."""
    items = index if isinstance(index, tuple) else (index,)
    spec = []
    for item in items:
        if isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
            spec.append(("int", int(item)))
        elif isinstance(item, slice):
            spec.append(("slice",) + tuple(None if v is None else _as_int(v, "slice bound")
                                           for v in (item.start, item.stop, item.step)))
        elif item is None:
            spec.append(("newaxis",))
        elif item is Ellipsis:
            spec.append(("ellipsis",))
        elif isinstance(item, (bool, np.bool_)):
            raise TypeError("getitem: boolean scalars are not supported as indices")
        else:
            spec.append(_array_item(item))
    return tuple(spec)


def _array_item(item):
    """An integer-array or mask item from a list, NumPy array or eager tensor."""
    if hasattr(item, "_eager_value"):            # Tensor or Variable
        if getattr(item, "_value", 0) is None:
            raise TypeError("getitem: a symbolic tensor cannot be used as an index")
        # The index becomes structure: a trace guards on the value it read.
        tensor, array = item._python_read("getitem index")
        _used(tensor, array)
    elif isinstance(item, (list, np.ndarray)):
        array = np.asarray(item)
        if array.size == 0 and array.dtype.kind == "f":
            array = array.astype(np.intp)        # `x[[]]` is an empty integer index
    else:
        raise TypeError(f"getitem: index must be an int, a slice, None, Ellipsis, an integer "
                        f"array or a boolean mask; got {type(item).__name__} {item!r:.60}")
    if array.dtype.kind == "b":
        if array.ndim == 0:
            raise TypeError("getitem: 0-d boolean masks are not supported as indices")
        return ("mask", array.shape, tuple(np.flatnonzero(array).tolist()))
    if array.dtype.kind not in "iu":
        raise TypeError(f"getitem: index arrays must be integer or boolean, got dtype "
                        f"{array.dtype.name}")
    if array.ndim == 0:
        return ("int", int(array))
    return ("array", array.shape, tuple(array.ravel().tolist()))


def _as_int(value, what):
    if isinstance(value, (int, np.integer)):
        return int(value)
    if hasattr(value, "_dtype") and getattr(value, "_value", None) is not None \
            and value._dtype.kind in "iu" and value._shape == ():
        return value.__index__()         # a trace guards on the bound it read
    raise TypeError(f"getitem: {what} must be an int; got {type(value).__name__} "
                    f"{value!r:.60}")


def _index_arrays(item) -> tuple:
    """The integer arrays of an advanced item (a k-d mask gives k arrays, as nonzero())."""
    kind, shape, values = item
    flat = np.array(values, dtype=np.intp)
    if kind == "array":
        arrays = (flat.reshape(shape),)
    elif len(shape) == 1:
        arrays = (flat,)
    else:
        arrays = np.unravel_index(flat, shape)
    for a in arrays:
        a.flags.writeable = False                # shared through the cache below
    return tuple(arrays)


@functools.lru_cache(maxsize=1024)
def index_from_spec(spec, masks_as_bool=False) -> tuple:
    """The NumPy index a spec stands for (cached: the eager path rebuilds it per call)."""
    result = []
    for item in spec:
        kind = item[0]
        if kind == "slice":
            result.append(slice(*item[1:]))
        elif kind == "int":
            result.append(item[1])
        elif kind == "newaxis":
            result.append(None)
        elif kind == "ellipsis":
            result.append(Ellipsis)
        elif kind == "mask" and masks_as_bool:   # only to validate the mask's shape
            mask = np.zeros(item[1], dtype=bool)
            mask.flat[list(item[2])] = True
            result.append(mask)
        else:
            result.extend(_index_arrays(item))
    return tuple(result)


def _array_source(array) -> str:
    if array.size == 0 or array.ndim == 0:
        return f"np.zeros({array.shape}, dtype=np.intp)"
    return f"np.array({array.tolist()})"


def index_source(spec, as_tuple=False) -> str:
    """The index as Python source: subscript syntax, or a tuple expression for np.add.at."""
    parts = []
    for item in spec:
        kind = item[0]
        if kind == "newaxis":
            parts.append("None")
        elif kind == "ellipsis":
            parts.append("...")
        elif kind == "int":
            parts.append(str(item[1]))
        elif kind == "slice":
            if as_tuple:
                parts.append("slice({}, {}, {})".format(*item[1:]))
            else:
                start, stop, step = ("" if v is None else str(v) for v in item[1:])
                parts.append(f"{start}:{stop}" + (f":{step}" if step else ""))
        else:
            parts.extend(_array_source(a) for a in _index_arrays(item))
    if as_tuple:
        return "(" + "".join(p + ", " for p in parts) + ")"
    return ", ".join(parts) if parts else "()"


def is_advanced(spec) -> bool:
    return any(item[0] in _ADVANCED for item in spec)


def _advanced_dims(spec):
    """How many leading result axes NumPy gives the advanced indices when it moves them
    to the front (they are not adjacent in the index), else 0. Ints count as advanced
    once an array is present; None, Ellipsis and slices break adjacency."""
    if not is_advanced(spec):
        return 0
    positions = [i for i, item in enumerate(spec) if item[0] in _ADVANCED + ("int",)]
    if positions[-1] - positions[0] + 1 == len(positions):
        return 0
    shapes = [item[1] if item[0] == "array" else (len(item[2]),) if item[0] == "mask"
              else () for item in spec if item[0] in _ADVANCED + ("int",)]
    return len(np.broadcast_shapes(*shapes))


_FULL_SLICE = (("slice", None, None, None),)   # `:` over a leading batch axis


def _move_axis(x, source, destination):
    perm = list(range(len(x._shape)))
    perm.insert(destination, perm.pop(source))
    return transpose(x, perm)


def _source_text(spec) -> str:
    text = index_source(spec)
    return text if len(text) <= 200 else text[:200] + "..."


# --- getitem and scatter ---------------------------------------------------------------

def _getitem_infer(x, index):
    # A zero-strided probe of x's shape: NumPy itself validates the index and gives the
    # result shape (1-byte elements, since an advanced index copies).
    probe = np.lib.stride_tricks.as_strided(np.zeros(1, np.bool_), x._shape,
                                            (0,) * len(x._shape))
    try:
        return probe[index_from_spec(index, masks_as_bool=True)].shape, x._dtype
    except IndexError as e:
        raise IndexError(f"getitem: index {_source_text(index)} is invalid for a tensor of "
                         f"shape {x._shape}: {e}") from None


def _getitem_batch(args, batched, size, index):
    # Prepending `:` keeps the batch axis in front unless NumPy moves non-adjacent
    # advanced indices before it; then it sits after their broadcast dimensions.
    out = apply(GETITEM, args[0], index=_FULL_SLICE + index)
    lead = _advanced_dims(index)
    return _move_axis(out, lead, 0) if lead else out


# --- the array-API form: basic indices as they are, the others through flat positions ---
# The 2023.12 standard indexes with ints, slices, None and Ellipsis only. An index with
# integer arrays or masks is static (structure), so the flat positions it selects are
# computed once, here, and the code takes them; up to FLAT_LIMIT of them (they are written
# into the source), and a scatter through them up to ONE_HOT_LIMIT one-hot entries.
FLAT_LIMIT = 1 << 16
ONE_HOT_LIMIT = 1 << 24


def _is_basic(spec) -> bool:
    return all(item[0] in ("slice", "int", "newaxis", "ellipsis") for item in spec)


def _flat_positions(spec, shape):
    """The flat positions of `shape` that the index `spec` selects, in result order."""
    return np.arange(math.prod(shape)).reshape(shape)[index_from_spec(spec)].ravel()


def _positions_source(positions) -> str:
    return f"xp.asarray({positions.tolist()}, dtype=xp.int64, device=device)"


def _getitem_array_api(args, node):
    spec, shape = node.attrs["index"], node.inputs[0].shape
    if _is_basic(spec):          # the standard wants every axis indexed, or an Ellipsis
        if not any(item[0] == "ellipsis" for item in spec):
            spec = spec + (("ellipsis",),)
        return f"{args[0]}[{index_source(spec)}]"
    positions = _flat_positions(spec, shape)
    if positions.size > FLAT_LIMIT:
        return None
    return (f"xp.reshape(xp.take(xp.reshape({args[0]}, (-1,)), {_positions_source(positions)}, "
            f"axis=0), {node.shape})")


def _unit_box(spec, shape):
    """Per axis of `shape` the (start, stop) a basic index with unit steps selects, or
    None when an index is not such a box. Ints select (i, i + 1)."""
    items = list(spec)
    if any(item[0] == "ellipsis" for item in items):
        k = next(i for i, item in enumerate(items) if item[0] == "ellipsis")
        used = sum(item[0] in ("slice", "int") for item in items)
        items[k:k + 1] = [("slice", None, None, None)] * (len(shape) - used)
    box = []
    for item in items:
        if item[0] == "newaxis":
            continue
        n = shape[len(box)]
        if item[0] == "int":
            i = item[1] % n
            box.append((i, i + 1))
            continue
        start, stop, step = slice(*item[1:]).indices(n)
        if step != 1:
            return None
        box.append((start, max(start, stop)))
    box += [(0, n) for n in shape[len(box):]]
    return box


def _scatter_array_api(out, args, node):
    """Zeros of the source's shape holding the cotangent where the index selected,
    written without assignments: a box (unit steps) is padded with zeros, any other
    index adds through its flat positions (tapec_xp_scatter_add, repeats accumulate)."""
    spec, shape = node.attrs["index"], node.shape
    box = _unit_box(spec, shape) if _is_basic(spec) else None
    if box is not None:
        inner = tuple(stop - start for start, stop in box)
        pads = tuple((start, n - stop) for (start, stop), n in zip(box, shape))
        return [f"{out} = tapec_xp_pad(xp, xp.reshape({args[0]}, {inner}), {pads}, device)"]
    positions = _flat_positions(spec, shape)
    if positions.size > FLAT_LIMIT or positions.size * math.prod(shape) > ONE_HOT_LIMIT:
        return None
    return [f"{out} = xp.reshape(tapec_xp_scatter_add(xp, xp.reshape({args[0]}, (-1,)), "
            f"{_positions_source(positions)}, {math.prod(shape)}, 0, device), {shape})"]


GETITEM = declare(Op(
    name="getitem", impl=lambda x, index: x[index_from_spec(index)], infer=_getitem_infer,
    vjp=lambda g, out, x, index: (apply(SCATTER, g, index=index, shape=x._shape),),
    batch=_getitem_batch,
    numpy=lambda args, node: f"{args[0]}[{index_source(node.attrs['index'])}]",
    array_api=_getitem_array_api,
    latex="{0}[\\ldots]"))


def _accumulates(index) -> bool:
    """Integer arrays may repeat positions, which must add up; masks and basic indices
    never do, so they keep the cheaper assignment."""
    return any(item[0] == "array" for item in index)


def _scatter_impl(g, index, shape):
    result = np.zeros(shape, dtype=g.dtype)
    if _accumulates(index):
        np.add.at(result, index_from_spec(index), g)
    else:
        result[index_from_spec(index)] = g
    return result


def _scatter_lines(out, args, node):
    index = node.attrs["index"]
    lines = [f"{out} = np.zeros({node.shape}, dtype={_dtype_name(node.dtype)})"]
    if _accumulates(index):
        lines.append(f"np.add.at({out}, {index_source(index, as_tuple=True)}, {args[0]})")
    else:
        lines.append(f"{out}[{index_source(index)}] = {args[0]}")
    return lines


def _scatter_batch(args, batched, size, index, shape):
    g = args[0]
    lead = _advanced_dims(index)
    if lead:      # the batched getitem layout, see _getitem_batch
        g = _move_axis(g, 0, lead)
    return apply(SCATTER, g, index=_FULL_SLICE + index, shape=(size,) + shape)


SCATTER = declare(Op(
    name="scatter", impl=_scatter_impl,
    infer=lambda g, index, shape: (shape, g._dtype),
    vjp=lambda g, out, x, index, shape: (apply(GETITEM, g, index=index),),
    batch=_scatter_batch, numpy_lines=_scatter_lines, array_api_lines=_scatter_array_api,
    latex="\\operatorname{{scatter}}({0})"))


def getitem(x, index):
    """`x[index]` with NumPy semantics: basic indices, integer arrays and boolean masks.

    An integer tensor of rank >= 1 as the whole index is a `gather` on axis 0 (the same
    values in NumPy's semantics), so its values stay an input of compiled code instead of
    structure; any other tensor in an index is structure, guarded when traced."""
    (x,) = to_tensors("getitem", [x])
    if _is_integer_tensor(index) and len(index.shape) >= 1 and x._shape:
        return gather(x, index, axis=0)
    return apply(GETITEM, x, index=normalize_index(index))


def _is_integer_tensor(item) -> bool:
    from ..tensor import Tensor, Variable
    return isinstance(item, (Tensor, Variable)) and item._dtype.kind in "iu" \
        and getattr(item, "_value", 0) is not None


# --- gather and its adjoint, scatter_add -----------------------------------------------

def _check_indices(op_name, indices):
    if indices._dtype.kind not in "iu":
        raise TypeError(f"{op_name}: indices must be an integer tensor, got dtype "
                        f"{indices._dtype.name} {indices._shape}")


def _gather_shape(op_name, params_shape, indices, axis):
    if not 0 <= axis < len(params_shape):
        raise ValueError(f"{op_name}: axis {axis} is out of range for params of shape "
                         f"{params_shape}")
    return params_shape[:axis] + indices._shape + params_shape[axis + 1:]


def _gather_infer(params, indices, axis):
    _check_indices("gather", indices)
    return _gather_shape("gather", params._shape, indices, axis), params._dtype


def _gather_batch(args, batched, size, axis):
    params, indices = args
    if not batched[1]:
        return apply(GATHER, params, indices, axis=axis + 1)
    if not batched[0]:
        params = broadcast_to(params, (size,) + params._shape)
    return _gather_batch_dims(params, indices, axis + 1, 1)


def _gather_array_api(out, args, node):
    """`xp.take` of the indices counted from the front (the standard leaves negative
    ones to the library), flattened to 1-d as it requires; a floating result is nan
    where an index is out of range, where NumPy raises (the form cannot branch on
    values)."""
    params, indices = node.inputs
    axis, n = node.attrs["axis"], params.shape[node.attrs["axis"]]
    lines = [f"{out}_at = {args[1]} % {n}",
             f"{out} = xp.reshape(xp.take({args[0]}, xp.reshape({out}_at, (-1,)), "
             f"axis={axis}), {node.shape})"]
    if node.dtype.kind in "fc":
        inside = f"({args[1]} >= {-n}) & ({args[1]} < {n})"
        placed = (1,) * axis + indices.shape + (1,) * (len(params.shape) - axis - 1)
        lines.append(f"{out} = xp.where(xp.reshape({inside}, {placed}), {out}, "
                     f"xp.full_like({out}, xp.nan))")
    return lines


def _scatter_add_array_api(args, node):
    """Indices counted from the front, as gather's; an out-of-range one (-1 here) adds
    nothing (the gather it is the gradient of, the forward value, is nan there)."""
    n, i = node.shape[node.attrs["axis"]], args[1]
    counted = f"xp.where(({i} >= {-n}) & ({i} < {n}), {i} % {n}, xp.full_like({i}, -1))"
    return f"tapec_xp_scatter_add(xp, {args[0]}, {counted}, {n}, {node.attrs['axis']}, device)"


GATHER = declare(Op(
    name="gather", impl=lambda params, indices, axis: np.take(params, indices, axis=axis),
    infer=_gather_infer,
    vjp=lambda g, out, params, indices, axis: (
        apply(SCATTER_ADD, g, indices, shape=params._shape, axis=axis), None),
    batch=_gather_batch,
    numpy=lambda args, node: f"np.take({args[0]}, {args[1]}, axis={node.attrs['axis']})",
    array_api_lines=lambda out, args, node: _gather_array_api(out, args, node),
    latex="{0}[{1}]"))


def _scatter_add_infer(updates, indices, shape, axis):
    _check_indices("scatter_add", indices)
    expected = _gather_shape("scatter_add", shape, indices, axis)
    if updates._shape != expected:
        raise ValueError(f"scatter_add: updates of shape {updates._shape} do not match "
                         f"indices {indices._shape} into shape {shape} along axis {axis} "
                         f"(expected {expected})")
    return shape, updates._dtype


def _scatter_add_impl(updates, indices, shape, axis):
    result = np.zeros(shape, dtype=updates.dtype)
    np.add.at(result, (slice(None),) * axis + (indices,), updates)   # repeats accumulate
    return result


def _scatter_add_batch(args, batched, size, shape, axis):
    updates, indices = args
    if not batched[1]:
        return apply(SCATTER_ADD, updates, indices, shape=(size,) + shape, axis=axis + 1)
    if not batched[0]:
        updates = broadcast_to(updates, (size,) + updates._shape)
    return _scatter_add_batch_dims(updates, indices, (size,) + shape, axis + 1, 1)


SCATTER_ADD = declare(Op(
    name="scatter_add", impl=_scatter_add_impl, infer=_scatter_add_infer,
    vjp=lambda g, out, updates, indices, shape, axis: (
        apply(GATHER, g, indices, axis=axis), None),
    batch=_scatter_add_batch,
    numpy_lines=lambda out, args, node: [
        f"{out} = np.zeros({node.shape}, dtype={_dtype_name(node.dtype)})",
        f"np.add.at({out}, ({'slice(None), ' * node.attrs['axis']}{args[1]},), {args[0]})"],
    array_api=lambda args, node: _scatter_add_array_api(args, node),
    latex="\\operatorname{{scatter\\_add}}({0}, {1})"))


# gather with batch_dims = b is a gather along axis 0 of params with its batch axes and
# `axis` merged into one, after offsetting each example's indices by its row: a
# composite of transpose, reshape, integer arithmetic and the plain gather.

def _batch_layout(params_shape, indices_shape, axis, batch_dims):
    """Permutations between params (B, P, N, R) and (B, N, P, R), and between the
    merged gather's result (B, I, P, R) and the output (B, P, I, R)."""
    rank, b = len(params_shape), batch_dims
    n_p, n_i = axis - b, len(indices_shape) - b
    to_merged = (tuple(range(b)) + (axis,) + tuple(range(b, axis))
                 + tuple(range(axis + 1, rank)))
    rest = tuple(range(b + n_i + n_p, b + n_i + n_p + rank - axis - 1))
    to_output = (tuple(range(b)) + tuple(range(b + n_i, b + n_i + n_p))
                 + tuple(range(b, b + n_i)) + rest)
    return to_merged, to_output


def _flat_indices(indices, batch_shape, n):
    from . import elementwise as ew
    from .shape import range as tf_range
    rows = math.prod(batch_shape)
    # Negative indices count from the end (NumPy semantics) before rows are offset.
    wrapped = ew.add(indices, ew.multiply(cast(ew.less(indices, 0), indices._dtype), n))
    offsets = ew.multiply(tf_range(0, rows, dtype=indices._dtype), n)   # row r starts at r*n
    extra = len(indices._shape) - len(batch_shape)
    return ew.add(wrapped, reshape(offsets, batch_shape + (1,) * extra))


def _gather_batch_dims(params, indices, axis, batch_dims):
    shape, b = params._shape, batch_dims
    to_merged, to_output = _batch_layout(shape, indices._shape, axis, b)
    merged = transpose(params, to_merged)
    merged = reshape(merged, (math.prod(shape[:b]) * shape[axis],) + merged._shape[b + 1:])
    flat = _flat_indices(indices, shape[:b], shape[axis])
    return transpose(apply(GATHER, merged, flat, axis=0), to_output)


def _scatter_add_batch_dims(updates, indices, shape, axis, batch_dims):
    b = batch_dims
    to_merged, to_output = _batch_layout(shape, indices._shape, axis, b)
    merged_shape = tuple(shape[p] for p in to_merged)
    flat = _flat_indices(indices, shape[:b], shape[axis])
    summed = apply(SCATTER_ADD, transpose(updates, np.argsort(to_output)), flat,
                   shape=(math.prod(merged_shape[:b + 1]),) + merged_shape[b + 1:], axis=0)
    return transpose(reshape(summed, merged_shape), np.argsort(to_merged))


def _indices_tensor(indices):
    from ..tensor import Tensor, Variable, convert_to_tensor
    if isinstance(indices, Variable):
        return indices.read_value()
    if isinstance(indices, Tensor):
        return indices
    try:
        return convert_to_tensor(indices)     # Python ints become int32, as in TensorFlow
    except TypeError as e:
        raise TypeError(f"gather: indices must be integers (a list, array or integer "
                        f"tensor), got {type(indices).__name__} {indices!r:.60} ({e})") \
            from None


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """Slices of `params` along `axis` at `indices` (TensorFlow's `tf.gather`).

    The output shape is params.shape[:axis] + indices.shape[batch_dims:] +
    params.shape[axis + 1:]. Negative indices count from the end, as in NumPy. The
    gradient scatters back with accumulation, so repeated indices add up."""
    (params,) = to_tensors("gather", [params])
    indices = _indices_tensor(indices)
    _check_indices("gather", indices)
    rank, index_rank = len(params._shape), len(indices._shape)
    batch_dims = _int_arg("gather", "batch_dims", batch_dims)
    batch_dims += index_rank if batch_dims < 0 else 0
    axis = batch_dims if axis is None else _int_arg("gather", "axis", axis)
    axis += rank if axis < 0 else 0
    if not 0 <= batch_dims <= min(index_rank, axis) or not 0 <= axis < rank:
        raise ValueError(f"gather: axis {axis} and batch_dims {batch_dims} are invalid for "
                         f"params {params._shape} and indices {indices._shape} (needs "
                         "0 <= batch_dims <= axis < rank(params))")
    if params._shape[:batch_dims] != indices._shape[:batch_dims]:
        raise ValueError(f"gather: the first {batch_dims} dimensions of params "
                         f"{params._shape} and indices {indices._shape} must match")
    n = params._shape[axis]
    if indices._value is not None and indices._value.size and not (
            -n <= indices._value.min() and indices._value.max() < n):
        raise IndexError(f"gather: indices must be in [{-n}, {n}) for axis {axis} of params "
                         f"with shape {params._shape}; got values from "
                         f"{indices._value.min()} to {indices._value.max()}")
    if batch_dims == 0:
        return apply(GATHER, params, indices, axis=axis)
    return _gather_batch_dims(params, indices, axis, batch_dims)


__all__ = ["gather"]
