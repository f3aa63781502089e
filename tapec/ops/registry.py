"""`Op`: the one declaration of a primitive, and `apply`: running it eagerly or symbolically.

An op declares, in one place:
  * `impl(*arrays, **attrs)`: eager NumPy evaluation;
  * `infer(*tensors, **attrs) -> (shape, dtype)`: validation and the output type,
    raising ValueError/TypeError that name the op before NumPy sees bad input;
  * `vjp(g, out, *inputs, **attrs)`: one cotangent (or None) per input, built with
    public ops applied to symbolic tensors;
  * `batch(args, batched, size, **attrs)`: the batching rule for vectorized
    jacobians: the op applied with a leading axis of `size` on the arguments flagged
    in `batched` (and on the result), again written with public ops;
  * `numpy(args, node)`: the NumPy expression for generated code (or `numpy_lines`
    for ops that need statements);
  * `array_api(args, node)` (or `array_api_lines(out, args, node)`): the same in the
    array-API form of generated code (codegen/array_api.py), where the NumPy template
    is not already standard under the name `xp`;
  * `scalar(args, node)`: optionally, the same on Python floats with `math`, for the
    fast path of 0-d float64 graphs; `c(args, node)`, the same in C for that path's
    native tier (codegen/native.py);
  * `latex`: a LaTeX template (used by the exporters);
  * for elementwise ops, `arity`, `sympy` (the scalar function as a SymPy expression
    builder, from which the derivative, the simplifier's rewrites and fusion follow)
    and `template` (the NumPy expression as a format string over the arguments, from
    which fused code is printed), with its `precedence` (see ATOM below); `cost`, the
    op's weight per element computed in fusion's cost model (an int, or for an op whose
    cost depends on literal operands, such as pow, a function of their values); and
    `numexpr`, its spelling in numexpr's language where numexpr has one (with
    `numexpr_precedence` where that differs from `precedence`);
  * `interpret(*values, **attrs)`: for ops whose values are not arrays (a custom
    gradient's call record), how an interpreter computes them;
  * `fusion`: True for the fused-region op the simplifier creates;
  * `stateful`: True when the value is not a function of the inputs (a variable
    read), so common-subexpression merging must never join two such nodes.

`apply(op, *operands, **attrs)` converts operands (Python scalars take the dtype of
the tensor they meet), computes the value, and records the op on every active tape
that watches one of its inputs. When an operand is symbolic it adds a node to the
current builder instead.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import context
from ..codegen import blocks
from ..tensor import (Tensor, Variable, _foreign_array, _python_scalar_dtype, _to_array,
                      is_array_like)

REGISTRY: dict = {}

# How tightly a printed form binds as an operand of a larger expression (the `precedence`
# facets), in Python's order: a printer parenthesizes an operand that binds less tightly
# than its place needs. ATOM is one call whose placeholders are its plain arguments, as
# "np.exp({0})"; None (undeclared) makes printers parenthesize the form and its operands.
SUM, PRODUCT, UNARY, POWER, ATOM = 50, 60, 70, 80, 100
# The `cost` of a function call (exp, log, tanh, erf...) in fusion's cost model, where an
# add or a multiply costs 1 and a division 4.
FUNCTION_COST = 20


@dataclass(eq=False)
class Op:
    name: str
    impl: Callable | None
    infer: Callable
    vjp: Callable | None = None
    batch: Callable | None = None
    numpy: Callable | None = None
    numpy_lines: Callable | None = None
    array_api: Callable | None = None        # the array-API form: codegen/array_api.py
    array_api_lines: Callable | None = None
    scalar: Callable | None = None
    c: Callable | None = None                # 0-d float64 in C: codegen/native.py
    latex: str | None = None
    differentiable: bool = True
    stateful: bool = False      # its value is not a function of its inputs: never merged
    arity: int | None = None                 # elementwise ops: the number of inputs
    sympy: Callable | None = None            # elementwise ops: f(*symbols) -> SymPy expr
    template: str | None = None              # elementwise ops: "np.exp({0})"
    interpret: Callable | None = None        # non-array values: computed by the interpreter
    fusion: bool = False                     # the simplifier's fused-region op
    precedence: int | None = None            # elementwise ops: how `template` binds, ATOM...
    cost: int | Callable | None = None       # elementwise ops: fusion's weight per element
    numexpr: str | None = None               # elementwise ops: numexpr's "exp({0})"
    numexpr_precedence: int | None = None    # how `numexpr` binds, where not as `template`
    # elementwise ops: per input, the intervals tests draw values from, where the op is
    # smooth (None: (-1.5, 1.5) for every input); a declared op is tested on them
    domain: tuple | None = None
    short: str | None = None     # what generated code calls its values (sum_1), if not name
    # A Python float operand that is not a whole number is an argument of the compiled
    # derivative rather than a constant written into it: a learning rate or an annealing
    # factor that changes every step then compiles once. Whole numbers (0, 1, 2...) stay
    # constants, since simplification reads them (x * 1 -> x, x * 0 -> 0).
    fed_scalars: bool = False
    # elementwise ops costly per element: an eager call on a large array runs in blocks
    # on threads (codegen.blocks.eager); set by `declare` from `cost`
    blocks_eagerly: bool = False

    def __repr__(self):
        return f"Op({self.name})"


def declare(op: Op) -> Op:
    if op.name in REGISTRY:
        raise ValueError(f"op {op.name!r} is declared twice")
    REGISTRY[op.name] = op
    # rounding, comparisons and logic are cheap per element whatever their `cost` says
    op.blocks_eagerly = (op.arity is not None and op.impl is not None and op.differentiable
                         and isinstance(op.cost, int) and
                         op.cost >= blocks.MIN_COST_PER_ELEMENT)
    return op


_PYTHON_SCALARS = (bool, int, float, complex)


def _is_python_data(x) -> bool:
    return isinstance(x, _PYTHON_SCALARS) or (isinstance(x, (list, tuple)) and not
                                              isinstance(x, Tensor))


def to_tensors(op_name: str, operands) -> list:
    """Operands as tensors. NumPy arrays and Python data are weak: they adopt the dtype
    of the first tensor operand, as TensorFlow converts them (`float32 tensor * float64
    array` is float32), when that keeps their kind (ints may become floats, not the
    reverse). With no tensor operand, NumPy arrays (NumPy scalars, arrays of other
    libraries) keep their dtypes and Python data adopts the first non-bool one's: numbers
    are the weakest (`tf.add(float64_array, 1.0)` is float64, in either order)."""
    for x in operands:                   # the common case, all tensors, kept cheap
        if type(x) is not Tensor:
            break
    else:
        return list(operands)
    if len(operands) == 2:               # tensor op Python number: the next most common
        a, b = operands
        if type(a) is Tensor and type(b) in (float, int):
            return [a, literal(b, a._dtype, op_name)]
        if type(b) is Tensor and type(a) in (float, int):
            return [literal(a, b._dtype, op_name), b]
    tensors = [None] * len(operands)
    arrays = [None] * len(operands)      # NumPy arrays (and array-likes), unconverted
    peer_dtype = None
    for i, x in enumerate(operands):
        if isinstance(x, Tensor):
            tensors[i] = x
        elif isinstance(x, Variable):
            tensors[i] = x.read_value()
        elif isinstance(x, (np.ndarray, np.generic)):
            arrays[i] = np.asarray(x)
        elif is_array_like(x):
            arrays[i] = _foreign_array(x, op_name)
        elif not _is_python_data(x):
            raise TypeError(f"{op_name}: operand {i} is a {type(x).__name__} ({x!r:.60}); "
                            "expected a tensor, a Variable, a NumPy array or a Python number")
        if tensors[i] is not None and peer_dtype is None:
            peer_dtype = tensors[i]._dtype
    array_dtype = next((a.dtype for a in arrays if a is not None and a.dtype.kind != "b"),
                       None)
    for i, x in enumerate(operands):
        if tensors[i] is not None:
            continue
        if arrays[i] is not None:
            adopt = peer_dtype is not None and _adoptable(arrays[i].dtype, peer_dtype)
            tensors[i] = Tensor._eager(_to_array(arrays[i], peer_dtype if adopt else None,
                                                 op_name))
        else:
            tensors[i] = literal(x, peer_dtype if peer_dtype is not None else array_dtype,
                                 op_name)
    return tensors


def _adoptable(source: np.dtype, target: np.dtype) -> bool:
    """Whether an array of `source` dtype may take a tensor's `target` dtype."""
    order = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}
    return source.kind != "b" and order.get(source.kind, 9) <= order.get(target.kind, -1)


