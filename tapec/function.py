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
when traced (constants and random draws inside `f` are fixed, as in a jit);
Variables are read, and written, at every call.

Called while a tape records (inside another trace, or under a GradientTape), a
function does not replay compiled code: it traces `f` on the given tensors and
evaluates its (derivative) program through the public ops, so the enclosing tape
records it and any nesting — grad of grad, jacobian of grad, a tape around grad —
differentiates correctly.
"""
from __future__ import annotations

import builtins
import collections
import functools
import inspect
import keyword
import logging
import re
import weakref

import numpy as np

from . import config, context, nest
from .autodiff.jacobian import jacobian_rows, seed_node
from .autodiff.reverse import gradient_nodes
from .codegen.emit import GENERATED_GLOBALS, compile_function, emit
from .ir import Builder
from .lower import is_structure, lower as lower_recording
from .ops.shape import PLACEHOLDER, READ_VARIABLE, fill
from .simplify import simplify
from .tensor import Tensor, Variable, _to_array
from .tensor_spec import TensorSpec, check_signature
from .tracing import GUARD, TracingTape, guard_holds, interpret, propagate_guard

log = logging.getLogger("tapec")

_KINDS = ("value", "grad", "value_and_grad", "jacobian", "hessian")
_FUNCTIONS = weakref.WeakSet()      # every live Function, so clear_cache() reaches them
_TRACES_PER_SIGNATURE = 32          # traces kept per signature (guards that keep changing)
_FREQUENT_TRACING = 5               # traces among the last _TRACING_WINDOW calls that warn
_TRACING_WINDOW = 10


def clear_traces():
    """Forget every recorded function's traces (`tapec.clear_cache` calls this)."""
    for f in list(_FUNCTIONS):
        f._traces.clear()
        f._programs.clear()


def _signature(args, arrays_only=False) -> tuple:
    """The trace key of flat arguments: shapes and dtypes of tensors, Variable identity,
    Python values (as TensorFlow: each new Python number is a new trace). Strings and
    None are Python values too, unless `arrays_only` (an export's arguments)."""
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
        elif not arrays_only and (a is None or isinstance(a, (str, bytes))):
            parts.append(("python", type(a).__name__, a))
        else:
            raise TypeError(f"tapec.function: argument {len(parts)} is a {type(a).__name__}; "
                            "expected tensors, Variables, NumPy arrays, Python numbers or "
                            "strings, or lists, tuples and dicts of them")
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


class Call:
    """One call's arguments: positional and keyword arguments flattened to `leaves`
    (tensors, Variables, arrays, Python values), and how to rebuild them."""

    __slots__ = ("leaves", "structure", "n_positional", "_parameter_names", "_flat")

    def __init__(self, args, kwargs, parameter_names):
        self.structure = (args, kwargs)
        # The common call, flat positional tensors, needs no flattening.
        self._flat = not kwargs and not any(isinstance(a, (list, tuple, dict)) for a in args)
        self.leaves = list(args) if self._flat else nest.flatten(self.structure)
        self.n_positional = len(args)
        self._parameter_names = parameter_names

    @property
    def names(self) -> list:
        """A parameter name per leaf (nested leaves numbered after their argument)."""
        return _leaf_names(*self.structure, self._parameter_names)

    def key(self) -> tuple:
        if self._flat:
            return (len(self.leaves),) + _signature(self.leaves)
        return (_shape_of_structure(self.structure),) + _signature(self.leaves)

    def rebuild(self, leaves):
        args, kwargs = nest.pack_sequence_as(self.structure, leaves)
        return args, kwargs

    def leaf_of_argument(self, k, what) -> int:
        """The leaf index of positional argument `k` (which must be a single value)."""
        if not -self.n_positional <= k < self.n_positional:
            raise ValueError(f"argnums {k} is out of range for {self.n_positional} arguments")
        k %= self.n_positional
        start = len(nest.flatten(self.structure[0][:k]))
        if nest.is_nested(self.structure[0][k]):
            raise TypeError(f"tapec.{what}: argument {k} is a "
                            f"{type(self.structure[0][k]).__name__}; only tensor arguments "
                            "can be differentiated")
        return start


