"""The SymPy form of a group, and the cost model's decision on it (`accept`).

The group becomes one expression over its inputs, with the arithmetic ops (add,
subtract, multiply, divide, negative, square, pow by 2 or -1) as SymPy arithmetic and
every other op as an *opaque* function named after the op (so SymPy never applies an
identity to exp, log, tanh, log1p... and never rewrites `log1p(u)` as `log(1 + u)`).
Literals become exact rationals. Cheap transforms are tried (SymPy's automatic
evaluation, `factor_terms`, `expand` then `factor_terms`, `factor` of small
integer-coefficient polynomials), then `sympy.cse`; the cheapest candidate under the cost
model (`program.py`) replaces the exact form only when `accept` allows it. Otherwise the
exact form is used: a rejected simplification still fuses.

`accept` refuses a candidate unless (1) it costs strictly less than the exact form,
(2) it uses exactly the same inputs (dropping one would change how inf and nan
propagate: `x - x -> 0`), (3) every function call in it is a call of the original,
on the same argument (so no `cosh`, `sech` or `csch` appears: `1 - tanh(x)**2 ->
cosh(x)**-2` is refused, so is any rewrite recomputing a function where the original
reused an input such as the forward `tanh`, and so is `exp(x)*exp(y) -> exp(x + y)`),
and (4) it divides by exactly the same factors (no new division by an input, and no
cancelled one: `x**2 / x -> x` would turn the nan at 0 into 0). A group is never
simplified when SymPy's automatic evaluation cancels something while its expression is
built: an input or a function call vanishes (`x * 0`, `(x + y) - x`), or a sum combines
like terms of opposite signs (`(x*y + z) - x*y`, `x - 2*x -> -x`, `(x + 1) - 1 -> x`).
So every function call of a simplified form has, up to rounding of finite values, the
argument it has in the exact form.

What an accepted simplification may change (the only differences from unfused code,
all from reassociating the arithmetic between function calls): the order of sums and
products (SymPy's canonical order, subexpressions shared by `cse`), distributivity
(`g*a + g*b -> g*(a + b)` by `factor_terms`; fractions over one denominator, `a/y +
b/y -> (a + b)/y`), constant folding (`0.5 * (2 * x) -> x`, `3 * (3 * x) -> 9 * x`,
`0.3 * (0.3 * x) -> 0.09 * x`; a folded coefficient rounds once instead of twice), a
product divided once by the product of its denominators (`a / x / y -> a / (x * y)`,
which can overflow where the original did not; `a * y**-1 -> a / y`, one rounding
instead of two), integer powers by repeated multiplication, the sign of a zero
(`x + 0 -> x`), and like terms of one sign combined (`x + x -> 2*x`, exact;
`2*x + 3*x -> 5*x`). `expand` may also cancel terms of a product of sums
(`(x + 1)*(x - 1) -> x**2 - 1`), changing rounding and overflow as distributing does.
"""
from __future__ import annotations

import functools
import time

import numpy as np

from ...ops import sympy_rules
from . import settings           # read when used (tests and tuning change them)
from .exact import call_of, literal_value
from .lowering import Unsupported, function_name, lower_cse
from .program import program_cost, used_inputs

# Functions a candidate may never bring in where the original did not call them.
FORBIDDEN_NEW_FUNCTIONS = ("cosh", "sech", "csch")


@functools.lru_cache(maxsize=None)
def _is_arithmetic(op) -> bool:
    """Whether the op's SymPy expression is plain arithmetic (+, -, *, / and integer powers)."""
    sp = sympy_rules.sympy()
    symbols = sp.symbols(f"q0:{op.arity}")
    try:
        expr = op.sympy(*symbols)
    except Exception:            # a declaration SymPy cannot evaluate: treat it as opaque
        return False
    for e in sp.preorder_traversal(expr):
        if e.is_Symbol or e.is_Rational or e.is_Add or e.is_Mul:
            continue
        if e.is_Pow and e.exp.is_Integer:
            continue
        return False
    return True


