"""Keras optimizers (`tf.keras.optimizers`), with Keras 3's update formulas and defaults:
SGD, Adam, AdamW, RMSprop, Adagrad, the `Optimizer` base, `schedules`, and `get` /
`serialize` / `deserialize`. docs/keras_optimizers.md states the formulas."""
from __future__ import annotations

from typing import Any

from . import schedules
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .base import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "schedules", "get",
           "serialize", "deserialize"]

_OPTIMIZERS = {cls.__name__.lower(): cls for cls in (SGD, Adam, AdamW, RMSprop, Adagrad)}


def serialize(optimizer: Optimizer) -> dict:
    """Keras's serialized form: {"module", "class_name", "config", "registered_name"}."""
    return {"module": "keras.optimizers", "class_name": type(optimizer).__name__,
            "config": optimizer.get_config(), "registered_name": None}


def deserialize(config: dict, custom_objects: dict | None = None) -> Optimizer:
    """An optimizer from `serialize()`'s dictionary (`class_name`, any case, and
    `config`)."""
    known = {**_OPTIMIZERS, **{k.lower(): v for k, v in (custom_objects or {}).items()}}
    name = config.get("class_name") if isinstance(config, dict) else None
    if not isinstance(name, str) or name.lower() not in known:
        raise ValueError(f"Could not interpret optimizer identifier: {config!r:.200}; known "
                         f"optimizers: {sorted(_OPTIMIZERS)}")
    return known[name.lower()].from_config(config.get("config", {}))


def get(identifier: Any) -> Optimizer | None:
    """An optimizer from a name ("adam", "SGD", any case: default arguments), a
    serialized dictionary, or an Optimizer (returned as is); None gives None."""
    if identifier is None or isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str) and identifier.lower() in _OPTIMIZERS:
        return _OPTIMIZERS[identifier.lower()]()
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r:.100}")
