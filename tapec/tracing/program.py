"""A trace as a program: lowered to IR, derived, then compiled or interpreted.

`lower_trace` turns a tracing tape's recording into IR (`Lowered`): the arguments,
Variables' values, captured tensors and the function's random sequences are its only
inputs; guards, Variable writes, random draws and prints are part of it. `Lowered.derive(kind)` adds the derivatives a functional form asks for
(the one reverse pass and the one jacobian seeding).
`Program` holds the result: compiled on first use to one NumPy function (`Trace`,
replayed by plain calls), or evaluated through the public ops when an enclosing tape
must record what the call computes.
"""
from __future__ import annotations

import numpy as np

from .. import config, nest
from ..autodiff.jacobian import jacobian_rows, seed_node
from ..autodiff.reverse import gradient_nodes
from .calls import identifier, value_of
from ..codegen.cache import CACHE
from ..codegen.compiled import CODEGEN_VERSION, IR, Compiled
from ..codegen.emit import compile_function, emit, no_collections
from ..ir import sites
from ..ir.nodes import Builder, structure_key, topological_order
from ..ir.lower import is_structure, lower as lower_recording
from ..ops.shape import CONSTANT, PLACEHOLDER, READ_VARIABLE, fill
from ..random import RANDOM, replay
from ..simplify import last_stats, simplify_program
from ..tensor import Tensor, Variable, _to_array, _used
from .recorder import GUARD, guard_holds, interpret
from .splice import SPLICED


class Trace:
    """One traced signature: guards, compiled function, how to feed it, the Variables
    its program writes and the prints it makes."""

    def __init__(self, entry, captured, variables, n_guards, structure, dtypes, written,
                 streams=None, prints=()):
        self.entry = entry               # the Compiled program
        self.fn = entry.fn                  # read on every call: kept at hand
        self.feeds = entry.arg_keys         # argument keys in parameter order
        self.captured = captured         # arrays fixed at trace time
        self.variables = variables       # handle id -> Variable
        self.n_guards = n_guards
        self.structure = structure
        self.dtypes = dtypes
        self.written = written           # Variables whose new values follow the outputs
        self.streams = streams           # the function's random.Streams (random inputs)
        self.prints = prints             # (printer, dtypes of its values), after the writes
        self.single = len(dtypes) == 1 and not nest.is_nested(structure)   # one output

    @property
    def source(self) -> str:
        return self.entry.source

    def run(self, leaves):
        values = []
        for kind, k in self.feeds:
            if kind == "arg":
                a = leaves[k]
                values.append(a._value if type(a) is Tensor and a._value is not None
                              else value_of(a))
            elif kind == "variable":
                values.append(self.variables[k]._value)
            elif kind == "captured":
                values.append(self.captured[k])
            else:                           # the random inputs' generators
                values.append(self.streams)
        result = self.fn(*values)
        if result is None:              # a guard differs (the function returns a tuple)
            return GUARD_DIFFERS
        n_out = len(self.dtypes)
        outputs = [None if v is None else _tensor(v, d) for v, d in
                   zip(result[self.n_guards:self.n_guards + n_out], self.dtypes)]
        start = self.n_guards + n_out
        for variable, value in zip(self.written, result[start:]):
            variable._value = _frozen(value, variable._value.dtype)
        if self.prints:
            _print_all(self.prints, result[start + len(self.written):], _tensor)
        if self.single:
            return outputs[0]
        return nest.pack_sequence_as(self.structure, outputs)

    def run_in(self, xp, leaves, device=None):
        """The outputs computed by the program's array-API form in the namespace `xp`
        (`Compiled.array_api`), as `xp` arrays packed like `run`'s; `device` defaults
        to the first argument's. Arguments that are NumPy arrays, captured values and
        Variables' values are moved to `xp` on that device. A program that writes
        Variables or prints runs in NumPy only (`run`), and one with an op the standard
        cannot spell raises array_api.NoArrayApiForm."""
        if self.written or self.prints:
            raise TypeError("a tapec.function that assigns Variables or prints runs on "
                            "NumPy arrays only")
        form = self.entry.array_api()
        values = []
        for kind, k in self.feeds:
            if kind == "arg":
                a = leaves[k]
                foreign = hasattr(a, "shape") and not isinstance(
                    a, (Tensor, Variable, np.ndarray, np.generic))
                values.append(a if foreign else value_of(a))     # Python numbers as NumPy
            elif kind == "variable":
                values.append(self.variables[k]._value)
            elif kind == "captured":
                values.append(self.captured[k])
            else:
                raise TypeError("a tapec.function that draws random numbers runs on "
                                "NumPy arrays only")
        result = form(xp, *values, device=device)
        outputs = result[self.n_guards:self.n_guards + len(self.dtypes)]
        if self.single:
            return outputs[0]
        return nest.pack_sequence_as(self.structure, list(outputs))


