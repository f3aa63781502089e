"""Graph mode on random programs (tests/fuzz_graph_mode.py, built on fuzz_programs.py).

  (h) a training step (GradientTape, gradients, Variable updates: assign / assign_add /
      assign_sub, momentum-style slots, reads after writes, a counter) run inside
      `tf.function`, and as plain Python calling the tf.functions it has inside, gives
      the plain eager step's results at every call and its final Variables;
  (h, traces) the tf.function of the step traces once for same-shaped calls (once per
      side of a warmup `if`), and a tf.function inside the step no more often;
  (i) compositions of `tf.grad`, `tf.value_and_grad`, `tf.jacobian`, `tf.hessian`,
      `tf.function` and GradientTapes, up to order 3, equal the same derivative
      computed with plain nested eager tapes, at the point they were traced on and at
      another one (a replay; held Variables and arguments change too);
  (i, traces) each tf.function stage of a composition traces once for same-shaped
      calls, wherever it is called from (once per side of a branch);
  (j) the same compositions equal central finite differences of the next-lower
      derivative (computed with nested tapes), away from kinks and branches.

The semantics checked are TensorFlow's and JAX's: `tf.grad(tf.grad(f))` is f'', a tape
around `tf.grad(f)(x)` differentiates the gradient, Variable writes inside a
`tf.function` happen once per call, in program order, and a tf.function traces once
per input signature, whether it is called eagerly, under a GradientTape or inside
another trace.

A failure shrinks to a minimal program and composition (or step); the message holds a
standalone reproducer. 25 examples per check, derandomized, as test_fuzz.py;
`TAPEC_FUZZ_EXAMPLES=500 python -m pytest tests/test_fuzz_graph_mode.py` is the long
run with random examples (docs/fuzzing.md).
"""
import math
from contextlib import contextmanager

import numpy as np
from hypothesis import given, reject
from hypothesis.errors import UnsatisfiedAssumption

import tapec as tf
from fuzz_graph_mode import BRANCH_MARGIN, compositions, train_steps
from helpers import fd
from test_fuzz import FD_STEP, FUZZ, SEEDS, assert_close, inputs_away_from_kinks, scale

CALLS = 6               # calls of each training step (the first traces)


@contextmanager
def reported(check, reproducer):
    """Turn any failure into an AssertionError that carries a standalone reproducer
    (`reproducer()` builds its text; hypothesis's own exceptions pass through)."""
    try:
        yield
    except UnsatisfiedAssumption:
        raise
    except Exception as error:
        raise AssertionError(f"{check}: {type(error).__name__}: {error}\n\n"
                             f"Reproducer:\n{reproducer()}") from error


def arrays_of(result):
    """A step's result (a tensor or a tuple of them) as a list of NumPy arrays."""
    parts = result if isinstance(result, (tuple, list)) else (result,)
    assert all(p is not None for p in parts), f"a result is None: {parts}"
    return [np.asarray(p.numpy()) for p in parts]


def tracing_count(function):
    """How many times a tf.function traced: TF's experimental_get_tracing_count() when
    tapec has it, else its trace_count."""
    method = getattr(function, "experimental_get_tracing_count", None)
    return method() if method is not None else function.trace_count


# ---------------------------------------------------------------------- (h) train steps


def run_steps(step, variables, feeds, fn):
    """The results of calling `fn` (the step, or a tf.function of it) once per feed."""
    results = []
    for data, lr in feeds:
        results.append(arrays_of(step.call(fn, variables, data, lr)))
        step.between_calls(variables)
    return results


def assert_same_run(step, results, variables, expected, final, what):
    """Results and final Variables of a run equal the reference run's."""
    for k, (got, want) in enumerate(zip(results, expected)):
        assert len(got) == len(want), f"{what}, call {k}: {len(got)} results, eager {len(want)}"
        for j, (g, w) in enumerate(zip(got, want)):
            assert_close(g, w, 1e-9, 1e-12 * scale(w), f"{what}, call {k}, result {j}")
    for name, v, w in zip(step.all_variable_names, variables, final):
        assert_close(v.numpy(), w, 1e-9, 1e-12 * scale(w), f"{what}, Variable {name} at the end")


