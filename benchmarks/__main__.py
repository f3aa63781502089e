"""`python -m benchmarks [options]`: run the suite (see `python -m benchmarks --help`)."""
import sys

from . import main

sys.exit(main(prog="python -m benchmarks"))
