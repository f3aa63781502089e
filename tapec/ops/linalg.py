"""Linear algebra: products (matmul, einsum, tensordot, matvec), diagonals and traces,
and matrix functions (inv, det, slogdet, solve).

Primitives, each declared once below: `matmul` (rank >= 2, batch dimensions
broadcast), `einsum` (an explicit equation over letters, no ellipsis: the public
`einsum` rewrites `...` and implicit outputs into that form), `matrix_diag_part` and
`matrix_diag` (each other's VJP, like getitem/scatter), `matrix_inverse`,
`matrix_determinant`, `log_abs_determinant`, `determinant_sign` (no gradient) and
`matrix_solve`. Everything else is a composite of primitives: 1-D `matmul`
(reshape to a matrix and back), `tensordot` (one einsum), `matvec`, `trace`.

Matrix functions act on the last two axes; leading axes are batch axes, so their
batching rules only apply the op again (a leading batch axis is one more batch axis).
They accept float32 and float64 (complex gradients would need a conjugate op).
"""
from __future__ import annotations

import string

import numpy as np

from ..namespaces.errors import invalid_argument
from .literals import xp_dtype
from .registry import Op, apply, declare, to_tensors
from .shape import broadcast_to, matrix_transpose, reshape, transpose

_LETTERS = string.ascii_letters


def _pad_batched_operands(args, batched):
    """Line a leading batch axis up in front of the broadcast batch dimensions of every
    flagged operand (the operands are matrices, or batches of them, that broadcast)."""
    from .elementwise import pad_batched
    rank = max(len(a._shape) - flag for a, flag in zip(args, batched))
    return [pad_batched(x, rank) if flag else x for x, flag in zip(args, batched)]


# --- matmul ----------------------------------------------------------------------------

def _same_dtype(op_name, a, b):
    if a._dtype != b._dtype:
        raise TypeError(f"{op_name}: operands have different dtypes, {a._dtype.name} "
                        f"{a._shape} and {b._dtype.name} {b._shape}")


def _batch_shape(op_name, a, b) -> tuple:
    """The broadcast of two matrix stacks' leading (batch) dimensions."""
    try:
        return np.broadcast_shapes(a._shape[:-2], b._shape[:-2])
    except ValueError:
        raise ValueError(f"{op_name}: batch dimensions of {a._shape} and {b._shape} cannot "
                         "be broadcast together") from None


def _matmul_infer(a, b):
    _same_dtype("matmul", a, b)
    if len(a._shape) < 2 or len(b._shape) < 2:
        raise ValueError(f"matmul: operands must have rank >= 2, got shapes {a._shape} and "
                         f"{b._shape}")
    if a._shape[-1] != b._shape[-2]:
        raise invalid_argument(f"matmul: inner dimensions differ, {a._shape} @ {b._shape} "
                               f"({a._shape[-1]} != {b._shape[-2]})")
    return _batch_shape("matmul", a, b) + (a._shape[-2], b._shape[-1]), a._dtype


MATMUL = declare(Op(
    name="matmul",
    impl=np.matmul,
    infer=_matmul_infer,
    vjp=lambda g, out, a, b: (matmul(g, matrix_transpose(b)), matmul(matrix_transpose(a), g)),
    batch=lambda args, batched, size: apply(MATMUL, *_pad_batched_operands(args, batched)),
    numpy=lambda args, node: f"{args[0]} @ {args[1]}",
    latex="{0} {1}"))