class Group:
    """SymPy expressions of a group's nodes, with what `accept` compares them against."""

    def __init__(self, inputs, dtype=np.float64):
        sp = sympy_rules.sympy()
        self.symbols = [sp.Symbol(f"a{k}") for k in range(len(inputs))]
        self.shapes = [tuple(i.shape) for i in inputs]
        self.dtype = np.dtype(dtype)
        self.texts = {}          # literal value -> its text in the exact form ("0.1")
        self.functions = {}      # SymPy function name -> its Call
        self.applications = set()
        self.divisors = set()

    def function(self, call):
        """An opaque SymPy function standing for one op (one per distinct Call)."""
        sp = sympy_rules.sympy()
        name = call.name
        k = 0
        while name in self.functions and self.functions[name] != call:
            k += 1
            name = f"{call.name}_{k}"
        self.functions[name] = call
        return sp.Function(name)

    def apply(self, call, args):
        application = self.function(call)(*args)
        self.applications.add(application)
        return application


class _Profile:
    """What a candidate is compared against: cost, inputs, function calls and divisors."""

    def __init__(self, cost, symbols, applications, divisors):
        self.cost, self.symbols = cost, symbols
        self.applications, self.divisors = applications, divisors


def simplify_group(root, nodes, inputs, exact_program, deadline):
    """(program, text) of the cheapest accepted SymPy form of the group, or None."""
    sp = sympy_rules.sympy()
    group = Group(inputs, root.dtype)
    expr = {i: s for i, s in zip(inputs, group.symbols)}
    for n in nodes:
        args = []
        for i in n.inputs:
            if i in expr:
                args.append(expr[i])
                continue
            value = literal_value(i)
            if value is None or not np.isfinite(value):
                return None      # a non-finite literal would make SymPy absorb terms (nan)
            expr[i] = sympy_rules.to_sympy_number(value)
            group.texts.setdefault(value, i.op.numpy([], i))
            args.append(expr[i])
        e = _sympy_of(n, args, group)
        if _cancels(args, e, n.op.name) or \
                e.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
            return None          # SymPy cancelled something (x - x, x * 0): keep the exact form
        if n.op.name == "divide":
            group.divisors |= _divisor_bases(args[1])
        elif n.op.name == "pow" and args[1] == -1:
            group.divisors |= _divisor_bases(args[0])
        expr[n] = e
    original = _Profile(cost=program_cost(exact_program, group.shapes),
                        symbols=frozenset(group.symbols[k] for k in used_inputs(exact_program)),
                        applications=frozenset(group.applications),
                        divisors=frozenset(group.divisors))
    best = None
    for candidate in _candidates(expr[root], deadline):
        lowered = _acceptable(original, candidate, group)
        if lowered is not None and (best is None or program_cost(lowered, group.shapes) <
                                    program_cost(best[0], group.shapes)):
            best = (lowered, candidate)
    if best is None:
        return None
    return best[0], str(best[1])


def _sympy_of(node, args, group):
    op = node.op
    if op.name == "pow" and len(args) == 2 and args[1] in (2, -1, 1):
        return args[0] ** args[1]        # x**2 is x*x and x**-1 is 1/x in NumPy too
    if op.name != "pow" and _is_arithmetic(op):
        return op.sympy(*args)
    return group.apply(call_of(op, tuple(literal_value(i) for i in node.inputs)), args)


def _cancels(args, e, op_name) -> bool:
    """Whether SymPy's automatic evaluation of one node cancelled part of its operands:
    an input or a function call vanished (`(x + y) - x`, `x * 0`, `f(x) * y / f(x)`),
    or a sum combined like terms of opposite signs (`x - 2*x -> -x`, `(x + 1) - 1 -> x`:
    inf - inf would become inf, and x + 1 would lose its rounding). Like terms of one
    sign (`x + x -> 2*x`) are not cancelling."""
    sp = sympy_rules.sympy()

    def atoms(x):
        return x.free_symbols | x.atoms(sp.Function)
    if not set().union(*map(atoms, args)) <= atoms(e):
        return True
    if op_name in ("add", "subtract"):
        second = -args[1] if op_name == "subtract" else args[1]
        signs = {}
        for term in sp.Add.make_args(args[0]) + sp.Add.make_args(second):
            coefficient, base = term.as_coeff_Mul()
            signs.setdefault(base, set()).add(bool(coefficient > 0))
        return any(len(s) > 1 for s in signs.values())
    return False


