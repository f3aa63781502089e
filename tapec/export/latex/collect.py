"""Identities across a formula's terms, applied after conversion and before layout.

The converter (`to_matrix`) rewrites one IR node at a time. Two identities need a look at
a whole sum or a whole elementwise expression:

* diagonals collected: a sum of terms c_i L diag(d_i) R that differ only in their
  diagonal factors (and numbers) is L diag(sum_i c_i d_i) R. The Hessian of a loss of
  `X w` is built as one `X^T diag(.) X` per path of the reverse pass; collected, it is
  one `X^T diag(h) X`;
* rational simplification: an elementwise cluster (sums, negations, Hadamard products,
  fractions, integer powers and numeric multiples over arrays of one shape) that
  divides by its atoms is a rational function of them, the other expressions it holds,
  each read as one symbol per printed form (`\\sigma\\left(X w\\right)` is one symbol
  wherever it occurs). SymPy's `cancel`, and `factor` after it, are kept when they
  need fewer operations: `(-y / (5 s) + (1 - y) / (5 (1 - s))) \\circ s \\circ (1 - s)` is
  `(s - y) / 5`.

Both are identities of the values (a factor cancelled from a fraction, s / s, where it
is defined). An expression neither applies to keeps its identity, and so its sharing
(what the layout turns into definitions).
"""
from __future__ import annotations

import time

from ...ops.sympy_rules import sympy as _sympy
from .layout import Layout
from .matrix import (Call, Diag, Frac, Had, Neg, Num, Pow, Prod, Sum, frac, had, is_scalar,
                     neg, prod, sum_of)

MAX_CLUSTER_OPS = 60        # larger elementwise clusters are left as they are ...
MAX_CLUSTER_ATOMS = 12
MAX_CLUSTER_NODES = 4 * MAX_CLUSTER_OPS
SECONDS = 2.0               # ... and all clusters of one formula share this much time
MAX_DEPTH = 200             # expressions deeper than this are left as they are below it


def collected(roots, names, run):
    """`roots` (matrix expressions) with the identities above applied. `run(fn, arg,
    seconds)` runs a SymPy step under a time bound (`scalar.bounded`)."""
    return _Collector(names, run).roots(roots)


