"""A read-only view of what a GradientTape recorded."""
from __future__ import annotations

from operator import attrgetter


def _view(attribute: str, doc: str) -> property:
    """A read-only property showing the tape's `attribute` (an attrgetter: the engine
    reads these on every cache hit, and a C getter costs no Python frame)."""
    return property(attrgetter(f"_tape.{attribute}"), doc=doc)


class Recorded:
    """What a tape has recorded, as the engine, `explain`, tracing and the exporters read
    it: a live view (it follows the tape), so they need none of the tape's privates."""

    __slots__ = ("_tape",)

    def __init__(self, tape):
        self._tape = tape

    graph = _view("_graph", "The ir.graph.Recording: tensor id -> Record(op, attrs, shape, "
                            "dtype, inputs).")
    values = _view("_values", "id -> the value (array) of every recorded tensor a derivative "
                              "may read.")
    tensors = _view("_tensors", "id -> the Tensor of a leaf: watched, an input, a constant.")
    live = _view("_live", "Ids of watched tensors and recorded op outputs.")
    variables = _view("_variables", "Handle id -> watched Variable.")
    ignored = _view("_ignored", "Ids passed to watch() while the tape was not recording.")
    gaps = _view("_gaps", "Closed windows of ids created while not recording: (first id, "
                          "why, last id).")
    gap = _view("_gap", "The open window (first id, why), or None.")
    started = _view("_started", "An id allocated when recording first started (None: never).")
    conversions = _view("_conversions", "(tensor id, how, 'file:line', an id allocated then) "
                                        "of recorded values Python turned into plain data.")
    unrecorded = _view("_unrecorded", "id -> provenance.Computed: ops run on values the tape "
                                      "does not watch, while it recorded (None: none).")
    used = _view("_used", "Whether a non-persistent tape has been used (and released).")
    watches_accessed_variables = _view("_watch_accessed_variables",
                                       "Whether Variables read while recording are watched.")

    def target(self, t, what: str):
        """`t` as a target tensor of `what` (a Variable is read), or TypeError."""
        return self._tape._as_target(t, what)
