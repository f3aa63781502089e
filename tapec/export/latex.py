"""LaTeX of a recording: how a value was computed, or its derivatives.

    tape.latex(target)                  # how `target` was computed (value mode)
    tape.latex(target, sources)         # d target / d source, for each source
    tape.latex(target, sources, names)  # with chosen symbols for tensors and variables

The graph to print comes from the engine: `engine.symbolic_value` (value mode) or
`engine.symbolic` (derivatives, always simplified in "fast" mode so the formula does not
depend on the compile setting). Placeholder leaves are named after the Variables or
tensors they stand for; a leaf that is a value the tape computed (a forward value the
derivative does not differentiate) is expanded into the expression that computed it.

Two printers share the naming and the output layout:

* scalar graphs (every node 0-d and every op one SymPy can express) become one SymPy
  expression per output, simplified under a time and size bound, printed by
  `sympy.latex`;
* anything else is printed in matrix notation from a small expression tree (`_Expr`)
  built from the IR: matrix products and scalar factors by juxtaposition, `^{T}`,
  Hadamard products `\\circ`, sums with `\\mathbf{1}`, `\\operatorname{diag}`. Transposes
  are pushed down to the leaves, so `(x^T A)^T` prints as `A^{T} x`.

Subexpressions used more than once, and pieces of lines longer than `LINE_LIMIT`
characters, become named definitions `t_{1}, t_{2}, ...` in an `aligned` block. Every
user-supplied name is escaped: user text never becomes a LaTeX command. docs/latex.md
states the conventions.
"""
from __future__ import annotations

import re
import string
import threading
import time
from collections.abc import Mapping
from fractions import Fraction

import numpy as np

from .. import engine, nest
from ..ir.nodes import Node, topological_order
from ..ir.lower import is_structure, lower
from ..ops.shape import CONSTANT, FILL, PLACEHOLDER, READ_VARIABLE, TRANSPOSE
from ..ops.sympy_rules import sympy as _sympy
from ..tensor import Tensor, Variable

LINE_LIMIT = 80            # longer lines are broken into named definitions
MIN_DEFINITION = 12        # a shared subexpression shorter than this stays inline
MAX_DEFINITIONS = 60       # bounds the line-breaking loop on huge graphs
SIMPLIFY_SECONDS = 2.0     # sympy.simplify runs at most this long in all ...
SIMPLIFY_MAX_OPS = 60      # ... and only on expressions at most this large
MAX_SCALAR_TREE = 2000     # larger or deeper scalar graphs print in matrix notation (with
MAX_SCALAR_DEPTH = 60      # sharing, and no recursion as deep as SymPy's printer needs)

__all__ = ["tape_latex", "latex_name"]


def tape_latex(tape, target, sources=None, names=None) -> str:
    """LaTeX of `target` as recorded (sources=None), or of its derivative with respect to
    each of `sources` (a Tensor, a Variable or a nested list of them).

    A target of one element gives gradients; a larger target gives jacobians, printed
    as matrices when each has at most two axes larger than 1. `names` chooses symbols:
    a dict keyed by `tensor.ref()` / `variable.ref()`, or a list of (tensor or variable,
    name) pairs. The tape is inspected, not used up: a non-persistent tape can still
    compute its gradient afterwards.
    """
    if getattr(tape, "_used", False):
        raise RuntimeError("latex: this non-persistent GradientTape has already computed a "
                           "gradient and released its recording; call latex before "
                           "gradient, or use GradientTape(persistent=True)")
    user, known = _user_names(names)
    for handle, variable in tape._variables.items():
        known.setdefault(handle, variable._value)
    target_key = _key_of(target)
    if sources is None:
        return _value_latex(tape, target, target_key, user, known)
    return _derivative_latex(tape, target, target_key, nest.flatten(sources), user, known)


# --- names -------------------------------------------------------------------------------

def _key_of(obj):
    """The tensor id a tensor or variable is known by in a tape's recording."""
    if isinstance(obj, Variable):
        return obj._handle_id
    if isinstance(obj, Tensor):
        return obj._id
    raise TypeError(f"latex: expected a Tensor or a Variable, got {type(obj).__name__} "
                    f"{obj!r:.60}")


def _user_names(names):
    """`names` as ({tensor id: name}, {tensor id: value}). Tensors are unhashable, so a
    dict must be keyed by `.ref()`; a list of (tensor or variable, name) pairs is
    accepted too."""
    if names is None:
        return {}, {}
    items = names.items() if isinstance(names, Mapping) else names
    result, values = {}, {}
    for pair in items:
        try:
            key, name = pair
        except (TypeError, ValueError):
            raise TypeError("latex: names must be a dict keyed by tensor.ref() or a list of "
                            f"(tensor, name) pairs, got the item {pair!r:.60}") from None
        obj = key.deref() if hasattr(key, "deref") else key
        result[_key_of(obj)] = str(name)
        if obj._value is not None:
            values[_key_of(obj)] = obj._value
    return result, values


_GREEK = frozenset(
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi pi rho sigma "
    "tau upsilon phi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi "
    "Omega".split())
# Characters that need a command inside \mathrm; the braces end command names, so
# `\backslash` can never run into the letters that follow it (`\backslashinput`).
_ESCAPES = {"\\": r"{\backslash}", "{": r"\{", "}": r"\}", "_": r"\_", "%": r"\%",
            "$": r"\$", "#": r"\#", "&": r"\&", "~": r"{\sim}", "^": r"{\wedge}",
            " ": r"\ ", "<": r"{\lt}", ">": r"{\gt}"}
_PLAIN = frozenset(".,;:!?()[]/+-*=@|'")
_SUBSCRIPTED = re.compile(r"([A-Za-z]+?)_?([0-9]+)\Z")


def latex_name(raw: str) -> str:
    """A user's name as a LaTeX symbol that cannot inject commands.

    One letter prints as itself, a Greek letter's name as the letter, either followed by
    digits (optionally after `_`) as a subscript (`W1`, `x_1` -> `W_{1}`, `x_{1}`);
    anything else is upright text, `\\mathrm{...}`, with every special character escaped.
    """
    if len(raw) == 1 and raw.isascii() and raw.isalpha():
        return raw
    if raw in _GREEK:
        return "\\" + raw
    match = _SUBSCRIPTED.match(raw)
    if match:
        stem, digits = match.groups()
        if len(stem) == 1 or stem in _GREEK:
            return f"{latex_name(stem)}_{{{digits}}}"
    return r"\mathrm{" + _escaped(raw) + "}"


def _escaped(raw: str) -> str:
    """Text with every character that could start a command, a group, a comment or an
    alignment escaped, and anything unusual shown as `?`."""
    out = []
    for ch in raw:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isalnum() or ch in _PLAIN:
            out.append(ch)
        else:
            out.append("?")      # control characters and other symbols: shown, never run
    return "".join(out)


_SOURCE_LETTERS = ("x", "y", "z", "u", "v", "w")
_MATRIX_LETTERS = tuple("ABCDFGHKLMNPQRSUV")     # not E, I, J, O, T: e, identity, ones, 0, ^T


