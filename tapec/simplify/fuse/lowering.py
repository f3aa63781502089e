"""Lowering: a SymPy expression (after `sympy.cse`) becomes a program.

Sums and products are written smallest operand first, and the small factors of a product
are multiplied, divided and negated before they meet its largest operand: `(y * s / q)
* X`, one op on X's shape, not `y * X * s / q`, three. Integer powers become the
multiplications of binary powering; a rational coefficient that is exactly a float
(0.3 is 5404319552844595 / 2**54) is one literal, printed as its shortest text in the
group's dtype (`0.3`, never the fraction), and a small fraction of the math (1/3) a
division. A folded product of literals no float holds (0.3 * 0.3, 106 bits) is not
lowered: rounding it would make the form depend on the values (and a trace's form must
not, for shape-polymorphic functions), so the group keeps its exact form. Literals keep
the text the exact form gave them where it had one. An expression holding anything else (a non-integer
power, an unknown symbol) raises `Unsupported`: the group keeps its exact form.
"""
from __future__ import annotations

import math

import numpy as np

from ...ops.literals import is_exact_float, python_literal
from ...ops import sympy_rules
from ...ops.registry import ATOM, FUNCTION_COST, REGISTRY
from .program import Call, Code, extend_shapes, op_cost, operand_shape


class Unsupported(Exception):
    """The expression holds something the printer cannot write; keep the exact form."""


def function_name(f) -> str:
    """The name of a SymPy function application's function: "tanh", "exp_1"."""
    return getattr(f.func, "__name__", str(f.func))


def lower_cse(exprs, group):
    """The program printing `exprs[0]` after `sympy.cse` (reciprocals are not shared).

    `group` names the inputs (`group.symbols`, in order; other symbols follow, sorted),
    their shapes, the dtype, the literal texts of the exact form and the ops behind the
    opaque functions (see `search.Group`)."""
    sp = sympy_rules.sympy()
    # Canonical order: the same expression prints the same way in every process (the
    # default "none" order follows set iteration, which varies with the hash seed).
    replacements, reduced = sp.cse(exprs, symbols=sp.numbered_symbols("_c"))
    substitute, env = {}, {}
    code = Code()
    symbols = dict(zip(group.symbols, (("in", k) for k in range(len(group.symbols)))))
    for s in sorted(exprs[0].free_symbols, key=str):
        symbols.setdefault(s, ("in", len(symbols)))
    lower = Lowering(code, symbols, group, env)
    for name, value in replacements:
        value = value.xreplace(substitute)
        # `1/y` shared as a temporary would turn every a/y into a*(1/y): inline it.
        if value.is_Pow and value.exp.is_number and value.exp.is_negative or value.is_Atom:
            substitute[name] = value
            continue
        env[name] = lower(value)
    return code.program(lower(reduced[0].xreplace(substitute)))


