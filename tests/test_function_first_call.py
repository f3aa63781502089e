"""A derivative taken inside a trace joins the trace as a graph (tracing/splice.py).

`tape.gradient` inside `tf.function`, and a tapec.function called inside another, used
to be evaluated op by op through the public ops so the trace recorded each op. They
are now spliced: the values are computed with the ops' NumPy implementations and the
trace records one node per tensor Python gets back, whose IR the trace's lowering
builds. The program must be the one op by op recording made: the same generated
source and bit-identical results, guards, Variable writes and trace counts. A tape
that differentiates the derivative again (nested tapes) still records it op by op.
"""
import contextlib
import re

import numpy as np
import pytest

import tapec as tf
from tapec.tracing import recorder
from tapec.tracing.calls import Call
from tapec.tracing.splice import SPLICED

RNG = np.random.default_rng(11)


@contextlib.contextmanager
def op_by_op(monkeypatch):
    """Traces record derivatives through the public ops, as before splicing."""
    with monkeypatch.context() as patch:
        patch.setattr(recorder, "_splicing_tracer", lambda order, fed: None)
        yield


def traced(fn, *args):
    """The tracing tape of one trace of `fn` on `args`."""
    function = tf.function(fn)
    tape, _, _ = function._record(Call(args, {}, function._parameters))
    return tape


def run_both(monkeypatch, make, calls):
    """Results of `calls` (argument tuples) on a fresh tf.function from `make()`, spliced
    and op by op, with the generated sources and trace counts."""
    import sympy  # noqa: F401  (both runs fuse from their first compile on)
    outcomes = []
    for splice in (True, False):
        tf.clear_cache()
        with contextlib.ExitStack() as stack:
            if not splice:
                stack.enter_context(op_by_op(monkeypatch))
            splices = stack.enter_context(counted_splices(monkeypatch))
            f, state = make()
            results = [_arrays(f(*args)) for args in calls]
            source = f.source(*calls[0])
            outcomes.append((results, source, f.experimental_get_tracing_count(),
                             [v.numpy() for v in state]))
            assert bool(splices) == splice
    return outcomes


@contextlib.contextmanager
def counted_splices(monkeypatch):
    """A list that gets an entry per splice made."""
    made, splice = [], recorder.Splice
    with monkeypatch.context() as patch:
        patch.setattr(recorder, "Splice", lambda *args: made.append(1) or splice(*args))
        yield made


def _arrays(result):
    return [None if t is None else np.asarray(t.numpy()) for t in tf.nest.flatten(result)]