_LITERALS = {}
_LITERAL_CACHE_SIZE = 4096


def literal(value, dtype, op_name: str) -> Tensor:
    """A Python number (or list) as a tensor flagged literal: its value is graph structure.

    Literal tensors are immutable, so one tensor serves every use of the same number in
    the same dtype (a loop's `* 0.5` records one constant, and converts once). Zeros are
    not shared, so that 0.0 and -0.0 stay distinct."""
    kind = type(value)
    cacheable = dtype is not None and (kind is float or kind is int) and value != 0
    if cacheable:
        key = (kind, value, dtype)
        found = _LITERALS.get(key)
        if found is not None:
            return found
    if dtype is None:
        dtype = _python_scalar_dtype(value)
    array = _to_array(value, dtype, op_name)
    tensor = Tensor._eager(array, literal=array.ndim == 0)
    if cacheable and len(_LITERALS) < _LITERAL_CACHE_SIZE:
        _LITERALS[key] = tensor
    return tensor


# (op, operand shapes and dtypes) -> (shape, dtype) for ops without attributes: shape
# inference is a pure function of those, and an eager loop repeats the same few.
_INFERRED = {}
_INFERRED_SIZE = 4096


def _infer(op: Op, tensors: list, attrs: dict):
    if attrs:
        return op.infer(*tensors, **attrs)
    if len(tensors) == 2:                # binary ops: most of an eager loop's calls
        a, b = tensors
        key = (op, a._shape, a._dtype, b._shape, b._dtype)
    else:
        key = (op, *[(t._shape, t._dtype) for t in tensors])
    found = _INFERRED.get(key)
    if found is None:
        found = op.infer(*tensors)           # raises on bad input: nothing is cached
        if len(_INFERRED) < _INFERRED_SIZE:
            _INFERRED[key] = found
    return found


