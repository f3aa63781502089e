"""Scalar graphs through SymPy: one expression per output, simplified under a bound.

A graph whose nodes are all 0-d, whose ops SymPy can express, and which stays small when
written out as a tree, becomes SymPy expressions (`ScalarPrinter`, a `_print_<op>`
visitor whose default is the op's `sympy` facet), printed by `sympy.latex`. Numbers come
out exact where the user most likely wrote them so (`number`). `sympy.simplify` runs in a
worker thread that is stopped at its time budget (`bounded`).
"""
from __future__ import annotations

import re
import threading
import time
from fractions import Fraction

import numpy as np

from ...ir.nodes import topological_order
from ...ops.shape import CONSTANT, FILL
from ...ops.sympy_rules import sympy as _sympy
from .dispatch import OpVisitor
from .layout import LINE_LIMIT, MAX_DEFINITIONS, MIN_DEFINITION
from .named import with_named_functions
from .names import temporary_names
from .width import rendered_width

SIMPLIFY_SECONDS = 2.0     # sympy.simplify runs at most this long in all ...
SIMPLIFY_MAX_OPS = 60      # ... and only on expressions at most this large
MAX_SCALAR_TREE = 2000     # larger or deeper scalar graphs print in matrix notation (with
MAX_SCALAR_DEPTH = 60      # sharing, and no recursion as deep as SymPy's printer needs)


def number(value, dtype):
    """An exact SymPy number for a literal, as the user most likely wrote it: integers
    stay integers, a float that is a fraction with a small denominator in its own dtype
    is that fraction (0.5 -> 1/2, float32 0.1 -> 1/10, a folded 2/3 -> 2/3), others
    are floats."""
    sp = _sympy()
    if isinstance(value, (bool, np.bool_)):
        return sp.Integer(int(value))
    if isinstance(value, (int, np.integer)):
        return sp.Integer(int(value))
    if isinstance(value, (complex, np.complexfloating)):
        return number(value.real, dtype) + sp.I * number(value.imag, dtype)
    value = float(value)
    if not np.isfinite(value):
        return sp.nan if np.isnan(value) else (sp.oo if value > 0 else -sp.oo)
    if value.is_integer():
        return sp.Integer(int(value))
    kind = np.dtype(dtype) if np.dtype(dtype).kind == "f" else np.dtype("f8")
    fraction = Fraction(value).limit_denominator(10_000)
    exact = np.asarray(fraction.numerator / fraction.denominator, dtype=kind)
    if exact == np.asarray(value, dtype=kind):
        return sp.Rational(fraction.numerator, fraction.denominator)
    return sp.Float(value, 15)


def literal_value(n):
    """The value of a constant or uniform fill node, else None."""
    if n.op is CONSTANT or n.op is FILL:
        return number(n.attrs["value"], n.dtype)
    return None


def scalar_graph(roots) -> bool:
    """Whether every node is 0-d, every op has a SymPy form, and the graph written out as
    a tree (a SymPy expression repeats what the graph shares) stays small."""
    sizes, depths = {}, {}
    for n in topological_order(roots):
        sizes[id(n)] = 1 + sum(sizes[id(i)] for i in n.inputs)
        depths[id(n)] = 1 + max((depths[id(i)] for i in n.inputs), default=0)
        if n.shape != () or sizes[id(n)] > MAX_SCALAR_TREE or \
                depths[id(n)] > MAX_SCALAR_DEPTH:
            return False
        if not ScalarPrinter.prints(n.op):
            return False
    return True


class _OutOfTime(BaseException):
    """Raised inside an overrunning simplification to stop it. A BaseException, so the
    `except Exception` clauses inside SymPy do not swallow it."""


_STOP_SECONDS = 5.0    # how long to wait for a stopped worker to unwind


def bounded(fn, arg, seconds):
    """fn(arg), or None if it raises or takes longer than `seconds`.

    It runs in a worker thread; on overrun the worker is stopped by raising `_OutOfTime`
    in it (CPython's `PyThreadState_SetAsyncExc`, delivered at its next bytecode), so no
    simplification keeps running, holding the GIL, after export returned."""
    result = []

    def run():
        try:
            result.append(fn(arg))
        except (_OutOfTime, Exception):   # noqa: BLE001  (stopped or failed: keep the original)
            pass

    worker = threading.Thread(target=run, daemon=True, name="tapec-latex-simplify")
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        _interrupt(worker)
        worker.join(_STOP_SECONDS)
    return result[0] if result else None


def _interrupt(worker):
    """Raise `_OutOfTime` in `worker` (a no-op where the C-API is not CPython's)."""
    try:
        import ctypes
        set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
    except (ImportError, AttributeError):
        return
    set_async_exc.argtypes = (ctypes.c_ulong, ctypes.py_object)
    set_async_exc(worker.ident, _OutOfTime)


def _relation(name):
    """A visitor method printing a comparison as SymPy's relation class `name` (Lt, ...)."""
    def print_relation(self, n, args):
        return getattr(_sympy(), name)(*args)
    return print_relation


