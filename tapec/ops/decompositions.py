"""Matrix decompositions: Cholesky, symmetric and general eigendecompositions, the SVD,
the pseudo-inverse, and the triangular mask (`band_part`) their derivatives need.

A decomposition has several results (eigenvalues and eigenvectors; U, s and V). Each
result is its own primitive, computed by the same NumPy routine: a derivative that uses
only one result (the eigenvalues of `eigvalsh`, the singular values of a norm) then never
builds the others' rules, whose denominators (1 / (λ_j - λ_i)) are infinite where
eigenvalues repeat. A function that uses both records the routine twice.

Conventions (derivations beside each rule):

* Symmetric inputs (`cholesky`, `eigh`): NumPy and TensorFlow read one triangle (the
  lower one; `eigh(UPLO='U')` the upper one), so the value is a function of that
  triangle and the gradient lives on it: for the gradient G of the function of a
  symmetric matrix, the cotangent is tril(G + G^T) - diag(G) (zero above the diagonal).
  Through any symmetric construction (A = B B^T) this equals the symmetric convention.
* Eigenvectors and singular vectors: the rules assume distinct eigenvalues (singular
  values); the derivative of a vector is undefined where they repeat. Functions of the
  vectors that do not depend on their signs are what is well defined.
* `eig` (general real matrices): real eigenvalues only; complex ones raise ValueError.
* `pinv`: the derivative holds where the rank is locally constant (full-rank matrices).

Matrix functions act on the last two axes; leading axes are batch axes, so each batching
rule applies the op again. float32 and float64.
"""
from __future__ import annotations

import numpy as np

from .linalg import _check_matrix, matmul, solve
from .registry import Op, apply, declare, to_tensors
from .shape import eye, expand_dims, matrix_transpose


def _again(op):
    """The batching rule of a function of matrix stacks: a leading batch axis is one more
    batch axis, so the op applies unchanged."""
    op.batch = lambda args, batched, size, **attrs: apply(op, args[0], **attrs)
    return op


def _linalg_error(op_name, fn, what):
    """`fn` with NumPy's LinAlgError (a ValueError) prefixed by the op's name."""
    def impl(x, **attrs):
        try:
            return fn(x, **attrs)
        except np.linalg.LinAlgError as e:
            raise np.linalg.LinAlgError(f"{op_name}: {e} (the matrix, of shape {x.shape}, "
                                        f"{what})") from None
    return impl


# --- band_part -------------------------------------------------------------------------

def _band_impl(x, num_lower, num_upper):
    if num_lower >= 0:
        x = np.triu(x, -num_lower)
    if num_upper >= 0:
        x = np.tril(x, num_upper)
    return x


def _band_source(args, node, xp=False):
    """NumPy's source, or with `xp` the array-API form's (where `k` is keyword-only)."""
    text, ns, k = args[0], "xp" if xp else "np", "k=" if xp else ""
    if node.attrs["num_lower"] >= 0:
        text = f"{ns}.triu({text}, {k}{-node.attrs['num_lower']})"
    if node.attrs["num_upper"] >= 0:
        text = f"{ns}.tril({text}, {k}{node.attrs['num_upper']})"
    return text


def _triangle_array_api(x, lower):
    """The symmetric matrix of `x`'s lower (or upper) triangle, as source: the
    standard's eigh does not say which triangle it reads (JAX averages both), NumPy's
    and TensorFlow's read one."""
    if lower:
        return f"xp.tril({x}) + xp.matrix_transpose(xp.tril({x}, k=-1))"
    return f"xp.triu({x}) + xp.matrix_transpose(xp.triu({x}, k=1))"


def _band_infer(x, num_lower, num_upper):
    if len(x._shape) < 2:
        raise ValueError(f"band_part: expects a matrix or a batch of them, shape [..., M, N], "
                         f"got shape {x._shape}")
    return x._shape, x._dtype