class _Collector:
    def __init__(self, names, run):
        self.printer = Layout(names)
        self.run = run
        self.deadline = time.monotonic() + SECONDS
        self._memo = {}

    def roots(self, roots):
        return [self.rebuild(r) for r in roots]

    def text(self, e):
        """How `e` prints: the key that makes two copies of one expression one atom."""
        return self.printer.text(e), e.layout

    def rebuild(self, e, depth=0):
        """`e` with the identities applied below and at it (memoized: a shared piece is
        rebuilt once, and stays shared)."""
        found = self._memo.get(id(e))
        if found is not None:
            return found[1]
        if depth > MAX_DEPTH:
            return e
        result = None
        if isinstance(e, Sum):
            merged = self._diagonals(e)
            if merged is not None:
                result = self.rebuild(merged, depth + 1)
        if result is None and _elementwise(e):
            result = self._cluster(e, depth)
        if result is None:
            result = _with_children(e, [self.rebuild(c, depth + 1) for c in _children(e)])
        self._memo[id(e)] = (e, result)
        return result

    # --- diagonals ---------------------------------------------------------------------------
    def _diagonals(self, e):
        """L diag(sum_i c_i d_i) R for the sum `e` of c_i L diag(d_i) R, else None."""
        if len(e.terms) < 2 or e.layout[0] != "m":
            return None
        parts, ends = [], None
        for sign, t in e.terms:
            c, factors = _flat_factors(t)
            diagonal = [k for k, f in enumerate(factors) if isinstance(f, Diag)]
            if not diagonal or diagonal[-1] - diagonal[0] + 1 != len(diagonal):
                return None
            left, right = factors[:diagonal[0]], factors[diagonal[-1] + 1:]
            key = ([self.text(f) for f in left], [self.text(f) for f in right])
            if ends is None:
                ends = (key, left, right, factors[diagonal[0]].layout)
            elif ends[0] != key or ends[3] != factors[diagonal[0]].layout:
                return None
            parts.append((sign, c, [factors[k].v for k in diagonal]))
        _, left, right, layout = ends
        column = parts[0][2][0].layout
        v = sum_of([(sign, prod([Num(c), had(vs, column)])) for sign, c, vs in parts], column)
        return prod(left + [Diag(v, layout)] + right)

    # --- elementwise clusters -----------------------------------------------------------------
    def _cluster(self, e, depth):
        """The elementwise cluster rooted at `e`, its atoms rebuilt, in its simplest
        rational form when that needs fewer operations."""
        structural = {}
        rebuilt = self._atoms_rebuilt(e, depth, structural)
        sp = _sympy()
        atoms, symbols = {}, {}
        try:
            expr = self._sympy_of(rebuilt, atoms, symbols, [MAX_CLUSTER_NODES])
        except _TooLarge:
            return rebuilt
        left = self.deadline - time.monotonic()
        if left <= 0 or not _has_fraction(expr) or sp.count_ops(expr) > MAX_CLUSTER_OPS:
            return rebuilt
        candidate = self.run(_rational_form, expr, left)
        if candidate is None or _size(candidate) >= _size(expr):
            return rebuilt
        try:
            return _Builder(atoms, rebuilt.layout).expr(candidate)
        except _Unprintable:
            return rebuilt

    def _atoms_rebuilt(self, e, depth, structural):
        """The cluster `e` with each atom (what is not elementwise) rebuilt."""
        found = structural.get(id(e))
        if found is not None:
            return found[1]
        if depth > MAX_DEPTH:
            return e
        if _elementwise(e):
            kids = [self._atoms_rebuilt(c, depth + 1, structural) for c in _children(e)]
            result = _with_children(e, kids)
        else:
            result = self.rebuild(e, depth + 1)
        structural[id(e)] = (e, result)
        return result

    def _sympy_of(self, e, atoms, symbols, budget):
        """The SymPy form of cluster `e`; atoms become symbols a0, a1, ... (`atoms` maps
        them back). `budget` ([nodes left]) bounds the work: _TooLarge past it."""
        sp = _sympy()
        budget[0] -= 1
        if budget[0] < 0:
            raise _TooLarge
        if isinstance(e, Num):
            return sp.sympify(e.value)
        if _elementwise(e):
            def of(x):
                return self._sympy_of(x, atoms, symbols, budget)
            if isinstance(e, Sum):
                return sp.Add(*[s * of(t) for s, t in e.terms])
            if isinstance(e, Neg):
                return -of(e.x)
            if isinstance(e, (Had, Prod)):
                return sp.Mul(*[of(f) for f in e.factors])
            if isinstance(e, Frac):
                return of(e.num) / of(e.den)
            return of(e.base) ** _exponent(e)
        key = self.text(e)
        symbol = symbols.get(key)
        if symbol is None:
            if len(symbols) >= MAX_CLUSTER_ATOMS:
                raise _TooLarge
            symbol = symbols[key] = sp.Symbol(f"a{len(symbols)}")
            atoms[symbol] = e
        return symbol


class _TooLarge(Exception):
    """A cluster with more nodes or atoms than simplification takes on."""


class _Unprintable(Exception):
    """A SymPy form without a matrix expression here (a function SymPy introduced)."""


def _has_fraction(expr):
    """Whether `expr` divides by an expression of its atoms (what `cancel` may shorten;
    polynomials in the atoms are left as the reverse pass built them)."""
    sp = _sympy()
    return any(isinstance(p, sp.Pow) and p.exp.is_negative and p.base.free_symbols
               for p in sp.preorder_traversal(expr))


def _rational_form(expr):
    """The shorter of `factor(cancel(expr))` and `cancel(expr)` (factored on a tie)."""
    sp = _sympy()
    cancelled = sp.cancel(expr)
    return min((sp.factor(cancelled), cancelled), key=_size)


def _size(expr):
    return _sympy().count_ops(expr), len(str(expr))


