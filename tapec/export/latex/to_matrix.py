"""IR nodes to matrix expressions: a `_print_<op>` visitor whose default is the template.

Ops with a matrix form have a method here (products, transposes, sums as products with
`\\mathbf{1}`, broadcasts as outer products and diagonals, inverses); elementwise ops are
applied to operands classified by how they broadcast, through `_apply_<op>` methods
whose default is the op's `latex` template (a function head such as `\\tanh`, a
relation such as `<`, or the template itself); any other op prints its template, or
`\\operatorname{name}` applied to its arguments when it has none.
"""
from __future__ import annotations

from ...ir.nodes import topological_order
from ...ops.sympy_rules import sympy as _sympy
from .dispatch import OpVisitor
from .matrix import (SOFTMAX, Call, Diag, Eye, Had, Num, Ones, Pow, Prod, Sym, Transposer,
                     frac, had, is_scalar, layout_of, neg, prod, sum_of, trivial)
from .names import operator_name
from .scalar import literal_value
from .templates import call_head, formats, relation_symbol

_SHAPE_ONLY = ("reshape", "transpose", "broadcast_to")


class MatrixConverter(OpVisitor):
    """Converts the printable graph, inputs first, into `Expr` trees (one per root).

    A `_print_<op>(node, layout)` method returning None declines: the node then prints
    generically. `names` maps leaf keys to display names."""

    def __init__(self, names):
        self.names = names
        self.tr = Transposer()
        self._memo, self._uses = {}, {}

    def roots(self, roots):
        """The expression of each root."""
        self._count_uses(roots)
        for n in topological_order(roots):      # inputs first: no deep recursion
            self.convert(n)
        return [self.convert(r) for r in roots]

    @classmethod
    def transparent(cls, op) -> bool:
        """Whether `op` prints as its argument (identity, cast, ...)."""
        return getattr(cls, cls.prefix + op.name, None) is cls._through

    def _count_uses(self, roots):
        """How often each IR node is used, seen through shape-only ops (a value reshaped
        twice is used twice)."""
        uses = self._uses
        for root in roots:
            uses[id(root)] = uses.get(id(root), 0) + 1
        for n in topological_order(roots):
            for i in {id(i) for i in n.inputs}:
                uses[i] = uses.get(i, 0) + 1
        for n in reversed(topological_order(roots)):
            if (n.op.name in _SHAPE_ONLY or self.transparent(n.op)) and \
                    uses.get(id(n), 0) > 1 and n.inputs:
                uses[id(n.inputs[0])] = max(uses.get(id(n.inputs[0]), 0), uses[id(n)])

    def convert(self, n):
        """The expression of node `n`, oriented as its shape is, marked when shared."""
        found = self._memo.get(id(n))
        if found is not None:
            return found[1]
        layout = layout_of(n.shape)
        e = self.visit(n, layout)
        if e is None:
            e = self.generic(n, layout)
        if e.layout[0] in "cr" and layout[0] in "cr" and e.layout[0] != layout[0]:
            e = self.tr(e)
        if self._uses.get(id(n), 0) > 1 and not trivial(e):
            e.shared = True
        self._memo[id(n)] = (n, e)
        return e

    def orient(self, e, layout):
        """`e` as a column or a row, whichever `layout` is (vectors only)."""
        if e.layout[0] in "cr" and layout[0] in "cr" and e.layout[0] != layout[0]:
            return self.tr(e)
        return e

    # --- leaves and ops that print as their argument --------------------------------------
    def default(self, n, layout):
        return self._elementwise(n, layout) if n.op.sympy is not None else None

    def _print_placeholder(self, n, layout):
        return Sym(self.names[n.attrs["leaf"]], layout)

    def _print_constant(self, n, layout):
        return Num(literal_value(n))

    def _print_fill(self, n, layout):
        return self._fill(literal_value(n), layout)

    def _through(self, n, layout):
        return self.convert(n.inputs[0])

    _print_identity = _print_stop_gradient = _print_read_variable = _through
    _print_cast = _print_guard = _through

    def _print_eye(self, n, layout):
        return Eye(layout) if n.attrs["n"] == n.attrs["m"] else None

    def _fill(self, value, layout):
        """A constant array: 0, c 1, c 1 1^T (1 a vector of ones)."""
        if layout[0] == "s" or value == 0:
            return Num(value, layout)
        if layout[0] == "m":
            return prod([Num(value), Ones(("c", layout[1])), Ones(("r", layout[2]))])
        return prod([Num(value), Ones(layout)])

    # --- shape ops: transparent when they only add or remove size-1 axes -------------------
    def _print_reshape(self, n, layout):
        x = n.inputs[0]
        if layout_of(x.shape)[0] != "t" and [s for s in x.shape if s != 1] == \
                [s for s in n.shape if s != 1]:
            return self.orient(self.convert(x), layout)
        return None

    def _print_transpose(self, n, layout):
        x = n.inputs[0]
        axes = [i for i, s in enumerate(x.shape) if s != 1]
        moved = [p for j, p in enumerate(n.attrs["perm"]) if n.shape[j] != 1]
        if len(axes) > 2:
            return None
        if moved == axes:
            return self.orient(self.convert(x), layout)
        return self.tr(self.convert(x))

    def _print_broadcast_to(self, n, layout):
        x = n.inputs[0]
        base = _broadcast_base(x)
        value = literal_value(base)
        if value is not None:
            return self._fill(value, layout)
        kind, e = self._operand(x, n.shape)
        if kind == "F":
            return self.orient(e, layout)
        if kind == "S":
            return self._broadcast(e, layout)
        if kind in "RC":
            return _explicit(kind, e, layout)
        return None

    def _print_sum_to(self, n, layout):
        x = n.inputs[0]
        lead = len(x.shape) - len(n.shape)
        summed = [i for i, s in enumerate(x.shape)
                  if s != 1 and (i < lead or n.shape[i - lead] == 1)]
        return self._summed(self.convert(x), x.shape, summed, layout)

    def _print_reduce_sum(self, n, layout):
        x = n.inputs[0]
        if x.op.name == "matrix_diag_part" and len(x.shape) == 1 and layout[0] == "s":
            return Call(r"\operatorname{tr}", [self.convert(x.inputs[0])], "paren", layout,
                        False)
        summed = [a for a in n.attrs["axis"] if x.shape[a] != 1]
        return self._summed(self.convert(x), x.shape, summed, layout)

    def _summed(self, e, shape, summed, layout):
        """Sums as products with \\mathbf{1}: 1^T x, x 1 (a row), 1^T X, X 1, 1^T X 1."""
        if not summed:
            return self.orient(e, layout)
        axes = [i for i, s in enumerate(shape) if s != 1]
        kind = e.layout[0]
        if kind == "c" and isinstance(e, Had) and not e.shared and len(e.factors) == 2:
            result = prod([self.tr(e.factors[0]), e.factors[1]])       # 1^T (a o x) = a^T x
        elif kind == "c":
            result = prod([Ones(("r", e.layout[1])), e])
        elif kind == "r":
            result = prod([e, Ones(("c", e.layout[1]))])
        elif kind == "m":
            m, k = e.layout[1], e.layout[2]
            if len(summed) == 2:
                result = prod([Ones(("r", m)), e, Ones(("c", k))])
            elif summed == [axes[1]]:
                result = prod([e, Ones(("c", k))])
            else:
                result = prod([Ones(("r", m)), e])
        else:
            return None
        return self.orient(result, layout)

    # --- linear algebra --------------------------------------------------------------------
    def _print_matmul(self, n, layout):
        a, b = n.inputs
        if any(s != 1 for s in a.shape[:-2] + b.shape[:-2]):
            return None                     # a batch of products: printed generically
        return prod([self.convert(a), self.convert(b)])

    def _print_diag_seed(self, n, layout):
        value = _uniform(n.inputs[0])
        if value is not None:               # the jacobian seed: c I
            return prod([Num(value), Eye(layout)])
        if layout[0] != "m":
            return None
        return self._diag(self.convert(n.inputs[0]), layout)

    def _print_matrix_diag(self, n, layout):
        return self._diag(self.convert(n.inputs[0]), layout) if layout[0] == "m" else None

    def _print_matrix_inverse(self, n, layout):
        return Pow(self.convert(n.inputs[0]), "-1", "inverse", layout) \
            if layout[0] in "ms" else None

    def _print_matrix_solve(self, n, layout):
        a, b = n.inputs
        if layout_of(a.shape)[0] not in "ms" or any(s != 1 for s in b.shape[:-2]):
            return None
        return prod([Pow(self.convert(a), "-1", "inverse", layout_of(a.shape)),
                     self.convert(b)])

    def _diag(self, v, layout):
        """diag(v), with v printed as a column; diag(c 1) is c I."""
        if isinstance(v, Ones):
            return Eye(layout)
        if isinstance(v, Num):
            return prod([Num(v.value), Eye(layout)])
        if isinstance(v, Prod):
            arrays = [f for f in v.factors if not is_scalar(f)]
            if len(arrays) == 1 and isinstance(arrays[0], Ones):
                return prod([f for f in v.factors if is_scalar(f)] + [Eye(layout)])
        if is_scalar(v):
            return prod([v, Eye(layout)])
        return Diag(self.orient(v, ("c", v.layout[1])) if v.layout[0] == "r" else v, layout)

    # --- elementwise ops ---------------------------------------------------------------------
    def _operand(self, n, out_shape):
        """How an operand of an elementwise op broadcasts against the output: "S" a
        scalar, "F" full size, "R" varies down the rows only (a column), "C" along the
        columns only (a row), "X" otherwise; with its expression."""
        base = _broadcast_base(n)
        value = _uniform(base)
        if value is not None:
            return "S", Num(value)
        e = self.convert(base)
        rank = len(out_shape)
        padded = (1,) * (rank - len(base.shape)) + tuple(base.shape)
        covered = [i for i in range(rank) if padded[i] != 1]
        wide = [i for i in range(rank) if out_shape[i] != 1]
        out = layout_of(out_shape)
        if not covered:
            return "S", e
        if covered == wide:
            return "F", self.orient(e, out)
        if out[0] == "m" and covered == [wide[0]]:
            return "R", self.orient(e, ("c", out[1]))
        if out[0] == "m" and covered == [wide[1]]:
            return "C", self.orient(e, ("r", out[2]))
        return "X", e

    def _elementwise(self, n, layout):
        operands = [self._operand(i, n.shape) for i in n.inputs]
        if layout[0] != "s" and all(k == "S" for k, _ in operands):
            # Only scalars, broadcast to an array: the scalar, times ones.
            return self._broadcast(self._apply(n.op, operands, ("s",)), layout)
        return self._apply(n.op, operands, layout)

    # Comparisons and `where` have no SymPy facet, yet broadcast like any elementwise op.
    _print_less = _print_less_equal = _print_greater = _elementwise
    _print_greater_equal = _print_equal = _print_not_equal = _elementwise

    def _print_where(self, n, layout):
        """where(c, a, b): the branch a constant condition picks; where(|l| < inf, l, 0),
        the stable shift of a logsumexp, is l (it differs only where l is infinite);
        else cases, elementwise."""
        condition, a, b = n.inputs
        value = _uniform(condition)
        if value is not None:
            return self.orient(self.convert(a if value else b), layout)
        if _finite_guard(n) is not None:
            return self.orient(self.convert(a), layout)
        return self._elementwise(n, layout)

    def _broadcast(self, e, layout):
        """A scalar expression as an array of `layout`: c 1, c 1 1^T."""
        if isinstance(e, Num):
            return self._fill(e.value, layout)
        if layout[0] in "cr":
            return prod([e, Ones(layout)])
        if layout[0] == "m":
            return prod([e, Ones(("c", layout[1])), Ones(("r", layout[2]))])
        return e

    def _apply(self, op, operands, layout):
        """An elementwise op on classified operands (see `_operand`): its `_apply_<op>`
        method, else its template as a function head, a relation or itself."""
        method = getattr(self, "_apply_" + op.name, None)
        if method is not None:
            return method(operands, layout)
        full = [_explicit(k, e, layout) for k, e in operands]
        symbol = relation_symbol(op.latex, len(full))
        if symbol is not None:
            return Call(symbol, full, "relation", layout, True)
        head = call_head(op.latex, len(full))
        if head is None and op.latex and formats(op.latex, len(full)):
            return Call(op.latex, full, "template", layout, True)
        return Call(head or operator_name(op.name), full, "paren", layout, True)

    def _apply_multiply(self, operands, layout):
        (ka, a), (kb, b) = operands
        if ka == "S" or kb == "S":
            return prod([a, b] if ka == "S" else [b, a])
        if {ka, kb} == {"R", "C"}:                       # an outer product u v^T
            return prod([a, b] if ka == "R" else [b, a])
        if {ka, kb} == {"R", "F"}:                       # rows scaled: diag(u) X
            u, x = (a, b) if ka == "R" else (b, a)
            return prod([self._diag(u, ("m", layout[1], layout[1])), x])
        if {ka, kb} == {"C", "F"}:                       # columns scaled: X diag(v)
            v, x = (a, b) if ka == "C" else (b, a)
            return prod([x, self._diag(v, ("m", layout[2], layout[2]))])
        return had([_explicit(ka, a, layout), _explicit(kb, b, layout)], layout)

    def _apply_add(self, operands, layout):
        a, b = (_explicit(k, e, layout) for k, e in operands)
        return sum_of([(1, a), (1, b)], layout)

    def _apply_subtract(self, operands, layout):
        a, b = (_explicit(k, e, layout) for k, e in operands)
        return sum_of([(1, a), (-1, b)], layout)

    def _apply_negative(self, operands, layout):
        return neg(operands[0][1])

    def _apply_divide(self, operands, layout):
        (ka, a), (kb, b) = operands
        if isinstance(b, Num) and kb == "S" and b.value != 0:
            return prod([Num(1 / b.value), _explicit(ka, a, layout)])
        if (ka, kb) == ("F", "R"):                  # rows divided: diag(u)^{-1} X
            inverse = self._diag(b, ("m", layout[1], layout[1]))
            return prod([Pow(inverse, "-1", "inverse", inverse.layout), a])
        if (ka, kb) == ("F", "C"):                  # columns divided: X diag(v)^{-1}
            inverse = self._diag(b, ("m", layout[2], layout[2]))
            return prod([a, Pow(inverse, "-1", "inverse", inverse.layout)])
        return frac(_explicit(ka, a, layout), _explicit(kb, b, layout), layout)

    def _apply_square(self, operands, layout):
        return Pow(operands[0][1], "2", _power_kind(layout), layout)

    def _apply_pow(self, operands, layout):
        (ka, base), (_, exponent) = operands
        if isinstance(exponent, Num) and exponent.value == _sympy().Rational(1, 2):
            return _norm(base) or Call(None, [base], "sqrt", layout, True)
        return Pow(_explicit(ka, base, layout), exponent, _power_kind(layout), layout)

    def _apply_sqrt(self, operands, layout):
        return _norm(operands[0][1]) or Call(None, [operands[0][1]], "sqrt", layout, True)

    def _apply_abs(self, operands, layout):
        return Call(None, [operands[0][1]], "abs", layout, True)

    # --- named functions: softmax, logsumexp, trace -------------------------------------------
    def _print_exp(self, n, layout):
        """exp(z - logsumexp(z)) is softmax(z) (the stable form, or a user's)."""
        z = _softmax_argument(n)
        if z is None:
            return self._elementwise(n, layout)
        x, axis = z
        return self._softmax(x, axis, layout)

    def _print_divide(self, n, layout):
        """e / sum(e) along the axis of a softmax or of an exp: softmax (1^T softmax = 1)."""
        e, total = n.inputs
        axis = _normalizer_axis(e, total)
        z = _softmax_argument(e)
        if axis is not None and z is not None and z[1] == axis:
            return self.convert(e)
        if axis is not None and e.op.name == "exp":
            return self._softmax(e.inputs[0], axis, layout)
        return self._elementwise(n, layout)

    def _print_softmax(self, n, layout):
        return self._softmax(n.inputs[0], n.attrs["axis"][0] % len(n.shape), layout)

    def _softmax(self, x, axis, layout):
        head = SOFTMAX + _along(x.shape, (axis,))
        return Call(head, [self.convert(x)], "paren", layout, False)

    def _print_reduce_logsumexp(self, n, layout):
        x = n.inputs[0]
        axes = tuple(a % len(x.shape) for a in n.attrs["axis"])
        mark = _along(x.shape, axes)
        if not mark:
            return None                     # the whole array: the template
        return Call(r"\operatorname{logsumexp}" + mark, [self.convert(x)], "paren",
                    layout, False)

    # --- anything else -----------------------------------------------------------------------
    def generic(self, n, layout):
        """An op without a matrix form: its LaTeX template, else its name applied. The
        template `\\operatorname{name}\\left(...\\right)` of an op without a notation of
        its own is that call."""
        args = [self.convert(i) for i in n.inputs]
        template, own = n.op.latex, operator_name(n.op.name)
        if template and formats(template, len(args)) and \
                call_head(template, len(args)) != own:
            return Call(template, args, "template", layout, False)
        return Call(own, args, "paren", layout, False)


