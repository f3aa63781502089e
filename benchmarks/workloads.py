"""Workloads W1..W8 and W11: inputs, the hand-written NumPy reference and the tapec tape
path (W9 and W10, which run a user's training loop, are in `training.py`; the `Case` they
all make is in `case.py`).

Each workload makes one or more `Case`s. A case holds the NumPy inputs (`data`), the
reference (`numpy()`: forward pass and analytic derivative written by hand), the tapec
step (`tapec(*tapec_args)`: record the forward pass inside `GradientTape` and ask for the
derivative) and the tolerance its result must meet. The other systems build their
version of a case from `case.data` and `case.params` (see `systems.py`).
"""
from __future__ import annotations

import math

import numpy as np

import tapec as tf

from . import steps

from .case import Case
from .case import rng as _rng
from .case import size as _size
from .exported import w12
from .training import w9, w10

#: W8 loop lengths at scale 1.
W8_SIZES = (100, 1000, 2000, 10000)

#: W8 loop lengths timed at their first call only, on tapec alone: the compile
#: throughput case (12,000 iterations record 48,000 ops).
W8_COMPILE_SIZES = (12000,)


# --- W1 ---------------------------------------------------------------------------------
def w1(scale: float = 1.0) -> list[Case]:
    x = tf.constant(3.0)                 # float32, as TensorFlow
    xv = np.float32(3.0)

    tapec_step = steps.w1(tf)

    def numpy_step():
        y = xv * xv                      # noqa: F841  (the forward pass runs too)
        return np.float32(2.0) * xv

    return [Case("W1", "W1", "record + gradient of y = x*x at x = 3.0", "float32",
                 numpy_step, tapec_step, (x,), {"x": xv},
                 functional=tf.grad(lambda x: x * x))]


# --- W2 ---------------------------------------------------------------------------------
def w2(scale: float = 1.0) -> list[Case]:
    sizes = _size(128, scale), _size(784, scale), _size(256, scale), 10
    return [mlp_case("W2", sizes, seed=2)]


def mlp_case(workload: str, sizes, seed: int) -> Case:
    """The gradient of an MLP's mean softmax cross-entropy w.r.t. its weights, at
    `sizes` = (batch, inputs, hidden, outputs): W2, and W11 at a small size."""
    batch, n_in, n_hidden, n_out = sizes
    rng = _rng(seed)
    f32 = np.float32
    X = rng.normal(size=(batch, n_in)).astype(f32)
    Y = np.eye(n_out, dtype=f32)[rng.integers(0, n_out, size=batch)]
    W1 = (rng.normal(size=(n_in, n_hidden)) / np.sqrt(n_in)).astype(f32)
    b1 = (rng.normal(size=n_hidden) * 0.1).astype(f32)
    W2 = (rng.normal(size=(n_hidden, n_out)) / np.sqrt(n_hidden)).astype(f32)
    b2 = (rng.normal(size=n_out) * 0.1).astype(f32)
    data = {"X": X, "Y": Y, "W1": W1, "b1": b1, "W2": W2, "b2": b2}

    Xt, Yt = tf.constant(X), tf.constant(Y)
    params = [tf.Variable(W1, name="W1"), tf.Variable(b1, name="b1"),
              tf.Variable(W2, name="W2"), tf.Variable(b2, name="b2")]

    tapec_step = steps.w2(tf)

    def numpy_step():
        h = np.tanh(X @ W1 + b1)
        logits = h @ W2 + b2
        shifted = logits - logits.max(axis=1, keepdims=True)
        e = np.exp(shifted)
        s = e.sum(axis=1, keepdims=True)
        loss = np.mean(np.sum(Y * (np.log(s) - shifted), axis=1))  # noqa: F841
        d_logits = (e / s - Y) / f32(batch)
        d_h = (d_logits @ W2.T) * (1 - h * h)
        return [X.T @ d_h, d_h.sum(axis=0), h.T @ d_logits, d_logits.sum(axis=0)]

    title = (f"gradient of mean softmax cross-entropy, {n_in}-{n_hidden}-{n_out} tanh MLP, "
             f"batch {batch}, float32")
    def loss(X, Y, W1, b1, W2, b2):
        h = tf.tanh(tf.matmul(X, W1) + b1)
        logits = tf.matmul(h, W2) + b2
        return tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=Y, logits=logits))

    return Case(workload, workload, title, "float32", numpy_step, tapec_step,
                (Xt, Yt, *params), data, functional=tf.grad(loss, argnums=(2, 3, 4, 5)))