class _Namer:
    """Display names of leaves: the user's, the Variable's, or a default.

    Defaults: x, y, z, u, v, w, x_{7}, ... for the sources, then for other watched
    tensors; A, B, C, ... for other leaves with at least two axes larger than 1;
    c_{1}, c_{2}, ... for the remaining leaves. Defaults skip names already in use.
    """

    def __init__(self, tape, user, source_keys, variables=()):
        self.tape, self.user = tape, user
        self.source_keys = list(source_keys)
        # The tape's Variables, and those given as target or sources (maybe unwatched).
        self.variables = dict(tape._variables)
        self.variables.update((v._handle_id, v) for v in variables)
        self.names = {}

    def explicit(self, key):
        if self.user.get(key):
            return latex_name(self.user[key])
        variable = self.variables.get(key)
        if variable is not None and variable._name not in ("", "Variable"):
            return latex_name(variable._name)
        return None

    def assign(self, leaves):
        """Name `leaves`, a list of (key, shape), plus the sources (for the left-hand sides)."""
        order, shapes = [], {}
        for key in self.source_keys:
            if key not in shapes:
                order.append(key)
                shapes[key] = None
        for key, shape in leaves:
            if key not in shapes or shapes[key] is None:
                if key not in shapes:
                    order.append(key)
                shapes[key] = shape
        taken = set()
        for key in order:
            name = self.explicit(key)
            if name is not None:
                self.names[key] = name
                taken.add(name)
        pools = {"source": self._pool(_SOURCE_LETTERS, "x", taken),
                 "matrix": self._pool(_MATRIX_LETTERS, "A", taken),
                 "other": self._pool((), "c", taken)}
        sources = set(self.source_keys)
        for key in order:
            if key in self.names:
                continue
            shape = shapes[key] or ()
            if key in sources or self._watched(key):
                kind = "source"
            elif sum(1 for s in shape if s != 1) >= 2:
                kind = "matrix"
            else:
                kind = "other"
            self.names[key] = next(pools[kind])
        return self.names

    def _watched(self, key):
        record = self.tape._graph.get(key)
        return record is not None and record.attrs.get("kind") == "watched"

    @staticmethod
    def _pool(letters, stem, taken):
        for letter in letters:
            if letter not in taken:
                taken.add(letter)
                yield letter
        k = len(letters) + 1 if letters else 1
        while True:
            name = f"{stem}_{{{k}}}"
            if name not in taken:
                taken.add(name)
                yield name
            k += 1


# --- the graph to print ----------------------------------------------------------------

def _leaf_node(key, shape, dtype):
    return Node(PLACEHOLDER, (), {"leaf": key}, tuple(shape), dtype)


class _Lookup:
    """A recording read by `lower` where a tensor may be missing (None: a leaf)."""

    def __init__(self, records):
        self.records = records

    def __getitem__(self, key):
        return self.records.get(key)


class _Graph:
    """The IR to print, with placeholder leaves replaced by what the tape knows of them:
    a Variable read becomes the Variable, a value the tape computed becomes the recorded
    expression that computed it (so no forward value is an unexplained symbol).

    `known` maps keys of named tensors and of the tape's Variables to their values: an
    input the tape did not see computed (inside a nested gradient, the transpose of an
    unwatched constant is computed unrecorded) that equals one of them, or its
    transpose, prints as that name (or its transpose)."""

    def __init__(self, tape, leaves, user, known):
        self.records, self.leaves, self.user = tape._graph, leaves, user
        self.variables, self.tensors, self.known = tape._variables, tape._tensors, known
        self._nodes, self._ids, self._leaf = {}, {}, {}

    def node(self, root):
        """The printable copy of IR node `root` (built inputs first, without recursion:
        graphs can be deeper than Python's stack)."""
        for n in topological_order([root], is_leaf=lambda n: id(n) in self._nodes):
            if id(n) in self._nodes:
                continue
            if n.op is PLACEHOLDER:
                key = self.leaves.get(n)
                found = self.leaf(("anonymous", id(n)), n.shape, n.dtype) if key is None \
                    else self.from_id(key)
            else:
                found = Node(n.op, tuple(self._nodes[id(i)][1] for i in n.inputs), n.attrs,
                             n.shape, n.dtype)
            self._nodes[id(n)] = (n, found)      # keeps n alive, so its id stays unique
        return self._nodes[id(root)][1]

    def from_id(self, key):
        """The printable node for tensor `key`, expanded through the recording."""
        pending, stack = set(), [key]
        while stack:                         # what must be built, without recursion
            k = stack.pop()
            if k in pending or k in self._ids:
                continue
            pending.add(k)
            r = self.records.get(k)
            if self._expanded(k, r):
                stack.extend(r.inputs)
        # Tensor ids grow in creation order, so sorted ids are inputs first.
        lower(_Lookup(self.records), sorted(pending), Node, self._leaf_for, nodes=self._ids)
        return self._ids[key]

    def _expanded(self, key, r):
        return r is not None and bool(r.inputs) and r.op is not READ_VARIABLE and \
            key not in self.user and key not in self.variables

    def _leaf_for(self, key, r):
        """The leaf printed for tensor `key`, or None when it prints as what computed it."""
        if r is None or key in self.user or key in self.variables:
            shape, dtype = (r.shape, r.dtype) if r is not None else ((), np.dtype("f8"))
            return self.leaf(key, shape, dtype)
        if r.op is READ_VARIABLE:
            handle = r.inputs[0]
            if handle in self.variables or handle in self.user:
                return self.leaf(handle, r.shape, r.dtype)
            return self.leaf(key, r.shape, r.dtype)
        if r.inputs or is_structure(r):
            return None
        return self._alias(key, r) or self.leaf(key, r.shape, r.dtype)

    def _alias(self, key, r):
        """A named value (or its transpose) equal to the unexplained input `key`."""
        tensor = self.tensors.get(key)
        if r.attrs.get("kind") != "input" or tensor is None or tensor._value is None or \
                tensor._value.size < 2:
            return None           # scalars would match by coincidence far too often
        value = tensor._value
        if (value == value.flat[0]).all():
            return None           # and so would zeros or ones: only distinctive values
        for other, known in self.known.items():
            if other == key or known.size != value.size or known.dtype != value.dtype:
                continue
            if known.shape == value.shape and np.array_equal(known, value):
                return self.leaf(other, value.shape, r.dtype)
        for other, known in self.known.items():
            if other != key and known.ndim == 2 and known.shape == value.shape[::-1] and \
                    known.dtype == value.dtype and np.array_equal(known.T, value):
                return Node(TRANSPOSE, (self.leaf(other, known.shape, r.dtype),),
                            {"perm": (1, 0)}, tuple(value.shape), r.dtype)
        return None

    def leaf(self, key, shape, dtype):
        found = self._leaf.get(key)
        if found is None:
            found = self._leaf[key] = _leaf_node(key, shape, dtype)
        return found


def _leaves_of(roots):
    """(key, shape) of every leaf below `roots`, in order of first appearance."""
    seen, result = set(), []
    for n in topological_order([r for r in roots if r is not None]):
        if n.op is PLACEHOLDER and "leaf" in n.attrs and n.attrs["leaf"] not in seen:
            seen.add(n.attrs["leaf"])
            result.append((n.attrs["leaf"], n.shape))
    return result


