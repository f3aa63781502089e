"""The native tier of 0-d float64 programs: their Python-float body written in C, compiled
by the system's C compiler once the program has run long enough to pay for it.

A program of thousands of 0-d operations (a scalar recurrence unrolled by a Python loop,
an ODE step) costs 15-40 ns an operation on Python floats and 1-3 ns in C. When every
node of such a program has a C form (`Op.c`: arithmetic, comparisons, `where`, sqrt,
and sin/cos where NumPy calls the C library's, as for the Python-float tier), `emit`
writes the C function beside the Python source (`<fn>_c_source`, so the generated
source and the disk cache show and keep it), and `compile_function` puts a `Tiered` function in the place of `<fn>_scalar`:

  * calls run the Python-float function and add up their time;
  * once that time passes `COMPILE_AFTER_SECONDS`, a background thread runs the C
    compiler (`$CC`, else `cc`): a subprocess, so the program keeps running meanwhile.
    A program whose calls take less than `MIN_CALL_SECONDS` stays in Python: a call
    through ctypes costs as much;
  * when the library is loaded, calls go to C. A call during which the C code raised an
    IEEE invalid-operation or divide-by-zero flag (0/0, sqrt(-1), sin(inf): where Python
    floats raise), or whose result holds a NaN (whose sign depends on an operand order
    the C compiler may commute), raises FloatingPointError, and the dispatcher runs the
    NumPy version, as when Python floats raise.

Bit identity with NumPy is the contract, as for the Python-float tier: every C form is
the IEEE operation NumPy performs, or the C library's sin/cos where a probe shows
NumPy's loop is that function; the compiler gets `-ffp-contract=off` and no fast-math,
so nothing is fused into an FMA or reordered. Long programs are compiled at -O0 (gcc
takes seconds per thousand statements at -O1; -O0 code still runs 5x faster than
Python floats), short ones at -O1.

No compiler, a compiler error or `tapec.set_native(False)` ($TAPEC_NATIVE=0) leaves the
Python tiers in place; nothing else changes. The C text holds only tapec's own templates,
numbered variables and hexadecimal float literals, never a user's name or text.
"""
from __future__ import annotations

import ctypes
import logging
import os
import shlex
import shutil
import subprocess
import tempfile
import threading
import time

import numpy as np

from .. import config

_log = logging.getLogger("tapec.native")

#: Seconds a program spends in Python floats before its C version is compiled.
COMPILE_AFTER_SECONDS = 0.05
#: A call through ctypes costs about 2 µs: programs faster than this in Python floats
#: (a few dozen operations) stay there.
MIN_CALL_SECONDS = 5e-6
#: Above this many statements the C code is compiled at -O0 (compile time, not speed).
OPTIMIZE_UP_TO = 2000
#: Programs longer than this stay in Python: gcc -O0 takes about 4 s per 100,000
#: statements, in the background.
MAX_STATEMENTS = 200_000
#: Seconds the C compiler may take before the program stays in Python.
COMPILER_TIMEOUT = 300

_FLOAT64 = np.dtype(np.float64)
_BOOL = np.dtype(np.bool_)
# The IEEE flags by which C reports what Python floats raise on.
_FLAGS = "FE_INVALID | FE_DIVBYZERO"


