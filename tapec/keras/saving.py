"""Saving and loading Keras models: weights as `.weights.npz`, whole models as `.keras`.

Formats (tapec's own; NumPy only, no h5py):

- `model.save_weights("m.weights.npz")` writes one NumPy `.npz` archive holding the
  weights in `model.weights` order (arrays "weight_0", "weight_1", ...) and their
  names; `load_weights` assigns them back in the same order, checking count and shapes.
  Keras 3 writes `.weights.h5` (HDF5); tapec refuses that suffix rather than write a
  file Keras could not read.
- `model.save("m.keras")` writes a zip (as Keras 3's `.keras`) holding `config.json`
  (the architecture: every layer's `get_config()` and, for a functional model, the
  layer calls in order), `metadata.json` and `model.weights.npz`.
  `keras.models.load_model("m.keras")` rebuilds the model from the config and loads
  the weights. It serves Sequential and functional models made of layers that have a
  config (the built-in layers, and custom layers passed in `custom_objects`);
  subclassed models and Lambda layers hold Python code and are refused with an error
  (use save_weights). Files written by Keras itself (with `model.weights.h5`) are
  refused too.
"""
from __future__ import annotations

import io
import json
import os
import zipfile
from typing import Any

import numpy as np

from .. import nest
from .._version import __version__
from .keras_tensor import KerasTensor

__all__ = ["save_weights", "load_weights", "save_model", "load_model"]

_WEIGHTS_SUFFIX = ".weights.npz"


def _check_writable(filepath: str, overwrite: bool) -> None:
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError(f"{filepath} exists and overwrite=False")


def _weights_archive(model) -> bytes:
    weights = model.weights
    buffer = io.BytesIO()
    arrays = {f"weight_{k}": np.asarray(w.numpy()) for k, w in enumerate(weights)}
    names = np.array(json.dumps([w.name for w in weights]))
    np.savez(buffer, __names__=names, **arrays)
    return buffer.getvalue()


def _assign_weights(model, archive, source: str, skip_mismatch: bool = False) -> None:
    names = json.loads(str(archive["__names__"]))
    weights = model.weights
    if len(names) != len(weights):
        raise ValueError(f"load_weights: {source} holds {len(names)} weights but model "
                         f"{model.name!r} has {len(weights)} (is it built, with the same "
                         "layers?)")
    for k, variable in enumerate(weights):
        value = archive[f"weight_{k}"]
        if tuple(value.shape) != tuple(variable.shape):
            if skip_mismatch:
                continue
            raise ValueError(f"load_weights: weight {k} ({names[k]!r} in {source}) has shape "
                             f"{value.shape}, but the model's {variable.name!r} has shape "
                             f"{tuple(variable.shape)}")
        variable.assign(value.astype(variable.dtype.as_numpy_dtype))


def save_weights(model, filepath: str, overwrite: bool = True) -> None:
    """Write the model's weights to `filepath`, which must end in `.weights.npz`."""
    filepath = os.fspath(filepath)
    if not filepath.endswith(_WEIGHTS_SUFFIX):
        raise ValueError(f"save_weights: the filename must end in `{_WEIGHTS_SUFFIX}` "
                         f"(tapec writes NumPy archives; Keras' `.weights.h5` HDF5 format is "
                         f"not supported). Received: filepath={filepath}")
    _check_writable(filepath, overwrite)
    with open(filepath, "wb") as f:
        f.write(_weights_archive(model))


def load_weights(model, filepath: str, skip_mismatch: bool = False) -> None:
    """Assign the weights `save_weights` wrote (same architecture, same order); with
    `skip_mismatch`, weights whose shapes differ are left as they are."""
    filepath = os.fspath(filepath)
    if filepath.endswith(".keras"):
        with zipfile.ZipFile(filepath) as archive:
            data = archive.read("model.weights.npz")
        with np.load(io.BytesIO(data)) as weights:
            _assign_weights(model, weights, filepath, skip_mismatch)
        return
    if not filepath.endswith(_WEIGHTS_SUFFIX):
        raise ValueError(f"load_weights: expected a `{_WEIGHTS_SUFFIX}` or `.keras` file "
                         f"written by tapec, got {filepath}")
    with np.load(filepath) as weights:
        _assign_weights(model, weights, filepath, skip_mismatch)