def _refuse_complex_adjoint(op_name, x, what):
    """The adjoint of a real matrix is its transpose; a complex one would need conj."""
    if x._dtype.kind == "c":
        raise NotImplementedError(f"{op_name}: {what} of a complex tensor needs a complex "
                                  "conjugate, which tapec does not have yet")


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           name=None):
    """Matrix product of the last two axes, broadcasting leading (batch) axes.

    Unlike `tf.matmul`, a 1-D operand is accepted with NumPy's meaning (this is what
    `x @ w` means in NumPy code): a vector on the left is a row, a vector on the right
    a column, and the added axis is removed from the result, so `(n,) @ (n, m)` is
    `(m,)`, `(k, n) @ (n,)` is `(k,)` and `(n,) @ (n,)` is a scalar. Transposing a
    vector is refused. `adjoint_a`/`adjoint_b` equal the transposes for real tensors.
    """
    a, b = to_tensors("matmul", [a, b])
    if adjoint_a:
        _refuse_complex_adjoint("matmul", a, "adjoint_a")
        transpose_a = True
    if adjoint_b:
        _refuse_complex_adjoint("matmul", b, "adjoint_b")
        transpose_b = True
    if not a._shape or not b._shape:
        raise ValueError(f"matmul: operands must have rank >= 1, got shapes {a._shape} and "
                         f"{b._shape}; use multiply for scalars")
    for x, flag, which in ((a, transpose_a, "a"), (b, transpose_b, "b")):
        if flag and len(x._shape) == 1:
            raise ValueError(f"matmul: transpose_{which} needs a matrix, got a vector of "
                             f"shape {x._shape}")
    if transpose_a:
        a = matrix_transpose(a)
    if transpose_b:
        b = matrix_transpose(b)
    if len(a._shape) >= 2 and len(b._shape) >= 2:
        return apply(MATMUL, a, b)
    # A vector operand: make it a one-row (left) or one-column (right) matrix, multiply,
    # and drop that axis again, so gradients and batching come from MATMUL and reshape.
    if a._dtype != b._dtype:
        raise TypeError(f"matmul: operands have different dtypes, {a._dtype.name} {a._shape} "
                        f"and {b._dtype.name} {b._shape}")
    inner_b = b._shape[0] if len(b._shape) == 1 else b._shape[-2]
    if a._shape[-1] != inner_b:
        raise invalid_argument(f"matmul: inner dimensions differ, {a._shape} @ {b._shape} "
                               f"({a._shape[-1]} != {inner_b})")
    a_vector, b_vector = len(a._shape) == 1, len(b._shape) == 1
    product = apply(MATMUL, reshape(a, (1,) + a._shape) if a_vector else a,
                    reshape(b, b._shape + (1,)) if b_vector else b)
    rank = len(product._shape)
    dropped = {rank - 2} if a_vector else set()
    dropped |= {rank - 1} if b_vector else set()
    return reshape(product, tuple(s for i, s in enumerate(product._shape) if i not in dropped))


def matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False, b_is_sparse=False,
           name=None):
    """Matrix-vector product `a @ b[..., None]` without the trailing axis
    (`tf.linalg.matvec`): `a` is [..., M, N], `b` is [..., N], the result [..., M]."""
    a, b = to_tensors("matvec", [a, b])
    if len(a._shape) < 2 or not b._shape:
        raise ValueError(f"matvec: expects a matrix [..., M, N] and a vector [..., N], got "
                         f"shapes {a._shape} and {b._shape}")
    if adjoint_a:
        _refuse_complex_adjoint("matvec", a, "adjoint_a")
        transpose_a = True
    column = matmul(a, reshape(b, b._shape + (1,)), transpose_a=transpose_a)
    return reshape(column, column._shape[:-1])


# --- einsum ----------------------------------------------------------------------------

def _einsum_terms(equation):
    """'ab,bc->ac' as (['ab', 'bc'], 'ac')."""
    inputs, _, output = equation.partition("->")
    return inputs.split(","), output


def _einsum_infer(*tensors, equation):
    terms, output = _einsum_terms(equation)
    if len(terms) != len(tensors):
        raise ValueError(f"einsum: equation {equation!r} has {len(terms)} operand(s) but "
                         f"{len(tensors)} tensor(s) were given")
    for t in tensors[1:]:
        if t._dtype != tensors[0]._dtype:
            raise TypeError(f"einsum: operands have different dtypes, "
                            f"{tensors[0]._dtype.name} {tensors[0]._shape} and "
                            f"{t._dtype.name} {t._shape}")
    sizes = {}
    for i, (term, t) in enumerate(zip(terms, tensors)):
        if len(term) != len(t._shape):
            raise ValueError(f"einsum: operand {i} has shape {t._shape} (rank "
                             f"{len(t._shape)}) but its subscripts {term!r} name {len(term)} "
                             "axes")
        for letter, size in zip(term, t._shape):
            if term.count(letter) > 1:
                raise ValueError(f"einsum: subscripts {term!r} of operand {i} repeat index "
                                 f"{letter!r}; diagonals are not supported (use "
                                 "tapec.linalg.diag_part)")
            if sizes.setdefault(letter, size) != size:
                raise ValueError(f"einsum: index {letter!r} has size {sizes[letter]} in one "
                                 f"operand but {size} in operand {i} (shape {t._shape}) "
                                 f"of {equation!r}")
    for letter in output:
        if letter not in sizes or output.count(letter) > 1:
            raise ValueError(f"einsum: output subscript {letter!r} of {equation!r} is "
                             "repeated or appears in no operand")
    return tuple(sizes[c] for c in output), tensors[0]._dtype


