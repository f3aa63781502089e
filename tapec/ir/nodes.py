"""The symbolic IR: hash-consed nodes built while differentiating.

A `Node` is an op applied to input nodes with static attributes, shape and dtype.
A `Builder` owns a hash-consing table, so building the same op on the same inputs
with the same attributes returns the existing node: common subexpressions are
shared by construction. Symbolic tensors wrap nodes; while a builder is active
(`with builder:`), public ops applied to symbolic tensors add nodes instead of
computing values.
"""
from __future__ import annotations

from .. import context


class Node:
    """One operation in a symbolic graph. Identity is the object; equality is `is`."""

    __slots__ = ("op", "inputs", "attrs", "shape", "dtype", "origin", "label", "__weakref__")

    def __init__(self, op, inputs, attrs, shape, dtype, origin=None):
        self.op = op
        self.inputs = inputs
        self.attrs = attrs
        self.shape = shape
        self.dtype = dtype
        # For readers of generated code only, never part of a node's identity or of a
        # cache key: `origin` is (op name, call site or None) of the recorded op this
        # node computes or differentiates; `label` is a name for it (the user's
        # variable), or the node whose cotangent it is (printed `b_<that name>`).
        self.origin = origin
        self.label = None

    def __repr__(self):
        return f"Node({self.op.name}, shape={self.shape}, dtype={self.dtype.name})"


def attrs_key(attrs: dict) -> tuple:
    """A hashable, order-independent form of an op's attributes."""
    return tuple(sorted(attrs.items()))


class Builder:
    """Creates nodes with hash-consing; the context in which ops build symbolically."""

    def __init__(self):
        self._table = {}
        self._previous = []
        self.op_names = set()       # of every node made: rules needing others cannot fire
        self.origin = None          # the `origin` of nodes made from now on

    def node(self, op, inputs: tuple, attrs: dict, shape: tuple, dtype) -> Node:
        if op.stateful:
            self.op_names.add(op.name)
            return Node(op, inputs, attrs, shape, dtype, self.origin)
        # Nodes hash and compare by identity, so the inputs themselves key the table.
        key = (op.name, inputs, attrs_key(attrs) if attrs else ())
        found = self._table.get(key)
        if found is None:
            found = self._table[key] = Node(op, inputs, attrs, shape, dtype, self.origin)
            self.op_names.add(key[0])
        return found

    @staticmethod
    def current() -> "Builder":
        return context.current_builder()

    def __enter__(self):
        self._previous.append(context.set_builder(self))
        return self

    def __exit__(self, *exc):
        context.set_builder(self._previous.pop())
        return False


class _Outside:
    """Where no builder is active: origins set on it are dropped."""
    origin = None


OUTSIDE = _Outside()


def origin_setter():
    """The active builder (whose `origin` tags the nodes it makes), or OUTSIDE."""
    return context.current_builder() or OUTSIDE


def topological_order(outputs, is_leaf=None, leaves=None) -> list:
    """Nodes reachable from `outputs`, inputs before users (a depth-first post-order,
    inputs left to right); stops below leaves: nodes in the container `leaves`, or
    for which `is_leaf(node)` is true. Nodes compare by identity, so they are their
    own set members."""
    order, seen = [], set()
    append, add = order.append, seen.add
    no_inputs = iter(())
    for root in outputs:
        if root is None or root in seen:
            continue
        add(root)
        stack = [(root, _inputs_of(root, is_leaf, leaves, no_inputs))]
        while stack:
            node, inputs = stack[-1]
            for parent in inputs:
                if parent not in seen:
                    add(parent)
                    stack.append((parent, _inputs_of(parent, is_leaf, leaves, no_inputs)))
                    break
            else:
                stack.pop()
                append(node)
    return order


def _inputs_of(node, is_leaf, leaves, no_inputs):
    if (leaves is not None and node in leaves) or (is_leaf is not None and is_leaf(node)):
        return no_inputs
    return iter(node.inputs)


def structure_key(roots, feeds) -> tuple:
    """The graph below `roots` as plain data, for a compile cache: per node, in
    topological order, its op, attributes, shape, dtype and input positions, and for a
    fed leaf its feed key instead of its attributes (a placeholder's slot numbers the
    tensor it stood for, which differs from one trace of a program to the next)."""
    order = topological_order(roots)
    position = {node: k for k, node in enumerate(order)}      # nodes hash by identity
    rows = []
    append = rows.append
    dtype_names = {}           # `dtype.str` makes a new string at every read
    for node in order:
        fed = feeds.get(node)
        dtype = node.dtype
        name = dtype_names.get(dtype)
        if name is None:
            name = dtype_names[dtype] = dtype.str
        append((node.op.name, ("fed", fed) if fed is not None else
                attrs_key(node.attrs) if node.attrs else (),
                node.shape, name, tuple([position[i] for i in node.inputs])))
    return tuple(rows), tuple(-1 if r is None else position[r] for r in roots)