# --- W3 ---------------------------------------------------------------------------------
def w3(scale: float = 1.0) -> list[Case]:
    n = _size(1_000_000, scale)
    xv = _rng(3).normal(size=n)
    x = tf.constant(xv)

    tapec_step = steps.w3(tf)

    def numpy_step():
        x2 = xv * xv
        e, s, t, l1 = np.exp(-x2), np.sin(xv), np.tanh(xv), np.log1p(x2)
        q = 1 + x2
        r = np.sqrt(q)
        y = np.sum(s * e + l1 * t + r)      # noqa: F841
        return e * (np.cos(xv) - 2 * xv * s) + 2 * xv * t / q + l1 * (1 - t * t) + xv / r

    title = f"gradient of sum(sin(x)exp(-x^2) + log1p(x^2)tanh(x) + sqrt(1+x^2)), n={n:,}"
    def f(x):
        return tf.reduce_sum(tf.sin(x) * tf.exp(-x ** 2) + tf.math.log1p(x ** 2) * tf.tanh(x)
                             + tf.sqrt(1 + x ** 2))

    return [Case("W3", "W3", title, "float64", numpy_step, tapec_step, (x,), {"x": xv},
                 functional=tf.grad(f))]


# --- W4 ---------------------------------------------------------------------------------
def w4(scale: float = 1.0) -> list[Case]:
    n = _size(1000, scale)
    rng = _rng(4)
    A, xv = rng.normal(size=(n, n)), rng.normal(size=n)
    At, x = tf.constant(A), tf.constant(xv)

    tapec_step = steps.w4(tf)

    def numpy_step():
        return A + A.T

    title = f"Hessian of x^T A x, n={n} (nested tapes: jacobian of gradient)"
    hessian = tf.hessian(lambda A, x: tf.reduce_sum(x * tf.linalg.matvec(A, x)), argnums=1)
    return [Case("W4", "W4", title, "float64", numpy_step, tapec_step, (At, x),
                 {"A": A, "x": xv}, functional=hessian)]


# --- W5 ---------------------------------------------------------------------------------
def w5(scale: float = 1.0) -> list[Case]:
    n, d = _size(1000, scale), _size(100, scale)
    rng = _rng(5)
    X = rng.normal(size=(n, d))
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    wv = rng.normal(size=d) * 0.1
    Xt, yt, w = tf.constant(X), tf.constant(y), tf.constant(wv)

    tapec_step = steps.w5(tf)

    def numpy_step():
        # L = mean(log(1 + exp(-z))), z = y * (X w).  dL/dw = -X^T (y sigmoid(-z)) / n;
        # y^2 = 1, so H = X^T diag(p (1 - p)) X / n with p = sigmoid(z).
        z = y * (X @ wv)
        p = 1 / (1 + np.exp(-z))
        return X.T @ (X * (p * (1 - p))[:, None]) / n

    title = f"Hessian of mean logistic loss w.r.t. w, X {n}x{d}"
    def loss(X, y, w):
        return tf.reduce_mean(tf.math.log(1 + tf.exp(-(y * tf.linalg.matvec(X, w)))))

    return [Case("W5", "W5", title, "float64", numpy_step, tapec_step, (Xt, yt, w),
                 {"X": X, "y": y, "w": wv}, functional=tf.hessian(loss, argnums=2))]


# --- W6 ---------------------------------------------------------------------------------
def w6(scale: float = 1.0) -> list[Case]:
    n = _size(500, scale)
    rng = _rng(6)
    Wv, xv = rng.normal(size=(n, n)) / np.sqrt(n), rng.normal(size=(n, 1))
    W, x = tf.constant(Wv), tf.constant(xv)

    tapec_step = steps.w6(tf)

    def numpy_step():
        y = np.tanh(Wv @ xv)
        return (1 - y * y) * Wv

    title = f"jacobian of tanh(W x) w.r.t. x, W {n}x{n}"
    jacobian = tf.jacobian(lambda W, x: tf.tanh(tf.matmul(W, x)), argnums=1)
    return [Case("W6", "W6", title, "float64", numpy_step, tapec_step, (W, x),
                 {"W": Wv, "x": xv}, functional=jacobian)]


# --- W7a, W7b ---------------------------------------------------------------------------
def w7a(scale: float = 1.0) -> list[Case]:
    b, d = _size(128, scale), _size(64, scale)
    xv = _rng(7).normal(size=(b, d)).astype(np.float32)
    x = tf.constant(xv)
    eye = np.eye(d, dtype=np.float32)

    tapec_step = steps.w7a(tf)

    def numpy_step():
        y = xv * xv                       # noqa: F841
        return 2 * xv[:, :, None] * eye

    title = f"batch_jacobian of y = x*x, b={b}, d={d}"
    return [Case("W7a", "W7a", title, "float32", numpy_step, tapec_step, (x,), {"x": xv})]


