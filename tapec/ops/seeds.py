"""The seed of vectorized jacobians, kept symbolic so that identities can be simplified.

`diag_seed(v)` is the tensor T of shape (m, *v.shape), m = v.size, with
T[i, k...] = v[k...] where i is the flat (C-order) index of k, and 0 * v[k...] elsewhere:
the identity seed scaled by v. The off-diagonal zeros are 0 * v, not 0, so that an inf or
nan in v makes them nan, as TensorFlow's row-by-row jacobian (one-hot row times v) does. Seeding a jacobian with `diag_seed(ones)` instead of a
materialized `eye` lets the simplifier push the diagonal through the gradient graph
(`diag_seed(v) * w = diag_seed(v * w)`, `A @ diag_seed(v)` = a scaled copy of A) so that,
for example, the jacobian of tanh(W x) compiles to (1 - y**2) * W.
"""
from __future__ import annotations

import numpy as np

from .registry import Op, apply, declare


def _impl(v):
    m = v.size
    flat = v.reshape(-1)
    with np.errstate(invalid="ignore"):
        out = np.tile(flat * 0, (m, 1))
    np.fill_diagonal(out, flat)
    return out.reshape((m,) + v.shape)


def _vjp(g, out, v):
    from .linalg import diag_part
    from .shape import reshape
    m = int(np.prod(v._shape, dtype=np.int64))
    return (reshape(diag_part(reshape(g, (m, m))), v._shape),)


def _lines(out, args, node):
    # eye * v is _impl's tile(v * 0) with v on the diagonal, bit for bit: 1 * v == v,
    # and 0 * v is the same product (its sign, a nan for an inf), in one closed form.
    m = node.shape[0]
    return [f"{out} = (np.eye({m}, dtype=np.{node.dtype.name}) * "
            f"np.reshape({args[0]}, -1)).reshape({node.shape})"]


def _array_api_lines(out, args, node):
    """The same matrix without writing in place: the flat values on the diagonal and
    the values times 0 elsewhere (so a nan or inf spreads down its column, as there)."""
    m = node.shape[0]
    flat = f"{out}_flat"
    return [f"{flat} = xp.reshape({args[0]}, (1, {m}))",
            f"{out} = xp.where(xp.eye({m}, dtype=xp.bool, device=device), {flat}, {flat} * 0)",
            f"{out} = xp.reshape({out}, {node.shape})"]


DIAG_SEED = declare(Op(
    name="diag_seed", impl=_impl,
    infer=lambda v: ((int(np.prod(v._shape, dtype=np.int64)),) + v._shape, v._dtype),
    vjp=_vjp, numpy_lines=_lines, array_api_lines=_array_api_lines, latex=r"\operatorname{{diag}}\left({0}\right)"))


def diag_seed(v):
    return apply(DIAG_SEED, v)
