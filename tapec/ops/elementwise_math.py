"""More elementwise math: inverse hyperbolics, bases 2 and 10, angles, remainders, ceil,
atan2, hypot, logaddexp and sinc, under TensorFlow's tf.math names (and NumPy's, through
`numpy_api`). Declared as `elementwise.py` declares its ops: the ufunc, the SymPy
expression (derivative, fusion and LaTeX follow from it unless a `vjp` is given for
stability or a convention), the code template. No op here has a `scalar` form: none is
proved bit-identical to its ufunc. Composites (reciprocal, real, imag, conj) are
plain functions of those ops.
"""
from __future__ import annotations

import math

import numpy as np

from .elementwise import (AWAY_FROM_ZERO, INSIDE_UNIT, POSITIVE, _function, _literal_value,
                          _public, _sp, abs, cos, divide, elementwise, equal, floor, less,
                          negative, sigmoid, sign, square, where)
from .registry import ATOM, apply, to_tensors
from .shape import zeros_like

ABOVE_ONE = ((1.1, 3.0),)

ASINH = _function("asinh", np.arcsinh, lambda x: _sp().asinh(x), r"\operatorname{{arsinh}}")
ACOSH = _function("acosh", np.arccosh, lambda x: _sp().acosh(x), r"\operatorname{{arcosh}}",
                  domain=(ABOVE_ONE,))
ATANH = _function("atanh", np.arctanh, lambda x: _sp().atanh(x), r"\operatorname{{artanh}}",
                  domain=(INSIDE_UNIT,))
LOG2 = _function("log2", np.log2, lambda x: _sp().log(x) / _sp().log(2), r"\log_{{2}}",
                 domain=(POSITIVE,))
LOG10 = _function("log10", np.log10, lambda x: _sp().log(x) / _sp().log(10), r"\log_{{10}}",
                  domain=(POSITIVE,))
# exp2' = out * log(2), from SymPy; numexpr has no exp2.
EXP2 = elementwise("exp2", np.exp2, lambda x: 2 ** x, "np.exp2({0})", 1, precedence=ATOM,
                   array_api="xp.pow(xp.full_like({0}, 2), {0})",
                   latex="2^{{{0}}}")
# Degrees <-> radians: multiplications by pi/180 and 180/pi (NumPy's constants).
DEG2RAD = elementwise("deg2rad", np.deg2rad, lambda x: x * _sp().pi / 180,
                      "np.deg2rad({0})", 1, kinds="f", precedence=ATOM,
                      array_api=f"({{0}} * {math.pi / 180!r})",
                      vjp=lambda g, out, x: (g * (np.pi / 180),),
                      latex=r"\operatorname{{deg2rad}}\left({0}\right)")
RAD2DEG = elementwise("rad2deg", np.rad2deg, lambda x: x * 180 / _sp().pi,
                      "np.rad2deg({0})", 1, kinds="f", precedence=ATOM,
                      array_api=f"({{0}} * {180 / math.pi!r})",
                      vjp=lambda g, out, x: (g * (180 / np.pi),),
                      latex=r"\operatorname{{rad2deg}}\left({0}\right)")
# ceil is piecewise constant: no gradient (None from a tape, as TensorFlow's Ceil and
# tapec's floor; tapec.grad gives zeros, as JAX).
CEIL = elementwise("ceil", np.ceil, None, "np.ceil({0})", 1, "f", differentiable=False,
                   latex=r"\operatorname{{ceil}}\left({0}\right)")


def _floormod_vjp(g, out, x, y):
    """x mod y = x - y floor(x / y): d/dx = 1 and d/dy = -floor(x / y), JAX's rule (the
    jumps, where x / y is whole, count as flat). A literal operand gets no cotangent."""
    dx = None if _literal_value(x) is not None else g
    dy = None if _literal_value(y) is not None else g * negative(floor(x / y))
    return dx, dy


def _truncatemod_vjp(g, out, x, y):
    """fmod(x, y) = x - y trunc(x / y): d/dx = 1 and d/dy = -trunc(x / y), as JAX's rem."""
    quotient = x / y
    trunc = sign(quotient) * floor(abs(quotient))
    dx = None if _literal_value(x) is not None else g
    dy = None if _literal_value(y) is not None else g * negative(trunc)
    return dx, dy


