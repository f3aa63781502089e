"""Where an unrecorded value came from: the ops a recording tape saw run on values it
does not watch.

A tape records an op only when it watches one of the op's inputs. `1 - y` for an
unwatched `y`, or the constants an inner gradient computes from unwatched data
(`(1 - y) / n`), run eagerly and reach the tape later as inputs it never saw computed.
So that a printer can show such an input by what it is (`1 - y`, not an unexplained
symbol), a recording tape notes those ops in a table, tensor id -> `Computed`:

    note(table, op, inputs, ids, attrs, out)   # from the tape, when it does not record
    table[t._id]                               # how t was computed, if it was noted

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
    inputs: tuple
    shape: tuple
    dtype: object


def note(table, op, inputs, ids, attrs, out) -> dict:
    """Add `out = op(*inputs)` to `table` (None: a new table), which is returned."""
    if table is None:
        table = {}
    elif len(table) >= LIMIT:
        for key in list(itertools.islice(table, LIMIT // 2)):
            del table[key]
    held = tuple(t if t._literal else weakref.ref(t) for t in inputs)
    table[out._id] = Computed(op, attrs, ids, held, out._shape, out._dtype)
    return table


def tensor_of(computed: Computed, k: int):
    """Input `k` of `computed` as a Tensor, or None when it no longer exists."""
    held = computed.inputs[k]
    return held() if isinstance(held, weakref.ref) else held
