"""Elementwise fusion: maximal elementwise regions become one `fused` node each.

    fuse_elementwise(outputs, feeds, builder) -> outputs   (a list with `.stats`)

Each group of two or more elementwise ops becomes one node computing a small program
(`program.py`, the second IR) in one of two forms:

* the *exact* form (`exact.py`): the group's own ops in the same order, each printed by
  its op's template; it computes bit for bit what the unfused statements compute;
* a *simplified* form (`search.py`): SymPy's rewrites of the group's expression, lowered
  to a program (`lowering.py`) and used only when the cost model accepts it (cheaper,
  same inputs, same function calls on the same arguments, same divisors).

A large float64 program then gets its sines and cosines from tangents (`trig.py`:
cos x = sin x / tan x where sin x is at hand, the forward value a tape holds included),
since NumPy's float64 tan is a SIMD loop and its sin and cos are not.

The modules, each one job:

    regions.py          which nodes fuse together; `fuse_elementwise`, the pass
    exact.py            the exact form of a group; a `Call` from an op's declaration
    program.py          programs: instructions, hash-consing, shapes, the cost model
    search.py           the SymPy form, the candidates tried, `accept`
    lowering.py         SymPy expression -> program
    numpy_printer.py    program -> NumPy statements, from the ops' templates
    numexpr_printer.py  program -> `numexpr.evaluate` calls, where that pays
    trig.py             sines and cosines from tangents, in large float64 programs
    fused_op.py         the `fused` op (its code generation), `fused_expression`
    settings.py         time budget, numexpr and trig thresholds

What fusion knows of an op comes from its declaration (`ops/registry.py`): `template`
and `precedence` print it, `cost` weighs it, `numexpr` spells it for numexpr.

Settings live in `settings.py` and are read when used, so
`fuse.settings.TIME_BUDGET_SECONDS = 0.5` takes effect on the next call. `last_stats` holds the counts and seconds of the calling thread's last
`fuse_elementwise` call (the same as that call's `outputs.stats`).
"""
from __future__ import annotations

from . import settings  # noqa: F401  (tests and tuning set its values)

from .fused_op import FUSED, fused_expression
from .lowering import lower_cse
from .program import Call, program_cost
from .regions import FusedOutputs, fuse_elementwise
from .search import FORBIDDEN_NEW_FUNCTIONS, Group, accept
from . import regions as _regions

# The names tests reach in for, under the names they had in the single module.
_Group, _lower_cse = Group, lower_cse


def __getattr__(name):
    if name == "last_stats":
        return _regions.last_stats()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["FUSED", "Call", "FORBIDDEN_NEW_FUNCTIONS", "FusedOutputs", "accept",
           "fuse_elementwise", "fused_expression", "program_cost"]
