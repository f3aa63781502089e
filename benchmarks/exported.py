"""W12: what a call of an exported module costs (`tapec.export`), against the same
gradient written by hand, measured in the same run.

The tapec column calls the `grad_` function of a module exported with a None batch
dimension (`tf.TensorSpec([None, d])`), imported as a user imports it; the reference is
the forward pass and analytic gradient written by hand with the same namespace's
functions. At these small sizes the ratio is the module's per-call overhead: argument
checks, finding the namespace, and its statements one op at a time. Two programs run on
NumPy (the fast path: docs/export.md "Argument checks"), and the logistic loss runs
once more on one foreign namespace through the module's array-API path: PyTorch where
it is installed, else array-api-strict, else that row is left out.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import tempfile

import numpy as np

import tapec as tf

from .case import Case
from .case import rng as _rng
from .case import size as _size

#: Rows of the batch at scale 1; features of the logistic loss; the MLP's layer sizes.
ROWS, FEATURES, MLP_SIZES = 64, 5, (8, 16, 1)


def w12(scale: float = 1.0) -> list[Case]:
    n = _size(ROWS, scale)
    cases = [_logistic_case(n, np, "numpy"), _mlp_case(n)]
    foreign = _foreign_namespace()
    if foreign is not None:
        cases.append(_logistic_case(n, *foreign))
    return cases


def _foreign_namespace():
    """(the array-API namespace of PyTorch, or array-api-strict's; its name), or None."""
    for name in ("torch", "array_api_strict"):
        try:
            library = importlib.import_module(name)
        except ImportError:
            continue
        if name == "array_api_strict":
            return library, name
        try:
            import array_api_compat
        except ImportError:
            continue
        return array_api_compat.array_namespace(library.ones(1)), name
    return None


def logistic(w, X, y):
    return tf.reduce_mean(tf.math.log(1 + tf.exp(-(y * tf.linalg.matvec(X, w)))))


def mlp(W1, b1, W2, b2, X, y):
    h = tf.tanh(tf.matmul(X, W1) + b1)
    return tf.reduce_mean((tf.matmul(h, W2) + b2 - y) ** 2)


def _logistic_case(n, xp, namespace) -> Case:
    rng = _rng(12)
    data = {"X": rng.normal(size=(n, FEATURES)),
            "y": np.where(rng.random(n) < 0.5, -1.0, 1.0),
            "w": rng.normal(size=FEATURES) * 0.1}
    w, X, y = (xp.asarray(data[k]) for k in ("w", "X", "y"))

    def by_hand():
        # L = mean(log(1 + exp(-z))), z = y (X w): dL/dw = -X^T (y e / (1 + e)) / n,
        # e = exp(-z)
        e = xp.exp(-(y * (X @ w)))
        loss = xp.sum(xp.log(1 + e)) / n     # noqa: F841  (the forward pass runs too)
        return -(X.T @ (y * e / (1 + e))) / n

    grad = _exported("logistic", logistic, (tf.TensorSpec([FEATURES], tf.float64),
                                            tf.TensorSpec([None, FEATURES], tf.float64),
                                            tf.TensorSpec([None], tf.float64)))
    label = "W12 logistic" + ("" if namespace == "numpy" else f" {namespace}")
    return Case(label, "W12", f"exported gradient of the mean logistic loss, X {n}x"
                f"{FEATURES}, {namespace} arrays, per call", "float64", by_hand,
                lambda: grad()(w, X, y), (), data, {"namespace": namespace, "rows": n},
                tapec_only=True, tf_body=False)


def _mlp_case(n) -> Case:
    n_in, n_hidden, n_out = MLP_SIZES
    rng = _rng(120)
    data = {"W1": rng.normal(size=(n_in, n_hidden)) / np.sqrt(n_in),
            "b1": rng.normal(size=n_hidden) * 0.1,
            "W2": rng.normal(size=(n_hidden, n_out)) / np.sqrt(n_hidden),
            "b2": rng.normal(size=n_out) * 0.1,
            "X": rng.normal(size=(n, n_in)), "y": rng.normal(size=(n, n_out))}
    args = tuple(data[k] for k in ("W1", "b1", "W2", "b2", "X", "y"))
    W1, b1, W2, b2, X, y = args

    def by_hand():
        h = np.tanh(X @ W1 + b1)
        r = h @ W2 + b2 - y
        loss = np.mean(r * r)                # noqa: F841  (the forward pass runs too)
        d = (2.0 / r.size) * r
        dh = (d @ W2.T) * (1 - h * h)
        return [X.T @ dh, dh.sum(axis=0), h.T @ d, d.sum(axis=0)]

    specs = tuple(tf.TensorSpec(a.shape, tf.float64) for a in args[:4]) + (
        tf.TensorSpec([None, n_in], tf.float64), tf.TensorSpec([None, n_out], tf.float64))
    grad = _exported("mlp", mlp, specs, argnums=(0, 1, 2, 3))
    return Case("W12 mlp", "W12", f"exported gradient of a {n_in}-{n_hidden}-{n_out} tanh "
                f"MLP's mean squared error w.r.t. its weights, batch {n}, numpy arrays, "
                "per call", "float64", by_hand, lambda: list(grad()(*args)), (), data,
                {"namespace": "numpy", "rows": n}, tapec_only=True, tf_body=False)


def _exported(name, f, specs, argnums=0):
    """A function returning `grad_<name>` of `f` exported for `specs`, exported and
    imported on its first call (when the case is built, nothing is exported: every
    system's process builds every case)."""
    @functools.cache
    def grad():
        with tempfile.TemporaryDirectory(prefix="tapec-w12-") as folder:
            path = os.path.join(folder, f"{name}_module.py")
            tf.export(f, specs, path, argnums=argnums, name=name)
            spec = importlib.util.spec_from_file_location(f"w12_{name}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        return getattr(module, f"grad_{name}")
    return grad
