"""First call in a fresh process (W11): what a user waits for before a script's first
gradient.

    python -m benchmarks.fresh --system jax --scale 1.0 --case W11 --result out.npz

The child process imports the suite (and so tapec) and the system, builds the case's
inputs, then times one call: imports and input conversion are not timed, the first
gradient is (JAX: tracing and XLA compilation included). It writes the seconds and the
result arrays to `--result`. `fresh_seconds` runs it `settings.first_repeat` times
(3 by default) and checks the result against the NumPy reference. tapec's persistent
compile cache is turned off in the child ($TAPEC_CACHE_DIR removed): a cold start.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from . import timing
from .measure import _short, timed
from .report import Cell
from .workloads import check, to_numpy


def measure_fresh(case, expected, settings, problems, system, scale) -> Cell:
    """A Cell with the median seconds of `system`'s first call of `case` in new
    processes (the first one's result checked); the NumPy reference is timed here."""
    label = f"{case.id} / {system.label}"
    cell = Cell(reference=timing.median_seconds(case.numpy, settings))
    samples = []

    def seconds():
        took, got = run_child(system.key, scale, case.id)
        if not samples:
            try:
                check(got, expected, case.rtol, label)
            except AssertionError as error:
                problems.append(f"{label}: result differs from NumPy: {_short(error)}")
                cell.status = "wrong"
        samples.append(took)
        while len(samples) < max(1, settings.first_repeat):
            samples.append(run_child(system.key, scale, case.id)[0])
        return statistics.median(samples)
    return timed(case, problems, system.label, cell, seconds)


def run_child(key, scale, case_id, timeout=600) -> tuple:
    """(seconds, result arrays) of one first call in a new process; RuntimeError with the
    child's last lines when it fails."""
    from .suite import _worker_path
    env = {k: v for k, v in os.environ.items() if k != "TAPEC_CACHE_DIR"}
    env.update(TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=_worker_path(env.get("PYTHONPATH", "")))
    with tempfile.TemporaryDirectory(prefix="tapec-fresh-") as folder:
        result = os.path.join(folder, "result.npz")
        argv = [sys.executable, "-m", "benchmarks.fresh", "--system", key, "--scale",
                repr(scale), "--case", case_id, "--result", result]
        done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=folder,
                              timeout=timeout, errors="replace", check=False)
        if done.returncode != 0 or not os.path.exists(result):
            tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-4:])
            raise RuntimeError(f"fresh process exited with {done.returncode}: {tail}")
        with np.load(result) as saved:
            arrays = [saved[f"a{i}"] for i in range(int(saved["count"]))]
            return float(saved["seconds"]), arrays[0] if saved["single"] else arrays


def first_call_here(key, scale, case_id) -> tuple:
    """(seconds, result) of the first call of `case_id` on system `key` in this process."""
    from .systems import by_key
    from .workloads import build_cases
    case = next(c for c in build_cases(scale, [case_id.split()[0]]) if c.id == case_id)
    system = by_key(key)
    system.load()
    fn = system.build(case)
    start = time.perf_counter()
    got = fn()
    return time.perf_counter() - start, got


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fresh")
    parser.add_argument("--system", required=True)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--case", required=True)
    parser.add_argument("--result", required=True)
    args = parser.parse_args(argv)
    seconds, got = first_call_here(args.system, args.scale, args.case)
    got = to_numpy(got)
    arrays = got if isinstance(got, list) else [got]
    np.savez(args.result, seconds=seconds, count=len(arrays),
             single=not isinstance(got, list), **{f"a{i}": a for i, a in enumerate(arrays)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
