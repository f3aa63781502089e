"""`tapec demo`: the GradientTape examples of the TensorFlow documentation, run on tapec.

Each example prints what the TensorFlow text prints; then the demo shows the NumPy
source tapec generated for one gradient and the compile-cache statistics.
"""
from __future__ import annotations

import numpy as np

import tapec as tf


def first_derivative():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    dy_dx = tape.gradient(y, x)
    print(dy_dx)
    print("Value:", dy_dx.numpy())
    return dy_dx


def second_derivative():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape2:
        tape2.watch(x)
        with tf.GradientTape() as tape3:
            tape3.watch(x)
            y = x * x
        dy_dx = tape3.gradient(y, x)
    d2y_d2x = tape2.gradient(dy_dx, x)
    print("Function: y = x * x, x = 3.0")
    print("First Derivative:", dy_dx.numpy())
    print("Second Derivative:", d2y_d2x.numpy())


def persistent_tape():
    x = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    dz_dx = tape.gradient(z, x)
    dy_dx = tape.gradient(y, x)
    print("First derivative of function y = x ^ 4 at x = 3 is", dz_dx.numpy())
    print("First derivative of function y = x ^ 2 at x = 3 is", dy_dx.numpy())


def watch_accessed_variables():
    variable_a = tf.Variable(3.0, name="x1")
    variable_b = tf.Variable(2.0, name="x2")
    with tf.GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        tape.watch(variable_a)
        y = variable_a ** 2
        z = variable_b ** 3
    print(tape.gradient(y, variable_a))
    print(tape.gradient(z, variable_b))


def what_is_watched():
    x0 = tf.Variable(3.0, name="x0")
    x1 = tf.Variable(3.0, name="x1", trainable=False)
    x2 = tf.Variable(2.0, name="x2") + 1.0
    x3 = tf.constant(3.0, name="x3")
    with tf.GradientTape() as tape:
        y = (x0 ** 2) + (x1 ** 2) + (x2 ** 2) + (x3 ** 2)
    for g in tape.gradient(y, [x0, x1, x2, x3]):
        print(g)


def matmul():
    x = tf.reshape(tf.Variable(range(4), dtype=tf.float32), (4, 1))
    with tf.GradientTape() as t:
        t.watch(x)
        y = 2 * tf.matmul(tf.transpose(x), x)
    dy_dx = t.gradient(y, x)
    print(repr(dy_dx))
    return dy_dx


def control_flow():
    def f(a):
        b = a * 2
        while tf.norm(b) < 1000:
            b = b * 2
        if tf.reduce_sum(b) > 0:
            c = b
        else:
            c = 100 * b
        return c

    tf.random.set_seed(0)
    a = tf.random.normal((1, 1), dtype=tf.float32)
    with tf.GradientTape() as t:
        t.watch(a)
        c = f(a)
    print(repr(t.gradient(c, a) == c / a))


def jacobians():
    with tf.GradientTape() as g:
        x = tf.constant([1.0, 2.0])
        g.watch(x)
        y = x * x
    print(repr(g.jacobian(y, x)))
    with tf.GradientTape() as g:
        x = tf.constant([[1., 2.], [3., 4.]], dtype=tf.float32)
        g.watch(x)
        y = x * x
    print(repr(g.batch_jacobian(y, x)))


def stop_recording():
    x = tf.constant(4.0)
    with tf.GradientTape() as tape:
        with tape.stop_recording():
            y = x ** 2
    print(tape.gradient(y, x))


def training_loop(steps=20):
    """A small model trained for `steps` steps: it differentiates once, then hits the cache."""
    rng = np.random.default_rng(0)
    inputs = tf.constant(rng.normal(size=(32, 3)), dtype=tf.float32)
    labels = tf.constant(rng.normal(size=(32, 1)), dtype=tf.float32)
    w = tf.Variable(rng.normal(size=(3, 1)) * 0.1, dtype=tf.float32, name="w")
    b = tf.Variable(0.0, name="b")
    for _ in range(steps):
        with tf.GradientTape() as tape:
            error = tf.tanh(tf.matmul(inputs, w) + b) - labels
            loss = tf.reduce_sum(error * error) / 32.0
        dw, db = tape.gradient(loss, [w, b])
        w.assign_sub(0.5 * dw)
        b.assign_sub(0.5 * db)
    print(f"loss after {steps} steps: {float(loss):.4f}")
    return dw


EXAMPLES = [first_derivative, second_derivative, persistent_tape, watch_accessed_variables,
            what_is_watched, matmul, control_flow, jacobians, stop_recording]


def main() -> int:
    tf.clear_cache()
    for example in EXAMPLES:
        print(f"== {example.__name__.replace('_', ' ')}")
        example()
        print()
    print("== training loop (20 steps of a tanh regression)")
    before = tf.cache_info()
    dw = training_loop()
    after = tf.cache_info()
    print(f"compiled {after.misses - before.misses} time(s), reused "
          f"{after.hits - before.hits} time(s)")
    print()
    print("== generated NumPy source of the training loop's gradient")
    print(tf.generated_source(dw))
    info = tf.cache_info()
    print(f"== compile cache: {info.hits} hits, {info.misses} misses, {info.size} entries "
          f"(max {info.maxsize})")
    return 0
