"""Measure one other system in a process of its own (run by `suite.py`).

    python -m benchmarks.worker --system jax --scale 1.0 --result out.json [--quick]

Writes {"version": ..., "cells": {case id: [seconds, status, NumPy seconds measured
interleaved with them, {"compiles": n} or {}]}, "problems": [...]} or
{"error": "not installed (...)"} to the result file; progress lines on stdout start
with "bench: ".
"""
from __future__ import annotations

import argparse
import json
import sys

from . import timing
from .measure import measure
from .report import format_ratio, format_seconds
from .systems import SYSTEMS, TAPEC
from .workloads import build_cases


def measure_system(key, scale=1.0, quick=False, only=None, log=print, ids=None) -> dict:
    """Measure system `key` on the cases of workloads `only` (all when empty), or
    only the cases whose ids are in `ids`."""
    system = TAPEC if key == TAPEC.key else next(s for s in SYSTEMS if s.key == key)
    try:
        version = system.load()
    except Exception as error:  # noqa: BLE001  (ImportError, or a broken install)
        message = str(error) or type(error).__name__
        return {"error": message if message.startswith("n/a")
                else f"not installed ({message})"}
    settings = timing.QUICK if quick else timing.FULL
    cells, problems = {}, []
    for case in build_cases(scale, only):
        if (ids and case.id not in ids) or not system.runs(case):
            continue
        expected = case.numpy()
        if case.fresh_process:
            from .fresh import measure_fresh
            cell = measure_fresh(case, expected, settings, problems, system, scale)
        else:
            cell = measure(case, expected, settings, problems, system.label,
                           reset=system.reset, build=lambda case=case: system.build(case))
        if case.count_compiles and hasattr(system, "compile_counts") and \
                cell.status != "error":
            cell.info.update(count_compiles(system, case))
        cells[case.id] = [cell.seconds, cell.status, cell.reference, cell.info]
        ratio = cell.ratio()
        log(f"{system.label:14s} {case.id:18s} {cell.status or format_seconds(cell.seconds)}"
            + (f"  ratio {format_ratio(ratio)}" if ratio is not None else "")
            + "".join(f"  {k} {v}" for k, v in cell.info.items()))
    return {"version": version, "cells": cells, "problems": problems}


def count_compiles(system, case) -> dict:
    """What one call of `case` compiles from a cold cache, on a tapec system:
    {"compiles": n, "misses": compile-cache misses, "traces": tapec.function traces}.
    Every compile is a cache miss (a traced program is looked up by its structure, so a
    retrace that builds the same program finds it); traces are counted beside them, as
    TensorFlow's rule retraces for each new Python float."""
    system.reset()
    fn = system.build(case)
    misses, traces = system.compile_counts()
    fn()
    misses, traces = (after - before for after, before in zip(system.compile_counts(),
                                                               (misses, traces)))
    return {"compiles": misses, "misses": misses, "traces": traces}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.worker")
    parser.add_argument("--system", required=True)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="")
    parser.add_argument("--cases", default="", help="case ids, comma-separated")
    parser.add_argument("--result", required=True)
    args = parser.parse_args(argv)
    only = [w for w in args.only.split(",") if w]

    def log(line):
        print("bench: " + line, flush=True)

    ids = [c for c in args.cases.split(",") if c]
    outcome = measure_system(args.system, args.scale, args.quick, only, log, ids)
    with open(args.result, "w", encoding="utf-8") as f:
        json.dump(outcome, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
