"""Keras models: `Sequential`, the functional `Model(inputs, outputs)` with `keras.Input`,
and subclassed models.

    model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(3)])
    inputs = keras.Input(shape=(4,))
    model = keras.Model(inputs, keras.layers.Dense(3)(inputs))

A `Model` is a `Layer` with the training loop (`compile`, `fit`, ... from
keras/training.py) and `summary`, `get_layer`, saving.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import nest
from ..tensor import convert_to_tensor
from .functional import FunctionalGraph
from .keras_tensor import KerasTensor, outside_traces
from .layers.base import Layer, snake_case, unique_name
from .layers.core import Input, InputLayer
from .summary import print_summary
from .training import Trainer

__all__ = ["Model", "Sequential", "load_model", "clone_model", "model_from_json"]


class Model(Trainer, Layer):
    """A layer with training, saving and `summary` (Keras 3's `keras.Model`).

    `Model(inputs, outputs)` is a functional model: the layer calls between
    `keras.Input`s and `outputs`, replayed on real tensors. A subclass that defines
    `call` is a subclassed model; the layers assigned to its attributes are tracked."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "__init__" in vars(Trainer):
            Trainer.__init__(self)
        inputs = kwargs.pop("inputs", args[0] if args else None)
        outputs = kwargs.pop("outputs", args[1] if len(args) > 1 else None)
        if (inputs is None) != (outputs is None):
            raise ValueError("Model: give both `inputs` and `outputs` for a functional "
                             "model, or neither for a subclassed one")
        self._graph = None
        if inputs is None:
            Layer.__init__(self, **kwargs)
            return
        if "name" not in kwargs or kwargs["name"] is None:
            kwargs["name"] = unique_name("functional" if type(self) is Model
                                         else snake_case(type(self).__name__))
        Layer.__init__(self, **kwargs)
        self._graph = FunctionalGraph(inputs, outputs)
        self.built = True

    # --- the functional graph ----------------------------------------------------------------
    def call(self, inputs: Any, training: Any = None, mask: Any = None) -> Any:
        if self._graph is None:
            raise NotImplementedError(f"Model {self.name!r}: a subclassed model must define "
                                      "call(), or pass inputs and outputs to Model()")
        return self._graph.run(inputs)

    def build(self, input_shape: Any = None) -> None:
        """Create a subclassed model's weights by calling it once on zeros of
        `input_shape` (None dimensions taken as 1). (Keras 3 leaves a subclassed
        model's layers unbuilt here; tapec builds them, so that weights can be loaded
        or counted before the first call.)"""
        if self._graph is not None or input_shape is None:
            self.built = True
            return
        self.built = True           # the call below must not build again
        with outside_traces():
            self(_zeros_like_shapes(input_shape))
        pending = [self]
        while pending:          # shapes of a call on stand-in zeros are not the model's
            layer = pending.pop()
            layer._output_shape = None
            pending += layer._sublayers()

    def _build_with(self, input_shape: Any) -> None:
        if type(self).build is Model.build:   # the first call creates the weights itself
            self.built = True
            return
        super()._build_with(input_shape)

    def _sublayers(self) -> list[Layer]:
        if getattr(self, "_graph", None) is not None:
            return [layer for layer in self._graph.layers if layer is not self]
        return super()._sublayers()

    @property
    def layers(self) -> list[Layer]:
        """The model's layers (a functional model's input layers included, as Keras 3)."""
        return self._sublayers()

    @property
    def inputs(self) -> list[KerasTensor] | None:
        return None if self._graph is None else nest.flatten(self._graph.inputs)

    @property
    def outputs(self) -> list[KerasTensor] | None:
        return None if self._graph is None else nest.flatten(self._graph.outputs)

    @property
    def input(self) -> Any:
        """The model's input KerasTensor(s), as given to `Model(inputs, outputs)`."""
        if self._graph is None:
            return super().input
        return self._graph.inputs

    @property
    def output(self) -> Any:
        if self._graph is None:
            return super().output
        return self._graph.outputs

    @property
    def input_shape(self):
        shapes = [x.shape for x in self.inputs or []]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def output_shape(self):
        shapes = [x.shape for x in self.outputs or []]
        return shapes[0] if len(shapes) == 1 else shapes

    def get_layer(self, name: str | None = None, index: int | None = None) -> Layer:
        """The layer called `name`, or at position `index` of `layers`."""
        if index is not None and name is not None:
            raise ValueError("Provide only a layer name or a layer index. Received: "
                             f"index={index}, name={name}.")
        layers = self.layers
        if index is not None:
            if not -len(layers) <= index < len(layers):
                raise ValueError(f"Was asked to retrieve layer at index {index} but model "
                                 f"only has {len(layers)} layers.")
            return layers[index]
        for layer in layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No such layer: {name}. Existing layers are: "
                         f"{[layer.name for layer in layers]}.")

    # --- reports and saving -----------------------------------------------------------------
    def summary(self, line_length: int | None = None, positions: Any = None,
                print_fn: Callable | None = None, expand_nested: bool = False,
                show_trainable: bool = False, layer_range: Any = None) -> None:
        """Print a table of the layers: name (type), output shape, parameter count; then
        the total, trainable and non-trainable parameter counts."""
        print_summary(self, line_length=line_length, print_fn=print_fn,
                      show_trainable=show_trainable)

    def save_weights(self, filepath: str, overwrite: bool = True) -> None:
        """Write the weights to a `.weights.npz` file (see keras/saving.py)."""
        from .saving import save_weights
        save_weights(self, filepath, overwrite=overwrite)

    def load_weights(self, filepath: str, skip_mismatch: bool = False) -> None:
        """Read weights written by `save_weights`, in `weights` order."""
        from .saving import load_weights
        load_weights(self, filepath, skip_mismatch=skip_mismatch)

    def save(self, filepath: str, overwrite: bool = True) -> None:
        """Write the architecture and weights to a `.keras` zip (see keras/saving.py)."""
        from .saving import save_model
        save_model(self, filepath, overwrite=overwrite)

    def to_json(self, **kwargs: Any) -> str:
        """The architecture as JSON (`keras.models.model_from_json` rebuilds it)."""
        import json
        return json.dumps({"class_name": type(self).__name__, "config": self.get_config()},
                          **kwargs)

    def get_config(self) -> dict[str, Any]:
        if self._graph is None:
            raise NotImplementedError(f"Model {self.name!r} is a subclassed model: its "
                                      "architecture is Python code, which tapec does not "
                                      "save; use save_weights/load_weights")
        from .saving import functional_config
        return functional_config(self)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Model:
        from .saving import functional_from_config
        return functional_from_config(config)