def w7b(scale: float = 1.0) -> list[Case]:
    b, d = _size(128, scale), _size(64, scale)
    rng = _rng(77)
    xv = rng.normal(size=(b, d)).astype(np.float32)
    Mv = (rng.normal(size=(d, d)) / np.sqrt(d)).astype(np.float32)
    x, M = tf.constant(xv), tf.constant(Mv)

    tapec_step = steps.w7b(tf)

    def numpy_step():
        # y[i, j] = tanh(sum_k x[i, k] M[k, j]), so dy[i, j]/dx[i, k] = (1 - y[i, j]^2) M[k, j]:
        # result[i, j, k] = (1 - y^2)[i, j] * M.T[j, k].
        y = np.tanh(xv @ Mv)
        return (1 - y * y)[:, :, None] * Mv.T[None]

    title = f"batch_jacobian of y = tanh(x @ M), b={b}, d={d}"
    return [Case("W7b", "W7b", title, "float32", numpy_step, tapec_step, (x, M),
                 {"x": xv, "M": Mv})]


# --- W8 ---------------------------------------------------------------------------------
def w8(scale: float = 1.0) -> list[Case]:
    cases = []
    for size in W8_SIZES + W8_COMPILE_SIZES:
        n = _size(size, scale, minimum=1)
        x0 = 0.7
        x = tf.constant(x0, dtype=tf.float64)

        tapec_step = steps.w8(tf, n)

        def numpy_step(n=n, x0=x0):
            ys = [0.0] * n
            y = x0
            for i in range(n):
                ys[i] = y
                y = math.sin(y) * 0.5 + y * 0.3
            g = 1.0
            for i in range(n - 1, -1, -1):
                g *= math.cos(ys[i]) * 0.5 + 0.3
            return g

        title = (f"scalar loop y = sin(y)*0.5 + y*0.3, N={n:,} iterations "
                 f"({4 * n:,} recorded ops)")
        def loop(x, n=n):
            y = x
            for _ in range(n):
                y = tf.sin(y) * 0.5 + y * 0.3
            return y

        # The compile-throughput sizes time the first call only, and only tapec's: the
        # steady state adds nothing to the smaller sizes, and other systems' first calls
        # at 48,000 ops (TF function traces for minutes) measure nothing tapec is after.
        compile_only = size in W8_COMPILE_SIZES
        for first in (True,) if compile_only else (False, True):
            label = f"W8 N={n}" + (" first" if first else "")
            cases.append(Case(label, "W8", title + (", first call" if first else ""),
                              "float64", numpy_step, tapec_step, (x,), {"x": x0},
                              {"N": n, "ops": 4 * n, "size": size,
                               "compile_throughput": compile_only},
                              first_call=first, functional=tf.grad(loop),
                              tapec_only=compile_only))
    return cases


# --- W11 --------------------------------------------------------------------------------
def w11(scale: float = 1.0) -> list[Case]:
    """W2's gradient at a small size, timed at its first call in a new process: what a
    user waits for before the first step of a script."""
    sizes = _size(32, scale), _size(32, scale), _size(64, scale), 10
    case = mlp_case("W11", sizes, seed=11)
    case.title = "first gradient in a fresh process: " + case.title
    case.fresh_process = case.first_call = True
    return [case]


WORKLOADS = {"W1": w1, "W2": w2, "W3": w3, "W4": w4, "W5": w5, "W6": w6, "W7a": w7a,
             "W7b": w7b, "W8": w8, "W9": w9, "W10": w10, "W11": w11, "W12": w12}