def _norm(e):
    """||x|| when `e` is x^T x, else None."""
    if isinstance(e, Prod) and not e.shared and len(e.factors) == 2 and \
            is_scalar(e) and all(isinstance(f, Sym) for f in e.factors):
        a, b = e.factors
        if a.text == b.text and a.transposed != b.transposed:
            return Call(None, [b if not b.transposed else a], "norm", ("s",), False)
    return None


def _along(shape, axes):
    """The subscript marking a reduction of a matrix along its rows or columns ("" for
    the whole array): each row is one value, \\text{row}."""
    wide = [i for i, s in enumerate(shape) if s != 1]
    reduced = [a for a in axes if shape[a] != 1]
    if len(wide) != 2 or len(reduced) != 1:
        return ""
    return r"_{\text{row}}" if reduced[0] == wide[1] else r"_{\text{column}}"


def _finite_guard(n):
    """l when `n` is where(|l| < inf, l, 0), the shift logsumexp's gradient uses (or
    where(True, l, ...), that shift once its condition was computed)."""
    if n.op.name != "where":
        return None
    condition, a, b = n.inputs
    if _uniform(condition):
        return a
    if condition.op.name != "less" or _uniform(b) != 0:
        return None
    magnitude, bound = condition.inputs
    if magnitude.op.name != "abs" or magnitude.inputs[0] is not a or \
            _uniform(bound) != _sympy().oo:
        return None
    return a


