"""Recorded functions: trace once per input signature, then replay compiled NumPy code.

    @tapec.function
    def f(x, w): ...                      # value only

    tapec.grad(f, argnums=0)              # df/dx           (f returns a scalar)
    tapec.value_and_grad(f, argnums=(0, 1))
    tapec.jacobian(f), tapec.hessian(f)
    tapec.record(f, *example_args)        # trace now, on these example arguments

Tracing runs `f` eagerly on fresh copies of the tensor arguments under a tape that
records every op. Whenever Python reads a traced tensor's value — `if t > 0`,
`while tf.norm(b) < 1000`, `float(t)` — the tape records a *guard*: the tensor's
symbolic expression and the value Python saw. The compiled function computes each
guard first and returns early (without a result) when a guard differs, and the call
is then traced again: a replay never follows the wrong branch.

Value and derivatives compile into ONE function: the derivative is built symbolically
from the traced graph (sharing every forward value), simplified, and emitted together
with the value. Tensors the function did not get as arguments are captured as they
were when traced (constants and random draws inside `f` are fixed, as in a jit);
Variables are read at every call.
"""
from __future__ import annotations

import builtins
import functools
import inspect
import keyword
import weakref
import re

import numpy as np

from . import config, nest
from .autodiff.batching import vectorize
from .autodiff.reverse import gradient_nodes
from .codegen.emit import GENERATED_GLOBALS, compile_function, emit
from .ir import Builder
from .ops.registry import Op, declare
from .ops.seeds import diag_seed
from .ops.shape import CONSTANT, FILL, PLACEHOLDER, READ_VARIABLE, fill, reshape
from .simplify import simplify
from .tape import GradientTape
from .tensor import Tensor, Variable, _to_array

_KINDS = ("value", "grad", "value_and_grad", "jacobian", "hessian")
_FUNCTIONS = weakref.WeakSet()      # every live Function, so clear_cache() reaches them


def clear_traces():
    """Forget every recorded function's traces (`tapec.clear_cache` calls this)."""
    for f in list(_FUNCTIONS):
        f._traces.clear()


def _guard_lines(out, args, node):
    expected = node.attrs["expected"]
    test = f"bool({args[0]}) is not {expected!r}" if isinstance(expected, bool) else \
        f"{args[0]} != {expected!r}"
    return [f"if {test}:", "    return None      # a guard differs: trace again",
            f"{out} = True"]


GUARD = declare(Op(
    name="guard", impl=None, infer=lambda x, expected: ((), np.dtype(bool)),
    numpy_lines=_guard_lines, differentiable=False))


class _TracingTape(GradientTape):
    """Records every op on the arguments, every Variable read, and the guards."""

    _records_everything = True

    def __init__(self):
        super().__init__(persistent=True, watch_accessed_variables=True)
        self.guards = []

    def _on_value_used(self, tensor, value):
        tensor_id = getattr(tensor, "_id", None)
        if tensor_id is not None and tensor_id in self._graph and tensor_id in self._live:
            self.guards.append((tensor_id, value))

    def _on_variable_read(self, variable, value):
        if self._recording and variable._handle_id not in self._variables:
            self._watch_variable(variable)       # trainable or not: read at every call
        super()._on_variable_read(variable, value)

    def watch_argument(self, t):
        self._graph.add_leaf(t._id, PLACEHOLDER, {"kind": "watched"}, t._shape, t._dtype)
        self._tensors[t._id] = t
        self._live.add(t._id)


def _signature(args) -> tuple:
    parts = []
    for a in args:
        if isinstance(a, Variable):
            # The Variable itself is traced (read at every call), so it is the signature.
            parts.append(("variable", id(a), tuple(a.shape), np.dtype(a._dtype).str))
        elif isinstance(a, Tensor):
            parts.append(("tensor", tuple(a.shape), np.dtype(a._dtype).str))
        elif isinstance(a, (np.ndarray, np.generic)):
            parts.append(("tensor", a.shape, a.dtype.str))
        elif isinstance(a, (bool, int, float, complex)):
            parts.append(("python", type(a).__name__, a))
        else:
            raise TypeError(f"tapec.function: argument {len(parts)} is a {type(a).__name__}; "
                            "expected tensors, Variables, NumPy arrays or Python numbers")
    return tuple(parts)