def _shape_of_structure(structure):
    """The nesting of a call (which leaves are where), without the leaves."""
    if isinstance(structure, dict):
        return ("dict", tuple((k, _shape_of_structure(structure[k]))
                              for k in sorted(structure)))
    if isinstance(structure, (list, tuple)):
        return (type(structure).__name__,
                tuple(_shape_of_structure(item) for item in structure))
    return "."


def _leaf_names(args, kwargs, parameter_names) -> list:
    names = []
    for k, arg in enumerate(args):
        base = parameter_names[k] if k < len(parameter_names) else f"arg{k}"
        names += _names_of(base, arg)
    for key in sorted(kwargs):
        names += _names_of(str(key), kwargs[key])
    return names


def _names_of(base, value) -> list:
    count = len(nest.flatten(value))
    if not nest.is_nested(value):
        return [base]
    return [f"{base}_{j}" for j in range(count)]


class Trace:
    """One traced signature: guards, compiled function, how to feed it, and the
    Variables its program writes."""

    def __init__(self, fn, source, feeds_in_order, captured, variables, n_guards, structure,
                 dtypes, written):
        self.fn = fn
        self.source = source
        self.feeds = feeds_in_order      # argument keys in parameter order
        self.captured = captured         # arrays fixed at trace time
        self.variables = variables       # handle id -> Variable
        self.n_guards = n_guards
        self.structure = structure
        self.dtypes = dtypes
        self.written = written           # Variables whose new values end the outputs

    def run(self, leaves):
        values = []
        for kind, k in self.feeds:
            if kind == "arg":
                values.append(_value_of(leaves[k]))
            elif kind == "variable":
                values.append(self.variables[k]._value)
            else:
                values.append(self.captured[k])
        result = self.fn(*values)
        if result is None:
            return None
        n_out = len(self.dtypes)
        outputs = [None if v is None else _tensor(v, d) for v, d in
                   zip(result[self.n_guards:self.n_guards + n_out], self.dtypes)]
        for variable, value in zip(self.written, result[self.n_guards + n_out:]):
            variable._value = _frozen(value, variable._value.dtype)
        return nest.pack_sequence_as(self.structure, outputs)


def _frozen(value, dtype):
    array = np.array(value, dtype=dtype)
    array.flags.writeable = False
    return array


def _tensor(value, dtype):
    array = np.asarray(value, dtype=dtype)
    if array.flags.writeable:
        array.flags.writeable = False
    return Tensor._eager(array)


def _recording_tapes() -> bool:
    tapes = context._state.tapes
    return bool(tapes) and any(t._recording for t in tapes)


