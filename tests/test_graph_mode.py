"""Graph mode: tf.function programs with Variable writes, composed derivatives, no stale
specialization, and TensorFlow's tf.function surface (docs/functions.md)."""
import inspect
import logging

import numpy as np
import pytest

import tapec
import tapec as tf
from tapec.export.module import ExportError

from helpers.fd import numeric_gradient

RNG = np.random.default_rng(7)


def central_difference(fun, x):
    """d fun(x) / dx by central differences; `fun` maps a float64 array to a number."""
    return numeric_gradient(lambda z: f64(fun(z.numpy())), [x], 0)


def f64(value):
    return tf.constant(np.asarray(value, dtype=np.float64))


# --- Variable writes are effects of the program ------------------------------------------

def test_assign_add_counter_is_done_by_every_call():
    w = tf.Variable([1.0, 2.0])

    @tf.function
    def step(x):
        w.assign_add(x)
        return tf.reduce_sum(w)

    results = [float(step(tf.constant([1.0, 1.0]))) for _ in range(3)]
    assert results == [5.0, 7.0, 9.0]
    np.testing.assert_array_equal(w.numpy(), [4.0, 5.0])
    assert step.experimental_get_tracing_count() == 1


def test_read_before_and_after_a_write_in_one_program():
    v = tf.Variable(2.0)

    @tf.function
    def step():
        before = v * 1.0
        v.assign(v * 3.0)
        after = v + 0.0
        v.assign_sub(1.0)
        return before, after

    for expected_before in (2.0, 5.0, 14.0):
        before, after = step()
        assert (float(before), float(after)) == (expected_before, 3 * expected_before)
    assert float(v.numpy()) == 41.0 and step.experimental_get_tracing_count() == 1


def _softmax_data():
    X = RNG.normal(size=(60, 5))
    Y = np.eye(3)[RNG.integers(0, 3, 60)]
    return tf.constant(X), tf.constant(Y)


def _train_step(W, b, X, Y, lr=0.5):
    with tf.GradientTape() as tape:
        logits = tf.matmul(X, W) + b
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=Y, logits=logits))
    grad_W, grad_b = tape.gradient(loss, [W, b])
    W.assign_sub(lr * grad_W)
    b.assign_sub(lr * grad_b)
    return loss


def test_train_step_in_function_matches_eager_over_calls():
    X, Y = _softmax_data()
    eager = [tf.Variable(np.zeros((5, 3))), tf.Variable(np.zeros(3))]
    traced = [tf.Variable(np.zeros((5, 3))), tf.Variable(np.zeros(3))]
    step = tf.function(_train_step)
    eager_losses = [float(_train_step(*eager, X, Y)) for _ in range(6)]
    traced_losses = [float(step(*traced, X, Y)) for _ in range(6)]
    np.testing.assert_allclose(traced_losses, eager_losses, rtol=1e-12)
    assert traced_losses[-1] < traced_losses[0]                 # it trains
    for e, t in zip(eager, traced):
        np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-12)
    assert step.trace_count == 1
    source = step.source(*traced, X, Y)
    assert "def function(" in source and source.count("return") == 1   # one program


def test_two_variables_updated_together_momentum():
    x = tf.Variable(np.array([1.0, -2.0]))
    velocity = tf.Variable(np.zeros(2))

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(x * x * x * x)
        g = tape.gradient(loss, x)
        velocity.assign(0.9 * velocity - 0.01 * g)
        x.assign_add(velocity)
        return loss

    traced = tf.function(step)
    x_ref, v_ref = np.array([1.0, -2.0]), np.zeros(2)
    for _ in range(5):
        loss = traced()
        assert float(loss) == pytest.approx(np.sum(x_ref ** 4), rel=1e-12)
        v_ref = 0.9 * v_ref - 0.01 * 4 * x_ref ** 3
        x_ref = x_ref + v_ref
    np.testing.assert_allclose(x.numpy(), x_ref, rtol=1e-12)
    np.testing.assert_allclose(velocity.numpy(), v_ref, rtol=1e-12)
    assert traced.trace_count == 1


def test_a_write_of_a_value_made_outside_the_trace():
    v = tf.Variable(np.ones(3))
    reset_to = tf.constant(np.array([1.0, 2.0, 3.0]))

    @tf.function
    def step(x):
        total = tf.reduce_sum(v * x)
        v.assign(reset_to)
        return total

    assert float(step(f64([1.0, 1.0, 1.0]))) == 3.0
    v.assign(np.zeros(3))
    assert float(step(f64([1.0, 1.0, 1.0]))) == 0.0
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0, 3.0])


