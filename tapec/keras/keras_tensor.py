"""Symbolic Keras tensors and the nodes of the functional graph.

`keras.Input(shape=(8,))` returns a `KerasTensor`: a shape (None for the batch and any
unknown dimension) and a dtype, no value. A layer called on KerasTensors builds its
weights from their shapes and records a `Node` (layer, arguments, outputs); the
outputs are new KerasTensors that remember the node. `Model(inputs, outputs)` walks
those nodes back from its outputs and replays them on real tensors
(keras/functional.py).

A layer's output shape is found by calling it on zeros: twice, with every unknown
dimension set to 2 and then to 3, when there are unknown dimensions, so that an output
dimension that follows an unknown input dimension is unknown too. No tape records those
calls, and they run with `training` unset (inference behaviour).
"""
from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from .. import context, nest

__all__ = ["KerasTensor", "Node", "symbolic_call", "outside_traces", "output_shape_of"]

_PROBE_SIZES = (2, 3)


@contextlib.contextmanager
def outside_traces():
    """Run eagerly even inside a `tapec.function` trace or under a tape (TensorFlow's
    `init_scope`): what runs here is recorded by nothing, and random values drawn here
    are drawn once, not per call of a traced function."""
    state = context._state
    tapes, builder = state.tapes, context.set_builder(None)
    state.tapes = []
    try:
        yield
    finally:
        state.tapes = tapes
        context.set_builder(builder)


class KerasTensor:
    """A symbolic tensor of the functional API: `shape` (a tuple, None where unknown),
    `dtype` (a name such as "float32") and the node that made it. It has no value: use
    it only as the input of layers, or wrap other computations in a `Lambda` layer."""

    def __init__(self, shape: tuple, dtype: str = "float32", name: str | None = None,
                 history: tuple | None = None) -> None:
        self.shape = tuple(None if d is None else int(d) for d in shape)
        self.dtype = np.dtype(dtype).name
        self.name = name
        self._keras_history = history       # (layer, node index, output index)
        self._node = None                   # the Node that made it

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def node(self) -> Node | None:
        """The layer call that made this tensor (None for a bare KerasTensor)."""
        return self._node

    def __repr__(self) -> str:
        return f"<KerasTensor shape={self.shape}, dtype={self.dtype}, name={self.name}>"

    def __array__(self, *args, **kwargs):
        raise TypeError(f"A KerasTensor ({self.shape}, {self.dtype}) is symbolic: it has no "
                        "value. Pass it to Keras layers only, or wrap tensor operations in "
                        "a keras.layers.Lambda layer.")

    def numpy(self):
        return self.__array__()

    def __bool__(self):
        raise TypeError("A KerasTensor is symbolic and cannot be used as a Python bool")

    def __hash__(self):
        return id(self)

    # Arithmetic on KerasTensors records an operation layer (Keras 3 does the same).
    def __add__(self, other): return _operation("add", self, other)
    def __radd__(self, other): return _operation("add", other, self)
    def __sub__(self, other): return _operation("subtract", self, other)
    def __rsub__(self, other): return _operation("subtract", other, self)
    def __mul__(self, other): return _operation("multiply", self, other)
    def __rmul__(self, other): return _operation("multiply", other, self)
    def __truediv__(self, other): return _operation("divide", self, other)
    def __rtruediv__(self, other): return _operation("divide", other, self)
    def __matmul__(self, other): return _operation("matmul", self, other)
    def __rmatmul__(self, other): return _operation("matmul", other, self)
    def __pow__(self, other): return _operation("power", self, other)
    def __rpow__(self, other): return _operation("power", other, self)
    def __neg__(self): return _operation("negative", self)

    def __getitem__(self, key):
        from .layers.core import TensorOperation
        return TensorOperation("get_item", key=key, name=_operation_name("get_item"))(self)


class Node:
    """One call of a layer on KerasTensors: what it received, what it returned."""

    def __init__(self, layer: Any, inputs: Any, args: tuple, kwargs: dict,
                 outputs: Any) -> None:
        self.layer, self.inputs, self.args, self.kwargs = layer, inputs, args, kwargs
        self.outputs = outputs

    def input_tensors(self) -> list[KerasTensor]:
        """Every KerasTensor this call depends on (inputs, then other arguments)."""
        return [x for x in nest.flatten((self.inputs, self.args, self.kwargs))
                if isinstance(x, KerasTensor)]

    def output_tensors(self) -> list[KerasTensor]:
        return nest.flatten(self.outputs)