# --- value and derivative modes ----------------------------------------------------------

def _value_latex(tape, target, target_key, user, known):
    namer = _Namer(tape, user, [], [target] if isinstance(target, Variable) else [])
    if isinstance(target, Variable):
        return namer.assign([(target_key, target._shape)])[target_key]
    node, leaves = engine.symbolic_value(tape, target)
    if node is None:
        if target_key in user:
            return latex_name(user[target_key])
        if target._shape == () and target._value is not None:
            return _sympy().latex(_number(target._value.item(), target._dtype))
        raise ValueError("latex: the target was not recorded by this tape (watch a tensor it "
                         "depends on, inside the tape's `with` block)")
    graph = _Graph(tape, leaves, user, known)
    root = graph.node(node)
    names = namer.assign(_leaves_of([root]))
    lhs = latex_name(user[target_key]) if target_key in user else "f"
    return _render([root], [lhs], names)


def _derivative_latex(tape, target, target_key, flat_sources, user, known):
    source_keys = [_key_of(s) for s in flat_sources]
    if isinstance(target, Variable):
        target = tape._as_target(target, "latex")
    if not isinstance(target, Tensor):
        raise TypeError(f"latex: target must be a Tensor or a Variable, got "
                        f"{type(target).__name__}")
    size = int(np.prod(target._shape, dtype=np.int64))
    request = engine.Request([target], source_keys, [s._dtype for s in flat_sources],
                             [tuple(s._shape) for s in flat_sources], [None],
                             "gradient" if size == 1 else "jacobian")
    # "fast": exact rewrites and closed forms, no fusion, whatever the compile setting.
    outputs, leaves = engine.symbolic(tape, request, mode="fast")
    graph = _Graph(tape, leaves, user, known)
    roots = [None if o is None else graph.node(o) for o in outputs]
    namer = _Namer(tape, user, source_keys,
                   [s for s in flat_sources if isinstance(s, Variable)])
    names = namer.assign(_leaves_of(roots))
    f = latex_name(user[target_key]) if target_key in user else "f"
    lhs = [rf"\frac{{\partial {f}}}{{\partial {names[k]}}}" for k in source_keys]
    return _render(roots, lhs, names)


def _render(roots, lhs, names):
    """Print `roots` (None: an unconnected source, 0) and lay the lines out."""
    present = [r for r in roots if r is not None]
    printed = None
    if present and _scalar_graph(present):
        try:
            printed = _ScalarPrinter(names).print(present)
        except (TypeError, ValueError, AttributeError, NotImplementedError):
            printed = None      # SymPy refused an expression: matrix notation prints it
    definitions, texts = printed or _MatrixPrinter(names).print(present)
    texts = iter(texts)
    rhs = ["0" if r is None else next(texts) for r in roots]
    if len(rhs) == 1 and not definitions:
        return rhs[0]
    rows = [f"{name} &= {text}" for name, text in definitions]
    rows += [f"{left} &= {right}" for left, right in zip(lhs, rhs)]
    return "\\begin{aligned} " + " \\\\ ".join(rows) + " \\end{aligned}"


def _temporary_names(names):
    """t_{1}, t_{2}, ... skipping any name a leaf already has."""
    taken, k = set(names.values()), 0
    while True:
        k += 1
        name = f"t_{{{k}}}"
        if name not in taken:
            yield name


def _number(value, dtype):
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
        return _number(value.real, dtype) + sp.I * _number(value.imag, dtype)
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


def _literal_value(n):
    """The value of a constant or uniform fill node, else None."""
    if n.op is CONSTANT or n.op is FILL:
        return _number(n.attrs["value"], n.dtype)
    return None


# --- scalar graphs through SymPy ---------------------------------------------------------

# Ops that are the identity on 0-d values.
_SCALAR_TRANSPARENT = frozenset(
    "identity stop_gradient read_variable cast reshape broadcast_to sum_to transpose tile "
    "reduce_sum reduce_max reduce_min reduce_prod guard".split())
_RELATIONS = {"less": "Lt", "less_equal": "Le", "greater": "Gt", "greater_equal": "Ge",
              "equal": "Eq", "not_equal": "Ne"}


def _scalar_graph(roots) -> bool:
    """Whether every node is 0-d, every op has a SymPy form, and the graph written out as
    a tree (a SymPy expression repeats what the graph shares) stays small."""
    sizes, depths = {}, {}
    for n in topological_order(roots):
        sizes[id(n)] = 1 + sum(sizes[id(i)] for i in n.inputs)
        depths[id(n)] = 1 + max((depths[id(i)] for i in n.inputs), default=0)
        if n.shape != () or sizes[id(n)] > MAX_SCALAR_TREE or \
                depths[id(n)] > MAX_SCALAR_DEPTH:
            return False
        name = n.op.name
        if not (n.op is PLACEHOLDER or n.op is CONSTANT or n.op is FILL or
                n.op.sympy is not None or name in _SCALAR_TRANSPARENT or
                name in _RELATIONS or name == "where"):
            return False
    return True


class _OutOfTime(BaseException):
    """Raised inside an overrunning simplification to stop it. A BaseException, so the
    `except Exception` clauses inside SymPy do not swallow it."""


def _bounded(fn, arg, seconds):
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


_STOP_SECONDS = 5.0    # how long to wait for a stopped worker to unwind


def _interrupt(worker):
    """Raise `_OutOfTime` in `worker` (a no-op where the C-API is not CPython's)."""
    try:
        import ctypes
        set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
    except (ImportError, AttributeError):
        return
    set_async_exc.argtypes = (ctypes.c_ulong, ctypes.py_object)
    set_async_exc(worker.ident, _OutOfTime)


