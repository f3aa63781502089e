"""From a tape to gradient values: prune, key, look up or build, then run.

    prune the tape graph to what the derivative needs      (graph.prune)
    key   = structure of that subgraph + sources + seeds    (graph.structural_key)
    hit?  -> call the compiled NumPy function with the values the tape holds
    miss  -> tape subgraph -> IR, symbolic reverse pass, emit NumPy, compile, store

When an enclosing tape is recording any of the values involved (nested tapes,
higher-order derivatives), the symbolic gradient is instead evaluated op by op
through the public ops, so the enclosing tape records the gradient computation.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import config, context
from .ir import graph, sites
from .autodiff.jacobian import jacobian_rows, seed_node
from .autodiff.reverse import build_adjoints
from .codegen.cache import CACHE
from .codegen.compiled import CODEGEN_VERSION, Compiled
from .codegen.emit import compile_function, emit, no_collections
from .codegen.names import derivative_name
from .ir.nodes import Builder, topological_order
from .ir.lower import is_structure, lower
from .ops.shape import CONSTANT, PLACEHOLDER, fill
from .simplify import last_stats, simplify
from .tensor import Tensor

@dataclass
class Request:
    """What to differentiate.

    mode "gradient": d(sum over targets of target * seed)/d(source), a seed of None
    meaning ones. Modes "jacobian" (one target; result target.shape + source.shape)
    and "batch_jacobian" (one target [b, y...]; result [b, y..., x...]) run the
    reverse pass once, vectorized over the target's elements; their seeds are unused.
    """
    targets: list
    source_ids: list
    source_dtypes: list
    source_shapes: list
    seeds: list
    mode: str = "gradient"


@dataclass(frozen=True)
class Plan:
    """A compiled derivative addressed by positions in a tape's recording order."""
    entry: object          # Compiled, or None when no source is connected
    arg_refs: tuple        # (True, position in the recording) or (False, seed number)
    custom: object = None  # CustomPaths when a custom_gradient is on the path

    @property
    def countdown(self):
        """The entry's countdown to its fused version (None when final)."""
        return None if self.entry is None else self.entry.countdown


def gradient(tape, request: Request) -> list:
    """One Tensor (or None) per source: d(sum of targets * seeds)/d(source)."""
    if _another_tape_records(tape):
        return _gradient_by_structure(tape, request)
    # The hot path: the recording's rows are its structure, kept as it was recorded.
    recorded = tape.recorded
    key = _recording_key(recorded.graph, recorded.live, request)
    return _by_plan(tape, recorded.graph, recorded.values, key, lambda: request,
                    request.seeds, request.source_dtypes)


def gradient_of_one(tape, g, values, target: Tensor, source) -> list | None:
    """`gradient` of one target with respect to one watched floating source (a Tensor or
    a Variable), seeded with ones: the common eager step, keyed without a Request (one
    is made only on a miss). `g` and `values` are the tape's recording and the values
    it holds (`Recorded.graph`, `.values`), which the tape passes: no view is made on
    the step's hot path. None when another tape records (use `gradient`)."""
    if _another_tape_records(tape):
        return None
    position = g.position
    source_id = source._id if type(source) is Tensor else source._handle_id
    # The key `_recording_key` makes for the same request (one target, one source, seed
    # None), so both paths share the plan.
    key = ("recording", CODEGEN_VERSION, "gradient", config.simplify_setting(),
           g.rows_key(), position.get(target._id, -1), None, position.get(source_id, -1),
           None, None)
    dtypes = (source._dtype,)
    return _by_plan(tape, g, values, key, lambda: Request(
        [target], [source_id], list(dtypes), [tuple(source._shape)], [None]), (None,), dtypes)


