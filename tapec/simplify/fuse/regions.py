"""Regions and groups: which elementwise nodes fuse together, and the pass that fuses them.

    fuse_elementwise(outputs, feeds, builder) -> outputs (with `.stats`)

A *fusible* node is an elementwise op (`sympy` and `arity` set, a NumPy template, no
attributes) of floating dtype whose operands share its dtype, and which is not fed; or a
`where` choosing between floats, and a comparison of floats (`x == 0`) whose only users
are in one group (a bool value never roots a group: a fused node computes floats). So
the guards of derivative rules (sqrt's `where(out + |g| == 0, 1, out)`) are computed
block by block in the kernel that reads them, not as whole-array passes.
Constants and 0-d fills are *literals*: they are inlined where they are used. Fusible
nodes connected through their inputs form a region; fed nodes, non-elementwise nodes and
non-scalar fills are its inputs.

A region node is a region *output* when the graph returns it or a node outside the
region uses it. A node that several outputs of one region need is made an output too
(the classic rule for fusing trees out of a DAG), so every fused node computes one array
and no work is ever done twice; inside a group, a value used twice is computed once into
a temporary. Groups with fewer than `settings.MIN_OPS` ops are left alone (fusing one op
gains nothing), and so are 0-d groups (nothing to gain, and an unfused 0-d float64 graph
keeps the Python-float fast path of `codegen.scalar`).

Each group becomes a `fused` node holding its exact form (`exact.py`), or the cheaper
SymPy form `search.py` finds within the SymPy time budget of the call.
"""
from __future__ import annotations

import contextvars
import logging
import time

from ...ir.nodes import topological_order
from ..passes import inherit_label
from . import settings           # read when used (tests and tuning change them)
from .exact import exact_program
from .fused_op import FUSED
from .lowering import Unsupported
from .search import simplify_group
from . import trig

_log = logging.getLogger("tapec.simplify")

# The statistics of the last `fuse_elementwise` call in this context (thread, task):
# what `fuse.last_stats` reads. Concurrent compiles each see their own.
_last_stats = contextvars.ContextVar("tapec_fusion_stats", default={})


class FusedOutputs(list):
    """The outputs `fuse_elementwise` returns, with `stats`, the counts and seconds of the
    call that made them: groups seen, fused, simplified, seconds in SymPy, SymPy errors."""

    def __init__(self, outputs, stats):
        super().__init__(outputs)
        self.stats = stats


def last_stats() -> dict:
    """A copy of the statistics of this context's last `fuse_elementwise` call."""
    return dict(_last_stats.get())


def _fusible(node, feeds) -> bool:
    op = node.op
    if node in feeds or op.arity is None or op.numpy is None or op.numpy_lines is not None:
        return False
    if node.attrs or op.stateful or len(node.inputs) != op.arity:
        return False
    if op.name == "where":               # chooses between floats by a fused condition
        condition, x, y = node.inputs
        return condition.dtype.kind == "b" and node.dtype.kind == "f" and \
            x.dtype == y.dtype == node.dtype
    if op.template is None:
        return False
    if node.dtype.kind == "b":           # a comparison of floats (`x == 0`), for a where
        return op.sympy is None and node.inputs[0].dtype.kind == "f" and \
            all(i.dtype == node.inputs[0].dtype for i in node.inputs)
    if op.sympy is None or node.dtype.kind != "f":
        return False
    return all(i.dtype == node.dtype for i in node.inputs)


