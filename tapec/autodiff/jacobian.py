"""The one jacobian seeding: a reverse pass seeded once, then vectorized.

A jacobian is the gradient seeded with every one-hot output cotangent. The reverse
pass is built once with a seed placeholder of the target's shape (`seed_node`); then
`jacobian_rows` pushes a batch of seeds through it (batching.vectorize):

* `jacobian`: the identity, `diag_seed(ones)`, so row i is d target[i] / d source;
  the result has shape target.shape + source.shape.
* `batch_jacobian` (target [b, y...], source [b, x...]): row j seeds element j of every
  example at once. That is valid because target[i] depends only on source[i], and it
  never forms the [b, y..., b, x...] jacobian; the result is [b, y..., x...].
"""
from __future__ import annotations

import numpy as np

from ..ir.nodes import Builder
from ..ops.seeds import diag_seed
from ..ops.shape import PLACEHOLDER, broadcast_to, fill, reshape, transpose
from .batching import vectorize


def seed_node(shape, dtype):
    """The symbolic seed a vectorized reverse pass starts from."""
    return Builder.current().node(PLACEHOLDER, (), {"seed": "vectorized", "shape": shape,
                                                    "dtype": np.dtype(dtype).str},
                                  shape, np.dtype(dtype))


def jacobian_rows(cotangents, seed, target_shape, dtype, sources, batch=False,
                  unconnected_zeros=False) -> list:
    """The jacobian (or batch jacobian) of each source, given as (shape, dtype), from
    the cotangents of one symbolic `seed`; None for an unconnected source, or zeros of
    the source's dtype if `unconnected_zeros`."""
    if batch:
        examples, inner = target_shape[0], target_shape[1:]
        size = int(np.prod(inner, dtype=np.int64))
        identity = diag_seed(fill(inner, 1, dtype))
        batched_seed = broadcast_to(reshape(identity, (size, 1) + inner),
                                    (size, examples) + inner)
    else:
        size = int(np.prod(target_shape, dtype=np.int64))
        batched_seed = diag_seed(fill(target_shape, 1, dtype))       # the identity
    rows = vectorize(cotangents, seed, batched_seed, size)
    results = []
    for row, (shape, source_dtype) in zip(rows, sources):
        shape = tuple(shape)
        result_shape = target_shape + (shape[1:] if batch else shape)
        if row is None:
            results.append(fill(result_shape, 0, source_dtype) if unconnected_zeros else None)
        elif batch:
            per_example = transpose(row, (1, 0) + tuple(range(2, len(row._shape))))
            results.append(reshape(per_example, result_shape))
        else:
            results.append(reshape(row, result_shape))
    return results


