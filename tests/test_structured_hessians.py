"""Hessians and jacobians with Kronecker structure (simplify/kronecker.py, networks.py).

Values against analytic NumPy Hessians, central differences in float64 and JAX (where
installed), in the three forms users write (tapec.hessian, nested tapes, a TF body in
tapec.function); and the structure: the compiled program never holds the n·k identity
nor a (n·k, N, k) batch, only the factors, the result and products over small axes.
"""
import tracemalloc

import numpy as np
import pytest

import tapec as tf
import tapec.engine
import tapec.tracing.program
from helpers import fd
from tapec.ir.nodes import topological_order


# --- problems ----------------------------------------------------------------------------

def _softmax_regression(n, d, k, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, rng.integers(0, k, size=n), rng.normal(size=(d, k)) * 0.3, \
        rng.normal(size=k) * 0.1


def _digits():
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        X = np.random.default_rng(3).integers(0, 17, size=(1797, 64)) / 16.0
        return X, np.random.default_rng(4).integers(0, 10, size=1797)
    data = load_digits()
    return data.data / 16.0, data.target.astype(np.int64)


def softmax_loss(W, X, y, b):
    logits = tf.matmul(X, W) + b
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                        logits=logits))


def log_softmax_loss(W, X, y, b):
    one_hot = tf.constant(np.eye(b.shape[0])[y.numpy()])
    return -tf.reduce_mean(tf.reduce_sum(one_hot * tf.nn.log_softmax(tf.matmul(X, W) + b),
                                         axis=1))


def nested_hessian(loss):
    def hessian(W, X, y, b):
        with tf.GradientTape() as outer:
            outer.watch(W)
            with tf.GradientTape() as inner:
                inner.watch(W)
                value = loss(W, X, y, b)
            g = inner.gradient(value, W)
        return outer.jacobian(g, W)
    return hessian


FORMS = {"hessian": lambda loss: tf.hessian(loss), "nested": nested_hessian,
         "function": lambda loss: tf.function(nested_hessian(loss))}


