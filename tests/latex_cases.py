"""A table of derivative programs for the LaTeX printer: scalar, vector and matrix
functions and their Hessians, each with the string tapec prints and a textbook form.

`CASES[name]()` records the program and returns `(tape, target, sources, names)`;
`PRINTED[name]` is the exact string `tape.latex(target, sources, names)` gives, and
`TEXTBOOK[name]` the form a textbook (or the Matrix Cookbook) writes, for the gallery.
"""
import numpy as np

import tapec as tf

RNG_SEED = 20


def _rng():
    return np.random.default_rng(RNG_SEED)


def _c(shape, low=0.5, high=1.5):
    return tf.constant(_rng().uniform(low, high, size=shape))


def _scalar(fn, value=0.7):
    x = tf.constant(value, dtype=tf.float64)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = fn(x)
    return tape, y, x, [(x, "x")]


def _scalar_second(fn, value=0.7):
    x = tf.constant(value, dtype=tf.float64)
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = fn(x)
        g = inner.gradient(y, x)
    return outer, g, x, [(x, "x"), (g, "f")]


def _vector(fn, shape=(3, 1), named=()):
    x = _c(shape)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = fn(x)
    return tape, y, x, [(x, "x"), *named]


def _hessian(fn, shape=(3, 1), named=()):
    x = _c(shape)
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = fn(x)
        g = inner.gradient(y, x)
    return outer, g, x, [(x, "x"), *named]


def _matrices():
    rng = _rng()
    return (tf.constant(rng.uniform(0.5, 1.5, size=(3, 3))),
            tf.constant(rng.uniform(0.5, 1.5, size=(4, 3))),
            tf.constant(rng.uniform(0.5, 1.5, size=(3, 1))),
            tf.constant(rng.uniform(0.5, 1.5, size=(4, 1))))


A, R, a, b = _matrices()
SPD = tf.constant(np.eye(3) * 3 + _rng().uniform(0, 0.3, size=(3, 3)))
SPD = tf.constant((SPD.numpy() + SPD.numpy().T) / 2)
X5 = tf.constant(_rng().normal(size=(5, 3)))
LABELS = tf.constant(_rng().uniform(size=(5, 1)))


def _mlp():
    rng = np.random.default_rng(3)
    x = tf.constant(rng.normal(size=(3, 1)))
    W1 = tf.Variable(rng.normal(size=(4, 3)), name="W1")
    b1 = tf.Variable(rng.normal(size=(4, 1)), name="b1")
    W2 = tf.Variable(rng.normal(size=(1, 4)), name="W2")
    with tf.GradientTape(persistent=True) as tape:
        loss = tf.reduce_sum(tf.square(W2 @ tf.tanh(W1 @ x + b1) - 1.0))
    return tape, loss, [W1, b1, W2], [(x, "x"), (loss, "L")]


def _attention():
    rng = np.random.default_rng(4)
    Q = tf.constant(rng.normal(size=(4, 3)))
    K = tf.constant(rng.normal(size=(5, 3)))
    V = tf.constant(rng.normal(size=(5, 2)))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(Q)
        out = tf.reduce_sum(tf.nn.softmax(Q @ tf.transpose(K)) @ V)
    return tape, out, Q, [(Q, "Q"), (K, "K"), (V, "V")]


def _logistic(hessian):
    w = tf.Variable(np.random.default_rng(5).normal(size=(3, 1)), name="w")
    names = [(X5, "X"), (LABELS, "y")]
    with tf.GradientTape(persistent=True) as outer:
        with tf.GradientTape() as inner:
            p = tf.sigmoid(X5 @ w)
            loss = tf.reduce_mean(-(LABELS * tf.math.log(p) +
                                    (1 - LABELS) * tf.math.log(1 - p)))
        g = inner.gradient(loss, w)
    if hessian:
        return outer, g, w, names + [(g, "L")]
    return outer, loss, w, names + [(loss, "L")]


def _logdet():
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(SPD)
        y = tf.math.log(tf.linalg.det(SPD))
    return tape, y, SPD, [(SPD, "X")]


