"""The simplifier: rules are exact, phases reach closed forms, answers never change.

(Every other test in the suite runs twice, with simplification "full" and "off".)
"""
import re

import numpy as np
import pytest

import tapec as tf
from helpers.fd import check_gradients
from tapec.ops.seeds import diag_seed
from tapec.simplify import last_stats

RNG = np.random.default_rng(21)


def _computed_lines(source):
    """The statements of the generated function body, without the return."""
    body = source.split("def gradient", 1)[1].splitlines()[1:]
    return [line.strip() for line in body if line.strip() and not
            line.strip().startswith(("return", "#"))]


def test_diag_seed_values_and_gradient():
    v = RNG.normal(size=(2, 3))
    out = diag_seed(tf.constant(v)).numpy()
    assert out.shape == (6, 2, 3)
    np.testing.assert_array_equal(out.reshape(6, 6), np.diag(v.reshape(-1)))
    check_gradients(diag_seed, [v])


@pytest.mark.parametrize("mode,expected", [("off", None), ("fast", 1), ("full", 1)])
def test_square_gradient_is_one_statement_when_simplified(mode, expected, fresh_cache):
    x = tf.constant(3.0)
    with tf.simplify_mode(mode):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x * x
        g = tape.gradient(y, x)
    assert g.numpy() == 6.0
    lines = _computed_lines(tf.generated_source(g))
    if expected is None:
        assert len(lines) > 1
    else:
        assert lines == ["df_dx = 2.0 * x0"]


def test_mode_is_part_of_the_cache_key(fresh_cache):
    x = tf.constant([1.0, 2.0])
    sources = []
    for mode in ("off", "fast", "off"):
        with tf.simplify_mode(mode):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = tf.reduce_sum(x * x)
            sources.append(tf.generated_source(tape.gradient(y, x)))
    assert sources[0] == sources[2] != sources[1]
    assert tf.cache_info().misses == 2


def test_unknown_mode_raises():
    with pytest.raises(ValueError, match="mode"):
        tf.set_simplify("aggressive")


def test_node_counts_are_reported(fresh_cache):
    x = tf.constant(RNG.normal(size=(5,)))
    with tf.simplify_mode("fast"):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.tanh(x) * 3.0)
        tape.gradient(y, x)
    assert last_stats["nodes after"] < last_stats["nodes before"]
    assert last_stats["rules"]


def test_tanh_jacobian_is_a_scaled_copy_of_w(fresh_cache):
    n = 6
    w, x = tf.constant(RNG.normal(size=(n, n))), tf.constant(RNG.normal(size=(n, 1)))
    with tf.simplify_mode("fast"):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.tanh(tf.matmul(w, x))
        jac = tape.jacobian(y, x)
    yv = np.tanh(w.numpy() @ x.numpy())
    np.testing.assert_allclose(jac.numpy().reshape(n, n), (1 - yv ** 2) * w.numpy(),
                               rtol=1e-12)
    source = tf.generated_source(jac)
    assert "eye" not in source and "fill_diagonal" not in source and "@" not in source


def test_hessian_of_quadratic_form_is_a_plus_a_transpose(fresh_cache):
    n = 7
    a = RNG.normal(size=(n, n))
    x = tf.constant(RNG.normal(size=(n, 1)))
    A = tf.constant(a)
    with tf.simplify_mode("fast"):
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                f = tf.matmul(tf.transpose(x), tf.matmul(A, x))
            g = inner.gradient(f, x)
        hessian = outer.jacobian(g, x)
    np.testing.assert_allclose(hessian.numpy().reshape(n, n), a + a.T, rtol=1e-12)
    source = tf.generated_source(hessian)
    # No n^3 work: no matrix product involving a stacked identity.
    assert "eye" not in source and "fill_diagonal" not in source, source


def test_logistic_hessian_needs_no_diagonal_matrix(fresh_cache):
    n, d = 40, 5
    xv = RNG.normal(size=(n, d))
    yv = np.sign(RNG.normal(size=n))
    X, Y = tf.constant(xv), tf.constant(yv)
    w = tf.constant(RNG.normal(size=d) * 0.3)
    with tf.simplify_mode("fast"):
        with tf.GradientTape() as outer:
            outer.watch(w)
            with tf.GradientTape() as inner:
                inner.watch(w)
                loss = tf.reduce_mean(tf.nn.softplus(-Y * tf.linalg.matvec(X, w)))
            g = inner.gradient(loss, w)
        hessian = outer.jacobian(g, w)
    p = 1 / (1 + np.exp(-yv * (xv @ w.numpy())))
    expected = xv.T @ (xv * (p * (1 - p))[:, None]) / n
    np.testing.assert_allclose(hessian.numpy(), expected, rtol=1e-10)
    source = tf.generated_source(hessian)
    assert "eye" not in source and "fill_diagonal" not in source, source


def test_rules_never_change_values_on_a_mixed_program():
    def f(a, b):
        t = tf.tanh(a) * 1.0 + 0.0 - (-b) * 2.0
        return tf.reduce_sum(tf.transpose(tf.transpose(t)) * tf.exp(-a) / 1.0)
    for mode in ("off", "fast", "full"):
        with tf.simplify_mode(mode):
            check_gradients(f, [RNG.normal(size=(3, 2)), RNG.normal(size=(2,))])


COVERED_OPS = {"diag_seed"}


def test_sqrt_guard_is_dropped_for_a_constant_gradient():
    """sqrt's derivative guards 0/0 where the incoming gradient is 0; a gradient of ones
    never is, so the compiled code divides by the forward value with no where()."""
    x = tf.constant(np.array([0.0, 0.25, 3.0]))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.sqrt(x))
    grad = tape.gradient(y, x)
    if tf.config.simplify_setting() != "off":
        assert "where" not in grad._origin.source
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(grad.numpy(), 0.5 / np.sqrt(x.numpy()))

    with tf.GradientTape() as tape:        # a gradient that can be 0 keeps the guard
        tape.watch(x)
        y = tf.reduce_sum(tf.sqrt(x) * x)
    grad = tape.gradient(y, x).numpy()
    assert grad[0] == 0.0
    np.testing.assert_allclose(grad[1:], 1.5 * np.sqrt(x.numpy()[1:]), rtol=1e-15)
