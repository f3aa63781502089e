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
  Transposes are pushed down to the leaves, so `(x^T A)^T` prints as `A^{T} x`; then
  sums of diagonals are collected and elementwise fractions cancelled (`collect`).

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
from .collect import collected
from .graph import PrintableGraph, gradient_of, leaves_of
from .index import NoIndexForm, index_form, indexed_name
# The bounds on layout and simplification are re-exported, where callers have read them.
from .layout import LINE_LIMIT, MAX_DEFINITIONS, MIN_DEFINITION  # noqa: F401
from .layout import Layout
from .matrix import (Call, Diag, Expr, Eye, Frac, Had, Neg, Num, Ones, Pow, Prod, Sum, Sym,
                     has_tensor, rows_cols, transposed_layout)
from .names import Namer, key_of, latex_name, user_names
from .scalar import MAX_SCALAR_DEPTH, MAX_SCALAR_TREE, SIMPLIFY_MAX_OPS  # noqa: F401
from .scalar import SIMPLIFY_SECONDS  # noqa: F401
from .scalar import ScalarPrinter, bounded, number, scalar_graph
from .sides import Side, index_letters, wide
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
    sides = []
    for k, s in zip(source_keys, flat_sources):
        function = gradient_of(tape, target, s) if len(flat_sources) == 1 else None
        if function is None:
            sides.append(Side(f, names[k], tuple(target._shape) if size > 1 else (),
                              tuple(s._shape)))
            continue
        # The jacobian of the gradient of `function`: its Hessian, named after it.
        name = latex_name(user[function._id]) if function._id in user else f
        sides.append(Side(name, names[k], tuple(target._shape), tuple(s._shape), True))
    return _render(roots, sides, names)


def _render(roots, sides, names):
    """Print `roots` (None: an unconnected source, 0) and lay the lines out. `sides`
    gives each root's left-hand side (a `Side`, or a string in value mode). A root with
    more than two axes larger than 1, or with such an array inside its matrix form,
    prints in index notation."""
    indexed = {k for k, r in enumerate(roots) if r is not None and len(wide(r.shape)) > 2}
    flat = [k for k, r in enumerate(roots) if r is not None and k not in indexed]
    printed = None
    if flat and scalar_graph([roots[k] for k in flat]):
        try:
            printed = ScalarPrinter(names, simplify=_bounded).print([roots[k] for k in flat])
        except (TypeError, ValueError, AttributeError, NotImplementedError):
            printed = None      # SymPy refused an expression: matrix notation prints it
    if printed is None and flat:
        exprs = collected(MatrixConverter(names).roots([roots[k] for k in flat]), names,
                          _bounded)
        indexed |= {k for k, e in zip(flat, exprs) if has_tensor(e)}
        exprs = [e for k, e in zip(flat, exprs) if k not in indexed]
        flat = [k for k in flat if k not in indexed]
        printed = Layout(names).lines(exprs) if exprs else ([], [])
    definitions, texts = printed or ([], [])
    texts = dict(zip(flat, texts))
    lhs, rhs = [], []
    for k, (r, side) in enumerate(zip(roots, sides)):
        plain = side if isinstance(side, str) else None
        if k in indexed:
            left, letters = (plain, index_letters(r.shape)) if plain else side.indexed()
            lhs.append(left if not plain else indexed_name(plain, "".join(filter(None, letters))))
            rhs.append(_index_text(r, names, letters))
        else:
            lhs.append(plain or side.matrix())
            rhs.append("0" if r is None else
                       texts[k] if plain else texts[k] + side.shape_note())
    stated = bool(indexed) or any(not isinstance(s, str) and s.stated() for s in sides)
    if len(rhs) == 1 and not definitions:
        return f"{lhs[0]} = {rhs[0]}" if stated else rhs[0]
    rows = [f"{name} &= {text}" for name, text in definitions]
    rows += [f"{left} &= {right}" for left, right in zip(lhs, rhs)]
    return "\\begin{aligned} " + " \\\\ ".join(rows) + " \\end{aligned}"


def _index_text(root, names, letters):
    """The entries of `root` in index notation, or a plain statement that it has no
    matrix form."""
    try:
        return index_form(root, names, letters)
    except NoIndexForm:
        dims = r" \times ".join(str(d) for d in root.shape)
        return rf"\text{{an array of shape }} {dims} \text{{, not shown: no index form}}"
