"""Python floats that change from step to step are inputs of the compiled derivative,
not parts of its cache key: an annealed factor or a learning rate compiles once."""
import numpy as np
import pytest

import tapec as tf
from tapec.codegen.cache import CACHE


@pytest.fixture(autouse=True)
def fresh_cache():
    tf.clear_cache()
    yield
    tf.clear_cache()


def _annealed(step):
    return min(1, step / 25)


def test_an_annealed_float_compiles_once_on_the_tape():
    x = tf.constant(np.linspace(-1.0, 1.0, 50))
    for step in range(50):
        beta = _annealed(step)
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(x * x) + beta * tf.reduce_sum(tf.sin(x))
        grad = tape.gradient(loss, x)
        np.testing.assert_allclose(grad.numpy(), 2 * x.numpy() + beta * np.cos(x.numpy()),
                                   rtol=1e-14)
    # Whole numbers stay constants (simplification reads them): beta = 0.0 (step 0),
    # 1 (steps 25..49) and one program for every fraction in between.
    assert CACHE.info().misses == 3


def test_a_learning_rate_in_the_loss_is_fed_with_its_dtype():
    w = tf.Variable(np.float32([0.5, -1.5]))
    for lr in (0.1, 0.01, 0.003):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * w * lr)
        grad = tape.gradient(loss, w)
        assert grad.dtype == tf.float32
        expected = (w.numpy() * np.float32(lr)) + (np.float32(lr) * w.numpy())
        np.testing.assert_array_equal(grad.numpy(), expected)
    assert CACHE.info().misses == 1


def test_fed_floats_are_arguments_and_printed_once_as_decimals():
    x = tf.constant(0.7, dtype=tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(3):
            y = tf.sin(y) * 0.5 + y * 0.3
    grad = tape.gradient(y, x)
    source = grad._origin.source
    assert "5404319552844595" not in source and "18014398509481984" not in source
    value, derivative = 0.7, 1.0
    for _ in range(3):
        derivative *= np.cos(value) * 0.5 + 0.3
        value = np.sin(value) * 0.5 + value * 0.3
    assert grad.numpy() == pytest.approx(derivative, rel=1e-15)


def test_a_literal_from_a_sympy_rule_is_one_multiplication():
    """The derivative of x * 0.3, built through the interpreter of an enclosing tape,
    multiplies by 0.3 once (SymPy holds 0.3 as 5404319552844595 / 2**54)."""
    x = tf.constant(1.25, dtype=tf.float64)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = x * x * 0.3
        dy = inner.gradient(y, x)
    d2y = outer.gradient(dy, x)
    assert dy.numpy() == pytest.approx(0.6 * 1.25, rel=1e-15)
    assert d2y.numpy() == pytest.approx(0.6, rel=1e-15)
    assert "5404319552844595" not in d2y._origin.source


def test_printers_write_fed_floats_as_numbers():
    x = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = 0.3 * x * x
    latex = tape.latex(y, x)
    assert "x" in latex and ("0.6" in latex or r"\frac{3 x}{5}" in latex)


def test_a_literal_shared_by_a_power_and_a_product_stays_right():
    x = tf.constant(np.array([0.5, 2.0, 3.0]))
    for c in (0.5, 1.5, 2.5):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(x * c + tf.pow(x, c))
        grad = tape.gradient(y, x).numpy()
        np.testing.assert_allclose(grad, c + c * x.numpy() ** (c - 1), rtol=1e-14)


def test_tf_function_retraces_per_float_as_tensorflow_but_compiles_once():
    x = tf.Variable(np.linspace(-1.0, 1.0, 20))

    @tf.function
    def step(beta):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(x * x) + beta * tf.reduce_sum(tf.sin(x))
        return tape.gradient(loss, x)

    betas = [0.1 * k + 0.05 for k in range(8)]
    for beta in betas:
        np.testing.assert_allclose(step(beta).numpy(),
                                   2 * x.numpy() + beta * np.cos(x.numpy()), rtol=1e-14)
    assert step.experimental_get_tracing_count() == len(betas)   # TensorFlow's rule
    assert CACHE.info().misses == 1


def test_exports_and_shape_polymorphic_traces_keep_floats_as_numbers(tmp_path):
    def loss(w):
        return tf.reduce_sum(w * w * 0.3)
    path = tmp_path / "grad_module.py"
    tf.export(loss, np.ones(3), path=str(path))
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    np.testing.assert_allclose(namespace["grad_loss"](np.arange(3.0)), 0.6 * np.arange(3.0))
    assert "0.3" in path.read_text() or "0.6" in path.read_text()

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float64)])
    def scaled(v):
        return v * 0.3 + 1.0
    for n in (4, 7, 9):
        np.testing.assert_allclose(scaled(np.ones(n)).numpy(), np.full(n, 1.3))
    assert scaled.experimental_get_tracing_count() == 1


def test_a_nested_tape_hessian_builds_its_inner_derivative_once(monkeypatch):
    """The inner gradient, taken while the outer tape records, is evaluated op by op so
    the outer tape sees it; its symbolic program is built on the first step only, and a
    float that changes each step is fed to it, not frozen into it."""
    from tapec import engine
    builds = []
    build_adjoints = engine.build_adjoints
    monkeypatch.setattr(engine, "build_adjoints",
                        lambda *a, **k: builds.append(1) or build_adjoints(*a, **k))
    xv = np.linspace(-1.0, 1.0, 7)
    x = tf.constant(xv)
    for step in range(6):
        beta = 0.1 + step / 7
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                f = tf.reduce_sum(beta * tf.sin(x) * x)
            g = inner.gradient(f, x)
        h = outer.jacobian(g, x)
        # f = beta * sum(x sin x): f'' = beta * (2 cos x - x sin x) on the diagonal
        np.testing.assert_allclose(h.numpy(), np.diag(beta * (2 * np.cos(xv) - xv * np.sin(xv))),
                                   rtol=1e-12, atol=1e-15)
    inner_builds = len(builds)
    tf.clear_cache()
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            f = tf.reduce_sum(0.5 * tf.sin(x) * x)
        g = inner.gradient(f, x)
    outer.jacobian(g, x)
    # six steps built as much as one step from a cleared cache
    assert inner_builds == len(builds) - inner_builds
