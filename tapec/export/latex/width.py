"""How wide a formula renders, in the width of a letter: what line breaking counts.

LaTeX source length says little about what a reader sees: `\\operatorname{diag}\\left(x
\\right)` is 33 characters and renders as `diag(x)`, 7 letters wide. `rendered_width`
estimates the rendered width of the LaTeX the printers produce: letters, digits and
symbols are 1, binary operators and relations 2 (their spacing), delimiters 0.6,
superscripts and subscripts 0.7 of their content, a fraction its wider part,
`\\operatorname{name}` and `\\mathrm{text}` their letters, commands such as `\\sin` their
names. It is an estimate for layout, not typesetting.
"""
from __future__ import annotations

import re

_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|[{}^_]|\s+|.", re.S)
_ZERO = frozenset((r"\left", r"\right", r"\begin", r"\end", r"\\", "&", r"\displaystyle",
                   r"\limits"))
_NAMED = frozenset((r"\sin", r"\cos", r"\tan", r"\sinh", r"\cosh", r"\tanh", r"\exp",
                    r"\log", r"\det", r"\max", r"\min", r"\arcsin", r"\arccos", r"\arctan"))
_TEXT = frozenset((r"\operatorname", r"\mathrm", r"\text", r"\mathbf", r"\mathbb"))
_OPERATORS = frozenset("+-=<>") | {r"\le", r"\ge", r"\ne", r"\lt", r"\gt", r"\in", r"\cdot",
                                    r"\circ", r"\times", r"\leq", r"\geq", r"\neq"}
_SPACES = {r"\,": 0.2, r"\:": 0.25, r"\;": 0.3, r"\ ": 0.3, r"\quad": 1.0, r"\!": -0.2}
_DELIMITERS = frozenset("()[]|.,;") | {r"\{", r"\}", r"\lVert", r"\rVert"}
SCRIPT = 0.7


def rendered_width(tex: str) -> float:
    """The estimated rendered width of `tex`, in letters."""
    tokens = [t for t in _TOKEN.findall(tex) if not t.isspace()]
    width, _ = _run(tokens, 0, len(tokens))
    return width


def _group_end(tokens, i):
    """The index after the group starting at tokens[i] ('{' ... '}', or one token)."""
    if i >= len(tokens):
        return i
    if tokens[i] != "{":
        return i + 1
    depth = 0
    for j in range(i, len(tokens)):
        depth += {"{": 1, "}": -1}.get(tokens[j], 0)
        if depth == 0:
            return j + 1
    return len(tokens)


def _inside(tokens, i):
    """(width of the group at tokens[i], index after it)."""
    end = _group_end(tokens, i)
    if end > i and tokens[i] == "{":
        return _run(tokens, i + 1, end - 1)[0], end
    return _run(tokens, i, end)[0], end


def _text_width(tokens, i):
    """(letters of a text group such as \\operatorname{diag}, index after it)."""
    end = _group_end(tokens, i)
    inner = tokens[i + 1:end - 1] if end > i and tokens[i] == "{" else tokens[i:end]
    return float(sum(1 for t in inner if t not in "{}")), end


def _run(tokens, i, stop):
    width = 0.0
    while i < stop:
        tok = tokens[i]
        i += 1
        if tok in ("{", "}") or tok in _ZERO:
            if tok in (r"\begin", r"\end"):
                i = _group_end(tokens, i)
            continue
        if tok in ("^", "_"):
            inner, i = _inside(tokens, i)
            width += SCRIPT * inner
        elif tok == r"\frac":
            top, i = _inside(tokens, i)
            bottom, i = _inside(tokens, i)
            width += max(top, bottom) + 0.4
        elif tok == r"\sqrt":
            inner, i = _inside(tokens, i)
            width += inner + 1.0
        elif tok in _TEXT:
            inner, i = _text_width(tokens, i)
            width += inner
        elif tok in _NAMED:
            width += len(tok) - 1
        elif tok in _SPACES:
            width += _SPACES[tok]
        elif tok in _OPERATORS:
            width += 2.0
        elif tok in _DELIMITERS:
            width += 0.6
        elif tok == r"\sum":
            width += 1.5
        else:
            width += 1.0
    return width, i