class Function:
    """A traced, compiled version of `fn` (see the module docstring).

    `input_signature` (a list of `TensorSpec`s, one per positional argument) fixes the
    accepted shapes and dtypes as in TensorFlow; `jit_compile` and `reduce_retracing`
    are accepted for compatibility (tapec always compiles; shapes are specialized per
    trace, see docs/functions.md)."""

    def __init__(self, fn, kind="value", argnums=0, input_signature=None, name=None,
                 jit_compile=None, reduce_retracing=False):
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
        self._traces = {}
        self._programs = {}          # signature -> [InlineProgram], for enclosing tapes
        self._bound = weakref.WeakKeyDictionary()     # instance -> Function of a method
        self._recent = collections.deque(maxlen=_TRACING_WINDOW)
        self._warned_retracing = False
        self._warned_guards = False
        self.trace_count = 0
        self._parameters = _parameter_names(fn)
        _FUNCTIONS.add(self)
        functools.update_wrapper(self, fn, updated=())   # never copy a Function's state
        if name is not None:
            self.__name__ = str(name)

    # --- TensorFlow's tf.function surface ----------------------------------------------
    def __get__(self, instance, owner=None):
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
    def input_signature(self):
        return self._input_signature

    def experimental_get_tracing_count(self) -> int:
        """How many times this function has traced (TensorFlow's name)."""
        return self.trace_count

    @property
    def python_function(self):
        return self._fn

    # --- calling -----------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if self._input_signature is not None:
            args = check_signature(self._input_signature, args, kwargs, self.__name__)
        call = Call(args, kwargs, self._parameters)
        signature = (config.simplify_setting(),) + call.key()     # checks the arguments
        if _recording_tapes():
            return self._inline(call, signature)
        for trace in self._traces.get(signature, ()):
            result = trace.run(call.leaves)
            if result is not None:
                self._recent.append(False)
                return result
        trace = self._trace(call)
        traces = self._traces.setdefault(signature, [])
        traces.append(trace)
        del traces[:-_TRACES_PER_SIGNATURE]
        self._note_trace()
        result = trace.run(call.leaves)
        if result is None:
            return self._disagreeing_trace(call, signature)
        return result

    def _disagreeing_trace(self, call, signature):
        """The compiled program computed a value Python read while tracing (float(),
        .numpy(), a branch) differently from the eager run, in the last bits: its guard
        cannot hold. This call runs the program through the eager ops instead, and
        the next call traces again."""
        self._traces.clear()
        if not self._warned_guards:
            self._warned_guards = True
            log.warning(
                "tapec.function: %s reads a tensor's value in Python (float(), .numpy(), "
                "bool() or an index), and the compiled program computes that value "
                "differently in the last bits from the eager run, so the trace cannot be "
                "replayed; calls run eagerly and trace again. Use tensor ops (tf.where, "
                "tf.cond-free arithmetic) instead of reading values, or read them outside "
                "the function.", getattr(self._fn, "__qualname__", repr(self._fn)))
        return self._inline(call, signature)

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

    def source(self, *args, **kwargs) -> str:
        """The generated source for the signature of `args` (tracing if needed)."""
        self(*args, **kwargs)
        call = Call(args, kwargs, self._parameters)
        return self._traces[(config.simplify_setting(),) + call.key()][-1].source

    def _trace(self, call) -> Trace:
        tape, traced, result = self._record(call)
        return _compile(self, tape, call, traced, result)

    def _record(self, call):
        """Run `fn` on fresh copies of the arguments under a tracing tape (enclosing tapes
        paused: what they should record is decided by the caller), then undo the
        Variable writes the run made."""
        differentiated = set()
        if self._kind != "value":
            for k in self._argnums:
                leaf = call.leaf_of_argument(k, self._kind)
                if not isinstance(call.leaves[leaf], (Tensor, Variable, np.ndarray, np.generic,
                                                      int, float, complex)):
                    raise TypeError(f"tapec.{self._kind}: argument {k} is a "
                                    f"{type(call.leaves[leaf]).__name__}; only tensor "
                                    "arguments can be differentiated")
                differentiated.add(leaf)
        self.trace_count += 1
        tape = TracingTape()
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
                        t = Tensor._eager(_to_array(_value_of(a) if not isinstance(
                            a, (float, complex)) else a, None, "tapec.function"))
                        tape.watch_argument(t)
                        traced.append(t)
                    else:
                        traced.append(a)
                args, kwargs = call.rebuild(traced)
                result = self._fn(*args, **kwargs)
        finally:
            context._state.tapes = enclosing
            tape.undo_writes()
        return tape, traced, result

    def _inline(self, call, signature):
        """Evaluate the program of this signature through the public ops on the given
        tensors, so the recording tapes see every op (composition with enclosing
        derivatives). The program is traced once per signature, like a compiled one;
        a guard that differs traces again."""
        for program in self._programs.get(signature, ()):
            result = program.run(call)
            if result is not _GUARD_DIFFERS:
                return result
        tape, traced, result = self._record(call)
        program = InlineProgram(_lower(self, tape, call, traced, result), self._kind)
        programs = self._programs.setdefault(signature, [])
        programs.append(program)
        del programs[:-_TRACES_PER_SIGNATURE]
        result = program.run(call)
        if result is _GUARD_DIFFERS:       # a fresh trace of eager ops cannot disagree
            raise AssertionError("tapec.function: a fresh trace failed its own guards")
        return result