# --- architectures -------------------------------------------------------------------------
def serialize_layer(layer) -> dict[str, Any]:
    return {"class_name": type(layer).__name__, "config": layer.get_config()}


def _layer_classes(custom_objects: dict | None) -> dict[str, type]:
    from . import layers, models
    from .layers.base import Layer
    found = {name: obj for name, obj in vars(layers).items()
             if isinstance(obj, type) and issubclass(obj, Layer)}
    found.update(Sequential=models.Sequential, Model=models.Model,
                 Functional=models.Model)
    found.update(custom_objects or {})
    return found


def deserialize_layer(config: dict[str, Any], custom_objects: dict | None = None):
    classes = _layer_classes(custom_objects)
    cls = classes.get(config["class_name"])
    if cls is None:
        raise ValueError(f"Unknown layer: {config['class_name']!r}. A custom layer must be "
                         "passed in `custom_objects={'Name': Class}`.")
    if cls.__name__ in ("Sequential", "Model", "Functional"):
        if cls.__name__ == "Sequential":
            return sequential_from_config(config["config"], custom_objects)
        return functional_from_config(config["config"], custom_objects)
    return cls.from_config(dict(config["config"]))


def sequential_config(model) -> dict[str, Any]:
    return {"name": model.name, "trainable": model.trainable,
            "layers": [serialize_layer(layer) for layer in model.layers],
            "build_input_shape": None if model._input_batch_shape is None
            else list(model._input_batch_shape),
            "input_dtype": model._input_dtype}


def sequential_from_config(config: dict[str, Any], custom_objects: dict | None = None):
    from .layers.core import Input
    from .models import Sequential
    model = Sequential(name=config["name"], trainable=config.get("trainable", True))
    shape = config.get("build_input_shape")
    if shape is not None:
        model.add(Input(batch_shape=tuple(shape), dtype=config.get("input_dtype")),
                  rebuild=False)
    for layer_config in config["layers"]:
        model.add(deserialize_layer(layer_config, custom_objects), rebuild=False)
    model._maybe_rebuild()
    return model


def _node_refs(graph) -> dict[int, list]:
    """KerasTensor id -> [layer name, the layer's call number in this graph, output]."""
    refs, calls = {}, {}
    for node in graph.nodes:
        k = calls.get(id(node.layer), 0)
        calls[id(node.layer)] = k + 1
        for i, tensor in enumerate(node.output_tensors()):
            refs[id(tensor)] = [node.layer.name, k, i]
    return refs


def _encode(structure, refs):
    if isinstance(structure, KerasTensor):
        return {"__keras_tensor__": refs[id(structure)]}
    if isinstance(structure, dict):
        return {"__dict__": {str(k): _encode(v, refs) for k, v in structure.items()}}
    if isinstance(structure, (list, tuple)):
        return {"__list__": [_encode(v, refs) for v in structure],
                "tuple": isinstance(structure, tuple)}
    if structure is None or isinstance(structure, (bool, int, float, str)):
        return structure
    raise ValueError(f"model.save: a layer call argument of type {type(structure).__name__} "
                     "cannot be saved")


def _decode(encoded, tensors):
    if isinstance(encoded, dict) and "__keras_tensor__" in encoded:
        return tensors[tuple(encoded["__keras_tensor__"])]
    if isinstance(encoded, dict) and "__dict__" in encoded:
        return {k: _decode(v, tensors) for k, v in encoded["__dict__"].items()}
    if isinstance(encoded, dict) and "__list__" in encoded:
        items = [_decode(v, tensors) for v in encoded["__list__"]]
        return tuple(items) if encoded.get("tuple") else items
    return encoded


