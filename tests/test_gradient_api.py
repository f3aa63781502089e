"""GradientTape.gradient parity with TensorFlow: structures, seeds, dtypes, errors."""
import logging

import numpy as np
import pytest

import tapec as tf
from conftest import value


def test_nested_target_lists_are_summed():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        a, b, c = x * x, x * 3.0, tf.sin(x)
    g = tape.gradient([a, [b, (c,)]], x)
    np.testing.assert_allclose(value(g), 4.0 + 3.0 + np.cos(2.0), rtol=1e-6)


def test_sources_structure_is_preserved():
    a, b, c = tf.constant(1.0), tf.constant(2.0), tf.Variable(3.0)
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        y = a * b * c
    grads = tape.gradient(y, {"first": [a, (b,)], "var": c})
    assert isinstance(grads, dict) and isinstance(grads["first"], list)
    assert isinstance(grads["first"][1], tuple)
    assert (value(grads["first"][0]), value(grads["first"][1][0]), value(grads["var"])) \
        == (6.0, 3.0, 2.0)


def test_output_gradients_one_per_target():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y1, y2 = x * x, tf.reduce_sum(x) * 1.0
    g = tape.gradient([y1, y2], x, output_gradients=[tf.constant([1.0, -1.0]), 10.0])
    assert value(g).tolist() == [2.0 + 10.0, -4.0 + 10.0]
    with pytest.raises(ValueError, match="one per target"):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y1 = x * x
        tape.gradient([y1], x, output_gradients=[1.0, 2.0])


def test_output_gradients_none_entry_raises_as_tensorflow():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * 3.0
    with pytest.raises(ValueError, match="output_gradients entry 0 is None"):
        tape.gradient(y, x, output_gradients=[None])
    assert value(tape.gradient(y, x)).tolist() == [3.0, 3.0]      # the tape is still usable


@pytest.mark.parametrize("mode", ["zero", tf.UnconnectedGradients.ZERO])
def test_unconnected_zero_accepts_string_and_enum(mode):
    x, u = tf.constant(1.0), tf.constant([[1.0, 2.0]])
    with tf.GradientTape() as tape:
        tape.watch([x, u])
        y = x * 2.0
    gx, gu = tape.gradient(y, [x, u], unconnected_gradients=mode)
    assert value(gx) == 2.0 and gu.shape == (1, 2) and not value(gu).any()


def test_unconnected_none_accepts_string():
    x, u = tf.constant(1.0), tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch([x, u])
        y = x * 2.0
    assert tape.gradient(y, [x, u], unconnected_gradients="none")[1] is None


def test_gradient_has_the_source_dtype():
    for dtype in (tf.float32, tf.float64):
        x = tf.constant([1.0, 2.0], dtype=dtype)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.cast(tf.reduce_sum(x * x), tf.float64 if dtype == tf.float32 else tf.float32)
        g = tape.gradient(y, x)
        assert g.dtype == dtype and value(g).tolist() == [2.0, 4.0]


def test_integer_and_bool_sources_are_never_differentiable(caplog):
    n = tf.constant([1, 2])
    with caplog.at_level(logging.WARNING, logger="tapec"):
        with tf.GradientTape() as tape:
            with pytest.warns(UserWarning, match=r"int32.*tf\.cast"):
                tape.watch(n)
            y = n * 2
            z = tf.cast(n, tf.float32) * 2.0
    assert "must be floating" in caplog.text
    with pytest.warns(UserWarning, match="integer or bool source"):
        assert tape.gradient([z], n) is None
    b = tf.constant(True)
    with tf.GradientTape() as tape:
        tape.watch(tf.constant(1.0))
    with pytest.warns(UserWarning, match=r"\[1, 2\] \(int32.*; the tensor True \(bool"):
        assert tape.gradient(y, [n, b]) == [None, None]


def test_target_none_raises_type_error():
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
    with pytest.raises(TypeError, match="None"):
        tape.gradient(None, x)


def test_non_tensor_source_raises_value_error():
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
    with pytest.raises(ValueError, match="str"):
        tape.gradient(y, "x")


