"""A benchmark case: one row of the report (see `workloads.py` and `training.py`)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

#: rtol by dtype: a result must equal the NumPy reference to this relative tolerance
#: (absolute tolerance: rtol times the largest magnitude of the reference).
RTOL = {"float64": 1e-6, "float32": 1e-4}


@dataclass
class Case:
    id: str                         # row label: "W3", "W8 N=100", "W8 N=100 first"
    workload: str                   # "W1" .. "W11" (W7a, W7b)
    title: str                      # what is computed, with sizes
    dtype: str                      # "float32" / "float64"
    numpy: Callable[[], object]     # hand-written reference
    tapec: Callable[..., object]    # tape path
    tapec_args: tuple = ()
    data: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    first_call: bool = False        # time the first call after clearing compile caches
    functional: Callable[..., object] | None = None   # tapec's functional form, same args
    # The TF idiom when it is not the whole tape step inside `tf.function`: given the
    # decorator, the run whose per-step body it decorates (a training loop calls a
    # decorated step; the loop itself stays Python). Same args as `tapec`.
    tf_idiom: Callable[[Callable], Callable[..., object]] | None = None
    tapec_only: bool = False        # other systems do not run it (n/a)
    # Whether `tapec` is a TensorFlow body that tf.function and the functional forms can
    # run too (False: the call of something else, an exported module: those are n/a)
    tf_body: bool = True
    fresh_process: bool = False     # time the first call in a new process (W11)
    count_compiles: bool = False    # tapec columns also count compiles from a cold cache

    @property
    def rtol(self) -> float:
        return RTOL[self.dtype]


def size(n: int, scale: float, minimum: int = 2) -> int:
    """`n` times `scale`, rounded, at least `minimum`."""
    return max(minimum, round(n * scale))


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)