def _operation(name, *operands):
    """A TensorOperation layer applied to the KerasTensor operands (Python numbers are
    kept in its config); any other operand makes it a Lambda layer."""
    from .layers.core import Lambda, TensorOperation
    tensors = [x for x in operands if isinstance(x, KerasTensor)]
    constants = [x for x in operands if not isinstance(x, KerasTensor)]
    if all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in constants):
        constant_first = bool(constants) and not isinstance(operands[0], KerasTensor)
        layer = TensorOperation(name, constants[0] if constants else None, constant_first,
                                name=_operation_name(name))
        return layer(tensors if len(tensors) > 1 else tensors[0])
    function = TensorOperation.FUNCTIONS[name]

    def apply(values):
        values = values if isinstance(values, list) else [values]
        it, rest = iter(values), iter(constants)
        return function(*[next(it) if isinstance(x, KerasTensor) else next(rest)
                          for x in operands])
    return Lambda(apply, name=_operation_name(name))(tensors if len(tensors) > 1
                                                     else tensors[0])


def _operation_name(name):
    from .layers.base import unique_name
    return unique_name(name)


def _zeros(shape, dtype, size):
    from ..tensor import convert_to_tensor
    return convert_to_tensor(np.zeros([size if d is None else d for d in shape], dtype))


def _probe(layer, inputs, args, kwargs, size):
    """The layer's outputs on zeros in place of the KerasTensors."""
    def real(x):
        return _zeros(x.shape, x.dtype, size) if isinstance(x, KerasTensor) else x
    inputs, args, kwargs = nest.map_structure(real, (inputs, args, kwargs))
    with outside_traces():
        weights = layer.weights
        values = [w.numpy() for w in weights]
        try:
            return layer(inputs, *args, **kwargs)
        finally:        # a call in training mode may update state (moving statistics)
            for weight, value in zip(weights, values):
                weight.assign(value)


def _unknown_dims_as_none(first, second):
    shape = tuple(a if a == b else None for a, b in zip(first.shape, second.shape))
    return KerasTensor(shape, first.dtype.name)


def _output_spec(layer, inputs, args, kwargs):
    """KerasTensors (without history) shaped as the layer's outputs."""
    leaves = [x for x in nest.flatten((inputs, args, kwargs)) if isinstance(x, KerasTensor)]
    unknown = any(d is None for x in leaves for d in x.shape)
    first = _probe(layer, inputs, args, kwargs, _PROBE_SIZES[0])
    if not unknown:
        return nest.map_structure(lambda t: KerasTensor(tuple(t.shape), t.dtype.name), first)
    second = _probe(layer, inputs, args, kwargs, _PROBE_SIZES[1])
    return nest.map_structure(_unknown_dims_as_none, first, second)


def _shapes(structure):
    return nest.map_structure(lambda x: x.shape if isinstance(x, KerasTensor) else None,
                              structure)


def symbolic_call(layer, inputs, args, kwargs):
    """Call `layer` on KerasTensors: build it from their shapes, record a Node, and
    return KerasTensors shaped as its outputs."""
    layer._check_input_spec(inputs)
    if not layer.built:
        layer._build_with(_shapes(inputs))
        layer._check_input_spec(inputs)
    kwargs = {k: v for k, v in kwargs.items() if k != "training" or v is not None}
    spec = _output_spec(layer, inputs, args, kwargs)
    node_index = len(layer._inbound_nodes)
    flat = nest.flatten(spec)
    outputs = [KerasTensor(t.shape, t.dtype, name=layer.name, history=(layer, node_index, i))
               for i, t in enumerate(flat)]
    outputs = nest.pack_sequence_as(spec, outputs)
    node = Node(layer, inputs, args, kwargs, outputs)
    for tensor in flat_outputs(node):
        tensor._node = node
    layer._inbound_nodes.append(node)
    layer._output_shape = _shapes(outputs)
    return outputs


def flat_outputs(node):
    return nest.flatten(node.outputs)


def output_shape_of(layer, input_shape):
    """The output shape (or structure of shapes) of `layer` on inputs of `input_shape`."""
    def spec(shape):
        return KerasTensor(tuple(shape), layer.dtype if np.dtype(layer.dtype).kind == "f"
                           else "float32")
    shapes_are_leaves = isinstance(input_shape, tuple) and \
        all(d is None or isinstance(d, int) for d in input_shape)
    inputs = spec(input_shape) if shapes_are_leaves else \
        [spec(s) for s in input_shape]
    if not layer.built:
        layer._build_with(input_shape)
    return _shapes(_output_spec(layer, inputs, (), {}))