def c_program(order, parameter: dict, outputs) -> str | None:
    """C source of `int tapec_program(const double *in, double *out, double *scratch)`, or
    None.

    `order` is the Python-float body's topological order, `parameter` maps each fed node
    to its parameter's index (in[k] is the k-th parameter) and `outputs` is what the
    body returns (out[i] is the i-th output that is not None). The C function returns 1
    when an IEEE flag in _FLAGS was raised (the caller then runs the Python tiers), else
    0. None when a node has no C form, a parameter is not float64 or the program is
    longer than MAX_STATEMENTS.

    A program compiled at -O0 (over OPTIMIZE_UP_TO statements) keeps its values in the
    caller's `scratch` buffer, of `tapec_scratch` doubles (a global of the library),
    not on the C stack: a thread's stack may be smaller than 100,000 doubles. Shorter
    ones use locals (registers, at -O1) and get no buffer."""
    if len(order) > MAX_STATEMENTS or any(n.dtype != _FLOAT64 for n in parameter):
        return None
    spill = len(order) > OPTIMIZE_UP_TO
    names = {}
    lines = []
    values = 0

    def define(node, expression):
        nonlocal values
        if spill:
            names[node] = f"v[{values}]"
            lines.append(f"v[{values}] = {expression};")
        else:
            names[node] = f"v{values}"
            kind = "double" if node.dtype == _FLOAT64 else "int"
            lines.append(f"const {kind} v{values} = {expression};")
        values += 1

    for node, k in parameter.items():
        if spill:
            names[node] = f"in[{k}]"
        else:
            define(node, f"in[{k}]")
    for node in order:
        if node in names:
            continue
        form = node.op.c
        expression = None if form is None else form([names[i] for i in node.inputs], node)
        if expression is None:
            return None
        if not node.inputs:             # a literal: inlined where it is used
            names[node] = expression
        else:
            define(node, expression)
    results = [o for o in outputs if o is not None]
    lines += [f"out[{i}] = {names[o]};" for i, o in enumerate(results)]
    # At -O0 every use of `v` would reload the pointer from the stack (45% slower on the
    # W8 loop); `register` keeps it in a register, as fast as locals.
    pointer = ["register double *const restrict v = scratch;"] if spill else []
    return "\n".join(["#include <math.h>", "#include <fenv.h>", "",
                      f"const int tapec_scratch = {values if spill else 0};", "",
                      "int tapec_program(const double *in, double *out, double *scratch)",
                      "{", *("    " + line for line in pointer),
                      "    feclearexcept(FE_ALL_EXCEPT);",
                      *("    " + line for line in lines),
                      f"    return fetestexcept({_FLAGS}) != 0;", "}", ""])


def compiler() -> list | None:
    """The C compiler's command ($CC, else cc), or None when there is none."""
    command = shlex.split(os.environ.get("CC", "") or "cc")
    if not command or shutil.which(command[0]) is None:
        return None
    return command


def build(c_source: str):
    """Compile `c_source` into a shared library and load it: its `tapec_program` and
    `tapec_scratch` (the doubles of scratch a call needs), or None (with the reason
    logged) when there is no compiler or it fails."""
    command = compiler()
    if command is None:
        return None
    statements = c_source.count(";")
    level = "-O1" if statements <= OPTIMIZE_UP_TO else "-O0"
    with tempfile.TemporaryDirectory(prefix="tapec-native-",
                                     ignore_cleanup_errors=True) as folder:
        source, library = os.path.join(folder, "program.c"), os.path.join(folder, "program.so")
        with open(source, "w") as f:
            f.write(c_source)
        try:
            done = subprocess.run([*command, level, "-fPIC", "-shared", "-ffp-contract=off",
                                   "-fno-fast-math", "-o", library, source, "-lm"],
                                  capture_output=True, text=True, timeout=COMPILER_TIMEOUT)
        except (OSError, subprocess.SubprocessError) as e:
            _log.info("native tier: the C compiler did not run: %s", e)
            return None
        if done.returncode != 0:
            _log.info("native tier: the C compiler failed: %s", done.stderr[-2000:])
            return None
        try:
            # Loaded before the folder goes: the mapping outlives the file.
            loaded = ctypes.CDLL(library)
            program = loaded.tapec_program
            scratch = ctypes.c_int.in_dll(loaded, "tapec_scratch").value
        except (OSError, AttributeError, ValueError) as e:
            _log.info("native tier: the compiled library did not load: %s", e)
            return None
    program.argtypes = [ctypes.POINTER(ctypes.c_double)] * 3
    program.restype = ctypes.c_int
    return program, scratch


