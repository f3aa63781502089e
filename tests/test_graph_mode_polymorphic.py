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
        np.testing.assert_allclose(loss.numpy(), eager_loss.numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(grad.numpy(), eager_grad.numpy(), rtol=1e-10, atol=1e-14)
    assert traced.experimental_get_tracing_count() == 1, names