def _einsum_optimize(equation, shapes) -> bool:
    """Let NumPy pick a contraction order and use BLAS (tensordot) when the iteration
    space is large: measured ~3x (n=64) to ~9x (n=200) faster for a matrix product,
    while below ~2**15 the path search costs more than it saves."""
    terms, _ = _einsum_terms(equation)
    if len(terms) < 2:
        return False
    sizes = {c: s for term, shape in zip(terms, shapes) for c, s in zip(term, shape)}
    return int(np.prod(list(sizes.values()), dtype=np.int64)) >= 2 ** 15


def _einsum_source(args, node):
    equation = node.attrs["equation"]
    optimize = _einsum_optimize(equation, [i.shape for i in node.inputs])
    return (f"np.einsum({equation!r}, {', '.join(args)}"
            + (", optimize=True)" if optimize else ")"))


def _einsum_vjp(g, out, *inputs, equation):
    # out[o] = sum over the other indices of prod_j x_j[s_j], so the cotangent of x_k is
    # g[o] times the product of the other operands, summed over every index x_k lacks:
    # the same einsum with the output subscripts and s_k swapped. An index only x_k has
    # was summed away in the forward pass: the cotangent is constant along it and is
    # broadcast back.
    terms, output = _einsum_terms(equation)
    cotangents = []
    for k, (x, term) in enumerate(zip(inputs, terms)):
        others = [j for j in range(len(terms)) if j != k]
        present = set(output).union(*(terms[j] for j in others))
        kept = "".join(c for c in term if c in present)
        contraction = ",".join([output] + [terms[j] for j in others]) + "->" + kept
        cotangent = _contract(contraction, [g] + [inputs[j] for j in others])
        if kept != term:
            cotangent = broadcast_to(reshape(cotangent, tuple(
                size if c in present else 1 for c, size in zip(term, x._shape))), x._shape)
        cotangents.append(cotangent)
    return tuple(cotangents)


def _contract(equation, tensors):
    """einsum, with the one-operand permutations written as what they are."""
    terms, output = _einsum_terms(equation)
    if len(terms) == 1 and sorted(terms[0]) == sorted(output):
        return transpose(tensors[0], [terms[0].index(c) for c in output])
    return apply(EINSUM, *tensors, equation=equation)


def _batched_einsum(args, batched, size, equation):
    # A fresh index for the batch axis, on the batched operands and on the output.
    letter = _fresh_letters(equation, 1, "einsum")[0]
    terms, output = _einsum_terms(equation)
    terms = [letter + t if flag else t for t, flag in zip(terms, batched)]
    return apply(EINSUM, *args, equation=",".join(terms) + "->" + letter + output)


def _fresh_letters(equation, count, op_name):
    fresh = [c for c in _LETTERS if c not in equation]
    if len(fresh) < count:
        raise ValueError(f"{op_name}: {equation!r} leaves too few unused index letters "
                         f"({len(fresh)}, {count} needed)")
    return fresh[:count]


EINSUM = declare(Op(
    name="einsum",
    impl=lambda *arrays, equation: np.einsum(
        equation, *arrays, optimize=_einsum_optimize(equation, [a.shape for a in arrays])),
    infer=_einsum_infer,
    vjp=_einsum_vjp,
    batch=_batched_einsum,
    numpy=_einsum_source,
    array_api=lambda args, node: (f"tapec_xp_einsum(xp, device, {node.attrs['equation']!r}, "
                                  f"{', '.join(args)})"),
    latex=r"\operatorname{{einsum}}\left({0}, \ldots\right)"))