def _by_plan(tape, g, held, key, request, seeds, source_dtypes) -> list:
    """Run the plan stored under alias `key`, planned from `request()` on a miss."""
    plan = CACHE.find_alias(key)
    if plan is None or (plan.countdown is not None and plan.entry.due()):
        plan = _plan(tape, request(), final=plan is not None)
        CACHE.put_alias(key, plan)
    entry = plan.entry
    if entry is None:
        return [None] * len(source_dtypes)
    ids = g.ids
    values = [held[ids[k]] if from_tape else seeds[k]._value
              for from_tape, k in plan.arg_refs]
    if plan.custom is None:
        return _results(entry, entry.fn(*values), source_dtypes)
    leaves = plan.custom.begin(tape)
    results = _results(entry, entry.fn(*values), source_dtypes)
    return plan.custom.drop_dead(leaves, results)


def _recording_key(g, live, request) -> tuple:
    """The alias key of a request on recording `g`: its rows, and the targets, sources
    and seeds by position, with the options; no walk of the graph. A source that is not
    watched or not floating is -2 (its gradient is None), one never recorded -1.

    Flat, each part ended by None (no position is None), and built by plain loops: a
    tuple per part, each from a comprehension, costs as much again on every step."""
    position = g.position
    key = ["recording", CODEGEN_VERSION, request.mode, config.simplify_setting(),
           g.rows_key()]
    for t in request.targets:
        key.append(position.get(t._id, -1))
    key.append(None)
    for s, dtype in zip(request.source_ids, request.source_dtypes):
        key.append(position.get(s, -1) if s in live and dtype.kind in "fc" else -2)
    key.append(None)
    for seed in request.seeds:
        key.append(None if seed is None else (seed._shape, seed._dtype.str))
    return tuple(key)


def _plan(tape, request, final=False) -> Plan:
    """Prune, key by structure, build on a miss; then address the arguments by position.
    `final`: replace a provisional entry by its fused version."""
    g = tape.recorded.graph
    pruned, differentiable = _pruned(tape, request)
    if not pruned.on_path:
        return Plan(None, ())
    entry = _compiled(g, pruned, request, differentiable, final)
    position = g.position
    refs = tuple((True, position[pruned.ids[k]]) if kind == "tape" else (False, k)
                 for kind, k in entry.arg_keys)
    return Plan(entry, refs, CustomPaths.of(g, pruned, request, differentiable))


def _pruned(tape, request):
    """The part of the recording the derivative needs. Sources that are not watched (an
    unwatched tensor that only fed a recorded op) and integer sources are left out: as
    TensorFlow, their gradient is None."""
    g, live = tape.recorded.graph, tape.recorded.live
    differentiable = [s in live and d.kind in "fc"
                      for s, d in zip(request.source_ids, request.source_dtypes)]
    source_ids = [s for s, ok in zip(request.source_ids, differentiable) if ok]
    return graph.prune(g, source_ids, [t._id for t in request.targets]), differentiable


def _compiled(g, pruned, request, differentiable, final=False) -> Compiled:
    """The compiled derivative from the cache, built on a miss (provisional, unfused, if
    SymPy is not imported yet); `final` builds the fused version in its place."""
    key = _structure_key(g, pruned, request, differentiable)
    if final:
        entry = _build(g, pruned, request, differentiable, defer_fusion=False)
        CACHE.replace(key, entry)
        return entry
    return CACHE.get_or_build(key, lambda: _build(g, pruned, request, differentiable,
                                                  defer_fusion=True))


def _structure_key(g, pruned, request, differentiable) -> tuple:
    """The key of a derivative program by the structure it is built from: the pruned
    graph, which sources, targets and seeds it has, and the options; never values."""
    return (CODEGEN_VERSION, request.mode, config.simplify_setting(),
            graph.structural_key(g, pruned),
            tuple(pruned.index.get(s, -1) if ok else -2
                  for s, ok in zip(request.source_ids, differentiable)),
            tuple(pruned.index.get(t._id, -1) for t in request.targets),
            tuple(None if s is None else (s._shape, s._dtype.str) for s in request.seeds))


