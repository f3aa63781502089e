"""Python-float forms of ops for the fast path of 0-d float64 code (codegen/scalar.py
writes that path; the op declarations name these forms). Each is bit-identical to what
NumPy's float64 loop computes, or absent (None) where it cannot be."""
from __future__ import annotations

import functools
import math

import numpy as np


def libm(name: str, ufunc):
    """Template `math.<name>(x)`, used only if NumPy's float64 `ufunc` agrees with it."""
    def template(args, node):
        return f"math.{name}({args[0]})" if _agrees_with_libm(name, ufunc) else None
    return template


@functools.lru_cache(maxsize=None)
def _agrees_with_libm(name: str, ufunc) -> bool:
    """Bit-for-bit agreement on 0-d arrays over a spread of arguments.

    Not a proof: a guard against a NumPy whose loop is a vectorized approximation
    (those differ on a visible fraction of arguments), run once per op on first use."""
    rng = np.random.default_rng(20240611)
    samples = np.concatenate([rng.uniform(-10, 10, 600),
                              np.exp(rng.uniform(-40, 40, 400)) * rng.choice([-1, 1], 400)])
    function = getattr(math, name)
    with np.errstate(all="ignore"):
        for x in samples.tolist():
            expected = ufunc(np.asarray(x))
            try:
                got = function(x)
            except (ArithmeticError, ValueError):
                if np.isfinite(expected):
                    return False
                continue
            if np.float64(got).tobytes() != np.asarray(expected).tobytes():
                return False
    return True


@functools.lru_cache(maxsize=None)
def _ties(ufunc) -> str | None:
    """Which operand NumPy's `ufunc` (maximum/minimum) returns for equal operands.

    Only -0.0 and 0.0 tell: "first" or "second", or None for anything else (such as
    IEEE maximumNumber's +0), which gets no template. NaN must propagate from
    either side."""
    with np.errstate(all="ignore"):
        a = bool(np.signbit(ufunc(np.asarray(-0.0), np.asarray(0.0))))
        b = bool(np.signbit(ufunc(np.asarray(0.0), np.asarray(-0.0))))
        nan = all(np.isnan(ufunc(np.asarray(p), np.asarray(q)))
                  for p, q in ((math.nan, 1.0), (1.0, math.nan)))
    if not nan:
        return None
    return {(True, False): "first", (False, True): "second"}.get((a, b))


def _select(x, y, strict: str, loose: str, ties) -> str | None:
    # x wins when strictly better (or loosely, if NumPy keeps the first at ties) or
    # NaN; otherwise y, which is also NaN when y is.
    if ties is None:
        return None
    compare = strict if ties == "second" else loose
    return f"({x} if {x} {compare} {y} or {x} != {x} else {y})"


def maximum(args, node):
    """np.maximum(x, y) on floats, NaN-propagating, -0.0/0.0 ties as NumPy breaks them."""
    return _select(args[0], args[1], ">", ">=", _ties(np.maximum))


def minimum(args, node):
    """np.minimum(x, y) on floats, NaN-propagating, -0.0/0.0 ties as NumPy breaks them."""
    return _select(args[0], args[1], "<", "<=", _ties(np.minimum))


def relu(args, node):
    """np.maximum(x, 0), as the relu op computes it."""
    return _select(args[0], "0.0", ">", ">=", _ties(np.maximum))


def sign(args, node):
    """np.sign on floats: 1, -1, 0 (+0.0 for either zero), NaN for NaN."""
    x = args[0]
    return f"(1.0 if {x} > 0.0 else -1.0 if {x} < 0.0 else 0.0 if {x} == 0.0 else {x})"