def _value_of(a):
    if isinstance(a, Variable):
        return a._value
    if isinstance(a, Tensor):
        return a._eager_value("tapec.function")
    return np.asarray(a)


# Names the generated code reads as globals or builtins; a parameter must not shadow them.
_GENERATED_GLOBALS = frozenset(dir(builtins)) | GENERATED_GLOBALS


def _identifier(name: str, fallback: str) -> str:
    """A Python identifier made from a user-given name (never the raw name itself)."""
    cleaned = re.sub(r"\W", "_", str(name)).strip("_") or fallback
    if cleaned[0].isdigit() or keyword.iskeyword(cleaned) or cleaned in _GENERATED_GLOBALS:
        cleaned = f"{fallback}_{cleaned}"
    return cleaned


class Trace:
    """One traced signature: guards, compiled function, and how to feed it."""

    def __init__(self, fn, source, feeds_in_order, captured, variables, n_guards, structure,
                 dtypes):
        self.fn = fn
        self.source = source
        self.feeds = feeds_in_order      # argument keys in parameter order
        self.captured = captured         # arrays fixed at trace time
        self.variables = variables       # handle id -> Variable
        self.n_guards = n_guards
        self.structure = structure
        self.dtypes = dtypes

    def run(self, args):
        values = []
        for kind, k in self.feeds:
            if kind == "arg":
                values.append(_value_of(args[k]))
            elif kind == "variable":
                values.append(self.variables[k]._value)
            else:
                values.append(self.captured[k])
        result = self.fn(*values)
        if result is None:
            return None
        outputs = [None if v is None else _tensor(v, d)
                   for v, d in zip(result[self.n_guards:], self.dtypes)]
        return nest.pack_sequence_as(self.structure, outputs)


def _tensor(value, dtype):
    array = np.asarray(value, dtype=dtype)
    if array.flags.writeable:
        array.flags.writeable = False
    return Tensor._eager(array)


class Function:
    """A traced, compiled version of `fn` (see the module docstring)."""

    def __init__(self, fn, kind="value", argnums=0):
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
        self._traces = {}
        self.trace_count = 0
        _FUNCTIONS.add(self)
        functools.update_wrapper(self, fn)

    def __call__(self, *args):
        signature = (config.simplify_setting(),) + _signature(args)
        for trace in self._traces.get(signature, ()):
            result = trace.run(args)
            if result is not None:
                return result
        trace = self._trace(args)
        self._traces.setdefault(signature, []).append(trace)
        result = trace.run(args)
        if result is None:
            raise AssertionError("tapec.function: a fresh trace failed its own guards")
        return result

    def source(self, *args) -> str:
        """The generated source for the signature of `args` (tracing if needed)."""
        self(*args)
        return self._traces[(config.simplify_setting(),) + _signature(args)][-1].source

    def _trace(self, args) -> Trace:
        tape, traced, result = self._record(args)
        return _compile(self, tape, args, traced, result)

    def _record(self, args):
        """Run `fn` on fresh copies of the arguments under a tracing tape."""
        for k in self._argnums:
            if not -len(args) <= k < len(args):
                raise ValueError(f"argnums {k} is out of range for {len(args)} arguments")
        self.trace_count += 1
        tape = _TracingTape()
        traced = []
        with tape:
            for k, a in enumerate(args):
                if isinstance(a, Variable) and (self._kind == "value" or
                                                k not in self._argnums):
                    traced.append(a)       # stays a Variable: tapes inside f can watch it
                elif isinstance(a, (Tensor, Variable, np.ndarray, np.generic)):
                    t = Tensor._eager(_to_array(_value_of(a), None, "tapec.function"))
                    tape.watch_argument(t)
                    traced.append(t)
                else:
                    traced.append(a)
            result = self._fn(*traced)
        return tape, traced, result