def _gradient_by_structure(tape, request) -> list:
    """The general path: used when another tape records, so nesting must be honoured."""
    g = tape.recorded.graph
    pruned, differentiable = _pruned(tape, request)
    if not pruned.on_path:
        return [None] * len(request.source_ids)
    custom = CustomPaths.of(g, pruned, request, differentiable)
    leaves = custom.begin(tape) if custom is not None else None
    if _enclosing_tape_records(tape, pruned, request.seeds):
        results = _interpret(tape, pruned, request, differentiable)
    else:
        entry = _compiled(g, pruned, request, differentiable)
        if entry.due():
            entry = _compiled(g, pruned, request, differentiable, final=True)
        values = [tape.recorded.values[pruned.ids[k]] if kind == "tape" else
                  request.seeds[k]._value for kind, k in entry.arg_keys]
        results = _results(entry, entry.fn(*values), request.source_dtypes)
    return results if custom is None else custom.drop_dead(leaves, results)


@dataclass(frozen=True)
class CustomPaths:
    """Which sources stay connected when a `custom_gradient` function returns None.

    Whether a gradient function returns None for an input is known only when it runs, so
    the compiled code uses zeros there; afterwards a source that no gradient reached
    (every path from the targets to it crosses such a None) gets None, as in
    TensorFlow. Addressed by positions in the recording, so a cached Plan can hold it.
    """
    leaves: tuple          # positions of the gradient-function leaves
    edges: tuple           # (node, ((input, (leaf, output, k) or None), ...)), targets first
    targets: frozenset     # positions of the targets
    sources: tuple         # position of each source (-1: none)

    @staticmethod
    def of(g, pruned, request, differentiable):
        from .custom import CUSTOM
        on_path, position = pruned.on_path, g.position
        customs = [i for i in on_path if g[i].op is CUSTOM]
        if not customs:
            return None
        edges = []
        for node_id in sorted(on_path, reverse=True):
            r = g[node_id]
            if not r.inputs or not _passes_gradient(r.op):
                continue
            inputs = []
            for k, parent in enumerate(r.inputs):
                if parent not in on_path or g[parent].dtype.kind not in "fc":
                    continue
                key = None
                if r.op is CUSTOM:
                    key = (position[r.inputs[0]], r.attrs["output"], k - 1)
                inputs.append((position[parent], key))
            edges.append((position[node_id], tuple(inputs)))
        return CustomPaths(tuple(sorted({position[g[i].inputs[0]] for i in customs})),
                           tuple(edges),
                           frozenset(position[t._id] for t in request.targets
                                     if t._id in position),
                           tuple(position.get(s, -1) if ok else -1 for s, ok in
                                 zip(request.source_ids, differentiable)))

    def begin(self, tape) -> list:
        """The gradient functions, told to note the Nones of the coming call."""
        ids, tensors = tape.recorded.graph.ids, tape.recorded.tensors
        leaves = [(k, tensors[ids[k]]) for k in self.leaves]
        for _, fn in leaves:
            fn.nones.clear()
        return leaves

    def drop_dead(self, leaves, results) -> list:
        dead = {(k, output, i) for k, fn in leaves for output, inputs in fn.nones.items()
                for i in inputs}
        if not dead:
            return results
        reached = set(self.targets)
        for node, inputs in self.edges:         # reverse topological order
            if node in reached:
                reached.update(parent for parent, key in inputs if key not in dead)
        return [None if s not in reached else r for r, s in zip(results, self.sources)]


def _passes_gradient(op) -> bool:
    from .ops.shape import STOP_GRADIENT
    return op.vjp is not None and op.differentiable and op is not STOP_GRADIENT


def _results(entry, outputs, dtypes) -> list:
    results = []
    for value, dtype in zip(outputs, dtypes):
        if value is None:
            results.append(None)
            continue
        # A read-only array of the source's dtype (every eager step ends here)
        if type(value) is not np.ndarray or value.dtype != dtype:
            value = np.asarray(value, dtype=dtype)
        value.setflags(write=False)     # always allowed, and cheaper than reading flags
        t = Tensor._new(value, value.shape, value.dtype, None)
        t._origin = entry
        results.append(t)
    return results


def _another_tape_records(tape) -> bool:
    for other in context._state.tapes:      # on every call: not through active_tapes()
        if other._recording and other._live:
            return True
    return False