def _candidates(e, deadline):
    """Cheap rewrites of `e`: SymPy's automatic form first, then bounded transforms."""
    sp = sympy_rules.sympy()
    yield e
    transforms = [sp.factor_terms]
    if _expanded_terms(e) <= settings.MAX_EXPANDED_TERMS:
        transforms.append(lambda x: sp.factor_terms(sp.expand(x)))
    if sp.count_ops(e) <= settings.FACTOR_MAX_OPS:
        transforms.append(_factor_polynomial)
    seen = {e}
    for transform in transforms:
        if time.perf_counter() >= deadline:
            return
        try:
            candidate = transform(e)
        except Exception:        # SymPy gave up on this one (PolynomialError...): skip it
            continue
        if candidate not in seen:
            seen.add(candidate)
            yield candidate


def _expanded_terms(e) -> int:
    """An upper bound on the terms `sympy.expand` gives (it multiplies out products of
    sums: 20 binomials would give a million terms), so it is only tried when small."""
    cache = {}

    def bound(x):
        if x in cache:
            return cache[x]
        if x.is_Add:
            n = sum(bound(a) for a in x.args)
        elif x.is_Mul:
            n = 1
            for a in x.args:
                n *= bound(a)
        elif x.is_Pow and x.exp.is_Integer and x.exp > 0:
            n = bound(x.base) ** int(x.exp)
        else:
            n = max([1] + [bound(a) for a in x.args])     # inside a function: its own
        cache[x] = n = min(n, 10 ** 9)
        return n
    return bound(e)


def _factor_polynomial(e):
    """`sympy.factor` of `e` if it is a polynomial with integer coefficients in its inputs
    and function calls (each call standing as one variable); else `e`. (On a rational
    function, factor would combine fractions over a common denominator: not cheap
    arithmetic, and not tried.)"""
    sp = sympy_rules.sympy()
    stand_ins = {c: sp.Dummy() for c in e.atoms(sp.Function)}
    p = e.xreplace(stand_ins)
    if not p.is_polynomial(*p.free_symbols) or \
            not all(n.is_Integer for n in p.atoms(sp.Number)):
        return e
    return sp.factor(p).xreplace({v: k for k, v in stand_ins.items()})


def _divisor_bases(d) -> set:
    """The non-constant factors of a divisor, as bases (x**2 -> x)."""
    sp = sympy_rules.sympy()
    return {f.as_base_exp()[0] for f in sp.Mul.make_args(d) if not f.is_number}


def _divisors_of(expr) -> set:
    sp = sympy_rules.sympy()
    found = set()
    for p in expr.atoms(sp.Pow):
        if p.exp.is_number and p.exp.is_negative:
            found |= _divisor_bases(p.base)
    return found


def _acceptable(original, candidate, group):
    """The lowered program of `candidate` if `accept` allows it, else None."""
    sp = sympy_rules.sympy()
    if candidate.free_symbols != original.symbols:
        return None                  # an input dropped: inf/nan would propagate differently
    applications = candidate.atoms(sp.Function)
    if not applications <= original.applications:
        return None                  # a function called on a new argument, or a new function
    names = {function_name(f) for f in original.applications}
    if any(function_name(f) in FORBIDDEN_NEW_FUNCTIONS and function_name(f) not in names
           for f in applications):
        return None                  # cosh, sech, csch: never introduced (1 - tanh**2 ...)
    if _divisors_of(candidate) != original.divisors:
        return None                  # a new division by an input, or a cancelled one
    try:
        program = lower_cse([candidate], group)
    except Unsupported:
        return None
    if program_cost(program, group.shapes) >= original.cost:
        return None                  # never costlier, and equal cost keeps the exact form
    return program


def accept(original, candidate) -> bool:
    """Whether the cost model lets SymPy expression `candidate` replace `original`.

    Both are SymPy expressions (real SymPy functions such as `tanh` are costed by name);
    `original` is costed as `sympy.cse` and the printer would write it. See the module
    docstring for the rules; for example `accept(1 - tanh(x)**2, cosh(x)**-2)` is False.
    """
    group = Group([])
    program = lower_cse([original], group)
    sp = sympy_rules.sympy()
    profile = _Profile(cost=program_cost(program, group.shapes),
                       symbols=frozenset(original.free_symbols),
                       applications=frozenset(original.atoms(sp.Function)),
                       divisors=frozenset(_divisors_of(original)))
    return _acceptable(profile, candidate, group) is not None
