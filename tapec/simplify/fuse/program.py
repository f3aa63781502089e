"""Programs: the small IR a `fused` node carries, and the cost model that compares them.

A program is `(code, result)`. `code` is a tuple of instructions `(opcode, operands,
call)`: the opcode is one of add/sub/mul/div/neg, the arithmetic ops written as Python's
operators (`call` is None), or "call", any other elementwise op (`call` a `Call`, copied
from the op's declaration). An operand is ("in", i) for input i, ("v", j) for
instruction j or ("lit", text) for a Python literal, whose text is an atom (a negative
number is parenthesized: "(-0.5)"). Everything is tuples of strings and ints: hashable,
so fused nodes hash-cons.

The cost of a program is the sum over its instructions of the op's `cost` facet times the
number of elements the instruction computes (its operands' broadcast size), so an op on
a broadcast (d, n) operand costs d times one on an (n,) vector:

    add, subtract, multiply, negate                           1
    divide                                                    4
    abs, sign, relu, maximum, minimum, square, pow(x, 2)      1
    sqrt, pow(x, 0.5), pow(x, -1)                             4
    every other function (exp, log, tanh, sin, erf, pow...)   20 (FUNCTION_COST)

An integer power x**n that SymPy writes is lowered to the multiplications of binary
powering (x**2: 1, x**3: 2, x**4: 2, x**5: 3), plus a division if n < 0.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...ops.elementwise import ADD, DIVIDE, MULTIPLY, NEGATIVE, SUBTRACT
from ...ops.registry import FUNCTION_COST

# The arithmetic ops, which programs write with Python's operators: opcode -> op.
ARITHMETIC = {"add": ADD, "sub": SUBTRACT, "mul": MULTIPLY, "div": DIVIDE, "neg": NEGATIVE}
OPCODE = {op: opcode for opcode, op in ARITHMETIC.items()}


class Call(NamedTuple):
    """What a call instruction needs from its op's declaration to be printed and costed,
    copied when the program is made (a program is plain, hashable data)."""
    name: str                        # the op's name
    template: str                    # its NumPy template, "np.exp({0})"
    numexpr: str | None              # numexpr's spelling; None: the program prints for NumPy
    cost: int                        # the cost model's weight per element
    precedence: int | None           # how `template` binds (registry.ATOM...)
    numexpr_precedence: int | None   # how `numexpr` binds


def op_cost(op, literal_args) -> int:
    """`op`'s cost facet for operands whose literal values are `literal_args` (None where an
    operand is not a literal). An op that declares no cost is costed as a function."""
    cost = op.cost
    if callable(cost):
        return cost(*literal_args)
    return FUNCTION_COST if cost is None else cost


def instruction_cost(instruction) -> int:
    """The weight of one instruction, per element it computes."""
    opcode, _, call = instruction
    return call.cost if opcode == "call" else ARITHMETIC[opcode].cost


class Code:
    """An instruction list with hash-consing: equal instructions are emitted once."""

    def __init__(self):
        self.instructions = []
        self._index = {}

    def emit(self, opcode, operands, call=None):
        key = (opcode, tuple(operands), call)
        j = self._index.get(key)
        if j is None:
            j = self._index[key] = len(self.instructions)
            self.instructions.append(key)
        return ("v", j)

    def program(self, result):
        """The live instructions, renumbered, and the result operand."""
        return compact(tuple(self.instructions), result)


def compact(code, result):
    """The program computing `result` from `code`, without the instructions it never uses."""
    live = set()
    stack = [result]
    while stack:
        operand = stack.pop()
        if operand[0] == "v" and operand[1] not in live:
            live.add(operand[1])
            stack.extend(code[operand[1]][1])
    renumber = {}
    kept = []
    for j, (opcode, operands, call) in enumerate(code):
        if j in live:
            operands = tuple(("v", renumber[o[1]]) if o[0] == "v" else o for o in operands)
            renumber[j] = len(kept)
            kept.append((opcode, operands, call))
    if result[0] == "v":
        result = ("v", renumber[result[1]])
    return tuple(kept), result


def used_inputs(program) -> set:
    """The indices of the inputs the program reads."""
    code, result = program
    used = {o[1] for _, operands, _ in code for o in operands if o[0] == "in"}
    if result[0] == "in":
        used.add(result[1])
    return used


def program_cost(program, shapes=None) -> int:
    """The cost-model weight of a program: each instruction's weight times the number of
    elements it computes (its operands' broadcast size, given the input `shapes`; 1 for
    every instruction when `shapes` is None)."""
    code, _ = program
    sizes = instruction_sizes(code, shapes) if shapes is not None else [1] * len(code)
    return sum(instruction_cost(instruction) * size for instruction, size in zip(code, sizes))


def instruction_sizes(code, shapes) -> list:
    """Elements each instruction computes, from the shapes of the program's inputs."""
    return [math.prod(shape) for shape in extend_shapes(code, shapes, [])]


def operand_shape(operand, input_shapes, instruction_shapes) -> tuple:
    """An operand's shape; an input past the end of `input_shapes` counts as 0-d."""
    kind, ref = operand
    if kind == "in":
        return input_shapes[ref] if ref < len(input_shapes) else ()
    return instruction_shapes[ref] if kind == "v" else ()


def extend_shapes(code, input_shapes, instruction_shapes) -> list:
    """`instruction_shapes` extended with the broadcast shape of each instruction of
    `code` past the ones it already has (operands only refer to earlier instructions)."""
    for _, operands, _ in code[len(instruction_shapes):]:
        instruction_shapes.append(np.broadcast_shapes(
            *(operand_shape(o, input_shapes, instruction_shapes) for o in operands)))
    return instruction_shapes
