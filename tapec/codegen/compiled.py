"""What the compile cache holds: a compiled derivative, and the version of the code
generator that made it.

`CODEGEN_VERSION` is part of every cache key, in memory and on disk: bump it whenever
the source the emitter writes for a graph can change (names included), so a cache never
serves code an older tapec generated.
"""
from __future__ import annotations

from dataclasses import dataclass

# 2: values are named after their op (`tanh_2`), not `t0`, `t1`, ...
CODEGEN_VERSION = 2


@dataclass(frozen=True)
class Compiled:
    """A compiled derivative: the function, its source and where its arguments come from."""
    fn: object
    source: str
    arg_keys: tuple        # ("tape", k): value of pruned node k; ("seed", i): seed i
    title: str