def _print_all(prints, values, as_tensor):
    """Print what each print of the program prints, in program order, from `values`
    (all of them, concatenated)."""
    at = 0
    for printer, dtypes in prints:
        printer([as_tensor(v, d) for v, d in zip(values[at:at + len(dtypes)], dtypes)])
        at += len(dtypes)


def _frozen(value, dtype):
    array = np.array(value, dtype=dtype)
    array.flags.writeable = False
    return array


def _tensor(value, dtype):
    array = value if type(value) is np.ndarray and value.dtype == dtype else \
        np.asarray(value, dtype=dtype)
    array.setflags(write=False)     # always allowed, and cheaper than reading flags
    return Tensor._new(array, array.shape, array.dtype, None)


GUARD_DIFFERS = object()


class _GuardDiffers(Exception):
    pass


class Program:
    """One trace as a program: its IR (guards, outputs, final values of the Variables it
    writes), compiled to one NumPy function on first use (`compiled()`, what plain
    calls replay) or evaluated through the public ops (`run`, what a call under a
    recording tape does, so the tape records every op). One trace serves both."""

    def __init__(self, low, kind):
        outputs, self.structure = low.derive(kind)
        self.kind, self.name = kind, getattr(low.function._fn, "__name__", "f")
        self.written = [variable for variable, _ in low.effects]
        self.prints = [(printer, [node.dtype for node in nodes])
                       for printer, nodes in low.prints]
        # guards, then outputs, then the final value of each written Variable, then the
        # values each print prints
        self.roots = low.guards + outputs + [node for _, node in low.effects] + \
            [node for _, nodes in low.prints for node in nodes]
        self.n_guards, self.n_outputs = len(low.guards), len(outputs)
        self.builder, self.feeds, self.variables = low.builder, low.feeds, low.variables
        self.captured = low.captured_tensors
        self.streams = low.function._streams
        self.arg_names = low.arg_names
        self._compiled = None

    def compiled(self) -> Trace:
        if self._compiled is None:
            self._compiled = compile_program(self)
        elif self._compiled.entry.due():     # provisional: now compile the fused program
            self._compiled = compile_program(self, final=True)
        return self._compiled

    def final(self) -> Trace:
        """`compiled()`, fused now if it is (or would be) provisional."""
        if self._compiled is None or self._compiled.entry.countdown is not None:
            self._compiled = compile_program(self, final=True)
        return self._compiled

    def run(self, call):
        leaf_tensors = {}

        def fed_value(node):
            key = self.feeds.get(node)
            if key is None:
                # a random input: drawn now (or, inside another trace, one of its own)
                return replay(node, self.streams) if node.op is RANDOM else None
            kind, k = key
            if kind == "variable":
                return self.variables[k].read_value()
            if kind == "captured":
                return self.captured[k]
            if k not in leaf_tensors:
                leaf_tensors[k] = _as_tensor(call.leaves[k])
            return leaf_tensors[k]

        try:
            values = interpret(self.roots, fed_value, _checked_guard)
        except _GuardDiffers:
            return GUARD_DIFFERS
        n, m = self.n_guards, self.n_outputs
        for variable, value in zip(self.written, values[n + m:]):
            variable.assign(value)
        if self.prints:         # printed, or inside another trace, prints of its program
            _print_all(self.prints, values[n + m + len(self.written):],
                       lambda t, dtype: t)
        return nest.pack_sequence_as(self.structure, values[n:n + m])


def _checked_guard(tensor, expected):
    """A guard met while interpreting: pass it on to enclosing traces, and stop when the
    value differs from the one the program was traced with."""
    if not guard_holds(tensor._value, expected):
        raise _GuardDiffers
    _used(tensor, expected)          # an enclosing trace guards on the same value