class _ScalarPrinter:
    def __init__(self, names):
        self.names = names
        self.symbols, self.symbol_names, self._memo = {}, {}, {}

    def print(self, roots):
        deadline = time.monotonic() + SIMPLIFY_SECONDS      # for all outputs together
        for n in topological_order(roots):                 # inputs first: no deep recursion
            self.expr(n)
        exprs = [self._simplified(self.expr(r), deadline) for r in roots]
        definitions, exprs = self._break_long_lines(exprs)
        return ([(self.latex(t), self.latex(e)) for t, e in definitions],
                [self.latex(e) for e in exprs])

    def _break_long_lines(self, exprs):
        """While a line is longer than LINE_LIMIT, name its largest piece that fits on a
        line (else its largest piece), replacing it everywhere, as the matrix printer
        does; definitions are numbered in dependency order at the end."""
        sp = _sympy()
        definitions = []                     # [(symbol, expression)]
        for _ in range(MAX_DEFINITIONS):
            heads = [e for _, e in definitions] + exprs
            best = None
            for head in heads:
                if len(self.latex(head)) <= LINE_LIMIT:
                    continue
                for piece in sp.preorder_traversal(head):
                    if piece is head or piece.is_Atom or not isinstance(piece, sp.Expr) or \
                            not piece.free_symbols:
                        continue
                    size = len(self.latex(piece))
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
        for (t, _), name in zip(ordered, _temporary_names(self.names)):
            self.symbol_names[t] = name
        return ordered, exprs

    def latex(self, expr):
        return _sympy().latex(expr, symbol_names=self.symbol_names)

    def symbol(self, key, dtype):
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

    def expr(self, n):
        found = self._memo.get(id(n))
        if found is not None:
            return found[1]
        sp = _sympy()
        args = [self.expr(i) for i in n.inputs]
        name = n.op.name
        if n.op is PLACEHOLDER:
            e = self.symbol(n.attrs["leaf"], n.dtype)
        elif n.op is CONSTANT or n.op is FILL:
            e = _literal_value(n)
        elif name in _RELATIONS:
            e = getattr(sp, _RELATIONS[name])(*args)
        elif name == "where":
            e = sp.Piecewise((args[1], args[0]), (args[2], True))
        elif n.op.sympy is not None:
            e = n.op.sympy(*args)
        else:                                     # _SCALAR_TRANSPARENT
            e = args[0]
        self._memo[id(n)] = (n, e)
        return e

    def _simplified(self, expr, deadline):
        """`sympy.simplify(expr)` when it is clearly better: fewer operations, and no
        function call or constant the original lacks (so no sqrt(2) sin(x + pi/4) for
        sin + cos, no 1/cosh^2 for 1 - tanh^2)."""
        sp = _sympy()
        left = deadline - time.monotonic()
        if not isinstance(expr, sp.Basic) or left <= 0 or \
                sp.count_ops(expr) > SIMPLIFY_MAX_OPS:
            return expr
        candidate = _bounded(sp.simplify, expr, left)
        if candidate is None or candidate == expr:
            return expr
        if not candidate.atoms(sp.Function) <= expr.atoms(sp.Function):
            return expr
        if not candidate.atoms(sp.NumberSymbol) <= expr.atoms(sp.NumberSymbol):
            return expr
        before = (sp.count_ops(expr), len(self.latex(expr)))
        after = (sp.count_ops(candidate), len(self.latex(candidate)))
        return candidate if after < before else expr


# --- matrix notation -------------------------------------------------------------------------
#
# Layouts: ("s",) a scalar (every axis of size 1); ("c", n) a column and ("r", n) a row
# vector; ("m", m, n) a matrix; ("t", shape) anything with more than two axes larger than
# 1. Size-1 axes are ignored; a tensor with one axis larger than 1 is a row when that is
# its last axis of a rank >= 2 shape, else a column (1-D vectors are columns).

def _layout(shape):
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


def _transposed_layout(layout):
    kind = layout[0]
    if kind == "c":
        return ("r", layout[1])
    if kind == "r":
        return ("c", layout[1])
    if kind == "m":
        return ("m", layout[2], layout[1])
    return layout


def _rows_cols(layout):
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


def _layout_from(rows, cols):
    if rows == 1 and cols == 1:
        return ("s",)
    if rows == 1:
        return ("r", cols)
    if cols == 1:
        return ("c", rows)
    return ("m", rows, cols)


# Printing precedence: a child printed inside a parent needs at least the precedence the
# parent asks for, else it is wrapped in \left( \right).
SUM, HAD, PROD, POST, ATOM = 10, 30, 40, 90, 100


class _Expr:
    """A node of a matrix expression. `layout` as above; `shared`: the IR node it came
    from is used more than once, so it may become a named definition (a transpose of it
    then stays `t^{T}` rather than being pushed inside)."""
    __slots__ = ("layout", "shared")

    def __init__(self, layout):
        self.layout, self.shared = layout, False

    def children(self):
        return ()


class _Sym(_Expr):
    __slots__ = ("text", "transposed")

    def __init__(self, text, layout, transposed=False):
        super().__init__(layout)
        self.text, self.transposed = text, transposed


class _Num(_Expr):
    """A number; with a non-scalar layout, the same number in every element."""
    __slots__ = ("value",)

    def __init__(self, value, layout=("s",)):
        super().__init__(layout)
        self.value = value


class _Ones(_Expr):
    """\\mathbf{1}, a vector of ones (a row when its layout is a row)."""
    __slots__ = ()


class _Eye(_Expr):
    __slots__ = ()


class _Sum(_Expr):
    __slots__ = ("terms",)          # [(sign, expr)], sign +1 or -1

    def __init__(self, terms, layout):
        super().__init__(layout)
        self.terms = terms

    def children(self):
        return tuple(t for _, t in self.terms)


class _Neg(_Expr):
    __slots__ = ("x",)

    def __init__(self, x):
        super().__init__(x.layout)
        self.x = x

    def children(self):
        return (self.x,)


class _Prod(_Expr):
    """Juxtaposition: matrix products, scalar factors (a number first), outer products."""
    __slots__ = ("factors",)

    def __init__(self, factors, layout):
        super().__init__(layout)
        self.factors = factors

    def children(self):
        return tuple(self.factors)


class _Had(_Expr):
    __slots__ = ("factors",)

    def __init__(self, factors, layout):
        super().__init__(layout)
        self.factors = factors

    def children(self):
        return tuple(self.factors)


class _Frac(_Expr):
    __slots__ = ("num", "den")

    def __init__(self, num, den, layout):
        super().__init__(layout)
        self.num, self.den = num, den

    def children(self):
        return (self.num, self.den)


class _Pow(_Expr):
    """A postfix superscript: `kind` "power" (elementwise on arrays: ^{\\circ k}),
    "inverse" (^{-1}) or "T" (a transpose kept as such)."""
    __slots__ = ("base", "exponent", "kind")

    def __init__(self, base, exponent, kind, layout):
        super().__init__(layout)
        self.base, self.exponent, self.kind = base, exponent, kind

    def children(self):
        return (self.base,) if not isinstance(self.exponent, _Expr) else \
            (self.base, self.exponent)


class _Call(_Expr):
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


class _Diag(_Expr):
    __slots__ = ("v",)

    def __init__(self, v, layout):
        super().__init__(layout)
        self.v = v

    def children(self):
        return (self.v,)


def _is_scalar(e):
    return e.layout[0] == "s"


def _trivial(e):
    """A symbol, a number, 1, I, or a transpose of one: never worth a definition."""
    while isinstance(e, _Pow) and e.kind == "T":
        e = e.base
    return isinstance(e, (_Sym, _Num, _Ones, _Eye))


def _is_zero(e):
    return isinstance(e, _Num) and e.value == 0


def _prod_layout(factors):
    arrays = [f for f in factors if not _is_scalar(f)]
    if not arrays:
        return ("s",)
    if any(f.layout[0] == "t" for f in arrays):
        return next(f.layout for f in arrays if f.layout[0] == "t")
    rows, _ = _rows_cols(arrays[0].layout)
    _, cols = _rows_cols(arrays[-1].layout)
    return _layout_from(rows, cols)


def _neg(x):
    if isinstance(x, _Neg):
        return x.x
    if isinstance(x, _Num):
        return _Num(-x.value, x.layout)
    return _Neg(x)


