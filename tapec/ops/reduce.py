"""Reductions: sum, max, min, prod, logsumexp and argmax/argmin are primitives;
`reduce_mean` and `norm` are composites of primitives, so they need no derivative code.

Values follow NumPy (the sum of nothing is 0, the mean of nothing NaN, the logsumexp
of nothing -inf, the max/min/argmax of nothing an error); names, signatures and
gradients follow TensorFlow (max/min split the gradient equally among tied entries).
"""
from __future__ import annotations

import numpy as np

from ..dtypes import as_numpy_dtype, int64 as _int64
from . import elementwise as ew
from .literals import xp_dtype
from .registry import Op, apply, declare, to_tensors
from .shape import _sum_dtype, broadcast_to, cast, reshape

_KIND_NAMES = {"f": "floating", "c": "complex", "i": "integer", "u": "unsigned integer",
               "b": "bool"}


def normalize_axis(op_name, axis, rank) -> tuple:
    """Axis argument as a sorted tuple of non-negative ints (None means every axis).

    An empty list reduces nothing (as in TensorFlow and NumPy); a 0-d tensor has no
    axis to name, so any explicit axis is out of range for it."""
    if axis is None:
        return tuple(range(rank))
    if hasattr(axis, "numpy"):
        axis = axis.numpy()
    axes = np.atleast_1d(np.asarray(axis))
    if axes.size == 0:
        return ()
    if axes.dtype.kind not in "iu" or axes.ndim != 1:
        raise TypeError(f"{op_name}: axis must be an int or a list of ints, got {axis!r}")
    result = []
    for a in axes.tolist():
        if not -rank <= a < rank:
            raise ValueError(f"{op_name}: axis {a} is out of range for a tensor of rank {rank} "
                             f"(valid axes are {-rank}..{rank - 1})" if rank else
                             f"{op_name}: axis {a} is out of range for a tensor of rank 0 "
                             "(a scalar has no axis; use axis=None)")
        result.append(a % rank)
    if len(set(result)) != len(result):
        raise ValueError(f"{op_name}: axis {axis!r} repeats an axis")
    return tuple(sorted(result))


def kept_shape(shape, axes) -> tuple:
    """`shape` with the reduced `axes` set to 1 (the shape of a keepdims result)."""
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def _check_kind(name, x, kinds):
    if x._dtype.kind not in kinds:
        allowed = " or ".join(_KIND_NAMES[k] for k in kinds)
        raise TypeError(f"{name}: dtype {x._dtype.name} (shape {x._shape}) is not supported; "
                        f"expects {allowed} tensors")


def _reduce_infer_for(name, kinds, needs_elements=False):
    """Shape/dtype rule of a reduction; `needs_elements`: reducing nothing is an error
    (max and min have no identity: NumPy raises, and so do we, before NumPy)."""
    def infer(x, axis, keepdims):
        _check_kind(name, x, kinds)
        rank = len(x._shape)
        if any(not 0 <= a < rank for a in axis) or list(axis) != sorted(set(axis)):
            raise ValueError(f"{name}: axis {axis} is invalid for a tensor of shape {x._shape}")
        if needs_elements and any(x._shape[a] == 0 for a in axis):
            raise ValueError(f"{name}: cannot reduce over an empty dimension (shape "
                             f"{x._shape}, axis {axis}): the {name[7:]} of no elements is "
                             "undefined")
        if keepdims:
            return kept_shape(x._shape, axis), x._dtype
        return tuple(s for i, s in enumerate(x._shape) if i not in axis), x._dtype
    return infer


def _batch_reduce(op):
    """Batching rule of a reduction: the batch axis leads, so every axis shifts by one."""
    def batch(args, batched, size, axis, keepdims):
        return apply(op, args[0], axis=tuple(a + 1 for a in axis), keepdims=keepdims)
    return batch


def _numpy_reduce(function):
    def template(args, node):
        keep = ", keepdims=True" if node.attrs["keepdims"] else ""
        return f"{function}({args[0]}, axis={node.attrs['axis']}{keep})"
    return template


def _array_api_reduce(function):
    """The array-API spelling of a reduction; sums and products of integers name their
    dtype (see shape._sum_dtype)."""
    def template(args, node):
        keep = ", keepdims=True" if node.attrs["keepdims"] else ""
        dtype = _sum_dtype(node.dtype) if function in ("sum", "prod") else ""
        return f"xp.{function}({args[0]}, axis={node.attrs['axis']}{keep}{dtype})"
    return template


