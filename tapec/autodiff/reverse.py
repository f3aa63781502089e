"""Symbolic reverse-mode accumulation over IR nodes.

Walks the nodes on the path from sources to targets in reverse topological order and
applies each op's VJP rule to *symbolic* tensors, so the result is a graph of the
same public ops as the forward pass (which is what makes higher-order derivatives,
code generation and LaTeX work with no special cases). No number is computed here.
"""
from __future__ import annotations

from ..ir.nodes import origin_setter
from ..ops import elementwise as ew
from ..ops.shape import sum_to
from ..tensor import Tensor


def build_adjoints(order, on_path, seeds, sources):
    """Cotangents of `sources` given `seeds` ({target node: seed tensor}).

    `order` lists the on-path nodes inputs-first; `on_path` is the same set for fast
    membership. Returns one symbolic Tensor (or None where nothing flows) per source.
    """
    adjoint = {}
    tensors = {}            # node -> its symbolic tensor: one per node, however often read

    def tensor(node):
        t = tensors.get(node)
        if t is None:
            t = tensors[node] = Tensor._symbolic(node)
        return t

    def accumulate(node, contribution):
        if contribution._shape != node.shape:
            contribution = sum_to(contribution, node.shape)   # the one place broadcasting is undone
        previous = adjoint.get(node)
        adjoint[node] = contribution if previous is None else ew.add(previous, contribution)

    for target, seed in seeds:
        accumulate(target, seed)
    builder = origin_setter()
    outer = builder.origin
    for node in reversed(order):
        g = adjoint.get(node)
        if g is None or not node.inputs or node.op.vjp is None:
            continue
        _name_cotangent(g._node, node, on_path)
        # What the rule builds is the derivative of this op: printed `# from: <op> at ...`
        builder.origin = node.origin or (node.op.name, None)
        contributions = node.op.vjp(g, tensor(node), *map(tensor, node.inputs), **node.attrs)
        for parent, contribution in zip(node.inputs, contributions):
            if contribution is None or parent not in on_path:
                continue
            accumulate(parent, contribution)
    builder.origin = outer
    return [adjoint.get(source) for source in sources]


def _name_cotangent(cotangent, node, on_path):
    """Label `cotangent`, complete, as the cotangent of `node` (printed `b_<node's name>`)
    unless it is a value of its own: a forward value, a leaf, or one already named."""
    if cotangent.label is None and cotangent.inputs and cotangent not in on_path:
        cotangent.label = node


def gradient_nodes(target, sources, seed):
    """Cotangents of IR `sources` for IR `target` seeded with `seed` (a symbolic tensor).

    For graphs that are already IR (a traced function, or a gradient being
    differentiated again): the nodes on a path are those upstream of the target that
    depend on a source."""
    from ..ir.nodes import topological_order
    depends = set(sources)
    order = []
    for node in topological_order([target]):
        if node in depends or any(i in depends for i in node.inputs):
            depends.add(node)
            order.append(node)
    return build_adjoints(order, set(order), [(target, seed)], list(sources))
