"""Workloads that run a user's training loop, and their version on every system.

W9 trains softmax regression on scikit-learn's digits for 300 steps; W10 runs 50 steps
whose loss takes an annealed Python float. One call is the whole run. tapec's three
columns run the loop as users write it: a `GradientTape` per step (the tape), the train
step under `tf.function` called once per step (the TF idiom, `Case.tf_idiom`), and
tapec's functional forms with NumPy updates. The `*Training` classes hold the other
systems' versions; `systems.py` mixes them into its systems.
"""
from __future__ import annotations

import numpy as np

import tapec as tf

from .case import Case, rng, size

# --- W9 ---------------------------------------------------------------------------------
W9_STEPS, W9_LR, W9_CLASSES = 300, 0.5, 10


def digits(scale: float = 1.0):
    """(X, y): scikit-learn's digits, X scaled to [0, 1] (float64), y int64 labels; the
    first `scale` of the 1797 samples."""
    try:
        from sklearn.datasets import load_digits     # the data ships with scikit-learn
    except ImportError as error:
        raise ImportError("W9 trains on scikit-learn's digits: pip install scikit-learn "
                          "(in the bench extra), or leave W9 out with --only") from error
    data = load_digits()
    n = size(len(data.target), scale, minimum=W9_CLASSES)
    return data.data[:n] / 16.0, data.target[:n].astype(np.int64)


def w9(scale: float = 1.0) -> list[Case]:
    X, y = digits(scale)
    steps, lr = size(W9_STEPS, scale), W9_LR
    n, d = X.shape
    Xt, yt = tf.constant(X), tf.constant(y)
    W = tf.Variable(np.zeros((d, W9_CLASSES)), name="W")
    b = tf.Variable(np.zeros(W9_CLASSES), name="b")

    def loss_fn(X, y, W, b):
        logits = tf.matmul(X, W) + b
        return tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))

    def evaluate(X, y, W, b):
        logits = tf.matmul(X, W) + b
        hits = tf.cast(tf.equal(tf.argmax(logits, axis=1), y), tf.float64)
        return [loss_fn(X, y, W, b), tf.reduce_mean(hits)]

    def make_run(decorate):
        @decorate
        def train_step(X, y, W, b):
            with tf.GradientTape() as tape:
                loss = loss_fn(X, y, W, b)
            gW, gb = tape.gradient(loss, [W, b])
            W.assign_sub(lr * gW)
            b.assign_sub(lr * gb)

        def run(X, y, W, b):
            W.assign(tf.zeros_like(W))
            b.assign(tf.zeros_like(b))
            for _ in range(steps):
                train_step(X, y, W, b)
            return evaluate(X, y, W, b)
        run.functions = _functions(train_step)
        return run

    value_and_grad = tf.value_and_grad(loss_fn, argnums=(2, 3))

    def functional_run(X, y, W, b):
        # W and b (the Variables) are not used: the functional form trains NumPy arrays.
        Wn, bn = np.zeros((d, W9_CLASSES)), np.zeros(W9_CLASSES)
        for _ in range(steps):
            _, (gW, gb) = value_and_grad(X, y, Wn, bn)
            Wn = Wn - lr * gW.numpy()
            bn = bn - lr * gb.numpy()
        return evaluate(X, y, Wn, bn)
    functional_run.functions = [value_and_grad]

    def numpy_run():
        Wn, bn = np.zeros((d, W9_CLASSES)), np.zeros(W9_CLASSES)
        onehot = np.eye(W9_CLASSES)[y]
        for _ in range(steps):
            # d(mean cross-entropy)/d logits = (softmax(logits) - onehot) / n
            d_logits = (_softmax(X @ Wn + bn) - onehot) / n
            Wn = Wn - lr * (X.T @ d_logits)
            bn = bn - lr * d_logits.sum(axis=0)
        return numpy_evaluate(X, y, Wn, bn)

    title = (f"softmax regression on digits, {n}x{d}, {W9_CLASSES} classes, {steps} "
             f"gradient-descent steps (lr {lr}), float64; final loss and accuracy")
    return [Case("W9", "W9", title, "float64", numpy_run, make_run(lambda f: f),
                 (Xt, yt, W, b), {"X": X, "y": y}, {"steps": steps, "lr": lr},
                 functional=functional_run, tf_idiom=make_run)]


def _softmax(logits):
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def numpy_evaluate(X, y, W, b) -> list:
    """[mean cross-entropy, accuracy] of the weights, in NumPy (every system's W9 result
    is checked against this on the NumPy reference's weights)."""
    logits = X @ W + b
    top = logits.max(axis=1)
    logsumexp = top + np.log(np.exp(logits - top[:, None]).sum(axis=1))
    loss = np.mean(logsumexp - logits[np.arange(len(y)), y])
    return [loss, np.mean(logits.argmax(axis=1) == y)]