# Keeping a band is a projection: its VJP keeps the same band of the cotangent.
MATRIX_BAND_PART = _again(declare(Op(
    name="matrix_band_part", short="band",
    impl=_band_impl,
    infer=_band_infer,
    vjp=lambda g, out, x, num_lower, num_upper: (
        apply(MATRIX_BAND_PART, g, num_lower=num_lower, num_upper=num_upper),),
    numpy=_band_source, array_api=lambda args, node: _band_source(args, node, xp=True),
    latex=r"\operatorname{{band}}\left({0}\right)")))


def band_part(input, num_lower, num_upper, name=None):  # noqa: A002  (TensorFlow's name)
    """The band of each matrix in [..., M, N] with `num_lower` subdiagonals and
    `num_upper` superdiagonals (negative: all of them), zeros elsewhere
    (`tf.linalg.band_part`): `band_part(x, -1, 0)` is the lower triangle."""
    (x,) = to_tensors("band_part", [input])
    return apply(MATRIX_BAND_PART, x, num_lower=int(num_lower), num_upper=int(num_upper))


def _lower_half_diagonal(x):
    """Φ(x): the lower triangle of x with its diagonal halved."""
    from .linalg import diag, diag_part
    return band_part(x, -1, 0) - 0.5 * diag(diag_part(x))


def _on_triangle(g, lower=True):
    """The cotangent of a function of the `lower` (or upper) triangle of a symmetric
    matrix, from the gradient `g` of the same function of a full symmetric matrix:
    an entry below the diagonal stands for itself and its mirror, so it collects
    g_ij + g_ji, and the diagonal collects g_ii."""
    triangle = _lower_half_diagonal(g + matrix_transpose(g))
    return triangle if lower else matrix_transpose(triangle)


def _inverse_gap(values):
    """F_ij = 1 / (v_j - v_i) off the diagonal and 0 on it, for values [..., n]: written
    1 / (I + v_j - v_i) - I, so no infinity is formed on the diagonal."""
    n = values._shape[-1]
    identity = eye(n, dtype=values._dtype)
    return 1.0 / (identity + expand_dims(values, -2) - expand_dims(values, -1)) - identity


def _scale_columns(x, v):
    """x diag(v) for a matrix stack x [..., m, n] and v [..., n]."""
    return x * expand_dims(v, -2)


def _square_float_infer(op_name, out_shape=lambda shape: shape):
    def infer(x, **attrs):
        _check_matrix(op_name, x)
        return out_shape(x._shape), x._dtype
    return infer


# --- cholesky --------------------------------------------------------------------------

def _cholesky_vjp(g, out, x):
    # A = L L^T: dA = dL L^T + L dL^T, and L^-1 dL is lower triangular, so
    # dL = L Φ(L^-1 dA L^-T). Transposed, the gradient of the function of a symmetric A is
    # the symmetric part of S = L^-T Φ(L^T g) L^-1 (Murray 2016). Generated code may use
    # only NumPy, which has no triangular solve: the solves are general ones.
    middle = _lower_half_diagonal(matmul(out, g, transpose_a=True))
    left = solve(out, middle, adjoint=True)                                  # L^-T Φ
    s = matrix_transpose(solve(out, matrix_transpose(left), adjoint=True))   # L^-T Φ L^-1
    return (_on_triangle(s),)


CHOLESKY = _again(declare(Op(
    name="cholesky", short="chol",
    impl=_linalg_error("cholesky", lambda x: np.linalg.cholesky(x),
                       "is not symmetric positive definite"),
    infer=_square_float_infer("cholesky"),
    vjp=_cholesky_vjp,
    numpy=lambda args, node: f"np.linalg.cholesky({args[0]})",
    latex=r"\operatorname{{chol}}\left({0}\right)")))