def canonical(source):
    """The source without `# from:` lines, its computed values renamed v0, v1, ... in
    order: the program, whatever names the two ways of building it gave its values."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith("# from:")]
    text = "\n".join(lines)
    names = dict.fromkeys(re.findall(r"^\s+(\w+) = ", text, flags=re.M))
    renamed = {name: f"v{k}" for k, name in enumerate(names)}
    return re.sub(r"\b\w+\b", lambda m: renamed.get(m.group(0), m.group(0)), text)


def assert_identical(outcomes):
    (spliced, source_s, traces_s, vars_s), (ops, source_o, traces_o, vars_o) = outcomes
    assert canonical(source_s) == canonical(source_o)
    assert traces_s == traces_o
    assert len(spliced) == len(ops)
    for a, b in zip([a for r in spliced for a in r], [b for r in ops for b in r]):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a, b)
            assert a.dtype == b.dtype
    for a, b in zip(vars_s, vars_o):
        np.testing.assert_array_equal(a, b)


# --- the trace records a spliced node, not the gradient's ops ---------------------------

def _loop_gradient(x, n=50):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(n):
            y = tf.sin(y) * 0.5 + y * 0.3
    return tape.gradient(y, x)


def test_a_tape_gradient_joins_the_trace_as_one_spliced_record():
    x = tf.constant(0.7, dtype=tf.float64)
    tape = traced(_loop_gradient, x)
    spliced = [r for r in tape.recorded.graph.values() if r.op is SPLICED]
    assert len(spliced) == 1
    # the forward pass (4 ops a step), its leaves and the spliced gradient; nothing of
    # the gradient's 5 ops a step
    assert len(tape.recorded.graph) < 4 * 50 + 10


def test_the_spliced_program_is_the_op_by_op_program(monkeypatch):
    x = tf.constant(0.7, dtype=tf.float64)
    outcomes = run_both(monkeypatch, lambda: (tf.function(_loop_gradient), []),
                        [(x,), (tf.constant(-1.3, dtype=tf.float64),)])
    assert_identical(outcomes)
    assert float(outcomes[0][0][0][0]) == float(_loop_gradient(x))


# --- TensorFlow's semantics on the spliced path -----------------------------------------

def _train_step():
    W = tf.Variable(np.random.default_rng(3).normal(size=(3, 2)))
    b = tf.Variable(np.zeros(2))
    m = tf.Variable(np.zeros((3, 2)))

    @tf.function
    def step(X, Y, lr):
        with tf.GradientTape() as tape:
            logits = tf.matmul(X, W) + b
            loss = tf.reduce_mean((tf.tanh(logits) - Y) ** 2) + 0.01 * tf.reduce_sum(W * W)
        dW, db = tape.gradient(loss, [W, b])
        m.assign(0.9 * m + dW)
        W.assign_sub(lr * m)
        b.assign_sub(lr * db)
        return loss, tf.reduce_sum(W)
    return step, [W, b, m]


def test_train_step_with_variable_writes(monkeypatch):
    X, Y = tf.constant(RNG.normal(size=(5, 3))), tf.constant(RNG.normal(size=(5, 2)))
    calls = [(X, Y, 0.1), (X, Y, 0.1), (X, Y, 0.05), (X * 2.0, Y, 0.05)]
    assert_identical(run_both(monkeypatch, _train_step, calls))


def test_persistent_tape_jacobian_and_output_gradients(monkeypatch):
    A = tf.constant(RNG.normal(size=(3, 3)))

    def make():
        @tf.function
        def f(x, v):
            with tf.GradientTape(persistent=True) as tape:
                tape.watch(x)
                y = tf.tanh(tf.linalg.matvec(A, x)) * 1.5
                z = tf.reduce_sum(tf.exp(x) * y)
            jac = tape.jacobian(y, x)
            g = tape.gradient(y, x, output_gradients=v)
            gz = tape.gradient(z, [x, v], unconnected_gradients="zero")
            return jac, g, gz
        return f, []
    x, v = tf.constant(RNG.normal(size=3)), tf.constant(RNG.normal(size=3))
    assert_identical(run_both(monkeypatch, make, [(x, v), (x + 1.0, v)]))


def test_nested_tapes_record_the_inner_gradient_op_by_op(monkeypatch):
    A = tf.constant(np.arange(9.0).reshape(3, 3))

    def make():
        @tf.function
        def hessian(x):
            with tf.GradientTape() as outer:
                outer.watch(x)
                with tf.GradientTape() as inner:
                    inner.watch(x)
                    y = tf.reduce_sum(x * tf.linalg.matvec(A, x)) + tf.reduce_sum(tf.sin(x))
                g = inner.gradient(y, x)
            return outer.jacobian(g, x), g
        return hessian, []
    x = tf.constant([1.0, 2.0, 3.0], dtype=tf.float64)
    outcomes = run_both(monkeypatch, make, [(x,), (x * 0.5,)])
    assert_identical(outcomes)
    H, _ = outcomes[0][0][0]
    np.testing.assert_allclose(H, A.numpy() + A.numpy().T - np.diag(np.sin(x.numpy())),
                               rtol=1e-6)


def test_gradient_inside_a_persistent_tapes_context_is_recorded_on_it(monkeypatch):
    def make():
        @tf.function
        def f(x):
            with tf.GradientTape(persistent=True) as tape:
                tape.watch(x)
                y = tf.reduce_sum(x ** 3)
                g = tape.gradient(y, x)          # recorded on the tape itself
                s = tf.reduce_sum(g)
            return tape.gradient(s, x)           # d/dx sum(3x^2) = 6x
        return f, []
    x = tf.constant([1.0, -2.0])
    outcomes = run_both(monkeypatch, make, [(x,)])
    assert_identical(outcomes)
    np.testing.assert_array_equal(outcomes[0][0][0][0], [6.0, -12.0])


def test_functional_forms_inside_a_trace_are_spliced(monkeypatch):
    def loss(x, y):
        return tf.reduce_sum(tf.sin(x) * y + x * x * 0.25)

    def make():
        grad = tf.grad(loss)
        hess = tf.hessian(loss)
        inner = tf.function(lambda x: tf.exp(x) * 0.5)

        @tf.function
        def f(x, y):
            return grad(x, y), hess(x, y), inner(x)
        return f, []
    x, y = tf.constant(RNG.normal(size=3)), tf.constant(RNG.normal(size=3))
    assert_identical(run_both(monkeypatch, make, [(x, y), (y, x)]))
    second = tf.grad(lambda x: tf.reduce_sum(tf.grad(
        lambda x: tf.reduce_sum(x ** 3) * 0.5)(x) * x))
    assert_identical(run_both(monkeypatch, lambda: (tf.function(second), []), [(x,), (y,)]))


def test_a_guard_inside_an_inner_function_guards_the_outer_trace(monkeypatch):
    def make():
        @tf.function
        def inner(x):
            s = tf.reduce_sum(x * 2.0)
            return x * 3.0 if s > 0 else x * -1.0

        @tf.function
        def outer(x):
            return tf.reduce_sum(inner(x) ** 2)
        return outer, []
    calls = [(tf.constant([1.0, 2.0]),), (tf.constant([3.0, 1.0]),),
             (tf.constant([-3.0, 1.0]),), (tf.constant([2.0, 2.0]),)]
    outcomes = run_both(monkeypatch, make, calls)
    assert_identical(outcomes)
    assert [float(r[0]) for r in outcomes[0][0]] == [45.0, 90.0, 10.0, 72.0]
    assert outcomes[0][2] == 2               # one trace per side of the branch


def test_inner_function_writing_a_variable(monkeypatch):
    def make():
        v = tf.Variable([1.0, 2.0])

        @tf.function
        def update(x):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(v * x)
            v.assign_sub(0.5 * tape.gradient(loss, v))
            return loss

        @tf.function
        def outer(x):
            return update(x) + update(x * 2.0)
        return outer, [v]
    calls = [(tf.constant([1.0, 1.0]),)] * 3
    outcomes = run_both(monkeypatch, make, calls)
    assert_identical(outcomes)
    np.testing.assert_array_equal(outcomes[0][3][0], [-3.5, -2.5])


def test_captured_constants_literals_and_stop_gradient(monkeypatch):
    c = tf.constant(RNG.normal(size=3))

    def make():
        @tf.function
        def f(x, k):
            with tf.GradientTape() as tape:
                tape.watch([x, c])
                y = tf.reduce_sum(tf.sin(c) * x ** 2.5 + tf.stop_gradient(x * c) * x
                                  + tf.ones_like(x) * 0.75 * x + k * tf.exp(c))
            gx, gc = tape.gradient(y, [x, c])
            return gx, gc, tape.gradient(y, k) if isinstance(k, tf.Tensor) else None
        return f, []
    x = tf.constant(np.abs(RNG.normal(size=3)) + 0.5)
    assert_identical(run_both(monkeypatch, make, [(x, 0.3), (x, 0.7), (x, 2.0)]))


def test_integer_values_and_unconnected_sources(monkeypatch):
    def make():
        @tf.function
        def f(x, i):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = tf.reduce_sum(tf.gather(x, i) * 2.5) + tf.cast(tf.reduce_sum(i), x.dtype)
            z = tf.constant(1.0, dtype=x.dtype)
            return tape.gradient(y, [x, z])
        return f, []
    x = tf.constant(RNG.normal(size=4))
    calls = [(x, tf.constant([0, 2, 2])), (x, tf.constant([1, 1, 3]))]
    outcomes = run_both(monkeypatch, make, calls)
    assert_identical(outcomes)
    assert outcomes[0][0][0][1] is None


def test_python_side_effects_run_at_trace_time_only(monkeypatch):
    seen = []

    @tf.function
    def f(x):
        seen.append(1)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.tanh(x))
        return tape.gradient(y, x)
    for _ in range(3):
        f(tf.constant([0.1, 0.2]))
    assert len(seen) == 1 and f.experimental_get_tracing_count() == 1


# --- reading a spliced value in Python ---------------------------------------------------

def test_reading_a_gradient_that_depends_on_a_differentiated_argument_is_refused():
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(x ** 3)
        g = tape.gradient(y, x)
        return tf.reduce_sum(g) * float(tf.reduce_sum(g))
    with pytest.raises(TypeError, match="differentiated argument"):
        tf.grad(f)(tf.constant([1.0, 2.0]))


def test_reading_a_gradient_cut_by_stop_gradient_is_a_guard():
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.stop_gradient(x) * x)
        g = tape.gradient(y, x)              # stop_gradient(x): no path back to x
        scale = 2.0 if float(tf.reduce_sum(g)) > 0 else -1.0
        return tf.reduce_sum(x * x) * scale
    grad = tf.grad(f)
    np.testing.assert_array_equal(grad(tf.constant([1.0, 2.0])).numpy(), [4.0, 8.0])
    np.testing.assert_array_equal(grad(tf.constant([-1.0, -2.0])).numpy(), [2.0, 4.0])
    assert grad.experimental_get_tracing_count() == 2


def test_export_still_records_every_op():
    x = tf.constant(0.7, dtype=tf.float64)
    function = tf.function(_loop_gradient)
    tape, _, _ = function._record(Call((x,), {}, function._parameters), splicing=False)
    assert not any(r.op is SPLICED for r in tape.recorded.graph.values())