def _as_tensor(leaf):
    """The tensor a call's argument stands for when a program is interpreted."""
    if isinstance(leaf, Variable):
        return leaf.read_value()
    if isinstance(leaf, Tensor):
        return leaf
    return Tensor._eager(_to_array(leaf, None, "tapec.function"))


class Lowered:
    """A trace as IR before simplification: what a `Program` is made of, and what other printers
    (`tapec.export`) print their own way.

    `nodes` maps tape ids to IR nodes (the forward values, in recording order); `feeds`
    maps leaf nodes to their argument keys, ("arg", i) for leaf i of the call,
    ("variable", handle id) or ("captured", k) with `captured[k]` the array,
    `captured_tensors[k]` the tensor it came from and `captured_ids[k]` its id;
    `guards` are guard nodes; `effects` lists (Variable, node of its final value) for
    every Variable the trace wrote; `prints` lists (printer, nodes of the values it
    prints) for every print, in order; `random` holds the nodes of the random inputs
    (drawn at every call from the generators fed as ("random", 0)); `derive(kind)`
    builds the outputs of a kind.
    """

    def __init__(self, function, tape, call, traced, result, flat, builder, nodes, feeds,
                 captured_tensors, guards, effects, node_of, prints=()):
        self.function, self.tape, self.call, self.traced = function, tape, call, traced
        self.args = call.leaves
        self.result, self.flat, self.builder, self.nodes = result, flat, builder, nodes
        self.feeds, self.captured_tensors = feeds, captured_tensors
        self.guards, self.effects, self.node_of = guards, effects, node_of
        self.prints = list(prints)
        self.variables = dict(tape.recorded.variables)
        self.arg_names = [identifier(n, f"arg{i}") for i, n in enumerate(call.names)]

    @property
    def captured(self):
        return [t._value for t in self.captured_tensors]

    @property
    def random(self):
        return [self.nodes[i] for i in sorted(self.tape.random)]

    @property
    def captured_ids(self):
        return [t._id for t in self.captured_tensors]

    def derive(self, kind):
        """(IR outputs, structure) for `kind`, one of the `_KINDS`."""
        with self.builder:
            return _derivatives(self.function, self.call, self.traced, self.flat,
                                self.result, self.node_of, kind)


def lower_trace(function, tape, call, traced, result, feed_literals=False) -> Lowered:
    """The trace as IR. With `feed_literals`, Python floats marked fed (`Op.fed_scalars`)
    are captured values rather than constants, so a retrace for a new Python float builds the
    same program (a compile cache hit); exports and shape-polymorphic traces, whose
    source is read, keep them as numbers."""
    flat = [r if r is None or isinstance(r, Tensor) else
            Tensor._eager(_to_array(r, None, "result")) for r in nest.flatten(result)]
    g = tape.recorded.graph
    lowering = _Lowering(feed_literals)
    feeds, spliced = lowering.feeds, tape.spliced
    arg_index = {t._id: i for i, t in enumerate(traced) if isinstance(t, Tensor)}

    def leaf(node_id, r):
        if r.op is RANDOM:         # drawn at every call, from the generators fed
            shape = tuple([lowering.nodes[i] for i in r.inputs])    # a computed shape
            return lowering.node(RANDOM, (lowering.streams(),) + shape, r.attrs, r.shape,
                                 r.dtype)
        if r.op is SPLICED:        # a graph computed inside the trace: built by its splice
            splice, node = spliced[node_id]
            return splice.lower(lowering)[node]
        if r.inputs:
            return None
        if is_structure(r):
            return lowering.literal(r.op, r.attrs, r.shape, r.dtype,
                                    lambda: tape.recorded.tensors[node_id])
        if node_id in arg_index:
            node = lowering.placeholder(node_id, r.shape, r.dtype)
            feeds[node] = ("arg", arg_index[node_id])
            return node
        if r.attrs.get("kind") == "variable":      # a handle: its reads are fed
            return lowering.placeholder(node_id, r.shape, r.dtype)
        return lowering.capture(tape.recorded.tensors[node_id])

    with lowering.builder:
        nodes = lower_recording(g, g.ids, lowering.node, leaf, lowering.nodes)
        sites.annotate(g, g.ids, nodes)
        for node_id in g.ids:
            r = g[node_id]
            if r.op is READ_VARIABLE:      # fed with the Variable's value at call time
                feeds[nodes[node_id]] = ("variable", r.inputs[0])

        def node_of(t):
            return lowering.known(t) or lowering.capture(t)

        guards = [lowering.node(GUARD, (nodes[i],), {"expected": v}, (), np.dtype(bool))
                  for i, v in tape.guards]
        effects = [(variable, node_of(value)) for variable, value in tape.assigned.values()]
        prints = [(printer, [node_of(t) for t in tensors]) for printer, tensors in tape.prints]
    return Lowered(function, tape, call, traced, result, flat, lowering.builder, nodes, feeds,
                   lowering.captured, guards, effects, node_of, prints)