def _parse_einsum(equation, shapes):
    """The explicit, letters-only form of `equation` and the shapes the operands must be
    broadcast to (None where an operand already has its shape).

    `...` becomes fresh letters (right-aligned, broadcast across operands as NumPy does);
    an implicit output is the ellipsis followed by the indices that appear once, sorted.
    """
    if not isinstance(equation, str):
        raise TypeError(f"einsum: equation must be a string, got {type(equation).__name__}")
    equation = equation.replace(" ", "")
    if equation.count("->") > 1:
        raise ValueError(f"einsum: equation {equation!r} has more than one '->'")
    terms, output = _einsum_terms(equation)
    explicit = "->" in equation
    if len(terms) != len(shapes):
        raise ValueError(f"einsum: equation {equation!r} has {len(terms)} operand(s) but "
                         f"{len(shapes)} tensor(s) were given")
    for term in terms + [output]:
        letters = term.replace("...", "", 1)
        if letters and not (letters.isascii() and letters.isalpha()):
            raise ValueError(f"einsum: subscripts {term!r} in {equation!r} must be ASCII "
                             "letters with at most one '...'")
    ellipsis_ranks = []
    for i, (term, shape) in enumerate(zip(terms, shapes)):
        named = len(term.replace("...", ""))
        if "..." in term and len(shape) >= named:
            ellipsis_ranks.append(len(shape) - named)
        elif "..." not in term and len(shape) == named:
            ellipsis_ranks.append(None)
        else:
            raise ValueError(f"einsum: operand {i} has shape {shape} (rank {len(shape)}) but "
                             f"its subscripts {term!r} name {named} axes")
    ranks = [e for e in ellipsis_ranks if e is not None]
    width = max(ranks, default=0)
    fresh = "".join(_fresh_letters(equation, width, "einsum"))
    # `...` may stand anywhere in a term: its axes start after the letters before it
    starts = [term.index("...") if "..." in term else 0 for term in terms]
    try:
        broadcast = np.broadcast_shapes(*(shape[p:p + e] for shape, e, p in
                                          zip(shapes, ellipsis_ranks, starts) if e is not None))
    except ValueError:
        raise ValueError(f"einsum: the '...' dimensions of shapes {tuple(shapes)} cannot be "
                         f"broadcast together in {equation!r}") from None
    targets = []
    for i, (shape, e, p) in enumerate(zip(shapes, ellipsis_ranks, starts)):
        if e is not None:
            terms[i] = terms[i].replace("...", fresh[width - e:])
            full = shape[:p] + broadcast[len(broadcast) - e:] + shape[p + e:]
            targets.append(full if full != shape else None)
        else:
            targets.append(None)
    if not explicit:
        once = sorted(c for c in set("".join(terms)) if c not in fresh and
                      "".join(terms).count(c) == 1)
        output = fresh + "".join(once)
    elif "..." in output:
        output = output.replace("...", fresh)
    elif width:
        raise ValueError(f"einsum: the output of {equation!r} must keep the '...' "
                         "dimensions (write '...' after '->')")
    return ",".join(terms) + "->" + output, targets


def einsum(equation, *inputs, **kwargs):
    """Einstein summation (`tf.einsum`): `einsum('ij,jk->ik', a, b)` is `a @ b`.

    Explicit (`'ij->ji'`) and implicit (`'ij,jk'`: the indices that appear once, in
    alphabetical order) outputs and `...` (broadcast batch dimensions) are supported. An
    index repeated within one operand takes its diagonal (`'ii->i'`, `'ii'` the trace,
    `'bxby->bxy'`). Keyword arguments (`name`, `optimize`) are ignored.
    """
    tensors = to_tensors("einsum", list(inputs))
    canonical, targets = _parse_einsum(equation, [t._shape for t in tensors])
    tensors = [t if target is None else broadcast_to(t, target)
               for t, target in zip(tensors, targets)]
    terms, output = _einsum_terms(canonical)
    for i, term in enumerate(terms):
        terms[i], tensors[i] = _diagonals(term, tensors[i], canonical)
    return apply(EINSUM, *tensors, equation=",".join(terms) + "->" + output)