DESCRIPTIONS = {
    "W1": "record + gradient of y = x*x at x = 3.0 (float32 scalar)",
    "W2": "gradient of mean softmax cross-entropy of a 784-256-10 tanh MLP, batch 128, "
          "float32, w.r.t. W1, b1, W2, b2",
    "W3": "gradient of sum(sin(x)*exp(-x**2) + log1p(x**2)*tanh(x) + sqrt(1+x**2)), "
          "x of 1e6 float64",
    "W4": "Hessian of x^T A x, n = 1000, float64 (tapec: outer.jacobian(inner.gradient))",
    "W5": "Hessian w.r.t. w (d = 100) of mean(log(1 + exp(-y * (X @ w)))), X 1000x100, "
          "float64",
    "W6": "jacobian of tanh(W x) w.r.t. x, W 500x500, float64",
    "W7a": "batch_jacobian of y = x*x, b = 128, d = 64, float32",
    "W7b": "batch_jacobian of y = tanh(x @ M) w.r.t. x, x 128x64, M 64x64, float32 "
           "(NumPy: (1 - y**2)[:, :, None] * M.T[None])",
    "W8": "scalar loop y = sin(y)*0.5 + y*0.3, N iterations from a watched float64 x, "
          "dy/dx; one iteration records 4 ops (sin, two multiplications by literals, "
          "add); rows give steady state and first call (after tapec.clear_cache()); "
          "N = 12,000 (48,000 ops) is timed at its first call on tapec only: the compile "
          "throughput case",
    "W9": "softmax regression on scikit-learn's digits (1797x64 scaled by 1/16, 10 "
          "classes), 300 full-batch gradient-descent steps, learning rate 0.5, W (64, 10) "
          "and b (10,) from zero, float64, loss = mean sparse softmax cross-entropy; one "
          "call is the whole 300-step run and returns the final loss and accuracy. Tape: "
          "a `GradientTape` per step and `assign_sub` on Variables; TF idiom: the train "
          "step under `tf.function`, called 300 times; functional: `tapec.value_and_grad` "
          "with NumPy updates",
    "W10": "50 gradient-descent steps (learning rate 0.1) on x, a float64 vector of 1000, "
           "of reduce_sum(x*x) + beta * reduce_sum(sin(x)) with an annealed Python float "
           "beta = min(1.0, step / 25); one call is the whole 50-step run. `W10` passes "
           "beta as a Python float (to the train step under `tf.function` as well: "
           "TensorFlow retraces for each new float by design), `W10 tensor` as "
           "`tf.constant(beta)`; compiles from a cold cache are counted (table below)",
    "W11": "first gradient in a fresh process: a 32-64-10 tanh MLP, batch 32, float32, "
           "mean softmax cross-entropy (W2's code at a small size), tape idiom; the "
           "import of each library and the conversion of the inputs are not timed, the "
           "first gradient call is (JAX: its first `jit(grad(loss))` call, compilation "
           "included); median of 3 new processes, tapec's persistent cache off",
    "W12": "an exported module's gradient per call (`tapec.export` with a None batch "
           "dimension, the module imported and called as a user does) against the same "
           "gradient written by hand in the same namespace: the mean logistic loss over "
           "X 64x5 and a 8-16-1 tanh MLP's mean squared error at batch 64 on NumPy "
           "arrays, and the logistic loss on PyTorch tensors (array-api-strict arrays "
           "where PyTorch is absent; no row without either) through the module's "
           "array-namespace path; tapec only (benchmarks/exported.py)",
}


def build_cases(scale: float = 1.0, only=None) -> list[Case]:
    """Every case of the selected workloads (all when `only` is empty), at `scale`.
    Names are matched without regard to case; "W7" selects W7a and W7b."""
    names = list(WORKLOADS) if not only else select(only)
    cases = []
    for name in names:
        cases.extend(WORKLOADS[name](scale))
    return cases


def select(only) -> list:
    """The WORKLOADS keys that the names in `only` ask for ("w7" -> W7a, W7b), in order;
    ValueError naming the unknown ones."""
    chosen, unknown = [], []
    for name in only:
        wanted = name.strip().lower()
        keys = [k for k in WORKLOADS if k.lower() == wanted] or [
            k for k in WORKLOADS if k.lower().rstrip("ab") == wanted and k[-1] in "ab"]
        if not keys:
            unknown.append(name)
        chosen += [k for k in keys if k not in chosen]
    if unknown:
        raise ValueError(f"unknown workload(s) {', '.join(unknown)}; "
                         f"choose from {', '.join(WORKLOADS)}")
    return chosen


# --- checking ---------------------------------------------------------------------------
def to_numpy(value):
    """A system's result as NumPy arrays (lists stay lists)."""
    if isinstance(value, (list, tuple)):
        return [to_numpy(v) for v in value]
    if hasattr(value, "detach"):           # torch
        value = value.detach()
    if hasattr(value, "numpy"):            # tapec, TensorFlow, torch
        value = value.numpy()
    return np.asarray(value)


def check(got, expected, rtol: float, what: str = "result") -> None:
    """Raise AssertionError unless `got` equals `expected` to `rtol` (absolute tolerance
    rtol * max|expected|); arrays of equal size are compared after reshaping."""
    got, expected = to_numpy(got), to_numpy(expected)
    if isinstance(expected, list):
        if not isinstance(got, list) or len(got) != len(expected):
            raise AssertionError(f"{what}: expected {len(expected)} results, got "
                                 f"{len(got) if isinstance(got, list) else 1}")
        for i, (g, e) in enumerate(zip(got, expected)):
            check(g, e, rtol, f"{what}[{i}]")
        return
    if isinstance(got, list):
        message = f"{what}: expected one array, got a list of {len(got)}"
        raise AssertionError(message)  # noqa: TRY004  (a failed check, not a type error)
    expected = np.asarray(expected)
    if got.size == expected.size:
        got = got.reshape(expected.shape)
    scale = float(np.max(np.abs(expected))) if expected.size else 0.0
    tiny = np.finfo(expected.dtype if expected.dtype.kind == "f" else np.float64).tiny
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=max(rtol * scale, tiny),
                               err_msg=what)
