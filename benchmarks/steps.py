"""The TensorFlow step of each workload, written once as a TensorFlow user writes it.

Each builder takes the `tf` module to run it on: tapec (`import tapec as tf`: the
`tapec` and `tapec tf.function` columns) or TensorFlow itself (the TF columns), so the
systems that run "the TF body" run the same text.
"""
from __future__ import annotations


def w1(tf):
    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x * x
        return tape.gradient(y, x)
    return step


def w2(tf):
    def step(X, Y, W1, b1, W2, b2):
        with tf.GradientTape() as tape:
            h = tf.tanh(tf.matmul(X, W1) + b1)
            logits = tf.matmul(h, W2) + b2
            loss = tf.reduce_mean(
                tf.nn.softmax_cross_entropy_with_logits(labels=Y, logits=logits))
        return tape.gradient(loss, [W1, b1, W2, b2])
    return step


def w3(tf):
    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.sin(x) * tf.exp(-x ** 2)
                              + tf.math.log1p(x ** 2) * tf.tanh(x) + tf.sqrt(1 + x ** 2))
        return tape.gradient(y, x)
    return step


def w4(tf):
    def step(A, x):
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                f = tf.reduce_sum(x * tf.linalg.matvec(A, x))
            g = inner.gradient(f, x)
        return outer.jacobian(g, x)
    return step


def w5(tf):
    def step(X, y, w):
        with tf.GradientTape() as outer:
            outer.watch(w)
            with tf.GradientTape() as inner:
                inner.watch(w)
                z = y * tf.linalg.matvec(X, w)
                loss = tf.reduce_mean(tf.math.log(1 + tf.exp(-z)))
            g = inner.gradient(loss, w)
        return outer.jacobian(g, w)
    return step


def w6(tf):
    def step(W, x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.tanh(tf.matmul(W, x))
        return tape.jacobian(y, x)
    return step


def w7a(tf):
    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x * x
        return tape.batch_jacobian(y, x)
    return step


def w7b(tf):
    def step(x, M):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.tanh(tf.matmul(x, M))
        return tape.batch_jacobian(y, x)
    return step


def w8(tf, n):
    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x
            for _ in range(n):
                y = tf.sin(y) * 0.5 + y * 0.3
        return tape.gradient(y, x)
    return step
