"""Rewrite rules, one identity each, grouped in the phases `simplify` runs in order.

Every rule is exact in IEEE arithmetic except where its comment says otherwise (two
rules change only the sign of a zero result; the batched-matvec rule changes only the
BLAS summation order; `cancel_determinant` cancels det A / det A, which is exactly 1
where the determinant is representable). A rule never adds operations.
"""
from __future__ import annotations

import numpy as np

from ..ops import elementwise as ew
from ..ops.registry import REGISTRY, apply, constant_attrs
from ..ops.shape import broadcast_to, reshape, transpose
from ..tensor import Tensor


ELEMENTWISE = "elementwise"     # every op declared with `elementwise(...)`, and where


def on(*op_names):
    """Mark a rule with the ops it can match, so the engine tries it only there."""
    def mark(rule):
        rule.ops = op_names
        return rule
    return mark


def needs(*op_names):
    """Mark a rule that can fire only on a node with one of these ops somewhere below it:
    on a graph that holds none, the engine does not try it."""
    def mark(rule):
        rule.needs = frozenset(op_names)
        return rule
    return mark


def reads(*op_names):
    """Mark a rule that can fire only on a node one of whose inputs is one of these ops
    (`x * 1` needs a constant operand): the engine tries it only there."""
    def mark(rule):
        rule.reads = frozenset(op_names)
        return needs(*op_names)(rule)
    return mark


UNIFORM = ("constant", "fill")      # the nodes `uniform_value` reads


def T(node) -> Tensor:
    return Tensor._symbolic(node)


def uniform_value(node):
    """The single value of a constant or fill node, else None."""
    name = node.op.name
    if name == "constant" or name == "fill":
        return node.attrs["value"]
    return None


def _is(node, value) -> bool:
    v = uniform_value(node)
    return v is not None and v == value


def _widened(x, node):
    """`x` broadcast to `node`'s shape (a no-op when the shapes already agree)."""
    return T(x) if x.shape == node.shape else broadcast_to(T(x), node.shape)


def _uniform(value, node):
    """A constant (0-d) or fill node holding `value` in `node`'s dtype and shape."""
    value = np.asarray(value, dtype=node.dtype)
    if node.shape == ():
        from ..ir.nodes import Node  # noqa: F401  (constant nodes are built by the builder)
        return T(_builder().node(REGISTRY["constant"], (), constant_attrs(value), (),
                                 node.dtype))
    from ..ops.shape import fill
    return fill(node.shape, value.item(), node.dtype)


def _builder():
    from .. import context
    return context.current_builder()


# --- algebra ---------------------------------------------------------------------------

def _other_operand(n, op_name, value):
    """x, where `n` is op_name(x, value) or op_name(value, x); else None."""
    if n.op.name == op_name:
        a, b = n.inputs
        if _is(b, value):
            return a
        if _is(a, value):
            return b
    return None


def _identity_element(name, op_name, value, doc):
    """The rule `name`: op_name(x, value) -> x (either operand order)."""
    @reads(*UNIFORM)
    @on(op_name)
    def rule(n):
        x = _other_operand(n, op_name, value)
        return None if x is None else _widened(x, n)
    rule.__name__ = rule.__qualname__ = name      # the simplifier's statistics name rules
    rule.__doc__ = doc
    return rule


multiply_by_one = _identity_element("multiply_by_one", "multiply", 1, "x * 1 -> x")
add_zero = _identity_element("add_zero", "add", 0,
                             "x + 0 -> x   (a -0.0 input stays -0.0 where x + 0 gives +0.0)")


@reads(*UNIFORM)
@on("multiply")
def multiply_by_minus_one(n):
    """x * -1 -> -x"""
    x = _other_operand(n, "multiply", -1)
    if x is not None:
        return _widened(ew.negative(T(x))._node, n)


@reads(*UNIFORM)
@on("subtract")
def subtract_zero(n):
    """x - 0 -> x;  0 - x -> -x   (the second only changes the sign of a zero result)"""
    if n.op.name == "subtract":
        a, b = n.inputs
        if _is(b, 0):
            return _widened(a, n)
        if _is(a, 0):
            return _widened(ew.negative(T(b))._node, n)


@reads(*UNIFORM)
@on("divide")
def divide_by_one(n):
    """x / 1 -> x"""
    if n.op.name == "divide" and _is(n.inputs[1], 1):
        return _widened(n.inputs[0], n)


@reads("negative")
@on("negative")
def double_negation(n):
    """--x -> x"""
    if n.op.name == "negative" and n.inputs[0].op.name == "negative":
        return T(n.inputs[0].inputs[0])


