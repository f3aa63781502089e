"""The benchmark suite, outside the tapec package: `python -m benchmarks` from a source
checkout (or `tapec bench`, which runs this package when it finds it).

Workloads W1..W11 (see `workloads.py`; the training loops W9 and W10 in `training.py`)
run on tapec's tape path, on a hand-written NumPy reference, and on every other system
that is installed (TensorFlow, JAX, PyTorch, HIPS autograd; when tapec has
`tapec.function`: the TensorFlow body inside it, and tapec's functional forms). Times are
medians over repeats; each system is reported as a ratio to the NumPy reference measured
in the same run. W11 times the first gradient in fresh processes (`fresh.py`); the
report's target tables are in `targets.py`. The results are printed and written to
`DIR/benchmarks.md` and `DIR/benchmarks.png`, DIR given by `--out` (default: the `docs/`
folder of the checkout holding this package, whatever the current directory).

    python -m benchmarks                                 # full run, refreshes docs/
    python -m benchmarks --quick --only W1,W3 --out /tmp/bench
    python -m benchmarks --quick --scale 0.05 --only W7,W9,W10,W11 --no-write

The package lives outside `tapec/` so that it is not in the wheel and not in the
sources fingerprint of the persistent compile cache: editing a benchmark leaves cached
gradients valid.
"""
from __future__ import annotations

import argparse
import os
import sys

SYSTEM_KEYS = ("tf-idiom", "function", "tf", "tf.function", "jax", "torch", "autograd")
DEFAULT_OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true",
                        help="fewer, shorter repeats (for tests and smoke runs)")
    parser.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                        help="folder to write benchmarks.md and benchmarks.png into "
                             "(created if missing; default: the checkout's docs/, "
                             f"{DEFAULT_OUT})")
    parser.add_argument("--only", default="", metavar="W1,W3",
                        help="comma-separated workloads to run (default: all; any case, "
                             "W7 selects W7a and W7b)")
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


def run_from_args(args: argparse.Namespace, command: str = "python -m benchmarks",
                  prog: str = "python -m benchmarks") -> int:
    """Run the suite as the parsed options ask: 0; 2 for bad options; 1 when tapec failed
    or differed from NumPy. `command` is the command line the report quotes, `prog` the
    name that prefixes error messages."""
    from .suite import run_suite
    systems = [] if args.systems.strip().lower() == "none" else _split(args.systems)
    unknown = [s for s in systems if s not in SYSTEM_KEYS]
    if unknown:
        print(f"{prog}: unknown system(s) {', '.join(unknown)}; choose from "
              f"{', '.join(SYSTEM_KEYS)}", file=sys.stderr)
        return 2
    only = [w.upper() for w in _split(args.only)]
    try:
        results = run_suite(scale=args.scale, quick=args.quick, only=only, systems=systems,
                            out=None if args.no_write else args.out, plot=not args.no_plot,
                            profile=[w.upper() for w in _split(args.profile)],
                            threads=args.threads,
                            command=command)
    except ValueError as error:
        print(f"{prog}: {error}", file=sys.stderr)
        return 2
    failed = [row.id for row in results.rows if row.tapec.status in ("error", "wrong")]
    if failed:
        print(f"tapec failed or differed from NumPy on: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None, prog: str = "python -m benchmarks") -> int:
    """The command line of the suite (`python -m benchmarks`, `tapec bench`)."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    command = " ".join([prog, *(sys.argv[1:] if argv is None else argv)])
    return run_from_args(args, command, prog)


def run(**kwargs):
    """`run_suite(**kwargs)`: the suite as a function (see `suite.run_suite`)."""
    from .suite import run_suite
    return run_suite(**kwargs)
