"""Graph mode: what a `tapec.function` trace records beyond the ops themselves.

A trace runs the user's function eagerly on fresh copies of its arguments under a
`TracingTape`, which records every op (differentiable or not) into one program:

* **Guards.** Whenever Python reads a traced value — `if t > 0`, `float(t)`, a tensor
  used as a shape, an axis, a mask or a slice bound — the tape records the value it
  saw. The compiled program checks each guard first and returns None when one
  differs, and the call is traced again: a replay never uses a stale value.
* **Effects.** `Variable.assign` (and `assign_add` / `assign_sub`) while tracing is a
  write of a recorded value. A later read of that Variable in the same trace reads the
  written value, and the program returns each Variable's final value, which every
  call writes back. The writes made while tracing are undone when the trace ends, so
  the first call, like every other, performs them exactly once.
* **Random inputs.** A random op (`tapec.random`, dropout's mask) is a leaf of its own
  (`record_random`): the program draws it afresh at every call. Python cannot read
  such a value (or anything computed from it) while tracing: it changes at every call,
  so no guard could hold.
* **Prints.** `tf.print` is an effect (`record_print`): the values it prints are extra
  outputs of the program, printed after every call in the order of the prints.
* **Structure.** An op whose inputs are all Python literals (a seed of ones, the
  identity a jacobian is seeded with) is recorded too, so the simplifier sees it as
  structure rather than as a captured array.

`interpret` evaluates IR so that enclosing tapes record what it computes: how a
derivative built symbolically joins an enclosing recording. A trace takes it as a graph
(`splice.py`); a tape that differentiates it again records it op by op.
"""
from __future__ import annotations

import math

import numpy as np

from .. import context
from ..ir.nodes import topological_order
from ..ops.registry import Op, apply, declare
from ..ops.shape import (CONSTANT, FILL, IDENTITY, PLACEHOLDER, READ_VARIABLE, SHAPE,
                         STOP_GRADIENT)
from ..random import RANDOM
from ..tape import GradientTape
from ..tensor import Tensor, call_site
from .splice import REARRANGING, SPLICED, Splice, computable


def guard_expectation(value):
    """The hashable form of a value Python read: a Python scalar, or for an array
    ("array", shape, flat values)."""
    if isinstance(value, (bool, int, float, complex)) or isinstance(value, tuple):
        return value          # already a Python scalar, or an expectation
    array = np.asarray(value)
    if array.ndim == 0:
        return array.item()
    return ("array", array.shape, tuple(array.ravel().tolist()))