# --- W10 --------------------------------------------------------------------------------
W10_STEPS, W10_LR, W10_SIZE = 50, 0.1, 1000


def w10(scale: float = 1.0) -> list[Case]:
    # The steps do not scale: the compiles of a run depend on its schedule of betas.
    n, steps, lr = size(W10_SIZE, scale), W10_STEPS, W10_LR
    anneal = steps / 2                  # 25 at scale 1: beta reaches 1.0 half way
    x0 = rng(10).normal(size=n)
    x = tf.Variable(x0, name="x")

    def beta_at(step):
        return min(1.0, step / anneal)

    def loss_fn(x, beta):
        return tf.reduce_sum(x * x) + beta * tf.reduce_sum(tf.sin(x))

    def numpy_run():
        xn = x0.copy()
        for step in range(steps):
            xn = xn - lr * (2 * xn + beta_at(step) * np.cos(xn))
        return xn

    cases = []
    for tensor_beta in (False, True):
        def as_passed(beta, tensor_beta=tensor_beta):
            """beta as the user passes it: a Python float, or tf.constant(beta)."""
            return tf.constant(beta, dtype=tf.float64) if tensor_beta else beta

        def make_run(decorate, as_passed=as_passed):
            @decorate
            def train_step(x, beta):
                with tf.GradientTape() as tape:
                    loss = loss_fn(x, beta)
                x.assign_sub(lr * tape.gradient(loss, x))

            def run(x):
                x.assign(x0)
                for step in range(steps):
                    train_step(x, as_passed(beta_at(step)))
                return tf.identity(x)
            run.functions = _functions(train_step)
            return run

        grad = tf.grad(loss_fn)

        def functional_run(x, as_passed=as_passed, grad=grad):
            xn = x0.copy()
            for step in range(steps):
                xn = xn - lr * grad(xn, as_passed(beta_at(step))).numpy()
            return xn
        functional_run.functions = [grad]

        name = "W10 tensor" if tensor_beta else "W10"
        how = "tf.constant(beta)" if tensor_beta else "beta a Python float"
        title = (f"{steps} steps on reduce_sum(x*x) + beta*reduce_sum(sin(x)), "
                 f"beta = min(1, step/{anneal:g}), {how}, x of {n:,} float64")
        for first in (False, True):
            cases.append(Case(name + (" first" if first else ""), "W10",
                              title + (", first call" if first else ""), "float64",
                              numpy_run, make_run(lambda f: f), (x,), {"x": x0},
                              {"steps": steps, "lr": lr, "anneal": anneal,
                               "tensor_beta": tensor_beta},
                              first_call=first, functional=functional_run,
                              tf_idiom=make_run, count_compiles=not first))
    return cases


def _functions(step) -> list:
    """The tapec.function objects among `step` (to count their traces)."""
    return [step] if isinstance(step, tf.Function) else []


# --- the other systems ------------------------------------------------------------------
class TensorFlowTraining:
    """TensorFlow: the loop of the tapec column; `compiled` puts the train step (not the
    loop) under `tf.function`, as the TF idiom does."""

    def _decorate(self, fn):
        return self.tf.function(fn) if self.compiled else fn

    def _w9(self, case):
        tf, d, p = self.tf, case.data, case.params
        X, y = tf.constant(d["X"]), tf.constant(d["y"])
        W = tf.Variable(np.zeros((X.shape[1], W9_CLASSES)))
        b = tf.Variable(np.zeros(W9_CLASSES))

        def loss_fn():
            logits = tf.matmul(X, W) + b
            return tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))

        @self._decorate
        def train_step():
            with tf.GradientTape() as tape:
                loss = loss_fn()
            gW, gb = tape.gradient(loss, [W, b])
            W.assign_sub(p["lr"] * gW)
            b.assign_sub(p["lr"] * gb)

        def run():
            W.assign(tf.zeros_like(W))
            b.assign(tf.zeros_like(b))
            for _ in range(p["steps"]):
                train_step()
            hits = tf.equal(tf.argmax(tf.matmul(X, W) + b, axis=1), y)
            return [loss_fn(), tf.reduce_mean(tf.cast(hits, tf.float64))]
        return run

    def _w10(self, case):
        tf, p = self.tf, case.params
        x0 = case.data["x"]
        x = tf.Variable(x0)

        @self._decorate
        def train_step(beta):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(x * x) + beta * tf.reduce_sum(tf.sin(x))
            x.assign_sub(p["lr"] * tape.gradient(loss, x))

        def run():
            x.assign(x0)
            for step in range(p["steps"]):
                beta = min(1.0, step / p["anneal"])
                train_step(tf.constant(beta, dtype=tf.float64) if p["tensor_beta"] else beta)
            return tf.identity(x)
        return run