def eager_reference(step, initial, feeds):
    """(results, final Variables) of the plain step run eagerly; rejects a diverging run."""
    variables = step.plain.make_variables(initial)
    results = run_steps(step.plain, variables, feeds, step.plain.bind(variables)[0])
    final = [v.numpy() for v in variables]
    if not all(np.all(np.isfinite(a)) for a in final + [a for r in results for a in r]):
        reject()                        # diverged: nothing to compare
    return results, final


def run_variants(step, initial, feeds):
    """{name: (results, Variables, the tf.function or None, the tapec.functions inside)}:
    the step inside tf.function and, when it has tapec.functions inside, also called as
    plain Python."""
    runs = {}
    for name in ("tf.function", "called eagerly"):
        if name == "called eagerly" and step.plain == step:
            break
        variables = step.make_variables(initial)
        fn, inner = step.bind(variables)
        traced = tf.function(fn) if name == "tf.function" else None
        results = run_steps(step, variables, feeds, traced or fn)
        runs[name] = (results, variables, traced, inner)
    return runs


@FUZZ
@given(step=train_steps(), seed=SEEDS)
def test_train_step_in_function_matches_eager(step, seed):
    """The step traced by tf.function (and, when the step has tapec.functions inside,
    also called as plain Python) equals the plain step run eagerly: the same results
    at every call, the same Variables at the end."""
    initial = step.initial_values(seed)
    feeds = step.feeds(seed, CALLS)

    def reproducer():
        return step.reproducer(initial, feeds)

    with reported("(h) the eager training step", reproducer):
        expected, final = eager_reference(step, initial, feeds)
    with reported("(h) training step in tf.function vs eager", reproducer):
        for name, (results, variables, _, _) in run_variants(step, initial, feeds).items():
            assert_same_run(step, results, variables, expected, final, name)


@FUZZ
@given(step=train_steps(), seed=SEEDS)
def test_train_step_traces_once(step, seed):
    """tf.function of the step traces once for same-shaped calls (twice with a warmup
    branch, a guard), and a tf.function inside it no more often, whether the step is
    traced or called as plain Python (TensorFlow: calling a tf.function under a
    GradientTape or inside another trace does not trace it again)."""
    initial = step.initial_values(seed)
    feeds = step.feeds(seed, CALLS)
    with reported("(h) training step traces", lambda: step.reproducer(initial, feeds)):
        for name, (_, _, traced, inner) in run_variants(step, initial, feeds).items():
            if traced is None:
                traces = step.max_traces   # the step is plain Python: a warmup rate is a
            else:                          # new Python number for an inner function
                traces = tracing_count(traced)
                assert 1 <= traces <= step.max_traces, \
                    f"{name}: traced {traces} times for {CALLS} same-shaped calls"
            for f in inner:
                assert tracing_count(f) <= traces, \
                    f"{name}: {f.__name__} inside the step traced {tracing_count(f)} " \
                    f"times for {CALLS} same-shaped calls"


# ---------------------------------------------------------------------- (i), (j) compositions


def nested_tapes(fn, x, directions, free):
    """D^k fn(x) contracted with `directions`, with `free` indices open, by plain
    nested eager tapes: each level differentiates the one inside it, contracting the
    gradient with the next direction (a scalar again) and then, for the free indices,
    `gradient` of the scalar and `jacobian` of what follows."""
    x = tf.constant(x)
    ops = [("contract", u) for u in directions] + [("free", None)] * free

    def level(k):
        if k == 0:
            return fn(x)
        kind, u = ops[k - 1]
        with tf.GradientTape() as tape:
            tape.watch(x)
            inner = level(k - 1)
        if inner.shape.rank == 0 or kind == "contract":
            d = tape.gradient(inner, x, unconnected_gradients="zero")
        else:
            d = tape.jacobian(inner, x, unconnected_gradients="zero")
        return tf.reduce_sum(d * tf.constant(u)) if kind == "contract" else d

    return np.asarray(level(len(ops)).numpy())


