"""tapec against JAX on the same random programs (tests/fuzz_against_jax.py).

Runs where JAX is installed (`pip install -e ".[dev]"`); skipped elsewhere (CI installs
only [test]). The same 20 programs every run (derandomized), in float64 and float32, on
inputs holding singular points (0, -0, +-inf, nan, -200, -1000, 100, ties): tapec's eager
value, tape gradient, tf.grad, tf.function (of the program and of a tape gradient, each
called twice on different inputs), tape.jacobian and a Hessian-vector product from nested
tapes, each against JAX. A mismatch fails with a standalone reproducer, isolated to the
op that causes it. `python tests/fuzz_against_jax.py --programs 2000` is the long run
(docs/fuzzing.md).
"""
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

pytest.importorskip("jax")

from fuzz_against_jax import FAILURES, Tally  # noqa: E402
from fuzz_programs import programs  # noqa: E402

PROGRAMS = 20

# (check, op) -> why it still fails. Each entry is an open tapec bug found by this fuzzer
# (docs/fuzzing.md, "Differential fuzzing against JAX"); remove it when the bug is fixed.
KNOWN_OPEN = {}


def _collect(tally):
    @settings(max_examples=PROGRAMS, derandomize=True, deadline=None, database=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(program=programs(max_steps=8), input_seed=st.integers(0, 2 ** 31))
    def each(program, input_seed):
        tally.add(program, input_seed)
    each()


def test_random_programs_match_jax(simplify_mode):
    tally = Tally()
    _collect(tally)           # under the ambient simplify mode (conftest: full, off)
    assert tally.programs == PROGRAMS
    summary = tally.summary()
    failures = [g for g in summary["groups"] if g["kind"] in FAILURES + ("harness",)]
    open_ = [g for g in failures if (g["check"], g["op"]) in KNOWN_OPEN]
    unexpected = [g for g in failures if g not in open_]
    assert not unexpected, "\n\n".join(
        f"{g['kind']} in {g['check']} ({g['dtype']}), op {g['op']}, {g['count']} "
        f"program(s); reproducer:\n{g['reproducer']}" for g in unexpected)
    if open_:
        pytest.xfail("known open: " + "; ".join(
            f"{g['check']}/{g['op']}: {KNOWN_OPEN[g['check'], g['op']]}" for g in open_))