class Sequential(Model):
    """A linear stack of layers: each layer's output is the next layer's input.

    The model builds as soon as its input shape is known: from a first `keras.Input` or
    `InputLayer`, from `input_shape=` on the first layer, from `build(input_shape)`, or
    from its first call."""

    def __init__(self, layers: list | None = None, trainable: bool = True,
                 name: str | None = None) -> None:
        super().__init__(trainable=trainable, name=name)
        self._layers: list[Layer] = []
        self._input_batch_shape = None
        self._input_dtype = None
        self._built_nodes: list = []
        for layer in layers or []:
            self.add(layer, rebuild=False)
        self._maybe_rebuild()

    def add(self, layer: Any, rebuild: bool = True) -> None:
        """Append a layer (or a `keras.Input`, which declares the input shape)."""
        if isinstance(layer, KerasTensor) and layer.node is not None and \
                isinstance(layer.node.layer, InputLayer):
            layer = layer.node.layer
        if isinstance(layer, InputLayer):
            if self._layers or self._input_batch_shape is not None:
                raise ValueError("Sequential: an Input must be the model's first entry")
            self._input_batch_shape, self._input_dtype = layer.batch_shape, layer.dtype
        elif isinstance(layer, Layer):
            if any(layer is existing for existing in self._layers):
                raise ValueError(f"Sequential: layer {layer.name!r} is already in the model")
            if not self._layers and self._input_batch_shape is None and \
                    layer._input_shape_arg is not None:
                self._input_batch_shape = layer._input_shape_arg
            self._layers.append(layer)
        else:
            raise ValueError(  # noqa: TRY004 (the error Keras raises)
                f"Only instances of `keras.Layer` can be added to a Sequential "
                f"model. Received: {layer!r:.80} (of type {type(layer)})")
        if rebuild:
            self._maybe_rebuild()

    def pop(self, rebuild: bool = True) -> Layer:
        """Remove and return the last layer."""
        if not self._layers:
            raise TypeError("There are no layers in the model.")
        layer = self._layers.pop()
        self.built = False
        self._graph = None
        if rebuild:
            self._maybe_rebuild()
        return layer

    def _maybe_rebuild(self) -> None:
        self.built = False
        self._graph = None
        if self._input_batch_shape is not None and self._layers:
            self.build(self._input_batch_shape)

    def build(self, input_shape: Any = None) -> None:
        """Build every layer for inputs of `input_shape` (the batch dimension None)."""
        if input_shape is None:
            raise ValueError("Sequential.build: give the input shape")
        if not self._layers:
            raise ValueError(f"Sequential model {self.name!r} cannot be built because it "
                             "has no layers. Call `model.add(layer)`.")
        shape = tuple(input_shape)
        for layer, node in self._built_nodes:       # the calls of an earlier build
            layer._inbound_nodes.remove(node)
        self._built_nodes = []
        inputs = Input(batch_shape=shape, dtype=self._input_dtype or "float32")
        x = inputs
        for layer in self._layers:
            x = layer(x)
            self._built_nodes.append((layer, nest.flatten(x)[0].node))
        self._input_batch_shape = shape
        self._graph = FunctionalGraph(inputs, x)
        self.built = True

    def _maybe_build(self, inputs: Any) -> None:
        if self.built:
            return
        if self._input_dtype is None and hasattr(inputs, "dtype"):
            self._input_dtype = inputs.dtype.name
        self._build_with(tuple(inputs.shape) if hasattr(inputs, "shape") else None)

    def _build_with(self, input_shape: Any) -> None:
        self.build(input_shape)

    @property
    def input(self) -> Any:
        if self._graph is None:
            raise AttributeError(f"Sequential model {self.name!r} has no defined input "
                                 "until it is built")
        return self._graph.inputs

    def call(self, inputs: Any, training: Any = None, mask: Any = None) -> Any:
        x = inputs
        for layer in self._layers:
            x = layer(x)
        return x

    def _sublayers(self) -> list[Layer]:
        return list(self._layers)

    @property
    def layers(self) -> list[Layer]:
        return list(self._layers)

    def get_config(self) -> dict[str, Any]:
        from .saving import sequential_config
        return sequential_config(self)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Sequential:
        from .saving import sequential_from_config
        return sequential_from_config(config)


def _zeros_like_shapes(shape):
    """Zeros (float32) for a shape, or for each shape of a list or dict of them; None
    dimensions taken as 1."""
    if isinstance(shape, (tuple, list)) and all(d is None or isinstance(d, int)
                                                for d in shape):
        return convert_to_tensor(np.zeros(tuple(1 if d is None else d for d in shape),
                                          np.float32))
    if isinstance(shape, dict):
        return {k: _zeros_like_shapes(v) for k, v in shape.items()}
    return [_zeros_like_shapes(s) for s in shape]


def load_model(filepath: str, custom_objects: dict | None = None, compile: bool = True,
               safe_mode: bool = True) -> Model:
    """A model saved by `model.save(filepath)` (see keras/saving.py)."""
    from .saving import load_model as _load
    return _load(filepath, custom_objects=custom_objects)


def model_from_json(json_string: str, custom_objects: dict | None = None) -> Model:
    """The model (new weights) whose architecture `model.to_json()` wrote."""
    import json

    from .saving import deserialize_layer
    return deserialize_layer(json.loads(json_string), custom_objects)


def clone_model(model: Model) -> Model:
    """A new model with the same architecture and freshly initialized weights."""
    return type(model).from_config(model.get_config())
