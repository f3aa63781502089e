"""Derivatives of elementwise ops, derived by SymPy and turned back into tapec ops.

An elementwise op is declared with a SymPy expression `f(s0, s1, ...)`. Its cotangent
for input i is `G * df/ds_i`, where G is the incoming cotangent. Two refinements make
the rule as cheap as a hand-written one:

  * literal inputs (the `2` in `x ** 2`) are substituted before differentiating,
    so `d(x**2)/dx` is `2*x`, not `y*x**(y-1)` evaluated at run time;
  * where replacing `f` by the op's own output `OUT` removes every input from the
    derivative, the output is reused (`tanh' = 1 - OUT**2`, `exp' = OUT`,
    `sqrt' = 1/(2*OUT)`), so generated code reuses values the forward pass computed.
    Partial substitutions are refused: `OUT*y/x` for `d(x**y)/dx` would divide by x.

SymPy is imported lazily: only a cache miss that differentiates pays for it.
"""
from __future__ import annotations

import functools
import math

_sympy = None


def sympy():
    global _sympy
    if _sympy is None:
        import sympy as _module
        _sympy = _module
    return _sympy


@functools.lru_cache(maxsize=None)
def _symbols(arity: int):
    sp = sympy()
    inputs = sp.symbols(f"s0:{arity}", real=True)
    return tuple(inputs), sp.Symbol("G", real=True), sp.Symbol("OUT", real=True)


def to_sympy_number(value):
    """An exact SymPy number for a literal (so 2.0 stays the integer 2 in derivatives)."""
    sp = sympy()
    if isinstance(value, bool):
        return sp.Integer(int(value))
    if isinstance(value, int):
        return sp.Integer(value)
    if isinstance(value, float) and math.isfinite(value):
        return sp.Integer(int(value)) if value.is_integer() else sp.Rational(value)
    return sp.Float(value)


@functools.lru_cache(maxsize=None)
def cotangent_rule(op, i: int, literals: tuple):
    """SymPy expression for input i's cotangent in symbols G, OUT, s0..; None if zero."""
    sp = sympy()
    inputs, g, out = _symbols(len(literals))
    f = op.sympy(*inputs)
    # Zeros stay symbolic: SymPy has no -0.0, and g * (-0.0) must keep its sign.
    substitutions = {s: to_sympy_number(v) for s, v in zip(inputs, literals)
                     if v is not None and v != 0}
    derivative = sp.diff(f.subs(substitutions), inputs[i])
    if derivative.has(sp.zoo, sp.oo, -sp.oo, sp.nan):
        # A literal at a singularity (x / 0.0): keep it symbolic, so the value is computed
        # with IEEE arithmetic at run time (inf, nan) as the eager op computes it.
        derivative = sp.diff(f, inputs[i])
    else:
        f = f.subs(substitutions)
    if derivative == 0:
        return None
    with_out = derivative.subs(f, out)
    if not (with_out.free_symbols & set(inputs)):
        derivative = with_out
    return g * derivative


@functools.lru_cache(maxsize=None)
def _function_table():
    """SymPy function class -> tapec op, read off the elementwise declarations."""
    from .registry import REGISTRY
    sp = sympy()
    x = sp.Symbol("x", real=True)
    table = {}
    for op in REGISTRY.values():
        fn = op.sympy
        if fn is None or op.arity != 1:
            continue
        expr = fn(x)
        if isinstance(expr, sp.Function) and expr.args == (x,):
            table.setdefault(expr.func, op)
    return table


def translate(expr, env: dict):
    """Build tapec ops computing SymPy `expr`, with symbols bound to tensors by `env`.

    The SymPy walk happens once per expression (`_recipe`, cached); each call replays
    the recorded op calls on the given tensors, so differentiating a long graph costs
    no SymPy work per node."""
    results = []
    for fn, args in _recipe(expr):
        results.append(fn(*(_resolve(a, env, results) for a in args)))
    return results[-1] if results else None