def _parameter_names(fn, count):
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        names = []
    return [_identifier(names[i] if i < len(names) else f"arg{i}", f"arg{i}")
            for i in range(count)]


class Lowered:
    """A trace as IR before simplification: what `_compile` emits, and what other printers
    (`tapec.export`) print their own way.

    `nodes` maps tape ids to IR nodes (the forward values, in recording order); `feeds`
    maps leaf nodes to their argument keys, ("arg", i), ("variable", handle id) or
    ("captured", k) with `captured[k]` the array and `captured_ids[k]` its tensor id;
    `guards` are guard nodes; `derive(kind)` builds the outputs of a kind.
    """

    def __init__(self, function, tape, args, traced, result, flat, builder, nodes, feeds,
                 captured, captured_ids, guards, node_of):
        self.function, self.tape, self.args, self.traced = function, tape, args, traced
        self.result, self.flat, self.builder, self.nodes = result, flat, builder, nodes
        self.feeds, self.captured, self.captured_ids = feeds, captured, captured_ids
        self.guards, self.node_of = guards, node_of
        self.variables = dict(tape._variables)
        self.arg_names = _parameter_names(function._fn, len(args))

    def derive(self, kind):
        """(IR outputs, structure) for `kind`, one of the `_KINDS`."""
        with self.builder:
            return _derivatives(self.function, self.traced, self.flat, self.result,
                                self.node_of, kind)


def lower(fn, args, argnums=0) -> Lowered:
    """Trace `fn` on `args` once and return the trace as IR (see `Lowered`)."""
    function = Function(_plain(fn), "value", argnums)
    tape, traced, result = function._record(tuple(args))
    return _lower(function, tape, args, traced, result)


def _lower(function, tape, args, traced, result) -> Lowered:
    flat = [r if r is None or isinstance(r, Tensor) else
            Tensor._eager(_to_array(r, None, "result")) for r in nest.flatten(result)]
    g = tape._graph
    builder, nodes, feeds, captured, captured_ids = Builder(), {}, {}, [], []
    arg_index = {t._id: i for i, t in enumerate(traced) if isinstance(t, Tensor)}
    with builder:
        for node_id in sorted(g):
            r = g[node_id]
            if r.op is READ_VARIABLE:
                # A read is fed with the Variable's value at call time.
                node = builder.node(r.op, (nodes[r.inputs[0]],), {}, r.shape, r.dtype)
                feeds[node] = ("variable", r.inputs[0])
            elif r.inputs:
                node = builder.node(r.op, tuple(nodes[i] for i in r.inputs), r.attrs,
                                    r.shape, r.dtype)
            elif r.op is CONSTANT or r.op is FILL:
                node = builder.node(r.op, (), r.attrs, r.shape, r.dtype)
            else:
                node = builder.node(PLACEHOLDER, (), {"slot": node_id, "shape": r.shape,
                                                      "dtype": r.dtype.str}, r.shape, r.dtype)
                if node_id in arg_index:
                    feeds[node] = ("arg", arg_index[node_id])
                elif r.attrs.get("kind") != "variable":
                    feeds[node] = ("captured", len(captured))
                    captured.append(tape._tensors[node_id]._value)
                    captured_ids.append(node_id)
            nodes[node_id] = node

        def node_of(t):
            if t._id in nodes:
                return nodes[t._id]
            node = builder.node(PLACEHOLDER, (), {"slot": t._id, "shape": t._shape,
                                                  "dtype": t._dtype.str}, t._shape, t._dtype)
            feeds[node] = ("captured", len(captured))
            captured.append(t._value)
            captured_ids.append(t._id)
            nodes[t._id] = node
            return node

        guards = [builder.node(GUARD, (nodes[i],), {"expected": v}, (), np.dtype(bool))
                  for i, v in tape.guards]
    return Lowered(function, tape, args, traced, result, flat, builder, nodes, feeds,
                   captured, captured_ids, guards, node_of)