@reads("negative")
@on("add", "subtract")
def add_negation(n):
    """a + (-b) -> a - b;  (-a) + b -> b - a;  a - (-b) -> a + b"""
    name = n.op.name
    if name not in ("add", "subtract"):
        return None
    a, b = n.inputs
    if b.op.name == "negative":
        flipped = ew.subtract if name == "add" else ew.add
        return _widened(flipped(T(a), T(b.inputs[0]))._node, n)
    if name == "add" and a.op.name == "negative":
        return _widened(ew.subtract(T(b), T(a.inputs[0]))._node, n)


@reads("negative")
@on("multiply", "divide")
def negate_product(n):
    """(-a) * b -> -(a * b);  a * (-b) -> -(a * b): the negation moves outward to cancel"""
    if n.op.name in ("multiply", "divide"):
        a, b = n.inputs
        op = REGISTRY[n.op.name]
        if a.op.name == "negative":
            return ew.negative(apply(op, T(a.inputs[0]), T(b)))
        if b.op.name == "negative":
            return ew.negative(apply(op, T(a), T(b.inputs[0])))


@on("add")
def sum_of_equal_terms(n):
    """a + a -> 2 * a   (doubling is exact)"""
    if n.op.name == "add" and n.inputs[0] is n.inputs[1]:
        return ew.multiply(2, T(n.inputs[0]))


@reads(*UNIFORM)
@on("multiply")
def constant_product(n):
    """c1 * (c2 * x) -> (c1 c2) * x when c1 c2 is exact (a power of two times c2)"""
    if n.op.name != "multiply":
        return None
    a, b = n.inputs
    for c, other in ((a, b), (b, a)):
        c1 = uniform_value(c)
        if c1 is None or other.op.name != "multiply" or c.shape != ():
            continue
        for c2_node, x in ((other.inputs[0], other.inputs[1]),
                           (other.inputs[1], other.inputs[0])):
            c2 = uniform_value(c2_node)
            if c2 is None or c2_node.shape != ():
                continue
            mantissa, _ = np.frexp(c1)
            if abs(mantissa) != 0.5:          # only powers of two reassociate exactly
                continue
            product = np.asarray(c1, n.dtype) * np.asarray(c2, n.dtype)
            return _widened(ew.multiply(product.item(), T(x))._node, n)


@on("where")
def where_same_branches(n):
    """where(c, a, a) -> a"""
    if n.op.name == "where" and n.inputs[1] is n.inputs[2]:
        return _widened(n.inputs[1], n)


@reads(*UNIFORM)
@on("where")
def sqrt_guard_never_met(n):
    """where(sqrt(x) + c == 0, 1, sqrt(x)) -> sqrt(x) for a constant c != 0 (or |c|):
    sqrt(x) is +0, positive, inf or nan, so adding a nonzero |c| never gives 0. The
    guard is sqrt's derivative keeping 0/0 at 0 when the incoming gradient is 0; a
    constant gradient is not."""
    if n.op.name != "where" or not _is(n.inputs[1], 1):
        return None
    condition, root = n.inputs[0], n.inputs[2]
    if root.op.name != "sqrt" or condition.op.name != "equal" or \
            not _is(condition.inputs[1], 0) or condition.inputs[0].op.name != "add":
        return None
    a, b = condition.inputs[0].inputs
    other = b if a is root else a if b is root else None
    if other is None:
        return None
    absolute = other.op.name == "abs"
    value = uniform_value(other.inputs[0] if absolute else other)
    if value is None or value != value or value == 0 or (value < 0 and not absolute):
        return None
    return _widened(root, n)


@on("identity", "stop_gradient")
def identity_op(n):
    """identity(x) -> x;  stop_gradient(x) -> x   (same value: only differentiation cares
    about these nodes, and compiled code is never differentiated)"""
    if n.op.name in ("identity", "stop_gradient"):
        return T(n.inputs[0])


@reads("fill")
@on(ELEMENTWISE)
def uniform_as_scalar(n):
    """fill(v, s) ⊙ x -> v ⊙ x when broadcasting x alone already gives the result's shape"""
    if n.op.arity is None or n.op.name == "where" or len(n.inputs) != 2:
        return None
    a, b = n.inputs
    for k, (c, other) in enumerate(((a, b), (b, a))):
        if c.op.name == "fill" and c.shape != () and other.shape == n.shape:
            scalar = _uniform(c.attrs["value"], _Shaped((), c.dtype))
            args = (scalar, T(other)) if k == 0 else (T(other), scalar)
            return apply(n.op, *args, **n.attrs)