def _enclosing_tape_records(tape, pruned, seeds) -> bool:
    """Whether some recording tape watches a value this derivative reads."""
    for other in context.active_tapes():
        if not other._recording:
            continue
        live = other._live
        if not live:
            continue
        if any(i in live for i in pruned.ids):
            return True
        if any(s is not None and s._id in live for s in seeds):
            return True
    return False


def _symbolic_graph(g, pruned, request, differentiable, compiled=True):
    """The pruned tape graph as IR, plus the symbolic cotangents of the sources.

    On-path values are built from their inputs (and fed the forward values the tape
    holds, which the emitter uses instead of recomputing them); off-path values are
    fed leaves. For `compiled` code, fed literals (`Op.fed_scalars`) are fed leaves
    too; printers and the interpreter see them as the constants they are."""
    builder = Builder()
    feeds = {}
    on_path_ids = pruned.on_path

    def leaf(node_id, r):
        if compiled and r.op is CONSTANT and "fed" in r.attrs:
            k = pruned.index[node_id]
            node = builder.node(PLACEHOLDER, (), {"slot": k, "shape": (), "literal": True,
                                                  "dtype": r.dtype.str}, (), r.dtype)
            feeds[node] = ("tape", k)
            return node
        if is_structure(r) or (node_id in on_path_ids and r.inputs):
            return None
        k = pruned.index[node_id]
        node = builder.node(PLACEHOLDER, (), {"slot": k, "shape": r.shape,
                                              "dtype": r.dtype.str}, r.shape, r.dtype)
        if r.attrs.get("kind") != "variable":       # a variable handle has no value
            feeds[node] = ("tape", k)
        return node

    with builder:
        nodes = lower(g, pruned.ids, builder.node, leaf)
        sites.annotate(g, pruned.ids, nodes)
        for k, node_id in enumerate(pruned.ids):
            if node_id in on_path_ids and g[node_id].inputs:
                feeds.setdefault(nodes[node_id], ("tape", k))
        seeds, seed = [], None
        for i, (target, given) in enumerate(zip(request.targets, request.seeds)):
            if target._id not in pruned.index:
                continue
            builder.origin = nodes[target._id].origin     # a seed comes from its target
            if request.mode != "gradient":
                seed = seed_node(target._shape, target._dtype)
                seed_tensor = Tensor._symbolic(seed)
            elif given is None:
                seed_tensor = fill(target._shape, 1, target._dtype)
            else:
                node = builder.node(PLACEHOLDER, (), {"seed": i, "shape": given._shape,
                                                      "dtype": given._dtype.str},
                                    given._shape, given._dtype)
                feeds[node] = ("seed", i)
                seed_tensor = Tensor._symbolic(node)
            seeds.append((nodes[target._id], seed_tensor))
        # In recording order (a topological order): the reverse pass then sums the
        # contributions to a value in the same order on every run of a program.
        order = list(dict.fromkeys(nodes[i] for i in pruned.ids if i in on_path_ids))
        on_path = set(order)
        builder.origin = None
        sources = [nodes.get(s) if ok else None
                   for s, ok in zip(request.source_ids, differentiable)]
        reachable = [s if s in on_path else None for s in sources]
        cotangents = build_adjoints(order, on_path, seeds,
                                    [s for s in reachable if s is not None])
        cotangents = iter(cotangents)
        cotangents = [None if s is None else next(cotangents) for s in reachable]
        if request.mode != "gradient" and seed is not None:
            target = request.targets[0]
            cotangents = jacobian_rows(
                cotangents, seed, target._shape, target._dtype,
                list(zip(request.source_shapes, request.source_dtypes)),
                batch=request.mode == "batch_jacobian")
    target = nodes.get(request.targets[0]._id) if len(request.targets) == 1 else None
    several = len(sources) > 1       # unnamed sources are told apart by position
    names = [derivative_name(target and target.label,
                             s.label if s is not None and s.label is not None else
                             f"x{k}" if several else None) for k, s in enumerate(sources)]
    return [_node(c) for c in cotangents], feeds, builder, names


def _node(t):
    return None if t is None else t._node