CASES = {
    # scalar functions
    "S1 x^4": lambda: _scalar(lambda x: x ** 4),
    "S2 sin x e^x": lambda: _scalar(lambda x: tf.sin(x) * tf.exp(x)),
    "S3 sigmoid": lambda: _scalar(lambda x: 1 / (1 + tf.exp(-x))),
    "S4 softplus": lambda: _scalar(lambda x: tf.math.log(1 + tf.exp(x))),
    "S5 tanh^2": lambda: _scalar(lambda x: tf.tanh(x) ** 2),
    "S6 log(1+x^2)/5": lambda: _scalar(lambda x: tf.math.log(1 + x * x) / 5),
    "S7 x log x": lambda: _scalar(lambda x: x * tf.math.log(x)),
    "S8 Hess sin x^2": lambda: _scalar_second(lambda x: tf.sin(x * x)),
    # vector functions
    "V1 a^T x": lambda: _vector(lambda x: tf.reduce_sum(a * x), named=[(a, "a")]),
    "V2 ||x||": lambda: _vector(lambda x: tf.norm(x)),
    "V3 ||x||^2": lambda: _vector(lambda x: tf.reduce_sum(x * x)),
    "V4 sigmoid jacobian": lambda: _vector(lambda x: tf.sigmoid(x)),
    "V5 softplus sum": lambda: _vector(lambda x: tf.reduce_sum(tf.nn.softplus(x))),
    "V6 softmax jacobian": lambda: _vector(lambda x: tf.nn.softmax(x), shape=(3,)),
    "V7 logsumexp": lambda: _vector(lambda x: tf.reduce_logsumexp(x), shape=(3,)),
    "V8 x^T A x": lambda: _vector(lambda x: tf.transpose(x) @ A @ x, named=[(A, "A")]),
    "V9 ||Ax-b||^2": lambda: _vector(lambda x: tf.reduce_sum(tf.square(R @ x - b)),
                                     named=[(R, "A"), (b, "b")]),
    "V10 tanh(Ax) jacobian": lambda: _vector(lambda x: tf.tanh(R @ x), named=[(R, "A")]),
    "V11 sigmoid(a^T x)": lambda: _vector(lambda x: tf.sigmoid(tf.transpose(a) @ x),
                                          named=[(a, "a")]),
    "V12 mean of squares": lambda: _vector(lambda x: tf.reduce_mean(x * x)),
    "V13 exp jacobian": lambda: _vector(lambda x: tf.exp(x)),
    # matrix functions
    "M1 tr X": lambda: _vector(lambda x: tf.linalg.trace(x), shape=(3, 3), named=[]),
    "M2 tr(AX)": lambda: _vector(lambda x: tf.linalg.trace(A @ x), shape=(3, 3),
                                 named=[(A, "A")]),
    "M3 log det X": _logdet,
    "M4 X^T X jacobian": lambda: _vector(lambda x: tf.transpose(x) @ x, shape=(4, 3)),
    "M5 ||X||_F^2": lambda: _vector(lambda x: tf.reduce_sum(x * x), shape=(3, 3)),
    "M6 row-wise logsumexp": lambda: _vector(
        lambda x: tf.reduce_sum(tf.reduce_logsumexp(x, axis=1)), shape=(4, 3)),
    "M7 MLP": _mlp,
    "M8 attention softmax": _attention,
    "M9 logistic loss": lambda: _logistic(False),
    # Hessians
    "H1 Hess x^T A x": lambda: _hessian(lambda x: tf.transpose(x) @ A @ x, named=[(A, "A")]),
    "H2 Hess ||Ax-b||^2": lambda: _hessian(lambda x: tf.reduce_sum(tf.square(R @ x - b)),
                                           named=[(R, "A"), (b, "b")]),
    "H3 Hess logistic": lambda: _logistic(True),
    "H4 Hess logsumexp": lambda: _hessian(lambda x: tf.reduce_logsumexp(x), shape=(3,)),
    "H5 Hess sum exp": lambda: _hessian(lambda x: tf.reduce_sum(tf.exp(x))),
    "H6 Hess ||x||^2/2": lambda: _hessian(lambda x: tf.reduce_sum(x * x) / 2),
}


def printed(name):
    """What tapec prints for case `name`."""
    tape, target, sources, names = CASES[name]()
    return tape.latex(target, sources, names)