def cholesky(input, name=None):  # noqa: A002  (TensorFlow's name)
    """The lower-triangular L with L L^T = A for each symmetric positive-definite matrix
    in [..., M, M] (`tf.linalg.cholesky`). Only the lower triangle of A is read, and the
    gradient is on that triangle (zeros above the diagonal)."""
    return apply(CHOLESKY, input)


def logdet(matrix, name=None):
    """log det A of each symmetric positive-definite matrix in [..., M, M]
    (`tf.linalg.logdet`): 2 sum(log(diag(cholesky(A))))."""
    from .elementwise import log
    from .linalg import diag_part
    from .reduce import reduce_sum
    return 2.0 * reduce_sum(log(diag_part(cholesky(matrix))), axis=-1)


# --- eigh ------------------------------------------------------------------------------

def _uplo(lower):
    return "L" if lower else "U"


def _eigh_values_vjp(g, out, x, lower):
    # dλ_i = v_i^T dA v_i, so the gradient of the function of a symmetric A is V diag(g) V^T.
    vectors = apply(EIGH_VECTORS, x, lower=lower)
    return (_on_triangle(matmul(_scale_columns(vectors, g), vectors, transpose_b=True),
                         lower),)


def _eigh_vectors_vjp(g, out, x, lower):
    # dV = V (F ∘ (V^T dA V)) with F_ij = 1 / (λ_j - λ_i) (distinct eigenvalues), so the
    # gradient of the function of a symmetric A is V (F ∘ (V^T g)) V^T.
    values = apply(EIGH_VALUES, x, lower=lower)
    inner = _inverse_gap(values) * matmul(out, g, transpose_a=True)
    return (_on_triangle(matmul(matmul(out, inner), out, transpose_b=True), lower),)


EIGH_VALUES = _again(declare(Op(
    name="eigh_values", short="evals",
    impl=_linalg_error("eigh", lambda x, lower: np.linalg.eigvalsh(x, _uplo(lower)),
                       "did not converge"),
    infer=_square_float_infer("eigh", lambda shape: shape[:-1]),
    vjp=_eigh_values_vjp,
    numpy=lambda args, node: f"np.linalg.eigvalsh({args[0]}, {_uplo(node.attrs['lower'])!r})",
    array_api=lambda args, node: (
        f"xp.linalg.eigvalsh({_triangle_array_api(args[0], node.attrs['lower'])})"),
    latex=r"\lambda\left({0}\right)")))

EIGH_VECTORS = _again(declare(Op(
    name="eigh_vectors", short="evecs",
    impl=_linalg_error("eigh", lambda x, lower: np.linalg.eigh(x, _uplo(lower))[1],
                       "did not converge"),
    infer=_square_float_infer("eigh"),
    vjp=_eigh_vectors_vjp,
    numpy=lambda args, node: f"np.linalg.eigh({args[0]}, {_uplo(node.attrs['lower'])!r})[1]",
    array_api=lambda args, node: (
        f"xp.linalg.eigh({_triangle_array_api(args[0], node.attrs['lower'])})[1]"),
    latex=r"V\left({0}\right)")))


def eigh(tensor, name=None, lower=True):
    """(eigenvalues [..., M] ascending, eigenvectors [..., M, M] as columns) of each
    symmetric matrix in [..., M, M] (`tf.linalg.eigh`). Only the lower triangle is read
    (`lower=False`: the upper one, NumPy's UPLO='U'), and gradients are on it. The
    eigenvectors' gradient assumes distinct eigenvalues; an eigenvector's sign is
    arbitrary, so differentiate functions that do not depend on it."""
    (x,) = to_tensors("eigh", [tensor])
    return apply(EIGH_VALUES, x, lower=bool(lower)), apply(EIGH_VECTORS, x, lower=bool(lower))


def eigvalsh(tensor, name=None, lower=True):
    """Eigenvalues [..., M], ascending, of each symmetric matrix in [..., M, M]
    (`tf.linalg.eigvalsh`); the gradient V diag(g) V^T is defined for repeated
    eigenvalues too."""
    return apply(EIGH_VALUES, tensor, lower=bool(lower))