def test_assign_takes_tensorflows_positional_arguments():
    v = tf.Variable(1.0)
    assert v.assign(2.0, False, None, False) is None        # use_locking, name, read_value
    assert v.assign_add(1.0, False, "add") is v and float(v.numpy()) == 3.0


def _nested_tape_hessian(f):
    """The Hessian of f as a TF user writes it: nested tapes inside tf.function."""
    @tf.function
    def hessian(x):
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = f(x)
            g = inner.gradient(y, x)
        return outer.jacobian(g, x)
    return hessian


def test_nested_tape_hessian_in_function_is_right_for_new_values_and_traced_once():
    A = RNG.normal(size=(6, 6))
    hessian = _nested_tape_hessian(
        lambda x: tf.reduce_sum(tf.sin(x) * tf.linalg.matvec(tf.constant(A), x)))
    for _ in range(3):
        x = RNG.normal(size=6)
        Ax, s, c = A @ x, np.sin(x), np.cos(x)
        expected = np.diag(-s * Ax) + (c[:, None] * A) + (c[:, None] * A).T
        np.testing.assert_allclose(hessian(f64(x)).numpy(), expected, rtol=1e-10, atol=1e-12)
    assert hessian.trace_count == 1


def test_nested_tape_hessian_compiles_to_the_closed_form():
    A = tf.constant(RNG.normal(size=(4, 4)))
    hessian = _nested_tape_hessian(lambda x: tf.reduce_sum(x * tf.linalg.matvec(A, x)))
    x = f64(RNG.normal(size=4))
    np.testing.assert_allclose(hessian(x).numpy(), A.numpy() + A.numpy().T, rtol=1e-12)
    if tapec.config.simplify_setting() != "off":
        assert "@" not in hessian.source(x)  # A + A^T: no product with an identity seed


def test_export_of_a_function_that_writes_a_variable_raises(tmp_path):
    v = tf.Variable(1.0)

    def f(x):
        v.assign_add(x)
        return x * 2.0

    with pytest.raises(ExportError, match="assigns Variable"):
        tf.export(f, (np.float32(1.0),), tmp_path / "m.py")
    assert float(v.numpy()) == 1.0           # tracing for the export wrote nothing


# --- derivatives compose -----------------------------------------------------------------

def test_grad_of_grad_and_third_order():
    assert float(tapec.grad(tapec.grad(lambda x: x ** 3))(3.0)) == 18.0
    assert float(tapec.grad(tapec.grad(tapec.grad(lambda x: x ** 4)))(2.0)) == 48.0


def _cubic(x):
    return tf.reduce_sum(tf.sin(x) * x * x)


def _cubic_hessian(x):
    return np.diag(-np.sin(x) * x * x + 4 * np.cos(x) * x + 2 * np.sin(x))


