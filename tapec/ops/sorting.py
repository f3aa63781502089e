"""Sorting: `argsort` and `argpartition` (index primitives, no gradient) and the
composites built on them, `sort`, `partition` and `take_along_axis`.

A sort is a permutation of its input chosen by the values: `sort(x)` is
`take_along_axis(x, argsort(x))`, so its gradient flows back through that permutation
(a gather, whose VJP scatters), as in JAX. Sorting is stable, so tied elements keep
their order and each receives the cotangent of the position it moved to (JAX's
convention); descending sorts are stable too (ties keep their original order, as
`tf.sort` does).
"""
from __future__ import annotations

import numpy as np

from .literals import xp_dtype
from .registry import Op, apply, declare, to_tensors
from .reduce import normalize_axis
from .shape import _as_np_dtype, transpose


def _index_infer(name):
    def infer(x, axis, output_type, **attrs):
        if x._dtype.kind not in "fiub":
            raise TypeError(f"{name}: expects a real or integer tensor, got dtype "
                            f"{x._dtype.name} (shape {x._shape})")
        if not 0 <= axis < len(x._shape):
            raise ValueError(f"{name}: axis {axis} is invalid for a tensor of shape {x._shape}")
        return x._shape, np.dtype(output_type)
    return infer


def _argsort_impl(x, axis, output_type, descending):
    # -x would overflow the smallest integer and reverse NaN's place; a stable sort of
    # the reversed axis, read backwards, is stable in descending order instead.
    if not descending:
        return np.argsort(x, axis=axis, kind="stable").astype(output_type)
    n = x.shape[axis]
    reversed_order = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return (n - 1 - np.flip(reversed_order, axis)).astype(output_type)


def _argsort_source(args, node):
    axis, dtype = node.attrs["axis"], node.dtype.name
    if not node.attrs["descending"]:
        return f"np.argsort({args[0]}, axis={axis}, kind='stable').astype(np.{dtype})"
    n = node.shape[axis]
    return (f"({n - 1} - np.flip(np.argsort(np.flip({args[0]}, {axis}), axis={axis}, "
            f"kind='stable'), {axis})).astype(np.{dtype})")


def _argsort_array_api(args, node):
    axis, dtype = node.attrs["axis"], xp_dtype(node.dtype)
    if not node.attrs["descending"]:
        return f"xp.astype(xp.argsort({args[0]}, axis={axis}, stable=True), {dtype})"
    n = node.shape[axis]
    return (f"xp.astype({n - 1} - xp.flip(xp.argsort(xp.flip({args[0]}, axis={axis}), "
            f"axis={axis}, stable=True), axis={axis}), {dtype})")


# Indices are piecewise constant in the values: no gradient.
ARGSORT = declare(Op(
    name="argsort",
    impl=_argsort_impl,
    infer=_index_infer("argsort"),
    numpy=_argsort_source, array_api=_argsort_array_api,
    latex=r"\operatorname{{argsort}} {0}",
    differentiable=False))
ARGSORT.batch = lambda args, batched, size, axis, **attrs: apply(
    ARGSORT, args[0], axis=axis + 1, **attrs)

ARGPARTITION = declare(Op(
    name="argpartition",
    impl=lambda x, kth, axis, output_type: np.argpartition(
        x, kth, axis=axis).astype(output_type),
    infer=_index_infer("argpartition"),
    numpy=lambda args, node: (f"np.argpartition({args[0]}, {list(node.attrs['kth'])}, "
                              f"axis={node.attrs['axis']}).astype(np.{node.dtype.name})"),
    latex=r"\operatorname{{argpartition}} {0}",
    differentiable=False))
ARGPARTITION.batch = lambda args, batched, size, axis, **attrs: apply(
    ARGPARTITION, args[0], axis=axis + 1, **attrs)


def _to_last(x, axis):
    """x with `axis` moved last, and the permutation that moves it back."""
    rank = len(x._shape)
    perm = [i for i in range(rank) if i != axis] + [axis]
    back = [perm.index(i) for i in range(rank)]
    return transpose(x, perm), back


def take_along_axis(x, indices, axis):
    """x[..., indices[..., j, ...], ...] along `axis` (NumPy's `take_along_axis`), for a
    tensor x and an integer tensor of its shape: a gather over the other axes as batch
    axes."""
    from .indexing import gather
    rank = len(x._shape)
    if rank == 1:
        return gather(x, indices)
    x_last, back = _to_last(x, axis)
    i_last, _ = _to_last(indices, axis)
    return transpose(gather(x_last, i_last, axis=rank - 1, batch_dims=rank - 1), back)


def _axis(name, x, axis):
    return normalize_axis(name, axis, len(x._shape))[0]


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """Indices that sort `values` along `axis` (`tf.argsort`), int32; `direction` is
    'ASCENDING' or 'DESCENDING'. The sort is always stable."""
    return _argsort(values, axis, direction, np.int32, "argsort")


def _argsort(values, axis, direction, output_type, name):
    (x,) = to_tensors(name, [values])
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"{name}: direction must be 'ASCENDING' or 'DESCENDING', got "
                         f"{direction!r}")
    if not x._shape:
        raise ValueError(f"{name}: expects a tensor of rank >= 1, got a scalar")
    return apply(ARGSORT, x, axis=_axis(name, x, axis), output_type=_as_np_dtype(
        output_type).str, descending=direction == "DESCENDING")


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """`values` sorted along `axis` (`tf.sort`); `direction` 'ASCENDING' or 'DESCENDING'.
    The gradient flows back through the sorting permutation (stable for ties)."""
    (x,) = to_tensors("sort", [values])
    order = _argsort(x, axis, direction, np.int64, "sort")
    return take_along_axis(x, order, _axis("sort", x, axis))


def partition(values, kth, axis=-1):
    """NumPy's `partition`: along `axis`, the elements at positions `kth` (an int or a
    sequence) are where a sort would put them, smaller ones before and larger ones after;
    the arrangement is NumPy's. The gradient flows back through the permutation."""
    (x,) = to_tensors("partition", [values])
    if not x._shape:
        raise ValueError("partition: expects a tensor of rank >= 1, got a scalar")
    axis = _axis("partition", x, axis)
    n = x._shape[axis]
    kth = tuple(int(k) for k in np.atleast_1d(kth))
    for k in kth:
        if not -n <= k < n:
            raise ValueError(f"partition: kth={k} is out of bounds for an axis of size {n} "
                             f"(shape {x._shape})")
    order = apply(ARGPARTITION, x, kth=tuple(k % n for k in kth), axis=axis,
                  output_type=np.dtype(np.int64).str)
    return take_along_axis(x, order, axis)


__all__ = ["sort", "argsort"]