class Lowering:
    """SymPy expression -> instructions, in the order the module docstring describes."""

    def __init__(self, code, symbols, group, env):
        self.code, self.symbols, self.group, self.env = code, symbols, group, env
        self._shapes = []            # broadcast shape of each instruction's result

    def shape(self, operand) -> tuple:
        """The broadcast shape an operand has (inputs of unknown shape count as 0-d)."""
        if operand[0] == "v":
            extend_shapes(self.code.instructions, self.group.shapes, self._shapes)
        return operand_shape(operand, self.group.shapes, self._shapes)

    def size(self, operand) -> int:
        return math.prod(self.shape(operand))

    def by_size(self, operands) -> list:
        """Operands, smallest first (stable): sums and products of the small ones are
        formed before they meet a large one, so each broadcasting op runs once on the
        large shape: `(y * s / q) * X`, not `y * X * s / q` on X's shape at every step."""
        return sorted(operands, key=self.size)

    def __call__(self, e):
        if e in self.env:
            return self.env[e]
        if e.is_Symbol:
            if e not in self.symbols:
                raise Unsupported(e)
            return self.symbols[e]
        if e.is_Number:
            return self.number(e)
        if e.is_Add:
            return self.add(e)
        if e.is_Mul:
            return self.mul(e)
        if e.is_Pow:
            base, exponent = e.as_base_exp()
            if not exponent.is_Integer:
                raise Unsupported(e)
            if exponent > 0:
                return self.power(self(base), int(exponent))
            return self.code.emit("div", (("lit", "1"), self.power(self(base), -int(exponent))))
        sp = sympy_rules.sympy()
        if isinstance(e, sp.Function):
            return self.call(e)
        raise Unsupported(e)

    def literal(self, value) -> tuple:
        """A Python literal for an int or a float: the text the exact form gave that value
        if it had it, else the shortest text of the value in the group's dtype (NumPy's
        weak scalars give a Python float the dtype of the array it meets, rounding it as
        `np.asarray(value, dtype)` does, so the shorter text computes the same)."""
        if isinstance(value, int) and abs(value) >= 2 ** 53:
            raise Unsupported(value)             # 2**54 from a float's exact fraction
        text = self.group.texts.get(value)
        if text is None and isinstance(value, int):
            text = str(value)
        if text is None:
            text = python_literal(np.asarray(value, dtype=self.group.dtype))
        return ("lit", f"({text})" if text.startswith("-") else text)

    def number(self, n):
        if n.is_Integer:
            return self.literal(int(n))
        if not n.is_Rational:
            raise Unsupported(n)
        p, q = int(n.p), int(n.q)
        if is_exact_float(p, q):
            return self.literal(p / q)
        if abs(p) < 2 ** 53 and q < 2 ** 53:
            return self.code.emit("div", (self.literal(p), self.literal(q)))
        raise Unsupported(n)

    def add(self, e):
        # (operand, subtracted) per term, smallest shape first
        terms = sorted([(self(-t), True) if t.could_extract_minus_sign() else (self(t), False)
                        for t in e.args], key=lambda term: self.size(term[0]))
        if all(negative for _, negative in terms):
            acc = self.code.emit("neg", (terms[0][0],))
            rest = terms[1:]
        else:
            first = [negative for _, negative in terms].index(False)
            acc = terms[first][0]
            rest = terms[:first] + terms[first + 1:]
        for operand, negative in rest:
            acc = self.code.emit("sub" if negative else "add", (acc, operand))
        return acc

    def mul(self, e):
        coefficient, factors = e.as_coeff_mul()
        numerator, denominator = [], []
        for f in factors:
            base, exponent = f.as_base_exp()
            if exponent.is_Integer and exponent < 0:
                denominator.append(self(base ** -exponent))
            else:
                numerator.append(self(f))
        if not coefficient.is_Rational:
            raise Unsupported(e)
        negative = coefficient < 0
        p, q = abs(int(coefficient.p)), int(coefficient.q)
        sign = -1 if negative else 1
        if is_exact_float(p, q):              # one exact literal: 0.3, not 5404319552844595 / 2**54
            if p != 1 or q != 1:
                numerator.insert(0, self.literal(sign * p / q if q != 1 else sign * p))
                negative = False
        elif p < 2 ** 53 and q < 2 ** 53:     # x / 3: one correctly rounded division
            if p != 1 or negative:
                numerator.insert(0, self.literal(sign * p))
                negative = False
            denominator.insert(0, self.literal(q))
        else:                            # a folded product no float holds: the exact form stays
            raise Unsupported(coefficient)
        numerator, denominator = self.by_size(numerator), self.by_size(denominator)
        largest = max(map(self.size, numerator + denominator), default=1)
        small = [f for f in numerator if self.size(f) < largest]
        if small and len(small) < len(numerator) and \
                all(self.size(f) < largest for f in denominator):
            # divide and negate the small factors, then broadcast: (-a * b / c) * X, not
            # -(a * b * X / c), which would run the division and negation on X's shape
            result = self.product(small)
            if denominator:
                result = self.code.emit("div", (result, self.product(denominator)))
            if negative:
                result = self.code.emit("neg", (result,))
            return self.product([result] + numerator[len(small):])
        else:
            result = self.product(numerator) if numerator else ("lit", "1")
            if denominator:
                result = self.code.emit("div", (result, self.product(denominator)))
        if negative:
            result = self.code.emit("neg", (result,))
        return result

    def product(self, operands):
        result = operands[0]
        for o in operands[1:]:
            result = self.code.emit("mul", (result, o))
        return result

    def power(self, base, n):
        """base**n by binary powering: the multiplications the cost model counts."""
        if n == 1:
            return base
        half = self.power(base, n // 2)
        square = self.code.emit("mul", (half, half))
        return self.code.emit("mul", (square, base)) if n % 2 else square

    def call(self, e):
        name = function_name(e)
        call = self.group.functions.get(name)
        if call is None:             # a real SymPy function (tests of `accept`)
            call = _sympy_function_call(name.lower(), len(e.args))
        return self.code.emit("call", tuple(self(a) for a in e.args), call)


def _sympy_function_call(name, arity) -> Call:
    """A call of SymPy's own function `name` (`tanh`, `Abs`, lowered), costed as the op of
    that name where there is one, else as a function. Only costed, never printed."""
    op = REGISTRY.get(name)
    cost = op_cost(op, (None,) * arity) if op is not None else FUNCTION_COST
    template = f"np.{name}(" + ", ".join(f"{{{k}}}" for k in range(arity)) + ")"
    return Call(name, template, None, cost, ATOM, None)
