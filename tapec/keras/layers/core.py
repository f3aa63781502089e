"""Core Keras layers: Dense, Flatten, Reshape, Lambda, Activation, Dropout, Embedding,
and InputLayer with `keras.Input`."""
from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from ...ops.activations import dropout
from ...ops.indexing import gather
from ...ops.linalg import matmul
from ...ops import elementwise as ew
from ...ops.math_extra import reduce_any
from ...ops.shape import cast, reshape, squeeze
from .. import activations, initializers, regularizers
from ..keras_tensor import KerasTensor, Node
from ..loss_functions import as_tensor
from ..masking import set_keras_mask
from .base import InputSpec, Layer

__all__ = ["Dense", "Flatten", "Reshape", "Lambda", "Activation", "Dropout", "Embedding",
           "Masking", "InputLayer", "Input", "TensorOperation"]


def _constraint(layer, constraint):
    """A weight constraint: a callable applied by the optimizer after each update."""
    if constraint is not None and not callable(constraint):
        raise ValueError(f"{layer}: a constraint must be a callable (weights -> weights); "
                         f"named Keras constraints are not supported, got {constraint!r:.60}")
    return constraint


def _refuse_constraints(layer, *constraints):
    if any(c is not None for c in constraints):
        raise ValueError(f"{type(layer).__name__} {layer.name!r}: a layer with a weight "
                         "constraint (a Python callable) cannot be saved in a config")


def _serialized_initializer(init):
    return init if isinstance(init, str) else initializers.serialize(init)


def _serialized_regularizer(reg):
    return None if reg is None else regularizers.serialize(reg)


class Dense(Layer):
    """`activation(inputs @ kernel + bias)`: kernel (input_dim, units), bias (units,).
    Inputs of rank above 2 are multiplied along their last axis."""

    def __init__(self, units: int, activation: Any = None, use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, kernel_constraint: Any = None,
                 bias_constraint: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.supports_masking = True
        if isinstance(units, bool) or not isinstance(units, (int, np.integer)) or units <= 0:
            raise ValueError(f"Received an invalid value for `units`, expected a positive "
                             f"integer. Received: units={units!r}")
        self.kernel_constraint = _constraint("Dense", kernel_constraint)
        self.bias_constraint = _constraint("Dense", bias_constraint)
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.activity_regularizer = regularizers.get(activity_regularizer)
        self.input_spec = InputSpec(min_ndim=2)

    def build(self, input_shape):
        if len(input_shape) < 2 or input_shape[-1] is None:
            raise ValueError(f"Dense {self.name!r}: the input needs at least 2 dimensions "
                             f"and a known last dimension, got shape {input_shape}")
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units),
                                      initializer=self.kernel_initializer, name="kernel",
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = self.add_weight(shape=(self.units,), initializer=self.bias_initializer,
                                    name="bias", regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) \
            if self.use_bias else None
        self.input_spec = InputSpec(min_ndim=2, axes={-1: input_shape[-1]})
        self.built = True

    def call(self, inputs):
        if len(inputs.shape) < 2:
            raise ValueError(f"Dense {self.name!r}: expected an input of rank >= 2, got "
                             f"shape {tuple(inputs.shape)}")
        if inputs.dtype != self.kernel.dtype:       # integer inputs (Keras promotes them)
            inputs = cast(inputs, self.kernel.dtype)
        y = matmul(inputs, self.kernel)
        if self.bias is not None:
            y = y + self.bias
        y = self.activation(y)
        if self.activity_regularizer is not None:
            self.add_loss(self.activity_regularizer(y))
        return y

    def get_config(self):
        _refuse_constraints(self, self.kernel_constraint, self.bias_constraint)
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation),
                "use_bias": self.use_bias,
                "kernel_initializer": _serialized_initializer(self.kernel_initializer),
                "bias_initializer": _serialized_initializer(self.bias_initializer),
                "kernel_regularizer": _serialized_regularizer(self.kernel_regularizer),
                "bias_regularizer": _serialized_regularizer(self.bias_regularizer),
                "activity_regularizer": _serialized_regularizer(self.activity_regularizer)}