def functional_config(model) -> dict[str, Any]:
    graph = model._graph
    refs = _node_refs(graph)
    names = [layer.name for layer in graph.layers]
    if len(set(names)) != len(names):
        raise ValueError(f"model.save: model {model.name!r} has two layers with one name; "
                         f"names must be unique to save it ({names})")
    nodes = [{"layer": node.layer.name, "inputs": _encode(node.inputs, refs),
              "args": _encode(list(node.args), refs), "kwargs": _encode(node.kwargs, refs)}
             for node in graph.nodes if node.inputs is not None]
    return {"name": model.name, "trainable": model.trainable,
            "layers": [serialize_layer(layer) for layer in graph.layers],
            "nodes": nodes, "inputs": _encode(graph.inputs, refs),
            "outputs": _encode(graph.outputs, refs)}


def functional_from_config(config: dict[str, Any], custom_objects: dict | None = None):
    from .layers.core import InputLayer
    from .models import Model
    layers = {c["config"]["name"]: deserialize_layer(c, custom_objects)
              for c in config["layers"]}
    tensors, calls = {}, {}
    for name, layer in layers.items():
        if isinstance(layer, InputLayer):
            tensors[(name, 0, 0)] = layer.output
            calls[name] = 1
    for node in config["nodes"]:
        layer = layers[node["layer"]]
        inputs = _decode(node["inputs"], tensors)
        args, kwargs = _decode(node["args"], tensors), _decode(node["kwargs"], tensors)
        outputs = layer(inputs, *args, **kwargs)
        k = calls.get(node["layer"], 0)
        calls[node["layer"]] = k + 1
        for i, tensor in enumerate(nest.flatten(outputs)):
            tensors[(node["layer"], k, i)] = tensor
    return Model(_decode(config["inputs"], tensors), _decode(config["outputs"], tensors),
                 name=config["name"], trainable=config.get("trainable", True))


# --- whole models --------------------------------------------------------------------------
def save_model(model, filepath: str, overwrite: bool = True) -> None:
    """Write `model` (architecture and weights) to a `.keras` zip."""
    filepath = os.fspath(filepath)
    if not filepath.endswith(".keras"):
        raise ValueError(f"model.save: tapec saves whole models as `.keras` zips (the "
                         f"filename must end in `.keras`; for weights alone use "
                         f"save_weights with `{_WEIGHTS_SUFFIX}`). Received: "
                         f"filepath={filepath}")
    _check_writable(filepath, overwrite)
    config = json.dumps({"class_name": type(model).__name__, "config": model.get_config()})
    metadata = json.dumps({"tapec_version": __version__, "format": "tapec-keras-1"})
    with zipfile.ZipFile(filepath, "w") as archive:
        archive.writestr("config.json", config)
        archive.writestr("metadata.json", metadata)
        archive.writestr("model.weights.npz", _weights_archive(model))


def load_model(filepath: str, custom_objects: dict | None = None, compile: bool = True,
               safe_mode: bool = True):
    """The model `save_model` wrote to `filepath` (`compile` and `safe_mode` are accepted
    for Keras' signature: tapec saves no training configuration, and never Python code)."""
    filepath = os.fspath(filepath)
    if not filepath.endswith(".keras"):
        raise ValueError(f"load_model: tapec reads the `.keras` zips it writes with "
                         f"model.save; got {filepath}")
    with zipfile.ZipFile(filepath) as archive:
        names = archive.namelist()
        if "model.weights.npz" not in names:
            raise ValueError(f"load_model: {filepath} was not written by tapec (it holds "
                             f"{names}; Keras' own HDF5 weights are not supported)")
        config = json.loads(archive.read("config.json"))
        weights = archive.read("model.weights.npz")
    model = deserialize_layer(config, custom_objects)
    with np.load(io.BytesIO(weights)) as archive:
        _assign_weights(model, archive, filepath)
    return model