def _reduction(name, impl, vjp, function, latex, kinds, needs_elements=False):
    """Declare a reduction primitive `name(x, axis=tuple, keepdims=bool)`."""
    op = declare(Op(name=name, impl=impl, infer=_reduce_infer_for(name, kinds, needs_elements),
                    vjp=vjp, numpy=_numpy_reduce(function),
                    array_api=_array_api_reduce(function.removeprefix("np.")), latex=latex,
                    short=name.removeprefix("reduce_")))
    op.batch = _batch_reduce(op)
    return op


def _unreduce(g, x, axis):
    """A reduction's cotangent `g` reshaped to keepdims form, so it broadcasts against x."""
    return reshape(g, kept_shape(x._shape, axis))


# --- reduce_sum ------------------------------------------------------------------------

REDUCE_SUM = _reduction(
    "reduce_sum",
    impl=lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims),
    vjp=lambda g, out, x, axis, keepdims: (broadcast_to(_unreduce(g, x, axis), x._shape),),
    function="np.sum", latex=r"\sum {0}", kinds="fciu")


# --- reduce_max, reduce_min ------------------------------------------------------------

def _extremum_vjp(g, out, x, axis, keepdims):
    # TensorFlow's rule: tied extrema share the gradient equally, g * [x == out] / count.
    hits = cast(ew.equal(x, _unreduce(out, x, axis)), x._dtype)
    count = apply(REDUCE_SUM, hits, axis=axis, keepdims=True)
    return (ew.multiply(_unreduce(g, x, axis), ew.divide(hits, count)),)


REDUCE_MAX = _reduction(
    "reduce_max",
    impl=lambda x, axis, keepdims: np.max(x, axis=axis, keepdims=keepdims),
    vjp=_extremum_vjp, function="np.max", latex=r"\max {0}", kinds="fiu",
    needs_elements=True)

REDUCE_MIN = _reduction(
    "reduce_min",
    impl=lambda x, axis, keepdims: np.min(x, axis=axis, keepdims=keepdims),
    vjp=_extremum_vjp, function="np.min", latex=r"\min {0}", kinds="fiu",
    needs_elements=True)


# --- reduce_prod -----------------------------------------------------------------------

