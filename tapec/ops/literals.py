"""Python source for constant values, exact for their dtype.

A float32 literal prints as the shortest decimal that round-trips in float32 (`0.1`,
not `0.10000000149011612`); NumPy's weak Python scalars (NEP 50) then give it the dtype
of the array it meets, so the generated code computes exactly what the eager op did.
"""
from __future__ import annotations

import numpy as np


def python_literal(value) -> str:
    value = np.asarray(value)
    item = value.item()
    if value.dtype.kind == "b":
        return repr(bool(item))
    if value.dtype.kind in "iu":
        return str(int(item))
    if value.dtype.kind == "c":
        return f"complex({python_literal(value.real)}, {python_literal(value.imag)})"
    if np.isnan(item):
        return "np.nan"
    if np.isinf(item):
        return "np.inf" if item > 0 else "(-np.inf)"
    text = np.format_float_positional(value.astype(value.dtype)[()], unique=True, trim="0")
    if text.endswith("."):
        text += "0"
    if len(text) > 20:
        text = np.format_float_scientific(value[()], unique=True, trim="0")
    return f"({text})" if text.startswith("-") else text


def is_exact_float(p: int, q: int) -> bool:
    """Whether the fraction p / q (q > 0) is exactly a float64: a power-of-two denominator
    and a numerator of at most 53 bits. SymPy holds the literal 0.3 as
    5404319552844595 / 2**54; such a fraction is printed as the one float it is."""
    return q & (q - 1) == 0 and abs(p) < 2 ** 53 and q <= 2 ** 1074


# --- the same in the array-API form of generated code (codegen/array_api.py) -------------

def xp_dtype(dtype) -> str:
    """`xp.float32`, `xp.int64`, `xp.bool`: a dtype in the standard's namespace."""
    return "xp." + np.dtype(dtype).name


def xp_literal(value, dtype) -> str:
    """A Python number exact in `dtype`, as source (`xp.inf`, `xp.nan` for those)."""
    text = python_literal(np.asarray(value, dtype=dtype))
    return text.replace("np.inf", "xp.inf").replace("np.nan", "xp.nan")


def xp_scalar(value, dtype) -> str:
    """A 0-d array of `dtype` on the arguments' device (`device`), as source."""
    return f"xp.asarray({xp_literal(value, dtype)}, dtype={xp_dtype(dtype)}, device=device)"


def xp_full(shape, value, dtype) -> str:
    """An array of `shape` filled with `value`, on the arguments' device, as source."""
    return (f"xp.full({tuple(shape)}, {xp_literal(value, dtype)}, dtype={xp_dtype(dtype)}, "
            "device=device)")