def composition_case(composition, seed):
    """(the two (point, fixed inputs) pairs, the directions, one more direction for the
    finite differences), from inputs away from kinks. The fixed inputs change at the
    second point when they are Variables or arguments."""
    arrays = inputs_away_from_kinks(composition.program, seed)
    other = composition.program.inputs((seed + 1) % 2 ** 32)
    wrt = composition.wrt
    fixed = [a for i, a in enumerate(arrays) if i != wrt]
    fixed_b = [a for i, a in enumerate(other) if i != wrt] if composition.changes_fixed \
        else fixed
    rng = np.random.default_rng((seed + 12345) % 2 ** 32)
    directions = [rng.uniform(-1.0, 1.0, composition.shape)
                  for _ in range(composition.n_directions + 1)]
    return [(arrays[wrt], fixed), (other[wrt], fixed_b)], directions[:-1], directions[-1]


def contract_last(array, w):
    """`array`'s last index block (w's shape) contracted with w."""
    return np.tensordot(array, w, axes=w.ndim)


@FUZZ
@given(composition=compositions(), seed=SEEDS)
def test_composition_matches_nested_tapes(composition, seed):
    """The composition, called on the point it traces on and then on another one (the
    held Variables or arguments changed too), equals nested eager tapes there."""
    points, directions, _ = composition_case(composition, seed)
    state = composition.result
    used = [directions[n - 1] for n in state.directions]
    with reported("(i) composition vs nested eager tapes",
                  lambda: composition.reproducer(points, directions)):
        env = composition.namespace(points[0][1], directions)
        for where, (x, fixed) in zip(("traced", "replayed"), points):
            got = composition.call(env, x, fixed)
            assert got is not None, f"{where}: the composition returned None"
            expected = nested_tapes(composition.scalar_function(fixed), x, used, state.free)
            assert_close(got.numpy(), expected, 1e-9, 1e-11 * scale(expected),
                         f"{where} at {composition.parameter} = {x.tolist()}")


@FUZZ
@given(composition=compositions(with_function=True), seed=SEEDS)
def test_composition_traces_once(composition, seed):
    """Every tf.function stage traces once for calls of the same shapes, wherever it is
    called from (TensorFlow: a tf.function called under a GradientTape, or while
    another function traces, does not trace again). With a branch, once per side."""
    points, directions, _ = composition_case(composition, seed)
    stages = composition.function_stages
    with reported("(i) tf.function stages trace once",
                  lambda: composition.reproducer(points, directions) +
                  f"\nprint({', '.join(f'{h}.trace_count' for h in stages)})"):
        env = composition.namespace(points[0][1], directions)
        for x, fixed in points:
            composition.call(env, x, fixed)
        sides = len({np.sum(x) > 0 for x, _ in points}) if composition.branch else 1
        counts = {h: tracing_count(env[h]) for h in stages}
        assert all(c <= sides for c in counts.values()), \
            f"traces for {len(points)} same-shaped calls: {counts}"


def finite_difference(fn, x, w):
    """d/dt fn(x + t w) at t = 0, the 5-point central stencil (fn returns an array)."""
    return fd.directional(fn, x, w, FD_STEP, points=5)


@FUZZ
@given(composition=compositions(), seed=SEEDS)
def test_composition_matches_finite_differences(composition, seed):
    """The order-k result, with one free index (or its last direction) taken along a
    direction w, is the derivative along w of the order k-1 quantity."""
    points, directions, w = composition_case(composition, seed)
    x, fixed = points[0]
    if composition.branch_margin(x) < BRANCH_MARGIN:
        reject()                        # the stencil would straddle the branch
    state = composition.result
    fn = composition.scalar_function(fixed)
    used = [directions[n - 1] for n in state.directions]
    with reported("(j) composition vs finite differences of the next-lower order",
                  lambda: composition.reproducer(points[:1], directions)):
        got = composition.call(composition.namespace(fixed, directions), x, fixed)
        assert got is not None, "the composition returned None"
        got = np.asarray(got.numpy())
        assert got.shape == composition.shape * state.free, \
            f"shape {got.shape}, expected {composition.shape * state.free}"
        if state.free:
            along, lower, free = w, used, state.free - 1
            got = contract_last(got, w)
        else:
            along, lower, free = used[-1], used[:-1], 0
        expected = finite_difference(lambda p: nested_tapes(fn, p, lower, free), x, along)
        assert math.isfinite(float(np.sum(expected)))
        assert_close(got, expected, 1e-5, 1e-6 * scale(expected),
                     f"order {state.order} along a direction vs finite differences")
