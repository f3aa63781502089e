"""The arguments of `GradientTape.gradient`, `jacobian` and `batch_jacobian`: checked,
described, and the results for unconnected sources (TensorFlow's rules)."""
from __future__ import annotations

import enum

import numpy as np

from .. import nest
from ..tensor import Tensor, Variable


class UnconnectedGradients(enum.Enum):
    """What `gradient` returns for a source the target does not depend on."""
    NONE = "none"
    ZERO = "zero"


def unconnected(value) -> UnconnectedGradients:
    if value is UnconnectedGradients.NONE:
        return value
    try:
        return UnconnectedGradients(value.value if isinstance(value, UnconnectedGradients)
                                    else value)
    except ValueError:
        raise ValueError(f"Unknown value for unconnected_gradients: {value!r}; expected "
                         "'none' or 'zero' (tapec.UnconnectedGradients.NONE / ZERO)") from None


def check_targets(target, what):
    """The flat targets, after checking each is a Tensor or Variable (TypeError)."""
    flat = nest.flatten(target)
    for t in flat:
        if not isinstance(t, (Tensor, Variable)):
            raise TypeError(f"{what}: targets must be Tensors or Variables, got "
                            f"{type(t).__name__} {t!r:.80}")
    return flat


def describe_sources(flat_sources, what="gradient"):
    ids, dtypes, shapes = [], [], []
    for s in flat_sources:
        if isinstance(s, Tensor):
            ids.append(s._id)
        elif isinstance(s, Variable):
            ids.append(s._handle_id)
        else:
            raise ValueError(f"{what}: sources must be Tensors or Variables, got "
                             f"{type(s).__name__} {s!r:.80}")
        dtypes.append(s._dtype)
        shapes.append(tuple(s._shape))
    return ids, dtypes, shapes


def fill_unconnected(results, flat_sources, mode, shapes=None):
    if mode is not UnconnectedGradients.ZERO:
        return results
    shapes = shapes or [tuple(s._shape) for s in flat_sources]
    return [Tensor._eager(zeros(shape, s._dtype)) if r is None else r
            for r, s, shape in zip(results, flat_sources, shapes)]


def one_hot(target, i):
    seed = np.zeros(int(np.prod(target._shape, dtype=np.int64)), dtype=target._dtype)
    seed[i] = 1
    return Tensor._eager(frozen(seed.reshape(target._shape)))


def check_parallel_iterations(value):
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                              or value < 1):
        raise ValueError(f"parallel_iterations must be a positive int or None, got {value!r}")


def zeros(shape, dtype):
    return frozen(np.zeros(shape, dtype=dtype))


def frozen(array):
    array.flags.writeable = False
    return array
