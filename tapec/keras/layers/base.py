"""The Keras `Layer` base class (Keras 3's), a `tapec.Module`.

    class Scale(keras.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones")
        def call(self, inputs):
            return inputs * self.w

A layer builds once, on its first call, from the first input's shape, then runs
`call`. Its weights are its own (trainable ones first, then the others, each in
creation order) followed by those of its sublayers, which are found by walking its
attributes (lists, tuples and dicts included) in the order they were first assigned:
Keras 3's order. Called on a symbolic `KerasTensor` (from `keras.Input`), a layer
records a node of a functional graph instead of computing (keras/keras_tensor.py).
"""
from __future__ import annotations

import functools
import inspect
import re
import threading
import warnings
from typing import Any

import numpy as np

from ... import nest
from ...namespaces.module import Module, name_scope
from ...ops.shape import cast
from ...tensor import Tensor, Variable, convert_to_tensor
from .. import initializers, regularizers
from ..keras_tensor import KerasTensor, outside_traces, symbolic_call
from ..masking import any_mask, get_keras_mask, masks_of, set_keras_mask

__all__ = ["Layer", "InputSpec"]

_CAMEL_TO_SNAKE = re.compile(r"((?<=[a-z])[A-Z]|(?!^)[A-Z](?=[a-z]))")
_names_lock = threading.Lock()
_name_counts: dict[str, int] = {}
_call_state = threading.local()        # the `training` flag of the enclosing layer calls

# Constructor keywords Keras 3 accepts on every layer (a Sequential model's first layer
# may declare its input with them).
_SHAPE_KWARGS = ("input_shape", "batch_input_shape", "input_dim", "batch_size")


def unique_name(prefix: str) -> str:
    """Keras' automatic names: "dense", then "dense_1", "dense_2", ..."""
    with _names_lock:
        count = _name_counts.get(prefix, 0)
        _name_counts[prefix] = count + 1
    return prefix if count == 0 else f"{prefix}_{count}"


def clear_session() -> None:
    """Restart automatic layer names ("dense" again), as `keras.utils.clear_session`."""
    with _names_lock:
        _name_counts.clear()


def snake_case(name: str) -> str:
    return _CAMEL_TO_SNAKE.sub(r"_\1", name).lower()


class InputSpec:
    """What a layer accepts (Keras 3's `keras.layers.InputSpec`): `ndim`, `min_ndim`,
    `max_ndim`, `axes` ({axis: size}), `shape` (None entries free) and `dtype`. A layer
    whose `input_spec` is set checks every input against it before calling `call`."""

    def __init__(self, dtype: Any = None, shape: Any = None, ndim: int | None = None,
                 max_ndim: int | None = None, min_ndim: int | None = None,
                 axes: dict | None = None, allow_last_axis_squeeze: bool = False,
                 name: str | None = None, optional: bool = False) -> None:
        self.dtype = None if dtype is None else np.dtype(_dtype_name(dtype)).name
        self.shape = None if shape is None else tuple(shape)
        self.ndim = len(self.shape) if self.shape is not None else ndim
        self.max_ndim, self.min_ndim = max_ndim, min_ndim
        self.axes = dict(axes or {})
        self.name, self.optional = name, optional

    def check(self, layer_name: str, index: int, x: Any) -> None:
        shape = tuple(x.shape)
        where = f"Input {index} of layer \"{layer_name}\" is incompatible with the layer: "
        if self.ndim is not None and len(shape) != self.ndim:
            raise ValueError(f"{where}expected ndim={self.ndim}, found ndim={len(shape)}. "
                             f"Full shape received: {shape}")
        if self.min_ndim is not None and len(shape) < self.min_ndim:
            raise ValueError(f"{where}expected min_ndim={self.min_ndim}, found "
                             f"ndim={len(shape)}. Full shape received: {shape}")
        if self.max_ndim is not None and len(shape) > self.max_ndim:
            raise ValueError(f"{where}expected max_ndim={self.max_ndim}, found "
                             f"ndim={len(shape)}. Full shape received: {shape}")
        dtype = getattr(x.dtype, "name", x.dtype)      # a KerasTensor's is a str
        if self.dtype is not None and dtype != self.dtype:
            raise ValueError(f"{where}expected dtype={self.dtype}, found dtype={dtype}")
        for axis, size in self.axes.items():
            if size is not None and -len(shape) <= axis < len(shape) and \
                    shape[axis] not in (None, size):
                raise ValueError(f"{where}expected axis {axis} of input shape to have value "
                                 f"{size}, but received input with shape {shape}")
        if self.shape is not None:
            for expected, got in zip(self.shape, shape):
                if expected is not None and got is not None and expected != got:
                    raise ValueError(f"{where}expected shape={self.shape}, found "
                                     f"shape={shape}")


