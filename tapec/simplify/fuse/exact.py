"""The exact form of a group: its own ops, in the same order, each as its op declares it.

Printed, the exact form computes bit for bit what the unfused statements compute. The
arithmetic ops become operator instructions; every other op becomes a call carrying its
declared template, numexpr spelling, precedence and cost (`call_of`).
"""
from __future__ import annotations

from ...ops.registry import FUNCTION_COST
from ...ops.shape import CONSTANT, FILL
from . import settings           # read when used (tests and tuning change them)
from .program import OPCODE, Call, Code, op_cost


def is_literal(node, feeds) -> bool:
    """Constants and 0-d fills are literals: inlined where they are used."""
    return node not in feeds and (node.op is CONSTANT or (node.op is FILL and node.shape == ()))


def literal_value(node):
    """The value of a literal node, or None for any other node."""
    if node.op is CONSTANT or (node.op is FILL and node.shape == ()):
        return node.attrs["value"]
    return None


def call_of(op, literal_args) -> Call:
    """The call instruction of elementwise `op` on operands whose literal values are
    `literal_args` (None where an operand is not a literal).

    Functions that cost FUNCTION_COST (exp, log, tanh...) get no numexpr spelling unless
    `settings.NUMEXPR_FUNCTIONS` is set: NumPy's SIMD loops compute them faster than
    numexpr's C-library calls on the machine the thresholds were measured on."""
    cost = op_cost(op, literal_args)
    numexpr = op.numexpr
    if cost >= FUNCTION_COST and not settings.NUMEXPR_FUNCTIONS:
        numexpr = None
    numexpr_precedence = None
    if numexpr is not None:
        numexpr_precedence = op.precedence if op.numexpr_precedence is None \
            else op.numexpr_precedence
    template = op.template
    if template is None:         # `where`: its NumPy printer, applied to the placeholders
        template = op.numpy([f"{{{k}}}" for k in range(op.arity)], None)
    return Call(op.name, template, numexpr, cost, op.precedence, numexpr_precedence)


def exact_program(root, nodes, feeds):
    """(inputs, program): the nodes `root` needs from outside its group `nodes` (literals
    excepted, which are inlined), and the program computing it from them."""
    member = set(nodes)
    inputs, operand = [], {}
    for n in nodes:
        for i in n.inputs:
            if i in member or i in operand:
                continue
            if is_literal(i, feeds):
                operand[i] = ("lit", i.op.numpy([], i))
            else:
                operand[i] = ("in", len(inputs))
                inputs.append(i)
    code = Code()
    for n in nodes:
        operands = [operand[i] for i in n.inputs]
        opcode = OPCODE.get(n.op)
        if opcode is not None:
            operand[n] = code.emit(opcode, operands)
        else:
            call = call_of(n.op, tuple(literal_value(i) for i in n.inputs))
            operand[n] = code.emit("call", operands, call)
    return inputs, code.program(operand[root])
