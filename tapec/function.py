"""Recorded functions: trace once per input signature, then replay compiled NumPy code.

    @tapec.function
    def f(x, w): ...                      # value only (TensorFlow's tf.function)

    tapec.grad(f, argnums=0)              # df/dx           (f returns a scalar)
    tapec.value_and_grad(f, argnums=(0, 1))
    tapec.jacobian(f), tapec.hessian(f)
    tapec.record(f, *example_args)        # trace now, on these example arguments

A call traces `f` when no trace of its input signature exists (see `tracing`): `f`
runs eagerly on fresh copies of the tensor arguments under a tape that records every
op, every Variable read and write, and every value Python reads (a guard). Value,
derivatives and Variable writes compile into ONE function; a replay computes the
guards first and traces again when one differs, so it never follows a stale branch
or index. Tensors the function did not get as arguments are captured as they were
when traced (a constant, or a random tensor drawn outside `f`); Variables are read,
and written, at every call. Random ops inside `f` (tapec.random, dropout) draw fresh
values at every call, from sequences of the function's own (`random.Streams`, reset
by `set_seed`), and `tf.print` prints each call's values after the call.

Called while a tape records (inside another trace, or under a GradientTape), a
function does not replay compiled code: it traces `f` on the given tensors and
evaluates its (derivative) program through the public ops, so the enclosing tape
records it and any nesting — grad of grad, jacobian of grad, a tape around grad —
differentiates correctly.
"""
from __future__ import annotations

import collections
import functools
import logging
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import config, context, nest, random
from .codegen.emit import no_collections, readable
from .tracing import foreign, namespaced
from .tracing.calls import Call, parameter_names
from .tracing.program import GUARD_DIFFERS, Lowered, Program, lower_trace
from .tensor import Tensor, Variable, _to_array
from .tracing.tensor_spec import TensorSpec, check_signature
from .tracing import polymorphic
from .tracing.recorder import TracingTape

__all__ = ["Function", "function", "record", "grad", "value_and_grad", "jacobian", "hessian",
           "clear_traces"]

log = logging.getLogger("tapec")

_KINDS = ("value", "grad", "value_and_grad", "jacobian", "hessian")
_FUNCTIONS = weakref.WeakSet()      # every live Function, so clear_cache() reaches them
_TRACES_PER_SIGNATURE = 32          # traces kept per signature (guards that keep changing)
_FREQUENT_TRACING = 5               # traces among the last _TRACING_WINDOW calls that warn
_TRACING_WINDOW = 10


def clear_traces() -> None:
    """Forget every recorded function's traces (`tapec.clear_cache` calls this)."""
    for f in list(_FUNCTIONS):
        f._traces.clear()
        f._generic.clear()


def _recording_tapes() -> bool:
    tapes = context._state.tapes
    return bool(tapes) and any(t._recording for t in tapes)