def _diagonals(term, x, equation):
    """An operand whose subscripts repeat an index (`'ii'`, `'bxby'`) as its diagonal over
    those axes, the index then named once (last): `diag_part` of the two axes moved last,
    whose VJP places the cotangent back on the diagonal."""
    while True:
        repeated = [c for c in term if term.count(c) > 1]
        if not repeated:
            return term, x
        c = repeated[0]
        p = term.index(c)
        q = term.index(c, p + 1)
        if x._shape[p] != x._shape[q]:
            raise ValueError(f"einsum: index {c!r} repeated in subscripts {term!r} of "
                             f"{equation!r} names axes of different sizes {x._shape[p]} and "
                             f"{x._shape[q]} (shape {x._shape})")
        rest = [k for k in range(len(term)) if k not in (p, q)]
        x = apply(MATRIX_DIAG_PART, transpose(x, rest + [p, q]))
        term = "".join(term[k] for k in rest) + c


def tensordot(a, b, axes, name=None):
    """Contract `axes` of `a` with `axes` of `b` (`tf.tensordot`).

    `axes` is an int N (the last N axes of `a` with the first N of `b`), a pair of ints,
    or a pair of lists of axes; the result has the free axes of `a`, then those of `b`.
    """
    a, b = to_tensors("tensordot", [a, b])
    ra, rb = len(a._shape), len(b._shape)
    if hasattr(axes, "numpy"):
        axes = axes.numpy().tolist()
    if isinstance(axes, (int, np.integer)):
        if not 0 <= axes <= min(ra, rb):
            raise ValueError(f"tensordot: axes={axes} must be in [0, {min(ra, rb)}] for "
                             f"shapes {a._shape} and {b._shape}")
        a_axes, b_axes = list(range(ra - axes, ra)), list(range(axes))
    else:
        try:
            a_axes, b_axes = (np.atleast_1d(np.asarray(x)).tolist() for x in axes)
        except (TypeError, ValueError):
            raise ValueError(f"tensordot: axes must be an int or a pair of lists of axes, "
                             f"got {axes!r}") from None
    if len(a_axes) != len(b_axes) or not all(
            isinstance(x, int) for x in a_axes + b_axes):
        raise ValueError(f"tensordot: axes {axes!r} must pair the same number of int axes")
    for axis_list, rank, shape in ((a_axes, ra, a._shape), (b_axes, rb, b._shape)):
        if any(not -rank <= x < rank for x in axis_list) or \
                len({x % rank for x in axis_list}) != len(axis_list):
            raise ValueError(f"tensordot: axes {axes!r} are out of range or repeated for "
                             f"shape {shape}")
    a_axes, b_axes = [x % ra for x in a_axes], [x % rb for x in b_axes]
    for i, j in zip(a_axes, b_axes):
        if a._shape[i] != b._shape[j]:
            raise ValueError(f"tensordot: axis {i} of {a._shape} and axis {j} of {b._shape} "
                             f"differ in size ({a._shape[i]} != {b._shape[j]})")
    if ra + rb > len(_LETTERS):
        raise ValueError(f"tensordot: ranks {ra} + {rb} exceed {len(_LETTERS)} axes")
    a_term = _LETTERS[:ra]
    b_term = list(_LETTERS[ra:ra + rb])
    for i, j in zip(a_axes, b_axes):
        b_term[j] = a_term[i]
    free = [c for i, c in enumerate(a_term) if i not in a_axes] + \
        [c for j, c in enumerate(b_term) if j not in b_axes]
    return apply(EINSUM, a, b, equation=f"{a_term},{''.join(b_term)}->{''.join(free)}")


# --- diagonals and trace ---------------------------------------------------------------

def _diag_part_infer(x):
    if len(x._shape) < 2:
        raise ValueError(f"diag_part: expects a matrix or a batch of them, shape [..., M, N], "
                         f"got shape {x._shape}")
    return x._shape[:-2] + (min(x._shape[-2:]),), x._dtype


def _diag_infer(v, num_rows, num_cols):
    if not v._shape or v._shape[-1] != min(num_rows, num_cols):
        raise ValueError(f"diag: a diagonal of shape {v._shape} does not fit a "
                         f"{num_rows}x{num_cols} matrix (its last axis must have "
                         f"{min(num_rows, num_cols)} entries)")
    return v._shape[:-1] + (num_rows, num_cols), v._dtype


def _diag_impl(v, num_rows, num_cols):
    out = np.zeros(v.shape[:-1] + (num_rows, num_cols), dtype=v.dtype)
    index = np.arange(v.shape[-1])
    out[..., index, index] = v
    return out