def _resolve(arg, env, results):
    if isinstance(arg, _Symbol):
        return env[arg.symbol]
    if isinstance(arg, _Step):
        return results[arg.index]
    return arg                             # a Python number


class _Symbol:
    __slots__ = ("symbol",)

    def __init__(self, symbol):
        self.symbol = symbol


class _Step:
    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


@functools.lru_cache(maxsize=4096)
def _recipe(expr) -> tuple:
    """The op calls that compute `expr`, in order, as (function, argument refs)."""
    from . import elementwise as ew
    from .registry import apply
    sp = sympy()
    steps = []

    def call(fn, *args):
        steps.append((fn, args))
        return _Step(len(steps) - 1)

    def number(n):
        return int(n) if n.is_Integer else float(n.evalf(17))

    def product(factors):
        result = None
        for f in factors:
            result = f if result is None else call(ew.multiply, result, f)
        return result

    def build(e):
        if e.is_Symbol:
            return _Symbol(e)
        if not e.free_symbols:          # a constant such as 3 or log(2)
            return number(e)
        if e.is_Add:
            terms = list(e.as_ordered_terms())
            positive = [t for t in terms if not t.could_extract_minus_sign()]
            negative = [-t for t in terms if t.could_extract_minus_sign()]
            if positive:
                result = build(positive[0])
                for t in positive[1:]:
                    result = call(ew.add, result, build(t))
            else:
                result = call(ew.negative, build(negative.pop(0)))
            for t in negative:
                result = call(ew.subtract, result, build(t))
            return result
        if e.is_Mul:
            coefficient, rest = e.as_coeff_Mul()
            numerator, denominator = [], []
            for f in sp.Mul.make_args(rest):
                base, exponent = f.as_base_exp()
                if exponent.is_Number and exponent < 0:
                    denominator.append(build(base ** -exponent))
                else:
                    numerator.append(build(f))
            sign = -1 if coefficient < 0 else 1
            coefficient = abs(coefficient)
            p, q = sp.fraction(coefficient)
            if _is_float_literal(p, q):      # 0.3 is 5404319552844595 / 2**54: one factor
                numerator.insert(0, float(coefficient))
            else:
                if p != 1:
                    numerator.insert(0, number(p))
                if q != 1:
                    denominator.insert(0, number(q))
            result = product(numerator) if numerator else 1
            if denominator:
                result = call(ew.divide, result, product(denominator))
            return call(ew.negative, result) if sign < 0 else result
        if e.is_Pow:
            base, exponent = e.as_base_exp()
            if exponent == sp.Rational(1, 2):
                return call(ew.sqrt, build(base))
            if exponent == 2:
                return call(ew.square, build(base))
            if exponent.is_Number and exponent < 0:
                return call(ew.divide, 1, build(base ** -exponent))
            return call(ew.pow, build(base), build(exponent))
        op = _function_table().get(e.func)
        if op is not None:
            return call(functools.partial(apply, op), *(build(a) for a in e.args))
        raise NotImplementedError(f"no tapec op computes SymPy's {e.func.__name__}; declare "
                                  "it as an elementwise op")

    out = build(expr)
    if not isinstance(out, _Step):       # a bare symbol or number: one identity step
        steps.append((lambda value: value, (out,)))
    return tuple(steps)


def _is_float_literal(p, q) -> bool:
    """Whether p/q is a float written as a decimal (0.3), rather than a fraction of the
    math (1/3, 1/2): a large power-of-two denominator, with p/q exact as a float. One
    multiplication by float(p/q) then computes what the literal's multiplication did;
    p * x / q would cost two operations for the same result."""
    q = int(q)
    return q > 1024 and q & (q - 1) == 0 and int(p) < 2 ** 53


def latex_of(op, arity: int):
    """LaTeX of an elementwise op applied to placeholder symbols (for the exporters)."""
    sp = sympy()
    inputs, _, _ = _symbols(arity)
    return sp.latex(op.sympy(*inputs))