def _shape_source(n):
    """`n` through reshapes and broadcasts (what they only re-lay out)."""
    while n.op.name in ("reshape", "broadcast_to"):
        n = n.inputs[0]
    return n


def _softmax_argument(n):
    """(z, axis) when `n` is exp(z - logsumexp(z, axis)), else None."""
    if n.op.name != "exp" or n.inputs[0].op.name != "subtract":
        return None
    z, shift = n.inputs[0].inputs
    shift = _shape_source(shift)
    shift = _finite_guard(shift) or shift
    shift = _shape_source(shift)
    if shift.op.name != "reduce_logsumexp" or shift.inputs[0] is not z or \
            len(shift.attrs["axis"]) != 1:
        return None
    return z, shift.attrs["axis"][0] % len(z.shape)


def _normalizer_axis(e, total):
    """The axis when `total` is reduce_sum(e) along one axis, kept, else None."""
    total = _shape_source(total)
    if total.op.name != "reduce_sum" or total.inputs[0] is not e:
        return None
    axes = [a % len(e.shape) for a in total.attrs["axis"] if e.shape[a] != 1]
    return axes[0] if len(axes) == 1 else None


def _power_kind(layout):
    """Powers of arrays are elementwise (^{\\circ k}), of scalars plain."""
    return "power" if layout[0] != "s" else "scalar"


def _broadcast_base(n):
    while n.op.name == "broadcast_to":
        n = n.inputs[0]
    return n


def _uniform(n):
    """The value of `n` if it is one number in every element (a fill, maybe reshaped,
    transposed or broadcast), else None."""
    while n.op.name in _SHAPE_ONLY or MatrixConverter.transparent(n.op):
        n = n.inputs[0]
    return literal_value(n)


def _explicit(kind, e, layout):
    """An operand spelled out at full size where a sum needs it: u 1^T, 1 v."""
    if kind == "R":
        return prod([e, Ones(("r", layout[2]))])
    if kind == "C":
        return prod([Ones(("c", layout[1])), e])
    if kind == "S" and layout[0] != "s" and isinstance(e, Num):
        return Num(e.value, layout)
    return e
