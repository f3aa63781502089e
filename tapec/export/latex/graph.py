"""The graph to print: the engine's IR with its placeholder leaves resolved through the tape.

A Variable read becomes the Variable, a value the tape computed becomes the recorded
expression that computed it (so no forward value is an unexplained symbol), and an input
the tape never saw computed is recognized by provenance: its array is a named value's
array, or a transposing view of it (inside a nested gradient, the transpose of an
unwatched constant is computed unrecorded, and NumPy's transpose is such a view), or
by the ops the tape saw compute it from values it does not watch (`ir.provenance`: `1 -
y` for an unwatched `y`). An unnamed input holding one number in every element (the seed
of an inner gradient, a broadcast constant) is structure, not data: it prints as that
number, a `fill`; one that is an identity matrix prints as I.
Leaves of the result are `placeholder` nodes whose `leaf` attribute is a tensor id.
"""
from __future__ import annotations

import numpy as np

from ... import engine
from ...ir.lower import is_structure, lower
from ...ir import provenance
from ...ir.nodes import Node, topological_order
from ...ops.registry import literal_record
from ...ops.shape import CONSTANT, EYE, FILL, PLACEHOLDER, READ_VARIABLE, TRANSPOSE
from .names import key_of


MAX_PROVENANCE_DEPTH = 64     # ops followed back through an unrecorded computation


def leaf_node(key, shape, dtype):
    """A placeholder leaf standing for tensor `key`."""
    return Node(PLACEHOLDER, (), {"leaf": key}, tuple(shape), dtype)


class _Lookup:
    """A recording read by `lower` where a tensor may be missing (None: a leaf)."""

    def __init__(self, records):
        self.records = records

    def __getitem__(self, key):
        return self.records.get(key)


