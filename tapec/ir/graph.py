"""The recorded graph: what a tape saw, how it is pruned and keyed, and its networkx view.

Recording is on the hot path of every training step, so a tape stores its DAG as a
plain dict `{tensor id: Record}`; `to_networkx` builds the `networkx.DiGraph` view on
demand (`GradientTape.graph`): node attributes `op`, `attrs`, `shape`, `dtype`,
`inputs`, and on each edge `argpos`, the tuple of argument positions at which the
source feeds the target (`x * x` is one edge with argpos (0, 1)). This is the only
module that touches networkx.

Tensor ids grow in creation order and every input is created before the op that
consumes it, so sorting ids gives a topological order without a graph walk.
"""
from __future__ import annotations

import threading
from typing import NamedTuple

from .nodes import attrs_key


class Record(NamedTuple):
    op: object
    attrs: dict
    shape: tuple
    dtype: object
    inputs: tuple        # input tensor ids, in argument order


# new_record(Record, fields): a Record without the NamedTuple's own constructor, a
# Python-level call that recording, on every op of a training step, does without.
new_record = tuple.__new__

_DTYPE_STR = {}        # dtype -> dtype.str (a property that builds a new string per call)


class Recording(dict):
    """A tape's DAG: tensor id -> Record, plus its structure kept as it grows.

    `rows` describes the recorded nodes in recording order, flat: per node its op name,
    attributes, shape, dtype, number of inputs, then the positions of its inputs in
    recording order (one flat list, not a tuple per node: fewer objects for the
    garbage collector to track while an eager loop records). `ids[k]` is the k-th
    node's tensor id. The same program records the same rows, whatever the values and
    ids, so the rows are a structural key available without walking the graph.
    """

    __slots__ = ("rows", "ids", "position", "sites", "names", "_rows_key")

    def __init__(self):         # dict.__new__ made the empty dict: no dict.__init__ call
        self.rows, self.ids, self.position = [], [], {}
        self.sites = {}         # tensor id -> where user code recorded it (ir.sites)
        self.names = {}         # Variable handle id -> the Variable's name
        self._rows_key = None

    def add(self, node_id, record: Record, attrs_row=None):
        """Record `record` as `node_id`; `attrs_row` is its attributes' part of the row
        when that is not their key (a fed literal's row leaves its value out)."""
        self[node_id] = record
        position = self.position
        dtype = record.dtype
        dtype_str = _DTYPE_STR.get(dtype)
        if dtype_str is None:
            dtype_str = _DTYPE_STR[dtype] = dtype.str
        inputs = record.inputs
        rows = self.rows
        if attrs_row is None:
            attrs = record.attrs
            attrs_row = attrs_key(attrs) if attrs else ()
        rows += (record.op.name, attrs_row, record.shape, dtype_str, len(inputs))
        for i in inputs:            # a loop: no comprehension to set up for a leaf's none
            rows.append(position[i])
        position[node_id] = len(self.ids)
        self.ids.append(node_id)

    def rows_key(self) -> RowsKey:
        """The rows as a cache key. Rows are only ever appended, so their length tells
        whether the last key found still holds: a persistent tape asked for several
        derivatives of one recording copies and hashes its rows once."""
        key = self._rows_key
        if key is None or len(key.rows) != len(self.rows):
            key = self._rows_key = RowsKey.of(self.rows)
        return key

    def ancestors(self, ids, through=None) -> set:
        """`ids` and every recorded id they were computed from (a walk back along the
        inputs; `through(node_id)` False stops it at that node)."""
        seen, stack = set(), list(ids)
        while stack:
            node_id = stack.pop()
            if node_id in seen:
                continue
            seen.add(node_id)
            record = self.get(node_id)
            if record is not None and (through is None or through(node_id)):
                stack.extend(i for i in record.inputs if i not in seen)
        return seen

    def add_fed_literal(self, node_id, op, attrs, dtype):
        """A 0-d Python-float literal whose value the compiled derivative takes as an
        argument (`Op.fed_scalars`): its row holds its dtype, not its value, so the next
        step's learning rate finds the same program. The record keeps the value, marked
        `fed`, for printers, which write it as a number."""
        attrs = dict(attrs, fed=True)
        self.add(node_id, Record(op, attrs, (), dtype, ()), _fed_row(attrs))

    def add_leaf(self, node_id, op, attrs, shape, dtype, attrs_row=None):
        self.add(node_id, new_record(Record, (op, attrs, shape, dtype, ())), attrs_row)

    def add_op(self, node_id, op, attrs, shape, dtype, input_ids):
        self.add(node_id, new_record(Record, (op, attrs, shape, dtype, tuple(input_ids))))