_GUARD_DIFFERS = object()


class _GuardDiffers(Exception):
    pass


class InlineProgram:
    """A traced program kept as IR, to be evaluated through the public ops under
    enclosing tapes (see `Function._inline`)."""

    def __init__(self, low, kind):
        outputs, self.structure = low.derive(kind)
        self.written = [variable for variable, _ in low.effects]
        self.roots = low.guards + outputs + [node for _, node in low.effects]
        self.n_guards, self.n_outputs = len(low.guards), len(outputs)
        self.feeds, self.variables = low.feeds, low.variables
        self.captured = low.captured_tensors

    def run(self, call):
        leaf_tensors = {}

        def fed_value(node):
            key = self.feeds.get(node)
            if key is None:
                return None
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
            return _GUARD_DIFFERS
        n, m = self.n_guards, self.n_outputs
        for variable, value in zip(self.written, values[n + m:]):
            variable.assign(value)
        return nest.pack_sequence_as(self.structure, values[n:n + m])


def _checked_guard(tensor, expected):
    """A guard met while interpreting: pass it on to enclosing traces, and stop when the
    value differs from the one the program was traced with."""
    if not guard_holds(tensor._value, expected):
        raise _GuardDiffers
    propagate_guard(tensor, expected)


def _as_tensor(leaf):
    """The tensor a call's argument stands for in an enclosing recording."""
    if isinstance(leaf, Variable):
        return leaf.read_value()
    if isinstance(leaf, Tensor):
        return leaf
    return Tensor._eager(_to_array(leaf, None, "tapec.function"))


def _signature_specs(input_signature):
    specs = nest.flatten(list(input_signature))
    for spec in specs:
        if not isinstance(spec, TensorSpec):
            raise TypeError(f"tapec.function: input_signature must hold tapec.TensorSpec "
                            f"objects, got {type(spec).__name__}")
    return list(input_signature)