def _caller(program, scratch: int, n_in: int, slots: tuple):
    """A call of `program` on the Python tiers' arguments: the Python tiers' result
    tuple (floats; None where `slots` has None), or None when the C code flagged an
    IEEE exception. Each thread gets its own `scratch` buffer (the program writes its
    values there), made on its first call."""
    inputs_type = ctypes.c_double * n_in
    outputs_type = ctypes.c_double * sum(s is not None for s in slots)
    scratch_type = ctypes.c_double * scratch
    buffers = threading.local()

    def call(args):
        out = outputs_type()
        buffer = None
        if scratch:
            buffer = getattr(buffers, "v", None)
            if buffer is None:
                buffer = buffers.v = scratch_type()
        if program(inputs_type(*map(float, args)), out, buffer):
            return None
        values = out[:]
        # The sign of a NaN depends on operand order, which the C compiler may commute
        # (IEEE leaves it open); NumPy's version decides NaN results.
        if any(v != v for v in values):
            return None
        return tuple(None if s is None else values[s] for s in slots)
    return call


class Tiered:
    """The Python-float function of a 0-d float64 program, until its C version is built;
    then the C version. It stands in the generated module for `<fn>_scalar`, so the
    dispatcher (codegen/scalar.py) runs NumPy where it raises.

    `python` is the Python-float function, `n_in` its parameter count, `slots` per output
    the index of its value in the C outputs (None for a None output), and `c_source` its
    C version (`c_program`)."""

    __slots__ = ("python", "c_source", "n_in", "slots", "native", "spent", "calls", "state")

    def __init__(self, python, n_in: int, slots: tuple, c_source: str):
        self.python, self.c_source, self.n_in, self.slots = python, c_source, n_in, slots
        self.native = None      # the C caller, once built
        self.spent = 0.0        # seconds spent in the Python-float function
        self.calls = 0          # ... in this many calls
        # "python" -> "building" -> "native" or "failed"; or "python" -> "short" (stays)
        self.state = "python"

    def __call__(self, *args):
        native = self.native
        if native is not None:
            result = native(args)
            if result is None:
                raise FloatingPointError("an IEEE invalid operation or division by zero")
            return result
        start = time.perf_counter()
        result = self.python(*args)
        self.spent += time.perf_counter() - start
        self.calls += 1
        if self.spent > COMPILE_AFTER_SECONDS and self.state == "python":
            if self.spent < MIN_CALL_SECONDS * self.calls:
                self.state = "short"        # C would not be faster
            else:
                self.build(wait=False)
        return result

    def build(self, wait: bool = True) -> bool:
        """Build the C version now (in a background thread unless `wait`); True when calls
        run in C after this one. Does nothing when the native tier is off."""
        if self.state != "python" or not config.native_enabled():
            return self.state == "native"
        self.state = "building"
        if wait:
            self._build()
        else:
            thread = threading.Thread(target=self._build, name="tapec-native", daemon=True)
            with _builds_lock:
                _builds.add(thread)
            thread.start()
        return self.state == "native"

    def _build(self):
        try:
            built = build(self.c_source)
            if built is None:
                self.state = "failed"
                return
            self.native = _caller(*built, self.n_in, self.slots)
            self.state = "native"
        finally:
            with _builds_lock:
                _builds.discard(threading.current_thread())


_builds: set = set()            # background builds in progress
_builds_lock = threading.Lock()


def wait_for_builds(timeout: float | None = None) -> bool:
    """Wait for the background builds in progress (benchmarks: the steady state is the
    one after them); True when none is left."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        with _builds_lock:
            pending = next(iter(_builds), None)
        if pending is None:
            return True
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return False
        pending.join(left)


def output_slots(outputs) -> tuple:
    """Per output, its index among the outputs that are not None (the C `out` array)."""
    slots, k = [], 0
    for o in outputs:
        slots.append(None if o is None else k)
        k += o is not None
    return tuple(slots)
