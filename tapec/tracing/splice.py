"""Graph mode: IR computed inside a trace joins the trace as a graph.

A `tape.gradient` inside a traced function (or a `tapec.function` called there) builds
its result as IR whose leaves are tensors the trace holds. The trace needs that IR in
its program, and Python needs the values. Evaluating the IR through the public ops
would record it op by op (a Tensor, a shape check and a record per node) only for the
trace's lowering to rebuild every node from the records. A `Splice` instead computes
the values with the ops' NumPy implementations, gives the trace one `spliced` record
per tensor Python gets back, and builds its nodes straight into the trace's IR when
the trace is lowered (`Splice.lower`).

The program is the one op-by-op recording would have made: a node belongs to it
(is live) when one of its inputs does or all of them are literals, as the tracing tape
records ops; a value computed from nothing live is captured as it was; a literal stays
structure, or becomes a fed scalar as its first consumer decides (`is_fed_literal`).
"""
from __future__ import annotations

import weakref

import numpy as np

from ..ir.nodes import topological_order
from ..ops.registry import Op, is_fed_literal, literal_record
from ..ops.shape import CONSTANT, FILL, STOP_GRADIENT
from ..tensor import Tensor

# What the trace records for a tensor a splice computed. Never built as a node (the
# lowering asks the splice for the node) and never declared: no program computes it.
SPLICED = Op(name="spliced", impl=None, infer=lambda shape, dtype: (shape, dtype),
             differentiable=False, stateful=True)

# Ops that only rearrange or repeat their input's elements: of a uniform literal, they
# make a uniform literal, which an enclosing tape records as a `fill`.
REARRANGING = frozenset({"broadcast_to", "reshape", "transpose", "identity"})


def computable(op: Op) -> bool:
    """Whether a splice computes nodes of `op`: a pure op whose NumPy implementation
    takes and gives arrays (not a custom gradient's call, not a Variable read)."""
    return op.impl is not None and op.interpret is None and not op.stateful


class Splice:
    """IR evaluated inside a trace (`tape`, a TracingTape) and joined to it.

    `order` lists the nodes inputs first, `fed` maps its leaves to the tensors they
    stand for. Nodes are evaluated in that order (`value`), as far as the tensors
    Python gets back (`tensor`) need: no further than a guard that fails its check."""

    def __init__(self, tape, order, fed):
        # The tape holds this splice (its `spliced` records) as long as it lives: a strong
        # reference back would make every trace's recording a cycle, hundreds of
        # thousands of objects left for the collector's full passes instead of freed.
        self._tape = weakref.ref(tape)
        self.order, self.fed = order, fed
        live, literal = set(), set()
        for node in order:
            t = fed.get(node)
            if t is not None:
                if t._id in tape._live:
                    live.add(node)
                if t._literal:
                    literal.add(node)
            elif node.op is CONSTANT or node.op is FILL:
                literal.add(node)
            elif node.op.impl is not None:        # not a guard, which computes nothing
                inputs = node.inputs
                if any(i in live for i in inputs) or (
                        inputs and all(i in literal for i in inputs)):
                    live.add(node)
                if node.op.name in REARRANGING and inputs[0] in literal:
                    literal.add(node)
        self.live, self.literal = live, literal
        self.values = {}          # node -> array, for every node evaluated so far
        self.reached = 0          # order[:reached] is evaluated
        self.tensors = {}         # node -> the Tensor Python got back

    def value(self, node) -> np.ndarray:
        """The value of `node`, evaluating `order` up to it."""
        values, order, fed = self.values, self.order, self.fed
        found = values.get(node)
        while found is None:
            n = order[self.reached]
            self.reached += 1
            t = fed.get(n)
            values[n] = value = t._value if t is not None else _evaluate(n, values)
            if n is node:
                found = value
        return found

    def tensor(self, node) -> Tensor:
        """The tensor Python gets for `node`: the fed tensor itself, or its value, recorded
        by the trace when it is part of the program."""
        t = self.fed.get(node)
        if t is None:
            t = self.tensors.get(node)
        if t is not None:
            return t
        value = self.value(node)
        value.setflags(write=False)
        t = Tensor._new(value, node.shape, node.dtype, None, node in self.literal)
        if node in self.live:
            self._tape().record_spliced(t, self, node)
        self.tensors[node] = t
        return t

    def source_ids(self, node) -> list:
        """The ids of the fed tensors `node` is computed from, not through a
        stop_gradient: what a walk back along a recording of each op would find."""
        fed = self.fed
        order = topological_order(
            [node], is_leaf=lambda n: n in fed or n.op is STOP_GRADIENT)
        return [fed[n]._id for n in order if n in fed]

    # --- the trace's lowering ------------------------------------------------------------
    def lower(self, lowering) -> dict:
        """{node: node of the trace's IR} for every evaluated live node, built through
        `lowering` (the trace's: its builder, its captured values) once per lowering."""
        built = lowering.spliced.get(self)
        if built is not None:
            return built
        built = lowering.spliced[self] = {}
        live, fed, known, make = self.live, self.fed, built.get, lowering.node
        for node in self.order[:self.reached]:
            if node in live and node not in fed:
                op = node.op
                inputs = tuple([known(i) or self._operand(i, op, lowering, built)
                                for i in node.inputs])
                made = built[node] = make(op, inputs, node.attrs, node.shape, node.dtype)
                if made.origin is None:         # for the comments and names of the code
                    made.origin, made.label = node.origin, made.label or node.label
        return built

    def _operand(self, node, consumer: Op, lowering, built):
        """The trace's node for input `node` (not built yet) of a node of op `consumer`."""
        t = self.fed.get(node)
        if t is not None:
            found = lowering.known(t)
            if found is None:
                found = _literal(t, consumer, lowering) if t._literal else \
                    lowering.capture(t)
        elif node in self.literal:
            # Literals are unchanged structure unless the first op that uses one feeds
            # it (Op.fed_scalars), as when a trace records a literal operand.
            value = self.values[node]
            value.setflags(write=False)
            found = _literal(Tensor._eager(value, literal=True), consumer, lowering)
        else:                   # computed from nothing live: a value the trace captured
            value = self.values[node]
            value.setflags(write=False)
            found = lowering.capture(Tensor._eager(value))
        built[node] = found
        return found


def _literal(t, consumer, lowering):
    op, attrs = literal_record(t)
    if is_fed_literal(consumer, t):
        attrs = dict(attrs, fed=True)
    return lowering.literal(op, attrs, t._shape, t._dtype, lambda: t)


def _evaluate(node, values) -> np.ndarray:
    """The value of `node` as `apply` computes it, from its inputs' values."""
    op = node.op
    if op.impl is None:       # a guard: it computes nothing
        return _NOTHING
    value = np.asarray(op.impl(*[values[i] for i in node.inputs], **node.attrs))
    if value.dtype != node.dtype:
        value = value.astype(node.dtype)
    if value.shape != node.shape:
        raise AssertionError(f"{op.name}: implementation gave shape {value.shape}, "
                             f"declared {node.shape}")
    return value


_NOTHING = np.empty(0)
