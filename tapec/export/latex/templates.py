"""Reading an op's `latex` template (a `str.format` string over its arguments).

The matrix printer needs two facts a template states: whether it is a function applied
to the arguments, `head\\left({0}, {1}\\right)` (then the head is what prints, and the
call binds as an atom), and whether it is a relation `{0} < {1}` (printed as an Iverson
bracket when used as a value). Both are read from the template, so a new op declares its
notation once, in its `latex=` argument.
"""
from __future__ import annotations

import re
import string

_MARK = "\x00{}\x00"       # an argument, in a template formatted for reading
_CALL = re.compile(r"(\\[A-Za-z]+|\\operatorname\{[^{}]*\})\\left\((.*)\\right\)", re.S)
_RELATION = re.compile(r"\x000\x00 (\S+) \x001\x00")
_RELATION_SYMBOLS = frozenset(("<", ">", "=", r"\le", r"\ge", r"\ne", r"\leq", r"\geq",
                               r"\neq"))


def fields(template: str) -> list:
    """The replacement fields of `template`, in order ("0", "1", ...)."""
    return [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]


def formats(template, arity: int) -> bool:
    """Whether `template` names only arguments 0..arity-1 (and names one, if there are)."""
    names = fields(template)
    return all(f.isdigit() and int(f) < arity for f in names) and (bool(names) or not arity)


def _marked(template, arity):
    return template.format(*(_MARK.format(k) for k in range(arity)))


def call_head(template, arity: int):
    """`head` when `template` is `head\\left({0}, ..., {arity-1}\\right)`, else None."""
    if not template or not arity or not formats(template, arity):
        return None
    match = _CALL.fullmatch(_marked(template, arity))
    if match is None or match.group(2) != ", ".join(_MARK.format(k) for k in range(arity)):
        return None
    return match.group(1)


def relation_symbol(template, arity: int):
    """`<` when `template` is `{0} < {1}` (or another relation symbol), else None."""
    if not template or arity != 2 or not formats(template, arity):
        return None
    match = _RELATION.fullmatch(_marked(template, arity))
    return match.group(1) if match and match.group(1) in _RELATION_SYMBOLS else None