def _enclosing_training():
    return getattr(_call_state, "training", None)


class Layer(Module):
    """The base class of Keras layers (Keras 3's `keras.layers.Layer`).

    Subclasses create weights in `build(input_shape)` (or in `__init__`) with
    `add_weight`, and compute in `call(inputs, ...)`; `training` is passed to `call`
    when its signature has that parameter: the caller's value, else the enclosing
    layer call's, else `call`'s own default."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass's `build` marks the layer built and makes its weights outside any
        trace and under the layer's name scope, however it is called (as Keras 3)."""
        super().__init_subclass__(**kwargs)
        if "build" in cls.__dict__:
            cls.build = _building(cls.__dict__["build"])

    def __init__(self, trainable: bool = True, name: str | None = None, dtype: Any = None,
                 autocast: bool = True, **kwargs: Any) -> None:
        shape_kwargs = {k: kwargs.pop(k) for k in _SHAPE_KWARGS if k in kwargs}
        kwargs.pop("input_dtype", None)
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unrecognized keyword arguments "
                            f"{sorted(kwargs)}")
        if name is None:
            name = unique_name(snake_case(type(self).__name__))
        elif not isinstance(name, str) or "/" in name:
            raise ValueError(f"{type(self).__name__}: a layer name must be a string without "
                             f"'/', got {name!r:.60}")
        self._name = name
        with name_scope(name.replace(" ", "_")) as scope:
            self._name_scope = name_scope(scope)
        self._dtype = np.dtype(np.float32 if dtype is None else _dtype_name(dtype)).name
        self._trainable = bool(trainable)
        self.built = False
        self._autocast = bool(autocast)
        self._own_trainable: list[Variable] = []
        self._own_non_trainable: list[Variable] = []
        self._regularized: list[tuple[Variable, Any]] = []
        self._call_losses: list[Any] = []
        self._input_shape_arg = _declared_input_shape(shape_kwargs)
        self._build_shape = None
        self._output_shape = None       # from the last symbolic call, for summary()
        self._inbound_nodes: list = []
        # Keras 3: a layer that defines compute_mask supports masking; others set the flag.
        self.supports_masking = type(self).compute_mask is not Layer.compute_mask
        self.input_spec = None

    # --- names, dtype, flags --------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self) -> str:
        """The dtype of the layer's weights (also its compute dtype), e.g. "float32"."""
        return self._dtype

    compute_dtype = variable_dtype = dtype

    @property
    def trainable(self) -> bool:
        return self._trainable

    @trainable.setter
    def trainable(self, value: bool) -> None:
        """Freezing a layer freezes its weights and its sublayers (Keras 3)."""
        value = bool(value)
        self._trainable = value
        for variable in self._own_trainable:
            variable.trainable = value
        for layer in self._sublayers():
            layer.trainable = value

    # --- weights ---------------------------------------------------------------------------
    def add_weight(self, shape: Any = None, initializer: Any = None, dtype: Any = None,
                   trainable: bool = True, autocast: bool = True, regularizer: Any = None,
                   constraint: Any = None, aggregation: str = "none",
                   overwrite_with_gradient: bool = False, name: str | None = None,
                   **kwargs: Any) -> Variable:
        """A new Variable owned by this layer (Keras 3's signature): its value is
        `initializer(shape, dtype=dtype)` (a name such as "zeros", an Initializer or a
        callable; by default "glorot_uniform" for floating dtypes, "zeros" otherwise),
        its dtype the layer's unless `dtype` says otherwise. A regularizer's penalty
        joins `losses`; a constraint is kept on the Variable for optimizers to apply."""
        if kwargs:
            raise TypeError(f"add_weight: unexpected keyword arguments {sorted(kwargs)}")
        shape = () if shape is None else tuple(int(d) for d in shape)
        dtype = _dtype_name(dtype) if dtype is not None else self._dtype
        if initializer is None:
            initializer = "glorot_uniform" if np.dtype(dtype).kind == "f" else "zeros"
        init = initializers.get(initializer)
        name = name or "variable"
        with outside_traces(), self._name_scope:
            value = init(shape, dtype=dtype)
            variable = Variable(convert_to_tensor(value, dtype=dtype), trainable=trainable,
                                name=name, constraint=constraint)
        variable.trainable = bool(trainable) and self._trainable
        (self._own_trainable if trainable else self._own_non_trainable).append(variable)
        if regularizer is not None:
            self._regularized.append((variable, regularizers.get(regularizer)))
        return variable

    def _own_weights(self) -> list[Variable]:
        """add_weight's Variables (trainable first) and Variables assigned as attributes."""
        found = self._own_trainable + self._own_non_trainable
        known = {id(v) for v in found}
        for value in self._tracked_values():
            if isinstance(value, Variable) and id(value) not in known:
                known.add(id(value))
                found.append(value)
        return found

    def _tracked_values(self):
        for key, value in vars(self).items():
            if key in _UNTRACKED:
                continue
            if isinstance(value, (Layer, Variable)):
                yield value
            elif isinstance(value, (list, tuple, dict)):
                for leaf in _flat_values(value):
                    if isinstance(leaf, (Layer, Variable)):
                        yield leaf

    def _sublayers(self) -> list[Layer]:
        """The layers assigned to this one's attributes, in assignment order."""
        found, seen = [], {id(self)}
        for value in self._tracked_values():
            if isinstance(value, Layer) and id(value) not in seen:
                seen.add(id(value))
                found.append(value)
        return found

    @property
    def weights(self) -> list[Variable]:
        """Every weight: this layer's own, then each sublayer's, each once."""
        found, seen = [], set()
        for variable in self._own_weights() + [w for layer in self._sublayers()
                                               for w in layer.weights]:
            if id(variable) not in seen:
                seen.add(id(variable))
                found.append(variable)
        return found

    @property
    def trainable_weights(self) -> list[Variable]:
        return [w for w in self.weights if w.trainable] if self._trainable else []

    @property
    def non_trainable_weights(self) -> list[Variable]:
        return [w for w in self.weights if not w.trainable] if self._trainable else \
            self.weights

    @property
    def variables(self) -> list[Variable]:
        """The same list as `weights`."""
        return self.weights

    @property
    def trainable_variables(self) -> list[Variable]:
        """The same list as `trainable_weights`."""
        return self.trainable_weights

    @property
    def non_trainable_variables(self) -> list[Variable]:
        """The same list as `non_trainable_weights`."""
        return self.non_trainable_weights

    def get_weights(self) -> list[np.ndarray]:
        """The weights' values as NumPy arrays, in `weights` order."""
        return [np.array(w.numpy()) for w in self.weights]

    def set_weights(self, weights: list[Any]) -> None:
        """Assign NumPy arrays to the weights, in `weights` order (shapes must match)."""
        params = self.weights
        if len(params) != len(weights):
            raise ValueError(f"Layer {self.name!r}: set_weights expects a list of "
                             f"{len(params)} arrays (its weights), got {len(weights)}")
        for variable, value in zip(params, weights):
            value = np.asarray(value)
            if tuple(value.shape) != tuple(variable.shape):
                raise ValueError(f"Layer {self.name!r} weight {variable.name!r}: expected "
                                 f"shape {tuple(variable.shape)}, got {value.shape}")
            variable.assign(value.astype(variable.dtype.as_numpy_dtype))

    def count_params(self) -> int:
        """The number of scalars in the weights (the layer must be built)."""
        if not self.built:
            raise ValueError(f"You tried to call `count_params` on layer {self.name!r}, but "
                             "the layer isn't built. You can build it manually via: "
                             "`layer.build(input_shape)`.")
        return int(sum(np.prod(w.shape, dtype=np.int64) for w in self.weights))

    # --- losses ----------------------------------------------------------------------------
    def add_loss(self, loss: Any) -> None:
        """Add a loss tensor (computed in `call`); `losses` lists it until the next call."""
        self._call_losses.append(loss)

    @property
    def losses(self) -> list[Any]:
        """As Keras 3: the losses `add_loss` received in the latest call, this layer's and
        every sublayer's, then the regularizers' penalties on the trainable weights."""
        layers = self._flatten_layers()
        found = [loss for layer in layers for loss in layer._call_losses]
        regularizers_by_weight = {id(variable): regularizer for layer in layers
                                  for variable, regularizer in layer._regularized}
        found += [regularizers_by_weight[id(w)](w) for w in self.trainable_weights
                  if id(w) in regularizers_by_weight]
        return found

    def _flatten_layers(self) -> list[Layer]:
        """This layer and every layer below it, each once (depth first)."""
        found, seen, pending = [], set(), [self]
        while pending:
            layer = pending.pop(0)
            if id(layer) in seen:
                continue
            seen.add(id(layer))
            found.append(layer)
            pending = layer._sublayers() + pending
        return found

    def _clear_losses(self) -> None:
        for layer in self._flatten_layers():
            layer._call_losses = []

    # --- building and calling --------------------------------------------------------------
    def build(self, input_shape: Any = None) -> None:
        """Create the weights for inputs of this shape (batch dimension None)."""
        self._build_shape = input_shape
        self.built = True

    def call(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"Layer {type(self).__name__} does not have a `call()` "
                                  "method implemented.")

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The output shape for an input shape, found by calling the layer on a symbolic
        input of that shape."""
        from ..keras_tensor import output_shape_of
        return output_shape_of(self, input_shape)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if args:
            inputs, args = args[0], args[1:]
        else:
            first = next(iter(self._call_parameters()), None)
            if first is None or first not in kwargs:
                raise TypeError(f"Layer {self.name!r}: called without inputs")
            inputs = kwargs.pop(first)
        if any(isinstance(x, KerasTensor) for x in nest.flatten(inputs)):
            return symbolic_call(self, inputs, args, kwargs)
        # Keras 3: a mask passed in, else the masks the inputs carry (read before the
        # inputs are converted: a cast makes a new tensor, without the mask).
        previous_mask = kwargs.get("mask")
        if previous_mask is None:
            previous_mask = masks_of(inputs)
            if any_mask(previous_mask) and "mask" in self._call_parameters():
                kwargs["mask"] = previous_mask
        inputs = nest.map_structure(self._convert_input, inputs)
        self._check_input_spec(inputs)
        self._maybe_build(inputs)
        self._check_input_spec(inputs)
        training = kwargs.pop("training", None)
        if training is None:
            training = _enclosing_training()
        if training is None:
            training = self._call_parameters().get("training")
        parameters = self._call_parameters()
        if "training" in parameters:
            kwargs["training"] = training
        if "mask" in kwargs and "mask" not in parameters:
            del kwargs["mask"]          # layers that take no mask ignore one (Keras 3)
        outermost = not hasattr(_call_state, "training")
        if outermost:
            self._clear_losses()
        previous = getattr(_call_state, "training", None)
        _call_state.training = training
        try:
            with self._name_scope:
                outputs = self.call(inputs, *args, **kwargs)
        finally:
            if outermost:
                del _call_state.training
            else:
                _call_state.training = previous
        self._output_shape = nest.map_structure(
            lambda y: tuple(y.shape) if hasattr(y, "shape") else None, outputs)
        if self.supports_masking:
            self._set_mask_metadata(inputs, outputs, previous_mask)
        elif any_mask(previous_mask):
            warnings.warn(f"Layer '{self.name}' (of type {type(self).__name__}) was passed an "
                          "input with a mask attached to it. However, this layer does not "
                          "support masking and will therefore destroy the mask information. "
                          "Downstream layers will not see the mask.", stacklevel=2)
        return outputs

    # --- masking ----------------------------------------------------------------------------
    def compute_mask(self, inputs: Any, previous_mask: Any) -> Any:
        """The mask of the outputs (Keras 3's): by default the inputs' mask, passed on."""
        return previous_mask

    def _set_mask_metadata(self, inputs: Any, outputs: Any, previous_mask: Any) -> None:
        flat_outputs = nest.flatten(outputs)
        if all(get_keras_mask(y) is not None for y in flat_outputs):
            return                            # the call attached its own masks
        output_masks = self.compute_mask(inputs, previous_mask)
        if output_masks is None:
            return
        for y, mask in zip(flat_outputs, nest.flatten(output_masks)):
            if get_keras_mask(y) is None and mask is not None:
                set_keras_mask(y, mask)

    def _check_input_spec(self, inputs: Any) -> None:
        specs = self.input_spec
        if specs is None:
            return
        specs = nest.flatten(specs)
        for index, (spec, x) in enumerate(zip(specs, nest.flatten(inputs))):
            if spec is not None and hasattr(x, "shape"):
                spec.check(self.name, index, x)

    def _call_parameters(self) -> dict[str, Any]:
        """call's parameters after `self`: name -> default (None where it has none)."""
        cached = type(self).__dict__.get("_call_parameters_cache")
        if cached is None:
            params = list(inspect.signature(self.call).parameters.values())
            cached = {p.name: (None if p.default is inspect.Parameter.empty else p.default)
                      for p in params
                      if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
            type.__setattr__(type(self), "_call_parameters_cache", cached)
        return cached

    def _convert_input(self, x: Any) -> Any:
        """NumPy arrays and Python numbers become tensors; floating inputs take the
        layer's dtype (Keras 3's autocasting)."""
        if x is None or isinstance(x, (str, bytes)):
            return x
        if not isinstance(x, (Tensor, Variable)):
            if not isinstance(x, (np.ndarray, np.generic, list, tuple, int, float)):
                return x
            x = convert_to_tensor(np.asarray(x))
        if self._autocast and x.dtype.is_floating and x.dtype.name != self._dtype and \
                np.dtype(self._dtype).kind == "f":
            x = cast(x, self._dtype)
        return x

    def _maybe_build(self, inputs: Any) -> None:
        if self.built:
            return
        shapes = nest.map_structure(
            lambda x: tuple(x.shape) if hasattr(x, "shape") else None, inputs)
        self._build_with(shapes)

    def _build_with(self, input_shape: Any) -> None:
        self.build(_shape_argument(input_shape))
        self._build_shape = input_shape
        self.built = True

    # --- the functional graph ------------------------------------------------------------
    def _only_node(self, what: str):
        nodes = self._inbound_nodes
        if not nodes:
            raise AttributeError(f"Layer {self.name!r} has never been called on a "
                                 f"KerasTensor and thus has no defined {what}.")
        if len(nodes) > 1:
            raise AttributeError(f"Layer {self.name!r} has multiple inbound nodes, hence the "
                                 f"notion of \"layer {what}\" is ill-defined.")
        return nodes[0]

    @property
    def input(self) -> Any:
        """The KerasTensor(s) this layer was called on (layers called once only)."""
        node = self._only_node("input")
        return node.outputs if node.inputs is None else node.inputs

    @property
    def output(self) -> Any:
        """The KerasTensor(s) this layer returned (layers called once only)."""
        return self._only_node("output").outputs

    # --- configuration ---------------------------------------------------------------------
    def get_config(self) -> dict[str, Any]:
        """The constructor arguments that rebuild this layer (without its weights)."""
        config = {"name": self.name, "trainable": self.trainable, "dtype": self.dtype}
        if self._input_shape_arg is not None:
            config["batch_input_shape"] = self._input_shape_arg
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Layer:
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"


def _building(build):
    @functools.wraps(build)
    def build_and_mark(self, *args, **kwargs):
        with outside_traces(), self._name_scope:
            result = build(self, *args, **kwargs)
        self.built = True
        return result
    return build_and_mark


_UNTRACKED = frozenset(["_own_trainable", "_own_non_trainable", "_regularized",
                        "_call_losses", "_inbound_nodes", "_name_scope", "_built_nodes"])


def _flat_values(structure):
    if isinstance(structure, dict):
        for value in structure.values():
            yield from _flat_values(value)
    elif isinstance(structure, (list, tuple)):
        for value in structure:
            yield from _flat_values(value)
    else:
        yield structure


def _dtype_name(dtype: Any) -> str:
    if hasattr(dtype, "as_numpy_dtype"):
        return np.dtype(dtype.as_numpy_dtype).name
    if isinstance(dtype, dict) or hasattr(dtype, "name") and not isinstance(dtype, np.dtype):
        raise TypeError(f"Keras dtype policies are not supported: pass a dtype name such as "
                        f"'float32', got {dtype!r:.60}")
    try:
        return np.dtype(dtype).name
    except TypeError:
        raise TypeError(f"Layer dtype: {dtype!r:.60} is not a dtype name such as 'float32' "
                        "(Keras dtype policies such as 'mixed_float16' are not "
                        "supported)") from None


def _declared_input_shape(kwargs: dict[str, Any]):
    """The batch input shape a layer's constructor declared (input_shape=(8,) gives
    (None, 8)), or None."""
    if "batch_input_shape" in kwargs:
        return tuple(kwargs["batch_input_shape"])
    batch = kwargs.get("batch_size")
    if "input_shape" in kwargs:
        return (batch,) + tuple(kwargs["input_shape"])
    if "input_dim" in kwargs:
        return (batch, int(kwargs["input_dim"]))
    return None


def _shape_argument(shape):
    """A single input's shape as a tuple; several as a list of tuples (Keras 3)."""
    if isinstance(shape, tuple) and all(d is None or isinstance(d, int) for d in shape):
        return shape
    if isinstance(shape, (list, tuple)):
        return [_shape_argument(s) for s in shape]
    if isinstance(shape, dict):
        return {k: _shape_argument(v) for k, v in shape.items()}
    return shape
