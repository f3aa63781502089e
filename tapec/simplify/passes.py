"""The rewrite engine: rebuild a graph bottom-up, applying rules at each node.

A rule is a function `rule(node) -> Tensor | Node | None` that recognises one identity
at `node` (whose inputs are already rewritten) and returns the replacement, built with
public ops in the active builder, or None. Hash-consing in the builder shares equal
nodes, so common subexpressions merge as the graph is rebuilt, and a rebuilt forward
value becomes the fed node again.

Nodes are immutable, so what a pass learns about one stays true: a node no rule fires
at is *final*, and a final node whose inputs are all *settled* (or leaves) is settled
itself: no rule fires anywhere below it, so later passes stop there. A pass that
settles the outputs is the last one, and a graph no rule changes is walked once.
"""
from __future__ import annotations

import time

from ..ir.nodes import topological_order
from ..tensor import Tensor

MAX_REWRITES_PER_NODE = 32


def dispatch(rules, present=None) -> dict:
    """{op name: the rules that can match it}, from each rule's `ops` mark. With
    `present` (the op names a graph holds), a rule marked `needs` is left out unless
    one of the ops it needs is present: it cannot fire on that graph."""
    from ..ops.registry import REGISTRY
    elementwise = [name for name, op in REGISTRY.items() if op.arity is not None]
    table = {}
    for rule in rules:
        needs = getattr(rule, "needs", None)
        if present is not None and needs is not None and present.isdisjoint(needs):
            continue
        names = getattr(rule, "ops", None) or list(REGISTRY)
        for name in names:
            for target in (elementwise if name == "elementwise" else [name]):
                table.setdefault(target, []).append(rule)
    return table


class _Dispatch:
    """The rules to try at a node: those marked for its op (`on`), less those that need
    an op the graph does not hold (`needs`; kept up to date as rules make nodes of new
    ops, which the builder records) or read an op none of its inputs is (`reads`)."""

    def __init__(self, rules, order, builder):
        self.rules, self.builder = rules, builder
        self.present = {node.op.name for node in order}
        self._made = -1
        self.refresh()

    def refresh(self):
        made = getattr(self.builder, "op_names", ())
        if len(made) != self._made:
            self._made = len(made)
            self.present |= made
            self.table = dispatch(self.rules, self.present)
            self._by_inputs = {}

    def at(self, node) -> list:
        key = (node.op.name, *[i.op.name for i in node.inputs])
        found = self._by_inputs.get(key)
        if found is None:
            found = self._by_inputs[key] = [
                rule for rule in self.table.get(node.op.name, ())
                if getattr(rule, "reads", None) is None or not rule.reads.isdisjoint(key[1:])]
        return found


def rewrite(outputs, feeds, builder, rules, deadline=None, stats=None, final=None,
            settled=None, order=None):
    """One bottom-up pass; returns the new outputs. Fed nodes are left as they are.

    `rules` is a rule list or a `_Dispatch`. `final` and `settled` (sets, updated) are
    what earlier passes learned (see the module docstring): rules are not tried again
    on a final node, and the walk stops at settled ones. `order`, when given, is the
    walk (the topological order of the outputs' graph, stopping at feeds)."""
    memo = {}
    final = set() if final is None else final
    settled = set() if settled is None else settled
    if order is None:
        order = topological_order([o for o in outputs if o is not None],
                                  is_leaf=lambda n: n in feeds or n in settled)
    if not isinstance(rules, _Dispatch):
        rules = _Dispatch(rules, order, builder)
    outer = builder.origin
    for node in order:
        if node in feeds or node in settled or not node.inputs:
            memo[node] = node
            continue
        builder.origin = node.origin        # what replaces a node comes from its op
        inputs = tuple([memo[i] for i in node.inputs])
        current = node if inputs == node.inputs else \
            builder.node(node.op, inputs, node.attrs, node.shape, node.dtype)
        if current not in final and (deadline is None or time.perf_counter() < deadline):
            rewritten = _apply_rules(current, rules, feeds, stats)
            if rewritten is not current:
                rules.refresh()
            current = rewritten
            final.add(current)
        if current is not node:
            inherit_label(node, current, feeds)
        if current in final and all(i in settled or i in feeds or not i.inputs
                                    for i in current.inputs):
            settled.add(current)
        memo[node] = current
    builder.origin = outer
    return [None if o is None else memo[o] for o in outputs]


def inherit_label(node, replacement, feeds) -> None:
    """`replacement` computes `node`'s value: it keeps the name of a value the user named
    (or of a cotangent) where it has none and is not a value of its own (fed, a leaf)."""
    if node.label is not None and replacement.label is None and replacement.inputs and \
            replacement not in feeds:
        replacement.label = node.label


def _apply_rules(node, rules, feeds, stats):
    for _ in range(MAX_REWRITES_PER_NODE):
        if node in feeds:
            return node
        for rule in rules.at(node):
            replacement = rule(node)
            if replacement is None:
                continue
            replacement = replacement._node if isinstance(replacement, Tensor) else replacement
            if replacement is node:
                continue
            if replacement.shape != node.shape or replacement.dtype != node.dtype:
                raise AssertionError(f"rule {rule.__name__} changed {node} into {replacement}")
            if stats is not None:
                stats[rule.__name__] = stats.get(rule.__name__, 0) + 1
            node = replacement
            break
        else:
            return node
    return node


def to_fixed_point(outputs, feeds, builder, rules, deadline, stats, max_passes=8,
                   order=None):
    """Repeat `rewrite` until the outputs are settled (or the budget runs out). `order`,
    when given, is the outputs' computed graph in topological order (`computed_order`)."""
    order = order if order is not None else computed_order(outputs, feeds)
    rules = _Dispatch(rules, order, builder)
    final, settled = set(), set()
    for _ in range(max_passes):
        outputs = rewrite(outputs, feeds, builder, rules, deadline, stats, final, settled,
                          order)
        order = None
        if all(o is None or o in settled or o in feeds or not o.inputs for o in outputs) \
                or time.perf_counter() >= deadline:
            break
    return outputs


def computed_order(outputs, feeds) -> list:
    """The outputs' graph in topological order, fed nodes as leaves: what code computes."""
    return topological_order([o for o in outputs if o is not None], leaves=feeds)


def count_nodes(outputs, feeds, order=None) -> int:
    """Nodes the generated code computes (what emission would print)."""
    order = computed_order(outputs, feeds) if order is None else order
    return sum(1 for n in order if n not in feeds and n.inputs)
