"""Matrix expressions: a small IR for matrix notation, its layouts, and transposition.

Layouts: ("s",) a scalar (every axis of size 1); ("c", n) a column and ("r", n) a row
vector; ("m", m, n) a matrix; ("t", shape) anything with more than two axes larger than
1. Size-1 axes are ignored; a tensor with one axis larger than 1 is a row when that is
its last axis of a rank >= 2 shape, else a column (1-D vectors are columns).

Nodes (`Expr` subclasses) are built through the smart constructors `prod`, `sum_of`,
`frac`, `had`, `neg`, which flatten and fold numbers and signs; `Transposer` pushes a
transpose down to the leaves.
"""
from __future__ import annotations

from ...ops.sympy_rules import sympy as _sympy
from .dispatch import Visitor


def layout_of(shape):
    """The layout of an array of `shape`."""
    shape = tuple(shape)
    axes = [i for i, s in enumerate(shape) if s != 1]
    if not axes:
        return ("s",)
    if len(axes) == 1:
        n = shape[axes[0]]
        return ("r", n) if len(shape) >= 2 and axes[0] == len(shape) - 1 else ("c", n)
    if len(axes) == 2:
        return ("m", shape[axes[0]], shape[axes[1]])
    return ("t", shape)


def transposed_layout(layout):
    """The layout of the transpose: a column becomes a row, an m x n matrix n x m."""
    kind = layout[0]
    if kind == "c":
        return ("r", layout[1])
    if kind == "r":
        return ("c", layout[1])
    if kind == "m":
        return ("m", layout[2], layout[1])
    return layout


def rows_cols(layout):
    """(rows, columns) of a scalar, vector or matrix layout; (None, None) otherwise."""
    kind = layout[0]
    if kind == "s":
        return 1, 1
    if kind == "c":
        return layout[1], 1
    if kind == "r":
        return 1, layout[1]
    if kind == "m":
        return layout[1], layout[2]
    return None, None


def layout_from(rows, cols):
    """The layout of a rows x cols array."""
    if rows == 1 and cols == 1:
        return ("s",)
    if rows == 1:
        return ("r", cols)
    if cols == 1:
        return ("c", rows)
    return ("m", rows, cols)


class Expr:
    """A node of a matrix expression. `layout` as above; `shared`: the IR node it came
    from is used more than once, so it may become a named definition (a transpose of it
    then stays `t^{T}` rather than being pushed inside)."""
    __slots__ = ("layout", "shared")

    def __init__(self, layout):
        self.layout, self.shared = layout, False

    def children(self):
        return ()


class Sym(Expr):
    """A leaf's display name, maybe transposed."""
    __slots__ = ("text", "transposed")

    def __init__(self, text, layout, transposed=False):
        super().__init__(layout)
        self.text, self.transposed = text, transposed


class Num(Expr):
    """A number; with a non-scalar layout, the same number in every element."""
    __slots__ = ("value",)

    def __init__(self, value, layout=("s",)):
        super().__init__(layout)
        self.value = value


class Ones(Expr):
    """\\mathbf{1}, a vector of ones (a row when its layout is a row)."""
    __slots__ = ()


class Eye(Expr):
    """I, the identity matrix."""
    __slots__ = ()


class Sum(Expr):
    """A sum of signed terms."""
    __slots__ = ("terms",)          # [(sign, expr)], sign +1 or -1

    def __init__(self, terms, layout):
        super().__init__(layout)
        self.terms = terms

    def children(self):
        return tuple(t for _, t in self.terms)


class Neg(Expr):
    """-x."""
    __slots__ = ("x",)

    def __init__(self, x):
        super().__init__(x.layout)
        self.x = x

    def children(self):
        return (self.x,)


class Factors(Expr):
    """A product of `factors`; which product is the subclass."""
    __slots__ = ("factors",)

    def __init__(self, factors, layout):
        super().__init__(layout)
        self.factors = factors

    def children(self):
        return tuple(self.factors)


class Prod(Factors):
    """Juxtaposition: matrix products, scalar factors (a number first), outer products."""
    __slots__ = ()


class Had(Factors):
    """The Hadamard (elementwise) product."""
    __slots__ = ()


class Frac(Expr):
    """num / den, elementwise for arrays."""
    __slots__ = ("num", "den")

    def __init__(self, num, den, layout):
        super().__init__(layout)
        self.num, self.den = num, den

    def children(self):
        return (self.num, self.den)


