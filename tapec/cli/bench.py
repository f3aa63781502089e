"""`tapec bench`: run the benchmark suite of a source checkout.

The suite is the `benchmarks` package at the top of the repository, outside the
installed tapec (not in the wheel, not in the compile cache's sources fingerprint). This
module finds it — next to the imported tapec (an editable install or a checkout on the
path), else in the current directory — and hands it the command line. Nothing here is
imported by the other commands.
"""
from __future__ import annotations

import importlib
import pathlib
import sys

NOT_FOUND = ("tapec bench: the benchmark suite is not installed with tapec; it is the "
             "benchmarks/ folder of a source checkout. Run `tapec bench` (or `python -m "
             "benchmarks`) inside a checkout, or install one with `pip install -e .`")


def checkout_roots() -> list[pathlib.Path]:
    """Where a checkout holding benchmarks/ may be, in the order they are tried: the
    folder above the imported tapec package, then the current directory."""
    import tapec
    above = pathlib.Path(tapec.__file__).resolve().parent.parent
    here = pathlib.Path.cwd().resolve()
    return [above] if above == here else [above, here]


def find_root() -> pathlib.Path | None:
    """The first of `checkout_roots()` with a benchmarks/ suite in it, or None. The suite
    is recognized by its files, so an unrelated `benchmarks` folder is passed over."""
    for root in checkout_roots():
        folder = root / "benchmarks"
        if all((folder / name).is_file() for name in ("__init__.py", "suite.py",
                                                      "workloads.py")):
            return root
    return None


def load(root: pathlib.Path):
    """The `benchmarks` package of `root`, imported from there (ahead of any other
    `benchmarks` on the path)."""
    sys.path.insert(0, str(root))
    try:
        module = importlib.import_module("benchmarks")
    finally:
        sys.path.remove(str(root))
    found = pathlib.Path(module.__file__).resolve().parent
    if found != root / "benchmarks":       # imported earlier from elsewhere
        raise ImportError(f"`benchmarks` was already imported from {found}")
    return module


def main(argv: list[str], usage: str) -> int:
    """Run the suite with the options `argv`; `usage` is printed for --help when no
    checkout is found. Returns the exit status."""
    root = find_root()
    if root is None:
        if "-h" in argv or "--help" in argv:
            print(usage)
            print(NOT_FOUND)
            return 0
        print(NOT_FOUND, file=sys.stderr)
        return 2
    try:
        suite = load(root)
    except ImportError as error:
        print(f"tapec bench: cannot import the suite of {root}: {error}", file=sys.stderr)
        return 2
    return suite.main(argv, prog="tapec bench")
