"""Printing a program as NumPy statements (`np` only).

Each instruction prints from its op's template: the arithmetic opcodes from the
arithmetic ops' templates ("{0} + {1}"), parenthesizing operands by the ops' declared
precedences; a call from the template its `Call` carries ("np.exp({0})"). A call's text
goes bare only where its op declares it an ATOM (one call whose placeholders are its
plain arguments); any other template (`{0} ** {1}`, sigmoid's quotient, erf's, whose
precedence is undeclared) is parenthesized wherever it is an operand, and so are its own
operands unless they are atoms. So the printer needs no more of a template than whether
it is an atom, and never reads the template's text to find out.

A value used twice, or by a template that reads its argument twice (erf's
`np.vectorize(math.erf, otypes=[{0}.dtype])({0})`), is computed once into a temporary
`{out}_{j}`.
"""
from __future__ import annotations

import numpy as np

from ...ops.registry import ATOM
from .program import ARITHMETIC, used_inputs

LOOSEST = 0                      # binds less tightly than anything: always parenthesized


class NumpyStyle:
    """How operands and calls print in NumPy code."""

    def __init__(self, args):
        self.args = args

    def operand(self, o):
        """(text, precedence) of an input (its argument's name) or a literal (its text,
        an atom: see `program.py`)."""
        return (self.args[o[1]] if o[0] == "in" else o[1]), ATOM

    def spelling(self, call):
        """(template, precedence) a call prints with."""
        return call.template, call.precedence

    @staticmethod
    def copy(text):
        """A new array holding the value of `text`, as an op's result is."""
        return f"np.array({text}, copy=True)"


def repeats(template, k) -> bool:
    """Whether `template` reads its argument `k` more than once."""
    return template.count(f"{{{k}}}") > 1


def named_values(code, result) -> list:
    """Per instruction: whether it must be a named value (used twice, or by a template
    that reads it twice)."""
    count = [0] * len(code)
    named = [False] * len(code)
    for opcode, operands, call in code:
        for k, o in enumerate(operands):
            if o[0] == "v":
                count[o[1]] += 1
                if opcode == "call" and repeats(call.template, k):
                    named[o[1]] = True
    if result[0] == "v":
        count[result[1]] += 1
    return [n or c > 1 for n, c in zip(named, count)]


def render(instruction, texts, style):
    """(text, precedence) of one instruction given its operands' (text, precedence)."""
    opcode, operands, call = instruction
    parts = [texts(o) for o in operands]
    if opcode == "neg":
        op, (text, p) = ARITHMETIC["neg"], parts[0]
        return op.template.format(f"({text})" if p <= op.precedence else text), op.precedence
    if opcode != "call":
        op = ARITHMETIC[opcode]
        (left, lp), (right, rp) = parts
        left = f"({left})" if lp < op.precedence else left
        right = f"({right})" if rp <= op.precedence else right
        return op.template.format(left, right), op.precedence
    template, precedence = style.spelling(call)
    if precedence == ATOM:
        return template.format(*(text for text, _ in parts)), ATOM
    return template.format(*(f"({text})" if p < ATOM else text for text, p in parts)), LOOSEST


def print_program(program, style, out):
    """NumPy statements: temporaries `{out}_{j}` for shared values, then `{out} = ...`."""
    code, result = program
    named = named_values(code, result)
    texts = {}

    def text_of(o):
        return texts[o[1]] if o[0] == "v" else style.operand(o)

    lines = []
    for j, instruction in enumerate(code):
        text, p = render(instruction, text_of, style)
        if named[j] and ("v", j) != result:
            lines.append(f"{out}_{j} = {text}")
            texts[j] = (f"{out}_{j}", ATOM)
        else:
            texts[j] = (text, p)
    final, _ = text_of(result)
    if result[0] != "v":                 # a bare input: copy, as an op would have
        final = style.copy(final)
    lines.append(f"{out} = {final}")
    return lines


def finish(lines, program, out, shapes, shape, dtype):
    """Broadcast the result to the node's shape where the program alone may not."""
    used = [shapes[k] for k in sorted(used_inputs(program))]
    if used and np.broadcast_shapes(*used) == tuple(shape):
        return lines
    if not used and tuple(shape) == ():
        return lines
    if used:
        lines.append(f"{out} = np.broadcast_to({out}, {tuple(shape)})")
    else:
        lines.append(f"{out} = np.full({tuple(shape)}, {out}, dtype=np.{np.dtype(dtype).name})")
    return lines
