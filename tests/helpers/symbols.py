"""The symbol check: every symbol on a right-hand side of printed LaTeX is defined.

`inputs_of(tape, names, ...)` lists the inputs a formula printed from `tape` may use.

A symbol is defined when it is an input (a name the caller lists: the user's names, the
Variables', the sources on the left-hand sides), an intermediate the output itself
defines on an earlier row (`t_{1} &= ...`), or standard notation (I, \\mathbf{1},
\\delta, e, \\pi, function names such as \\operatorname{diag}, \\sigma, \\tanh, and
index letters inside subscripts). `undefined(tex, inputs)` lists the others.
"""
from __future__ import annotations

import re

import numpy as np

import tapec as tf
from tapec.export.latex import latex_name

# Commands that are notation (functions, operators, layout), never a symbol of their own.
_NOTATION = frozenset("""
    frac left right sqrt circ cdot sum prod max min det exp log sin cos tan sinh cosh tanh
    arcsin arccos arctan operatorname mathbf text begin end partial ldots le ge ne lt gt
    leq geq neq infty pi sigma delta nabla quad qquad top odot otimes in mathbb times
    lVert rVert
    """.split())
_FUNCTION_LIKE = frozenset(("sigma",))     # \sigma is the logistic function
_STANDARD_LETTERS = frozenset(("I", "e"))
_INDEX_LETTERS = frozenset("ijklmnpqrsuvw")
_TOKEN = re.compile(r"\\mathrm\{(?:\\.|\{[^{}]*\}|[^{}])*\}"
                    r"|\\operatorname\{[^{}]*\}|\\text\{[^{}]*\}"
                    r"|\\mathbf\{[^{}]*\}|\\begin\{[^{}]*\}|\\end\{[^{}]*\}"
                    r"|\\[A-Za-z]+|\\.|[A-Za-z]|\d+|\s+|.", re.S)


def rows(tex: str):
    """(left, right) of each row: one row (None, tex) when it is not an aligned block."""
    tex = tex.strip()
    if not tex.startswith(r"\begin{aligned}"):
        left, _, right = tex.partition(" = ")
        if right and (left.startswith(r"\frac{\partial") or
                      re.fullmatch(r"[^=]*_\{[ijklmn]+\}", left)):
            return [(left, right)]         # a stated left-hand side: f_{ij} = ...
        return [(None, tex)]
    body = tex.removeprefix(r"\begin{aligned}").removesuffix(r"\end{aligned}")
    result = []
    for row in re.split(r"\\\\(?![a-zA-Z])", body):
        left, _, right = row.partition("&=")
        result.append((left.strip(), right.strip()))
    return result


def _group(tokens, i):
    """The tokens of the braced group starting at tokens[i] ('{'), and the index after it;
    a single token when it is not a group."""
    if i >= len(tokens):
        return [], i
    if tokens[i] != "{":
        return [tokens[i]], i + 1
    depth, j = 0, i
    while j < len(tokens):
        depth += {"{": 1, "}": -1}.get(tokens[j], 0)
        if depth == 0:
            return tokens[i + 1:j], j + 1
        j += 1
    return tokens[i + 1:], len(tokens)


def symbols(tex: str) -> set:
    """The symbols `tex` uses: names with their subscripts (`W_{1}`, `t_{3}`,
    `\\mathrm{loss}`), bases of indexed entries (`X` in `X_{ki}`), Greek letters that are
    not notation."""
    tex = re.sub(r"\\in \\mathbb\{R\}\^\{[^{}]*\}", "", tex)    # a shape note
    tokens = [t for t in _TOKEN.findall(tex) if not t.isspace()]
    return _symbols(tokens)