class _Builder:
    """A SymPy expression over a cluster's atoms back to a matrix expression of the
    cluster's layout (numbers and scalar atoms scale, arrays multiply elementwise)."""

    def __init__(self, atoms, layout):
        self.atoms, self.layout = atoms, layout

    def layout_of(self, x):
        arrays = any(not is_scalar(self.atoms[s]) for s in x.free_symbols)
        return self.layout if arrays else ("s",)

    def expr(self, x):
        sp = _sympy()
        if x.is_Symbol:
            return self.atoms[x]
        if x.is_Number:
            return Num(x)
        layout = self.layout_of(x)
        if x.is_Add:
            terms = []
            # Positive terms first: s - y, not -y + s.
            ordered = sorted(x.as_ordered_terms(), key=lambda t: t.could_extract_minus_sign())
            for t in ordered:
                sign = -1 if t.could_extract_minus_sign() else 1
                part = self.expr(-t if sign < 0 else t)
                terms.append((sign, Num(part.value, layout) if isinstance(part, Num) and
                              layout[0] != "s" else part))
            return sum_of(terms, layout)
        if x.is_Mul or x.is_Pow:
            num, den = sp.fraction(x)
            if den != 1:
                return frac(self.expr(num), self.expr(den), layout)
            if x.is_Pow:
                base, k = x.args
                if k == sp.Rational(1, 2):
                    return Call(None, [self.expr(base)], "sqrt", layout, True)
                kind = "power" if layout[0] != "s" else "scalar"
                return Pow(self.expr(base), str(k) if k.is_Integer else Num(k), kind, layout)
            coefficient, factors = x.as_coeff_mul()
            flip = next((k for k, f in enumerate(factors) if f.is_Add), None)
            if coefficient < 0 and flip is not None:     # -s (s - 1) is s (1 - s)
                coefficient = -coefficient
                factors = [-f if k == flip else f for k, f in enumerate(factors)]
            parts = [self.expr(f) for f in factors]
            arrays = [p for p in parts if not is_scalar(p)]
            scalars = [p for p in parts if is_scalar(p)]
            return prod([Num(coefficient)] + scalars + ([had(arrays, layout)] if arrays else []))
        raise _Unprintable(type(x).__name__)


def _elementwise(e):
    """Whether `e` combines its children elementwise (a node of a cluster)."""
    if isinstance(e, (Sum, Neg, Had, Frac)):
        return True
    if isinstance(e, Prod):
        return sum(1 for f in e.factors if not is_scalar(f)) <= 1
    if isinstance(e, Pow):
        return e.kind in ("power", "scalar") and _exponent(e) is not None
    return False


def _exponent(e):
    """The integer exponent of a power, else None."""
    k = e.exponent.value if isinstance(e.exponent, Num) else e.exponent
    try:
        k = _sympy().sympify(k)
    except (TypeError, ValueError, AttributeError):
        return None
    return k if getattr(k, "is_Integer", False) else None


def _flat_factors(t):
    """(number, factors) of a product, read through shared products and signs."""
    if isinstance(t, Neg):
        c, factors = _flat_factors(t.x)
        return -c, factors
    if isinstance(t, Prod):
        c, factors = _sympy().Integer(1), []
        for f in t.factors:
            k, more = _flat_factors(f)
            c, factors = c * k, factors + more
        return c, factors
    if isinstance(t, Num) and is_scalar(t):
        return t.value, []
    return _sympy().Integer(1), [t]


def _children(e):
    return e.children()


def _with_children(e, kids):
    """`e` itself when `kids` are its children, else `e` rebuilt on `kids` (keeping
    whether it is shared)."""
    old = _children(e)
    if all(k is o for k, o in zip(kids, old)):
        return e
    if isinstance(e, Sum):
        result = sum_of([(s, k) for (s, _), k in zip(e.terms, kids)], e.layout)
    elif isinstance(e, Neg):
        result = neg(kids[0])
    elif isinstance(e, Prod):
        result = prod(kids)
    elif isinstance(e, Had):
        result = had(kids, e.layout)
    elif isinstance(e, Frac):
        result = frac(kids[0], kids[1], e.layout)
    elif isinstance(e, Pow):
        result = Pow(kids[0], kids[1] if len(kids) > 1 else e.exponent, e.kind, e.layout)
    elif isinstance(e, Call):
        result = Call(e.head, kids, e.style, e.layout, e.elementwise)
    elif isinstance(e, Diag):
        result = _diag(kids[0], e.layout)
    else:
        return e
    if not any(result is k for k in kids):
        result.shared = e.shared
    return result


def _diag(v, layout):
    """diag(v), with a numeric factor of v outside: diag(c u) = c diag(u)."""
    if isinstance(v, Neg):
        return neg(_diag(v.x, layout))
    if isinstance(v, Prod) and isinstance(v.factors[0], Num) and len(v.factors) == 2 and \
            not v.shared:
        return prod([v.factors[0], Diag(v.factors[1], layout)])
    return Diag(v, layout)