class _Lowering:
    """A trace's IR as it is built: the builder, {tensor id: node}, the feeds and the
    captured tensors (fixed at trace time, fed at every call). The recording's lowering
    and the graphs spliced into it (splice.py) build through it alike."""

    def __init__(self, feed_literals):
        self.builder, self.feed_literals = Builder(), feed_literals
        self.node = self.builder.node
        self.nodes, self.feeds, self.captured = {}, {}, []
        self.spliced = {}         # Splice -> {its node: node of the trace}
        self._streams = None      # the node fed with the generators of random inputs

    def streams(self):
        if self._streams is None:
            self._streams = self.node(PLACEHOLDER, (), {"slot": "random", "shape": (),
                                                        "dtype": "|O"}, (), np.dtype(object))
            self.feeds[self._streams] = ("random", 0)
        return self._streams

    def known(self, t):
        """The node of a tensor the trace recorded or captured, or None."""
        return self.nodes.get(t._id)

    def placeholder(self, tensor_id, shape, dtype, literal=False):
        attrs = {"slot": tensor_id, "shape": shape, "dtype": dtype.str}
        if literal:
            attrs["literal"] = True
        return self.node(PLACEHOLDER, (), attrs, shape, dtype)

    def capture(self, t, literal=False):
        """A tensor as it is now: an input of the program, fed with this value."""
        node = self.nodes.get(t._id)
        if node is not None:          # a splice met it before the trace recorded it
            return node
        node = self.placeholder(t._id, t._shape, t._dtype, literal)
        self.feeds[node] = ("captured", len(self.captured))
        self.captured.append(t)
        self.nodes[t._id] = node
        return node

    def literal(self, op, attrs, shape, dtype, tensor):
        """A literal (`constant` or `fill`): structure, or with `feed_literals` a fed
        Python float (marked fed, see `Op.fed_scalars`) captured as the value of
        `tensor()`."""
        if self.feed_literals and op is CONSTANT and "fed" in attrs:
            return self.capture(tensor(), literal=True)
        return self.node(op, (), attrs, shape, dtype)


def compile_program(program, final=False) -> Trace:
    """Simplify a program (forward, derivatives and Variable writes together) and emit
    it as one NumPy function: from the cache, built on a miss (provisional, unfused, if
    SymPy is not imported yet); `final` builds the fused version in its place."""
    n = program.n_guards
    guards, computed = program.roots[:n], program.roots[n:]
    arg_names = {("arg", i): name for i, name in enumerate(program.arg_names)}
    # The title is a comment of the generated code: the function's name (user text, a
    # newline in it would start a line of code) enters only as a sanitized identifier.
    title = f"{program.kind} of {identifier(program.name, 'f')}"

    def build(defer_fusion=True) -> Compiled:
        with program.builder:
            simplified, order = simplify_program(computed, program.feeds, program.builder,
                                                 config.simplify_setting(), defer_fusion)
        source, keys = emit(guards + simplified, program.feeds, "function", title,
                            arg_names, order=_guards_first(guards, order, program.feeds))
        make = Compiled.provisional if last_stats.get("fusion deferred") else Compiled
        # the IR stays with the entry, for the array-API form (`Compiled.array_api`)
        ir = IR(guards + simplified, program.feeds, "function", arg_names)
        return make(compile_function(source, "function"), source, tuple(keys), title, ir=ir)
    with no_collections():        # everything built here stays alive until it ends
        # A retrace that builds the same graph (a new Python float fed as a captured
        # value, a new Python object argument) finds the program compiled before.
        key = ("program", CODEGEN_VERSION, config.simplify_setting(), title,
               tuple(program.arg_names), n, structure_key(program.roots, program.feeds))
        if final:
            entry = build(defer_fusion=False)
            CACHE.replace(key, entry)
        else:
            entry = CACHE.get_or_build(key, build)
        if entry.countdown is None:
            # Final: no build reads the program's hash-consing table again, which holds
            # every node the trace and the simplifier made, used or not, and a key tuple
            # per node (a quarter of the objects a traced function would keep alive).
            program.builder = None
    dtypes = [None if o is None else o.dtype for o in computed[:program.n_outputs]]
    return Trace(entry, [t._value for t in program.captured], program.variables,
                 n, program.structure, dtypes, program.written, program.streams,
                 program.prints)