class Pow(Expr):
    """A postfix superscript: `kind` "power" (elementwise on arrays: ^{\\circ k}),
    "scalar" (^{k}), "inverse" (^{-1}) or "T" (a transpose kept as such)."""
    __slots__ = ("base", "exponent", "kind")

    def __init__(self, base, exponent, kind, layout):
        super().__init__(layout)
        self.base, self.exponent, self.kind = base, exponent, kind

    def children(self):
        return (self.base,) if not isinstance(self.exponent, Expr) else \
            (self.base, self.exponent)


class Call(Expr):
    """A function applied to arguments. `style`: "paren" (\\tanh\\left(x\\right)),
    "sqrt", "abs", "relation" (a < b), "template" (an op's LaTeX template). Elementwise
    calls commute with transposition; others are transposed as a whole."""
    __slots__ = ("head", "args", "style", "elementwise")

    def __init__(self, head, args, style, layout, elementwise):
        super().__init__(layout)
        self.head, self.args, self.style, self.elementwise = head, list(args), style, \
            elementwise

    def children(self):
        return tuple(self.args)


class Diag(Expr):
    """diag(v), the matrix with the vector v on its diagonal."""
    __slots__ = ("v",)

    def __init__(self, v, layout):
        super().__init__(layout)
        self.v = v

    def children(self):
        return (self.v,)


def is_scalar(e):
    """Whether `e` has one element."""
    return e.layout[0] == "s"


def trivial(e):
    """A symbol, a number, 1, I, or a transpose of one: never worth a definition."""
    while isinstance(e, Pow) and e.kind == "T":
        e = e.base
    return isinstance(e, (Sym, Num, Ones, Eye))


def has_tensor(e):
    """Whether `e` or a part of it has more than two axes larger than 1."""
    stack, seen = [e], set()
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if x.layout[0] == "t":
            return True
        stack.extend(c for c in x.children() if isinstance(c, Expr))
    return False


def is_zero(e):
    """Whether `e` is the number 0 (in every element)."""
    return isinstance(e, Num) and e.value == 0


def _prod_layout(factors):
    arrays = [f for f in factors if not is_scalar(f)]
    if not arrays:
        return ("s",)
    if any(f.layout[0] == "t" for f in arrays):
        return next(f.layout for f in arrays if f.layout[0] == "t")
    rows, _ = rows_cols(arrays[0].layout)
    _, cols = rows_cols(arrays[-1].layout)
    return layout_from(rows, cols)


def neg(x):
    """-x, with --x = x and numbers negated."""
    if isinstance(x, Neg):
        return x.x
    if isinstance(x, Num):
        return Num(-x.value, x.layout)
    return Neg(x)


def prod(factors):
    """A product, flattened: numbers folded into one leading coefficient, signs pulled
    out, ones and identities that multiply something else dropped."""
    sp = _sympy()
    layout = _prod_layout(factors)
    coefficient, flat, stack = sp.Integer(1), [], list(reversed(factors))
    while stack:
        f = stack.pop()
        if isinstance(f, Prod) and not f.shared:      # a shared piece stays one unit
            stack.extend(reversed(f.factors))
        elif isinstance(f, Neg):
            coefficient = -coefficient
            stack.append(f.x)
        elif isinstance(f, Num) and (is_scalar(f) or f.value == 0):
            coefficient *= f.value
        else:
            flat.append(f)
    if coefficient == 0:
        return Num(sp.Integer(0), layout)
    flat = _cancelled(flat)
    if any(not is_scalar(f) and not isinstance(f, Eye) for f in flat):
        flat = [f for f in flat if not isinstance(f, Eye)]     # I A = A
    elif sum(isinstance(f, Eye) for f in flat) > 1:              # I I = I
        first = next(k for k, f in enumerate(flat) if isinstance(f, Eye))
        flat = [f for k, f in enumerate(flat) if k == first or not isinstance(f, Eye)]
    merged = []
    for f in flat:                        # diag(a) diag(b) = diag(a o b)
        if merged and isinstance(f, Diag) and isinstance(merged[-1], Diag) and \
                not f.shared and not merged[-1].shared:
            merged[-1] = Diag(had([merged[-1].v, f.v], f.v.layout), f.layout)
        else:
            merged.append(f)
    flat = merged
    flat, distributed = _contracted(flat)
    if distributed:
        return prod([Num(coefficient)] + flat)
    sign, coefficient = (-1, -coefficient) if coefficient < 0 else (1, coefficient)
    if coefficient != 1 or not flat:
        flat.insert(0, Num(coefficient))
    result = flat[0] if len(flat) == 1 else Prod(flat, layout)
    if len(flat) == 1 and result.layout != layout and layout[0] != "s" and \
            isinstance(result, Num):
        result = Num(result.value, layout)
    return neg(result) if sign < 0 else result