class Function:
    """A traced, compiled version of `fn` (see the module docstring).

    `input_signature` (a list of `TensorSpec`s, one per positional argument) fixes the
    accepted shapes and dtypes as in TensorFlow; `jit_compile` and `reduce_retracing`
    are accepted for compatibility (tapec always compiles; shapes are specialized per
    trace, see docs/functions.md)."""

    def __init__(self, fn: Callable, kind: str = "value", argnums: int | Sequence[int] = 0,
                 input_signature: Sequence[TensorSpec] | None = None, name: str | None = None,
                 jit_compile: bool | None = None, reduce_retracing: bool = False) -> None:
        if not callable(fn):
            raise TypeError(f"tapec.function: expected a callable, got {type(fn).__name__}")
        if kind not in _KINDS:
            raise ValueError(f"tapec.function: kind must be one of {_KINDS}, got {kind!r}")
        self._fn, self._kind = fn, kind
        self._single = _is_int(argnums)
        if not (self._single or (isinstance(argnums, (tuple, list))
                                 and all(_is_int(a) for a in argnums))):
            raise TypeError(f"tapec.{'function' if kind == 'value' else kind}: argnums must "
                            f"be an int or a tuple of ints, got {argnums!r:.60}")
        self._argnums = (int(argnums),) if self._single else tuple(int(a) for a in argnums)
        self._input_signature = None if input_signature is None else \
            _signature_specs(input_signature)
        self._jit_compile, self._reduce_retracing = jit_compile, bool(reduce_retracing)
        self._traces = {}            # signature -> [Program], newest last
        # input_signature None dimensions: (leaf, axis) each, and per simplify setting the
        # one Trace that serves every size (False where the program is not generic)
        self._none_dims = [] if self._input_signature is None else \
            polymorphic.none_dimensions(self._input_signature)
        self._generic = {}
        self._bound = weakref.WeakKeyDictionary()     # instance -> Function of a method
        self._recent = collections.deque(maxlen=_TRACING_WINDOW)
        self._warned_retracing = False
        self._warned_guards = False
        self.trace_count = 0
        self._parameters = parameter_names(fn)
        self._streams = random.Streams()     # the random sequences of this function's ops
        _FUNCTIONS.add(self)
        functools.update_wrapper(self, fn, updated=())   # never copy a Function's state
        if name is not None:
            self.__name__ = str(name)

    # --- TensorFlow's tf.function surface ----------------------------------------------
    def __get__(self, instance: Any, owner: type | None = None) -> Function:
        """A method: one Function per instance, with the instance bound (as TensorFlow)."""
        if instance is None:
            return self
        try:
            bound = self._bound.get(instance)
        except TypeError:           # not weakly referenceable: bind without caching
            bound = None
        if bound is None:
            bound = Function(self._fn.__get__(instance, owner), self._kind,
                             self._argnums[0] if self._single else self._argnums,
                             self._input_signature, None, self._jit_compile,
                             self._reduce_retracing)
            try:
                self._bound[instance] = bound
            except TypeError:
                pass
        return bound

    @property
    def input_signature(self) -> list[TensorSpec] | None:
        return self._input_signature

    def experimental_get_tracing_count(self) -> int:
        """How many times this function has traced (TensorFlow's name)."""
        return self.trace_count

    @property
    def python_function(self) -> Callable:
        return self._fn

    # --- calling -----------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._input_signature is not None:
            args = check_signature(self._input_signature, args, kwargs, self.__name__)
        if self._kind == "value" and config.functions_run_eagerly():
            return self._fn(*args, **kwargs)       # tf.config.run_functions_eagerly(True)
        call = Call(args, kwargs, self._parameters)
        try:
            signature = (config.simplify_setting(),) + call.key()     # checks the arguments
        except foreign.ForeignArguments:    # arrays of another library: their namespace
            signature = None
        if signature is None:       # outside the handler: its errors chain to nothing
            return self._call_foreign(call)
        # Under a recording tape a program runs through the public ops (so the tape
        # records it); otherwise its compiled function replays.
        interpreted = _recording_tapes()
        generic = self._generic.get(signature[0]) if self._none_dims else None
        if generic and not interpreted:
            result = generic.run(call.leaves)
            if result is not GUARD_DIFFERS:
                self._recent.append(False)
                return result
        for program in self._traces.get(signature, ()):
            result = _run(program, call, interpreted)
            if result is not GUARD_DIFFERS:
                self._recent.append(False)
                return result
        # One window without the collector for the trace and its first run (which
        # compiles): between the two, it would walk the traced program, alive
        # throughout, once per generation it is promoted through.
        with no_collections():
            program = self._trace(call)
            programs = self._traces.setdefault(signature, [])
            programs.append(program)
            del programs[:-_TRACES_PER_SIGNATURE]
            self._note_trace()
            result = _run(program, call, interpreted)
        if self._none_dims and not interpreted and result is not GUARD_DIFFERS and \
                signature[0] not in self._generic:
            self._generic[signature[0]] = self._generalized(call, program) or False
        if result is GUARD_DIFFERS:
            if interpreted:            # a fresh trace of eager ops cannot disagree with itself
                raise AssertionError("tapec.function: a fresh trace failed its own guards")
            return self._disagreeing_trace(call, signature, program)
        return result

    def _call_foreign(self, call):
        """A call with arrays of another library: its program runs in their namespace
        (tracing/foreign.py), and the results are arrays of that library."""
        namespace = foreign.Namespace(call.leaves)
        if _recording_tapes():
            raise TypeError(f"tapec.{self._kind}: a GradientTape or an enclosing trace is "
                            f"recording, and it cannot record a computation on "
                            f"{namespace.name} arrays (tapec tensors are NumPy arrays); call "
                            "it outside the tape, or pass NumPy arrays")
        signature = (config.simplify_setting(),) + call.foreign_key(namespace.name)
        programs = self._traces.get(signature)
        if programs:             # one program: a foreign trace holds no guards
            program = programs[0]
            self._recent.append(False)
        else:
            program = self._trace(call)
            self._traces[signature] = [program]
            self._note_trace()
        return namespaced.run(program, call.leaves, namespace, self._kind)

    def _disagreeing_trace(self, call, signature, program):
        """The compiled program computed a value Python read while tracing (float(),
        .numpy(), a branch) differently from the eager run, in the last bits: its guard
        cannot hold. This call runs the program through the eager ops instead, and
        the next call traces again."""
        self._traces.pop(signature, None)
        if not self._warned_guards:
            self._warned_guards = True
            log.warning(
                "tapec.function: %s reads a tensor's value in Python (float(), .numpy(), "
                "bool() or an index), and the compiled program computes that value "
                "differently in the last bits from the eager run, so the trace cannot be "
                "replayed; calls run eagerly and trace again. Use tensor ops (tf.where, "
                "tf.cond-free arithmetic) instead of reading values, or read them outside "
                "the function.", getattr(self._fn, "__qualname__", repr(self._fn)))
        return program.run(call)

    def _note_trace(self):
        self._recent.append(True)
        if not self._warned_retracing and sum(self._recent) >= _FREQUENT_TRACING and \
                self.trace_count > _FREQUENT_TRACING:
            self._warned_retracing = True
            log.warning(
                "%d out of the last %d calls to %s triggered tapec.function retracing. "
                "Tracing is expensive and the excessive number of tracings could be due to "
                "(1) creating @tf.function repeatedly in a loop, (2) passing tensors with "
                "different shapes, (3) passing Python objects instead of tensors, or "
                "(4) Python reading tensor values that change (if/float()/an index or "
                "shape), which guards the trace. For (1), define your @tf.function outside "
                "of the loop. For (3), pass numbers as tensors (tf.constant). See "
                "docs/functions.md.", sum(self._recent), len(self._recent),
                getattr(self._fn, "__qualname__", repr(self._fn)))

    def source(self, *args: Any, **kwargs: Any) -> str:
        """The generated source for the signature of `args` (calling the function first if
        no call has traced that signature: a trace runs it). Of a program of 0-d float64
        values, the NumPy function only, as `tapec.generated_source` shows it."""
        call = Call(args, kwargs, self._parameters)
        key = (config.simplify_setting(),) + call.key()
        if key not in self._traces:
            self(*args, **kwargs)
        program = self._traces[key][-1]
        return readable((program._compiled or program.compiled()).source)

    def _generalized(self, call, program):
        """The Trace that serves every size of the None dimensions, from this call's
        program and three probe traces (tracing/polymorphic.py), or None."""
        sizes = polymorphic.sizes_of(call.leaves, self._none_dims)
        if min(sizes.values()) < 2:            # sizes 0 and 1 change what broadcasts
            return None
        # Fused now, all of them: sources compared token by token must be made alike,
        # and a provisional trace would be fused only later.
        traces, size_maps = [program.final()], [{n: n for n in sizes.values()}]
        count = self.trace_count
        try:
            for probe in polymorphic.probe_sizes(sizes):
                leaves = polymorphic.resized(call.leaves, sizes, probe)
                args, kwargs = call.rebuild(leaves)
                probe_call = Call(args, kwargs, self._parameters)
                traces.append(self._trace(probe_call).final())
                size_maps.append(probe)
        except Exception:                      # noqa: BLE001 - a probe the function rejects
            log.debug("tapec.function: %s traced at probe sizes raised; its trace stays "
                      "specialized", getattr(self._fn, "__qualname__", self._fn),
                      exc_info=True)
            return None
        finally:
            self.trace_count = count           # probes are not traces of the caller's
        generic = polymorphic.generalize(traces, size_maps, self._none_dims, sizes)
        if generic is None:    # the call's own size may print differently (a power of two)
            generic = polymorphic.generalize(traces[1:], size_maps[1:], self._none_dims,
                                             sizes)
        return generic

    def _trace(self, call) -> Program:
        # A trace, like a build, allocates tens of thousands of records, tensors and
        # nodes that all stay alive until it ends: the collector's full passes over
        # them cost a long trace a fifth of its time, and find nothing to free.
        with no_collections():
            tape, traced, result = self._record(call)
            program = Program(lower_trace(self, tape, call, traced, result,
                                          feed_literals=not self._none_dims), self._kind)
            # Freed before the collector is back, which would otherwise walk the whole
            # recording (a young collection over every record still alive) just before
            # it is released.
            del tape, traced, result
        return program

    def _record(self, call, splicing=True):
        """Run `fn` on fresh copies of the arguments under a tracing tape (enclosing tapes
        paused: what they should record is decided by the caller), then undo the
        Variable writes the run made. With `splicing`, derivatives taken inside join
        the recording as graphs (tracing/splice.py); without, op by op, for printers
        that read the recording."""
        differentiated = set()
        if self._kind != "value":
            for k in self._argnums:
                leaf = call.leaf_of_argument(k, self._kind)
                if not isinstance(call.leaves[leaf], (Tensor, Variable, np.ndarray, np.generic,
                                                      int, float, complex)) and \
                        not foreign.is_array(call.leaves[leaf]):
                    raise TypeError(f"tapec.{self._kind}: argument {k} is a "
                                    f"{type(call.leaves[leaf]).__name__}; only tensor "
                                    "arguments can be differentiated")
                differentiated.add(leaf)
        self.trace_count += 1
        tape = TracingTape(splicing)
        traced = []
        enclosing = context._state.tapes
        context._state.tapes = []
        try:
            with tape:
                for k, a in enumerate(call.leaves):
                    if isinstance(a, Variable) and k not in differentiated:
                        traced.append(a)       # stays a Variable: tapes inside f can watch it
                    elif isinstance(a, (Tensor, Variable, np.ndarray, np.generic)) or (
                            k in differentiated and isinstance(a, (float, complex))):
                        t = Tensor._eager(_to_array(a, None, "tapec.function"))
                        if self._none_dims:
                            t._static_shape = tuple(
                                None if (k, axis) in self._none_dims else d
                                for axis, d in enumerate(t._shape))
                        tape.watch_argument(t, differentiated=k in differentiated)
                        traced.append(t)
                    elif foreign.is_array(a):
                        t = Tensor._eager(foreign.trace_value(a, k))
                        tape.watch_argument(t, differentiated=k in differentiated)
                        tape.stand_ins.add(t._id)
                        traced.append(t)
                    else:
                        traced.append(a)
                args, kwargs = call.rebuild(traced)
                result = self._fn(*args, **kwargs)
        finally:
            context._state.tapes = enclosing
            tape.undo_writes()
        return tape, traced, result