def test_jacobian_of_grad_is_the_hessian():
    x = RNG.normal(size=4)
    np.testing.assert_allclose(tapec.jacobian(tapec.grad(_cubic))(f64(x)).numpy(),
                               _cubic_hessian(x), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(tapec.hessian(_cubic)(f64(x)).numpy(), _cubic_hessian(x),
                               rtol=1e-12, atol=1e-14)


def test_tape_around_grad_gives_a_hessian_vector_product():
    x, v = RNG.normal(size=4), RNG.normal(size=4)
    xt = f64(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        g = tapec.grad(_cubic)(xt)
    hvp = tape.gradient(g, xt, output_gradients=f64(v))
    np.testing.assert_allclose(hvp.numpy(), _cubic_hessian(x) @ v, rtol=1e-12)


def test_value_and_grad_inside_a_tape_is_connected():
    x = RNG.normal(size=3)
    xt = f64(x)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(xt)
        value, g = tapec.value_and_grad(_cubic)(xt)
    np.testing.assert_allclose(tape.gradient(value, xt).numpy(), g.numpy(), rtol=1e-12)
    np.testing.assert_allclose(tape.jacobian(g, xt).numpy(), _cubic_hessian(x), rtol=1e-12,
                               atol=1e-14)


def test_function_around_grad_and_grad_of_function():
    x = RNG.normal(size=3)
    expected = np.sin(x) * 2 * x + np.cos(x) * x * x
    traced_grad = tf.function(tapec.grad(_cubic))
    np.testing.assert_allclose(traced_grad(f64(x)).numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(tapec.grad(tf.function(_cubic))(f64(x)).numpy(), expected,
                               rtol=1e-12)
    np.testing.assert_allclose(tapec.hessian(tf.function(_cubic))(f64(x)).numpy(),
                               _cubic_hessian(x), rtol=1e-12, atol=1e-14)


def test_grad_of_a_closure_over_a_watched_tensor_stays_connected():
    y = f64(2.0)
    x = f64(3.0)
    with tf.GradientTape() as tape:
        tape.watch(y)
        g = tapec.grad(lambda x: x * x * y)(x)          # 2 x y
    assert float(tape.gradient(g, y)) == 6.0


def test_function_reading_a_variable_inside_a_tape_is_differentiable():
    w = tf.Variable(np.array([1.0, 2.0]))
    loss = tf.function(lambda x: tf.reduce_sum(w * w * x))
    with tf.GradientTape() as tape:
        value = loss(f64([3.0, 4.0]))
    np.testing.assert_allclose(tape.gradient(value, w).numpy(), [6.0, 16.0])


def test_grad_of_a_function_with_a_branch_guards_the_enclosing_trace():
    def f(x):
        return x * x if x > 0 else -x * x * x
    gg = tapec.grad(tapec.grad(f))
    assert float(gg(f64(2.0))) == 2.0
    assert float(gg(f64(-2.0))) == 12.0      # -6x at -2: the inner branch is guarded too
    assert float(gg(f64(3.0))) == 2.0


def test_second_derivative_against_finite_differences():
    def f(x):
        return tf.reduce_sum(tf.tanh(x) * tf.exp(-x * x))
    x = RNG.normal(size=3)
    grad = tapec.grad(f)
    hess = tapec.jacobian(grad)(f64(x)).numpy()
    numeric = np.stack([central_difference(lambda z: grad(f64(z)).numpy()[i], x)
                        for i in range(3)])
    np.testing.assert_allclose(hess, numeric, rtol=1e-6, atol=1e-8)


# --- no stale specialization ---------------------------------------------------------------

def _index_loss(x, i):
    return tf.reduce_sum(x[i] * x[i])


X3 = np.array([10.0, 20.0, 30.0])


@pytest.mark.parametrize("form", ["function", "grad", "value_and_grad"])
def test_integer_index_argument_is_an_input(form):
    make = {"function": tf.function, "grad": tapec.grad, "value_and_grad": tapec.value_and_grad}
    fn = make[form](_index_loss)
    for index in ([0, 1], [2, 2], [1]):
        i = tf.constant(index)
        expected_value = float(np.sum(X3[index] ** 2))
        expected_grad = np.zeros(3)
        np.add.at(expected_grad, index, 2 * X3[index])
        result = fn(f64(X3), i)
        if form == "function":
            assert float(result) == expected_value
        elif form == "grad":
            np.testing.assert_array_equal(result.numpy(), expected_grad)
        else:
            assert float(result[0]) == expected_value
            np.testing.assert_array_equal(result[1].numpy(), expected_grad)
    assert fn.trace_count == 2           # index shape (2,) then (1,): a gather, no retrace


# Functions whose second argument steers structure: a mask, a shape, an axis, a bound.
def masked(x, mask):
    return tf.reduce_sum(x[mask] ** 2)


def reshaped(x, shape):
    return tf.reduce_sum(tf.reduce_sum(tf.reshape(x, shape), axis=0) ** 2)


def reduced(x, axis):
    return tf.reduce_sum(tf.reduce_sum(x, axis=axis) ** 2)


def sliced(x, stop):
    return tf.reduce_sum(x[:stop] ** 3)


@pytest.mark.parametrize("form", ["function", "grad", "value_and_grad"])
def test_mask_shape_axis_and_slice_arguments_guard_the_trace(form):
    make = {"function": tf.function, "grad": tapec.grad, "value_and_grad": tapec.value_and_grad}

    x = RNG.normal(size=(2, 3))
    cases = [  # body, its argument, the values that steer structure, a NumPy reference
        (masked, x.ravel(), [[True, False, True, True, False, False],
                             [False, True, False, False, True, True]],
         lambda v, m: np.sum(v[np.array(m)] ** 2)),
        (reshaped, x, [[3, 2], [2, 3], [1, 6]],
         lambda v, s: np.sum(np.sum(v.reshape(s), axis=0) ** 2)),
        (reduced, x, [0, 1], lambda v, a: np.sum(np.sum(v, axis=a) ** 2)),
        (sliced, x.ravel(), [2, 5], lambda v, stop: np.sum(v[:stop] ** 3)),
    ]
    for body, value, steering, reference in cases:
        fn = make[form](body)
        for s in steering:
            result = fn(f64(value), tf.constant(s))
            if form == "value_and_grad":
                assert float(result[0]) == pytest.approx(reference(value, s), rel=1e-12)
                result = result[1]
            if form == "function":
                assert float(result) == pytest.approx(reference(value, s), rel=1e-12)
            else:
                numeric = central_difference(lambda v: reference(v, s), value)
                np.testing.assert_allclose(result.numpy(), numeric, rtol=1e-6, atol=1e-8)
        assert fn.trace_count == len(steering)     # each new value traced again, not replayed


def test_export_generalizes_an_index_and_refuses_a_stale_mask(tmp_path):
    import importlib.util

    def load(path):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    tf.export(_index_loss, (X3, np.array([0, 1])), tmp_path / "indexed.py", name="loss")
    indexed = load(tmp_path / "indexed.py")
    np.testing.assert_array_equal(indexed.grad_loss(X3, np.array([2, 2])),
                                  [0.0, 0.0, 120.0])

    x = np.arange(6.0).reshape(2, 3)
    for fn, value, good, bad in [(masked, X3, np.array([True, False, True]),
                                  np.array([False, True, True])),
                                 (reshaped, x, np.array([3, 2]), np.array([1, 6])),
                                 (reduced, x, np.int32(0), np.int32(1))]:
        path = tmp_path / f"{fn.__name__}.py"
        tf.export(fn, (value, good), path)
        module = load(path)
        assert getattr(module, fn.__name__)(value, good) == pytest.approx(
            float(fn(f64(value), tf.constant(good))))
        param = list(inspect.signature(fn).parameters)[1]
        with pytest.raises(ValueError, match=f"input outside the traced branch: {param}"):
            getattr(module, f"grad_{fn.__name__}")(value, bad)


# --- TensorFlow's tf.function surface ----------------------------------------------------

def test_methods_bind_self_and_trace_per_instance():
    class Scale:
        def __init__(self, factor):
            self.factor = tf.Variable(factor)

        @tf.function
        def __call__(self, x):
            return self.factor * x

    a, b = Scale(2.0), Scale(3.0)
    assert float(a(tf.constant(5.0))) == 10.0 and float(b(tf.constant(5.0))) == 15.0
    a.factor.assign(4.0)
    assert float(a(tf.constant(5.0))) == 20.0
    assert a.__call__.experimental_get_tracing_count() == 1
    assert Scale.__call__ is Scale.__dict__["__call__"]


def test_zero_argument_functions_and_keyword_arguments():
    v = tf.Variable(3.0)
    assert float(tf.function(lambda: v * 2.0)()) == 6.0

    @tf.function
    def f(x, *, scale=1.0, shift=None):
        return x * scale if shift is None else x * scale + shift

    x = tf.constant(2.0)
    assert float(f(x)) == 2.0
    assert float(f(x, scale=tf.constant(3.0))) == 6.0
    assert float(f(x, scale=tf.constant(4.0))) == 8.0        # a tensor keyword: no retrace
    assert float(f(x, shift=tf.constant(1.0))) == 3.0
    assert f.experimental_get_tracing_count() == 3


def test_nested_arguments():
    @tf.function
    def f(params, x):
        return tf.reduce_sum(params["w"] * x + params["b"][0])

    params = {"w": f64([1.0, 2.0]), "b": [f64(0.5)]}
    assert float(f(params, f64([3.0, 4.0]))) == 12.0
    params = {"w": f64([2.0, 2.0]), "b": [f64(0.0)]}
    assert float(f(params, f64([3.0, 4.0]))) == 14.0
    assert f.trace_count == 1


def test_input_signature_converts_and_checks():
    @tf.function(input_signature=[tf.TensorSpec(shape=[None], dtype=tf.float64)])
    def f(x):
        return tf.reduce_sum(x * x)

    assert f(np.array([1.0, 2.0])).dtype == tf.float64
    assert float(f([1.0, 2.0, 3.0])) == 14.0                 # converted to float64
    with pytest.raises(ValueError, match="not compatible with the input_signature"):
        f(np.ones((2, 2)))
    with pytest.raises(TypeError, match="dtype float32"):
        f(tf.constant([1.0]))
    with pytest.raises(TypeError, match="1 argument"):
        f(np.ones(2), np.ones(2))
    assert f.input_signature == [tf.TensorSpec([None], tf.float64)]
    spec = tf.TensorSpec((None, 3))
    assert spec.is_compatible_with(tf.zeros((5, 3))) and not spec.is_compatible_with(
        tf.zeros((5, 4)))
    assert repr(spec) == "TensorSpec(shape=(None, 3), dtype=tf.float32, name=None)"


def test_tensorflow_options_are_accepted():
    f = tf.function(lambda x: x + 1.0, jit_compile=True, reduce_retracing=True,
                    autograph=False)
    assert float(f(tf.constant(1.0))) == 2.0

    @tf.function(jit_compile=True)
    def g(x):
        return x * 2.0
    assert float(g(tf.constant(2.0))) == 4.0 and g.python_function(2.0) == 4.0


def test_python_numbers_retrace_with_tensorflows_warning(caplog):
    f = tf.function(lambda x, k: x * k)
    with caplog.at_level(logging.WARNING, logger="tapec"):
        for k in range(8):
            assert float(f(tf.constant(2.0), float(k))) == 2.0 * k
    assert f.experimental_get_tracing_count() == 8
    warnings = [r.getMessage() for r in caplog.records if "retracing" in r.getMessage()]
    assert len(warnings) == 1 and "passing Python objects instead of tensors" in warnings[0]
    caplog.clear()
    g = tf.function(lambda x: x * 2.0)
    with caplog.at_level(logging.WARNING, logger="tapec"):
        for k in range(8):
            g(tf.constant(float(k)))
    assert not caplog.records and g.experimental_get_tracing_count() == 1


def test_a_trace_whose_program_disagrees_with_its_guard_runs_eagerly(monkeypatch, caplog):
    """If the compiled program computes a value Python read (float(loss)) differently
    in the last bits, its fresh trace fails its own guard: the call must still be
    right, with its writes done once, and say why it is slow."""
    from tapec.tracing import program
    v = tf.Variable(np.array([1.0, 2.0]))

    @tf.function
    def step(x):
        loss = tf.reduce_sum(v * x)
        scale = float(loss)                   # a value Python reads: guarded
        v.assign_add(x)
        return loss * scale

    real_run = program.Trace.run
    monkeypatch.setattr(program.Trace, "run", lambda self, leaves: program.GUARD_DIFFERS)
    with caplog.at_level(logging.WARNING, logger="tapec"):
        result = step(f64([1.0, 1.0]))
    assert float(result) == 9.0
    np.testing.assert_array_equal(v.numpy(), [2.0, 3.0])        # written once
    assert any("cannot be replayed" in r.getMessage() for r in caplog.records)
    monkeypatch.setattr(program.Trace, "run", real_run)
    assert float(step(f64([1.0, 1.0]))) == 25.0
    np.testing.assert_array_equal(v.numpy(), [3.0, 4.0])


def test_function_called_under_a_tape_traces_once_and_guards_its_branches():
    w = tf.Variable(np.array([1.0, -1.0]))

    @tf.function
    def model(x):
        h = w * x
        return tf.reduce_sum(h * h) if tf.reduce_sum(h) > 0 else tf.reduce_sum(-h)

    # d/dw sum((w x)^2) = 2 w x^2 on the first branch; d/dw sum(-w x) = -x on the other
    for x, expected in [([3.0, 1.0], [18.0, -2.0]), ([2.0, 1.0], [8.0, -2.0]),
                        ([1.0, 3.0], [-1.0, -3.0]), ([5.0, 1.0], [50.0, -2.0])]:
        with tf.GradientTape() as tape:
            loss = model(f64(x))
        np.testing.assert_allclose(tape.gradient(loss, w).numpy(), expected)
    assert model.trace_count == 2             # one per branch, each replayed once
    assert float(model(f64([3.0, 1.0]))) == 10.0


def test_a_function_returning_none_writes_once_and_traces_once():
    v = tf.Variable(1.0)

    @tf.function
    def bump():
        v.assign_add(1.0)

    assert bump() is None and float(v.numpy()) == 2.0
    assert bump() is None and float(v.numpy()) == 3.0
    assert bump.trace_count == 1


def test_one_trace_serves_calls_under_a_tape_and_outside():
    square = tf.function(lambda x: tf.reduce_sum(x * x))
    x = f64([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = square(x)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [2.0, 4.0])
    assert float(square(x)) == 5.0 and float(square(f64([3.0, 0.0]))) == 9.0
    assert square.trace_count == 1


def test_where_coordinates_of_an_argument_are_not_frozen():
    @tf.function
    def picked(x, mask):
        return tf.reduce_sum(tf.gather(x, tf.where(mask)[:, 0]))

    x = f64([1.0, 2.0, 4.0])
    assert float(picked(x, tf.constant([True, False, True]))) == 5.0
    assert float(picked(x, tf.constant([False, True, True]))) == 6.0
    assert float(picked(x, tf.constant([False, True, False]))) == 2.0


def test_a_traced_write_of_another_dtype_raises_as_an_eager_one():
    v = tf.Variable(np.zeros(2, dtype=np.float32))
    step = tf.function(lambda x: v.assign_add(x * 2.0, read_value=False))
    with pytest.raises(TypeError, match="cannot write a float64 tensor to Variable"):
        step(f64([1.0, 2.0]))
    np.testing.assert_array_equal(v.numpy(), [0.0, 0.0])
    step(tf.constant([1.0, 2.0]))
    np.testing.assert_array_equal(v.numpy(), [2.0, 4.0])


def test_guards_on_nan_and_infinite_values():
    @tf.function
    def f(x):
        total = float(tf.reduce_sum(x))          # a value Python reads: guarded
        return x * 2.0 if total > 0 or total != total else x * 3.0

    for value, expected in [([np.nan, 1.0], [np.nan, 2.0]), ([np.inf, 1.0], [np.inf, 2.0]),
                            ([-np.inf, 1.0], [-np.inf, 3.0]), ([np.nan, 1.0], [np.nan, 2.0]),
                            ([1.0, 1.0], [2.0, 2.0])]:
        np.testing.assert_array_equal(f(f64(value)).numpy(), expected)
    assert f.trace_count == 4                   # nan is traced once, then replayed

    @tf.function
    def masked(x, values):
        return tf.reduce_sum(x * values.numpy())   # an array read: guarded as a whole

    x = f64([1.0, 1.0])
    assert np.isnan(float(masked(x, f64([np.nan, 1.0]))))
    assert np.isnan(float(masked(x, f64([np.inf, -np.inf]))))        # inf - inf
    assert float(masked(x, f64([2.0, 3.0]))) == 5.0
    assert masked.trace_count == 3
    assert np.isnan(float(masked(x, f64([np.nan, 1.0])))) and masked.trace_count == 3


# --- input_signature None dimensions: one trace for every size --------------------------

def _batch_signature():
    return [tf.TensorSpec([None, 3], tf.float64), tf.TensorSpec([None, 2], tf.float64)]


def test_a_train_step_traces_once_for_every_batch_size():
    rng = np.random.default_rng(0)
    w0 = rng.normal(size=(3, 2))
    W, b = tf.Variable(w0), tf.Variable(np.zeros(2))

    @tf.function(input_signature=_batch_signature())
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.reduce_sum((tf.matmul(x, W) + b - y) ** 2, axis=1))
        gw, gb = tape.gradient(loss, [W, b])
        W.assign_sub(0.1 * gw)
        b.assign_sub(0.1 * gb)
        return loss

    w_ref, b_ref = w0.copy(), np.zeros(2)
    for n in (8, 16, 5, 33, 2):
        x, y = rng.normal(size=(n, 3)), rng.normal(size=(n, 2))
        p = x @ w_ref + b_ref
        expected = np.mean(np.sum((p - y) ** 2, axis=1))
        dp = 2 * (p - y) / n
        w_ref, b_ref = w_ref - 0.1 * x.T @ dp, b_ref - 0.1 * dp.sum(axis=0)
        assert float(step(x, y)) == pytest.approx(expected, rel=1e-12)
        np.testing.assert_allclose(W.numpy(), w_ref, rtol=1e-12)
        np.testing.assert_allclose(b.numpy(), b_ref, rtol=1e-12)
    assert step.experimental_get_tracing_count() == 1


def test_a_size_dependent_program_traces_per_size_and_stays_right():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float64)])
    def first_half(x):
        k = int(tf.shape(x)[0]) // 2           # a Python value from the size: guarded
        return tf.reduce_sum(x[:k])

    for n in (6, 7, 10, 40):
        assert float(first_half(np.arange(float(n)))) == np.arange(float(n))[:n // 2].sum()
    assert first_half.experimental_get_tracing_count() == 4


def test_static_shape_of_a_none_dimension_is_none_as_in_tensorflow():
    seen = []

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float64)])
    def f(x):
        seen.append(x.shape.as_list())
        with pytest.raises(TypeError, match="None"):
            len(x)
        return tf.reduce_sum(x) / tf.cast(tf.shape(x)[0], tf.float64)

    assert float(f(np.ones((4, 3)))) == 3.0
    assert float(f(np.full((9, 3), 2.0))) == 6.0
    assert seen[0] == [None, 3] and f.experimental_get_tracing_count() == 1