def _parameter_names(fn) -> list:
    """The function's positional parameter names, as safe identifiers."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return []
    return [_identifier(p.name, f"arg{k}") for k, p in enumerate(parameters)
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


class Lowered:
    """A trace as IR before simplification: what `_compile` emits, and what other printers
    (`tapec.export`) print their own way.

    `nodes` maps tape ids to IR nodes (the forward values, in recording order); `feeds`
    maps leaf nodes to their argument keys, ("arg", i) for leaf i of the call,
    ("variable", handle id) or ("captured", k) with `captured[k]` the array,
    `captured_tensors[k]` the tensor it came from and `captured_ids[k]` its id;
    `guards` are guard nodes; `effects` lists (Variable, node of its final value) for
    every Variable the trace wrote; `derive(kind)` builds the outputs of a kind.
    """

    def __init__(self, function, tape, call, traced, result, flat, builder, nodes, feeds,
                 captured_tensors, guards, effects, node_of):
        self.function, self.tape, self.call, self.traced = function, tape, call, traced
        self.args = call.leaves
        self.result, self.flat, self.builder, self.nodes = result, flat, builder, nodes
        self.feeds, self.captured_tensors = feeds, captured_tensors
        self.guards, self.effects, self.node_of = guards, effects, node_of
        self.variables = dict(tape._variables)
        self.arg_names = [_identifier(n, f"arg{i}") for i, n in enumerate(call.names)]

    @property
    def captured(self):
        return [t._value for t in self.captured_tensors]

    @property
    def captured_ids(self):
        return [t._id for t in self.captured_tensors]

    def derive(self, kind):
        """(IR outputs, structure) for `kind`, one of the `_KINDS`."""
        with self.builder:
            return _derivatives(self.function, self.call, self.traced, self.flat,
                                self.result, self.node_of, kind)


def lower(fn, args, argnums=0) -> Lowered:
    """Trace `fn` on `args` once and return the trace as IR (see `Lowered`)."""
    function = Function(_plain(fn), "value", argnums)
    call = Call(tuple(args), {}, function._parameters)
    for k in function._argnums:
        call.leaf_of_argument(k, "export")        # argnums in range, before tracing
    tape, traced, result = function._record(call)
    return _lower(function, tape, call, traced, result)


def _lower(function, tape, call, traced, result) -> Lowered:
    flat = [r if r is None or isinstance(r, Tensor) else
            Tensor._eager(_to_array(r, None, "result")) for r in nest.flatten(result)]
    g = tape._graph
    builder, feeds, captured = Builder(), {}, []
    arg_index = {t._id: i for i, t in enumerate(traced) if isinstance(t, Tensor)}

    def leaf(node_id, r):
        if r.inputs or is_structure(r):
            return None
        node = builder.node(PLACEHOLDER, (), {"slot": node_id, "shape": r.shape,
                                              "dtype": r.dtype.str}, r.shape, r.dtype)
        if node_id in arg_index:
            feeds[node] = ("arg", arg_index[node_id])
        elif r.attrs.get("kind") != "variable":        # a handle: its reads are fed
            feeds[node] = ("captured", len(captured))
            captured.append(tape._tensors[node_id])
        return node

    with builder:
        nodes = lower_recording(g, g.ids, builder.node, leaf)
        for node_id in g.ids:
            r = g[node_id]
            if r.op is READ_VARIABLE:      # fed with the Variable's value at call time
                feeds[nodes[node_id]] = ("variable", r.inputs[0])

        def node_of(t):
            if t._id in nodes:
                return nodes[t._id]
            node = builder.node(PLACEHOLDER, (), {"slot": t._id, "shape": t._shape,
                                                  "dtype": t._dtype.str}, t._shape, t._dtype)
            feeds[node] = ("captured", len(captured))
            captured.append(t)
            nodes[t._id] = node
            return node

        guards = [builder.node(GUARD, (nodes[i],), {"expected": v}, (), np.dtype(bool))
                  for i, v in tape.guards]
        effects = [(variable, node_of(value)) for variable, value in tape.assigned.values()]
    return Lowered(function, tape, call, traced, result, flat, builder, nodes, feeds,
                   captured, guards, effects, node_of)


def _compile(function, tape, call, traced, result) -> Trace:
    low = _lower(function, tape, call, traced, result)
    outputs, structure = low.derive(function._kind)
    written = [node for _, node in low.effects]
    with low.builder:
        simplified = simplify(outputs + written, low.feeds, low.builder,
                              config.simplify_setting())
    arg_names = {("arg", i): n for i, n in enumerate(low.arg_names)}
    title = f"{function._kind} of {getattr(function._fn, '__name__', 'f')}"
    source, keys = emit(low.guards + simplified, low.feeds, "function", title, arg_names)
    dtypes = [None if o is None else o.dtype for o in outputs]
    return Trace(compile_function(source, "function"), source, keys, low.captured,
                 low.variables, len(low.guards), structure, dtypes,
                 [variable for variable, _ in low.effects])


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


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


# --- public constructors ---------------------------------------------------------------

def function(func=None, input_signature=None, autograph=True, jit_compile=None,
             reduce_retracing=False, experimental_implements=None,
             experimental_autograph_options=None, experimental_attributes=None,
             experimental_relax_shapes=None, experimental_compile=None,
             experimental_follow_type_hints=None, name=None):
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


def record(fn, *example_args) -> Function:
    """A `tapec.function` of `fn`, traced now on `example_args`."""
    f = fn if isinstance(fn, Function) and fn._kind == "value" else Function(fn, "value")
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
    """A `tapec.function` of `f` is differentiated as `f` itself; a derivative Function
    (grad, jacobian, ...) is kept, so derivatives compose (grad of grad)."""
    return f._fn if isinstance(f, Function) and f._kind == "value" else f