# --- eig (real eigenvalues) --------------------------------------------------------------

_COMPLEX_EIG = ("eig: the matrix has complex eigenvalues; tapec tensors are real, so "
                "numpy.linalg.eig is differentiable only for real matrices whose "
                "eigenvalues are all real (use eigh for symmetric matrices)")


def _eig_impl(x, vectors):
    try:
        values, vecs = np.linalg.eig(x)
    except np.linalg.LinAlgError as e:
        raise np.linalg.LinAlgError(f"eig: {e} (the matrix has shape {x.shape})") from None
    result = vecs if vectors else values
    if np.iscomplexobj(result):
        if np.any(values.imag != 0):
            raise ValueError(_COMPLEX_EIG)
        result = result.real
    return result


def _eig_lines(out, args, node):
    # The check runs again in generated code, which may see other values (a traced
    # function called on new inputs): a complex spectrum raises rather than losing its
    # imaginary part.
    part = "1" if node.attrs["vectors"] else "0"
    return [f"{out} = np.linalg.eig({args[0]})",
            f"if np.iscomplexobj({out}[0]) and np.any({out}[0].imag != 0):",
            f"    raise ValueError({_COMPLEX_EIG!r})",
            f"{out} = np.real({out}[{part}])"]


def _eig_vjp(g, out, x, vectors):
    # A = V Λ V^-1 with unit columns v_j. dλ = diag(V^-1 dA V); the columns move by
    # V (F ∘ (V^-1 dA V)), F_ij = 1 / (λ_j - λ_i), less their component along themselves
    # (unit norm). Transposed: the cotangent of A is V^-T (diag(g_λ) + F ∘ (V^T W)) V^T
    # with W = g_V - V diag(diag(V^T g_V)).
    from .linalg import diag, diag_part, inv
    vecs = out if vectors else apply(EIG, x, vectors=True)
    if vectors:
        values = apply(EIG, x, vectors=False)
        w = g - _scale_columns(vecs, diag_part(matmul(vecs, g, transpose_a=True)))
        inner = _inverse_gap(values) * matmul(vecs, w, transpose_a=True)
    else:
        inner = diag(g)
    return (matmul(matmul(inv(vecs), inner, transpose_a=True), vecs, transpose_b=True),)


def _eig_infer(x, vectors):
    _check_matrix("eig", x)
    return (x._shape if vectors else x._shape[:-1]), x._dtype


EIG = _again(declare(Op(
    name="eig",
    impl=_eig_impl,
    infer=_eig_infer,
    vjp=_eig_vjp,
    numpy_lines=_eig_lines,
    latex=r"\operatorname{{eig}}\left({0}\right)")))


def eig(tensor):
    """(eigenvalues [..., M], eigenvectors [..., M, M]) of real matrices whose eigenvalues
    are all real, as NumPy orders and normalizes them (unit columns). Complex
    eigenvalues raise ValueError. Gradients assume distinct eigenvalues."""
    (x,) = to_tensors("eig", [tensor])
    return apply(EIG, x, vectors=False), apply(EIG, x, vectors=True)


# --- svd -------------------------------------------------------------------------------

def _svd_infer(part):
    def infer(x, full_matrices=False):
        _check_matrix("svd", x, square=False)
        m, n = x._shape[-2:]
        k = min(m, n)
        batch = x._shape[:-2]
        if part == "s":
            return batch + (k,), x._dtype
        rows = m if part == "u" else n
        return batch + (rows, rows if full_matrices else k), x._dtype
    return infer


def _svd_u_impl(x, full_matrices):
    return np.linalg.svd(x, full_matrices=full_matrices)[0]


def _svd_v_impl(x, full_matrices):
    return np.swapaxes(np.linalg.svd(x, full_matrices=full_matrices)[2], -1, -2)