def apply(op: Op, *operands, **attrs):
    """Run `op` on `operands`: eagerly (recording on watching tapes) or symbolically."""
    tensors = to_tensors(op.name, operands)
    state = context._state
    if state.builder is not None:
        return _apply_symbolic(state.builder, op, tensors, attrs)
    values = []
    for t in tensors:
        if t._value is None:
            raise RuntimeError(f"{op.name}: a symbolic tensor was used outside a symbolic "
                               "build")
        values.append(t._value)
    shape, dtype = _infer(op, tensors, attrs)
    value = None
    if op.blocks_eagerly and not attrs:
        value = blocks.eager(op.impl, values, shape, dtype)
    if value is None:
        value = np.asarray(op.impl(*values, **attrs))
    if value.dtype != dtype:
        value = value.astype(dtype)
    if value.shape != shape:
        raise AssertionError(f"{op.name}: implementation gave shape {value.shape}, "
                             f"declared {shape}")
    value.setflags(write=False)
    out = Tensor._new(value, shape, dtype, None)
    if state.tapes:
        record(op, tensors, attrs, out)
    return out


def record(op: Op, inputs: list, attrs: dict, out: Tensor):
    """Add `out = op(*inputs)` to every active tape that watches one of the inputs."""
    tapes = context._state.tapes
    if not tapes:
        return
    differentiable = op.differentiable and out._dtype.kind in "fc"
    for tape in tapes:
        # A tape that traces a function records every op, differentiable or not.
        if differentiable or tape._records_everything:
            tape._on_op(op, inputs, attrs, out)


def _apply_symbolic(builder, op: Op, tensors: list, attrs: dict) -> Tensor:
    shape, dtype = _infer(op, tensors, attrs)      # a reverse pass repeats a few shapes
    inputs = tuple([_node_of(builder, t) for t in tensors])
    return Tensor._symbolic(builder.node(op, inputs, attrs, tuple(shape), dtype))


def _node_of(builder, t: Tensor):
    if t._node is not None:
        return t._node
    if t._literal:
        op, attrs = literal_record(t)
        return builder.node(op, (), attrs, t._shape, t._dtype)
    raise TypeError("an eager tensor met a symbolic one inside a derivative rule; rules may "
                    "only combine their arguments and Python numbers")


def is_fed_literal(op: Op, t: Tensor) -> bool:
    """Whether the literal operand `t` of `op` is fed to compiled code (see `Op.fed_scalars`)."""
    if not op.fed_scalars or t._shape != () or t._dtype.kind != "f":
        return False
    value = t._value.item()
    return math.isfinite(value) and not value.is_integer()


def literal_record(t: Tensor):
    """(op, attributes) of a literal tensor as a graph leaf: a 0-d `constant`, or a `fill`
    for a literal of uniform value (a seed of ones made by a nested derivative)."""
    if t._shape == ():
        return REGISTRY["constant"], constant_attrs(t._value)
    return REGISTRY["fill"], {"value": t._value.reshape(-1)[0].item(), "shape": t._shape,
                              "dtype": t._dtype.str}


def constant_attrs(value: np.ndarray) -> dict:
    """The attributes of a literal constant node: its exact value and dtype (and, for
    -0.0, its sign: 0.0 == -0.0 would otherwise make the two share a cache key)."""
    item = value.item()
    attrs = {"value": item, "dtype": value.dtype.str}
    if isinstance(item, float) and item == 0 and np.signbit(item):
        attrs["negative_zero"] = True
    return attrs
