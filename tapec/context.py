"""Per-thread recording state: the stack of active tapes and the symbolic builder.

Nothing here is a module-level mutable global shared between threads: each thread
sees only the tapes it entered, so tapes in different threads never record each
other's operations.
"""
from __future__ import annotations

import gc
import threading


class _ThreadState(threading.local):
    def __init__(self):
        self.tapes = []       # active GradientTapes, innermost last
        self.builder = None   # the ir.Builder of a symbolic build in progress, if any
        self.name_scope = ""  # tf.name_scope's current scope, "a/b/" (names only)
        self.outer_scopes = []  # the scopes the entered name_scopes replaced


_state = _ThreadState()


def active_tapes() -> list:
    return _state.tapes


def tracing_tape():
    """The innermost tape tracing a `tapec.function`, recording or paused, or None: what
    happens there (a draw, a print, a fill) becomes part of the traced program."""
    for tape in reversed(_state.tapes):
        if tape._records_everything:
            return tape
    return None


def current_builder():
    return _state.builder


def set_builder(builder):
    previous = _state.builder
    _state.builder = builder
    return previous


def name_scope() -> str:
    """The current `tf.name_scope` prefix, "" or "outer/inner/"."""
    return _state.name_scope


# --- the collector while a long recording grows ----------------------------------------
# A tape recording a long loop keeps every op's record alive until its gradient. Each
# record that outlives two young collections is promoted to the oldest generation, and
# once promotions reach a quarter of it, CPython runs a full collection: a walk over
# every object the process holds (a process that has imported scikit-learn holds
# 100,000 more than tapec's own), to free nothing. A 2,000-iteration loop recorded in such
# a process spent 14 of its 50 ms per step there. So while a long recording grows, only
# the youngest generation is collected (short-lived cycles are still freed); the older
# two wait until its recording stops, when its records are released unpromoted. The
# collector's thresholds are the process's, so tapes of every thread share one count.
_POSTPONED = 1 << 30
_postponing = set()           # ids of the tapes whose long recording postpones them
_restore = None               # the older two thresholds to put back
_collections_lock = threading.Lock()


def postpone_old_collections(owner) -> None:
    """Collect only the youngest generation until `owner` (a tape) resumes them; nothing
    if the older thresholds are already postponed by someone else."""
    global _restore
    with _collections_lock:
        if not _postponing:
            first, second, third = gc.get_threshold()
            if third >= _POSTPONED:
                return                         # someone else postponed them: leave it
            _restore = second, third
            gc.set_threshold(first, _POSTPONED, _POSTPONED)
        _postponing.add(id(owner))


def resume_old_collections(owner) -> None:
    """`owner`'s recording stopped: once no tape postpones them, the older generations'
    thresholds are put back (unless they were changed meanwhile: those are kept)."""
    global _restore
    with _collections_lock:
        if id(owner) not in _postponing:
            return
        _postponing.discard(id(owner))
        if not _postponing:
            first, second, third = gc.get_threshold()
            if (second, third) == (_POSTPONED, _POSTPONED) and _restore is not None:
                gc.set_threshold(first, *_restore)
            _restore = None
