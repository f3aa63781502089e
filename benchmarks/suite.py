"""Run the workloads on every system, check results, print and write the report.

Each system, tapec included, is measured in a process of its own (`worker.py`): no
framework's thread pools run beside another's, and `--threads` can limit them all
through the environment they read when they load. Each system's repeats are
interleaved with repeats of the NumPy reference in its process.
"""
from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time

from . import DEFAULT_OUT, report
from .report import Cell, Results, Row
from .systems import SYSTEMS, TAPEC
from .workloads import DESCRIPTIONS, build_cases

_CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ALL_SYSTEMS = tuple(s.key for s in SYSTEMS)


def run_suite(*, scale=1.0, quick=False, only=None, systems=ALL_SYSTEMS, out=DEFAULT_OUT,
              plot=True, profile=(), isolate=True, threads=None, log=print,
              command="python -m benchmarks") -> Results:
    """Measure the selected workloads; write `benchmarks.md` (and `benchmarks.png` when
    `plot` and matplotlib is installed) under `out` unless `out` is None.

    `isolate` measures each system, tapec included, in a subprocess of its own (in this
    process when False). `threads` limits every system's thread pools (BLAS, OpenMP,
    PyTorch, TensorFlow, XLA) in those subprocesses; None leaves the libraries'
    defaults (all cores)."""
    cases = build_cases(scale, only)
    machine = report.machine()
    if machine["load"] != "unknown" and float(machine["load"]) > 0.5 * machine["nproc"]:
        log(f"note: load average {machine['load']} on {machine['nproc']} cores: other "
            "processes compete for the CPU; expect noisy times (ratios are paired; "
            "--threads 1 keeps multi-threaded BLAS from stalling)")
    if threads and not isolate:
        log("note: --threads only applies to isolated (subprocess) measurements")
    only = list(only) if only else None
    runner = _run_worker if isolate else _run_here

    def run(key, ids=None):
        return runner(key, scale, quick, only, ids, threads, log)
    selected = [TAPEC] + [s for s in SYSTEMS if s.key in systems]
    outcomes = {system.key: run(system.key) for system in selected}
    noisy = _remeasure_noisy(outcomes, run, log)
    problems = []
    for system in selected:
        outcome = outcomes[system.key]
        problems.extend(outcome.get("problems", []))
        if outcome.get("error"):
            log(f"skipping {system.label}: {outcome['error']}")
            if system is TAPEC:
                problems.append(f"tapec: {outcome['error']}")
    problems += [f"{cid} / {key}: still noisy after re-measuring (its NumPy reference ran "
                 f"{factor:.1f}x slower than the fastest; a busy machine)"
                 for (key, cid), factor in noisy.items()]
    rows = []
    for case in cases:
        cell = _cell(outcomes[TAPEC.key], case.id, "error", (TAPEC.key, case.id) in noisy)
        rows.append(Row(case.id, case.workload, case.title, Cell(cell.reference), cell,
                        first_call=case.first_call, params=case.params))
    labels, versions, notes = [], {}, {}
    for system in selected[1:]:
        labels.append(system.label)
        notes[system.label] = system.note
        outcome = outcomes[system.key]
        versions[system.label] = outcome.get("error") or outcome.get("version")
        for row in rows:
            row.others[system.label] = _cell(outcome, row.id, "n/a",
                                             (system.key, row.id) in noisy)
    results = Results(rows, labels, versions, notes, problems,
                      {"scale": scale, "quick": quick, "command": command, "threads": threads,
                       "machine": machine, "load_end": report.load_average()})
    log("")
    log(report.text_table(results))
    for problem in problems:
        log(f"problem: {problem}")
    for key in profile:
        _profile(key, cases, log)
    if out is not None:
        os.makedirs(out, exist_ok=True)
        md = os.path.join(out, "benchmarks.md")
        with open(md, "w", encoding="utf-8") as f:
            f.write(report.markdown(results, DESCRIPTIONS))
        log(f"wrote {md}")
        if plot:
            png = os.path.join(out, "benchmarks.png")
            note = report.plot(results, png)
            log(note if note else f"wrote {png}")
    return results


def _cell(outcome, case_id, missing, noisy) -> Cell:
    seconds, status, reference, *info = outcome.get("cells", {}).get(
        case_id, (None, missing, None))
    return Cell(seconds, "noisy" if noisy and not status else status, reference,
                dict(info[0]) if info else {})


#: A measurement is re-taken when the NumPy reference timed alongside it ran this many
#: times slower than the fastest NumPy time of the same case in any process.
NOISE = 2.5