class ScalarPrinter(OpVisitor):
    """0-d IR nodes to SymPy expressions, then LaTeX with long lines broken.

    `names` maps leaf keys to display names; `simplify(fn, arg, seconds)` runs
    `sympy.simplify` under a time bound (`bounded`, replaceable where a caller does not
    want to spend the time)."""

    def __init__(self, names, simplify=bounded):
        self.names, self.simplify = names, simplify
        self.symbols, self.symbol_names, self._memo = {}, {}, {}

    @classmethod
    def prints(cls, op) -> bool:
        """Whether `op` has a SymPy form: a visitor method, or its `sympy` facet."""
        return op.sympy is not None or hasattr(cls, cls.prefix + op.name)

    def print(self, roots):
        """(definitions [(name, LaTeX)], [LaTeX per root])."""
        deadline = time.monotonic() + SIMPLIFY_SECONDS      # for all outputs together
        for n in topological_order(roots):                 # inputs first: no deep recursion
            self.expr(n)
        exprs = [with_named_functions(self._simplified(self.expr(r), deadline))
                 for r in roots]
        definitions, exprs = self._break_long_lines(exprs)
        return ([(self.latex(t), self.latex(e)) for t, e in definitions],
                [self.latex(e) for e in exprs])

    def latex(self, expr):
        return _sympy().latex(expr, symbol_names=self.symbol_names)

    def expr(self, n):
        """The SymPy expression of node `n` (memoized: shared nodes convert once)."""
        found = self._memo.get(id(n))
        if found is not None:
            return found[1]
        e = self.visit(n, [self.expr(i) for i in n.inputs])
        self._memo[id(n)] = (n, e)
        return e

    # --- ops -------------------------------------------------------------------------------
    def default(self, n, args):
        return n.op.sympy(*args)

    def _print_placeholder(self, n, args):
        return self.symbol(n.attrs["leaf"], n.dtype)

    def _print_constant(self, n, args):
        return literal_value(n)

    _print_fill = _print_constant

    def _print_where(self, n, args):
        return _sympy().Piecewise((args[1], args[0]), (args[2], True))

    def _first(self, n, args):
        """Ops that are the identity on 0-d values."""
        return args[0]

    _print_identity = _print_stop_gradient = _print_read_variable = _print_cast = _first
    _print_reshape = _print_broadcast_to = _print_sum_to = _print_transpose = _first
    _print_tile = _print_reduce_sum = _print_reduce_max = _print_reduce_min = _first
    _print_reduce_prod = _print_guard = _first

    _print_less, _print_less_equal = _relation("Lt"), _relation("Le")
    _print_greater, _print_greater_equal = _relation("Gt"), _relation("Ge")
    _print_equal, _print_not_equal = _relation("Eq"), _relation("Ne")

    # --- symbols, simplification, line breaking -----------------------------------------
    def symbol(self, key, dtype):
        """The SymPy symbol of leaf `key` (real unless its dtype is complex)."""
        symbol = self.symbols.get(key)
        if symbol is None:
            sp = _sympy()
            # SymPy orders terms by symbol name: a plain form of the display name keeps
            # its order natural; `symbol_names` prints the exact (escaped) display name.
            plain = re.sub(r"[^A-Za-z0-9]", "", self.names[key]) or "s"
            taken = {s.name for s in self.symbols.values()}
            name, k = plain, 1
            while name in taken:
                k += 1
                name = f"{plain}{k}"
            real = np.dtype(dtype).kind != "c"
            symbol = self.symbols[key] = sp.Symbol(name, real=real) if real else \
                sp.Symbol(name)
            self.symbol_names[symbol] = self.names[key]
        return symbol

    def _simplified(self, expr, deadline):
        """`sympy.simplify(expr)` when it is clearly better: fewer operations, and no
        function call or constant the original lacks (so no sqrt(2) sin(x + pi/4) for
        sin + cos, no 1/cosh^2 for 1 - tanh^2)."""
        sp = _sympy()
        left = deadline - time.monotonic()
        if not isinstance(expr, sp.Basic) or left <= 0 or \
                sp.count_ops(expr) > SIMPLIFY_MAX_OPS:
            return expr
        candidate = self.simplify(sp.simplify, expr, left)
        if candidate is None or candidate == expr:
            return expr
        if not candidate.atoms(sp.Function) <= expr.atoms(sp.Function):
            return expr
        if not candidate.atoms(sp.NumberSymbol) <= expr.atoms(sp.NumberSymbol):
            return expr
        before = (sp.count_ops(expr), len(self.latex(expr)))
        after = (sp.count_ops(candidate), len(self.latex(candidate)))
        return candidate if after < before else expr

    def _break_long_lines(self, exprs):
        """While a line renders wider than LINE_LIMIT, name its largest piece that fits on a
        line (else its largest piece), replacing it everywhere, as the matrix layout
        does; definitions are numbered in dependency order at the end."""
        sp = _sympy()
        definitions = []                     # [(symbol, expression)]
        for _ in range(MAX_DEFINITIONS):
            heads = [e for _, e in definitions] + exprs
            best = None
            for head in heads:
                if rendered_width(self.latex(head)) <= LINE_LIMIT:
                    continue
                for piece in sp.preorder_traversal(head):
                    if piece is head or piece.is_Atom or not isinstance(piece, sp.Expr) or \
                            not piece.free_symbols:
                        continue
                    size = rendered_width(self.latex(piece))
                    if size >= MIN_DEFINITION:
                        rank = (size <= LINE_LIMIT, size)
                        if best is None or rank > best[0]:
                            best = (rank, piece)
            if best is None:
                break
            symbol = sp.Dummy("t")
            self.symbol_names[symbol] = "t_{99}"        # numbered at the end
            replace = {best[1]: symbol}
            definitions = [(t, e.xreplace(replace)) for t, e in definitions]
            definitions.append((symbol, best[1]))
            exprs = [e.xreplace(replace) for e in exprs]
        ordered, done = [], set()
        while len(ordered) < len(definitions):       # each after the symbols it uses
            for t, e in definitions:
                if t not in done and not (e.free_symbols & {u for u, _ in definitions}) - done:
                    ordered.append((t, e))
                    done.add(t)
        for (t, _), name in zip(ordered, temporary_names(self.names)):
            self.symbol_names[t] = name
        return ordered, exprs
