"""The `tapec` command: demo, latex, export, graph, bench."""
from __future__ import annotations

import argparse
import sys

_TARGET_HELP = "the function to record, as FILE.py:FUNC"
_ARG_HELP = ("one per parameter of FUNC: NAME=DTYPE[DIMS] (e.g. x=float64[3], "
             "A=float32[2,3], s=float64[]) or NAME=NUMBER")


def _with_target(parser):
    parser.add_argument("target", help=_TARGET_HELP)
    parser.add_argument("--arg", action="append", default=[], metavar="NAME=SPEC",
                        help=_ARG_HELP)
    return parser


def main(argv=None) -> int:
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
                    "derivative as LaTeX."))
    latex.add_argument("--wrt", action="append", metavar="NAME",
                       help="differentiate with respect to this parameter (repeatable; "
                            "default: every tensor parameter)")
    export = _with_target(commands.add_parser(
        "export", help="write a standalone NumPy module with FUNC and its gradient",
        description="Trace FUNC on example arguments and write one .py file that needs only "
                    "NumPy: the function, its gradient and value_and_grad."))
    export.add_argument("-o", "--output", required=True, metavar="OUT.py")
    graph = _with_target(commands.add_parser(
        "graph", help="draw the recorded DAG and its simplified gradient",
        description="Write the recorded DAG and the simplified gradient DAG as DOT; SVG or "
                    "PNG through Graphviz (`dot`) or matplotlib when installed."))
    graph.add_argument("-o", "--output", required=True, metavar="OUT.dot|OUT.svg|OUT.png")
    from .. import bench
    bench.add_arguments(commands.add_parser(
        "bench", help="run the benchmark suite; write docs/benchmarks.md and .png",
        description="Workloads W1..W8 on tapec, hand-written NumPy and the other "
                    "installed systems (TensorFlow, JAX, PyTorch, autograd)."))
    args = parser.parse_args(argv)
    if args.version:
        from .._version import __version__
        print(f"tapec {__version__}")
        return 0
    if args.command == "demo":
        from . import demo
        return demo.main()
    if args.command == "bench":
        return bench.run_from_args(args, " ".join(["tapec", *(sys.argv[1:] if argv is None
                                                             else argv)]))
    if args.command in ("latex", "export", "graph"):
        from . import commands as run
        try:
            if args.command == "latex":
                print(run.latex_command(args.target, args.arg, args.wrt))
            elif args.command == "export":
                print(run.export_command(args.target, args.arg, args.output))
            else:
                print(run.graph_command(args.target, args.arg, args.output))
        except run.UsageError as e:
            print(f"tapec {args.command}: {e}", file=sys.stderr)
            return 2
        return 0
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