# Extracting the diagonal and placing a vector on a diagonal of zeros are each other's
# transposes, so each is the other's VJP.
MATRIX_DIAG_PART = declare(Op(
    name="matrix_diag_part", short="diag_part",
    impl=lambda x: np.diagonal(x, axis1=-2, axis2=-1),
    infer=_diag_part_infer,
    vjp=lambda g, out, x: (apply(MATRIX_DIAG, g, num_rows=x._shape[-2],
                                 num_cols=x._shape[-1]),),
    batch=lambda args, batched, size: apply(MATRIX_DIAG_PART, args[0]),
    numpy=lambda args, node: f"np.diagonal({args[0]}, axis1=-2, axis2=-1)",
    array_api=lambda args, node: f"xp.linalg.diagonal({args[0]})",
    latex=r"\operatorname{{diag\_part}}\left({0}\right)"))

def _diag_array_api(out, args, node):
    """The vector times an identity, without writing in place (zeros elsewhere, also
    where the vector holds nan or inf, as the NumPy form's assignment)."""
    n, rows, cols = node.inputs[0].shape[-1], node.shape[-2], node.shape[-1]
    column = f"xp.expand_dims({args[0]}, axis=-1)"
    placed = (f"xp.where(xp.eye({n}, dtype=xp.bool, device=device), {column}, "
              f"xp.zeros_like({column}))")
    lines = [f"{out} = {placed}"]
    if (rows, cols) != (n, n):       # padded with zeros to num_rows x num_cols
        lines += [f"{out} = xp.concat([{out}, xp.zeros({node.shape[:-2]} + ({rows - n}, {n}), "
                  f"dtype={xp_dtype(node.dtype)}, device=device)], axis=-2)",
                  f"{out} = xp.concat([{out}, xp.zeros({node.shape[:-2]} + ({rows}, {cols - n}), "
                  f"dtype={xp_dtype(node.dtype)}, device=device)], axis=-1)"]
    return lines


MATRIX_DIAG = declare(Op(
    name="matrix_diag", short="diag",
    impl=_diag_impl,
    infer=_diag_infer,
    vjp=lambda g, out, v, num_rows, num_cols: (apply(MATRIX_DIAG_PART, g),),
    batch=lambda args, batched, size, num_rows, num_cols: apply(
        MATRIX_DIAG, args[0], num_rows=num_rows, num_cols=num_cols),
    numpy_lines=lambda out, args, node: [
        f"{out} = np.zeros({node.shape}, dtype=np.{node.dtype.name})",
        f"{out}[..., np.arange({node.inputs[0].shape[-1]}), "
        f"np.arange({node.inputs[0].shape[-1]})] = {args[0]}"],
    array_api_lines=_diag_array_api,
    latex=r"\operatorname{{diag}}\left({0}\right)"))


def diag_part(input, name="diag_part", k=0, padding_value=0,  # noqa: A002  (TF's name)
              align="RIGHT_LEFT"):
    """The diagonal `k` of the last two axes (`tf.linalg.diag_part`): [..., M, N] to
    [..., L], the main diagonal for k=0, above it for k > 0, below for k < 0. One
    diagonal (an int k) is supported, not a band (a pair)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise ValueError(f"diag_part: k must be one int (a band of diagonals is not "
                         f"supported), got k={k!r}")
    (x,) = to_tensors("diag_part", [input])
    _diag_part_infer(x)
    if k > 0:
        x = x[..., :, min(int(k), x._shape[-1]):]
    elif k < 0:
        x = x[..., min(-int(k), x._shape[-2]):, :]
    return apply(MATRIX_DIAG_PART, x)


def diag(diagonal, name="diag", k=0, num_rows=-1, num_cols=-1, padding_value=0,
         align="RIGHT_LEFT"):
    """A matrix (or batch) with `diagonal` [..., N] on its main diagonal and zeros
    elsewhere (`tf.linalg.diag`). The matrix is N x N unless `num_rows`/`num_cols` are
    given (min(num_rows, num_cols) must be N). With one int `k` != 0 the diagonal is
    placed k above (below, k < 0) the main one of an (N + |k|)-square matrix; sizes are
    not given then. Only `padding_value=0`."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or padding_value != 0:
        raise ValueError(f"diag: k must be one int and padding_value 0, got k={k!r}, "
                         f"padding_value={padding_value!r}")
    (v,) = to_tensors("diag", [diagonal])
    if k != 0:
        if num_rows != -1 or num_cols != -1:
            raise ValueError(f"diag: num_rows and num_cols are not supported with k={k}")
        from .structure import pad_axis
        square, zero = diag(v), np.zeros((), dtype=v._dtype)
        rank, right, down = len(v._shape) + 1, max(int(k), 0), max(-int(k), 0)
        square = pad_axis(square, rank - 1, right, down, "constant", zero)
        return pad_axis(square, rank - 2, down, right, "constant", zero)
    n = v._shape[-1] if v._shape else 0
    rows = n if num_rows == -1 else int(num_rows)
    cols = n if num_cols == -1 else int(num_cols)
    return apply(MATRIX_DIAG, v, num_rows=rows, num_cols=cols)


