"""Keras masks: the boolean (batch, steps) tensor that says which timesteps count, carried
beside a layer's output (Keras 3's `backend.get_keras_mask` / `set_keras_mask`).

Keras stores a mask as an attribute of the tensor. tapec's tensors have fixed slots, so
the masks live in a table keyed by the tensor's identity that forgets an entry when its
tensor is collected; a tensor made by an op never has a mask until a layer gives it one.
"""
from __future__ import annotations

import threading
import weakref

from .. import nest

_MASKS: dict = {}          # id(tensor) -> (weak reference to the tensor, mask)
_LOCK = threading.Lock()


def get_keras_mask(x):
    """The mask attached to `x` by the layer that made it, or None."""
    entry = _MASKS.get(id(x))
    if entry is None or entry[0]() is not x:
        return None
    return entry[1]


def set_keras_mask(x, mask) -> None:
    """Attach `mask` to `x` (None removes it)."""
    key = id(x)
    with _LOCK:
        if mask is None:
            _MASKS.pop(key, None)
            return
        try:
            ref = weakref.ref(x, lambda _, key=key: _MASKS.pop(key, None))
        except TypeError:                    # a Python number or an array: no mask
            return
        _MASKS[key] = (ref, mask)


def masks_of(inputs):
    """The masks of a structure of tensors, as the same structure (None where none)."""
    return nest.map_structure(get_keras_mask, inputs)


def any_mask(masks) -> bool:
    return any(m is not None for m in nest.flatten(masks))
