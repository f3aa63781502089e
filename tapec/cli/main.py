"""The `tapec` command: demo, latex, export, graph, bench.

Exit status: 0 on success; 2 for a problem with the command line (one line on stderr);
1 when `bench` finds tapec failing or differing from NumPy; 141 (128 + SIGPIPE, what a
shell reports for a Unix tool killed by SIGPIPE) when the reader of stdout went away,
as in `tapec demo | head -1`, with nothing printed on stderr.
"""
from __future__ import annotations

import argparse
import os
import sys

EXIT_BROKEN_PIPE = 128 + 13        # 13 is SIGPIPE on every POSIX system

_TARGET_HELP = "the function to record, as FILE.py:FUNC"
_ARG_HELP = ("one per parameter of FUNC: NAME=DTYPE[DIMS] (e.g. x=float64[3], "
             "A=float32[2,3], s=float64[]; for export a dimension may be None, any size: "
             "X=float64[None,5]) or NAME=NUMBER")


def _with_target(parser, wrt_default):
    """FUNC, its example arguments, and the parameters to differentiate with respect to."""
    parser.add_argument("target", help=_TARGET_HELP)
    parser.add_argument("--arg", action="append", default=[], metavar="NAME=SPEC",
                        help=_ARG_HELP)
    if wrt_default is not None:
        parser.add_argument("--wrt", action="append", metavar="NAME",
                            help="differentiate with respect to this parameter (repeatable"
                                 f"; default: {wrt_default})")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run `tapec ARGV` (sys.argv[1:] by default); returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="tapec", description="GradientTape with a symbolic differentiation compiler.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("demo", help="run the GradientTape examples and show generated code",
                        description="Run the GradientTape examples of the TensorFlow "
                                    "documentation, a training loop, and show the generated "
                                    "NumPy code and the cache statistics.")
    latex = _with_target(commands.add_parser(
        "latex", help="print FUNC and its derivative as LaTeX",
        description="Record FUNC on example arguments and print its value and its "
                    "derivative as LaTeX."), "every tensor parameter")
    export = _with_target(commands.add_parser(
        "export", help="write a standalone NumPy module with FUNC and its gradient",
        description="Trace FUNC on example arguments and write one .py file that needs only "
                    "NumPy: the function, its gradient and value_and_grad."),
        "the first parameter, as tapec.export; the gradient's results follow this order")
    export.add_argument("-o", "--output", required=True, metavar="OUT.py")
    graph = _with_target(commands.add_parser(
        "graph", help="draw the recorded DAG and its simplified gradient",
        description="Write the recorded DAG and the simplified gradient DAG as DOT; SVG or "
                    "PNG through Graphviz (`dot`) or matplotlib when installed."), None)
    graph.add_argument("-o", "--output", required=True, metavar="OUT.dot|OUT.svg|OUT.png")
    # The suite is not imported here: its options are parsed by benchmarks/ itself.
    bench = commands.add_parser(
        "bench", add_help=False, usage="tapec bench [OPTIONS]",
        help="run the benchmark suite of a source checkout (benchmarks/); writes "
             "benchmarks.md and .png into --out DIR (default: the checkout's docs/)",
        description="Workloads W1..W11 on tapec, hand-written NumPy and the other "
                    "installed systems (TensorFlow, JAX, PyTorch, autograd). Needs a source "
                    "checkout: the suite is benchmarks/, not part of the installed package.")
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "bench":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        status = _run(parser, args, extra, bench.format_help())
        sys.stdout.flush()          # a pipe closed early fails here, inside the handler
    except BrokenPipeError:
        return _broken_pipe()
    return status


def _run(parser, args, extra, bench_usage) -> int:
    """Run the parsed command; its exit status."""
    if args.version:
        from .._version import __version__
        print(f"tapec {__version__}")
        return 0
    if args.command == "demo":
        from . import demo
        return demo.main()
    if args.command == "bench":
        from . import bench
        return bench.main(extra, bench_usage)
    if args.command in ("latex", "export", "graph"):
        from . import commands as run
        try:
            if args.command == "latex":
                print(run.latex_command(args.target, args.arg, args.wrt))
            elif args.command == "export":
                print(run.export_command(args.target, args.arg, args.output, args.wrt))
            else:
                print(run.graph_command(args.target, args.arg, args.output))
        except run.UsageError as e:
            print(f"tapec {args.command}: {e}", file=sys.stderr)
            return 2
        return 0
    parser.print_help()
    return 2


def _broken_pipe() -> int:
    """Exit quietly after stdout's reader went away (`tapec demo | head -1`): point
    stdout at /dev/null so the interpreter's final flush of what is still buffered
    cannot raise again, and return 128 + SIGPIPE as a Unix tool killed by it would."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):       # stdout without a file descriptor (a test's)
        pass
    return EXIT_BROKEN_PIPE


if __name__ == "__main__":
    sys.exit(main())