class Flatten(Layer):
    """(batch, d1, d2, ...) -> (batch, d1 * d2 * ...); a rank-1 input becomes (batch, 1)."""

    def __init__(self, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if data_format not in (None, "channels_last", "channels_first"):
            raise ValueError(f"Flatten: data_format must be 'channels_last' or "
                             f"'channels_first', got {data_format!r}")
        self.data_format = data_format

    def call(self, inputs):
        from ...ops.shape import transpose
        if self.data_format == "channels_first" and len(inputs.shape) > 2:
            rank = len(inputs.shape)
            inputs = transpose(inputs, [0] + list(range(2, rank)) + [1])
        size = math.prod(inputs.shape[1:])
        return reshape(inputs, [-1, size])

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}


class Reshape(Layer):
    """(batch, ...) -> (batch, *target_shape); one entry of target_shape may be -1."""

    def __init__(self, target_shape: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)
        if sum(d == -1 for d in self.target_shape) > 1 or \
                any(d < -1 for d in self.target_shape):
            raise ValueError(f"Reshape: target_shape may hold one -1 and positive sizes, "
                             f"got {self.target_shape}")

    def call(self, inputs):
        size = math.prod(inputs.shape[1:])
        known = math.prod(d for d in self.target_shape if d != -1)
        if -1 in self.target_shape:
            if known == 0 or size % known:
                raise ValueError(f"Reshape {self.name!r}: cannot reshape an input of shape "
                                 f"{tuple(inputs.shape)} to (batch, *{self.target_shape})")
            target = tuple(size // known if d == -1 else d for d in self.target_shape)
        elif known != size:
            raise ValueError(f"Reshape {self.name!r}: the input's {size} elements per "
                             f"example do not fit target_shape {self.target_shape} "
                             f"(input shape {tuple(inputs.shape)})")
        else:
            target = self.target_shape
        return reshape(inputs, [-1, *target])

    def get_config(self):
        return {**super().get_config(), "target_shape": list(self.target_shape)}


class Lambda(Layer):
    """Any function of the inputs as a layer: `call(x) = function(x, **arguments)`.
    It has no weights of its own and cannot be saved with `model.save` (Python code)."""

    def __init__(self, function: Callable, output_shape: Any = None, mask: Any = None,
                 arguments: dict | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not callable(function):
            raise TypeError(f"Lambda: function must be callable, got {function!r:.60}")
        self.function = function
        self.arguments = dict(arguments or {})
        self._declared_output_shape = output_shape
        self.mask = mask
        self.supports_masking = True

    def compute_mask(self, inputs, mask=None):
        """Keras 3's: the `mask` argument (a function of the inputs and their mask, or a
        fixed mask); without one the mask stops here."""
        return self.mask(inputs, mask) if callable(self.mask) else self.mask

    def call(self, inputs, training=None):
        return self.function(inputs, **self.arguments)

    def get_config(self):
        raise NotImplementedError(f"Lambda layer {self.name!r} holds Python code, which "
                                  "tapec does not save: rebuild the model in code and use "
                                  "save_weights/load_weights")


class TensorOperation(Layer):
    """An arithmetic operator applied to KerasTensors (`x + y`, `2 * x`, `-x`, ...) in
    a functional model: the operation's name and any Python-number operand."""

    FUNCTIONS: ClassVar[dict[str, Callable]] = {
        "add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
        "divide": operator.truediv, "matmul": operator.matmul, "power": operator.pow,
        "negative": operator.neg}

    def __init__(self, operation: str, constant: float | None = None,
                 constant_first: bool = False, key: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.key = None if key is None else _encode_key(key)
        if operation == "get_item":
            if key is None:
                raise ValueError("TensorOperation: get_item needs a key")
        elif operation not in self.FUNCTIONS:
            raise ValueError(f"TensorOperation: unknown operation {operation!r} (known: "
                             f"{sorted(self.FUNCTIONS)})")
        self.operation, self.constant = operation, constant
        self.constant_first = bool(constant_first)

    def call(self, inputs):
        if self.operation == "get_item":
            return inputs[_decode_key(self.key)]
        function = self.FUNCTIONS[self.operation]
        operands = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if self.constant is not None:
            operands.insert(0 if self.constant_first else 1, self.constant)
        return function(*operands)

    def get_config(self):
        return {**super().get_config(), "operation": self.operation,
                "constant": self.constant, "constant_first": self.constant_first,
                "key": self.key}


def _encode_key(key):
    """An index (ints, slices, None, Ellipsis, tuples of them) as JSON-able lists."""
    if isinstance(key, tuple):
        return {"tuple": [_encode_key(k) for k in key]}
    if isinstance(key, slice):
        return {"slice": [key.start, key.stop, key.step]}
    if key is Ellipsis:
        return {"ellipsis": True}
    if key is None or isinstance(key, dict) or \
            isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        return key if not isinstance(key, np.integer) else int(key)
    raise TypeError(f"TensorOperation: cannot index a KerasTensor with {key!r:.60} (use "
                    "ints, slices, None and ...)")


def _decode_key(key):
    if isinstance(key, dict) and "tuple" in key:
        return tuple(_decode_key(k) for k in key["tuple"])
    if isinstance(key, dict) and "slice" in key:
        return slice(*key["slice"])
    if isinstance(key, dict) and "ellipsis" in key:
        return Ellipsis
    return key


class Activation(Layer):
    """Applies an activation function (a name such as "relu", or a callable)."""

    def __init__(self, activation: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.supports_masking = True
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def get_config(self):
        return {**super().get_config(), "activation": activations.serialize(self.activation)}


class Dropout(Layer):
    """In training, zero each element with probability `rate` and scale the rest by
    1 / (1 - rate) (tapec.nn.dropout); the identity otherwise."""

    def __init__(self, rate: float, noise_shape: Any = None, seed: int | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.supports_masking = True
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
            raise ValueError(f"Invalid value received for argument `rate`. Expected a float "
                             f"value between 0 and 1. Received: rate={rate!r}")
        self.rate = float(rate)
        self.noise_shape = None if noise_shape is None else tuple(noise_shape)
        self.seed = seed

    def call(self, inputs, training=False):
        if not training or self.rate == 0:
            return inputs
        if self.rate == 1:
            return inputs * 0.0
        noise_shape = None
        if self.noise_shape is not None:
            noise_shape = [s if n is None else n
                           for n, s in zip(self.noise_shape, inputs.shape)]
        return dropout(inputs, self.rate, noise_shape=noise_shape, seed=self.seed)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate,
                "noise_shape": None if self.noise_shape is None else list(self.noise_shape),
                "seed": self.seed}


class Embedding(Layer):
    """Row lookup: integer indices (batch, ...) -> (batch, ..., output_dim) from the
    (input_dim, output_dim) `embeddings` matrix (initialized uniform in [-0.05, 0.05])."""

    def __init__(self, input_dim: int, output_dim: int, embeddings_initializer: Any = "uniform",
                 embeddings_regularizer: Any = None, embeddings_constraint: Any = None,
                 mask_zero: bool = False, **kwargs: Any) -> None:
        kwargs.pop("input_length", None)        # Keras 2's argument, ignored by Keras 3
        super().__init__(**kwargs)
        self.embeddings_constraint = _constraint("Embedding", embeddings_constraint)
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer)
        self.mask_zero = bool(mask_zero)
        self.supports_masking = self.mask_zero

    def compute_mask(self, inputs, mask=None):
        """With `mask_zero`, index 0 is padding: the mask is `inputs != 0`."""
        if not self.mask_zero:
            return None
        return ew.not_equal(inputs, as_tensor(0, inputs.dtype))

    def build(self, input_shape=None):
        self.embeddings = self.add_weight(shape=(self.input_dim, self.output_dim),
                                          initializer=self.embeddings_initializer,
                                          name="embeddings",
                                          regularizer=self.embeddings_regularizer,
                                          constraint=self.embeddings_constraint)
        self.built = True

    def call(self, inputs):
        if inputs.dtype.is_floating or inputs.dtype.name not in ("int32", "int64"):
            inputs = cast(inputs, "int32")
        return gather(self.embeddings, inputs)

    def get_config(self):
        _refuse_constraints(self, self.embeddings_constraint)
        return {**super().get_config(), "input_dim": self.input_dim,
                "output_dim": self.output_dim,
                "embeddings_initializer": _serialized_initializer(self.embeddings_initializer),
                "embeddings_regularizer": _serialized_regularizer(self.embeddings_regularizer),
                "mask_zero": self.mask_zero}


class Masking(Layer):
    """Masks the timesteps whose features all equal `mask_value` (Keras 3's `Masking`):
    the output is the input with those timesteps set to 0, and carries the mask
    (batch, steps) that downstream layers and the losses use."""

    def __init__(self, mask_value: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.mask_value = mask_value
        self.supports_masking = True

    def compute_mask(self, inputs, mask=None):
        return reduce_any(ew.not_equal(inputs, as_tensor(self.mask_value, inputs.dtype)),
                          axis=-1)

    def call(self, inputs):
        keep = reduce_any(ew.not_equal(inputs, as_tensor(self.mask_value, inputs.dtype)),
                          axis=-1, keepdims=True)
        outputs = ew.where(keep, inputs, as_tensor(0, inputs.dtype))
        set_keras_mask(outputs, squeeze(keep, -1))
        return outputs

    def get_config(self):
        return {**super().get_config(), "mask_value": self.mask_value}


class InputLayer(Layer):
    """The entry of a functional model: holds the symbolic `output` KerasTensor of
    shape `batch_shape` (or (batch_size, *shape))."""

    def __init__(self, shape: Any = None, batch_size: int | None = None, dtype: Any = None,
                 sparse: bool | None = None, batch_shape: Any = None, input_tensor: Any = None,
                 name: str | None = None, **kwargs: Any) -> None:
        kwargs.pop("ragged", None)
        kwargs.pop("optional", None)
        super().__init__(name=name, dtype=dtype, **kwargs)
        if sparse:
            raise NotImplementedError("InputLayer: sparse inputs are not supported")
        if input_tensor is not None:
            raise NotImplementedError("InputLayer: input_tensor is not supported; give "
                                      "shape= or batch_shape=")
        if batch_shape is None:
            if shape is None:
                raise ValueError("You must pass a `shape` argument.")
            shape = (shape,) if isinstance(shape, int) else tuple(shape)
            batch_shape = (batch_size,) + shape
        self.batch_shape = tuple(None if d is None else int(d) for d in batch_shape)
        self.built = True
        tensor = KerasTensor(self.batch_shape, self.dtype, name=self.name,
                             history=(self, 0, 0))
        tensor._node = Node(self, None, (), {}, tensor)
        self._inbound_nodes.append(tensor._node)
        self._output_shape = self.batch_shape

    def call(self, inputs):
        return inputs

    def get_config(self):
        return {"batch_shape": list(self.batch_shape), "dtype": self.dtype,
                "name": self.name}


def Input(shape: Any = None, batch_size: int | None = None, dtype: Any = None,  # noqa: N802
          sparse: bool | None = None, batch_shape: Any = None, name: str | None = None,
          tensor: Any = None, optional: bool = False) -> KerasTensor:
    """A symbolic input of the functional API: `keras.Input(shape=(8,))` stands for
    batches of shape (None, 8)."""
    layer = InputLayer(shape=shape, batch_size=batch_size, dtype=dtype, sparse=sparse,
                       batch_shape=batch_shape, input_tensor=tensor, name=name)
    return layer.output