class _Shaped:
    """Just a shape and a dtype, to ask `_uniform` for a 0-d constant."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype


# --- constants -------------------------------------------------------------------------

@reads(*UNIFORM)
@on(ELEMENTWISE)
def fold_elementwise(n):
    """op(c1, c2, ...) -> c   for an elementwise op on uniform constants (computed in the
    node's dtype with the op's own NumPy implementation, so the value is what runtime
    would compute)"""
    if n.op.arity is None or n.op.impl is None or n.op.name == "where":
        return None
    values = [uniform_value(i) for i in n.inputs]
    if any(v is None for v in values) or n.dtype.kind not in "fc":
        return None
    with np.errstate(all="ignore"):
        result = n.op.impl(*(np.asarray(v, dtype=i.dtype) for v, i in zip(values, n.inputs)))
    return _uniform(np.asarray(result, dtype=n.dtype), n)


@reads(*UNIFORM)
@on("reshape", "broadcast_to", "transpose", "getitem", "cast", "identity")
def fold_structural(n):
    """reshape / broadcast_to / transpose / getitem / cast of a uniform -> a uniform"""
    if n.op.name not in ("reshape", "broadcast_to", "transpose", "getitem", "cast",
                         "identity"):
        return None
    value = uniform_value(n.inputs[0])
    if value is None:
        return None
    return _uniform(np.asarray(value, dtype=n.inputs[0].dtype).astype(n.dtype), n)


@reads(*UNIFORM)
@on("reduce_sum", "sum_to")
def fold_sums(n):
    """sum of k copies of 0 -> 0;  of 1 -> k (exact while k is below 2**mantissa bits)"""
    if n.op.name not in ("reduce_sum", "sum_to"):
        return None
    value = uniform_value(n.inputs[0])
    if value not in (0, 1) or n.dtype.kind != "f":
        return None
    count = int(np.prod(n.inputs[0].shape, dtype=np.int64)) // max(
        int(np.prod(n.shape, dtype=np.int64)), 1)
    if count >= 2 ** (np.finfo(n.dtype).nmant + 1):
        return None
    return _uniform(value * count, n)


@reads(*UNIFORM)
@on("scatter")
def fold_full_scatter(n):
    """scatter(fill(v), index, s) -> fill(v, s) when the index covers every element (a
    basic index selecting as many elements as the result holds)"""
    value = uniform_value(n.inputs[0])
    index = n.attrs["index"]
    if value is None or any(item[0] not in ("int", "slice", "newaxis", "ellipsis")
                            for item in index):
        return None
    if int(np.prod(n.inputs[0].shape, dtype=np.int64)) == int(np.prod(n.shape,
                                                                       dtype=np.int64)):
        return _uniform(value, n)


# --- shapes ----------------------------------------------------------------------------

@on("transpose")
def transpose_of_transpose(n):
    """transpose(transpose(x, p), q) -> transpose(x, p∘q)  (or x)"""
    if n.op.name == "transpose" and n.inputs[0].op.name == "transpose":
        inner = n.inputs[0]
        p, q = inner.attrs["perm"], n.attrs["perm"]
        return transpose(T(inner.inputs[0]), tuple(p[i] for i in q))


@on("reshape")
def reshape_of_reshape(n):
    """reshape(reshape(x)) -> reshape(x);  reshape(x, x.shape) -> x"""
    if n.op.name == "reshape":
        x = n.inputs[0]
        if x.op.name == "reshape":
            return reshape(T(x.inputs[0]), n.shape)
        if x.shape == n.shape:
            return T(x)


@reads("broadcast_to")
@on(ELEMENTWISE)
def redundant_broadcast(n):
    """op(broadcast_to(a, s), b) -> op(a, b) when broadcasting gives the same shape"""
    if n.op.arity is None:
        return None
    inputs = list(n.inputs)
    for k, x in enumerate(inputs):
        if x.op.name != "broadcast_to" or len(x.inputs[0].shape) > len(x.shape):
            continue
        trial = inputs[:k] + [x.inputs[0]] + inputs[k + 1:]
        try:
            shape = np.broadcast_shapes(*(i.shape for i in trial))
        except ValueError:
            continue
        if shape == n.shape:
            return apply(n.op, *(T(i) for i in trial), **n.attrs)


@on("broadcast_to", "sum_to", "reshape", "transpose")
def trivial_shape_ops(n):
    """broadcast_to(x, x.shape), sum_to(x, x.shape), transpose(x, identity) -> x"""
    name = n.op.name
    if name in ("broadcast_to", "sum_to", "reshape") and n.inputs[0].shape == n.shape:
        return T(n.inputs[0])
    if name == "transpose" and n.attrs["perm"] == tuple(range(len(n.shape))):
        return T(n.inputs[0])


@reads("eye")
@on("matmul")
def matmul_by_identity(n):
    """eye @ x -> x;  x @ eye -> x"""
    if n.op.name != "matmul":
        return None
    a, b = n.inputs
    if a.op.name == "eye" and a.attrs.get("n") == a.attrs.get("m", a.attrs.get("n")):
        return _widened(b, n)
    if b.op.name == "eye" and b.attrs.get("n") == b.attrs.get("m", b.attrs.get("n")):
        return _widened(a, n)


@on("matmul")
def outer_product(n):
    """a @ b with a contracted dimension of 1 is a broadcast product (one multiply per
    element, no sum): (..., p, 1) @ (..., 1, q) -> a * b"""
    if n.op.name == "matmul":
        a, b = n.inputs
        if a.shape[-1] == 1 and b.shape[-2] == 1:
            return _widened(ew.multiply(T(a), T(b))._node, n)


@on("transpose")
def order_keeping_transpose(n):
    """transpose(x, p) -> reshape(x, ...) when p keeps the order of the axes longer than 1
    (the flat order is unchanged, so it is a reshape: a view, never a copy)"""
    if n.op.name == "transpose":
        x = n.inputs[0]
        long_axes = [p for p in n.attrs["perm"] if x.shape[p] != 1]
        if long_axes == sorted(long_axes):
            return reshape(T(x), n.shape)


@on("transpose")
def transpose_through_elementwise(n):
    """transpose(op(a, b), p) -> op(transpose(a, p), transpose(b, p)) when an argument is
    itself a transpose (so that pair cancels) and every argument has the result's rank"""
    if n.op.name != "transpose":
        return None
    inner = n.inputs[0]
    if inner.op.arity is None or inner.op.name == "where":
        return None
    rank = len(n.shape)
    if any(len(i.shape) not in (0, rank) for i in inner.inputs) or \
            not any(i.op.name == "transpose" for i in inner.inputs):
        return None
    perm = n.attrs["perm"]
    return apply(inner.op, *(transpose(T(i), perm) if i.shape else T(i)
                             for i in inner.inputs), **inner.attrs)


