"""GradientTape: records operations on watched tensors and differentiates them.

Recording: while a tape is active (its `with` block, in the thread that entered it),
every op with an input the tape watches adds a node to the tape's networkx graph
(see `graph`), and the tape keeps the tensors whose values a derivative may read.
A watched tensor is one passed to `watch`, a trainable Variable read while
`watch_accessed_variables` is on, or the output of a recorded op.
"""
from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator
from operator import attrgetter
from types import MappingProxyType
from typing import Any

import numpy as np

from . import config, context, engine, nest
from .autodiff.explain import warn_integer_sources, warn_not_differentiable
from .autodiff.arguments import (UnconnectedGradients, check_parallel_iterations,
                                  check_targets, describe_sources, fill_unconnected, frozen,
                                  one_hot, unconnected, zeros)
from .autodiff.output_gradients import ONES, seed_entries
from .ir import graph, provenance, sites
from .ir.recorded import Recorded
from .ir.graph import Record, new_record
from .ir.nodes import attrs_key
from .ops.registry import is_fed_literal, literal_record
from .ops.shape import PLACEHOLDER, READ_VARIABLE, broadcast_to
from .tensor import Tensor, Variable, _next_id, _to_array, call_site

__all__ = ["GradientTape", "UnconnectedGradients"]

log = logging.getLogger("tapec")


def _leaf_kind(kind):
    """The attributes of a leaf of `kind`, one mapping shared by all such leaves, and
    their part of the recording's rows, keyed once instead of once per leaf."""
    attrs = {"kind": kind}
    return attrs, attrs_key(attrs)


_INPUT, _INPUT_ROW = _leaf_kind("input")          # a recorded op's unwatched input
_WATCHED, _WATCHED_ROW = _leaf_kind("watched")    # a tensor passed to watch()
_VARIABLE, _VARIABLE_ROW = _leaf_kind("variable")  # a watched Variable's handle


_ONE_SOURCE = (Tensor, Variable)
_RELEASED = graph.Recording()        # the recording of every released tape: kept empty
# Recordings this long postpone collecting the older generations until they stop
# (context.py).
_LONG_RECORDING = 1000
_NO_ATTRS = MappingProxyType({})     # one read-only empty mapping for attribute-free ops
_tensor_id = attrgetter("_id")


def _nest(active, entering) -> None:
    """`entering` starts recording while the `active` tapes record: from now on each may
    be differentiated inside another's context, so all keep their recorded Tensors."""
    entering._keep = True
    for tape in active:
        tape._keep = True