def _svd_parts(x):
    return (apply(SVD_U, x, full_matrices=False), apply(SVD_VALUES, x),
            apply(SVD_V, x, full_matrices=False))


def _svd_values_vjp(g, out, x):
    # ds = diag(U^T dA V): the cotangent of A is U diag(g) V^T.
    u, _, v = _svd_parts(x)
    return (matmul(_scale_columns(u, g), v, transpose_b=True),)


def _refuse_full(op_name, x, full_matrices, rows):
    if full_matrices and x._shape[rows] != min(x._shape[-2:]):
        raise NotImplementedError(
            f"{op_name}: the gradient of {'u' if rows == -2 else 'v'} with "
            f"full_matrices=True is not defined for a non-square matrix (shape {x._shape}): "
            "its extra columns are any orthonormal basis of a complement; use "
            "full_matrices=False")


def _svd_u_vjp(g, out, x, full_matrices):
    # (Townsend 2016) with F_ij = 1 / (s_j^2 - s_i^2), distinct nonzero s:
    # cotangent of A = U [(F ∘ (U^T g - g^T U)) S] V^T + (I - U U^T) g S^-1 V^T.
    _refuse_full("svd", x, full_matrices, -2)
    u, s, v = _svd_parts(x)
    ug = matmul(u, g, transpose_a=True)
    inner = _scale_columns(_inverse_gap(s * s) * (ug - matrix_transpose(ug)), s)
    cotangent = matmul(matmul(u, inner), v, transpose_b=True)
    if x._shape[-2] > x._shape[-1]:           # U is not square: the complement term
        outside = g - matmul(u, ug)
        cotangent = cotangent + matmul(_scale_columns(outside, 1.0 / s), v, transpose_b=True)
    return (cotangent,)


def _svd_v_vjp(g, out, x, full_matrices):
    # The transpose of u's rule: A^T = V S U^T.
    # cotangent of A = U [S (F ∘ (V^T g - g^T V))] V^T + U S^-1 g^T (I - V V^T).
    _refuse_full("svd", x, full_matrices, -1)
    u, s, v = _svd_parts(x)
    vg = matmul(v, g, transpose_a=True)
    inner = expand_dims(s, -1) * (_inverse_gap(s * s) * (vg - matrix_transpose(vg)))
    cotangent = matmul(matmul(u, inner), v, transpose_b=True)
    if x._shape[-1] > x._shape[-2]:
        outside = g - matmul(v, vg)
        cotangent = cotangent + matmul(_scale_columns(u, 1.0 / s), outside, transpose_b=True)
    return (cotangent,)


def _svd_u_source(args, node):
    return f"np.linalg.svd({args[0]}, full_matrices={node.attrs['full_matrices']})[0]"


def _svd_v_source(args, node):
    return (f"np.swapaxes(np.linalg.svd({args[0]}, full_matrices="
            f"{node.attrs['full_matrices']})[2], -1, -2)")


SVD_VALUES = _again(declare(Op(
    name="svd_values", short="sv",
    impl=_linalg_error("svd", lambda x: np.linalg.svd(x, compute_uv=False), "did not converge"),
    infer=_svd_infer("s"),
    vjp=_svd_values_vjp,
    numpy=lambda args, node: f"np.linalg.svd({args[0]}, compute_uv=False)",
    array_api=lambda args, node: f"xp.linalg.svdvals({args[0]})",
    latex=r"\sigma\left({0}\right)")))

SVD_U = _again(declare(Op(
    name="svd_u",
    impl=_linalg_error("svd", _svd_u_impl, "did not converge"),
    infer=_svd_infer("u"),
    vjp=_svd_u_vjp,
    numpy=_svd_u_source,
    latex=r"U\left({0}\right)")))