def _prod_others(x, axis):
    """Each entry's exclusive product: the product of the other entries of its slice over
    `axis`, from prefix and suffix products (no division, so exact at 0, inf and nan).
    Same shape as x."""
    rest = [i for i in range(x.ndim) if i not in axis]
    order = rest + list(axis)
    moved = np.transpose(x, order)
    length = int(np.prod([x.shape[a] for a in axis], dtype=np.int64))
    flat = np.reshape(moved, moved.shape[:len(rest)] + (length,))
    ones = np.ones_like(flat[..., :1])
    before = np.cumprod(np.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
    after = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    others = np.reshape(before * after, moved.shape)
    return np.transpose(others, np.argsort(order))


def _prod_others_lines(out, args, node, xp=False):
    """The statements of `_prod_others` for generated code: NumPy's, or with `xp` the
    array-API form's (whose cumulative product is an emitted helper)."""
    ns, transpose, concat = ("xp", "xp.permute_dims", "xp.concat") if xp else \
        ("np", "np.transpose", "np.concatenate")

    def cumprod(text):
        return f"tapec_xp_cumprod(xp, {text})" if xp else f"np.cumprod({text}, axis=-1)"
    x, axis = args[0], node.attrs["axis"]
    rest = [i for i in range(len(node.shape)) if i not in axis]
    order = rest + list(axis)
    moved_shape = tuple(node.shape[i] for i in order)
    length = int(np.prod([node.shape[a] for a in axis], dtype=np.int64))
    flat, ones = f"{out}_flat", f"{out}_ones"
    return [f"{flat} = {ns}.reshape({transpose}({x}, {tuple(order)}), "
            f"{moved_shape[:len(rest)] + (length,)})",
            f"{ones} = {ns}.ones_like({flat}[..., :1])",
            f"{out} = {cumprod(f'{concat}([{ones}, {flat}[..., :-1]], axis=-1)')}",
            f"{out} = {out} * {cumprod(f'{concat}([{ones}, {flat}[..., :0:-1]], axis=-1)')}"
            "[..., ::-1]",
            f"{out} = {transpose}({ns}.reshape({out}, {moved_shape}), "
            f"{tuple(int(i) for i in np.argsort(order))})"]


def _prod_others_vjp(g, out, x, axis):
    """The Hessian of prod times g: sum over i != k of g_i times the product of the
    entries other than i and k. With S = sum(g * others), that is (S - g_k others_k) / x_k
    where x_k != 0; at a zero, others_k * sum over nonzero i of g_i / x_i (exact when the
    slice has one zero; with two, the terms through the other zero are missed, as in
    TensorFlow's cumprod gradient)."""
    zero = ew.equal(x, 0)
    safe = ew.where(zero, 1, x)
    weighted = ew.multiply(g, out)
    total = apply(REDUCE_SUM, weighted, axis=axis, keepdims=True)
    quotients = apply(REDUCE_SUM, ew.where(zero, 0, ew.divide(g, safe)),
                      axis=axis, keepdims=True)
    return (ew.where(zero, ew.multiply(out, quotients),
                     ew.divide(ew.subtract(total, weighted), safe)),)


def _prod_others_infer(x, axis):
    _check_kind("reduce_prod", x, "fciu")
    return x._shape, x._dtype


PROD_OTHERS = declare(Op(
    name="prod_others", impl=_prod_others, infer=_prod_others_infer, vjp=_prod_others_vjp,
    numpy_lines=_prod_others_lines,
    array_api_lines=lambda out, args, node: _prod_others_lines(out, args, node, xp=True),
    latex=r"\prod_{{j \ne i}} {0}"))
PROD_OTHERS.batch = lambda args, batched, size, axis: apply(
    PROD_OTHERS, args[0], axis=tuple(a + 1 for a in axis))


def _reduce_prod_vjp(g, out, x, axis, keepdims):
    """d prod / d x_i = the product of the other entries (TensorFlow's rule, computed as
    TensorFlow does, from exclusive prefix and suffix products): finite at a zero, and at
    a nan or inf entry the product of the others rather than nan."""
    return (ew.multiply(_unreduce(g, x, axis), apply(PROD_OTHERS, x, axis=axis)),)


REDUCE_PROD = _reduction(
    "reduce_prod",
    impl=lambda x, axis, keepdims: np.prod(x, axis=axis, keepdims=keepdims),
    vjp=_reduce_prod_vjp, function="np.prod", latex=r"\prod {0}", kinds="fciu")


# --- reduce_logsumexp ------------------------------------------------------------------

def _logsumexp(x, axis, keepdims):
    """log(sum(exp(x))) shifted by the maximum, so exp never overflows.

    A non-finite maximum (all -inf, an empty slice, +inf) is replaced by 0: the shift
    would otherwise give inf - inf = NaN, while log(0) = -inf and log(inf) = inf are the
    right answers (the divide-by-zero warning of log(0) is expected, so silenced)."""
    shift = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    shift = np.where(np.isfinite(shift), shift, 0)
    with np.errstate(divide="ignore"):
        result = np.log(np.sum(np.exp(x - shift), axis=axis, keepdims=True)) + shift
    return result if keepdims else np.reshape(result, _reduced(x.shape, axis))


def _reduced(shape, axis):
    return tuple(s for i, s in enumerate(shape) if i not in axis)


def _logsumexp_lines(out, args, node):
    """The statements of `_logsumexp` for generated code (which may use only np)."""
    x, axis, shift = args[0], node.attrs["axis"], f"{out}_shift"
    lines = [f"{shift} = np.max({x}, axis={axis}, keepdims=True, initial=-np.inf)",
             f"{shift} = np.where(np.isfinite({shift}), {shift}, 0)",
             "with np.errstate(divide='ignore'):",
             f"    {out} = np.log(np.sum(np.exp({x} - {shift}), axis={axis}, keepdims=True)) "
             f"+ {shift}"]
    if not node.attrs["keepdims"]:
        lines.append(f"{out} = np.reshape({out}, {node.shape})")
    return lines


def _logsumexp_array_api(out, args, node):
    """`_logsumexp_lines` in the array-API form. The standard's `max` has no `initial=`:
    over an empty slice it raises, where the NumPy form gives -inf."""
    x, axis, shift = args[0], node.attrs["axis"], f"{out}_shift"
    lines = [f"{shift} = xp.max({x}, axis={axis}, keepdims=True)",
             f"{shift} = xp.where(xp.isfinite({shift}), {shift}, xp.zeros_like({shift}))",
             f"{out} = xp.log(xp.sum(xp.exp({x} - {shift}), axis={axis}, keepdims=True)) "
             f"+ {shift}"]
    if not node.attrs["keepdims"]:
        lines.append(f"{out} = xp.reshape({out}, {node.shape})")
    return lines


def _logsumexp_vjp(g, out, x, axis, keepdims):
    """g times the softmax of x over `axis`. exp(x - out) is that softmax up to the
    rounding of `out` (an ulp of 1000 is 1e-13), a factor common to the slice, which
    the normalization removes: the weights sum to 1 to rounding even for large x.

    A non-finite `out` shifts by 0 instead, as the forward pass (and TensorFlow, whose
    gradient is exp(x - shift) / sum): with a +inf entry the weights are exp(x) / inf,
    nan at the inf entry and 0 at every finite one, not inf - inf = nan everywhere."""
    finite = ew.less(ew.abs(out), np.inf)
    shift = ew.where(finite, out, 0)
    weights = ew.exp(ew.subtract(x, _unreduce(shift, x, axis)))
    total = apply(REDUCE_SUM, weights, axis=axis, keepdims=True)
    return (ew.multiply(_unreduce(g, x, axis), ew.divide(weights, total)),)


REDUCE_LOGSUMEXP = declare(Op(
    name="reduce_logsumexp", short="logsumexp",
    impl=_logsumexp,
    infer=_reduce_infer_for("reduce_logsumexp", "f"),
    vjp=_logsumexp_vjp,
    numpy_lines=_logsumexp_lines, array_api_lines=_logsumexp_array_api,
    latex=r"\log \sum \exp {0}"))
REDUCE_LOGSUMEXP.batch = _batch_reduce(REDUCE_LOGSUMEXP)


# --- argmax, argmin --------------------------------------------------------------------

def _arg_infer_for(name):
    def infer(x, axis, output_type):
        _check_kind(name, x, "fiub")
        rank = len(x._shape)
        if not 0 <= axis < rank:
            raise ValueError(f"{name}: axis {axis} is invalid for a tensor of shape {x._shape}")
        if x._shape[axis] == 0:
            raise ValueError(f"{name}: cannot reduce over an empty dimension (shape "
                             f"{x._shape}, axis {axis})")
        return _reduced(x._shape, (axis,)), np.dtype(output_type)
    return infer


def _arg_op(name, function):
    op = declare(Op(
        name=name,
        impl=lambda x, axis, output_type: function(x, axis=axis).astype(output_type),
        infer=_arg_infer_for(name),
        numpy=lambda args, node: (f"np.{name}({args[0]}, axis={node.attrs['axis']})"
                                  f".astype(np.{node.dtype.name})"),
        array_api=lambda args, node: (f"xp.astype(xp.{name}({args[0]}, axis="
                                      f"{node.attrs['axis']}), {xp_dtype(node.dtype)})"),
        latex=r"\operatorname{{" + name + r"}} {0}",
        differentiable=False))        # an index: piecewise constant, no gradient
    op.batch = lambda args, batched, size, axis, output_type: apply(
        op, args[0], axis=axis + 1, output_type=output_type)
    return op


ARGMAX = _arg_op("argmax", np.argmax)
ARGMIN = _arg_op("argmin", np.argmin)


# --- public functions ------------------------------------------------------------------

def _reduce(op, input_tensor, axis, keepdims):
    (x,) = to_tensors(op.name, [input_tensor])
    axis = normalize_axis(op.name, axis, len(x._shape))
    return apply(op, x, axis=axis, keepdims=bool(keepdims))


def reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
    """Sum over `axis` (all axes by default), as `tf.reduce_sum`."""
    (x,) = to_tensors("reduce_sum", [input_tensor])
    if x._dtype.kind == "b":
        raise TypeError("reduce_sum: bool tensors cannot be summed; cast them first")
    return _reduce(REDUCE_SUM, x, axis, keepdims)


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    """Mean over `axis` (all axes by default), as `tf.reduce_mean`: the sum divided by
    the number of reduced elements.

    Integer tensors give integers, truncated toward zero as TensorFlow's integer
    division does (mean([-1, -2]) is -1); the quotient is formed in floating point,
    exact while the integer sum stays below 2**53. The mean of no elements is NaN
    (with NumPy's RuntimeWarning) for floating tensors and a ValueError for integers.
    """
    (x,) = to_tensors("reduce_mean", [input_tensor])
    axes = normalize_axis("reduce_mean", axis, len(x._shape))
    _check_kind("reduce_mean", x, "fciu")
    total = apply(REDUCE_SUM, x, axis=axes, keepdims=bool(keepdims))
    count = int(np.prod([x._shape[a] for a in axes], dtype=np.int64))
    if x._dtype.kind in "fc":
        if count == 0:
            # 0 / 0 = NaN, as NumPy. The zero is an array, not a Python literal: the
            # derivative rule would substitute a literal 0 and divide by it symbolically.
            return ew.divide(total, np.zeros((), x._dtype))
        return ew.divide(total, count)
    if count == 0 and 0 not in total._shape:
        raise ValueError(f"reduce_mean: the mean of an empty integer tensor (shape "
                         f"{x._shape}, axis {axes}) is undefined (integers have no NaN)")
    # divide gives floats for integers; the cast truncates toward zero, as TF does.
    return cast(ew.divide(total, max(count, 1)), x._dtype)


def reduce_max(input_tensor, axis=None, keepdims=False, name=None):
    """Maximum over `axis` (all axes by default), as `tf.reduce_max`.

    The gradient is shared equally among tied maxima, as in TensorFlow. Reducing an
    empty dimension raises ValueError (NumPy's behaviour; TensorFlow returns -inf)."""
    return _reduce(REDUCE_MAX, input_tensor, axis, keepdims)


def reduce_min(input_tensor, axis=None, keepdims=False, name=None):
    """Minimum over `axis` (all axes by default), as `tf.reduce_min`.

    The gradient is shared equally among tied minima, as in TensorFlow. Reducing an
    empty dimension raises ValueError (NumPy's behaviour; TensorFlow returns +inf)."""
    return _reduce(REDUCE_MIN, input_tensor, axis, keepdims)


def reduce_prod(input_tensor, axis=None, keepdims=False, name=None):
    """Product over `axis` (all axes by default), as `tf.reduce_prod`.

    The gradient is the product of the other entries, exact when entries are zero."""
    return _reduce(REDUCE_PROD, input_tensor, axis, keepdims)


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    """log(sum(exp(x))) over `axis`, computed stably (shifted by the maximum), as
    `tf.reduce_logsumexp`. Its gradient is the softmax of x over `axis`. Floating
    tensors only; the logsumexp of no elements is -inf."""
    return _reduce(REDUCE_LOGSUMEXP, input_tensor, axis, keepdims)


def _arg_reduce(op, input, axis, output_type):  # noqa: A002
    (x,) = to_tensors(op.name, [input])
    out_dtype = as_numpy_dtype(output_type)
    if out_dtype not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise TypeError(f"{op.name}: output_type must be int32 or int64, got {out_dtype.name}")
    if not x._shape:
        raise ValueError(f"{op.name}: expects a tensor of rank >= 1, got a scalar")
    if axis is None:
        axis = 0       # TensorFlow reduces across axis 0 when no axis is given
    if hasattr(axis, "numpy"):
        axis = axis.numpy()
    if isinstance(axis, (bool, np.bool_)) or np.ndim(axis) != 0 or \
            np.asarray(axis).dtype.kind not in "iu":
        raise TypeError(f"{op.name}: axis must be an int, got {axis!r}")
    (axis,) = normalize_axis(op.name, int(axis), len(x._shape))
    return apply(op, x, axis=axis, output_type=out_dtype.str)


def argmax(input, axis=None, output_type=_int64, name=None):  # noqa: A002
    """Index of the largest value along `axis` (axis 0 when None, as TensorFlow), as
    `tf.math.argmax`; the first index among ties. int64 by default; no gradient."""
    return _arg_reduce(ARGMAX, input, axis, output_type)


def argmin(input, axis=None, output_type=_int64, name=None):  # noqa: A002
    """Index of the smallest value along `axis` (axis 0 when None, as TensorFlow), as
    `tf.math.argmin`; the first index among ties. int64 by default; no gradient."""
    return _arg_reduce(ARGMIN, input, axis, output_type)


# --- norm ------------------------------------------------------------------------------

_VECTOR_ORDS = ("euclidean", 1, 2, np.inf)
_MATRIX_ORDS = ("euclidean", "fro", 1, np.inf)


def _is_p(ord):  # noqa: A002
    return isinstance(ord, (int, float, np.integer, np.floating)) and not isinstance(ord, bool)


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):  # noqa: A002
    """Vector or matrix norm, as `tf.norm`.

    `axis=None` treats the whole tensor as one vector; an int gives vector norms along
    that axis; a pair of axes gives matrix norms over those two axes (the rows are
    `axis[0]`, the columns `axis[1]`). Vector `ord`: 'euclidean' (= 2), 1, np.inf or any
    positive p; 'fro' is accepted with axis=None (the Euclidean norm of all entries).
    Matrix `ord`: 'euclidean'/'fro' (Frobenius), 1 (largest column sum of |x|), np.inf
    (largest row sum). The matrix 2-norm (spectral norm) needs an SVD and is not
    supported. Floating tensors only.
    """
    (x,) = to_tensors("norm", [tensor])
    if x._dtype.kind != "f":
        raise TypeError(f"norm: expects a floating tensor, got dtype {x._dtype.name} "
                        f"(shape {x._shape})")
    rank = len(x._shape)
    pair = isinstance(axis, (tuple, list)) and len(axis) == 2
    if pair:
        axes = tuple(normalize_axis("norm", a, rank)[0] for a in axis)
        if axes[0] == axes[1]:
            raise ValueError(f"norm: a matrix norm needs two distinct axes, got {axis!r}")
        if ord not in _MATRIX_ORDS:
            raise ValueError(f"norm: ord={ord!r} is not supported for a matrix norm (axis "
                             f"{axis!r}); supported: 'euclidean', 'fro', 1, np.inf"
                             + (" (the spectral norm ord=2 is not implemented)"
                                if ord == 2 else ""))
    else:
        if isinstance(axis, (tuple, list)):
            if len(axis) != 1:
                raise ValueError(f"norm: axis must be None, an int or a pair of ints, "
                                 f"got {axis!r}")
            axis = axis[0]
        if axis is not None and not isinstance(axis, (int, np.integer)):
            raise TypeError(f"norm: axis must be None, an int or a pair of ints, got {axis!r}")
        axes = normalize_axis("norm", axis, rank)
        if ord == "fro" and axis is not None:
            raise ValueError("norm: ord='fro' is a matrix norm; pass a pair of axes, or use "
                             "'euclidean' for a vector norm")
        if ord not in _VECTOR_ORDS + ("fro",) and not (_is_p(ord) and ord > 0):
            raise ValueError(f"norm: ord={ord!r} is not supported for a vector norm; "
                             "supported: 'euclidean', 1, 2, np.inf or a positive number")
    keep = bool(keepdims)
    out_shape = kept_shape(x._shape, axes) if keep else _reduced(x._shape, tuple(sorted(axes)))
    if ord in ("euclidean", "fro", 2) or (_is_p(ord) and ord == 2):
        result = ew.sqrt(reduce_sum(ew.multiply(x, x), axis=axes, keepdims=True))
    elif pair and ord in (1, np.inf):
        # ord 1: sum down the rows, largest column; inf: sum along rows, largest row.
        rows, columns = axes
        sum_axis, max_axis = (rows, columns) if ord == 1 else (columns, rows)
        result = reduce_max(reduce_sum(ew.abs(x), axis=sum_axis, keepdims=True),
                            axis=max_axis, keepdims=True)
    elif ord == np.inf:
        result = reduce_max(ew.abs(x), axis=axes, keepdims=True)
    elif ord == 1:
        result = reduce_sum(ew.abs(x), axis=axes, keepdims=True)
    else:
        p = float(ord)
        result = ew.pow(reduce_sum(ew.pow(ew.abs(x), p), axis=axes, keepdims=True), 1.0 / p)
    return reshape(result, out_shape)


__all__ = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
           "reduce_logsumexp", "argmax", "argmin", "norm"]