def _build(g, pruned, request, differentiable, defer_fusion=False) -> Compiled:
    with no_collections():
        return _build_now(g, pruned, request, differentiable, defer_fusion)


def _build_now(g, pruned, request, differentiable, defer_fusion) -> Compiled:
    from .simplify import simplify_program     # (imports above are another module part's)
    outputs, feeds, builder, names = _symbolic_graph(g, pruned, request, differentiable)
    outputs, order = simplify_program(outputs, feeds, builder, config.simplify_setting(),
                                      defer_fusion)
    title = (f"{request.mode} of {len(request.targets)} target(s) with respect to "
             f"{len(request.source_ids)} source(s)")
    source, arg_keys = emit(outputs, feeds, "gradient", title, order=order,
                            output_names=names)
    make = Compiled.provisional if last_stats.get("fusion deferred") else Compiled
    return make(compile_function(source, "gradient"), source, tuple(arg_keys), title)


def _interpret(tape, pruned, request, differentiable) -> list:
    """Evaluate the symbolic gradient through the public ops, so enclosing tapes record it."""
    from .tracing.recorder import interpret      # tracing builds on tape, which imports this module
    outputs, feeds = _interpreted_program(tape.recorded.graph, pruned, request, differentiable)

    def fed_value(node):
        key = feeds.get(node)
        if key is None:
            return None
        kind, k = key
        if kind != "tape":
            return request.seeds[k]
        node_id = pruned.ids[k]      # the recorded Tensor, when an enclosing tape saw it
        held = tape.recorded.tensors.get(node_id)
        return held if held is not None else Tensor._eager(tape.recorded.values[node_id])
    return interpret(outputs, fed_value)


def _interpreted_program(g, pruned, request, differentiable):
    """The symbolic derivative `_interpret` evaluates, kept under the structure's key: a
    step that takes a gradient inside an enclosing tape (a Hessian by nested tapes) runs
    the same program every time, and builds it once. Every value it reads, fed literals
    included, is a fed leaf, so the key holds no values, as a compiled program's."""
    key = ("interpret",) + _structure_key(g, pruned, request, differentiable)
    program = CACHE.find_program(key)
    if program is None:
        outputs, feeds, _, _ = _symbolic_graph(g, pruned, request, differentiable)
        program = CACHE.put_program(key, (outputs, feeds))
    return program


def symbolic(tape, request: Request, mode=None):
    """The (simplified) symbolic derivative without compiling it, for printers.

    Returns (outputs, leaves): one IR node (or None) per source, and {leaf node: tensor
    id} for every placeholder leaf, so a printer can name leaves after the variables or
    arguments they came from. Fed nodes are ordinary op nodes here: a printer expands
    them into the expressions that computed them.
    """
    g = tape.recorded.graph
    pruned, differentiable = _pruned(tape, request)
    if not pruned.on_path:
        return [None] * len(request.source_ids), {}
    outputs, feeds, builder, _ = _symbolic_graph(g, pruned, request, differentiable,
                                              compiled=False)
    outputs = simplify(outputs, feeds, builder, mode or config.simplify_setting())
    leaves = {}
    for node in topological_order([o for o in outputs if o is not None]):
        if node.op is PLACEHOLDER and "slot" in node.attrs:
            leaves[node] = pruned.ids[node.attrs["slot"]]
    return outputs, leaves


def symbolic_value(tape, target):
    """The IR of how `target` was computed from its recorded leaves, and {leaf: id}."""
    g = tape.recorded.graph
    if target._id not in g:
        return None, {}
    upstream, stack = set(), [target._id]
    while stack:
        node_id = stack.pop()
        if node_id not in upstream:
            upstream.add(node_id)
            stack.extend(g[node_id].inputs)
    builder, leaves = Builder(), {}

    def leaf(node_id, r):
        if r.inputs or is_structure(r):
            return None
        node = builder.node(PLACEHOLDER, (), {"slot": node_id, "shape": r.shape,
                                              "dtype": r.dtype.str}, r.shape, r.dtype)
        leaves[node] = node_id
        return node
    nodes = lower(g, sorted(upstream), builder.node, leaf)
    return nodes[target._id], leaves
