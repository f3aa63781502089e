"""tapec's graph mode against TensorFlow's own tf.function, on the same programs.

Runs where TensorFlow is installed (`pip install -e ".[dev]"`); skipped elsewhere. Each
program is written once as a TF user writes it and run with `tf` bound to TensorFlow
and to tapec."""
import os

import numpy as np
import pytest

import tapec

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tensorflow = pytest.importorskip("tensorflow")

RNG = np.random.default_rng(11)
X = RNG.normal(size=(40, 4))
Y = np.eye(3)[RNG.integers(0, 3, 40)]


def _train(tf, steps=6):
    """Softmax regression with momentum: a tape, two Variables updated together, a
    counter, and a read after a write, inside tf.function."""
    W = tf.Variable(np.zeros((4, 3)))
    velocity = tf.Variable(np.zeros((4, 3)))
    count = tf.Variable(0)
    Xt, Yt = tf.constant(X), tf.constant(Y)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            logits = tf.matmul(x, W)
            loss = tf.reduce_mean(
                tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits))
        g = tape.gradient(loss, W)
        velocity.assign(0.9 * velocity - 0.5 * g)
        W.assign_add(velocity)
        count.assign_add(1)
        return loss, tf.reduce_sum(W * W)

    results = [step(Xt, Yt) for _ in range(steps)]
    return ([float(a) for a, _ in results], [float(b) for _, b in results], W.numpy(),
            int(count.numpy()))


def test_train_step_matches_tensorflow():
    mine, theirs = _train(tapec), _train(tensorflow)
    np.testing.assert_allclose(mine[0], theirs[0], rtol=1e-10)
    np.testing.assert_allclose(mine[1], theirs[1], rtol=1e-10)
    np.testing.assert_allclose(mine[2], theirs[2], rtol=1e-10, atol=1e-14)
    assert mine[3] == theirs[3] == 6


def _nested_hessian(tf, x):
    A = tf.constant(np.arange(16.0).reshape(4, 4) / 10)

    @tf.function
    def hessian(x):
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = tf.reduce_sum(tf.tanh(tf.linalg.matvec(A, x)) * x)
            g = inner.gradient(y, x)
        return outer.jacobian(g, x)

    return [hessian(tf.constant(v)).numpy() for v in x]


def test_nested_tape_hessian_matches_tensorflow():
    points = [RNG.normal(size=4) for _ in range(3)]
    for mine, theirs in zip(_nested_hessian(tapec, points),
                            _nested_hessian(tensorflow, points)):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-13)


def _branching(tf, values):
    @tf.function
    def f(x, i):
        y = tf.gather(x, i)
        if tf.reduce_sum(y) > 0:
            return tf.reduce_sum(y * y)
        return -tf.reduce_sum(y)

    x = tf.constant(np.array([1.0, -2.0, 3.0]))
    return [float(f(x, tf.constant(i))) for i in values]


def test_branches_and_index_arguments_match_tensorflow():
    values = [[0, 2], [1, 1], [2, 0], [1, 0]]
    assert _branching(tapec, values) == _branching(tensorflow, values)
