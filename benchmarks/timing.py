"""Timing: medians over repeats of calls in a loop; first-call latency."""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    repeat: int = 7          # repeats per measurement (the median is reported)
    min_time: float = 0.1    # seconds one repeat should last (sets the calls per repeat)
    budget: float = 8.0      # seconds a slow call may take in all (fewer repeats, >= 3)
    first_repeat: int = 3    # first-call measurements (each after clearing caches)


FULL = Settings()
QUICK = Settings(repeat=3, min_time=0.005, budget=0.5, first_repeat=1)


def median_seconds(fn, settings: Settings = FULL) -> float:
    """Median over repeats of the seconds per call of `fn()`.

    One warm-up call first (compilation, caches). Each repeat runs `fn` enough times to
    last about `settings.min_time`; a call slower than that runs once per repeat, with
    as many repeats as fit in `settings.budget` (at least 3, or `settings.repeat` when
    that is smaller).
    """
    return paired_median_seconds([fn], settings)[0]


def paired_median_seconds(fns, settings: Settings = FULL) -> list:
    """`median_seconds` of each of `fns`, their repeats interleaved (repeat 1 of every
    function, then repeat 2, ...), so that a slow spell of a shared machine falls on
    all of them alike and their ratios stay meaningful."""
    plans = []
    for fn in fns:
        start = time.perf_counter()
        fn()
        once = max(time.perf_counter() - start, 1e-9)
        number = math.ceil(settings.min_time / once) if once < settings.min_time else 1
        repeat = settings.repeat
        if number == 1:
            repeat = max(min(3, repeat), min(repeat, int(settings.budget / once)))
        plans.append((fn, number, repeat))
    samples = [[] for _ in fns]
    for r in range(max(repeat for _, _, repeat in plans)):
        for (fn, number, repeat), out in zip(plans, samples):
            if r >= repeat:
                continue
            start = time.perf_counter()
            for _ in range(number):
                fn()
            out.append((time.perf_counter() - start) / number)
    return [statistics.median(out) for out in samples]


def first_call_seconds(reset, build, settings: Settings = FULL) -> float:
    """Median over up to `settings.first_repeat` runs (fewer once they have taken
    `settings.budget` seconds) of: `reset()` (clear compile caches), `fn = build()`, then
    the time of the one call `fn()` (build is not timed)."""
    samples = []
    while len(samples) < max(1, settings.first_repeat):
        reset()
        fn = build()
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
        if sum(samples) > settings.budget:
            break
    return statistics.median(samples)


def format_seconds(seconds) -> str:
    """'12.3 µs', '4.56 ms', '1.23 s'; '—' for None."""
    if seconds is None:
        return "—"
    for unit, factor in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= factor:
            return f"{_digits(seconds / factor)} {unit}"
    return f"{_digits(seconds / 1e-9)} ns"


def format_ratio(ratio) -> str:
    if ratio is None:
        return "—"
    return _digits(ratio)


def _digits(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"
