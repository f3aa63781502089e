"""Printing a program as `numexpr.evaluate` calls, where that pays and numexpr can.

A program is printed for numexpr when it has at least `settings.NUMEXPR_MIN_OPS`
instructions on arrays of at least `settings.NUMEXPR_MIN_SIZE[dtype]` elements, numexpr
can be imported, and every call has a numexpr spelling (its op's `numexpr` facet; see
`exact.call_of` for the functions left to NumPy). Each expression is checked once on a
tiny input, which also checks the result keeps the dtype: numexpr upcasts float32 with
float literals, so non-integer literals are passed as 0-d float32 values. numexpr
results agree with NumPy's to rounding, not bit for bit (numexpr expands `x**n` into
multiplications, and its functions are not NumPy's).
"""
from __future__ import annotations

import functools
import re

import numpy as np

from ...ops.registry import ATOM
from . import settings           # read when used (tests and tuning change them)
from .numpy_printer import named_values, render
from .program import instruction_cost


def use_numexpr(program, shape, dtype) -> bool:
    """Whether to print `program`, computing an array of `shape` and `dtype`, for numexpr."""
    minimum = settings.NUMEXPR_MIN_SIZE.get(np.dtype(dtype).name)
    code, _ = program
    if minimum is None or len(code) < settings.NUMEXPR_MIN_OPS or settings.numexpr_module() is None:
        return False
    if int(np.prod(shape, dtype=np.int64)) < minimum:
        return False
    return all(opcode != "call" or call.numexpr is not None for opcode, _, call in code)


_INTEGER = re.compile(r"^\(?-?\d+(\.0)?\)?$")
_FLOAT = re.compile(r"^\(?-?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?\)?$")


class NumexprStyle:
    """How operands and calls print inside a numexpr expression string."""

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)
        self.literals = {}           # literal text -> local name

    def operand(self, o):
        if o[0] == "in":
            return f"v{o[1]}", ATOM
        text = o[1]
        if _INTEGER.match(text) and float(text.strip("()")) != 0 and \
                abs(float(text.strip("()"))) < 2 ** 24:
            # numexpr keeps float32 with an int literal (not -0.0: its sign matters).
            return text.replace(".0", ""), ATOM
        if self.dtype == np.float64 and _FLOAT.match(text):
            return text, ATOM        # a float literal is a double in numexpr
        name = self.literals.setdefault(text, f"k{len(self.literals)}")
        return name, ATOM

    def literal_value(self, text):
        """Python source of a literal's value, typed so numexpr keeps the dtype (it
        would compute `float32 * 0.5` in float64)."""
        if self.dtype == np.float32 and not text.startswith("np.float32("):
            return f"np.float32({text})"
        return text

    def spelling(self, call):
        """(template, precedence) a call prints with."""
        return call.numexpr, call.numexpr_precedence


def print_numexpr(program, args, out, dtype):
    """`numexpr.evaluate` statements, or None when numexpr cannot compute this exactly
    in this dtype (an unsupported function, a result of another dtype). A value used
    twice is recomputed where that costs at most NUMEXPR_INLINE_COST (numexpr is
    memory-bound: a few flops are cheaper than one more pass over an array), else it
    gets its own `numexpr.evaluate`."""
    code, result = program
    named = named_values(code, result)
    style = NumexprStyle(dtype)
    texts, lines, temps, inline_cost = {}, [], {}, {}

    def text_of(o):
        if o[0] == "v":
            return (f"w{o[1]}", ATOM) if o[1] in temps else texts[o[1]]
        return style.operand(o)

    for j, instruction in enumerate(code):
        text, p = render(instruction, text_of, style)
        inline_cost[j] = instruction_cost(instruction) + sum(
            inline_cost[o[1]] for o in instruction[1] if o[0] == "v" and o[1] not in temps)
        if named[j] and ("v", j) != result and inline_cost[j] > settings.NUMEXPR_INLINE_COST:
            temps[j] = f"{out}_{j}"
            statement = _evaluate(text, style, args, temps, dtype)
            if statement is None:
                return None
            lines.append(f"{out}_{j} = {statement}")
        else:
            texts[j] = (text, p)
    if result[0] != "v":
        return None
    statement = _evaluate(texts[result[1]][0], style, args, temps, dtype)
    if statement is None:
        return None
    lines.append(f"{out} = {statement}")
    return lines


def _evaluate(expression, style, args, temps, dtype):
    names = sorted(set(re.findall(r"\b[vkw]\d+\b", expression)), key=lambda s: (s[0], int(s[1:])))
    by_text = {v: k for k, v in style.literals.items()}
    pairs = []
    for name in names:
        if name[0] == "v":
            pairs.append((name, args[int(name[1:])]))
        elif name[0] == "w":
            pairs.append((name, temps[int(name[1:])]))
        else:
            pairs.append((name, style.literal_value(by_text[name])))
    if not _numexpr_computes(expression, tuple((n, v) for n, v in pairs if n[0] == "k"),
                             tuple(n for n, _ in pairs if n[0] != "k"), np.dtype(dtype).str):
        return None
    local = ", ".join(f"{name!r}: {value}" for name, value in pairs)
    return f"numexpr.evaluate({expression!r}, local_dict={{{local}}})"


@functools.lru_cache(maxsize=1024)
def _numexpr_computes(expression, literals, arrays, dtype) -> bool:
    """Whether numexpr evaluates `expression` here and keeps `dtype` (tried on tiny input)."""
    numexpr = settings.numexpr_module()
    local = {name: np.full(2, 0.5, dtype=dtype) for name in arrays}
    try:
        for name, source in literals:
            local[name] = eval(source, {"np": np})   # our own literal text: np.float32(0.5)
        with np.errstate(all="ignore"):
            value = numexpr.evaluate(expression, local_dict=local)
    except Exception:            # a function numexpr lacks, a type it cannot take
        return False
    return value.dtype == np.dtype(dtype)