def _symbols(tokens) -> set:
    found, i = set(), 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        name = None
        if tok.startswith(r"\mathrm{"):
            name = tok
        elif re.fullmatch(r"\\[A-Za-z]+", tok):
            if tok[1:] in _NOTATION:
                if tok == r"\sum" and i < len(tokens) and tokens[i] == "_":
                    _, i = _group(tokens, i + 1)          # \sum_{k}: a bound index
                continue
            name = tok                                    # \theta, \alpha: a user's name
        elif re.fullmatch(r"[A-Za-z]", tok):
            name = tok
        elif tok in ("^", "_"):
            inner, i = _group(tokens, i)
            text = "".join(inner)
            if tok == "^" and text in ("T", "-1", "-T", r"\circ2", r"\top"):
                continue
            if tok == "_" and set(text) <= _INDEX_LETTERS:
                continue                                  # \delta_{jl}: indices
            found |= _symbols(inner)
            continue
        if name is None:
            continue
        if i < len(tokens) and tokens[i] == "_":          # a subscript names the symbol
            inner, after = _group(tokens, i + 1)
            text = "".join(inner)
            if not set(text) <= _INDEX_LETTERS:
                name += "_{" + text + "}"
                i = after
        if name[1:] in _FUNCTION_LIKE or name in _STANDARD_LETTERS:
            continue
        found.add(name)
    return found


def undefined(tex: str, inputs=()) -> set:
    """The symbols on right-hand sides of `tex` that are neither in `inputs`, nor defined
    on an earlier row, nor standard notation."""
    known = set(inputs)
    missing = set()
    for left, right in rows(tex):
        missing |= symbols(right) - known
        if left is not None and not left.startswith(r"\frac") and \
                not left.startswith(r"\nabla") and "partial" not in left and \
                not re.fullmatch(r"[^=]*_\{[ijklmn]+\}", left):
            known |= symbols(left)
    return missing


def sources_on_the_left(tex: str) -> set:
    """The symbols the left-hand sides differentiate by (`\\partial x` names x)."""
    found = set()
    for left, _ in rows(tex):
        left = (left or "").partition("}{")[2]          # the denominator of the fraction
        for match in re.finditer(r"\\partial (\\mathrm\{(?:\\.|\{[^{}]*\}|[^{}])*\}|\\?[A-Za-z]+"
                                 r"(?:_\{[^{}]*\})?)", left):
            found |= symbols(match.group(1))
    return found


def assert_defined(tex: str, inputs=()):
    """Fail unless every right-hand-side symbol of `tex` is an input (those listed, or a
    source named on a left-hand side), an earlier definition, or notation."""
    missing = undefined(tex, set(inputs) | sources_on_the_left(tex))
    assert not missing, f"undefined symbols {sorted(missing)} in: {tex}"


def inputs_of(tape, names=None, *objects) -> set:
    """The symbols a printed formula may use as inputs: the names given, the tape's
    Variables' names, and the default names of the watched tensors (x, y, ...)."""
    given = [n for _, n in (names.items() if isinstance(names, dict) else names or [])]
    found = {latex_name(n) for n in given}
    variables = list(tape.recorded.variables.values())
    variables += [v for v in tf.nest.flatten(list(objects)) if isinstance(v, tf.Variable)]
    found |= {latex_name(v._name) for v in variables}
    watched = sum(1 for r in tape.recorded.graph.values() if r.attrs.get("kind") == "watched")
    found |= set(["x", "y", "z", "u", "v", "w"][:watched])
    # The tape's unnamed data (not a uniform array, which prints as its number) may print
    # under the default names of matrices and other leaves.
    matrices = others = 0
    for key, r in tape.recorded.graph.items():
        t = tape.recorded.tensors.get(key)
        if r.attrs.get("kind") != "input" or t is None or t._value is None or \
                np.all(t._value == np.ravel(t._value)[:1]):
            continue
        if sum(1 for s in t._value.shape if s != 1) >= 2:
            matrices += 1
        else:
            others += 1
    for v in variables:
        if v._name not in ("", "Variable"):
            continue
        if sum(1 for s in v.shape if s != 1) >= 2:
            matrices += 1
        else:
            others += 1
    found |= set("ABCDFGHKLMNPQRSUV"[:matrices])
    return found | {f"c_{{{k}}}" for k in range(1, others + 1)}
