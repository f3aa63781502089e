"""Vectorized jacobians: push a leading batch axis through a symbolic gradient graph.

A jacobian is the gradient seeded with every one-hot output cotangent. Rather than
run the reverse pass once per output element, the reverse pass is built once with a
seed placeholder of the target's shape, and `vectorize` then rebuilds every node that
depends on the seed with a leading batch axis, using each op's batching rule (vmap on
the IR). Seeding the batched graph with an identity gives the whole jacobian in one
compiled call. Nodes that do not depend on the seed (forward values) stay unbatched.
"""
from __future__ import annotations

from ..ir.nodes import origin_setter, topological_order
from ..ops.shape import broadcast_to
from ..tensor import Tensor


class VectorizationError(ValueError):
    """An op on the gradient path has no batching rule."""


def vectorize(outputs, seed_node, batched_seed: Tensor, size: int) -> list:
    """`outputs` (symbolic tensors or None) recomputed for a batch of seeds.

    `batched_seed` has shape (size, *seed_node.shape). Returns one tensor of shape
    (size, *output.shape) per output, or None where the output was None.
    """
    nodes = [o._node for o in outputs if o is not None]
    batched = {seed_node: batched_seed}
    builder = origin_setter()
    outer = builder.origin
    for node in topological_order(nodes, is_leaf=lambda n: n is seed_node):
        if node is seed_node or not any(i in batched for i in node.inputs):
            continue
        if node.op.batch is None:
            raise VectorizationError(
                f"op {node.op.name!r} has no batching rule, so the jacobian cannot be "
                "vectorized. Vectorization can be disabled by setting "
                "experimental_use_pfor to False.")
        flags = [i in batched for i in node.inputs]
        args = [batched[i] if flag else Tensor._symbolic(i)
                for i, flag in zip(node.inputs, flags)]
        builder.origin = node.origin        # the batched node computes what node did
        result = node.op.batch(args, flags, size, **node.attrs)
        expected = (size,) + node.shape
        if result._shape != expected:
            raise AssertionError(f"batching rule of {node.op.name} gave shape "
                                 f"{result._shape}, expected {expected}")
        batched[node] = result
    builder.origin = outer
    results = []
    for o in outputs:
        if o is None:
            results.append(None)
        elif o._node in batched:
            results.append(batched[o._node])
        else:      # independent of the seed (a constant gradient): the same for every row
            results.append(broadcast_to(o, (size,) + o._shape))
    return results
