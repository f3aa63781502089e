"""The benchmark suite: `tapec bench` (or `python -m benchmarks` in the repository).

Workloads W1..W8 (see `workloads.py`) run on tapec's tape path, on a hand-written NumPy
reference, and on every other system that is installed (TensorFlow, JAX, PyTorch, HIPS
autograd; when tapec has `tapec.function`: the TensorFlow body inside it, and tapec's
functional forms). Times are medians over repeats; each system is reported as a ratio to
the NumPy reference measured in the same run. The results are printed and written to
`DIR/benchmarks.md` and `DIR/benchmarks.png`.

    tapec bench                      # full run, writes docs/benchmarks.md and .png
    tapec bench --quick --only W1,W3 --out /tmp/bench
"""
from __future__ import annotations

import argparse
import sys

SYSTEM_KEYS = ("tf-idiom", "function", "tf", "tf.function", "jax", "torch", "autograd")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true",
                        help="fewer, shorter repeats (for tests and smoke runs)")
    parser.add_argument("--out", default="docs", metavar="DIR",
                        help="folder for benchmarks.md and benchmarks.png (default: docs)")
    parser.add_argument("--only", default="", metavar="W1,W3",
                        help="comma-separated workloads to run (default: all)")
    parser.add_argument("--scale", type=float, default=1.0, metavar="S",
                        help="multiply problem sizes by S (e.g. 0.01 for a fast check)")
    parser.add_argument("--systems", default=",".join(SYSTEM_KEYS), metavar="LIST",
                        help="other systems to compare, comma-separated, from "
                             f"{','.join(SYSTEM_KEYS)}; 'none' for tapec and NumPy only")
    parser.add_argument("--threads", type=int, default=None, metavar="N",
                        help="limit every system's thread pools (BLAS, OpenMP, tapec, PyTorch, "
                             "TensorFlow, XLA) to N; default: the libraries' own (all "
                             "cores); 1 is steadier on a busy machine")
    parser.add_argument("--no-plot", action="store_true", help="do not write the PNG")
    parser.add_argument("--no-write", action="store_true",
                        help="print only; write no files")
    parser.add_argument("--profile", default="", metavar="W1,W2",
                        help="also cProfile tapec's steady-state step of these workloads "
                             "(in this process: --threads does not limit it; set "
                             "OPENBLAS_NUM_THREADS yourself)")


def _split(text: str) -> list:
    return [part.strip() for part in text.split(",") if part.strip()]


def run_from_args(args, command: str = "tapec bench") -> int:
    from .suite import run_suite
    systems = [] if args.systems.strip().lower() == "none" else _split(args.systems)
    unknown = [s for s in systems if s not in SYSTEM_KEYS]
    if unknown:
        print(f"unknown system(s) {', '.join(unknown)}; choose from {', '.join(SYSTEM_KEYS)}",
              file=sys.stderr)
        return 2
    only = [w.upper() for w in _split(args.only)]
    try:
        results = run_suite(scale=args.scale, quick=args.quick, only=only, systems=systems,
                            out=None if args.no_write else args.out, plot=not args.no_plot,
                            profile=[w.upper() for w in _split(args.profile)],
                            threads=args.threads,
                            command=command)
    except ValueError as error:
        print(f"tapec bench: {error}", file=sys.stderr)
        return 2
    failed = [row.id for row in results.rows if row.tapec.status in ("error", "wrong")]
    if failed:
        print(f"tapec failed or differed from NumPy on: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def main(argv=None, prog: str = "tapec bench") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    command = " ".join([prog, *(sys.argv[1:] if argv is None else argv)])
    return run_from_args(args, command)


def run(**kwargs):
    """`run_suite(**kwargs)`: the suite as a function (see `suite.run_suite`)."""
    from .suite import run_suite
    return run_suite(**kwargs)
