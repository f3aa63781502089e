"""Named functions in scalar formulas: sigma(z) for e^z / (1 + e^z), softplus(z) for
log(1 + e^z).

SymPy writes the logistic function and its derivatives out in exponentials,
`e^{-x} / (1 + e^{-x})^2`; a reader knows them as sigma(x) (1 - sigma(x)).
`with_named_functions` substitutes e^{z} = sigma(z) / (1 - sigma(z)) (or e^{-z} = (1 -
sigma(z)) / sigma(z)) for each exponential and keeps the result when it has no
exponential of that argument left and fewer operations; softplus is recognized by its
form, log(1 + e^{z}).
"""
from __future__ import annotations

from ...ops.sympy_rules import sympy as _sympy

_FUNCTIONS = {}


def functions():
    """The SymPy function classes `sigma` and `softplus`, made once (SymPy loads lazily)."""
    if not _FUNCTIONS:
        sp = _sympy()

        class sigma(sp.Function):           # noqa: N801  (printed as the letter)
            def _latex(self, printer, exp=None):
                text = r"\sigma\left(" + printer._print(self.args[0]) + r"\right)"
                return text if exp is None else f"{text}^{{{exp}}}"

        class softplus(sp.Function):        # noqa: N801
            def _latex(self, printer, exp=None):
                text = r"\operatorname{softplus}\left(" + printer._print(self.args[0]) + \
                    r"\right)"
                return text if exp is None else f"{text}^{{{exp}}}"

        _FUNCTIONS.update(sigma=sigma, softplus=softplus)
    return _FUNCTIONS


def with_named_functions(expr):
    """`expr` with softplus and sigma where they make it shorter."""
    sp = _sympy()
    if not isinstance(expr, sp.Basic) or not expr.has(sp.exp):
        return expr
    named = functions()
    expr = expr.replace(
        lambda e: isinstance(e, sp.log) and _softplus_argument(e.args[0]) is not None,
        lambda e: named["softplus"](_softplus_argument(e.args[0])))
    for power in sorted(expr.atoms(sp.exp), key=sp.count_ops):
        if power not in expr.atoms(sp.exp):
            continue
        u = power.args[0]
        negative = u.could_extract_minus_sign()
        z = -u if negative else u
        s = named["sigma"](z)
        candidate = sp.factor(sp.cancel(expr.subs(power, (1 - s) / s if negative
                                                  else s / (1 - s))))
        if not any(e.args[0] in (z, -z) for e in candidate.atoms(sp.exp)) and \
                sp.count_ops(candidate) < sp.count_ops(expr):
            expr = _sign_inside(candidate)
    return expr


def _sign_inside(expr):
    """-(s - 1) s as s (1 - s): a leading minus taken into a factor that is a sum."""
    sp = _sympy()
    if not isinstance(expr, sp.Mul):
        return expr
    coefficient, factors = expr.as_coeff_mul()
    flip = next((k for k, f in enumerate(factors) if isinstance(f, sp.Add)), None)
    if coefficient != -1 or flip is None:
        return expr
    return sp.Mul(*[-f if k == flip else f for k, f in enumerate(factors)])


def _softplus_argument(e):
    """z when `e` is 1 + e^{z}, else None."""
    sp = _sympy()
    if isinstance(e, sp.Add) and len(e.args) == 2 and sp.S.One in e.args:
        other = e.args[0] if e.args[1] == 1 else e.args[1]
        if isinstance(other, sp.exp):
            return other.args[0]
    return None