def _cancelled(flat):
    """Scalar factors with a fraction by them cancelled: (a / d) d = a."""
    for k, f in enumerate(flat):
        if isinstance(f, Frac) and is_scalar(f.den):
            for j, g in enumerate(flat):
                if g is f.den:
                    rest = [h for i, h in enumerate(flat) if i not in (j, k)]
                    one = isinstance(f.num, Num) and f.num.value == 1
                    return _cancelled(rest + ([] if one else [f.num]))
    return flat


SOFTMAX = r"\operatorname{softmax}"


def _is_softmax(e):
    """softmax(x) of a whole vector (its entries sum to 1)."""
    return isinstance(e, Call) and e.head == SOFTMAX and e.layout[0] == "c"


def _is_softmax_row(e):
    """softmax(x)^T of a whole vector, a row."""
    return isinstance(e, Pow) and e.kind == "T" and _is_softmax(e.base)


def _contracted(flat):
    """Products with a vector of ones that are known: 1^T s = s^T 1 = 1 for a softmax s,
    diag(v) 1 = v, 1^T diag(v) = v^T; a sum times diag(v) or 1 is distributed when every
    term then contracts, (I - s 1^T) diag(s) = diag(s) - s s^T. Returns (factors,
    whether a sum was distributed)."""
    distributed, changed = False, True
    while changed and len(flat) > 1:
        changed = False
        for k in range(len(flat) - 1):
            a, b = flat[k], flat[k + 1]
            if (isinstance(a, Ones) and a.layout[0] == "r" and _is_softmax(b)) or \
                    (_is_softmax_row(a) and isinstance(b, Ones) and b.layout[0] == "c"):
                flat[k:k + 2] = []
            elif isinstance(a, Diag) and isinstance(b, Ones) and b.layout[0] == "c":
                flat[k:k + 2] = [a.v]
            elif isinstance(a, Ones) and a.layout[0] == "r" and isinstance(b, Diag):
                flat[k:k + 2] = [Transposer()(b.v)]
            elif isinstance(a, Sum) and isinstance(b, (Diag, Ones)):
                terms = [(sign, prod([t, b])) for sign, t in a.terms]
                if not all(not isinstance(t, Prod) or _contracts(t) for _, t in terms):
                    continue
                flat[k:k + 2] = [sum_of(terms, _prod_layout([a, b]))]
                distributed = True
            else:
                continue
            changed = True
            break
    return flat, distributed


def _contracts(p):
    """Whether product `p` ends in a plain vector or diag (no ones left to sum)."""
    return not any(isinstance(f, Ones) for f in p.factors[1:]) or \
        (isinstance(p.factors[-1], Ones) and p.factors[-1].layout[0] == "r")


def sum_of(terms, layout):
    """A sum of [(sign, expr)], flattened, with zeros dropped and negative numbers
    subtracted (a - 2, not a + (-2))."""
    flat, stack = [], [(sign, t) for sign, t in reversed(terms)]
    while stack:
        sign, t = stack.pop()
        if isinstance(t, Sum) and not t.shared:
            stack.extend((sign * s, u) for s, u in reversed(t.terms))
        elif isinstance(t, Neg):
            stack.append((-sign, t.x))
        elif isinstance(t, Num) and t.value.is_real and t.value < 0:
            flat.append((-sign, Num(-t.value, t.layout)))
        elif not is_zero(t):
            flat.append((sign, t))
    kept = []
    for sign, t in flat:                  # a - a = 0, for the same expression
        opposite = next((k for k, (s, u) in enumerate(kept) if u is t and s == -sign), None)
        if opposite is None:
            kept.append((sign, t))
        else:
            kept.pop(opposite)
    flat = kept
    if not flat:
        return Num(_sympy().Integer(0), layout)
    if len(flat) == 1:
        sign, t = flat[0]
        return t if sign > 0 else neg(t)
    common = _common_right_factor(flat)
    if common is not None:                      # A^T x + A x = (A^T + A) x
        rest = [(sign, prod(t.factors[:-1])) for sign, t in flat]
        return prod([sum_of(rest, rest[0][1].layout), common])
    return Sum(flat, layout)


