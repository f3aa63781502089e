"""The rewrite engine: rebuild a graph bottom-up, applying rules at each node.

A rule is a function `rule(node) -> Tensor | Node | None` that recognises one identity
at `node` (whose inputs are already rewritten) and returns the replacement, built with
public ops in the active builder, or None. Hash-consing in the builder shares equal
nodes, so common subexpressions merge as the graph is rebuilt, and a rebuilt forward
value becomes the fed node again.
"""
from __future__ import annotations

import time

from ..ir.nodes import topological_order
from ..tensor import Tensor

MAX_REWRITES_PER_NODE = 32


def dispatch(rules) -> dict:
    """{op name: the rules that can match it}, from each rule's `ops` mark."""
    from ..ops.registry import REGISTRY
    elementwise = [name for name, op in REGISTRY.items() if op.arity is not None]
    table = {}
    for rule in rules:
        names = getattr(rule, "ops", None) or list(REGISTRY)
        for name in names:
            for target in (elementwise if name == "elementwise" else [name]):
                table.setdefault(target, []).append(rule)
    return table


def rewrite(outputs, feeds, builder, rules, deadline=None, stats=None, final=None):
    """One bottom-up pass; returns the new outputs. Fed nodes are left as they are.

    `final`, when given, is a set of nodes on which no rule of `rules` fires (a node is
    immutable, and so is everything below it): they are skipped, and the nodes this
    pass finds final are added, so repeated passes to a fixed point only look at what
    changed."""
    memo = {}
    if not isinstance(rules, dict):
        rules = dispatch(rules)
    if final is None:
        final = set()
    for node in topological_order([o for o in outputs if o is not None], leaves=feeds):
        if node in feeds or not node.inputs:
            memo[node] = node
            continue
        inputs = tuple([memo[i] for i in node.inputs])
        current = node if inputs == node.inputs else \
            builder.node(node.op, inputs, node.attrs, node.shape, node.dtype)
        if current not in final and (deadline is None or time.perf_counter() < deadline):
            current = _apply_rules(current, rules, feeds, stats)
            final.add(current)
        memo[node] = current
    return [None if o is None else memo[o] for o in outputs]


def _apply_rules(node, rules, feeds, stats):
    for _ in range(MAX_REWRITES_PER_NODE):
        if node in feeds:
            return node
        for rule in rules.get(node.op.name, ()):
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


def to_fixed_point(outputs, feeds, builder, rules, deadline, stats, max_passes=8):
    """Repeat `rewrite` until the outputs stop changing (or the budget runs out)."""
    rules = dispatch(rules)
    final = set()
    for _ in range(max_passes):
        new = rewrite(outputs, feeds, builder, rules, deadline, stats, final)
        if all(a is b for a, b in zip(new, outputs)):
            return new
        outputs = new
        if time.perf_counter() >= deadline:
            break
    return outputs


def count_nodes(outputs, feeds) -> int:
    """Nodes the generated code computes (what emission would print)."""
    return sum(1 for n in topological_order([o for o in outputs if o is not None],
                                            leaves=feeds)
               if n not in feeds and n.inputs)
