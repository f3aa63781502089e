"""A read-only view of what a GradientTape recorded."""
from __future__ import annotations


class Recorded:
    """What a tape has recorded, as the engine, `explain`, tracing and the exporters read
    it: a live view (it follows the tape), so they need none of the tape's privates."""

    __slots__ = ("_tape",)

    def __init__(self, tape):
        self._tape = tape

    @property
    def graph(self):
        """The ir.graph.Recording: tensor id -> Record(op, attrs, shape, dtype, inputs)."""
        return self._tape._graph

    @property
    def tensors(self) -> dict:
        """id -> Tensor whose value a derivative may read."""
        return self._tape._tensors

    @property
    def live(self) -> set:
        """Ids of watched tensors and recorded op outputs."""
        return self._tape._live

    @property
    def variables(self) -> dict:
        """Handle id -> watched Variable."""
        return self._tape._variables

    @property
    def ignored(self) -> set:
        """Ids passed to watch() while the tape was not recording."""
        return self._tape._ignored

    @property
    def gaps(self) -> list:
        """Closed windows of ids created while not recording: (first id, why, last id)."""
        return self._tape._gaps

    @property
    def gap(self):
        """The open window (first id, why), or None."""
        return self._tape._gap

    @property
    def started(self):
        """An id allocated when recording first started (None: never started)."""
        return self._tape._started

    @property
    def conversions(self) -> list:
        """(tensor id, how, "file:line", an id allocated at that moment) of recorded
        values Python turned into plain data, in order."""
        return self._tape._conversions

    @property
    def used(self) -> bool:
        """Whether a non-persistent tape has been used (and released)."""
        return self._tape._used

    @property
    def watches_accessed_variables(self) -> bool:
        return self._tape._watch_accessed_variables

    def target(self, t, what: str):
        """`t` as a target tensor of `what` (a Variable is read), or TypeError."""
        return self._tape._as_target(t, what)