# Test domains with 1 < |x / y| < 2: away from the jumps, where x / y is whole.
_QUOTIENT_ONE, _DIVISOR = ((-1.7, -1.2), (1.2, 1.7)), ((-1.1, -0.9), (0.9, 1.1))
# Python's and NumPy's remainder: the sign of the divisor (TensorFlow's floormod).
FLOORMOD = elementwise("floormod", np.remainder, lambda x, y: _sp().Mod(x, y),
                       "np.remainder({0}, {1})", 2, kinds="fiu",
                       vjp=lambda g, out, x, y: _floormod_vjp(g, out, x, y), precedence=ATOM,
                       latex=r"\operatorname{{mod}}\left({0}, {1}\right)",
                       domain=(_QUOTIENT_ONE, _DIVISOR))
# C's fmod: the sign of the dividend (TensorFlow's truncatemod).
# fmod from the standard's floor remainder: of the magnitudes, where both are exact, with
# the sign of the dividend (its zero's too).
TRUNCATEMOD = elementwise("truncatemod", np.fmod, None, "np.fmod({0}, {1})", 2, kinds="fiu",
                          array_api="(xp.remainder(xp.abs({0}), xp.abs({1})) * xp.sign({0}))",
                          vjp=lambda g, out, x, y: _truncatemod_vjp(g, out, x, y),
                          precedence=ATOM,
                          latex=r"\operatorname{{fmod}}\left({0}, {1}\right)",
                          domain=(_QUOTIENT_ONE, _DIVISOR))

ATAN2 = elementwise("atan2", np.arctan2, lambda y, x: _sp().atan2(y, x),
                    "np.arctan2({0}, {1})", 2, kinds="f", precedence=ATOM,
                    array_api="xp.atan2({0}, {1})",
                    numexpr="arctan2({0}, {1})",
                    latex=r"\operatorname{{atan2}}\left({0}, {1}\right)",
                    domain=(AWAY_FROM_ZERO, AWAY_FROM_ZERO))


def _hypot_vjp(g, out, x, y):
    """x / hypot and y / hypot, reusing the forward value; 0 at the origin, where hypot
    has its cone point (as JAX's hypot, whose branch there is constant)."""
    scale = g / where(equal(out, 0), 1, out)
    return scale * x, scale * y


HYPOT = elementwise("hypot", np.hypot, lambda x, y: _sp().sqrt(x ** 2 + y ** 2),
                    "np.hypot({0}, {1})", 2, kinds="f",
                    vjp=lambda g, out, x, y: _hypot_vjp(g, out, x, y), precedence=ATOM,
                    numexpr="hypot({0}, {1})",
                    latex=r"\operatorname{{hypot}}\left({0}, {1}\right)",
                    domain=(AWAY_FROM_ZERO, AWAY_FROM_ZERO))
# logaddexp' is the softmax of the pair: sigmoid(x - y) and sigmoid(y - x), which neither
# overflow nor lose the smaller weight to 1 - s (and give 1 and 0 at x = +inf, y finite).
LOGADDEXP = elementwise("logaddexp", np.logaddexp,
                        lambda x, y: _sp().log(_sp().exp(x) + _sp().exp(y)),
                        "np.logaddexp({0}, {1})", 2, kinds="f",
                        vjp=lambda g, out, x, y: (g * sigmoid(x - y), g * sigmoid(y - x)),
                        precedence=ATOM,
                        latex=r"\operatorname{{logaddexp}}\left({0}, {1}\right)")
# log2(2^x + 2^y): the same weights with the differences in units of log 2.
_LN2 = math.log(2)
LOGADDEXP2 = elementwise("logaddexp2", np.logaddexp2,
                         lambda x, y: _sp().log(2 ** x + 2 ** y) / _sp().log(2),
                         "np.logaddexp2({0}, {1})", 2, kinds="f",
                         array_api=f"(xp.logaddexp({{0}} * {_LN2!r}, {{1}} * {_LN2!r}) / "
                                   f"{_LN2!r})",
                         vjp=lambda g, out, x, y: (g * sigmoid((x - y) * _LN2),
                                                   g * sigmoid((y - x) * _LN2)),
                         precedence=ATOM,
                         latex=r"\operatorname{{logaddexp2}}\left({0}, {1}\right)")