class GradientTape:
    """Record operations for automatic differentiation (TensorFlow's `tf.GradientTape`).

    Args:
        persistent: if False (default), `gradient` (or `jacobian`) may be called once,
            and the tape releases what it holds afterwards.
        watch_accessed_variables: if True (default), trainable Variables read while the
            tape is active are watched automatically.
    """

    _records_everything = False     # True on the tapes that trace tapec.function

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True) -> None:
        self._persistent = bool(persistent)
        self._watch_accessed_variables = bool(watch_accessed_variables)
        self._recording = False
        self._used = False
        self._entered = False       # TensorFlow's "has a tape": entered, not yet released
        self._released_variables = ()   # watched_variables() after a release (as TF)
        self._warned_conversion = False
        self._postponing = False    # this recording postpones old collections (context.py)
        self._keep = self._persistent   # whether it keeps every recorded Tensor (_clear)
        self._call_sites = config.call_sites_enabled()     # see config.set_call_sites
        self._clear()

    @property
    def recorded(self) -> Recorded:
        """A read-only view of what this tape recorded (for tapec's own compilers). Made
        on each access: a view kept on the tape would make the tape a reference cycle,
        which waits for the garbage collector instead of being freed on release."""
        return Recorded(self)

    def _clear(self):
        self._graph = graph.Recording()
        # id -> the value of every recorded tensor a derivative may read. Values, not the
        # Tensors: a Tensor is a collected object, and keeping one per recorded op alive
        # until the gradient made long recordings trigger the collector's full passes.
        self._values = {}
        # id -> the Tensor of a leaf (watched, an input, a constant), and, once `_keep`
        # (a persistent tape, or one that has recorded beside another: `_nest`), of every
        # recorded value: a gradient taken inside a recording context is computed from
        # these very Tensors, so that the recording tapes record its derivatives.
        self._tensors = {}
        self._live = set()      # ids of watched tensors and recorded op outputs
        self._variables = {}    # handle id -> watched Variable
        self._ignored = set()   # ids passed to watch() while not recording (for explain)
        # For explain(): tensor ids are allocated in creation order, so windows of ids
        # tell what was created while this tape was not recording. `_gaps` holds closed
        # windows (first id, why, last id), `_gap` the open one (first id, why), and
        # `_started` an id allocated when recording first started.
        self._gaps = []
        self._gap = None
        # (tensor id, how, "file:line", an id allocated then): values that left the tape
        self._conversions = []
        self._started = _next_id() if self._recording else None
        self._unrecorded = None     # ops run on unwatched values (ir/provenance.py), lazily

    def _note_pause(self, why):
        """Remember that recording stops now (`why`: 'stop_recording' or 'exit')."""
        self._gap = (_next_id(), why)

    def _note_resume(self):
        now = _next_id()
        if self._started is None:
            self._started = now
        if self._gap is not None:
            self._gaps.append(self._gap + (now,))
            del self._gaps[:-64]           # a bounded history is enough to explain
            self._gap = None

    # --- context management ----------------------------------------------------------
    def __enter__(self) -> GradientTape:
        if self._recording:
            raise ValueError("GradientTape: this tape is already recording; a tape cannot be "
                             "entered twice")
        if self._used:          # as TensorFlow: a released tape starts a new recording
            self._used = False
            self._clear()
        self._entered = True
        tapes = context._state.tapes            # _push, inlined: every eager step enters
        if tapes:
            _nest(tapes, self)
        tapes.append(self)
        self._recording = True
        self._note_resume()
        return self

    def __exit__(self, typ: Any, value: Any, traceback: Any) -> bool:
        if self._recording:
            self._pop()
            self._gap = (_next_id(), "exit")    # _note_pause("exit"), inlined
        return False

    def _push(self):
        tapes = context._state.tapes
        if tapes:
            _nest(tapes, self)
        tapes.append(self)
        self._recording = True

    def _pop(self):
        tapes = context._state.tapes
        if tapes and tapes[-1] is self:         # the innermost tape: no search
            tapes.pop()
        else:
            try:
                tapes.remove(self)
            except ValueError:
                raise RuntimeError("GradientTape: this tape is not active in the current "
                                   "thread") from None
        self._recording = False
        if self._postponing:
            self._postponing = False
            context.resume_old_collections(self)

    @contextlib.contextmanager
    def stop_recording(self) -> Iterator[None]:
        """Temporarily stop recording. As TensorFlow: RuntimeError if the tape was never
        entered or was released by a non-persistent gradient(), ValueError if it is
        entered but not recording (its with block ended)."""
        if not self._entered or self._used:
            raise RuntimeError("Trying to stop recording a tape which is not recording: "
                               "stop_recording() can only be used inside the tape's `with` "
                               "block")
        if not self._recording:
            raise ValueError("Tape is not recording: stop_recording() can only be used "
                             "inside the tape's `with` block")
        self._pop()
        self._note_pause("stop_recording")
        try:
            yield
        finally:
            self._push()
            self._note_resume()

    def reset(self) -> None:
        """Forget everything recorded so far (as exiting and re-entering a new tape).
        ValueError outside the tape's `with` block, as TensorFlow."""
        if not self._recording:
            raise ValueError("Tape is not recording: reset() can only be used inside the "
                             "tape's `with` block")
        self._clear()
        self._used = False

    # --- watching --------------------------------------------------------------------
    def watch(self, tensor: Any) -> None:
        """Ensure `tensor` (a Tensor, Variable, or nested list of them) is traced. As
        TensorFlow, it has no effect while the tape is not recording (inside
        `stop_recording()`, after the with block); a tape not yet entered still watches."""
        flat = (tensor,) if type(tensor) is Tensor else nest.flatten(tensor)
        ignored = self._entered and not self._recording
        g = self._graph
        if g is _RELEASED and not ignored:
            g = self._graph = graph.Recording()
        for t in flat:
            if isinstance(t, Tensor):
                if t._value is None:
                    raise ValueError("watch: symbolic tensors cannot be watched")
                if t._dtype.kind not in "fc":
                    log.warning("The dtype of the watched tensor must be floating (e.g. "
                                "tapec.float32), got %s", t._dtype.name)
                    warn_not_differentiable("watch", t)
                if ignored:
                    self._ignored.add(t._id)
                    continue
                if t._id not in g:
                    g.add_leaf(t._id, PLACEHOLDER, _WATCHED, t._shape, t._dtype, _WATCHED_ROW)
                    self._tensors[t._id] = t
                    self._values[t._id] = t._value
                    if self._call_sites:
                        g.sites[t._id] = sites.capture()
                self._live.add(t._id)
            elif isinstance(t, Variable):
                if t._dtype.kind not in "fc":
                    warn_not_differentiable("watch", t)
                if ignored:
                    self._ignored.add(t._handle_id)
                else:
                    self._watch_variable(t)
            else:
                raise ValueError(f"watch: expected a Tensor or a Variable, got "
                                 f"{type(t).__name__} {t!r:.80}")

    def _watch_variable(self, variable):
        handle = variable._handle_id
        if handle not in self._variables:
            self._variables[handle] = variable
            self._graph.add_leaf(handle, PLACEHOLDER, _VARIABLE, variable._value.shape,
                                 variable._value.dtype, _VARIABLE_ROW)
            self._graph.names[handle] = variable._name
            self._live.add(handle)

    @property
    def graph(self) -> Any:
        """What this tape recorded, as a `networkx.DiGraph` (built on access): node keys are
        tensor ids; attributes op, attrs, shape, dtype, inputs; edges carry argpos."""
        return graph.to_networkx(self._graph)

    def explain(self, target: Any, source: Any) -> str:
        """Why `gradient(target, source)` is None (or zeros under ZERO), in one sentence:
        not watched, not on any path, integer dtype, recorded under stop_recording, or
        cut by stop_gradient; or what it is when it is not None. See docs/explain.md."""
        from .autodiff.explain import explain
        return explain(self, target, source)

    def latex(self, target: Any, sources: Any = None, names: Any = None) -> str:
        """LaTeX of `target` as recorded (sources=None) or of its derivative with respect
        to `sources` (a tensor, variable or list). `names` maps tensors or variables to
        the symbols to print (Variables default to their names). See docs/latex.md."""
        from .export.latex import tape_latex
        return tape_latex(self, target, sources, names)

    def watched_variables(self) -> tuple[Variable, ...]:
        """The variables this tape watches, in order of construction (after a
        non-persistent tape is released: those it watched then, as TensorFlow)."""
        if self._used:
            return self._released_variables
        if not self._variables:
            return ()
        return tuple(sorted(self._variables.values(), key=lambda v: v._index))

    # --- recording (called by ops) -----------------------------------------------------
    def _on_value_used(self, tensor, value, converted=None):
        """Python read a tensor's value (bool(), float(), ...; tracing tapes make a guard).
        A recorded floating value turned into plain data (`converted`: np.asarray,
        .numpy(), float()) leaves the tape, as in TensorFlow: remembered with its line for
        explain(), and np.asarray / np.array warns, once per tape."""
        if not converted or not self._recording or tensor._dtype.kind not in "fc" or \
                tensor._id not in self._live:
            return
        filename, line = call_site()
        self._conversions.append((tensor._id, converted, f"{filename}:{line}", _next_id()))
        if converted.startswith("np.") and not self._warned_conversion:
            self._warned_conversion = True
            warnings.warn_explicit(
                "a tensor a GradientTape is recording was converted to a NumPy array "
                f"({converted}); operations on that array are not recorded and get no "
                "gradient (tape.explain(target, source) names the line)", UserWarning,
                filename, line)

    def _on_variable_read(self, variable, value: Tensor):
        if not self._recording:
            return
        handle = variable._handle_id
        if handle not in self._variables:
            if not (self._watch_accessed_variables and variable.trainable):
                return
            self._watch_variable(variable)
        if value._dtype.kind not in "fc":
            return
        self._graph.add_op(value._id, READ_VARIABLE, {}, value._shape, value._dtype,
                           (handle,))
        self._values[value._id] = value._value
        if self._keep:
            self._tensors[value._id] = value     # see _clear
        self._live.add(value._id)

    def _on_op(self, op, inputs, attrs, out):
        if not self._recording:
            return
        ids = tuple(map(_tensor_id, inputs))
        if self._live.isdisjoint(ids):      # printable provenance (ir/provenance.py)
            self._unrecorded = provenance.note(self._unrecorded, op, inputs, ids, attrs, out)
            return
        self._add_op(op, inputs, ids, attrs, out)

    def _add_op(self, op, inputs, ids, attrs, out):
        """Record `out = op(*inputs)`; inputs the tape has not seen become leaves."""
        g = self._graph
        for t in inputs:
            if t._id in g:
                continue
            if t._literal:
                literal_op, literal_attrs = literal_record(t)
                if is_fed_literal(op, t):
                    g.add_fed_literal(t._id, literal_op, literal_attrs, t._dtype)
                    self._tensors[t._id] = t
                    self._values[t._id] = t._value
                else:
                    g.add_leaf(t._id, literal_op, literal_attrs, t._shape, t._dtype)
            else:
                g.add_leaf(t._id, PLACEHOLDER, _INPUT, t._shape, t._dtype, _INPUT_ROW)
                self._tensors[t._id] = t
                self._values[t._id] = t._value
        g.add(out._id, new_record(Record, (op, attrs or _NO_ATTRS, out._shape, out._dtype,
                                           ids)))
        if self._call_sites:
            g.sites[out._id] = sites.capture()
        self._values[out._id] = out._value
        if self._keep:
            self._tensors[out._id] = out     # see _clear
        self._live.add(out._id)
        if len(g) == _LONG_RECORDING:
            self._postponing = True
            context.postpone_old_collections(self)

    # --- differentiation ---------------------------------------------------------------
    def _begin_use(self, what):
        if self._used:
            raise RuntimeError(f"A non-persistent GradientTape can only be used to compute one "
                               f"set of gradients (or jacobians); {what} was called again. "
                               "Use GradientTape(persistent=True) for several calls.")
        if self._recording:
            if not self._persistent:
                self._pop()      # as TensorFlow: stop recording, then differentiate
            elif not GradientTape._warned_inside_context:
                GradientTape._warned_inside_context = True
                log.warning("Calling GradientTape.%s on a persistent tape inside its context "
                            "records the gradient computation on the tape; only do so to "
                            "take higher-order derivatives.", what)

    _warned_inside_context = False

    def _end_use(self):
        if not self._persistent:
            self._released_variables = self.watched_variables()
            self._used = True
            self._release()

    def _release(self):
        """Drop what a used non-persistent tape holds (empty containers stay: a step
        releases a tape every call). Its recording becomes the shared empty one: entering
        the tape again starts a new one (`_clear`), as does `watch` outside a with block."""
        self._graph, self._gap, self._unrecorded = _RELEASED, None, None
        self._tensors, self._values, self._live = {}, {}, set()
        if self._variables:
            self._variables = {}
        if self._ignored:
            self._ignored = set()
        if self._gaps:
            self._gaps = []
        if self._conversions:
            self._conversions = []

    def gradient(self, target: Any, sources: Any, output_gradients: Any = None,
            unconnected_gradients: UnconnectedGradients | str = UnconnectedGradients.NONE) -> Any:
        """Gradients of `target` with respect to each of `sources`.

        `target` is a tensor or a (nested) list of tensors, whose contributions are
        summed; `sources` any nested list / tuple / dict of Tensors and Variables, and
        the result has the same structure. `output_gradients` weights each target:
        one entry per target (as TensorFlow: flattened, a scalar broadcasts to its
        target's shape, missing trailing entries are ones, a None entry is a ValueError).
        Sources the target does not depend on, and tensors that were never watched
        (even when they fed a recorded op), give None, or zeros with
        `unconnected_gradients='zero'`; a target that is itself a source contributes its
        seed, watched or not.
        """
        if output_gradients is None and unconnected_gradients is UnconnectedGradients.NONE \
                and type(target) is Tensor and type(sources) in _ONE_SOURCE and \
                (sources._id if type(sources) is Tensor else sources._handle_id) in self._live \
                and sources._dtype.kind in "fc" and not self._used:
            # The eager step's common call, without the nested-structure handling below.
            self._begin_use("gradient()")
            try:
                results = engine.gradient_of_one(self, self._graph, self._values, target,
                                                 sources)
                if results is None:
                    results = self._run([target], [sources], [None], "gradient")
            finally:
                self._end_use()
            return results[0]
        mode = unconnected(unconnected_gradients)
        if target is None:
            raise TypeError("gradient: target must be a Tensor, a Variable or a nested list "
                            "of them, got None")
        # Arguments are checked before the tape is used, so a bad call leaves a
        # non-persistent tape usable (as TensorFlow, which releases it on success only).
        flat_targets = check_targets(target, "gradient")
        flat_sources = nest.flatten(sources)
        described = describe_sources(flat_sources)
        if output_gradients is not None:
            output_gradients = seed_entries(target, flat_targets, output_gradients)
            self._seeds(flat_targets, output_gradients, check_only=True)
        warn_integer_sources(flat_sources, described[1])
        self._begin_use("gradient()")
        try:
            targets = [self._as_target(t, "gradient") for t in flat_targets]
            seeds = [None] * len(targets) if output_gradients is None else \
                self._seeds(targets, output_gradients)
            results = self._run(targets, flat_sources, seeds, "gradient", described)
            if not self._live.issuperset(described[0]):     # a source is not watched
                results = self._unwatched_identity(flat_targets, targets, seeds,
                                                   flat_sources, described[0], results)
        finally:
            self._end_use()
        return nest.pack_sequence_as(sources, fill_unconnected(results, flat_sources, mode))

    def _unwatched_identity(self, flat_targets, targets, seeds, flat_sources, source_ids,
                            results):
        """As TensorFlow, a source the tape does not watch that is also a target gets
        that target's seed (ones by default); the engine saw no path to it."""
        live = self._live
        for i, (s, key) in enumerate(zip(flat_sources, source_ids)):
            if key in live or s._dtype.kind not in "fc":
                continue
            total = None
            for t, target, seed in zip(flat_targets, targets, seeds):
                if t is not s:
                    continue
                value = np.ones(target._shape, target._dtype) if seed is None else seed._value
                total = value if total is None else total + value
            if total is not None:
                results[i] = Tensor._eager(frozen(np.array(total, dtype=s._dtype)))
        return results

    def _run(self, targets, flat_sources, seeds, mode, described=None):
        ids, dtypes, shapes = described or describe_sources(flat_sources)
        request = engine.Request(targets, ids, dtypes, shapes, seeds, mode)
        return engine.gradient(self, request)

    def _as_target(self, t, what):
        if isinstance(t, Variable):
            if self._recording:
                return t.read_value()
            with self._resumed():      # the read must be on the tape to reach the handle
                return t.read_value()
        if not isinstance(t, Tensor):
            raise TypeError(f"{what}: targets must be Tensors or Variables, got "
                            f"{type(t).__name__} {t!r:.80}")
        return t

    @contextlib.contextmanager
    def _resumed(self):
        self._push()
        try:
            yield
        finally:
            self._pop()

    def _seeds(self, targets, output_gradients, check_only=False):
        """One seed (or None: ones) per target from the entries `seed_entries` made;
        `check_only`: validate without reading any Variable (so nothing is recorded),
        before the tape is used."""
        if output_gradients is None:
            return [None] * len(targets)
        seeds = []
        for target, seed in zip(targets, output_gradients):
            if seed is ONES:
                seeds.append(None)
                continue
            if isinstance(seed, Variable):
                seed = Tensor._eager(seed._value) if check_only else seed.read_value()
            if not isinstance(seed, Tensor):
                seed = Tensor._eager(_to_array(seed, target._dtype,
                                               "gradient: output_gradients"))
            if seed._dtype != target._dtype:
                seed = Tensor._eager(frozen(seed._value.astype(target._dtype)))
            if seed._shape != target._shape:
                try:
                    fits = np.broadcast_shapes(seed._shape, target._shape) == target._shape
                except ValueError:
                    fits = False
                if not fits:
                    raise ValueError(f"gradient: output_gradients shape {seed._shape} does "
                                     f"not match target shape {target._shape} (and does not "
                                     "broadcast to it)")
                seed = Tensor._eager(seed._value) if check_only else \
                    broadcast_to(seed, target._shape)
            seeds.append(seed)
        return seeds

    def jacobian(self, target: Any, sources: Any,
            unconnected_gradients: UnconnectedGradients | str = UnconnectedGradients.NONE,
            parallel_iterations: int | None = None, experimental_use_pfor: bool = True) -> Any:
        """d target[i...] / d source[j...] for every pair: shape target.shape + source.shape.

        With `experimental_use_pfor=True` (default) the whole jacobian comes from one
        vectorized reverse pass and one compiled call; with False, from one gradient
        per target element (the tape must then be persistent, as in TensorFlow).
        """
        mode = unconnected(unconnected_gradients)
        check_parallel_iterations(parallel_iterations)
        if not experimental_use_pfor and not self._persistent:
            raise RuntimeError("GradientTape must be created with persistent=True to compute "
                               "the jacobian with experimental_use_pfor set to False.")
        if target is None or isinstance(target, (list, tuple, dict)):
            raise TypeError(f"jacobian: target must be one Tensor or Variable, got "
                            f"{type(target).__name__} {target!r:.80}")
        check_targets(target, "jacobian")
        flat_sources = nest.flatten(sources)
        _, dtypes, _ = describe_sources(flat_sources, "jacobian")
        warn_integer_sources(flat_sources, dtypes, "jacobian")
        self._begin_use("jacobian()")
        try:
            target = self._as_target(target, "jacobian")
            if experimental_use_pfor:
                results = self._run([target], flat_sources, [None], "jacobian")
            else:
                results = self._jacobian_by_rows(target, flat_sources)
        finally:
            self._end_use()
        shapes = [target._shape + tuple(s.shape) for s in flat_sources]
        return nest.pack_sequence_as(
            sources, fill_unconnected(results, flat_sources, mode, shapes))

    def _jacobian_by_rows(self, target, flat_sources):
        size = int(np.prod(target._shape, dtype=np.int64))
        rows = [self._run([target], flat_sources, [one_hot(target, i)], "gradient")
                for i in range(size)]
        results = []
        for j, s in enumerate(flat_sources):
            column = [row[j] for row in rows]
            if any(c is None for c in column):
                results.append(None)
                continue
            stacked = np.stack([c._value for c in column]) if column else \
                np.zeros((0,) + tuple(s.shape), dtype=s._dtype)
            results.append(Tensor._eager(frozen(stacked.reshape(
                target._shape + tuple(s.shape)))))
        return results

    def batch_jacobian(self, target: Any, source: Any,
            unconnected_gradients: UnconnectedGradients | str = UnconnectedGradients.NONE,
            parallel_iterations: int | None = None, experimental_use_pfor: bool = True,
    ) -> Tensor:
        """Per-example jacobians: shape [b, y..., x...] for target [b, y...], source [b, x...].

        Assumes target[i] depends only on source[i]. Computed without forming the full
        [b, y..., b, x...] jacobian. As TensorFlow, an unconnected source gives zeros.
        """
        unconnected(unconnected_gradients)
        check_parallel_iterations(parallel_iterations)
        for name, value in (("target", target), ("source", source)):
            if not isinstance(value, (Tensor, Variable)):
                raise TypeError(f"batch_jacobian: {name} must be a Tensor or Variable, got "
                                f"{type(value).__name__}")
        target_shape = tuple(target.shape)
        source_shape = tuple(source.shape)
        if len(target_shape) < 2 or len(source_shape) < 2 or \
                target_shape[0] != source_shape[0]:
            raise ValueError(f"batch_jacobian: need target and source of rank >= 2 with the "
                             f"same first dimension, got target shape {target_shape} and "
                             f"source shape {source_shape}")
        if not experimental_use_pfor and not self._persistent:
            raise RuntimeError("GradientTape must be created with persistent=True to compute "
                               "the batch_jacobian with experimental_use_pfor set to False.")
        self._begin_use("batch_jacobian()")
        try:
            target = self._as_target(target, "batch_jacobian")
            if experimental_use_pfor:
                (result,) = self._run([target], [source], [None], "batch_jacobian")
            else:
                result = self._batch_jacobian_by_rows(target, source)
        finally:
            self._end_use()
        if result is None:
            return Tensor._eager(zeros(target_shape + source_shape[1:], target._dtype))
        return result

    def _batch_jacobian_by_rows(self, target, source):
        batch, inner = target._shape[0], target._shape[1:]
        size = int(np.prod(inner, dtype=np.int64))
        rows = []
        for j in range(size):
            seed = np.zeros((batch, size), dtype=target._dtype)
            seed[:, j] = 1
            seed = Tensor._eager(frozen(seed.reshape(target._shape)))
            (row,) = self._run([target], [source], [seed], "gradient")
            if row is None:
                return None
            rows.append(row._value)
        stacked = np.stack(rows, axis=1) if rows else \
            np.zeros((batch, 0) + tuple(source.shape)[1:], dtype=source._dtype)
        return Tensor._eager(frozen(stacked.reshape(target._shape + tuple(source.shape)[1:])))