def _common_right_factor(terms):
    """The array every term is a product ending in (the same expression), else None."""
    if not all(isinstance(t, Prod) and not t.shared and len(t.factors) > 1 for _, t in terms):
        return None
    last = terms[0][1].factors[-1]
    if is_scalar(last) or any(t.factors[-1] is not last for _, t in terms) or \
            any(is_scalar(t.factors[-2]) for _, t in terms):
        return None
    return last


def frac(num, den, layout):
    """num / den with signs and numeric coefficients of the numerator pulled out."""
    if isinstance(den, Num) and is_scalar(den) and den.value != 0:
        return prod([Num(1 / den.value), num])
    if isinstance(num, Neg):
        return neg(frac(num.x, den, layout))
    if isinstance(num, Frac):                       # (a / b) / c = a / (b c)
        inner = num.den
        below = Pow(inner, "2", "power" if layout[0] != "s" else "scalar", inner.layout) \
            if inner is den else prod([inner, den]) if is_scalar(inner) or is_scalar(den) \
            else had([inner, den], layout)
        return frac(num.num, below, layout)
    if isinstance(num, Prod) and not num.shared and isinstance(num.factors[0], Num) \
            and len(num.factors) > 1:
        rest = num.factors[1:]
        rest = rest[0] if len(rest) == 1 else Prod(rest, num.layout)
        return prod([num.factors[0], frac(rest, den, layout)])
    if isinstance(den, Prod) and not den.shared and isinstance(den.factors[0], Num) \
            and len(den.factors) > 1 and den.factors[0].value != 0:
        rest = den.factors[1:]
        rest = rest[0] if len(rest) == 1 else Prod(rest, den.layout)
        return prod([Num(1 / den.factors[0].value), frac(num, rest, layout)])
    if isinstance(num, Num) and num.value != 1 and is_scalar(num) and num.value != 0:
        return prod([num, frac(Num(_sympy().Integer(1)), den, layout)])
    return Frac(num, den, layout)


def had(factors, layout):
    """A Hadamard product, flattened."""
    flat = []
    for f in factors:
        flat.extend(f.factors if isinstance(f, Had) and not f.shared else [f])
    return flat[0] if len(flat) == 1 else Had(flat, layout)


class Transposer(Visitor):
    """Transposes pushed down to the leaves: (AB)^T = B^T A^T, (A + B)^T = A^T + B^T,
    f(A)^T = f(A^T) for elementwise f; diag(v), I and scalars are symmetric. A shared
    expression keeps the transpose outside, so it can print as t_{k}^{T}."""

    prefix = "_transpose_"
    DEPTH = 40        # deeper than this, the transpose stays outside (no deep recursion)

    def __init__(self):
        self._memo = {}

    def __call__(self, e, depth=0):
        found = self._memo.get(id(e))
        if found is None:
            found = self._memo[id(e)] = (e, self._transposed(e, depth))
        return found[1]

    def _transposed(self, e, depth):
        if is_scalar(e) or isinstance(e, (Eye, Diag)):
            return e
        t = transposed_layout(e.layout)
        if e.shared or e.layout[0] == "t" or depth > self.DEPTH:
            return self._transpose_Expr(e, t, depth)
        return self.visit(e, t, depth + 1)

    def _transpose_Expr(self, e, t, depth):
        """Anything else keeps the transpose outside: X^{T}."""
        return Pow(e, "T", "T", t)

    def _transpose_Sym(self, e, t, depth):
        return Sym(e.text, t, not e.transposed)

    def _transpose_Num(self, e, t, depth):
        return Num(e.value, t)

    def _transpose_Ones(self, e, t, depth):
        return Ones(t)

    def _transpose_Sum(self, e, t, depth):
        return Sum([(s, self(x, depth)) for s, x in e.terms], t)

    def _transpose_Neg(self, e, t, depth):
        return Neg(self(e.x, depth))

    def _transpose_Prod(self, e, t, depth):
        return Prod([self(f, depth) for f in reversed(e.factors)], t)

    def _transpose_Had(self, e, t, depth):
        return Had([self(f, depth) for f in e.factors], t)

    def _transpose_Frac(self, e, t, depth):
        return Frac(self(e.num, depth), self(e.den, depth), t)

    def _transpose_Pow(self, e, t, depth):
        if e.kind == "T":
            return e.base
        return Pow(self(e.base, depth), e.exponent, e.kind, t)

    def _transpose_Call(self, e, t, depth):
        if not e.elementwise:
            return self._transpose_Expr(e, t, depth)
        return Call(e.head, [self(a, depth) for a in e.args], e.style, t, True)