def _number_source(value) -> str:
    """A Python number as source that evaluates to it (inf and nan have no literal)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "float('nan')" if value != value else \
            ("float('inf')" if value > 0 else "-float('inf')")
    if isinstance(value, complex):
        return f"complex({_number_source(value.real)}, {_number_source(value.imag)})"
    return repr(value)


def guard_test(arg: str, expected) -> str:
    """Python source that is true when the value named `arg` differs from `expected`
    (nan equals nan: a guard holds for the value Python saw)."""
    if isinstance(expected, tuple):
        _, shape, flat = expected
        values = ", ".join(_number_source(v) for v in flat)
        return (f"np.shape({arg}) != {shape!r} or not np.array_equal(np.ravel({arg}), "
                f"np.array([{values}]), equal_nan=True)")
    if isinstance(expected, bool):
        return f"bool({arg}) is not {expected!r}"
    if isinstance(expected, (float, complex)) and expected != expected:
        return f"not np.isnan({arg})"
    return f"{arg} != {_number_source(expected)}"


def guard_holds(value, expected) -> bool:
    """Whether `value` passes a guard that expects `expected` (as `guard_test` checks)."""
    if isinstance(expected, bool):
        return bool(np.asarray(value)) is expected
    seen = guard_expectation(value)
    if isinstance(expected, tuple):
        return seen[:2] == expected[:2] and np.array_equal(
            np.array(seen[2]), np.array(expected[2]), equal_nan=True)
    return seen == expected or (seen != seen and expected != expected)


def _guard_lines(out, args, node):
    return [f"if {guard_test(args[0], node.attrs['expected'])}:",
            "    return None      # a guard differs: trace again",
            f"{out} = True"]


GUARD = declare(Op(
    name="guard", impl=None, infer=lambda x, expected: ((), np.dtype(bool)),
    numpy_lines=_guard_lines, differentiable=False,
    latex="{0}"))                  # the printers pass a guard's value through


class TracingTape(GradientTape):
    """Records every op on the arguments, every Variable read and write, and the guards."""

    _records_everything = True

    def __init__(self, splicing=False):
        super().__init__(persistent=True, watch_accessed_variables=True)
        if not splicing:            # an export's trace, recorded once to be printed
            self._call_sites = True
        self.guards = []          # (tensor id, expectation)
        self.assigned = {}        # handle id -> (Variable, tensor of its latest value)
        self._before = {}         # handle id -> (Variable, value before the trace wrote it)
        self.sources = set()      # ids of the arguments a functional form differentiates
        # Derivatives join the trace as graphs (splice.py) rather than op by op; printers
        # that read the recording itself (an export's formulas) need every op in it.
        self.splicing = splicing
        self.spliced = {}         # tensor id -> (Splice, node) of a `spliced` record
        self.random = set()       # ids of the random inputs
        self.prints = []          # (the print's text maker, [tensors it prints]), in order
        # ids of arguments that stand for arrays of another library (tracing/foreign.py):
        # their program runs lazily or under jax.jit, where no guard can be checked
        self.stand_ins = set()

    def watch_argument(self, t, differentiated=False):
        self._graph.add_leaf(t._id, PLACEHOLDER, {"kind": "watched"}, t._shape, t._dtype)
        self._tensors[t._id] = t
        self._values[t._id] = t._value
        self._live.add(t._id)
        if differentiated:
            self.sources.add(t._id)

    def _on_op(self, op, inputs, attrs, out):
        if not self._recording:
            return
        ids = tuple([t._id for t in inputs])
        live = self._live
        if any(i in live for i in ids) or (ids and all(t._literal for t in inputs)):
            self._add_op(op, inputs, ids, attrs, out)

    def _on_value_used(self, tensor, value, converted=None):
        tensor_id = getattr(tensor, "_id", None)
        if tensor_id is not None and tensor_id in self._graph and tensor_id in self._live:
            if converted and self.sources and tensor._dtype.kind in "fc" and \
                    self._depends_on_sources(tensor_id):
                raise TypeError(
                    f"{converted} at {'%s:%d' % call_site()} turned a value that depends on a "
                    "differentiated argument into plain data, so its derivative would be "
                    "lost (a zero gradient); compute it with tensor ops instead (tf.stack, "
                    "tf.reduce_mean, NumPy functions called on the tensor itself), or read "
                    "tf.stop_gradient(value) if no derivative is meant")
            # values no guard can hold: Python must not read them, nor what they feed
            for ids, what, why, instead in (
                    (self.random, "the value of a random tensor (or one computed from it)",
                     "a random value changes at every call, so the traced program cannot "
                     "depend on it through Python", "draw the value outside the function "
                     "and pass it in"),
                    (self.stand_ins, "a value computed from an array of another library "
                     "(Dask, JAX, PyTorch, ...)", "its program runs in that library, "
                     "lazily or under jax.jit, where no value exists to check a guard "
                     "against", "pass NumPy arrays (docs/scale.md)")):
                if ids and self._depends_on(tensor_id, ids, SHAPE):
                    read = converted or "bool(), an index, a shape or a branch"
                    raise TypeError(
                        f"tapec.function: Python read {what} at {'%s:%d' % call_site()} "
                        f"while tracing ({read}); {why}. Compute with tensor ops instead "
                        f"(tf.where for a branch, tf.gather for an index), or {instead}")
            self.guards.append((tensor_id, guard_expectation(value)))

    def record_random(self, t, attrs, shape_tensor=None):
        """`t` is a random input of the program (`attrs`: what to draw; its stream number
        is its position among the trace's random inputs), of the shape `shape_tensor`
        computes when the program runs, if given (a tensor of this trace)."""
        attrs = dict(attrs, stream=len(self.random))
        self._graph.add_op(t._id, RANDOM, attrs, t._shape, t._dtype,
                           () if shape_tensor is None else (shape_tensor._id,))
        self._tensors[t._id] = t
        self._values[t._id] = t._value
        self._live.add(t._id)
        self.random.add(t._id)

    def record_print(self, printer, tensors):
        """A print of `tensors` at this point of the program: `printer(tensors)` prints
        the values of each call."""
        self.prints.append((printer, list(tensors)))

    def _depends_on_sources(self, tensor_id) -> bool:
        """Whether the recorded value `tensor_id` is computed from a differentiated
        argument (a walk back along the recording, and through spliced graphs;
        stop_gradient cuts it)."""
        return self._depends_on(tensor_id, self.sources, STOP_GRADIENT)

    def _depends_on(self, tensor_id, ids, cut) -> bool:
        """Whether the recorded value `tensor_id` is computed from one of `ids` (a walk
        back along the recording, and through spliced graphs, stopped by ops `cut`)."""
        graph, spliced = self._graph, self.spliced
        seen, frontier = set(), [tensor_id]
        while frontier:
            found = graph.ancestors(
                frontier, lambda node_id: graph[node_id].op is not cut) - seen
            if not ids.isdisjoint(found):
                return True
            seen |= found
            frontier = [i for node_id in found if node_id in spliced
                        for i in spliced[node_id][0].source_ids(spliced[node_id][1])]
        return False

    def record_spliced(self, t, splice, node):
        """`t` is the value of `node` of `splice`: part of the program."""
        self._graph.add_leaf(t._id, SPLICED, {}, t._shape, t._dtype)
        self._tensors[t._id] = t
        self._values[t._id] = t._value
        self._live.add(t._id)
        self.spliced[t._id] = (splice, node)

    def _on_variable_read(self, variable, value):
        if not self._recording:
            return
        handle = variable._handle_id
        written = self.assigned.get(handle)
        if written is not None:
            # A read after a write in the same program reads what was written.
            self._add_op(IDENTITY, [written[1]], (written[1]._id,), None, value)
            return
        if handle not in self._variables:
            self._watch_variable(variable)       # trainable or not: read at every call
        self._graph.add_op(value._id, READ_VARIABLE, {}, value._shape, value._dtype,
                           (handle,))
        self._tensors[value._id] = value
        self._values[value._id] = value._value
        self._live.add(value._id)

    def _on_variable_assign(self, variable, new: Tensor):
        handle = variable._handle_id
        if new._id not in self._graph:       # a value computed outside the trace
            copy = Tensor._eager(new._value)
            self._add_op(IDENTITY, [new], (new._id,), None, copy)
            new = copy
        self._before.setdefault(handle, (variable, variable._value))
        self.assigned[handle] = (variable, new)

    def undo_writes(self):
        """Give every Variable the trace wrote its value from before the trace."""
        for variable, value in self._before.values():
            variable._value = value


def interpret(outputs, fed_value, on_guard=None) -> list:
    """Evaluate IR `outputs` so that the enclosing tapes record what they compute: the
    trace being recorded, if it alone records any of it, as a graph; otherwise through
    the public ops, each op recorded by every tape.

    `fed_value(node)` gives the tensor for a fed node (or None when the node is not
    fed, and is computed from its inputs). `on_guard(tensor, expected)` is told the
    value each guard node checks, in order, before anything after it is computed."""
    roots = [o for o in outputs if o is not None]
    fed = {}

    def is_fed(node) -> bool:      # one call per node walked (a lambda made it three)
        t = fed.get(node, _UNASKED)
        if t is _UNASKED:
            t = fed[node] = fed_value(node)
        return t is not None

    order = topological_order(roots, is_leaf=is_fed)
    fed = {node: t for node, t in fed.items() if t is not None}
    tracer = _splicing_tracer(order, fed)
    if tracer is None:
        return _interpret_ops(outputs, order, fed, on_guard)
    splice = Splice(tracer, order, fed)
    for node in order:
        if node.op is GUARD and on_guard is not None:
            on_guard(splice.tensor(node.inputs[0]), node.attrs["expected"])
    return [None if o is None or o.op is GUARD else splice.tensor(o) for o in outputs]


def _splicing_tracer(order, fed):
    """The trace that takes IR `order` as a graph: the one recording tape that splices,
    when no other recording tape would record any of it."""
    tracer = None
    for tape in context.active_tapes():
        if not tape._recording:
            continue
        if getattr(tape, "splicing", False) and tracer is None:
            tracer = tape
        elif tape._live and any(t._id in tape._live for t in fed.values()):
            return None          # records ops on these values: it needs them one by one
    if tracer is None:
        return None
    for node in order:
        if node not in fed and node.op is not GUARD and not computable(node.op):
            return None
    return tracer


def _interpret_ops(outputs, order, fed, on_guard):
    """`interpret` through the public ops."""
    env = {}
    for node in order:
        if fed.get(node) is not None:
            env[node] = fed[node]
        elif node.op is CONSTANT:
            env[node] = _literal(node)
        elif node.op is FILL:
            # A constant such as a seed of ones stays structure on enclosing tapes (a
            # `fill` leaf, not a fed value), so their derivatives can fold it away.
            env[node] = apply(FILL, **node.attrs)
            env[node]._literal = True
        elif node.op is GUARD:
            env[node] = None
            if on_guard is not None:
                on_guard(env[node.inputs[0]], node.attrs["expected"])
        elif node.op.interpret is not None:      # ops whose values are not arrays
            env[node] = node.op.interpret(*(env[i] for i in node.inputs),
                                                   **node.attrs)
        else:
            inputs = [env[i] for i in node.inputs]
            env[node] = apply(node.op, *inputs, **node.attrs)
            if node.op.name in REARRANGING and inputs[0]._literal:
                env[node]._literal = True         # a broadcast seed of ones stays a fill
    return [None if o is None else env[o] for o in outputs]


_UNASKED = object()


def _literal(node) -> Tensor:
    value = np.asarray(node.attrs["value"], dtype=node.dtype)
    value.flags.writeable = False
    return Tensor._eager(value, literal=True)