SVD_V = _again(declare(Op(
    name="svd_v",
    impl=_linalg_error("svd", _svd_v_impl, "did not converge"),
    infer=_svd_infer("v"),
    vjp=_svd_v_vjp,
    numpy=_svd_v_source,
    array_api=lambda args, node: (f"xp.matrix_transpose(xp.linalg.svd({args[0]}, full_matrices="
                                  f"{node.attrs['full_matrices']})[2])"),
    latex=r"V\left({0}\right)")))


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """Singular value decomposition of each matrix in [..., M, N] (`tf.linalg.svd`):
    (s, u, v) with A = u diag(s) v^T, s [..., K] descending (K = min(M, N)), u
    [..., M, K] and v [..., N, K] (M and N columns with `full_matrices=True`); s alone
    when `compute_uv=False`. Note TensorFlow's order (s first) and v, not v^T.

    Gradients: through s always; through u and v for distinct nonzero singular values,
    and not for the extra columns of `full_matrices=True` (NotImplementedError). A
    column's sign is arbitrary: differentiate functions that do not depend on it."""
    (x,) = to_tensors("svd", [tensor])
    s = apply(SVD_VALUES, x)
    if not compute_uv:
        return s
    m, n = x._shape[-2:]
    # Where full and reduced factors coincide, the reduced op (with a gradient) serves.
    u = apply(SVD_U, x, full_matrices=bool(full_matrices) and m > n)
    v = apply(SVD_V, x, full_matrices=bool(full_matrices) and n > m)
    return s, u, v


# --- pinv ------------------------------------------------------------------------------

def _pinv_vjp(g, out, x, rcond):
    # For a matrix of locally constant rank (Golub & Pereyra 1973), with P = A^+:
    # dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P, so the cotangent is
    # -P^T g P^T + (I - A P) g^T P P^T + P^T P g^T (I - P A).
    p = out
    first = -matmul(matmul(p, g, transpose_a=True), p, transpose_b=True)
    gt_p = matmul(g, matmul(p, p, transpose_b=True), transpose_a=True)       # g^T P P^T
    second = gt_p - matmul(x, matmul(p, gt_p))
    pt_p_gt = matmul(matmul(p, p, transpose_a=True), g, transpose_b=True)    # P^T P g^T
    third = pt_p_gt - matmul(matmul(pt_p_gt, p), x)
    return (first + second + third,)


def _pinv_infer(x, rcond):
    _check_matrix("pinv", x, square=False)
    return x._shape[:-2] + (x._shape[-1], x._shape[-2]), x._dtype


PINV = _again(declare(Op(
    name="pinv",
    impl=_linalg_error("pinv", lambda x, rcond: np.linalg.pinv(x, rcond=rcond),
                       "did not converge"),
    infer=_pinv_infer,
    vjp=_pinv_vjp,
    numpy=lambda args, node: f"np.linalg.pinv({args[0]}, rcond={node.attrs['rcond']!r})",
    # NumPy's rcond is the standard's rtol: relative to the largest singular value
    array_api=lambda args, node: f"xp.linalg.pinv({args[0]}, rtol={node.attrs['rcond']!r})",
    latex="{0}^{{+}}")))


def pinv(a, rcond=None, validate_args=False, name=None):
    """The Moore-Penrose pseudo-inverse [..., N, M] of each matrix in [..., M, N]
    (`tf.linalg.pinv`): singular values below `rcond` times the largest are treated as
    zero (default, as TensorFlow: 10 * max(M, N) * machine epsilon). The gradient holds
    where the rank is locally constant, as for full-rank matrices."""
    (x,) = to_tensors("pinv", [a])
    _check_matrix("pinv", x, square=False)
    if rcond is None:
        rcond = 10.0 * max(x._shape[-2:]) * float(np.finfo(x._dtype).eps)
    return apply(PINV, x, rcond=float(rcond))


__all__ = ["band_part", "cholesky", "logdet", "eigh", "eigvalsh", "svd", "pinv"]
