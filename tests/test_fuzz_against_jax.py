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


def _reproducer(body, inputs, dtype="float64"):
    arrays = "\n".join(f"{name} = np.array({value!r}, dtype=np.{dtype})"
                       for name, value in inputs.items())
    names = ", ".join(inputs)
    return (f"import numpy as np\nfrom numpy import inf, nan\n\ndef program({names}):\n"
            f"    return {body}\n\n\ndef f({names}):\n"
            f"    return tf.reduce_sum(program({names}))\n\n{arrays}\n")


@pytest.mark.parametrize("check,body,inputs,reason,modes", [
    # abs' derivative at 0 is 0 in TensorFlow, 1 in JAX; squaring hides the op from
    # attribution, the TensorFlow-conventions reference still explains it
    ("hvp", "tf.abs(x) * tf.abs(x)", {"x": [0.0, 1.5]}, "conventions", ("full", "off")),
    # the vectorized jacobian's closed form (a simplification) is exact where reverse
    # mode's rows give nan; unsimplified, tapec gives their nan too
    ("jacobian", "tf.reshape(x, (1, 1)) @ tf.reshape(y, (1, 2))",
     {"x": 100.0, "y": [0.9426772217828407, float("inf")]}, "vectorized jacobian",
     ("full",)),
])
def test_differences_from_jax_that_follow_tensorflow_are_classified(
        check, body, inputs, reason, modes, simplify_mode):
    from fuzz_against_jax import recheck_reproducer
    source = _reproducer(body, inputs).replace("inf)", "np.inf)")
    group = {"reproducer": source, "dtype": "float64", "kind": "nan-mismatch",
             "check": check}
    found = recheck_reproducer(group)
    if simplify_mode not in modes:
        assert found is None, found
        return
    assert found is not None and found.kind == "documented difference", found
    assert reason in found.reason


def test_agreement_is_not_a_finding():
    from fuzz_against_jax import recheck_reproducer
    source = _reproducer("tf.tanh(x) * y", {"x": [0.5, -2.0], "y": [1.5, 0.0]})
    for check in ("tape", "jacobian", "hvp"):
        group = {"reproducer": source, "dtype": "float64", "kind": "wrong", "check": check}
        assert recheck_reproducer(group) is None