def softmax_hessian(X, y, W, b):
    """H[i,a,j,c] = sum_n X[n,i] X[n,j] (P[n,a] δ_ac - P[n,a] P[n,c]) / N."""
    n, (d, k) = X.shape[0], W.shape
    Z = X @ W + b
    P = np.exp(Z - Z.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    H = np.zeros((d, k, d, k))
    for a in range(k):
        H[:, a, :, a] = (X * P[:, a:a + 1]).T @ X / n
    M = (X[:, :, None] * P[:, None, :]).reshape(n, d * k)
    return H - (M.T @ M / n).reshape(d, k, d, k)


def _call(form, loss, X, y, W, b):
    return np.asarray(FORMS[form](loss)(tf.constant(W), tf.constant(X), tf.constant(y),
                                        tf.constant(b)))


# --- values ------------------------------------------------------------------------------

@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("loss", [softmax_loss, log_softmax_loss], ids=["xent", "logsm"])
def test_softmax_regression_hessian_matches_the_analytic_one(form, loss):
    X, y, W, b = _softmax_regression(40, 5, 4)
    np.testing.assert_allclose(_call(form, loss, X, y, W, b), softmax_hessian(X, y, W, b),
                               rtol=1e-10, atol=1e-13)


def test_softmax_regression_hessian_matches_central_differences():
    X, y, W, b = _softmax_regression(30, 4, 3, seed=1)

    def gradient(Wv):
        with tf.GradientTape() as tape:
            w = tf.constant(Wv)
            tape.watch(w)
            value = softmax_loss(w, tf.constant(X), tf.constant(y), tf.constant(b))
        return tape.gradient(value, w).numpy()
    numeric = fd.jacobian(gradient, [W], 0, eps=1e-5, points=5)
    np.testing.assert_allclose(_call("nested", softmax_loss, X, y, W, b), numeric,
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("form", FORMS)
def test_digits_sized_hessian_matches_the_analytic_one(form):
    X, y = _digits()
    W = np.random.default_rng(5).normal(size=(64, 10)) * 0.1
    b = np.random.default_rng(6).normal(size=10) * 0.1
    np.testing.assert_allclose(_call(form, softmax_loss, X, y, W, b),
                               softmax_hessian(X, y, W, b), rtol=1e-9, atol=1e-14)


def test_softmax_regression_hessian_matches_jax():
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    jax.config.update("jax_enable_x64", True)
    X, y, W, b = _softmax_regression(60, 6, 5, seed=2)

    def loss(W):
        logits = jnp.asarray(X) @ W + jnp.asarray(b)
        return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(len(y)), jnp.asarray(y)])
    expected = np.asarray(jax.hessian(loss)(jnp.asarray(W)))
    np.testing.assert_allclose(_call("hessian", softmax_loss, X, y, W, b), expected,
                               rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("form", ["hessian", "nested"])
def test_logistic_hessian_matches_the_analytic_one(form):
    rng = np.random.default_rng(7)
    X, w = rng.normal(size=(200, 12)), rng.normal(size=12) * 0.3
    y = np.where(rng.random(200) < 0.5, -1.0, 1.0)

    def loss(w, X, y):
        return tf.reduce_mean(tf.math.log(1 + tf.exp(-(y * tf.linalg.matvec(X, w)))))
    if form == "hessian":
        got = tf.hessian(loss)(tf.constant(w), tf.constant(X), tf.constant(y))
    else:
        with tf.GradientTape() as outer:
            wt = tf.constant(w)
            outer.watch(wt)
            with tf.GradientTape() as inner:
                inner.watch(wt)
                value = loss(wt, tf.constant(X), tf.constant(y))
            got = outer.jacobian(inner.gradient(value, wt), wt)
    p = 1 / (1 + np.exp(-y * (X @ w)))
    np.testing.assert_allclose(np.asarray(got), (X * (p * (1 - p))[:, None]).T @ X / 200,
                               rtol=1e-10, atol=1e-14)


def _matrix_jacobians(X, W):
    with tf.GradientTape(persistent=True) as tape:
        w = tf.constant(W)
        tape.watch(w)
        Z = tf.matmul(tf.constant(X), w)
        P = tf.nn.softmax(Z)
    return tape, Z, P, w


def test_jacobian_of_a_matrix_product_is_x_kronecker_identity():
    X, _, W, _ = _softmax_regression(25, 4, 3)
    tape, Z, P, w = _matrix_jacobians(X, W)
    np.testing.assert_array_equal(tape.jacobian(Z, w).numpy(),
                                  np.einsum("ni,ca->ncia", X, np.eye(3)))


def test_jacobian_of_softmax_of_a_matrix_product():
    X, _, W, _ = _softmax_regression(25, 4, 3)
    tape, Z, P, w = _matrix_jacobians(X, W)
    Pv = P.numpy()
    expected = np.einsum("nc,ca,ni->ncia", Pv, np.eye(3), X) - \
        np.einsum("nc,na,ni->ncia", Pv, Pv, X)
    np.testing.assert_allclose(tape.jacobian(P, w).numpy(), expected, rtol=1e-12,
                               atol=1e-15)


def test_float32_jacobian_stays_float32():
    X, _, W, _ = _softmax_regression(25, 4, 3)
    tape, Z, P, w = _matrix_jacobians(X.astype(np.float32), W.astype(np.float32))
    jacobian = tape.jacobian(P, w)
    assert jacobian.numpy().dtype == np.float32
    Pv = P.numpy().astype(np.float64)
    expected = np.einsum("nc,ca,ni->ncia", Pv, np.eye(3), X) - \
        np.einsum("nc,na,ni->ncia", Pv, Pv, X)
    np.testing.assert_allclose(jacobian.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_non_finite_factors_give_the_nans_of_the_row_by_row_jacobian():
    # Row (n, c) of d(X W)/dW is Xᵀ e_nc: its zeros meet every row of X, so an inf in X
    # makes nan far from its own entry, in the vectorized and row-by-row jacobians alike.
    X, _, W, _ = _softmax_regression(5, 3, 2)
    X[1, 2] = np.inf
    tape, Z, P, w = _matrix_jacobians(X, W)
    with np.errstate(invalid="ignore"):
        for target in (Z, P):
            vectorized = tape.jacobian(target, w).numpy()
            by_rows = tape.jacobian(target, w, experimental_use_pfor=False).numpy()
            np.testing.assert_array_equal(np.isnan(vectorized), np.isnan(by_rows))
            np.testing.assert_allclose(vectorized, by_rows, rtol=1e-12, atol=1e-15)


# --- structure ---------------------------------------------------------------------------

@pytest.fixture
def emitted(monkeypatch):
    """The IR nodes of every program compiled while the test runs."""
    graphs = []
    for module in (tapec.engine, tapec.tracing.program):
        original = module.emit

        def record(outputs, feeds, *args, _original=original, **kwargs):
            graphs.append(list(topological_order([o for o in outputs if o is not None],
                                                 is_leaf=lambda n: n in feeds)))
            return _original(outputs, feeds, *args, **kwargs)
        monkeypatch.setattr(module, "emit", record)
    tf.clear_cache()
    yield graphs
    tf.clear_cache()


def _size(node):
    return int(np.prod(node.shape, dtype=np.int64))


@pytest.mark.parametrize("form", FORMS)
def test_digits_hessian_holds_no_identity_and_no_batch_of_logits(form, emitted,
                                                                  simplify_mode):
    if simplify_mode == "off":
        pytest.skip("the structure is the simplifier's")
    X, y = _digits()
    W, b = np.zeros((64, 10)), np.zeros(10)
    _call(form, softmax_loss, X, y, W, b)
    (nodes,) = emitted[-1:]
    ops = {n.op.name for n in nodes}
    assert not ops & {"diag_seed", "eye", "matrix_diag"}, ops
    largest = max(_size(n) for n in nodes)
    assert largest <= 64 * 10 * 64 * 10, sorted({(n.op.name, n.shape) for n in nodes
                                                 if _size(n) > 64 * 10 * 64 * 10})
    assert "delta_einsum" in ops


def test_digits_hessian_peak_memory_is_below_the_batch_of_logits(simplify_mode):
    if simplify_mode == "off":
        pytest.skip("the structure is the simplifier's")
    X, y = _digits()
    W, b = np.zeros((64, 10)), np.zeros(10)
    hessian = tf.hessian(softmax_loss)
    args = (tf.constant(W), tf.constant(X), tf.constant(y), tf.constant(b))
    hessian(*args)                                  # compiled outside the measurement
    tracemalloc.start()
    try:
        hessian(*args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    batch_of_logits = 640 * 1797 * 10 * 8           # the (n·k, N, k) tensor, 92 MB
    assert peak < batch_of_logits / 2, peak


def test_logistic_hessian_holds_no_n_by_n_matrix(emitted, simplify_mode):
    if simplify_mode == "off":
        pytest.skip("the structure is the simplifier's")
    rng = np.random.default_rng(8)
    X, w = rng.normal(size=(300, 10)), rng.normal(size=10)
    y = np.where(rng.random(300) < 0.5, -1.0, 1.0)
    tf.hessian(lambda w, X, y: tf.reduce_mean(tf.math.log(
        1 + tf.exp(-(y * tf.linalg.matvec(X, w))))))(tf.constant(w), tf.constant(X),
                                                     tf.constant(y))
    assert max(_size(n) for n in emitted[-1]) <= 300 * 10


def test_batch_jacobian_of_a_matrix_layer_is_a_row_scaling(emitted, simplify_mode):
    """batch_jacobian of tanh(x M): the per-example seed (n, 1, n) broadcasts against the
    batch axis, so the result is (1 - y**2)[b, j] M[k, j], with no (n, batch, n) product
    and no batched matrix product."""
    rng = np.random.default_rng(9)
    x, M = rng.normal(size=(16, 6)), rng.normal(size=(6, 5))
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = tf.tanh(xt @ tf.constant(M))
    J = tape.batch_jacobian(y, xt).numpy()
    expected = (1 - np.tanh(x @ M) ** 2)[:, :, None] * M.T[None]
    np.testing.assert_allclose(J, expected, rtol=1e-13, atol=1e-15)
    if simplify_mode == "off":
        return
    (nodes,) = emitted[-1:]
    ops = {n.op.name for n in nodes}
    assert "diag_seed" not in ops and "matmul" not in {
        n.op.name for n in nodes if len(n.shape) == 3}, ops
    assert max(_size(n) for n in nodes) <= 16 * 5 * 6
