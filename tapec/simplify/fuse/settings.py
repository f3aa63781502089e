"""Fusion's settings, read when used: `fuse.settings.TIME_BUDGET_SECONDS = 0.5` takes
effect on the next `fuse_elementwise` call."""
from __future__ import annotations

import functools

MIN_OPS = 2                   # a group of one op is not fused
MAX_SYMPY_OPS = 60            # larger expressions (counted as trees) keep the exact form
FACTOR_MAX_OPS = 30           # `sympy.factor` is only tried on small polynomials
MAX_EXPANDED_TERMS = 64       # `sympy.expand` only where it gives at most this many terms
TIME_BUDGET_SECONDS = 1.0     # SymPy time per `fuse_elementwise` call, all groups together

# numexpr is used from this many elements on (per dtype; absent: never) for programs of
# at least NUMEXPR_MIN_OPS instructions. Measured on the 2-core AMD EPYC (AVX-512) VM this
# was written on, NumPy 2.4 vs numexpr 2.14 (2 threads, no VML), the fused code of
# 4-, 8- and 16-op arithmetic programs printed both ways, best of 15 runs, speedup of
# numexpr over NumPy (ranges over three sessions; numexpr's times vary up to 2x run to
# run on this VM, NumPy's by 5%):
#   float64: 100k-300k 0.44-0.50x, 1M 0.5-1.3x, 2M 0.64-0.86x, 3M 0.7-1.7x, 5M 1.0-1.2x,
#            10M 1.2-2.4x;
#   float32: 0.22-0.25x at 100k, 0.41-0.46x at 1M, 0.76-0.84x at 3M and 10M (NumPy's
#            float32 loops are twice as fast as its float64 ones; numexpr's are not);
#   one exp/log/tanh/sin/log1p/expm1/atan per program, 1M elements: float32 0.1-0.5x,
#            float64 0.5-2.3x: NumPy's SIMD loops beat numexpr's C-library calls, so
#            programs calling them stay NumPy (see NUMEXPR_FUNCTIONS).
# Hence numexpr for float64 from 4M elements on, and never for float32, here. NumPy temp
# elision (in-place reuse of temporaries above 256 KiB) is what the NumPy side gets from
# fusion; numexpr adds blocking and threads, which pay only on more cores or larger data.
NUMEXPR_MIN_SIZE = {"float64": 4_000_000}
NUMEXPR_MIN_OPS = 4
NUMEXPR_INLINE_COST = 3       # a shared value this cheap is recomputed, not materialized
# Whether calls of functions (ops of cost FUNCTION_COST: exp, log, tanh...) may be printed
# for numexpr. Measured slower than NumPy's SIMD loops here, so off; set it (before
# fusing) on machines where numexpr wins.
NUMEXPR_FUNCTIONS = False

# cos(x) from sin(x) / tan(x), sin(x) from cos(x) * tan(x) (trig.py) in kernels of at least
# this many elements (per dtype; absent: never). Float64 only: NumPy's float64 sin and cos
# are the C library's (about 10 ns an element), its tan a SIMD loop (1.35 ns); its float32
# sin and cos are SIMD loops too. From 2048 elements the saved 8 ns an element outweigh the
# few microseconds of the extra calls.
TRIG_FROM_TAN = {"float64": 2048}
# Whether a sine no cosine is at hand for is 2t / (1 + t**2), t = tan(x / 2) (and a lone
# cosine that sine over tan x): within 2.4 ulp of np.sin (which is within 0.5) and 3.7 ms
# instead of 9.3 for 1M float64 elements, measured as above.
TRIG_HALF_ANGLE = True


@functools.lru_cache(maxsize=1)
def numexpr_module():
    """numexpr if it can be imported (it is optional), else None."""
    try:
        import numexpr
    except Exception:            # not installed, or broken: NumPy it is
        return None
    return numexpr