def test_variable_target_is_its_own_read():
    v = tf.Variable([1.0, 2.0])
    w = tf.Variable(3.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(v)
    assert value(tape.gradient(v, v)).tolist() == [1.0, 1.0]
    assert tape.gradient(v, w) is None


def test_gradient_of_a_gradient_inside_one_persistent_tape(caplog):
    x = tf.constant(1.5, dtype=tf.float64)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.sin(x) * x
        dy = tape.gradient(y, x)
        d2y = tape.gradient(dy, x)
    np.testing.assert_allclose(value(dy), np.cos(1.5) * 1.5 + np.sin(1.5), rtol=1e-12)
    np.testing.assert_allclose(value(d2y), 2 * np.cos(1.5) - 1.5 * np.sin(1.5), rtol=1e-12)


def test_non_persistent_tape_used_twice_raises_for_jacobian_too():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.jacobian(y, x)
    with pytest.raises(RuntimeError, match="non-persistent"):
        tape.gradient(y, x)


def test_reset_clears_watched_variables_and_allows_reuse():
    a, b = tf.Variable(1.0), tf.Variable(2.0)
    with tf.GradientTape() as tape:
        a * 2.0
        assert len(tape.watched_variables()) == 1
        tape.reset()
        assert tape.watched_variables() == ()
        y = b * 3.0
    assert tape.watched_variables() == (b,)
    assert value(tape.gradient(y, b)) == 3.0


def test_stop_recording_pauses_and_resumes():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        with tape.stop_recording():
            hidden = x * x
        y = x * 5.0 + hidden
    assert value(tape.gradient(y, x)) == 5.0


def test_watched_variables_include_explicitly_watched_ones_in_creation_order():
    v1 = tf.Variable(1.0, trainable=False)
    v2 = tf.Variable(2.0)
    v3 = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        v3 * 1.0
        tape.watch(v1)
        v2 * 1.0
    assert tape.watched_variables() == (v1, v2, v3)


def test_stop_gradient_cuts_the_path():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * tf.stop_gradient(x * x)
    assert value(tape.gradient(y, x)) == 9.0
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.stop_gradient(x) * 2.0
    assert tape.gradient(y, x) is None


def test_identity_passes_gradients():
    x = tf.constant([1.0, -2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.identity(x) * x)
    assert value(tape.gradient(y, x)).tolist() == [2.0, -4.0]


def test_variable_reads_through_read_value_and_ops():
    v = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(v.read_value() * v)
    assert value(tape.gradient(y, v)).tolist() == [2.0, 4.0]


def test_higher_order_third_derivative_of_x4():
    x = tf.constant(2.0)
    with tf.GradientTape() as t3:
        t3.watch(x)
        with tf.GradientTape() as t2:
            t2.watch(x)
            with tf.GradientTape() as t1:
                t1.watch(x)
                y = x ** 4
            dy = t1.gradient(y, x)
        d2y = t2.gradient(dy, x)
    assert value(t3.gradient(d2y, x)) == 48.0


def test_hessian_of_quadratic_form_through_nested_gradients():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(4, 4))
    x = tf.constant(rng.normal(size=(4, 1)))
    A = tf.constant(a)
    rows = []
    for i in range(4):
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                f = tf.matmul(tf.transpose(x), tf.matmul(A, x))
            g = inner.gradient(f, x)
            gi = g[i, 0]
        rows.append(value(outer.gradient(gi, x))[:, 0])
    np.testing.assert_allclose(np.array(rows), a + a.T, rtol=1e-12)


def test_mixed_partial_of_product():
    x, y = tf.constant(2.0, dtype=tf.float64), tf.constant(3.0, dtype=tf.float64)
    with tf.GradientTape() as outer:
        outer.watch(y)
        with tf.GradientTape() as inner:
            inner.watch(x)
            f = x ** 2 * y ** 3
        dfdx = inner.gradient(f, x)
    assert value(outer.gradient(dfdx, y)) == 2 * 2.0 * 3 * 3.0 ** 2