def _run(program, call, interpreted):
    return program.run(call) if interpreted else program.compiled().run(call.leaves)


def _signature_specs(input_signature):
    specs = nest.flatten(list(input_signature))
    for spec in specs:
        if not isinstance(spec, TensorSpec):
            raise TypeError(f"tapec.function: input_signature must hold tapec.TensorSpec "
                            f"objects, got {type(spec).__name__}")
    return list(input_signature)


def lower(fn, args, argnums=0, input_signature=None) -> Lowered:
    """Trace `fn` on `args` once and return the trace as IR (see `Lowered`). With an
    `input_signature`, its None dimensions read as None in the traced tensors' static
    shapes, as under tf.function."""
    function = Function(_plain(fn), "value", argnums, input_signature=input_signature)
    call = Call(tuple(args), {}, function._parameters)
    for k in function._argnums:
        call.leaf_of_argument(k, "export")        # argnums in range, before tracing
    tape, traced, result = function._record(call, splicing=False)
    return lower_trace(function, tape, call, traced, result)


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


# --- public constructors ---------------------------------------------------------------

def function(func: Callable | None = None,
             input_signature: Sequence[TensorSpec] | None = None, autograph: bool = True,
             jit_compile: bool | None = None, reduce_retracing: bool = False,
             experimental_implements: Any = None, experimental_autograph_options: Any = None,
             experimental_attributes: Any = None, experimental_relax_shapes: Any = None,
             experimental_compile: Any = None, experimental_follow_type_hints: Any = None,
             name: str | None = None) -> Function | Callable[[Callable], Function]:
    """Trace `func` once per input signature and replay compiled code (TensorFlow's
    `tf.function`; usable as `@function` or `@function(input_signature=...)`).

    Python control flow is specialized by guards rather than converted (`autograph`
    is accepted and has no effect); `jit_compile` is accepted, and tapec always
    compiles. See docs/functions.md."""
    def decorate(fn):
        return Function(fn, "value", input_signature=input_signature, name=name,
                        jit_compile=jit_compile,
                        reduce_retracing=bool(reduce_retracing or experimental_relax_shapes))
    return decorate if func is None else decorate(func)