@reads("broadcast_to")
@on("reshape", "transpose", "broadcast_to")
def single_value_reshaped(n):
    """reshape / transpose / broadcast_to of a broadcast single value -> one broadcast"""
    if n.op.name in ("reshape", "transpose", "broadcast_to") and \
            n.inputs[0].op.name == "broadcast_to":
        source = n.inputs[0].inputs[0]
        if int(np.prod(source.shape, dtype=np.int64)) == 1:
            return broadcast_to(reshape(T(source), ()), n.shape)


@reads("divide")
@needs("matrix_determinant")
@on("multiply")
def cancel_determinant(n):
    """(g / det A) * det A -> g   (the derivative of log det A: g A^-T)

    Not exact in general ((1/d) * d rounds to 1 +- 1 ulp; d = 0 or inf gives nan), but
    for a determinant it is the identity the chain rule goes through: d log det A =
    tr(A^-1 dA). The product is exactly 1 where det A is finite and nonzero, and where
    det A over- or underflows (a well-conditioned 400 x 400 matrix) the uncancelled form
    is nan while A^-T is right; a singular A makes inv(A) raise either way."""
    if n.op.name != "multiply":
        return None
    for quotient, det in (n.inputs, n.inputs[::-1]):
        if det.op.name == "matrix_determinant" and quotient.op.name == "divide" and \
                quotient.inputs[1] is det and quotient.shape == n.shape:
            return _widened(quotient.inputs[0], n)
    return None


ALGEBRA = [multiply_by_one, multiply_by_minus_one, add_zero, subtract_zero, divide_by_one,
           double_negation, add_negation, negate_product, sum_of_equal_terms,
           constant_product, where_same_branches, sqrt_guard_never_met, identity_op,
           uniform_as_scalar, cancel_determinant]
FOLD = [fold_elementwise, fold_structural, fold_sums, fold_full_scatter]
SHAPES = [transpose_of_transpose, reshape_of_reshape, redundant_broadcast, trivial_shape_ops,
          matmul_by_identity, outer_product, order_keeping_transpose,
          transpose_through_elementwise, single_value_reshaped]
