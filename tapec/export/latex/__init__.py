"""LaTeX of a recording: how a value was computed, or its derivatives.

    tape.latex(target)                  # how `target` was computed (value mode)
    tape.latex(target, sources)         # d target / d source, for each source
    tape.latex(target, sources, names)  # with chosen symbols for tensors and variables

The graph to print comes from the engine: `engine.symbolic_value` (value mode) or
`engine.symbolic` (derivatives, always simplified in "fast" mode so the formula does not
depend on the compile setting). `graph` resolves its placeholder leaves through the
tape: they are named after the Variables or tensors they stand for (`names`), and a leaf
that is a value the tape computed (a forward value the derivative does not
differentiate) is expanded into the expression that computed it.

Two printers share the naming and the output layout:

* scalar graphs (every node 0-d and every op one SymPy can express) become one SymPy
  expression per output, simplified under a time and size bound, printed by
  `sympy.latex` (`scalar`);
* anything else is printed in matrix notation from a small expression tree (`matrix`)
  built from the IR (`to_matrix`): matrix products and scalar factors by juxtaposition,
  `^{T}`, Hadamard products `\\circ`, sums with `\\mathbf{1}`, `\\operatorname{diag}`.
  Transposes are pushed down to the leaves, so `(x^T A)^T` prints as `A^{T} x`.

Subexpressions used more than once, and pieces of lines longer than `LINE_LIMIT`
characters, become named definitions `t_{1}, t_{2}, ...` in an `aligned` block
(`layout`). Every user-supplied name is escaped: user text never becomes a LaTeX
command. Ops print through their `latex` templates (`Op.latex`). docs/latex.md states
the conventions.
"""
from __future__ import annotations

import numpy as np

from ... import engine, nest
from ...ops.sympy_rules import sympy as _sympy
from ...tensor import Tensor, Variable
from .graph import PrintableGraph, leaves_of
# The bounds on layout and simplification are re-exported, where callers have read them.
from .layout import LINE_LIMIT, MAX_DEFINITIONS, MIN_DEFINITION  # noqa: F401
from .layout import Layout
from .matrix import (Call, Diag, Expr, Eye, Frac, Had, Neg, Num, Ones, Pow, Prod, Sum, Sym,
                     rows_cols, transposed_layout)
from .names import Namer, key_of, latex_name, user_names
from .scalar import MAX_SCALAR_DEPTH, MAX_SCALAR_TREE, SIMPLIFY_MAX_OPS  # noqa: F401
from .scalar import SIMPLIFY_SECONDS  # noqa: F401
from .scalar import ScalarPrinter, bounded, number, scalar_graph
from .to_matrix import MatrixConverter

__all__ = ["tape_latex", "latex_name"]

# The simplifier's runner, looked up here at each export: a caller (the fuzz tests) may
# replace `latex._bounded` to skip simplification.
_bounded = bounded

# The matrix IR and its layout under the names tests have reached them by.
_Expr, _Sym, _Num, _Ones, _Eye, _Sum, _Neg = Expr, Sym, Num, Ones, Eye, Sum, Neg
_Prod, _Had, _Frac, _Pow, _Call, _Diag = Prod, Had, Frac, Pow, Call, Diag
_Layout, _rows_cols, _transposed_layout = Layout, rows_cols, transposed_layout


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
    user, known = user_names(names)
    for handle, variable in tape.recorded.variables.items():
        known.setdefault(handle, variable._value)
    target_key = key_of(target)
    if sources is None:
        return _value_latex(tape, target, target_key, user, known)
    return _derivative_latex(tape, target, target_key, nest.flatten(sources), user, known)


def _value_latex(tape, target, target_key, user, known):
    namer = Namer(tape, user, [], [target] if isinstance(target, Variable) else [])
    if isinstance(target, Variable):
        return namer.assign([(target_key, target._shape)])[target_key]
    node, leaves = engine.symbolic_value(tape, target)
    if node is None:
        if target_key in user:
            return latex_name(user[target_key])
        if target._shape == () and target._value is not None:
            return _sympy().latex(number(target._value.item(), target._dtype))
        raise ValueError("latex: the target was not recorded by this tape (watch a tensor it "
                         "depends on, inside the tape's `with` block)")
    root = PrintableGraph(tape, leaves, user, known).node(node)
    names = namer.assign(leaves_of([root]))
    lhs = latex_name(user[target_key]) if target_key in user else "f"
    return _render([root], [lhs], names)


def _derivative_latex(tape, target, target_key, flat_sources, user, known):
    source_keys = [key_of(s) for s in flat_sources]
    if isinstance(target, Variable):
        target = tape.recorded.target(target, "latex")
    if not isinstance(target, Tensor):
        raise TypeError(f"latex: target must be a Tensor or a Variable, got "
                        f"{type(target).__name__}")
    size = int(np.prod(target._shape, dtype=np.int64))
    request = engine.Request([target], source_keys, [s._dtype for s in flat_sources],
                             [tuple(s._shape) for s in flat_sources], [None],
                             "gradient" if size == 1 else "jacobian")
    # "fast": exact rewrites and closed forms, no fusion, whatever the compile setting.
    outputs, leaves = engine.symbolic(tape, request, mode="fast")
    graph = PrintableGraph(tape, leaves, user, known)
    roots = [None if o is None else graph.node(o) for o in outputs]
    namer = Namer(tape, user, source_keys,
                  [s for s in flat_sources if isinstance(s, Variable)])
    names = namer.assign(leaves_of(roots))
    f = latex_name(user[target_key]) if target_key in user else "f"
    lhs = [rf"\frac{{\partial {f}}}{{\partial {names[k]}}}" for k in source_keys]
    return _render(roots, lhs, names)


def _render(roots, lhs, names):
    """Print `roots` (None: an unconnected source, 0) and lay the lines out."""
    present = [r for r in roots if r is not None]
    printed = None
    if present and scalar_graph(present):
        try:
            printed = ScalarPrinter(names, simplify=_bounded).print(present)
        except (TypeError, ValueError, AttributeError, NotImplementedError):
            printed = None      # SymPy refused an expression: matrix notation prints it
    definitions, texts = printed or Layout(names).lines(MatrixConverter(names).roots(present))
    texts = iter(texts)
    rhs = ["0" if r is None else next(texts) for r in roots]
    if len(rhs) == 1 and not definitions:
        return rhs[0]
    rows = [f"{name} &= {text}" for name, text in definitions]
    rows += [f"{left} &= {right}" for left, right in zip(lhs, rhs)]
    return "\\begin{aligned} " + " \\\\ ".join(rows) + " \\end{aligned}"