def test_python_arithmetic_on_a_none_dimension_raises_as_in_tensorflow():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float64)])
    def half(x):
        return x[: x.shape[0] // 2]              # None // 2

    with pytest.raises(TypeError, match="NoneType"):
        half(np.arange(6.0))


def test_generic_program_reads_sizes_from_its_arguments():
    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float64)])
    def centered(x):
        return x - tf.reduce_mean(x, axis=0)

    x = np.arange(8.0).reshape(4, 2)
    np.testing.assert_allclose(centered(x).numpy(), x - x.mean(axis=0))
    y = np.arange(22.0).reshape(11, 2) ** 2
    np.testing.assert_allclose(centered(y).numpy(), y - y.mean(axis=0), rtol=1e-14)
    assert centered.experimental_get_tracing_count() == 1
    source = next(iter(centered._generic.values())).source
    assert ".shape[0]" in source and "4" not in source.split("def ", 1)[1]


def test_tf_shape_is_computed_per_call():
    x = tf.constant(np.ones((2, 5)))
    assert tf.shape(x).numpy().tolist() == [2, 5] and tf.shape(x).dtype == tf.int32
    assert tf.shape(x, out_type=tf.int64).dtype == tf.int64


# --- plain data from a differentiated value: an error, not a zero gradient -------------