def _prod(factors):
    """A product, flattened: numbers folded into one leading coefficient, signs pulled
    out, ones and identities that multiply something else dropped."""
    sp = _sympy()
    layout = _prod_layout(factors)
    coefficient, flat, stack = sp.Integer(1), [], list(reversed(factors))
    while stack:
        f = stack.pop()
        if isinstance(f, _Prod) and not f.shared:      # a shared piece stays one unit
            stack.extend(reversed(f.factors))
        elif isinstance(f, _Neg):
            coefficient = -coefficient
            stack.append(f.x)
        elif isinstance(f, _Num) and (_is_scalar(f) or f.value == 0):
            coefficient *= f.value
        else:
            flat.append(f)
    if coefficient == 0:
        return _Num(sp.Integer(0), layout)
    if any(not _is_scalar(f) and not isinstance(f, _Eye) for f in flat):
        flat = [f for f in flat if not isinstance(f, _Eye)]     # I A = A
    elif sum(isinstance(f, _Eye) for f in flat) > 1:              # I I = I
        first = next(k for k, f in enumerate(flat) if isinstance(f, _Eye))
        flat = [f for k, f in enumerate(flat) if k == first or not isinstance(f, _Eye)]
    merged = []
    for f in flat:                        # diag(a) diag(b) = diag(a o b)
        if merged and isinstance(f, _Diag) and isinstance(merged[-1], _Diag) and \
                not f.shared and not merged[-1].shared:
            merged[-1] = _Diag(_had([merged[-1].v, f.v], f.v.layout), f.layout)
        else:
            merged.append(f)
    flat = merged
    sign, coefficient = (-1, -coefficient) if coefficient < 0 else (1, coefficient)
    if coefficient != 1 or not flat:
        flat.insert(0, _Num(coefficient))
    result = flat[0] if len(flat) == 1 else _Prod(flat, layout)
    if len(flat) == 1 and result.layout != layout and layout[0] != "s" and \
            isinstance(result, _Num):
        result = _Num(result.value, layout)
    return _neg(result) if sign < 0 else result


def _sum(terms, layout):
    flat, stack = [], [(sign, t) for sign, t in reversed(terms)]
    while stack:
        sign, t = stack.pop()
        if isinstance(t, _Sum) and not t.shared:
            stack.extend((sign * s, u) for s, u in reversed(t.terms))
        elif isinstance(t, _Neg):
            stack.append((-sign, t.x))
        elif isinstance(t, _Num) and t.value.is_real and t.value < 0:
            flat.append((-sign, _Num(-t.value, t.layout)))      # a - 2, not a + (-2)
        elif not _is_zero(t):
            flat.append((sign, t))
    if not flat:
        return _Num(_sympy().Integer(0), layout)
    if len(flat) == 1:
        sign, t = flat[0]
        return t if sign > 0 else _neg(t)
    return _Sum(flat, layout)


def _frac(num, den, layout):
    """num / den with signs and numeric coefficients of the numerator pulled out."""
    if isinstance(num, _Neg):
        return _neg(_frac(num.x, den, layout))
    if isinstance(num, _Prod) and not num.shared and isinstance(num.factors[0], _Num) \
            and len(num.factors) > 1:
        rest = num.factors[1:]
        rest = rest[0] if len(rest) == 1 else _Prod(rest, num.layout)
        return _prod([num.factors[0], _frac(rest, den, layout)])
    if isinstance(den, _Prod) and not den.shared and isinstance(den.factors[0], _Num) \
            and len(den.factors) > 1 and den.factors[0].value != 0:
        rest = den.factors[1:]
        rest = rest[0] if len(rest) == 1 else _Prod(rest, den.layout)
        return _prod([_Num(1 / den.factors[0].value), _frac(num, rest, layout)])
    if isinstance(num, _Num) and num.value != 1 and _is_scalar(num) and num.value != 0:
        return _prod([num, _frac(_Num(_sympy().Integer(1)), den, layout)])
    return _Frac(num, den, layout)


def _had(factors, layout):
    flat = []
    for f in factors:
        flat.extend(f.factors if isinstance(f, _Had) and not f.shared else [f])
    return flat[0] if len(flat) == 1 else _Had(flat, layout)


class _Transposer:
    """Transposes pushed down to the leaves: (AB)^T = B^T A^T, (A + B)^T = A^T + B^T,
    f(A)^T = f(A^T) for elementwise f; diag(v), I and scalars are symmetric. A shared
    expression keeps the transpose outside, so it can print as t_{k}^{T}."""

    def __init__(self):
        self._memo = {}

    DEPTH = 40        # deeper than this, the transpose stays outside (no deep recursion)

    def __call__(self, e, depth=0):
        found = self._memo.get(id(e))
        if found is None:
            found = self._memo[id(e)] = (e, self._transposed(e, depth))
        return found[1]

    def _transposed(self, e, depth):
        t = _transposed_layout(e.layout)
        if _is_scalar(e) or isinstance(e, (_Eye, _Diag)):
            return e
        if e.shared or e.layout[0] == "t" or depth > self.DEPTH:
            return self._wrapped(e, t)
        depth += 1
        if isinstance(e, _Sym):
            return _Sym(e.text, t, not e.transposed)
        if isinstance(e, _Num):
            return _Num(e.value, t)
        if isinstance(e, _Ones):
            return _Ones(t)
        if isinstance(e, _Sum):
            return _Sum([(s, self(x, depth)) for s, x in e.terms], t)
        if isinstance(e, _Neg):
            return _Neg(self(e.x, depth))
        if isinstance(e, _Prod):
            return _Prod([self(f, depth) for f in reversed(e.factors)], t)
        if isinstance(e, _Had):
            return _Had([self(f, depth) for f in e.factors], t)
        if isinstance(e, _Frac):
            return _Frac(self(e.num, depth), self(e.den, depth), t)
        if isinstance(e, _Pow):
            if e.kind == "T":
                return e.base
            return _Pow(self(e.base, depth), e.exponent, e.kind, t)
        if isinstance(e, _Call) and e.elementwise:
            return _Call(e.head, [self(a, depth) for a in e.args], e.style, t, True)
        return self._wrapped(e, t)

    @staticmethod
    def _wrapped(e, layout):
        return _Pow(e, "T", "T", layout)


_FUNCTIONS = {"sin": r"\sin", "cos": r"\cos", "tan": r"\tan", "asin": r"\arcsin",
              "acos": r"\arccos", "atan": r"\arctan", "sinh": r"\sinh", "cosh": r"\cosh",
              "tanh": r"\tanh", "exp": r"\exp", "log": r"\log", "sigmoid": r"\sigma",
              "maximum": r"\max", "minimum": r"\min"}
_RELATION_TEX = {"less": "<", "less_equal": r"\le", "greater": ">", "greater_equal": r"\ge",
                 "equal": "=", "not_equal": r"\ne"}
_TRANSPARENT = frozenset(("identity", "stop_gradient", "read_variable", "cast", "guard"))


def _operator_name(name):
    r"""An op name as \operatorname{...}, escaped like any other text."""
    return r"\operatorname{" + _escaped(name) + "}"


