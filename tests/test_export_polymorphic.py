"""tapec.export with TensorSpec example arguments: one module for every size of their None
dimensions (tapec/export/sizes.py, docs/export.md "Every batch size from one export")."""
import importlib.util
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tapec as tf
from tapec.export.layout import ExportError
from tests.helpers import fd
from tests.test_graph_mode_polymorphic import STEPS, _program

F64 = tf.float64
RNG = np.random.default_rng(5)


def load(path):
    spec = importlib.util.spec_from_file_location(f"exported_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def logistic(w, X, y):
    z = tf.reshape(X @ tf.reshape(w, (-1, 1)), (-1,))
    return tf.reduce_mean(tf.nn.softplus(z) - y * z)


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def test_one_logistic_export_serves_every_batch_size(tmp_path):
    source = tf.export(logistic, (np.zeros(3), tf.TensorSpec([None, 3], F64),
                                  tf.TensorSpec([None], F64)), tmp_path / "m.py", hessian=True)
    m = load(tmp_path / "m.py")
    for n in (2, 3, 64, 191):
        X, y, w = RNG.normal(size=(n, 3)), (RNG.random(n) > 0.5) * 1.0, RNG.normal(size=3)
        p = sigmoid(X @ w)
        np.testing.assert_allclose(m.logistic(w, X, y),
                                   np.mean(np.logaddexp(0, X @ w) - y * (X @ w)), rtol=1e-13)
        np.testing.assert_allclose(m.grad_logistic(w, X, y), X.T @ (p - y) / n, rtol=1e-12)
        value, grad = m.value_and_grad_logistic(w, X, y)
        np.testing.assert_allclose(grad, X.T @ (p - y) / n, rtol=1e-12)
        np.testing.assert_allclose(m.hessian_logistic(w, X, y),
                                   (X.T * (p * (1 - p))) @ X / n, rtol=1e-12)
    # No size is baked in: every number that followed it reads the arguments' shapes.
    assert "_size0 = _same_size(('X', X, 0), ('y', y, 0))" in source
    code = source[source.index('"""\n', 10):]
    assert not re.search(r"\b(5|5\.0|0\.2)\b", code), code


def test_sizes_are_checked(tmp_path):
    tf.export(logistic, (np.zeros(3), tf.TensorSpec([None, 3], F64),
                         tf.TensorSpec([None], F64)), tmp_path / "m.py")
    m = load(tmp_path / "m.py")
    w = np.zeros(3)
    with pytest.raises(ValueError, match=r"exported as one size and must be equal: "
                                         r"X\.shape\[0\] = 4, y\.shape\[0\] = 1"):
        m.grad_logistic(w, np.ones((4, 3)), np.ones(1))     # would broadcast silently
    with pytest.raises(ValueError, match=r"argument X: expected shape \(None, 3\)"):
        m.grad_logistic(w, np.ones((4, 2)), np.ones(4))
    with pytest.raises(ValueError, match=r"argument y: expected shape \(None,\)"):
        m.logistic(w, np.ones((4, 3)), np.ones((4, 1)))


def test_a_branch_on_a_size_is_guarded(tmp_path):
    def f(x):
        if tf.shape(x)[0] > 3:
            return tf.reduce_sum(x * x)
        return tf.reduce_sum(x)
    tf.export(f, (tf.TensorSpec([None], F64),), tmp_path / "m.py")
    m = load(tmp_path / "m.py")
    x = np.arange(6.0)
    np.testing.assert_allclose(m.grad_f(x), 2 * x)
    with pytest.raises(ValueError, match="input outside the traced branch"):
        m.grad_f(np.ones(2))


def test_a_program_whose_structure_follows_a_size_raises(tmp_path):
    def f(x):
        n = int(tf.shape(x)[0])           # a Python int: each size is another program
        return tf.reduce_sum(x) * float(n % 3)
    with pytest.raises(ExportError, match=r"depends on the size of the None dimension\(s\) "
                                          r"x\.shape\[0\].*if getitem_1 != 5:"):
        tf.export(f, (tf.TensorSpec([None], F64),), tmp_path / "m.py")
    assert not (tmp_path / "m.py").exists()
    with pytest.raises(ExportError, match="unknown rank"):
        tf.export(f, (tf.TensorSpec(None, F64),), tmp_path / "m.py")

    def g(x):                             # runs at the first size only
        return tf.reduce_sum(tf.reshape(x, (5,)))
    with pytest.raises(ExportError,
                       match=r"g traced at x\.shape\[0\] = 6 raised InvalidArgumentError"):
        tf.export(g, (tf.TensorSpec([None], F64),), tmp_path / "m.py")


def test_the_function_sees_none_for_a_none_dimension(tmp_path):
    seen = []

    def f(x):
        seen.append(x.shape[0])
        return tf.reduce_sum(x)
    tf.export(f, (tf.TensorSpec([None], F64),), tmp_path / "m.py")
    assert set(seen) == {None}


def test_independent_none_dimensions_get_their_own_sizes(tmp_path):
    def outer(a, b):
        return tf.reduce_sum(tf.tanh(a[:, None] * b[None, :])) / tf.cast(tf.size(a), F64)
    source = tf.export(outer, (tf.TensorSpec([None], F64), tf.TensorSpec([None], F64)),
                       tmp_path / "m.py", argnums=(0, 1))
    assert "_size1 = b.shape[0]" in source and "_same_size" not in source
    m = load(tmp_path / "m.py")
    for n, k in ((3, 8), (9, 2)):
        a, b = RNG.normal(size=n), RNG.normal(size=k)
        got = m.grad_outer(a, b)
        for i in (0, 1):
            np.testing.assert_allclose(got[i], fd.gradient(outer_np, [a, b], i), rtol=1e-7,
                                       atol=1e-9)


def outer_np(a, b):
    return np.sum(np.tanh(a[:, None] * b[None, :])) / a.size


def test_jacobian_of_a_batch_function(tmp_path):
    W = np.array([[0.5, -1.0, 2.0], [0.25, 1.5, -0.5]])

    def layer(x):
        return tf.tanh(x @ W.T)
    tf.export(layer, (tf.TensorSpec([None, 3], F64),), tmp_path / "m.py", jacobian=True)
    m = load(tmp_path / "m.py")
    for n in (2, 7):
        x = RNG.normal(size=(n, 3))
        np.testing.assert_allclose(m.jacobian_layer(x),
                                   fd.jacobian(lambda v: np.tanh(v @ W.T), [x], 0),
                                   rtol=1e-7, atol=1e-9)


def test_a_full_tensorspec_is_traced_on_seeded_data(tmp_path):
    def f(x):
        return tf.reduce_sum(tf.exp(x))
    source = tf.export(f, (tf.TensorSpec([4], F64),), tmp_path / "m.py")
    assert source == tf.export(f, (np.ones(4),), tmp_path / "n.py")
    assert "_size" not in source


def test_a_size_one_result_is_differentiated_as_its_scalar(tmp_path):
    # docs/latex.md's quadratic form: x^T A x of a column x is a (1, 1) array.
    A = np.array([[1.0, 2.0, 0.5], [-1.0, 0.25, 3.0], [0.0, 1.5, -2.0]])

    def quad(x):
        return tf.transpose(x) @ A @ x
    x = RNG.normal(size=(3, 1))
    tf.export(quad, (x,), tmp_path / "m.py", hessian=True, jacobian=True)
    m = load(tmp_path / "m.py")
    assert m.quad(x).shape == (1, 1)
    np.testing.assert_allclose(m.quad(x), x.T @ A @ x, rtol=1e-14)
    np.testing.assert_allclose(m.grad_quad(x), (A + A.T) @ x, rtol=1e-14)
    value, grad = m.value_and_grad_quad(x)
    np.testing.assert_allclose(grad, (A + A.T) @ x, rtol=1e-14)
    np.testing.assert_allclose(m.hessian_quad(x).reshape(3, 3), A + A.T, rtol=1e-14)
    assert m.hessian_quad(x).shape == (3, 1, 3, 1)      # as tapec.hessian: x's shape twice
    # as tapec.jacobian: the result's shape, then x's
    np.testing.assert_allclose(m.jacobian_quad(x), ((A + A.T) @ x).reshape(1, 1, 3, 1),
                               rtol=1e-14)
    with pytest.raises(ExportError, match=r"returns \(1, 2\)"):
        tf.export(lambda x: tf.transpose(x) @ A[:, :2], (x,), tmp_path / "n.py")


try:
    import array_api_strict as STRICT
except ImportError:
    STRICT = None


def _mean_of(body):
    def f(x):
        return tf.reduce_mean(body(x))
    return f


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(names=st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=4),
       sizes=st.lists(st.integers(2, 40), min_size=2, max_size=3, unique=True),
       seed=st.integers(0, 2 ** 16))