# sinc'(x) = sum over k >= 1 of (-1)^k 2k pi^(2k) x^(2k-1) / (2k+1)!: the terms to x^13,
# which leave less than 1e-20 (relative) for |x| < SINC_SERIES_BELOW.
SINC_SERIES_BELOW = 0.1
_SINC_SERIES = tuple((-1) ** k * 2 * k * math.pi ** (2 * k) / math.factorial(2 * k + 1)
                     for k in range(1, 8))


def _sinc_vjp(g, out, x):
    """sinc'(x) = (cos(pi x) - sinc(x)) / x, which cancels near 0 (0/0 at 0): there, its
    Maclaurin polynomial, whose own derivatives are right at 0 too (sinc''(0) = -pi^2/3).
    The quotient is evaluated at 1 where the series is used, so that neither branch of
    the `where` is nan (its cotangent is multiplied by 0 there, not by nan)."""
    near = less(abs(x), SINC_SERIES_BELOW)
    safe = where(near, 1, x)
    quotient = (cos(safe * np.pi) - out) / safe
    x2 = square(x)
    series = _SINC_SERIES[-1]
    for c in reversed(_SINC_SERIES[:-1]):          # Horner's scheme in x^2
        series = series * x2 + c
    return (g * where(near, series * x, quotient),)


# NumPy's normalized sinc, sin(pi x) / (pi x), 1 at 0.
SINC = elementwise("sinc", np.sinc, lambda x: _sp().sinc(_sp().pi * x), "np.sinc({0})", 1,
                   # NumPy's: y = pi * x, with 1e-20 for x where x == 0; sin(y) / y
                   array_api="(xp.sin(xp.pi * xp.where({0} == 0, xp.full_like({0}, 1e-20), "
                             "{0})) / (xp.pi * xp.where({0} == 0, xp.full_like({0}, 1e-20), "
                             "{0})))",
                   kinds="f", vjp=lambda g, out, x: _sinc_vjp(g, out, x), precedence=ATOM,
                   latex=r"\operatorname{{sinc}}\left({0}\right)", domain=(((-2.5, 2.5),),))


def atan2(y, x, name=None):
    """The angle of the point (x, y), elementwise: arctan(y / x) in the right quadrant."""
    return apply(ATAN2, y, x)


def floormod(x, y, name=None):
    """x mod y with the sign of y, as Python's `%` (x - y floor(x / y), computed exactly)."""
    return apply(FLOORMOD, x, y)


mod = floormod


def truncatemod(x, y, name=None):
    """C's fmod: x - y trunc(x / y), with the sign of x."""
    return apply(TRUNCATEMOD, x, y)


def _real_only(name, x):
    (x,) = to_tensors(name, [x])
    if x._dtype.kind == "c":
        raise TypeError(f"{name}: complex tensors are not supported (dtype "
                        f"{x._dtype.name}); tapec differentiates real tensors")
    return x


def reciprocal(x, name=None):
    """1 / x elementwise (floating tensors: an integer reciprocal would truncate)."""
    (x,) = to_tensors("reciprocal", [x])
    if x._dtype.kind not in "fc":
        raise TypeError(f"reciprocal: dtype {x._dtype.name} is not supported (expects "
                        "floating or complex tensors)")
    return divide(1, x)


def real(input, name=None):  # noqa: A002  (TensorFlow's name)
    """The real part: a real tensor itself."""
    return _real_only("real", input)


def imag(input, name=None):  # noqa: A002  (TensorFlow's name)
    """The imaginary part: zeros for a real tensor (not connected to it, as in TensorFlow)."""
    return zeros_like(_real_only("imag", input))


def conj(x, name=None):
    """The complex conjugate: a real tensor itself."""
    return _real_only("conj", x)


(asinh, acosh, atanh, log2, log10, exp2, deg2rad, rad2deg, ceil, hypot, logaddexp,  # noqa
 logaddexp2, sinc) = map(_public, (ASINH, ACOSH, ATANH, LOG2, LOG10, EXP2, DEG2RAD, RAD2DEG,
                                   CEIL, HYPOT, LOGADDEXP, LOGADDEXP2, SINC))
__all__ = ["asinh", "acosh", "atanh", "log2", "log10", "exp2", "deg2rad", "rad2deg", "ceil",
            "atan2", "floormod", "mod", "truncatemod", "hypot", "logaddexp", "logaddexp2",
            "sinc", "reciprocal", "real", "imag", "conj"]