class JaxTraining:
    """JAX: the whole run under `jit`, its steps in `lax.fori_loop`."""

    def _w9(self, case):
        jax, jnp, p = self.jax, self.jnp, case.params
        X, y = jnp.asarray(case.data["X"]), jnp.asarray(case.data["y"])

        def loss(params):
            W, b = params
            logits = X @ W + b
            picked = jnp.take_along_axis(logits, y[:, None], axis=1)[:, 0]
            return jnp.mean(jax.nn.logsumexp(logits, axis=1) - picked)

        def step(_, params):
            grads = jax.grad(loss)(params)
            return tuple(v - p["lr"] * g for v, g in zip(params, grads))

        def run():
            zeros = (jnp.zeros((X.shape[1], W9_CLASSES)), jnp.zeros(W9_CLASSES))
            params = jax.lax.fori_loop(0, p["steps"], step, zeros)
            hits = jnp.argmax(X @ params[0] + params[1], axis=1) == y
            return [loss(params), jnp.mean(hits.astype(jnp.float64))]
        return run, ()

    def _w10(self, case):
        jax, jnp, p = self.jax, self.jnp, case.params

        def loss(x, beta):
            return jnp.sum(x * x) + beta * jnp.sum(jnp.sin(x))

        def step(i, x):
            return x - p["lr"] * jax.grad(loss)(x, jnp.minimum(1.0, i / p["anneal"]))
        return (lambda x: jax.lax.fori_loop(0, p["steps"], step, x),
                (jnp.asarray(case.data["x"]),))


class TorchTraining:
    """PyTorch: eager loops, `torch.autograd.grad` and in-place updates."""

    def _w9(self, case):
        torch, p = self.torch, case.params
        F = torch.nn.functional
        X, y = self._t(case.data["X"]), self._t(case.data["y"])

        def run():
            W = torch.zeros((X.shape[1], W9_CLASSES), dtype=X.dtype, requires_grad=True)
            b = torch.zeros(W9_CLASSES, dtype=X.dtype, requires_grad=True)
            for _ in range(p["steps"]):
                gW, gb = torch.autograd.grad(F.cross_entropy(X @ W + b, y), [W, b])
                with torch.no_grad():
                    W -= p["lr"] * gW
                    b -= p["lr"] * gb
            with torch.no_grad():
                logits = X @ W + b
                hits = (logits.argmax(dim=1) == y).to(X.dtype)
                return [F.cross_entropy(logits, y), hits.mean()]
        return run

    def _w10(self, case):
        torch, p = self.torch, case.params

        def run():
            x = self._t(case.data["x"], grad=True)
            for step in range(p["steps"]):
                beta = min(1.0, step / p["anneal"])
                if p["tensor_beta"]:
                    beta = torch.tensor(beta, dtype=torch.float64)
                loss = (x * x).sum() + beta * torch.sin(x).sum()
                (g,) = torch.autograd.grad(loss, x)
                with torch.no_grad():
                    x -= p["lr"] * g
            return x.detach()
        return run


class AutogradTraining:
    """HIPS autograd: `grad` of the loss, NumPy updates."""

    def _w9(self, case):
        anp, p = self.anp, case.params
        X, y = case.data["X"], case.data["y"]
        logsumexp = self.special.logsumexp
        rows = np.arange(len(y))

        def loss(params):
            W, b = params
            logits = anp.dot(X, W) + b
            return anp.mean(logsumexp(logits, axis=1) - logits[rows, y])
        g = self.ag.grad(loss)

        def run():
            W, b = np.zeros((X.shape[1], W9_CLASSES)), np.zeros(W9_CLASSES)
            for _ in range(p["steps"]):
                gW, gb = g((W, b))
                W, b = W - p["lr"] * gW, b - p["lr"] * gb
            return numpy_evaluate(X, y, W, b)
        return run

    def _w10(self, case):
        anp, p = self.anp, case.params
        g = self.ag.grad(lambda x, beta: anp.sum(x * x) + beta * anp.sum(anp.sin(x)))

        def run():
            x = case.data["x"].copy()
            for step in range(p["steps"]):
                x = x - p["lr"] * g(x, min(1.0, step / p["anneal"]))
            return x
        return run