def test_random_batch_programs_export_once_for_every_size(tmp_path_factory, names, sizes,
                                                          seed):
    loss = _mean_of(_program(names))
    path = tmp_path_factory.mktemp("poly") / "m.py"
    tf.export(loss, (tf.TensorSpec([None, 3], F64),), path, name="loss")
    m = load(path)
    rng = np.random.default_rng(seed)
    for n in sizes:
        x = rng.normal(size=(n, 3))
        value, grad = m.value_and_grad_loss(x)
        eager_value, eager_grad = tf.value_and_grad(loss)(tf.constant(x))
        np.testing.assert_allclose(value, eager_value.numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(grad, eager_grad.numpy(), rtol=1e-10, atol=1e-14)
        if STRICT is not None:        # the same module on the standard's reference arrays
            strict = m.grad_loss(STRICT.asarray(x))
            assert type(strict).__module__.startswith("array_api_strict")
            np.testing.assert_allclose(np.asarray(strict), grad, rtol=1e-12, atol=1e-15)


def test_tensorspec_arguments_of_one_shape_get_different_data(tmp_path):
    def f(x, y):
        if tf.reduce_all(tf.equal(x, y)):      # taken only if the traced data were equal
            return tf.reduce_sum(x)
        return tf.reduce_sum(x * y)
    spec = tf.TensorSpec([None], F64)
    tf.export(f, (spec, spec), tmp_path / "m.py")
    m = load(tmp_path / "m.py")
    x, y = RNG.normal(size=4), RNG.normal(size=4)
    np.testing.assert_allclose(m.grad_f(x, y), y, rtol=1e-15)