def _guards_first(guards, order, feeds) -> list:
    """The topological order of `guards` and then the values of `order` (the simplified
    program's, walked once already): the walk from guards + outputs that emission would
    repeat. The guards' part holds every input of its nodes, so the rest keeps its order."""
    if not guards:
        return order
    head = topological_order(guards, leaves=feeds)
    seen = set(head)
    return head + [n for n in order if n not in seen]


def _derivatives(function, call, traced, flat, result, node_of, kind=None):
    """IR outputs for `kind` (default: the function's), and the structure to pack them
    into."""
    kind = kind or function._kind
    if kind == "value":
        return [None if t is None else node_of(t) for t in flat], result
    if len(flat) != 1 or flat[0] is None:
        raise ValueError(f"tapec.{kind}: the function must return one tensor, got "
                         f"{len(flat)}")
    (out,) = flat
    sources = []
    for k in function._argnums:
        t = traced[call.leaf_of_argument(k, kind)]
        if not isinstance(t, Tensor):
            raise TypeError(f"tapec.{kind}: argument {k} is a Python {type(t).__name__}; "
                            "only tensor arguments can be differentiated")
        if t._dtype.kind not in "fc":
            raise TypeError(f"tapec.{kind}: argument {k} has dtype {t._dtype.name}; only "
                            "floating arguments can be differentiated (cast it, e.g. "
                            "tf.cast(x, tf.float32))")
        sources.append(node_of(t))
    target = node_of(out)
    one = function._single
    if kind in ("grad", "value_and_grad", "hessian") and (
            out._shape != () or out._dtype.kind not in "fc"):
        raise TypeError(f"tapec.{kind}: the function must return a floating scalar, got "
                        f"shape {out._shape} dtype {out._dtype.name}; use "
                        "tapec.jacobian for other outputs")
    if kind in ("grad", "value_and_grad"):
        grads = _nodes(gradient_nodes(target, sources, fill((), 1, out._dtype)), sources)
        packed = grads[0] if one else tuple(grads)
        if kind == "grad":
            return grads, (packed if one else tuple(grads))
        return [target] + grads, (out, packed if one else tuple(grads))
    if kind == "jacobian":
        jac = _jacobian(target, sources)
        return jac, (jac[0] if one else tuple(jac))
    # hessian: the jacobian of the gradient
    grads = _nodes(gradient_nodes(target, sources, fill((), 1, out._dtype)), sources)
    rows = [_jacobian(g, sources) for g in grads]
    flat_h = [h for row in rows for h in row]
    if one:
        return flat_h, flat_h[0]
    return flat_h, tuple(tuple(row) for row in rows)


def _nodes(cotangents, sources):
    """Cotangent nodes; an unconnected source gets zeros (a function's gradient is total)."""
    return [c._node if c is not None else fill(s.shape, 0, s.dtype)._node
            for c, s in zip(cotangents, sources)]


def _jacobian(target, sources):
    """d target / d source for each source, vectorized over the target's elements."""
    seed = seed_node(target.shape, target.dtype)
    cotangents = gradient_nodes(target, sources, Tensor._symbolic(seed))
    rows = jacobian_rows(cotangents, seed, target.shape, target.dtype,
                         [(s.shape, s.dtype) for s in sources], unconnected_zeros=True)
    return [row._node for row in rows]