def record(fn: Callable, *example_args: Any) -> Function:
    """A `tapec.function` of `fn`, traced now on `example_args`."""
    f = fn if isinstance(fn, Function) and fn._kind == "value" else Function(fn, "value")
    f(*example_args)
    return f


def grad(f: Callable, argnums: int | Sequence[int] = 0) -> Function:
    """The gradient of scalar-valued `f` with respect to argument(s) `argnums`."""
    return Function(_plain(f), "grad", argnums)


def value_and_grad(f: Callable, argnums: int | Sequence[int] = 0) -> Function:
    """`f`'s value and gradient, computed by one compiled function."""
    return Function(_plain(f), "value_and_grad", argnums)


def jacobian(f: Callable, argnums: int | Sequence[int] = 0) -> Function:
    """The jacobian of `f`: shape output.shape + argument.shape, one vectorized pass."""
    return Function(_plain(f), "jacobian", argnums)


def hessian(f: Callable, argnums: int | Sequence[int] = 0) -> Function:
    """The Hessian of scalar-valued `f` (the jacobian of its gradient)."""
    return Function(_plain(f), "hessian", argnums)


def _plain(f):
    """A `tapec.function` of `f` is differentiated as `f` itself; a derivative Function
    (grad, jacobian, ...) is kept, so derivatives compose (grad of grad)."""
    return f._fn if isinstance(f, Function) and f._kind == "value" else f
