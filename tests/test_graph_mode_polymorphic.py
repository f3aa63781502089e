"""Random batch-generic programs under an input_signature with a None batch dimension:
one trace serves every batch size, and every size's answer equals the eager one
(tracing/polymorphic.py, docs/functions.md "One trace for every batch size")."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tapec as tf

W = np.array([[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]])

# Each step maps a (batch, k) tensor to another (batch, k') tensor, whatever the batch.
STEPS = {
    "tanh": lambda x: tf.tanh(x),
    "square": lambda x: x * x,
    "center": lambda x: x - tf.reduce_mean(x, axis=0),
    "scale by batch": lambda x: x / tf.cast(tf.shape(x)[0], tf.float64),
    "softmax": lambda x: tf.nn.softmax(x, axis=1),
    "row logsumexp": lambda x: tf.reshape(tf.reduce_logsumexp(x, axis=1), (-1, 1)),
    "project": lambda x: tf.matmul(x[:, :1] * tf.ones((1, 3), tf.float64), W),
    "exp": lambda x: tf.exp(-x * x),
    "max over batch": lambda x: x - tf.reduce_max(x, axis=0, keepdims=True),
}


def _program(names):
    def body(x):
        for name in names:
            x = STEPS[name](x)
        return x
    return body


def _loss_and_gradient(body):
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_mean(body(x))
        return loss, tape.gradient(loss, x)
    return f


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(names=st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=5),
       sizes=st.lists(st.integers(2, 40), min_size=3, max_size=4, unique=True),
       seed=st.integers(0, 2 ** 16))
def test_random_batch_programs_trace_once_and_match_eager(names, sizes, seed):
    body = _loss_and_gradient(_program(names))
    traced = tf.function(body, input_signature=[tf.TensorSpec([None, 3], tf.float64)])
    rng = np.random.default_rng(seed)
    for n in sizes:
        x = rng.normal(size=(n, 3))
        loss, grad = traced(x)
        eager_loss, eager_grad = body(tf.constant(x))
        # Fused and eager code round in different orders: an entry that nearly cancels
        # is compared on the scale of the whole gradient, not its own.
        scale = 1.0 + float(np.abs(eager_grad.numpy()).max())
        np.testing.assert_allclose(loss.numpy(), eager_loss.numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(grad.numpy(), eager_grad.numpy(), rtol=1e-10,
                                   atol=1e-13 * scale)
    assert traced.experimental_get_tracing_count() == 1, names


def test_ones_like_and_zeros_like_follow_the_batch_size_in_one_trace():
    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float64)])
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            h = tf.tanh(x)
            y = tf.reduce_sum(h * tf.ones_like(h) + tf.zeros_like(x, dtype=tf.float64))
        return y, tape.gradient(y, x), tf.ones_like(x, dtype=tf.int32)

    rng = np.random.default_rng(3)
    for n in (4, 5, 9):
        x = rng.normal(size=(n, 3))
        y, g, ones = f(x)
        np.testing.assert_allclose(y.numpy(), np.tanh(x).sum(), rtol=1e-13)
        np.testing.assert_allclose(g.numpy(), 1 - np.tanh(x) ** 2, rtol=1e-13)
        assert ones.dtype == tf.int32 and ones.numpy().tolist() == np.ones((n, 3), int).tolist()
    assert f.experimental_get_tracing_count() == 1


def test_a_functional_gradient_called_inside_follows_each_batch_size():
    # The inner function's trace key was the static shape (None for the batch), so the
    # program traced at the first size was replayed at the next one.
    w = np.array([0.5, -1.0, 2.0])
    g = tf.grad(lambda w, X: tf.reduce_mean(tf.tanh(tf.linalg.matvec(X, w))))

    @tf.function(input_signature=[tf.TensorSpec([3], tf.float64),
                                  tf.TensorSpec([None, 3], tf.float64)])
    def outer(w, X):
        return g(w, X)

    for n in (4, 9, 5):
        X = np.random.default_rng(n).normal(size=(n, 3))
        t = np.tanh(X @ w)
        np.testing.assert_allclose(outer(w, X).numpy(), X.T @ (1 - t * t) / n, rtol=1e-12)
    assert outer.experimental_get_tracing_count() == 1
