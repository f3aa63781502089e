"""What the compile cache holds: a compiled derivative, and the version of the code
generator that made it.

`CODEGEN_VERSION` is part of every cache key, in memory and on disk: bump it whenever
the source the emitter writes for a graph can change (names included), so a cache never
serves code an older tapec generated.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# 2: values are named after their op (`tanh_2`), not `t0`, `t1`, ...
# 3: fed Python floats (`scalar0`), delta_einsum networks, trig from tangents, scratch
#    buffers in blocked kernels
# 4: long programs in the compact form (values read once written where they are read,
#    the Python-float arguments converted by the dispatcher)
# 5: 0-d float64 programs carry their C version (`gradient_native`, codegen/native.py)
# 7: `xp` and `device` are reserved (the array-API form's names): never a parameter's
# 8: values named after the user's variables (`b_h`, `dloss_dw`), `# from:` comments,
#    eye for the jacobian seed
# 9: 0-d float32 programs compute on NumPy scalars (codegen/scalar.py `numpy_scalars`)
CODEGEN_VERSION = 9


# A program compiled before SymPy was imported is not fused (a first gradient must not
# wait for SymPy's import); its third call compiles the fused program in its place.
CALLS_BEFORE_FUSING = 3


@dataclass(frozen=True)
class Compiled:
    """A compiled derivative: the function, its source and where its arguments come from.

    `countdown` is None for a final entry; for a provisional one (fusion deferred) it is
    a one-item list, the calls after the first left before the fused version replaces
    it (`due`, which each call after the first makes).

    `ir`, where the builder gave it (`IR`: what `emit` was given), lets `array_api()`
    write the same program in the array-API form; an entry read from the disk cache has
    none."""
    fn: object
    source: str
    arg_keys: tuple        # ("tape", k): value of pruned node k; ("seed", i): seed i
    title: str
    countdown: list | None = None
    ir: "IR | None" = None
    _forms: dict = field(default_factory=dict, compare=False, repr=False)

    @staticmethod
    def provisional(fn, source, arg_keys, title, ir=None) -> "Compiled":
        return Compiled(fn, source, arg_keys, title, [CALLS_BEFORE_FUSING - 1], ir)

    def array_api(self):
        """The program as an `array_api.ArrayApiFunction`, `f(xp, *args)` with the
        arguments of `fn` (`arg_keys`): emitted and compiled on the first request, then
        kept with this entry. Raises `array_api.NoArrayApiForm` naming an op the
        standard cannot spell (every request, so a caller can fall back to `fn`), and
        CodegenError for an entry without its IR."""
        found = self._forms.get("array_api")
        if found is None:
            from . import array_api
            if self.ir is None:
                raise array_api.CodegenError(
                    "this compiled program has no IR to write in the array-API form: "
                    "only tapec.function programs built in this process keep theirs "
                    "(not tape gradients, nor entries read from the disk cache)")
            ir = self.ir
            source, keys = array_api.emit(ir.outputs, ir.feeds, ir.fn_name, self.title,
                                          ir.arg_names, ir.order)
            found = self._forms["array_api"] = array_api.compile_source(
                source, ir.fn_name, tuple(keys))
        return found

    def due(self) -> bool:
        """Count a call of a provisional entry; True when it is time to replace it."""
        countdown = self.countdown
        if countdown is None:
            return False
        countdown[0] -= 1
        return countdown[0] <= 0


@dataclass(frozen=True)
class IR:
    """What a program was emitted from: `emit.emit`'s arguments."""
    outputs: list
    feeds: dict
    fn_name: str
    arg_names: dict | None = None
    order: list | None = None