class _MatrixPrinter:
    def __init__(self, names):
        self.names = names
        self.tr = _Transposer()
        self._memo, self._uses = {}, {}

    # --- IR -> expression ---------------------------------------------------------------
    def print(self, roots):
        self._count_uses(roots)
        for n in topological_order(roots):      # inputs first: no deep recursion
            self.convert(n)
        exprs = [self.convert(r) for r in roots]
        return _Layout(self.names).lines(exprs)

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
            if (n.op.name in ("reshape", "transpose", "broadcast_to") or
                    n.op.name in _TRANSPARENT) and uses.get(id(n), 0) > 1 and n.inputs:
                uses[id(n.inputs[0])] = max(uses.get(id(n.inputs[0]), 0), uses[id(n)])

    def convert(self, n):
        found = self._memo.get(id(n))
        if found is not None:
            return found[1]
        e = self._convert(n)
        if e.layout[0] in "cr" and _layout(n.shape)[0] in "cr" and \
                e.layout[0] != _layout(n.shape)[0]:
            e = self.tr(e)
        if self._uses.get(id(n), 0) > 1 and not _trivial(e):
            e.shared = True
        self._memo[id(n)] = (n, e)
        return e

    def orient(self, e, layout):
        """`e` as a column or a row, whichever `layout` is (vectors only)."""
        if e.layout[0] in "cr" and layout[0] in "cr" and e.layout[0] != layout[0]:
            return self.tr(e)
        return e

    def _convert(self, n):
        name, layout = n.op.name, _layout(n.shape)
        if n.op is PLACEHOLDER:
            return _Sym(self.names[n.attrs["leaf"]], layout)
        if n.op is CONSTANT:
            return _Num(_literal_value(n))
        if n.op is FILL:
            return self._fill(_literal_value(n), layout)
        if name in _TRANSPARENT:
            return self.convert(n.inputs[0])
        if name == "eye" and n.attrs["n"] == n.attrs["m"]:
            return _Eye(layout)
        method = getattr(self, "_op_" + name, None)
        if method is not None:
            result = method(n, layout)
            if result is not None:
                return result
        if n.op.sympy is not None or name in _RELATIONS or name == "where":
            return self._elementwise(n, layout)
        return self._generic(n, layout)

    def _fill(self, value, layout):
        """A constant array: 0, c 1, c 1 1^T (1 a vector of ones)."""
        if layout[0] == "s" or value == 0:
            return _Num(value, layout)
        if layout[0] == "m":
            return _prod([_Num(value), _Ones(("c", layout[1])), _Ones(("r", layout[2]))])
        return _prod([_Num(value), _Ones(layout)])

    # shape ops: transparent when they only add or remove size-1 axes
    def _op_reshape(self, n, layout):
        x = n.inputs[0]
        if _layout(x.shape)[0] != "t" and [s for s in x.shape if s != 1] == \
                [s for s in n.shape if s != 1]:
            return self.orient(self.convert(x), layout)
        return None

    def _op_transpose(self, n, layout):
        x = n.inputs[0]
        axes = [i for i, s in enumerate(x.shape) if s != 1]
        moved = [p for j, p in enumerate(n.attrs["perm"]) if n.shape[j] != 1]
        if len(axes) > 2:
            return None
        if moved == axes:
            return self.orient(self.convert(x), layout)
        return self.tr(self.convert(x))

    def _op_broadcast_to(self, n, layout):
        x = n.inputs[0]
        base = self._broadcast_base(x)
        if base.op is FILL or base.op is CONSTANT:
            return self._fill(_literal_value(base), layout)
        kind, e = self._operand(x, n.shape)
        if kind == "F":
            return self.orient(e, layout)
        if kind == "S":
            return self._broadcast(e, layout)
        if kind in "RC":
            return self._explicit(kind, e, layout)
        return None

    def _op_sum_to(self, n, layout):
        x = n.inputs[0]
        lead = len(x.shape) - len(n.shape)
        summed = [i for i, s in enumerate(x.shape)
                  if s != 1 and (i < lead or n.shape[i - lead] == 1)]
        return self._summed(self.convert(x), x.shape, summed, layout)

    def _op_reduce_sum(self, n, layout):
        x = n.inputs[0]
        summed = [a for a in n.attrs["axis"] if x.shape[a] != 1]
        return self._summed(self.convert(x), x.shape, summed, layout)

    def _summed(self, e, shape, summed, layout):
        """Sums as products with \\mathbf{1}: 1^T x, x 1 (a row), 1^T X, X 1, 1^T X 1."""
        if not summed:
            return self.orient(e, layout)
        axes = [i for i, s in enumerate(shape) if s != 1]
        kind = e.layout[0]
        if kind == "c":
            result = _prod([_Ones(("r", e.layout[1])), e])
        elif kind == "r":
            result = _prod([e, _Ones(("c", e.layout[1]))])
        elif kind == "m":
            m, k = e.layout[1], e.layout[2]
            if len(summed) == 2:
                result = _prod([_Ones(("r", m)), e, _Ones(("c", k))])
            elif summed == [axes[1]]:
                result = _prod([e, _Ones(("c", k))])
            else:
                result = _prod([_Ones(("r", m)), e])
        else:
            return None
        return self.orient(result, layout)

    def _op_matmul(self, n, layout):
        a, b = n.inputs
        if any(s != 1 for s in a.shape[:-2] + b.shape[:-2]):
            return None                     # a batch of products: printed generically
        return _prod([self.convert(a), self.convert(b)])

    def _op_diag_seed(self, n, layout):
        value = self._uniform(n.inputs[0])
        if value is not None:               # the jacobian seed: c I
            return _prod([_Num(value), _Eye(layout)])
        if layout[0] != "m":
            return None
        return self._diag(self.convert(n.inputs[0]), layout)

    def _op_matrix_diag(self, n, layout):
        return self._diag(self.convert(n.inputs[0]), layout) if layout[0] == "m" else None

    def _op_matrix_inverse(self, n, layout):
        return _Pow(self.convert(n.inputs[0]), "-1", "inverse", layout) \
            if layout[0] in "ms" else None

    def _op_matrix_solve(self, n, layout):
        a, b = n.inputs
        if _layout(a.shape)[0] not in "ms" or any(s != 1 for s in b.shape[:-2]):
            return None
        return _prod([_Pow(self.convert(a), "-1", "inverse", _layout(a.shape)),
                      self.convert(b)])

    def _diag(self, v, layout):
        """diag(v), with v printed as a column; diag(c 1) is c I."""
        if isinstance(v, _Ones):
            return _Eye(layout)
        if isinstance(v, _Num):
            return _prod([_Num(v.value), _Eye(layout)])
        if isinstance(v, _Prod):
            arrays = [f for f in v.factors if not _is_scalar(f)]
            if len(arrays) == 1 and isinstance(arrays[0], _Ones):
                return _prod([f for f in v.factors if _is_scalar(f)] + [_Eye(layout)])
        if _is_scalar(v):
            return _prod([v, _Eye(layout)])
        return _Diag(self.orient(v, ("c", v.layout[1])) if v.layout[0] == "r" else v, layout)

    # elementwise ops
    @staticmethod
    def _broadcast_base(n):
        while n.op.name == "broadcast_to":
            n = n.inputs[0]
        return n

    @staticmethod
    def _uniform(n):
        """The value of `n` if it is one number in every element (a fill, maybe
        reshaped, transposed or broadcast), else None."""
        while n.op.name in ("broadcast_to", "reshape", "transpose") or \
                n.op.name in _TRANSPARENT:
            n = n.inputs[0]
        return _literal_value(n)

    def _operand(self, n, out_shape):
        """How an operand of an elementwise op broadcasts against the output: "S" a
        scalar, "F" full size, "R" varies down the rows only (a column), "C" along the
        columns only (a row), "X" otherwise; with its expression."""
        base = self._broadcast_base(n)
        value = self._uniform(base)
        if value is not None:
            return "S", _Num(value)
        e = self.convert(base)
        rank = len(out_shape)
        padded = (1,) * (rank - len(base.shape)) + tuple(base.shape)
        covered = [i for i in range(rank) if padded[i] != 1]
        wide = [i for i in range(rank) if out_shape[i] != 1]
        out = _layout(out_shape)
        if not covered:
            return "S", e
        if covered == wide:
            return "F", self.orient(e, out)
        if out[0] == "m" and covered == [wide[0]]:
            return "R", self.orient(e, ("c", out[1]))
        if out[0] == "m" and covered == [wide[1]]:
            return "C", self.orient(e, ("r", out[2]))
        return "X", e

    @staticmethod
    def _explicit(kind, e, layout):
        """An operand spelled out at full size where a sum needs it: u 1^T, 1 v."""
        if kind == "R":
            return _prod([e, _Ones(("r", layout[2]))])
        if kind == "C":
            return _prod([_Ones(("c", layout[1])), e])
        if kind == "S" and layout[0] != "s" and isinstance(e, _Num):
            return _Num(e.value, layout)
        return e

    def _elementwise(self, n, layout):
        operands = [self._operand(i, n.shape) for i in n.inputs]
        if layout[0] != "s" and all(k == "S" for k, _ in operands):
            # Only scalars, broadcast to an array: the scalar, times ones.
            return self._broadcast(self._apply(n.op, operands, ("s",)), layout)
        return self._apply(n.op, operands, layout)

    def _broadcast(self, e, layout):
        """A scalar expression as an array of `layout`: c 1, c 1 1^T."""
        if isinstance(e, _Num):
            return self._fill(e.value, layout)
        if layout[0] in "cr":
            return _prod([e, _Ones(layout)])
        if layout[0] == "m":
            return _prod([e, _Ones(("c", layout[1])), _Ones(("r", layout[2]))])
        return e

    def _apply(self, op, operands, layout):
        """An elementwise op on classified operands (see `_operand`)."""
        name = op.name
        kinds = [k for k, _ in operands]
        args = [e for _, e in operands]
        scalar = layout[0] == "s"
        if name == "multiply":
            return self._multiply(operands, layout)
        full = [self._explicit(k, e, layout) for k, e in operands]
        if name == "add":
            return _sum([(1, full[0]), (1, full[1])], layout)
        if name == "subtract":
            return _sum([(1, full[0]), (-1, full[1])], layout)
        if name == "negative":
            return _neg(args[0])
        if name == "divide":
            if isinstance(args[1], _Num) and kinds[1] == "S" and args[1].value != 0:
                return _prod([_Num(1 / args[1].value), full[0]])
            if kinds == ["F", "R"]:                  # rows divided: diag(u)^{-1} X
                inverse = self._diag(args[1], ("m", layout[1], layout[1]))
                return _prod([_Pow(inverse, "-1", "inverse", inverse.layout), args[0]])
            if kinds == ["F", "C"]:                  # columns divided: X diag(v)^{-1}
                inverse = self._diag(args[1], ("m", layout[2], layout[2]))
                return _prod([args[0], _Pow(inverse, "-1", "inverse", inverse.layout)])
            return _frac(full[0], full[1], layout)
        if name == "square":
            return _Pow(args[0], "2", "power" if not scalar else "scalar", layout)
        if name == "pow":
            exponent = args[1]
            if isinstance(exponent, _Num) and exponent.value == _sympy().Rational(1, 2):
                return _Call(None, [args[0]], "sqrt", layout, True)
            return _Pow(full[0], exponent, "power" if not scalar else "scalar", layout)
        if name == "sqrt":
            return _Call(None, args, "sqrt", layout, True)
        if name == "abs":
            return _Call(None, args, "abs", layout, True)
        if name in _RELATION_TEX:
            return _Call(_RELATION_TEX[name], full, "relation", layout, True)
        if name == "where":
            return _Call(op.latex, full, "template", layout, True)
        head = _FUNCTIONS.get(name) or _operator_name(name)
        return _Call(head, full, "paren", layout, True)

    def _multiply(self, operands, layout):
        (ka, a), (kb, b) = operands
        if ka == "S" or kb == "S":
            return _prod([a, b] if ka == "S" else [b, a])
        if {ka, kb} == {"R", "C"}:                       # an outer product u v^T
            return _prod([a, b] if ka == "R" else [b, a])
        if {ka, kb} == {"R", "F"}:                       # rows scaled: diag(u) X
            u, x = (a, b) if ka == "R" else (b, a)
            return _prod([self._diag(u, ("m", layout[1], layout[1])), x])
        if {ka, kb} == {"C", "F"}:                       # columns scaled: X diag(v)
            v, x = (a, b) if ka == "C" else (b, a)
            return _prod([x, self._diag(v, ("m", layout[2], layout[2]))])
        return _had([self._explicit(ka, a, layout), self._explicit(kb, b, layout)], layout)

    def _generic(self, n, layout):
        """An op without a matrix form: its LaTeX template, else its name applied."""
        args = [self.convert(i) for i in n.inputs]
        template = n.op.latex
        if template:
            fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
            if all(f.isdigit() and int(f) < len(args) for f in fields) and \
                    (fields or not args):
                return _Call(template, args, "template", layout, False)
        return _Call(_operator_name(n.op.name), args, "paren", layout, False)


