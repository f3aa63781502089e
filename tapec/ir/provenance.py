"""Where an unrecorded value came from: the ops a recording tape saw run on values it
does not watch.

A tape records an op only when it watches one of the op's inputs. `1 - y` for an
unwatched `y`, or the constants an inner gradient computes from unwatched data
(`(1 - y) / n`), run eagerly and reach the tape later as inputs it never saw computed.
So that a printer can show such an input by what it is (`1 - y`, not an unexplained
symbol), a recording tape notes those ops in a table keyed by tensor id (about 0.5 µs
an op, paid only by ops it does not record):

    note(table, op, inputs, ids, attrs, out)   # from the tape, when it does not record
    computed(table, t._id)                     # how t was computed (a `Computed`), or None

Nothing here keeps an array alive: inputs are held by weak reference, except literals
(the `1` of `1 - y`, which nothing else holds; they are numbers or uniform fills). The
table is bounded: when full, its older half is dropped. It is a best effort for
display, never read by differentiation or compiled code.
"""
from __future__ import annotations

import itertools
import weakref
from typing import NamedTuple

LIMIT = 4096        # entries a tape keeps; a recording inside a long loop stays bounded


class Computed(NamedTuple):
    """An unrecorded `out = op(*inputs, **attrs)`. `inputs` holds, per input, the
    literal Tensor itself or a weak reference to the Tensor; `ids` their tensor ids."""
    op: object
    attrs: dict
    ids: tuple
    inputs: list
    shape: tuple
    dtype: object


def note(table, op, inputs, ids, attrs, out) -> dict:
    """Add `out = op(*inputs)` to `table` (None: a new table), which is returned. A plain
    tuple is stored (`computed` reads it): this runs for every op that a tape keeping its
    Tensors (persistent, or recording beside another) sees and does not record."""
    if table is None:
        table = {}
    elif len(table) >= LIMIT:
        for key in list(itertools.islice(table, LIMIT // 2)):
            del table[key]
    held = []
    for t in inputs:        # a loop, not a comprehension: no frame of its own (3.11)
        held.append(t if t._literal else _ref(t))
    table[out._id] = (op, attrs, ids, held, out._shape, out._dtype)
    return table


def computed(table, key) -> Computed | None:
    """How tensor `key` was computed, if `table` noted it."""
    entry = table.get(key) if table else None
    return None if entry is None else Computed._make(entry)


def tensor_of(entry: Computed, k: int):
    """Input `k` of `entry` as a Tensor, or None when it no longer exists."""
    held = entry.inputs[k]
    return held() if isinstance(held, _ref) else held


_ref = weakref.ref
