"""The progress display of `fit`, `evaluate` and `predict`: Keras's bar and log format.

    25/25 ━━━━━━━━━━━━━━━━━━━━ 0s 2ms/step - accuracy: 0.9000 - loss: 0.1234

verbose 1 draws the bar, redrawn in place on a terminal (at most every `interval`
seconds) and written once, when finished, elsewhere; verbose 2 writes one plain line
("25/25 - 0s - 2ms/step - ..."), when finished.
"""
from __future__ import annotations

import sys
import time

import numpy as np

__all__ = ["ProgressBar", "format_logs", "format_time_per_step", "BAR_WIDTH"]

BAR_WIDTH = 20


def format_logs(logs: dict) -> str:
    """The logs as Keras shows them (' - loss: 0.1234 - accuracy: 0.9000'): four
    decimals, or e-notation with four decimals for magnitudes of 0.001 or less."""
    parts = []
    for key, value in logs.items():
        value = float(np.mean(value))
        parts.append(f" - {key}: {value:.4f}" if abs(value) > 1e-3 else
                     f" - {key}: {value:.4e}")
    return "".join(parts)


def format_time_per_step(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.0f}s/step"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.0f}ms/step"
    return f"{seconds * 1e6:.0f}us/step"


class ProgressBar:
    """One line of progress over `target` steps (None: unknown), written to `stream`
    (sys.stdout at each write when None). `verbose` 1: a bar, redrawn in place on a TTY
    and written once, when finished, otherwise; 2: one plain line when finished."""

    def __init__(self, target: int | None, verbose: int = 1, stream=None,
                 interval: float = 0.05) -> None:
        self.target, self.verbose, self.stream = target, verbose, stream
        self.interval = interval
        self.start = time.perf_counter()
        self._last_draw = 0.0
        self._width = 0

    def _out(self):
        return self.stream if self.stream is not None else sys.stdout

    def _line(self, current: int, logs: dict, finished: bool) -> str:
        elapsed = time.perf_counter() - self.start
        per_step = format_time_per_step(elapsed / max(current, 1))
        if self.target is None:
            count = f"{current:7d}/Unknown"
        else:
            count = f"{current:{len(str(self.target))}d}/{self.target}"
        if self.verbose == 2:
            return f"{count} - {elapsed:.0f}s - {per_step}{format_logs(logs)}"
        if self.target:
            done = min(BAR_WIDTH, int(BAR_WIDTH * current / self.target))
            bar = " " + "━" * done + "─" * (BAR_WIDTH - done)
        else:
            bar = ""
        if finished or self.target is None:
            timing = f"{elapsed:.0f}s {per_step}"
        else:
            timing = f"{(self.target - current) * elapsed / max(current, 1):.0f}s {per_step}"
        return f"{count}{bar} {timing}{format_logs(logs)}"

    def update(self, current: int, logs: dict | None = None, finished: bool = False) -> None:
        """Shows `current` steps done, with the latest `logs`."""
        logs = logs or {}
        out = self._out()
        dynamic = self.verbose == 1 and getattr(out, "isatty", lambda: False)()
        if not finished:
            now = time.perf_counter()
            if not dynamic or now - self._last_draw < self.interval:
                return
            self._last_draw = now
        line = self._line(current, logs, finished)
        if dynamic:
            padding = " " * max(0, self._width - len(line))
            self._width = len(line)
            out.write("\r" + line + padding + ("\n" if finished else ""))
        else:
            out.write(line + "\n")
        out.flush()