@pytest.mark.parametrize("form", ["grad", "value_and_grad", "jacobian", "hessian"])
def test_numpy_conversion_of_a_differentiated_value_raises_naming_the_line(form):
    def f(x):
        both = np.array([x, 2 * x])            # NumPy cannot record a list of tensors
        return tf.reduce_sum(tf.constant(both) ** 2)

    with pytest.raises(TypeError, match=r"np\.asarray / np\.array at .*test_graph_mode\.py"):
        getattr(tf, form)(f)(tf.constant(1.5))


def test_float_of_a_differentiated_value_raises_and_stop_gradient_allows_it():
    with pytest.raises(TypeError, match=r"float\(\) at .*depends on a differentiated"):
        tf.grad(lambda x: x * float(x))(tf.constant(2.0))
    # the read is meant as a constant: d/dx (x * c) = c
    assert float(tf.grad(lambda x: x * float(tf.stop_gradient(x)))(tf.constant(2.0))) == 2.0
    # a branch on the value is fine: the derivative follows the ops taken
    assert float(tf.grad(lambda x: x * x if bool(x > 0) else -x)(tf.constant(3.0))) == 6.0


def test_tf_function_still_guards_a_python_read():
    f = tf.function(lambda x: x * float(x))
    assert float(f(tf.constant(2.0))) == 4.0
    assert float(f(tf.constant(3.0))) == 9.0              # a new value: traced again
    assert f.experimental_get_tracing_count() == 2


def test_casts_of_python_literals_compile_in_every_simplify_setting():
    # Unsimplified code inlines the literal: `2.astype(...)` was a SyntaxError.
    @tf.function
    def f(x):
        return (x * tf.cast(2, tf.float64) + tf.cast(-1.5, tf.float64)
                + tf.cast(True, tf.float64), tf.cast(-2.7, tf.int32))

    y, n = f(tf.constant(1.0, tf.float64))
    assert float(y) == 1.5 and int(n) == -2 and n.dtype == tf.int32