class RowsKey:
    """A recording's rows as (part of) a cache key, interned: `RowsKey.of` gives the
    same object for equal rows, so a key holding it is hashed and compared by identity,
    in C, however many rows it has (a tuple of thousands of rows keeps no hash, and an
    LRU hit hashes its key twice). Two objects with equal rows can exist (one made after
    the other left the table): they only miss each other's cache entries."""

    __slots__ = ("rows",)

    def __init__(self, rows: tuple):
        self.rows = rows

    @staticmethod
    def of(rows) -> "RowsKey":
        rows = tuple(rows)
        key = _INTERNED.get(rows)
        return key if key is not None else _intern(rows)

    def __repr__(self):
        return f"RowsKey({len(self.rows)} rows)"


# rows -> RowsKey for the most recently interned structures, oldest first; bounded in
# structures and in row items (about 32 MB of references), whichever is reached first.
# Lookups read it without a lock; new structures are added under one.
_INTERNED = {}
_INTERNED_KEYS, _INTERNED_ITEMS = 4096, 1 << 22
_interned_items = 0
_interning = threading.Lock()


def _intern(rows: tuple) -> RowsKey:
    global _interned_items
    with _interning:
        key = _INTERNED.get(rows)
        if key is not None:             # another thread interned it first
            return key
        key = _INTERNED[rows] = RowsKey(rows)
        _interned_items += len(rows)
        # The newest stays, however big: its recording is asked for again next step.
        while len(_INTERNED) > 1 and (len(_INTERNED) > _INTERNED_KEYS or
                                      _interned_items > _INTERNED_ITEMS):
            oldest = _INTERNED.pop(next(iter(_INTERNED)))
            _interned_items -= len(oldest.rows)
        return key


def _fed_row(attrs) -> tuple:
    """The structural key of a fed literal's attributes: everything but its value."""
    return ("fed",) + attrs_key({k: v for k, v in attrs.items()
                                 if k not in ("value", "negative_zero")})


def to_networkx(recording: Recording):
    """The recording as a `networkx.DiGraph` (built on each call)."""
    import networkx as nx
    g = nx.DiGraph()
    for node_id in sorted(recording):
        r = recording[node_id]
        g.add_node(node_id, op=r.op, attrs=r.attrs, shape=r.shape, dtype=r.dtype,
                   inputs=r.inputs)
        for pos, parent in enumerate(r.inputs):
            if g.has_edge(parent, node_id):
                g.edges[parent, node_id]["argpos"] += (pos,)
            else:
                g.add_edge(parent, node_id, argpos=(pos,))
    return g


def draw(view, ax) -> None:
    """Draw a `to_networkx` view on the matplotlib axes `ax`, nodes labelled by op
    (`tapec graph` without Graphviz). The layout is seeded: the same graph, the same
    picture."""
    import networkx as nx
    labels = {n: d["op"].name for n, d in view.nodes(data=True)}
    nx.draw_networkx(view, pos=nx.spring_layout(view, seed=0), ax=ax, labels=labels,
                     node_color="#dde8f5", font_size=8)


class Pruned:
    """The part of a tape graph that a derivative needs.

    `ids` lists, in topological (id) order, every node on a path from a source to a
    target plus the direct inputs of those nodes (whose values the derivative rules
    read). `on_path` marks the nodes that receive cotangents. `index` maps a tensor id
    to its position in `ids`, the canonical numbering used by the structural key.
    """

    __slots__ = ("ids", "index", "on_path")

    def __init__(self, ids, on_path):
        self.ids = ids
        self.index = {node_id: k for k, node_id in enumerate(ids)}
        self.on_path = on_path


def prune(recording: Recording, source_ids, target_ids) -> Pruned:
    """Nodes on a path from a source to a target (ancestors ∩ descendants), plus the
    inputs their derivative rules read. One backward walk, then one pass in id order."""
    upstream = recording.ancestors([t for t in target_ids if t in recording])
    on_path = {s for s in source_ids if s in upstream}
    if not on_path:
        return Pruned([], on_path)
    first = min(on_path)
    for node_id in sorted(i for i in upstream if i > first):
        if any(i in on_path for i in recording[node_id].inputs):
            on_path.add(node_id)
    needed = set(on_path)
    for node_id in on_path:
        needed.update(recording[node_id].inputs)
    # Recording order, not id order: a shared literal's tensor is as old as the first
    # program that used it, and the same program must number its nodes the same way.
    return Pruned(sorted(needed, key=recording.position.__getitem__), on_path)


def structural_key(recording: Recording, pruned: Pruned) -> tuple:
    """Ops, attributes, shapes, dtypes and wiring of the pruned graph, never values."""
    index, on_path = pruned.index, pruned.on_path
    rows = []
    for node_id in pruned.ids:
        r = recording[node_id]
        # An off-path node is an input the rules read; its own inputs do not matter.
        wiring = tuple(index[i] for i in r.inputs) if node_id in on_path else None
        attrs = r.attrs
        key = (_fed_row(attrs) if "fed" in attrs else attrs_key(attrs)) if attrs else ()
        rows.append((r.op.name, key, r.shape, r.dtype.str, wiring))
    return tuple(rows)
