"""Keras utilities (`tf.keras.utils`): to_categorical, set_random_seed, clear_session."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import random
from .data_adapter import pack_x_y_sample_weight, unpack_x_y_sample_weight
from .layers.base import clear_session

__all__ = ["to_categorical", "set_random_seed", "clear_session", "pack_x_y_sample_weight",
           "unpack_x_y_sample_weight"]


def to_categorical(x: Any, num_classes: int | None = None) -> np.ndarray:
    """Integer class labels as one-hot rows (a NumPy float array with one more axis;
    a trailing axis of size 1 is replaced, as Keras does)."""
    labels = np.asarray(x.numpy() if hasattr(x, "numpy") else x)
    if labels.dtype.kind not in "iu" and not (labels.dtype.kind == "f" and
                                              np.all(labels == np.round(labels))):
        raise ValueError(f"to_categorical: expected integer class labels, got dtype "
                         f"{labels.dtype.name}")
    labels = labels.astype(np.int64)
    if labels.ndim > 1 and labels.shape[-1] == 1:
        labels = labels[..., 0]
    if num_classes is None:
        num_classes = int(labels.max()) + 1 if labels.size else 0
    if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
        raise ValueError(f"to_categorical: labels must lie in [0, {num_classes}), got "
                         f"values in [{labels.min()}, {labels.max()}]")
    return np.eye(num_classes, dtype=np.float64)[labels]


def set_random_seed(seed: int) -> None:
    """Seed tapec.random (and so the layers' initializers and dropout) and NumPy."""
    random.set_seed(seed)
    np.random.seed(seed)
