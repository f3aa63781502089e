"""TensorFlow's pairing of `output_gradients` with a gradient's targets."""
from __future__ import annotations

import numpy as np

from .. import nest

ONES = object()     # an output_gradients entry TensorFlow fills in: ones


def seed_entries(target, flat_targets, output_gradients) -> list:
    """One output_gradients entry per flat target, as TensorFlow pairs them: the leaves
    of `output_gradients` in order; missing trailing entries are ones (`ONES`).

    TensorFlow flattens a Python list given as one target's seed into scalars (a
    silently wrong seed); here, when the leaf count differs from the target count and
    `output_gradients` has the targets' structure, each target takes its part whole."""
    n = len(flat_targets)
    flat = nest.flatten(output_gradients)
    if len(flat) != n:
        whole = _split_like(target, output_gradients)
        if not nest.is_nested(target) and isinstance(output_gradients, (list, tuple)):
            if len(output_gradients) == 1:
                whole = [output_gradients[0]]       # [dy] for a single target
            elif not _broadcasts(output_gradients, flat_targets[0]._shape):
                whole = None                        # several seeds, not one list value
        if whole is not None:
            flat = whole
        elif len(flat) < n:
            flat = flat + [ONES] * (n - len(flat))
        else:
            raise ValueError(f"gradient: got {len(flat)} output_gradients for {n} "
                             "target(s); pass at most one per target")
    for i, entry in enumerate(flat):
        if entry is None:
            raise ValueError(f"gradient: output_gradients entry {i} is None; pass a tensor "
                             "for every target (tf.ones_like(target) for the default), or "
                             "leave trailing entries out")
    return flat


def _broadcasts(value, shape) -> bool:
    """Whether Python data `value` (nested lists of numbers) broadcasts to `shape`."""
    try:
        return np.broadcast_shapes(np.shape(value), tuple(shape)) == tuple(shape)
    except (ValueError, TypeError):
        return False


def _split_like(structure, value):
    """`value` cut along `structure`'s nesting (one part per leaf), or None."""
    if not nest.is_nested(structure):
        return [value]
    if isinstance(structure, dict):
        if not isinstance(value, dict) or set(value) != set(structure):
            return None
        parts = [_split_like(structure[k], value[k]) for k in sorted(structure)]
    elif isinstance(value, (list, tuple)) and len(value) == len(structure):
        parts = [_split_like(s, v) for s, v in zip(structure, value)]
    else:
        return None
    if any(p is None for p in parts):
        return None
    return [leaf for part in parts for leaf in part]