class PrintableGraph:
    """Printable copies of IR nodes, built against one tape.

    `leaves` maps the IR's placeholder nodes to tensor ids (from the engine); `user` holds
    the keys the user named; `known` maps keys of named tensors and of the tape's
    Variables to their arrays, against which unexplained inputs are matched by provenance.
    """

    def __init__(self, tape, leaves, user, known):
        self.records, self.leaves, self.user = tape.recorded.graph, leaves, user
        self.variables, self.tensors, self.known = tape.recorded.variables, tape.recorded.tensors, known
        self.unrecorded = tape.recorded.unrecorded
        self._nodes, self._ids, self._leaf, self._provenance = {}, {}, {}, {}

    def node(self, root):
        """The printable copy of IR node `root` (built inputs first, without recursion:
        graphs can be deeper than Python's stack)."""
        for n in topological_order([root], is_leaf=lambda n: id(n) in self._nodes):
            if id(n) in self._nodes:
                continue
            if n.op is PLACEHOLDER:
                key = self.leaves.get(n)
                found = self.leaf(("anonymous", id(n)), n.shape, n.dtype) if key is None \
                    else self.from_id(key)
            else:
                found = Node(n.op, tuple(self._nodes[id(i)][1] for i in n.inputs), n.attrs,
                             n.shape, n.dtype)
            self._nodes[id(n)] = (n, found)      # keeps n alive, so its id stays unique
        return self._nodes[id(root)][1]

    def from_id(self, key):
        """The printable node for tensor `key`, expanded through the recording."""
        pending, stack = set(), [key]
        while stack:                         # what must be built, without recursion
            k = stack.pop()
            if k in pending or k in self._ids:
                continue
            pending.add(k)
            r = self.records.get(k)
            if self._expanded(k, r):
                stack.extend(r.inputs)
        # Tensor ids grow in creation order, so sorted ids are inputs first.
        lower(_Lookup(self.records), sorted(pending), Node, self._leaf_for, nodes=self._ids)
        return self._ids[key]

    def _expanded(self, key, r):
        return r is not None and bool(r.inputs) and r.op is not READ_VARIABLE and \
            key not in self.user and key not in self.variables

    def _leaf_for(self, key, r):
        """The leaf printed for tensor `key`, or None when it prints as what computed it."""
        if r is None or key in self.user or key in self.variables:
            shape, dtype = (r.shape, r.dtype) if r is not None else ((), np.dtype("f8"))
            return self.leaf(key, shape, dtype)
        if r.op is READ_VARIABLE:
            handle = r.inputs[0]
            if handle in self.variables or handle in self.user:
                return self.leaf(handle, r.shape, r.dtype)
            return self.leaf(key, r.shape, r.dtype)
        if r.inputs or is_structure(r):
            return None
        if r.attrs.get("kind") != "input":          # watched: a source, by its name
            return self.leaf(key, r.shape, r.dtype)
        return self._unexplained(key, self.tensors.get(key), r.shape, r.dtype)[0]

    def _unexplained(self, key, tensor, shape, dtype, depth=0):
        """(node, whether it shows a named value) for an input the tape did not see
        computed: a named value, or a transposing view of one; the expression that
        computed it while the tape recorded (`ir.provenance`), when that reaches a named
        value; a uniform array (structure: its number, or I); that expression anyway;
        else a leaf of its own. `tensor` is None when it is gone."""
        if key in self.user or key in self.variables:
            return self.leaf(key, shape, dtype), True
        alias = self._alias(key, tensor) if tensor is not None else None
        if alias is not None:
            return alias, True
        computed = self._computed(key, depth)
        if computed is not None and computed[1]:
            return computed
        uniform = self._uniform(tensor) if tensor is not None else None
        if uniform is not None:
            return uniform, False
        return computed or (self.leaf(key, shape, dtype), False)

    def _computed(self, key, depth):
        """(node, names something) of how the unrecorded value `key` was computed, from
        the ops the tape saw run on values it does not watch; None if it did not see it."""
        found = self._provenance.get(key)
        if found is not None:
            return found
        computed = provenance.computed(self.unrecorded, key)
        if computed is None or depth > MAX_PROVENANCE_DEPTH:
            return None
        inputs, named = [], False
        for k, input_key in enumerate(computed.ids):
            t = provenance.tensor_of(computed, k)
            if t is not None and t._literal:
                op, attrs = literal_record(t)
                inputs.append(Node(op, (), attrs, tuple(t._shape), t._dtype))
                continue
            shape, dtype = (t._shape, t._dtype) if t is not None else (None, None)
            earlier = provenance.computed(self.unrecorded, input_key) if t is None else None
            if earlier is not None:
                shape, dtype = earlier.shape, earlier.dtype
            if shape is None:
                return None             # an input that is gone, with nothing known of it
            node, names = self._unexplained(input_key, t, shape, dtype, depth + 1)
            inputs.append(node)
            named = named or names
        node = Node(computed.op, tuple(inputs), computed.attrs, tuple(computed.shape),
                    computed.dtype)
        if all(i.op in (CONSTANT, FILL) for i in inputs):
            node = _folded(node) or node        # numbers only: the number it is
        found = self._provenance[key] = (node, named)
        return found

    @staticmethod
    def _uniform(tensor):
        """A fill of the one number every element of an unnamed input holds, or the
        identity matrix when it is one."""
        return None if tensor._value is None else \
            _uniform_node(np.asarray(tensor._value), tensor._dtype)

    def _alias(self, key, tensor):
        """The named value the unexplained input `key` is, or is the transpose of."""
        value = tensor._value
        if value is None:
            return None
        for other, known in self.known.items():
            if other != key and _same_array(value, known):
                return self.leaf(other, value.shape, tensor._dtype)
        for other, known in self.known.items():
            if other != key and _transposed_view(value, known):
                return Node(TRANSPOSE, (self.leaf(other, known.shape, tensor._dtype),),
                            {"perm": (1, 0)}, tuple(value.shape), tensor._dtype)
        return None

    def leaf(self, key, shape, dtype):
        """The one leaf node for `key` (shared, so a leaf used twice is one node)."""
        found = self._leaf.get(key)
        if found is None:
            found = self._leaf[key] = leaf_node(key, shape, dtype)
        return found


def _folded(node):
    """The number an op on numbers (constants and fills) computes, as a fill, when every
    element is the same finite number (`fill(1) * -0.2` is -0.2); else None."""
    values = [np.broadcast_to(np.asarray(i.attrs["value"], dtype=i.dtype), i.shape)
              for i in node.inputs]
    try:
        value = np.asarray(node.op.impl(*values, **node.attrs))
    except Exception:       # noqa: BLE001  (an op that cannot run here keeps its form)
        return None
    return _uniform_node(value, node.dtype) if value.shape == node.shape else None