def trace(x, name=None):
    """Sum of the main diagonal of the last two axes (`tf.linalg.trace`): [..., M, N]
    to [...]."""
    from .reduce import reduce_sum
    (x,) = to_tensors("trace", [x])
    if len(x._shape) < 2:
        raise ValueError(f"trace: expects a matrix or a batch of them, shape [..., M, N], "
                         f"got shape {x._shape}")
    return reduce_sum(diag_part(x), axis=-1)


# --- matrix functions ------------------------------------------------------------------

def _check_matrix(op_name, x, square=True):
    if x._dtype not in (np.float32, np.float64):
        raise TypeError(f"{op_name}: dtype {x._dtype.name} is not supported (expects float32 "
                        f"or float64 matrices), got shape {x._shape}")
    if len(x._shape) < 2 or (square and x._shape[-1] != x._shape[-2]):
        raise ValueError(f"{op_name}: expects {'a square matrix' if square else 'a matrix'} "
                         f"or a batch of them, shape [..., M, {'M' if square else 'K'}], got "
                         f"shape {x._shape}")


def _square_infer(op_name, batch_only=False):
    """Shape rule of a function of square matrices: the input's shape, or its batch."""
    def infer(x):
        _check_matrix(op_name, x)
        return (x._shape[:-2] if batch_only else x._shape), x._dtype
    return infer


def _as_matrix_batch(t):
    """[...] as [..., 1, 1], to scale a batch of matrices."""
    return reshape(t, t._shape + (1, 1))


def _naming_singular(op_name, fn):
    """`fn` with NumPy's LinAlgError (a ValueError) prefixed by the op's name."""
    def impl(*arrays):
        try:
            return fn(*arrays)
        except np.linalg.LinAlgError as e:
            raise np.linalg.LinAlgError(f"{op_name}: {e} (the matrix, of shape "
                                        f"{arrays[0].shape}, is not invertible)") from None
    return impl


MATRIX_INVERSE = declare(Op(
    name="matrix_inverse", short="inv",
    impl=_naming_singular("inv", np.linalg.inv),
    infer=_square_infer("inv"),
    # d(A^-1) = -A^-1 dA A^-1, so the cotangent of A is -A^-T g A^-T (out = A^-1).
    vjp=lambda g, out, x: (-matmul(matmul(out, g, transpose_a=True), out, transpose_b=True),),
    batch=lambda args, batched, size: apply(MATRIX_INVERSE, args[0]),
    numpy=lambda args, node: f"np.linalg.inv({args[0]})",
    latex="{0}^{{-1}}"))

def _determinant_op(name, short, numpy_name, impl, expression, vjp, latex):
    """A function of a square matrix stack's determinant, computed by
    `np.linalg.<numpy_name>` (`expression` formats its result); one value per matrix."""
    op = declare(Op(name=name, short=short, impl=impl, infer=_square_infer(numpy_name, batch_only=True),
                    vjp=vjp, numpy=lambda args, node: expression.format(args[0]),
                    latex=latex, differentiable=vjp is not None))
    op.batch = lambda args, batched, size: apply(op, args[0])
    return op


# d det(A) = det(A) tr(A^-1 dA) (Jacobi), so the cotangent of A is g det(A) A^-T.
MATRIX_DETERMINANT = _determinant_op(
    "matrix_determinant", "det", "det", np.linalg.det, "np.linalg.det({0})",
    lambda g, out, x: (_as_matrix_batch(g * out) * matrix_transpose(inv(x)),),
    r"\det\left({0}\right)")