def _remeasure_noisy(outcomes, run, log, rounds=2) -> dict:
    """Re-take measurements whose NumPy reference shows a busy spell of the machine
    (multi-threaded BLAS stalls for tens of ms when a core is taken away); keep the
    take with the fastest reference. Returns {(system key, case id): factor} of those
    still noisy."""
    def noisy():
        best = {}
        for outcome in outcomes.values():
            for cid, (_, _, ref, *_) in outcome.get("cells", {}).items():
                if ref:
                    best[cid] = min(ref, best.get(cid, ref))
        found = {}
        for key, outcome in outcomes.items():
            for cid, (_, _, ref, *_) in outcome.get("cells", {}).items():
                if ref and ref > NOISE * best[cid]:
                    found[key, cid] = ref / best[cid]
        return found

    for _ in range(rounds):
        found = noisy()
        if not found:
            break
        for key in dict.fromkeys(k for k, _ in found):
            ids = [cid for k, cid in found if k == key]
            log(f"re-measuring {key} on {', '.join(ids)}: the NumPy reference alongside "
                f"ran > {NOISE}x slower than its fastest time (a busy spell)")
            cells = outcomes[key]["cells"]
            for cid, cell in run(key, ids).get("cells", {}).items():
                if cell[2] and cell[2] < cells[cid][2]:
                    cells[cid] = cell
    return noisy()


def _run_here(key, scale, quick, only, ids, threads, log) -> dict:
    from .worker import measure_system
    return measure_system(key, scale, quick, only, log, ids)


def _run_worker(key, scale, quick, only, ids, threads, log) -> dict:
    """Run `python -m benchmarks.worker` for one system; echo its progress lines."""
    with tempfile.TemporaryDirectory(prefix="tapec-bench-") as folder:
        result = os.path.join(folder, "result.json")
        argv = [sys.executable, "-m", "benchmarks.worker", "--system", key,
                "--scale", repr(scale), "--result", result]
        argv += ["--quick"] if quick else []
        argv += ["--only", ",".join(only)] if only else []
        argv += ["--cases", ",".join(ids)] if ids else []
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
        env["PYTHONPATH"] = _worker_path(env.get("PYTHONPATH", ""))
        if threads:
            env.update(_thread_limits(threads, env.get("XLA_FLAGS", "")))
        other = []
        with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, env=env, errors="replace", cwd=folder) as process:
            for line in process.stdout:
                if line.startswith("bench: "):
                    log("  " + line[len("bench: "):].rstrip())
                else:
                    other.append(line.rstrip())
        if os.path.exists(result):
            with open(result, encoding="utf-8") as f:
                return json.load(f)
    tail = " | ".join(other[-5:])
    return {"error": f"error (worker exited with {process.returncode}: {tail})",
            "problems": [f"{key}: worker exited with {process.returncode}: {tail}"]}


def _worker_path(pythonpath: str) -> str:
    """PYTHONPATH for a worker: the caller's, then the folders holding the tapec this
    process imported and this benchmarks package. The worker runs in an empty folder, so
    `python -m` puts no checkout first: it measures the same tapec as this process."""
    import tapec
    tapec_parent = os.path.dirname(os.path.dirname(os.path.abspath(tapec.__file__)))
    return os.pathsep.join(p for p in (pythonpath, tapec_parent, _CHECKOUT) if p)


def _thread_limits(threads: int, xla_flags: str) -> dict:
    """Environment that limits BLAS, OpenMP and the frameworks to `threads` threads
    (read when the libraries load, hence only for subprocesses)."""
    n = str(threads)
    env = {name: n for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
                                "TAPEC_NUM_THREADS", "TAPEC_BENCH_THREADS")}
    if threads == 1:
        env["XLA_FLAGS"] = (xla_flags + " --xla_cpu_multi_thread_eigen=false "
                            "intra_op_parallelism_threads=1").strip()
    return env


def _profile(key, cases, log, seconds=2.0, top=20):
    """cProfile the tapec steady-state step of the cases of workload `key`."""
    for case in cases:
        if case.workload.lower() != key.lower() or case.first_call:
            continue
        case.tapec(*case.tapec_args)
        profiler = cProfile.Profile()
        calls, start = 0, time.perf_counter()
        profiler.enable()
        while time.perf_counter() - start < seconds or calls == 0:
            case.tapec(*case.tapec_args)
            calls += 1
        profiler.disable()
        stream = io.StringIO()
        stats = pstats.Stats(profiler, stream=stream)
        stats.sort_stats("tottime").print_stats(top)
        log(f"\nprofile of tapec {case.id} ({calls} calls, sorted by own time):")
        log(stream.getvalue())