class _Layout:
    """Expressions to lines: shared subexpressions and pieces of long lines become
    definitions t_{k}, numbered in the order they are printed."""

    def __init__(self, names):
        self.names = names
        self.defined = {}          # id(expr) -> (expr, name)
        self._cache = {}

    def lines(self, roots):
        self._define_shared(roots)
        self._break_long_lines(roots)
        order = self._definition_order(roots)
        temporaries = _temporary_names(self.names)
        for e in order:
            self.defined[id(e)] = (e, next(temporaries))
        self._cache.clear()
        self._warm(list(roots) + order)
        definitions = [(self.defined[id(e)][1], self.tex(e, top=True)[0]) for e in order]
        # A root another output uses is defined too, and prints as its name.
        return definitions, [self.tex(r, top=len(roots) == 1)[0] for r in roots]

    def _references(self, roots):
        counts, seen = {}, set()
        stack = list(roots)
        while stack:
            e = stack.pop()
            counts[id(e)] = counts.get(id(e), 0) + 1
            if id(e) in seen:
                continue
            seen.add(id(e))
            stack.extend(e.children())
        return counts

    def _post_order(self, roots, stop_at_defined=False):
        order, seen = [], set()
        for root in roots:
            stack = [(root, False)]
            while stack:
                e, expanded = stack.pop()
                if expanded:
                    order.append(e)
                    continue
                if id(e) in seen:
                    continue
                seen.add(id(e))
                stack.append((e, True))
                if not (stop_at_defined and id(e) in self.defined and e is not root):
                    stack.extend((c, False) for c in reversed(e.children()))
        return order

    def _define(self, e):
        self.defined[id(e)] = (e, "t_{99}")       # renamed in printing order at the end
        self._cache.clear()

    def _warm(self, roots):
        """Print every piece bottom-up, so printing a root never recurses deeply."""
        for e in self._post_order(roots):
            self.tex(e)

    def _define_shared(self, roots):
        counts = self._references(roots)
        for e in self._post_order(roots):
            if e.shared and counts.get(id(e), 0) > 1:
                self._warm([e])
                if len(self.tex(e, top=True)[0]) >= MIN_DEFINITION:
                    self._define(e)

    def _break_long_lines(self, roots):
        for _ in range(MAX_DEFINITIONS):
            heads = list(roots) + [e for e, _ in self.defined.values()]
            self._warm(heads)
            long = [h for h in heads if len(self.tex(h, top=True)[0]) > LINE_LIMIT]
            if not long:
                return
            # The largest piece that fits on a line of its own, else the largest piece.
            best = None
            for head in long:
                for e in self._post_order([head], stop_at_defined=True):
                    if e is head or id(e) in self.defined or _trivial(e):
                        continue
                    size = len(self.tex(e, top=True)[0])
                    if size >= MIN_DEFINITION:
                        rank = (size <= LINE_LIMIT, size)
                        if best is None or rank > best[0]:
                            best = (rank, e)
            if best is None:
                return
            self._define(best[1])

    def _definition_order(self, roots):
        order = []
        for e in self._post_order(roots):
            if id(e) in self.defined and not (len(roots) == 1 and e is roots[0]):
                order.append(e)
        for e in order:
            self.defined.pop(id(e))
        return order

    # --- printing -----------------------------------------------------------------------
    def wrap(self, e, precedence):
        text, own = self.tex(e)
        return text if own >= precedence else rf"\left({text}\right)"

    def tex(self, e, top=False):
        """(LaTeX, precedence) of `e`; a defined expression prints as its name unless
        it is the definition being printed (`top`)."""
        if not top and id(e) in self.defined:
            return self.defined[id(e)][1], ATOM
        key = (id(e), top)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._tex(e)
        return found

    def _tex(self, e):
        sp = _sympy()
        if isinstance(e, _Sym):
            return (e.text + "^{T}", POST) if e.transposed else (e.text, ATOM)
        if isinstance(e, _Num):
            text = sp.latex(e.value)
            return text, (SUM if e.value.is_real and e.value < 0 else ATOM)
        if isinstance(e, _Ones):
            return (r"\mathbf{1}^{T}", POST) if e.layout[0] == "r" else (r"\mathbf{1}", ATOM)
        if isinstance(e, _Eye):
            return "I", ATOM
        if isinstance(e, _Sum):
            parts = []
            for k, (sign, t) in enumerate(e.terms):
                text = self.wrap(t, SUM + 1)
                if k == 0:
                    parts.append(text if sign > 0 else "-" + text)
                else:
                    parts.append(("+ " if sign > 0 else "- ") + text)
            return " ".join(parts), SUM
        if isinstance(e, _Neg):
            return "-" + self.wrap(e.x, HAD), SUM
        if isinstance(e, _Prod):
            parts, after_number = [], False
            for f in sorted(e.factors, key=lambda f: 0 if isinstance(f, _Num) else
                            1 if _is_scalar(f) else 2):
                text = self.wrap(f, PROD)
                # 2 \cdot 3 and \frac{1}{2} \cdot \frac{x}{y}: juxtaposed they would read
                # as 23 or as a mixed number.
                if parts and (text[:1].isdigit() or text.startswith(r"\frac")) and \
                        (after_number or text[:1].isdigit()):
                    parts.append(r"\cdot")
                parts.append(text)
                after_number = isinstance(f, _Num) and id(f) not in self.defined
            return " ".join(parts), PROD
        if isinstance(e, _Had):
            return r" \circ ".join(self.wrap(f, PROD + 1) for f in e.factors), HAD
        if isinstance(e, _Frac):
            return rf"\frac{{{self.tex(e.num)[0]}}}{{{self.tex(e.den)[0]}}}", ATOM
        if isinstance(e, _Pow):
            base = self.wrap(e.base, ATOM)
            if e.kind == "T":
                return base + "^{T}", POST
            if e.kind == "inverse":
                return base + "^{-1}", POST
            exponent = self.tex(e.exponent)[0] if isinstance(e.exponent, _Expr) else \
                e.exponent
            circ = r"\circ " if e.kind == "power" else ""
            return f"{base}^{{{circ}{exponent}}}", POST
        if isinstance(e, _Diag):
            return rf"\operatorname{{diag}}\left({self.tex(e.v)[0]}\right)", ATOM
        if isinstance(e, _Call):
            return self._call(e)
        raise TypeError(f"latex: cannot print {type(e).__name__}")

    def _call(self, e):
        if e.style == "sqrt":
            return rf"\sqrt{{{self.tex(e.args[0])[0]}}}", ATOM
        if e.style == "abs":
            return rf"\left|{self.tex(e.args[0])[0]}\right|", ATOM
        if e.style == "relation":             # as a value: the Iverson bracket [a < b]
            inner = f" {e.head} ".join(self.wrap(a, SUM) for a in e.args)
            return rf"\left[{inner}\right]", ATOM
        if e.style == "template":
            return self._template(e)
        inner = ", ".join(self.tex(a)[0] for a in e.args)
        return rf"{e.head}\left({inner}\right)", ATOM

    def _template(self, e):
        """An op's LaTeX template; arguments get parentheses unless the template puts
        them in parentheses or in a cell of `cases` (where a condition is shown bare)."""
        cases = e.head.startswith(r"\begin{{cases}}")
        texts = []
        for k, a in enumerate(e.args):
            field = "{" + str(k) + "}"
            if cases and isinstance(a, _Call) and a.style == "relation" and \
                    id(a) not in self.defined:
                texts.append(f" {a.head} ".join(self.wrap(b, SUM) for b in a.args))
            elif cases or "(" + field in e.head:
                texts.append(self.tex(a)[0])
            elif field + "^" in e.head or field + "[" in e.head:
                texts.append(self.wrap(a, ATOM))        # a base: x^{T}^{-1} is an error
            else:
                texts.append(self.wrap(a, POST))
        if cases:
            return e.head.format(*texts), ATOM
        postfix = re.fullmatch(r"\{0\}(\^\{\{[^{}]*\}\}|\[[^{}]*\])", e.head)
        return e.head.format(*texts), (POST if postfix else PROD)