# d log|det A| = tr(A^-1 dA), so the cotangent of A is g A^-T.
LOG_ABS_DETERMINANT = _determinant_op(
    "log_abs_determinant", "logabsdet", "slogdet", lambda x: np.linalg.slogdet(x)[1],
    "np.linalg.slogdet({0})[1]",
    lambda g, out, x: (_as_matrix_batch(g) * matrix_transpose(inv(x)),),
    r"\log\left|\det\left({0}\right)\right|")
# The sign of det(A) is piecewise constant: no gradient (never recorded on a tape).
DETERMINANT_SIGN = _determinant_op(
    "determinant_sign", "det_sign", "slogdet", lambda x: np.linalg.slogdet(x)[0],
    "np.linalg.slogdet({0})[0]", None, r"\operatorname{{sign}}\det\left({0}\right)")


def _solve_infer(matrix, rhs):
    _check_matrix("solve", matrix)
    _check_matrix("solve", rhs, square=False)
    _same_dtype("solve", matrix, rhs)
    if rhs._shape[-2] != matrix._shape[-1]:
        raise ValueError(f"solve: rhs of shape {rhs._shape} needs {matrix._shape[-1]} rows to "
                         f"match the matrix of shape {matrix._shape}")
    return _batch_shape("solve", matrix, rhs) + rhs._shape[-2:], matrix._dtype


def _solve_vjp(g, out, matrix, rhs):
    # X = A^-1 B, dX = A^-1 (dB - dA X): the cotangent of B is A^-T g, that of A is
    # -(A^-T g) X^T (out = X). Broadcast batch axes are summed back by the reverse pass.
    g_rhs = solve(matrix, g, adjoint=True)
    return -matmul(g_rhs, out, transpose_b=True), g_rhs


MATRIX_SOLVE = declare(Op(
    name="matrix_solve", short="solve",
    impl=_naming_singular("solve", np.linalg.solve),
    infer=_solve_infer,
    vjp=_solve_vjp,
    batch=lambda args, batched, size: apply(MATRIX_SOLVE, *_pad_batched_operands(args,
                                                                              batched)),
    numpy=lambda args, node: f"np.linalg.solve({args[0]}, {args[1]})",
    latex="{0}^{{-1}} {1}"))


def inv(input, adjoint=False, name=None):  # noqa: A002  (TensorFlow's name)
    """Inverse of a square matrix or of each in a batch [..., M, M] (`tf.linalg.inv`).

    float32/float64; `adjoint=True` inverts the transpose. A singular matrix raises
    NumPy's LinAlgError (a ValueError) naming the op."""
    (x,) = to_tensors("inv", [input])
    _check_matrix("inv", x)
    if adjoint:
        x = matrix_transpose(x)
    return apply(MATRIX_INVERSE, x)


def det(input, name=None):  # noqa: A002  (TensorFlow's name)
    """Determinant of a square matrix or of each in a batch: [..., M, M] to [...]
    (`tf.linalg.det`). Its gradient uses the inverse, so it needs a regular matrix."""
    return apply(MATRIX_DETERMINANT, input)


def slogdet(input, name=None):  # noqa: A002  (TensorFlow's name)
    """`(sign, log_abs_determinant)` of a square matrix or batch (`tf.linalg.slogdet`):
    det = sign * exp(log_abs_determinant), without overflow. Gradients flow through
    `log_abs_determinant`; `sign` is piecewise constant and has none."""
    (x,) = to_tensors("slogdet", [input])
    return apply(DETERMINANT_SIGN, x), apply(LOG_ABS_DETERMINANT, x)


def solve(matrix, rhs, adjoint=False, name=None):
    """`X` with `matrix @ X = rhs` (`tf.linalg.solve`): matrix [..., M, M], rhs [..., M, K]
    (batch dimensions broadcast). `adjoint=True` solves with the transposed matrix.
    Unlike NumPy, a 1-D rhs is refused (as in TensorFlow): write it as a column."""
    matrix, rhs = to_tensors("solve", [matrix, rhs])
    _check_matrix("solve", matrix)
    if adjoint:
        matrix = matrix_transpose(matrix)
    return apply(MATRIX_SOLVE, matrix, rhs)


__all__ = ["matmul", "matvec", "einsum", "tensordot", "trace", "diag_part", "diag", "inv",
           "det", "slogdet", "solve"]