def fuse_elementwise(outputs, feeds, builder) -> FusedOutputs:
    """`outputs` with every elementwise group of two or more ops replaced by a `fused` node.

    `feeds` (node -> argument key) are leaves: never rewritten, never fused into.
    New nodes are made with `builder`. Returns the new outputs (None stays None), a list
    whose `stats` describe this call.
    """
    started = time.perf_counter()
    stats = {"groups": 0, "fused": 0, "simplified": 0, "sympy seconds": 0.0}
    order = topological_order([o for o in outputs if o is not None],
                              is_leaf=lambda n: n in feeds)
    fusible = {n for n in order if _fusible(n, feeds)}
    users = {}
    for n in order:
        if n in feeds:
            continue
        for i in n.inputs:
            users.setdefault(i, []).append(n)
    returned = {o for o in outputs if o is not None}
    # Fed values by what computes them: a kernel needing cos(x) may read a fed sin(x).
    fed_by_op = {(n.op.name, n.inputs): n for n in feeds if n.inputs}

    # Reverse topological order: a node joins its users' group when they all share one.
    group_of = {}
    for n in reversed(order):
        if n not in fusible:
            continue
        owners = {group_of.get(u) for u in users.get(n, ())}
        if n in returned or len(owners) != 1 or None in owners:
            if n.dtype.kind == "b":
                continue                 # a condition joins its where's group, never roots one
            group_of[n] = n
        else:
            group_of[n] = owners.pop()
    members = {}
    for n in order:
        if n in group_of:
            members.setdefault(group_of[n], []).append(n)

    deadline = started + settings.TIME_BUDGET_SECONDS
    replaced = {}
    for root, nodes in members.items():
        if len(nodes) < settings.MIN_OPS or root.shape == ():
            continue
        stats["groups"] += 1
        replaced[root] = _fuse_group(root, nodes, feeds, deadline, stats,
                                     lambda name, node: fed_by_op.get((name, (node,))))

    memo = {n: n for n in feeds}         # a kernel may read fed values the graph did not
    outer = builder.origin
    for n in order:
        builder.origin = n.origin        # a kernel comes from the op of the value it computes
        if n in feeds or not n.inputs:
            memo[n] = n
        elif n in replaced:
            inputs, attrs = replaced[n]
            memo[n] = builder.node(FUSED, tuple(memo[i] for i in inputs), attrs,
                                   n.shape, n.dtype)
            inherit_label(n, memo[n], feeds)
            stats["fused"] += 1
        elif group_of.get(n, n) in replaced:
            continue                     # computed inside its group's fused node
        else:
            inputs = tuple(memo[i] for i in n.inputs)
            memo[n] = n if inputs == n.inputs else \
                builder.node(n.op, inputs, n.attrs, n.shape, n.dtype)
            inherit_label(n, memo[n], feeds)
    builder.origin = outer
    stats["seconds"] = time.perf_counter() - started
    _last_stats.set(stats)
    return FusedOutputs([None if o is None else memo[o] for o in outputs], stats)


def _fuse_group(root, nodes, feeds, deadline, stats, fed):
    """(inputs, attrs) of the fused node computing `root` from its group `nodes`; `fed(name,
    node)` is the fed node computing op `name` of `node`, or None."""
    inputs, program = exact_program(root, nodes, feeds)
    exact, text = True, ""
    if time.perf_counter() < deadline and _tree_ops(root, set(nodes)) <= settings.MAX_SYMPY_OPS:
        t0 = time.perf_counter()
        try:
            simplified = simplify_group(root, nodes, inputs, program, deadline)
        except Unsupported:
            simplified = None
        except Exception:        # a SymPy failure must never cost the gradient: exact form
            _log.debug("fusion: SymPy failed on a group of %d ops", len(nodes), exc_info=True)
            stats["sympy errors"] = stats.get("sympy errors", 0) + 1
            simplified = None
        stats["sympy seconds"] += time.perf_counter() - t0
        if simplified is not None:
            program, text = simplified
            exact = False
            stats["simplified"] += 1
    if trig.applies(root.shape, root.dtype):
        program, inputs, rewritten = trig.from_tangents(program, inputs, fed)
        if rewritten:
            exact = False
            stats["trig"] = stats.get("trig", 0) + rewritten
    attrs = {"shape": root.shape, "dtype": root.dtype.str, "code": program[0],
             "result": program[1], "exact": exact, "expr": text}
    return tuple(inputs), attrs


def _tree_ops(root, member) -> int:
    """Ops of the group's expression written as a tree (shared values counted per use)."""
    size = {}
    for n in topological_order([root], is_leaf=lambda n: n not in member):
        if n in member:
            size[n] = 1 + sum(size.get(i, 0) for i in n.inputs)
    return size[root]