def _uniform_node(value, dtype):
    """A fill of the one number every element of `value` holds, the identity matrix when
    it is one, else None."""
    if value.size == 0 or value.dtype.kind not in "biuf":
        return None
    if value.ndim == 2 and value.shape[0] == value.shape[1] > 1 and \
            np.array_equal(value, np.eye(len(value))):
        return Node(EYE, (), {"n": len(value), "m": len(value), "dtype": value.dtype.str},
                    tuple(value.shape), dtype)
    first = value.reshape(-1)[0]
    if not np.isfinite(first) or not np.all(value == first):
        return None
    return Node(FILL, (), {"value": first.item(), "shape": tuple(value.shape),
                           "dtype": value.dtype.str}, tuple(value.shape), dtype)


def _memory(a):
    """(address of the first element, dtype) of an array: which memory it reads."""
    return a.__array_interface__["data"][0], a.dtype


def _same_array(value, known) -> bool:
    """`value` is `known` or a view of exactly its elements in the same order."""
    if value is known:
        return True
    return isinstance(known, np.ndarray) and value.shape == known.shape and \
        value.strides == known.strides and _memory(value) == _memory(known)


def _transposed_view(value, known) -> bool:
    """`value` reads the memory of the matrix `known` with its two axes swapped: it is
    `known.T` by construction, not by coincidence of values."""
    return isinstance(known, np.ndarray) and value.ndim == 2 and known.ndim == 2 and \
        value.shape == known.shape[::-1] and value.strides == known.strides[::-1] and \
        _memory(value) == _memory(known)


MAX_CANDIDATES = 8


def gradient_of(tape, target, source):
    """The one-element tensor on `tape` whose gradient by `source` `target` is, or None.

    An inner tape's gradient is recorded by an outer tape op by op, with nothing marking
    it as a gradient; the outer tape has also recorded the function itself. Each recorded
    one-element tensor that `target` does not depend on is a candidate: its gradient is
    built symbolically and evaluated with the ops' NumPy implementations, and the first
    whose value equals `target`'s (to rounding) is the function. Candidates are those
    recorded before `target`, latest first, at most MAX_CANDIDATES."""
    records, tensors = tape.recorded.graph, tape.recorded.tensors
    if target._value is None or tuple(target._shape) != tuple(source._shape):
        return None
    upstream, stack = set(), [target._id]
    while stack:
        k = stack.pop()
        if k not in upstream and k in records:
            upstream.add(k)
            stack.extend(records[k].inputs)
    tried = 0
    for key, r in reversed(list(records.items())):
        t = tensors.get(key)
        # The function was recorded before its gradient (ids grow in creation order).
        if key in upstream or key > target._id or not r.inputs or t is None or \
                t._value is None or np.size(t._value) != 1 or t._dtype.kind != "f":
            continue
        tried += 1
        if tried > MAX_CANDIDATES:
            return None
        request = engine.Request([t], [key_of(source)], [source._dtype],
                                 [tuple(source._shape)], [None], "gradient")
        try:
            (output,), leaves = engine.symbolic(tape, request, mode="fast")
            value = None if output is None else _evaluate(output, leaves, tape.recorded)
        except Exception:       # noqa: BLE001  (a candidate that cannot be evaluated is not it)
            continue
        if value is not None and np.shape(value) == target._value.shape and \
                np.allclose(value, target._value, rtol=1e-6, atol=1e-9):
            return t
    return None


def _evaluate(root, leaves, recorded):
    """The value of IR `root`, leaves read from the tape, ops by their NumPy impl."""
    values = {}
    for n in topological_order([root]):
        if n.op is PLACEHOLDER:
            key = leaves[n]
            holder = recorded.tensors.get(key)
            holder = recorded.variables[key] if holder is None else holder
            values[id(n)] = holder._value
        else:
            values[id(n)] = np.asarray(n.op.impl(*[values[id(i)] for i in n.inputs],
                                                 **n.attrs))
    return values[id(root)]


def leaves_of(roots):
    """(key, shape) of every leaf below `roots`, in order of first appearance."""
    seen, result = set(), []
    for n in topological_order([r for r in roots if r is not None]):
        if n.op is PLACEHOLDER and "leaf" in n.attrs and n.attrs["leaf"] not in seen:
            seen.add(n.attrs["leaf"])
            result.append((n.attrs["leaf"], n.shape))
    return result
