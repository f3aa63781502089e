"""What the compile cache holds: a compiled derivative, and the version of the code
generator that made it.

`CODEGEN_VERSION` is part of every cache key, in memory and on disk: bump it whenever
the source the emitter writes for a graph can change (names included), so a cache never
serves code an older tapec generated.
"""
from __future__ import annotations

from dataclasses import dataclass

# 2: values are named after their op (`tanh_2`), not `t0`, `t1`, ...
# 3: fed Python floats (`scalar0`), delta_einsum networks, trig from tangents, scratch
#    buffers in blocked kernels
# 4: long programs in the compact form (values read once written where they are read,
#    the Python-float arguments converted by the dispatcher)
# 5: 0-d float64 programs carry their C version (`gradient_native`, codegen/native.py)
# 7: values named after the user's variables (`b_h`, `dloss_dw`), `# from:` comments,
#    eye for the jacobian seed
CODEGEN_VERSION = 7


# A program compiled before SymPy was imported is not fused (a first gradient must not
# wait for SymPy's import); its third call compiles the fused program in its place.
CALLS_BEFORE_FUSING = 3


@dataclass(frozen=True)
class Compiled:
    """A compiled derivative: the function, its source and where its arguments come from.

    `countdown` is None for a final entry; for a provisional one (fusion deferred) it is
    a one-item list, the calls after the first left before the fused version replaces
    it (`due`, which each call after the first makes)."""
    fn: object
    source: str
    arg_keys: tuple        # ("tape", k): value of pruned node k; ("seed", i): seed i
    title: str
    countdown: list | None = None

    @staticmethod
    def provisional(fn, source, arg_keys, title) -> "Compiled":
        return Compiled(fn, source, arg_keys, title, [CALLS_BEFORE_FUSING - 1])

    def due(self) -> bool:
        """Count a call of a provisional entry; True when it is time to replace it."""
        countdown = self.countdown
        if countdown is None:
            return False
        countdown[0] -= 1
        return countdown[0] <= 0
