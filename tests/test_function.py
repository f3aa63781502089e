"""tapec.function and the functional forms: tracing, guards, one compiled function."""
import numpy as np
import pytest

import numpy_model
import tapec as tf
from helpers.fd import numeric_gradient

RNG = np.random.default_rng(8)


def control_flow(a):
    b = a * 2
    while tf.norm(b) < 1000:
        b = b * 2
    if tf.reduce_sum(b) > 0:
        c = b
    else:
        c = 100 * b
    return c


def _expected_control_flow(a):
    b = a * 2
    while np.linalg.norm(b) < 1000:
        b = b * 2
    return b if b.sum() > 0 else 100 * b


def test_guards_retrace_instead_of_replaying_the_wrong_branch():
    f = tf.function(control_flow)
    calls = [0.5, 0.7, -0.5, 0.3, -0.9, 0.5]
    counts = []
    for v in calls:
        a = np.array([[v]], dtype=np.float32)
        np.testing.assert_array_equal(f(tf.constant(a)).numpy(), _expected_control_flow(a))
        counts.append(f.trace_count)
    # 0.7 takes the path of 0.5; -0.5 flips the sign; 0.3 loops once more; -0.9 = -0.5.
    assert counts == [1, 1, 2, 3, 3, 3]


def test_gradient_through_control_flow_both_signs():
    g = tf.grad(lambda a: tf.reduce_sum(control_flow(a)))
    for v in (0.5, -0.5, 0.3):
        a = np.array([[v]])
        expected = _expected_control_flow(a)[0, 0] / v
        np.testing.assert_allclose(g(a).numpy(), [[expected]], rtol=1e-12)


def test_function_replays_compiled_code_without_retracing():
    calls = []

    def f(x, w):
        calls.append(1)
        return tf.tanh(x @ w)
    fn = tf.function(f)
    for _ in range(3):
        x, w = RNG.normal(size=(4, 3)), RNG.normal(size=(3, 2))
        np.testing.assert_allclose(fn(x, w).numpy(), np.tanh(x @ w), rtol=1e-12)
    assert len(calls) == 1 and fn.trace_count == 1
    fn(RNG.normal(size=(5, 3)), RNG.normal(size=(3, 2)))     # new shape: new trace
    assert fn.trace_count == 2


def test_python_scalars_are_part_of_the_signature():
    fn = tf.function(lambda x, k: x * k)
    assert fn(np.ones(2), 2.0).numpy().tolist() == [2.0, 2.0]
    assert fn(np.ones(2), 3.0).numpy().tolist() == [3.0, 3.0]
    assert fn.trace_count == 2


def test_value_and_grad_is_one_function_and_matches_finite_differences():
    def loss(x, w):
        return tf.reduce_sum(tf.tanh(x @ w) ** 2)
    vg = tf.value_and_grad(loss, argnums=(0, 1))
    x, w = RNG.normal(size=(4, 3)), RNG.normal(size=(3, 2))
    value, (gx, gw) = vg(x, w)
    np.testing.assert_allclose(value.numpy(), np.sum(np.tanh(x @ w) ** 2), rtol=1e-12)
    for k, g in enumerate((gx, gw)):
        expected = numeric_gradient(lambda a, b: loss(a, b), [x, w], k)
        np.testing.assert_allclose(g.numpy(), expected, rtol=1e-6, atol=1e-9)
    source = vg.source(x, w)
    assert source.count("def function") == 1 and "np.tanh" in source


def test_grad_of_unmodified_numpy_function():
    labels = np.eye(3)[RNG.integers(0, 3, 6)]
    args = [RNG.normal(size=(6, 4)), RNG.normal(size=(4, 5)), RNG.normal(size=5),
            RNG.normal(size=(5, 3))]
    g = tf.grad(lambda x, w1, b1, w2: numpy_model.mlp_loss(x, w1, b1, w2, labels),
                argnums=(1, 2, 3))
    grads = g(*args)
    for k, grad in zip((1, 2, 3), grads):
        expected = numeric_gradient(
            lambda *t: tf.constant(numpy_model.mlp_loss(*[v.numpy() for v in t], labels)),
            args, k)
        np.testing.assert_allclose(grad.numpy(), expected, rtol=1e-6, atol=1e-9)


def test_jacobian_and_hessian():
    a = RNG.normal(size=(3, 3))
    x = RNG.normal(size=3)
    j = tf.jacobian(lambda v: tf.tanh(tf.linalg.matvec(tf.constant(a), v)))(x)
    y = np.tanh(a @ x)
    np.testing.assert_allclose(j.numpy(), (1 - y ** 2)[:, None] * a, rtol=1e-12)
    h = tf.hessian(lambda v: tf.reduce_sum(v * tf.linalg.matvec(tf.constant(a), v)))(x)
    np.testing.assert_allclose(h.numpy(), a + a.T, rtol=1e-12)


def test_variables_are_read_at_every_call():
    v = tf.Variable(2.0, trainable=False)
    f = tf.function(lambda x: x * v)
    x = np.float32(3.0)
    assert f(x).numpy() == 6.0
    v.assign(5.0)
    assert f(x).numpy() == 15.0 and f.trace_count == 1


def test_record_traces_immediately():
    calls = []

    def f(x):
        calls.append(1)
        return x + 1.0
    r = tf.record(f, np.zeros(3))
    assert len(calls) == 1 and isinstance(r, tf.Function)
    assert r(np.ones(3)).numpy().tolist() == [2.0, 2.0, 2.0] and len(calls) == 1


def test_grad_requires_a_scalar_output():
    with pytest.raises(TypeError, match="scalar"):
        tf.grad(lambda x: x * 2.0)(np.ones(3))


def test_bad_arguments():
    with pytest.raises(TypeError, match="argument 0"):
        tf.function(lambda x: x)(object())
    with pytest.raises(TypeError):
        tf.function(3)
    with pytest.raises(ValueError, match="argnums"):
        tf.grad(lambda x: tf.reduce_sum(x), argnums=2)(np.ones(2))


def test_argument_names_are_sanitized_identifiers():
    def f(x):
        return tf.reduce_sum(x * x)
    source = tf.grad(f).source(np.ones(2))
    assert "def function(x)" in source


def test_variable_arguments_stay_variables_inside_the_function():
    w = tf.Variable(np.ones(3))

    @tf.function
    def gradient_of_square(w):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * w)
        return tape.gradient(loss, w)
    assert gradient_of_square(w).numpy().tolist() == [2.0, 2.0, 2.0]
    w.assign([1.0, 2.0, 3.0])
    assert gradient_of_square(w).numpy().tolist() == [2.0, 4.0, 6.0]
    assert gradient_of_square.trace_count == 1
    other = tf.Variable(np.ones(3))
    gradient_of_square(other)                 # another Variable: another trace
    assert gradient_of_square.trace_count == 2


def test_none_outputs_are_kept():
    f = tf.function(lambda x: (tf.reduce_sum(x), None))
    total, nothing = f(np.ones(3))
    assert total.numpy() == 3.0 and nothing is None


def test_clear_cache_drops_traces():
    f = tf.function(lambda x: x * 2.0)
    f(np.ones(2))
    tf.clear_cache()
    f(np.ones(2))
    assert f.trace_count == 2
