"""Sines and cosines from tangents: a strength reduction for large float64 kernels.

NumPy's float64 `sin` and `cos` call the C library, one element at a time, while its
`tan` is a SIMD loop: on the 2-core AMD EPYC (AVX-512) VM this was measured on, NumPy
2.4, 1M elements, sin 9.3 ms, cos 10.1 ms, tan 1.35 ms. A kernel that needs cos(x) where
sin(x) is at hand (computed by the same kernel, as a function's gradient does, or a
forward value the tape holds) gets it from the tangent instead:

    cos(x) = sin(x) / tan(x)        (x = 0, where both are 0: 1)
    sin(x) = cos(x) * tan(x)        (where only cos(x) is at hand)

The division and the product keep the relative accuracy of their operands everywhere,
near the zeros of cos included: there tan(x) is large and accurate, as NumPy's tan
reduces its argument exactly. Measured against long double over normal, uniform (|x| <
1e3), huge (to 1e300), subnormal arguments and the doubles nearest the zeros of cos and
sin: NumPy's tan is within 0.57 ulp, cos from sin / tan within 2.4 ulp (np.cos: 0.56),
so results agree with NumPy's to rounding, not bit for bit; infinities and NaN give NaN
as np.cos does. Only float64 kernels of at least `settings.TRIG_FROM_TAN` elements are
rewritten (float32 sin and cos are SIMD loops already: nothing to gain).
"""
from __future__ import annotations

import math

import numpy as np

from ...ops import sympy_rules
from ...ops.registry import REGISTRY
from . import settings           # read when used (tests and tuning change them)
from .program import Call, Code, op_cost

COS_FROM_SIN = "cos_from_sin"        # call (sin x, x) -> cos x
SIN_FROM_COS = "sin_from_cos"        # call (cos x, x) -> sin x
SIN_FROM_HALF_TAN = "sin_from_half_tan"   # call (x, tan(x / 2)) -> sin x


def _tan(argument: str) -> str:
    return REGISTRY["tan"].template.format(argument)


def _calls() -> dict:
    """The calls the rewrite emits, printed from tan's declaration. cos's division is
    masked where x == 0 (its result there is the 1 it starts from), so 0 / 0 is never
    computed (it would warn where np.cos does not); a masked division measured faster
    than two `np.where`s. Below |x| = 1e-8 the half-angle sine is x itself (sin x rounds
    to x there, and x / 2 would lose the last bit of a subnormal x)."""
    tan, divide, multiply = REGISTRY["tan"], REGISTRY["divide"], REGISTRY["multiply"]
    tan_cost = op_cost(tan, (None,))
    cos = Call(COS_FROM_SIN, f"np.divide({{0}}, {_tan('{1}')}, out=np.ones_like({{0}}), "
               "where={1} != 0.0)", None, tan_cost + divide.cost + 2, None, None)
    sin = Call(SIN_FROM_COS, f"{{0}} * {_tan('{1}')}", None, tan_cost + multiply.cost,
               None, None)
    half = Call(SIN_FROM_HALF_TAN,
                "np.where(np.abs({0}) < 1e-8, {0}, 2.0 * {1} / (1.0 + {1} * {1}))", None,
                divide.cost + 6, None, None)
    return {"cos": cos, "sin": sin, "half angle": half, "tan": Call(
        tan.name, tan.template, None, tan_cost, tan.precedence, None)}


# The same calls in the array-API form of generated code (fused_op.py), where the
# tangent's speed is no reason: the function itself, of the operand it is the function of.
ARRAY_API = {COS_FROM_SIN: "xp.cos({1})", SIN_FROM_COS: "xp.sin({1})",
             SIN_FROM_HALF_TAN: "xp.sin({0})"}


def sympy_form(call, args):
    """The SymPy expression of a call this module made (for `fused_expression`), or None."""
    sp = sympy_rules.sympy()
    if call.name == COS_FROM_SIN:
        return sp.cos(args[1])
    if call.name == SIN_FROM_COS:
        return sp.sin(args[1])
    if call.name == SIN_FROM_HALF_TAN:
        return sp.sin(args[0])
    return None


def applies(shape, dtype) -> bool:
    """Whether a kernel computing an array of `shape` and `dtype` is rewritten."""
    minimum = settings.TRIG_FROM_TAN.get(np.dtype(dtype).name)
    return minimum is not None and math.prod(shape) >= minimum


def from_tangents(program, inputs, fed):
    """(program, inputs, rewritten): `program` with its sines and cosines computed from
    tangents, `inputs` extended with the fed values it now reads, and how many calls were
    rewritten. Each cos(x) is sin(x) / tan(x) where sin(x) is at hand (the program's own,
    or fed); each sin(x) is cos(x) * tan(x) where a fed value holds cos(x); with
    `settings.TRIG_HALF_ANGLE`, any other sine is 2 t / (1 + t**2) with t = tan(x / 2),
    and any other cosine that sine over tan(x).

    `fed(name, node)` is the fed node computing op `name` of `node`, or None."""
    code, result = program
    inputs = list(inputs)
    calls = _calls()
    own_sine = {operands: j for j, (opcode, operands, call) in enumerate(code)
                if opcode == "call" and call.name == "sin" and len(operands) == 1}
    new, renumber = Code(), {}
    rewritten = 0

    def operand_of(o):
        return renumber[("v", o[1])] if o[0] == "v" else o

    def fed_value(name, original):
        """An input operand holding op `name` of the program's `original` operand."""
        if original[0] != "in":
            return None
        node = fed(name, inputs[original[1]])
        if node is None:
            return None
        if node not in inputs:
            inputs.append(node)
        return ("in", inputs.index(node))

    def half_angle_sine(x):
        half = new.emit("mul", (("lit", "0.5"), x))
        t = new.emit("call", (half,), calls["tan"])
        return new.emit("call", (x, t), calls["half angle"])

    def rewrite(name, original, x):
        """An operand computing op `name` (sin or cos) of `x` from tangents, or None."""
        if name == "cos":
            sine = emit(own_sine[(original,)]) if (original,) in own_sine else \
                fed_value("sin", original)
            if sine is None and settings.TRIG_HALF_ANGLE:
                sine = half_angle_sine(x)
            return None if sine is None else new.emit("call", (sine, x), calls["cos"])
        cosine = fed_value("cos", original)
        if cosine is not None:
            return new.emit("call", (cosine, x), calls["sin"])
        return half_angle_sine(x) if settings.TRIG_HALF_ANGLE else None

    def emit(j):
        nonlocal rewritten
        if ("v", j) not in renumber:
            opcode, operands, call = code[j]
            value = None
            if opcode == "call" and call.name in ("sin", "cos") and len(operands) == 1:
                value = rewrite(call.name, operands[0], operand_of(operands[0]))
                rewritten += value is not None
            if value is None:
                value = new.emit(opcode, tuple(map(operand_of, operands)), call)
            renumber[("v", j)] = value
        return renumber[("v", j)]

    for j in range(len(code)):
        emit(j)
    if not rewritten:
        return program, tuple(inputs), 0
    return new.program(operand_of(result)), tuple(inputs), rewritten