def _compile(function, tape, args, traced, result) -> Trace:
    low = _lower(function, tape, args, traced, result)
    outputs, structure = low.derive(function._kind)
    with low.builder:
        outputs = simplify(outputs, low.feeds, low.builder, config.simplify_setting())
    arg_names = {("arg", i): n for i, n in enumerate(low.arg_names)}
    title = f"{function._kind} of {getattr(function._fn, '__name__', 'f')}"
    source, keys = emit(low.guards + outputs, low.feeds, "function", title, arg_names)
    dtypes = [None if o is None else o.dtype for o in outputs]
    return Trace(compile_function(source, "function"), source, keys, low.captured,
                 low.variables, len(low.guards), structure, dtypes)


def _derivatives(function, traced, flat, result, node_of, kind=None):
    """IR outputs for `kind` (default: the function's), and the structure to pack them
    into."""
    kind = kind or function._kind
    if kind == "value":
        return [None if t is None else node_of(t) for t in flat], result
    if len(flat) != 1:
        raise ValueError(f"tapec.{kind}: the function must return one tensor, got "
                         f"{len(flat)}")
    (out,) = flat
    sources = []
    for k in function._argnums:
        t = traced[k]
        if not isinstance(t, Tensor):
            raise TypeError(f"tapec.{kind}: argument {k} is a Python {type(t).__name__}; "
                            "only tensor arguments can be differentiated")
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
    from .ops.shape import fill as filled
    return [c._node if c is not None else filled(s.shape, 0, s.dtype)._node
            for c, s in zip(cotangents, sources)]


def _jacobian(target, sources):
    """d target / d source for each source, vectorized over the target's elements."""
    size = int(np.prod(target.shape, dtype=np.int64))
    seed = Builder.current().node(PLACEHOLDER, (), {"seed": "jacobian", "shape": target.shape,
                                                    "dtype": target.dtype.str},
                                  target.shape, target.dtype)
    cotangents = gradient_nodes(target, sources, Tensor._symbolic(seed))
    rows = vectorize(cotangents, seed, diag_seed(fill(target.shape, 1, target.dtype)), size)
    result = []
    for row, s in zip(rows, sources):
        if row is None:
            from .ops.shape import fill as filled
            result.append(filled(target.shape + s.shape, 0, s.dtype)._node)
        else:
            result.append(reshape(row, target.shape + s.shape)._node)
    return result


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


# --- public constructors ---------------------------------------------------------------

def function(fn=None):
    """Decorator: trace `fn` once per input signature and replay compiled code."""
    if fn is None:
        return function
    return Function(fn, "value")


def record(fn, *example_args) -> Function:
    """A `tapec.function` of `fn`, traced now on `example_args`."""
    f = fn if isinstance(fn, Function) else Function(fn, "value")
    f(*example_args)
    return f


def grad(f, argnums=0) -> Function:
    """The gradient of scalar-valued `f` with respect to argument(s) `argnums`."""
    return Function(_plain(f), "grad", argnums)


def value_and_grad(f, argnums=0) -> Function:
    """`f`'s value and gradient, computed by one compiled function."""
    return Function(_plain(f), "value_and_grad", argnums)


def jacobian(f, argnums=0) -> Function:
    """The jacobian of `f`: shape output.shape + argument.shape, one vectorized pass."""
    return Function(_plain(f), "jacobian", argnums)


def hessian(f, argnums=0) -> Function:
    """The Hessian of scalar-valued `f` (the jacobian of its gradient)."""
    return Function(_plain(f), "hessian", argnums)


def _plain(f):
    return f._fn if isinstance(f, Function) else f
