"""The TensorFlow ops added as composites (tapec/ops/activations.py, math_extra.py,
sparse_indexing.py): values against NumPy in float64 and float32, gradients against
central differences, second (and third) derivatives against differences of the
derivative one order down, vectorized jacobians against row-by-row ones, and errors.
TensorFlow itself is compared in test_tf_ops_against_tensorflow.py."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tapec as tf
from conftest import value
from helpers import fd

RNG = np.random.default_rng(17)
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
_erf = np.vectorize(math.erf)


def _away(shape, low=-2.0, high=2.0, gap=0.15, seed=0):
    """Uniform values in [low, high] at least `gap` from 0 (the activations' kink)."""
    x = np.random.default_rng(seed).uniform(low, high, shape)
    return np.where(np.abs(x) < gap, np.copysign(gap, x) + x, x)


def _positive(shape, seed=0):
    return np.random.default_rng(seed).uniform(0.3, 2.0, shape)


def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


# name: (function of tensors, NumPy reference on arrays, input arrays (float64)). Inputs
# keep away from kinks, so every case is smooth where it is evaluated.
UNARY = {
    "elu": (tf.nn.elu, lambda x: np.where(x > 0, x, np.expm1(x)), _away),
    "selu": (tf.nn.selu, lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x)),
             _away),
    "leaky_relu": (tf.nn.leaky_relu, lambda x: np.where(x > 0, x, 0.2 * x), _away),
    "leaky_relu_alpha": (lambda x: tf.nn.leaky_relu(x, alpha=0.01),
                         lambda x: np.where(x > 0, x, 0.01 * x), _away),
    "gelu": (tf.nn.gelu, lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2))), _away),
    "gelu_tanh": (lambda x: tf.nn.gelu(x, approximate=True),
                  lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
                  _away),
    "silu": (tf.nn.silu, lambda x: x * np_sigmoid(x), _away),
    "swish_beta": (lambda x: tf.nn.swish(x, beta=1.5), lambda x: x * np_sigmoid(1.5 * x),
                   _away),
    "relu6": (tf.nn.relu6, lambda x: np.clip(x, 0, 6),
              lambda shape, seed=0: _away(shape, -3.0, 9.0, seed=seed) % 12 - 3.0 + 0.05),
    "softsign": (tf.nn.softsign, lambda x: x / (1 + np.abs(x)), _away),
    "log_sigmoid": (tf.math.log_sigmoid, lambda x: -np.logaddexp(0, -x), _away),
    "rsqrt": (tf.math.rsqrt, lambda x: 1 / np.sqrt(x), _positive),
    "reciprocal_no_nan": (tf.math.reciprocal_no_nan, lambda x: 1 / x, _away),
    "l2_loss": (tf.nn.l2_loss, lambda x: np.sum(x * x) / 2, _away),
    "reduce_euclidean_norm": (lambda x: tf.math.reduce_euclidean_norm(x, axis=-1),
                              lambda x: np.sqrt(np.sum(x * x, axis=-1)), _away),
    "moments_mean": (lambda x: tf.nn.moments(x, [0])[0], lambda x: np.mean(x, axis=0), _away),
    "moments_variance": (lambda x: tf.nn.moments(x, [-1], keepdims=True)[1],
                         lambda x: np.var(x, axis=-1, keepdims=True), _away),
    "moments_variance_all": (lambda x: tf.nn.moments(x, list(range(len(x.shape))))[1],
                             lambda x: np.var(x), _away),
    "cumulative_logsumexp": (tf.math.cumulative_logsumexp,
                             lambda x: np.logaddexp.accumulate(x, axis=0), _away),
    "cumulative_logsumexp_reverse": (
        lambda x: tf.math.cumulative_logsumexp(x, axis=-1, reverse=True),
        lambda x: np.flip(np.logaddexp.accumulate(np.flip(x, -1), axis=-1), -1), _away),
    "clip_by_norm": (lambda x: tf.clip_by_norm(x, 1.5),
                     lambda x: x * 1.5 / max(np.sqrt(np.sum(x * x)), 1.5), _away),
    "clip_by_norm_axes": (lambda x: tf.clip_by_norm(x, 1.0, axes=[-1]),
                          lambda x: x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True),
                                                   1.0), _away),
}
SHAPES = [(5,), (2, 3)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_values_match_numpy(name, dtype, shape):
    fn, reference, make = UNARY[name]
    x = make(shape).astype(dtype)
    out = fn(tf.constant(x))
    assert out.dtype == dtype
    expected = reference(x.astype(np.float64))
    assert out.shape == np.shape(expected)
    rtol = 1e-12 if dtype == np.float64 else 2e-6
    np.testing.assert_allclose(value(out), expected, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_gradients_match_finite_differences(name, shape):
    fn, _, make = UNARY[name]
    fd.check_gradients(fn, [make(shape, seed=1)], rtol=1e-6, atol=1e-8)


def _gradient_fn(fn, weight):
    """x -> d sum(fn(x) * weight)/dx as an array, computed by a tape."""
    def grad(x):
        x = tf.constant(np.asarray(x, dtype=np.float64))
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(fn(x) * weight)
        return value(tape.gradient(y, x))
    return grad


@pytest.mark.parametrize("name", sorted(UNARY))
def test_second_derivatives_match_differences_of_the_gradient(name):
    fn, _, make = UNARY[name]
    x0 = make((2, 3), seed=2)
    weight = RNG.normal(size=np.shape(fn(tf.constant(x0))))
    x = tf.constant(x0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.reduce_sum(fn(x) * weight)
        g = inner.gradient(y, x)
    hessian = value(outer.jacobian(g, x, unconnected_gradients="zero"))   # linear: None
    expected = fd.jacobian(_gradient_fn(fn, weight), [x0], 0)
    np.testing.assert_allclose(hessian, expected, rtol=1e-5, atol=1e-6)


THIRD_ORDER = ["elu", "selu", "gelu", "gelu_tanh", "silu", "softsign", "log_sigmoid", "rsqrt",
               "cumulative_logsumexp"]


@pytest.mark.parametrize("name", THIRD_ORDER)
def test_third_derivatives_of_elementwise_ops(name):
    fn, _, make = UNARY[name]
    x0 = make((4,), seed=3)

    def second(x):
        x = tf.constant(np.asarray(x, dtype=np.float64))
        with tf.GradientTape() as t2:
            t2.watch(x)
            with tf.GradientTape() as t1:
                t1.watch(x)
                y = tf.reduce_sum(fn(x))
            g = t1.gradient(y, x)
        return value(t2.gradient(g, x))       # f'' elementwise (the Hessian is diagonal)

    x = tf.constant(x0)
    with tf.GradientTape() as t3:
        t3.watch(x)
        with tf.GradientTape() as t2:
            t2.watch(x)
            with tf.GradientTape() as t1:
                t1.watch(x)
                y = tf.reduce_sum(fn(x))
            g = t1.gradient(y, x)
        h = t2.gradient(g, x)
    third = value(t3.gradient(h, x))
    expected = np.diagonal(fd.jacobian(second, [x0], 0))
    np.testing.assert_allclose(third, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_vectorized_jacobian_equals_row_by_row(name):
    fn, _, make = UNARY[name]
    x = tf.constant(make((2, 3), seed=4))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = fn(x)
    fast = tape.jacobian(y, x)
    slow = tape.jacobian(y, x, experimental_use_pfor=False)
    assert fast.shape == y.shape + x.shape
    np.testing.assert_allclose(value(fast), value(slow), rtol=1e-12, atol=1e-15)


def test_compiled_function_of_the_ops_matches_eager():
    """Called through tapec.grad (traced, compiled), inside a function written with
    NumPy calls on the tensors."""
    def loss(x):
        h = tf.nn.gelu(x) + tf.nn.elu(x) * tf.nn.selu(x) + np.tanh(tf.nn.silu(x))
        return np.sum(h * h) + tf.nn.l2_loss(tf.clip_by_norm(x, 1.0))
    x0 = _away((3, 4), seed=5)
    grad = tf.grad(loss)(tf.constant(x0))
    np.testing.assert_allclose(value(grad), fd.gradient(fd.eager(loss), [x0], 0),
                               rtol=1e-6, atol=1e-8)


# --- kinks: TensorFlow's one-sided derivatives ------------------------------------------

@pytest.mark.parametrize("fn,points,expected", [
    (tf.nn.elu, [0.0], [1.0]),
    (tf.nn.selu, [0.0], [SELU_SCALE]),
    (tf.nn.leaky_relu, [0.0], [0.2]),
    (tf.nn.relu6, [0.0, 6.0, 3.0], [0.0, 0.0, 1.0]),
    (tf.math.softsign, [0.0], [1.0]),
    (tf.math.reciprocal_no_nan, [0.0], [0.0]),
])
def test_derivatives_at_kinks(fn, points, expected):
    x = tf.constant(np.array(points))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(fn(x))
    np.testing.assert_array_equal(value(tape.gradient(y, x)), expected)


def test_elu_gradient_is_finite_for_large_inputs():
    x = tf.constant([800.0, -800.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.nn.elu(x) + tf.nn.selu(x))
    np.testing.assert_allclose(value(tape.gradient(y, x)), [1 + SELU_SCALE, 0.0])


# --- binary ops ---------------------------------------------------------------------------

def _xlogy(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x == 0, 0.0, x * np.log(y))


BINARY = {
    "squared_difference": (tf.math.squared_difference, lambda x, y: (x - y) ** 2,
                           lambda: [_away((2, 3)), _away((3,), seed=1)]),
    "xlogy": (tf.math.xlogy, _xlogy, lambda: [_away((2, 3)), _positive((2, 3))]),
    "xlog1py": (tf.math.xlog1py, lambda x, y: x * np.log1p(y),
                lambda: [_away((2, 3)), _positive((2, 3))]),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_ops(name, dtype):
    fn, reference, make = BINARY[name]
    arrays = make()
    out = fn(*(tf.constant(a.astype(dtype)) for a in arrays))
    assert out.dtype == dtype
    np.testing.assert_allclose(value(out), reference(*arrays), rtol=2e-6 if dtype ==
                               np.float32 else 1e-12)
    if dtype == np.float64:
        fd.check_gradients(fn, arrays)


def test_xlogy_is_zero_where_x_is_zero_with_zero_gradients():
    x = tf.constant([0.0, 0.0, 2.0, 0.0], tf.float64)
    y = tf.constant([0.0, 3.0, 0.5, np.nan], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        out = tf.math.xlogy(x, y)
        total = tf.reduce_sum(out[:3])
    np.testing.assert_array_equal(value(out)[:3], [0.0, 0.0, 2.0 * np.log(0.5)])
    assert np.isnan(value(out)[3])              # y NaN: NaN even at x = 0 (TensorFlow)
    dx, dy = tape.gradient(total, [x, y])
    np.testing.assert_array_equal(value(dx)[:3], [0.0, 0.0, np.log(0.5)])
    np.testing.assert_array_equal(value(dy)[:3], [0.0, 0.0, 4.0])


def test_xlogy_hessian_matches_differences():
    x0, y0 = np.array([0.5, -1.0, 2.0]), np.array([0.7, 1.5, 2.5])
    xy = tf.constant(np.concatenate([x0, y0]))
    f = lambda v: tf.reduce_sum(tf.math.xlogy(v[:3], v[3:]) ** 2)  # noqa: E731
    np.testing.assert_allclose(value(tf.hessian(f)(xy)),
                               fd.jacobian(_gradient_fn(f, 1.0), [value(xy)], 0),
                               rtol=1e-5, atol=1e-6)


# --- predicates, counts, boolean reductions ----------------------------------------------

SPECIAL = np.array([[1.0, np.nan, np.inf], [-np.inf, 0.0, -2.5]])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_predicates(dtype):
    x = tf.constant(SPECIAL.astype(dtype))
    for fn, reference in ((tf.math.is_nan, np.isnan), (tf.math.is_inf, np.isinf),
                          (tf.math.is_finite, np.isfinite)):
        out = fn(x)
        assert out.dtype == tf.bool
        np.testing.assert_array_equal(value(out), reference(SPECIAL))
    compiled = tf.function(lambda x: tf.math.is_nan(x))(x)     # not folded away
    np.testing.assert_array_equal(value(compiled), np.isnan(SPECIAL))


def test_predicates_have_no_gradient():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.cast(tf.math.is_finite(x), tf.float32))
    assert tape.gradient(y, x) is None


def test_count_nonzero_and_boolean_reductions():
    x = np.array([[0.0, 1.5, 0.0], [2.0, -1.0, 0.0]])
    out = tf.math.count_nonzero(x, axis=1)
    assert out.dtype == tf.int64
    np.testing.assert_array_equal(value(out), np.count_nonzero(x, axis=1))
    assert tf.math.count_nonzero(x, dtype=tf.int32).dtype == tf.int32
    assert int(tf.math.count_nonzero(x, keepdims=True).numpy().item()) == 3
    b = x != 0
    for axis in (None, 0, 1, [0, 1]):
        np.testing.assert_array_equal(value(tf.reduce_any(b, axis=axis)),
                                      np.any(b, axis=None if axis is None else tuple(
                                          np.atleast_1d(axis))))
        np.testing.assert_array_equal(value(tf.math.reduce_all(b, axis=axis, keepdims=True)),
                                      np.all(b, axis=None if axis is None else tuple(
                                          np.atleast_1d(axis)), keepdims=True))
    assert not tf.reduce_any(np.zeros(0, bool)).numpy()
    assert tf.reduce_all(np.zeros(0, bool)).numpy()


def test_size_and_rank():
    x = tf.zeros((2, 3, 4))
    assert tf.size(x).dtype == tf.int32 and int(tf.size(x)) == 24
    assert tf.size(x, out_type=tf.int64).dtype == tf.int64
    assert int(tf.size(tf.constant(1.0))) == 1
    assert tf.rank(x).dtype == tf.int32 and int(tf.rank(x)) == 3
    assert tf.newaxis is None and tf.zeros((3,))[tf.newaxis].shape == (1, 3)


# --- global norm clipping -----------------------------------------------------------------

def test_clip_by_global_norm_values_and_gradient():
    a, b = _away((2, 3)), _away((4,), seed=1)
    norm = np.sqrt(np.sum(a * a) + np.sum(b * b))
    clipped, global_norm = tf.clip_by_global_norm([tf.constant(a), None, tf.constant(b)], 1.0)
    assert clipped[1] is None and isinstance(clipped, list)
    np.testing.assert_allclose(value(global_norm), norm, rtol=1e-13)
    np.testing.assert_allclose(value(clipped[0]), a / norm, rtol=1e-13)
    np.testing.assert_allclose(value(tf.linalg.global_norm([a, b])), norm, rtol=1e-13)
    unclipped, _ = tf.clip_by_global_norm([a, b], 100.0)
    np.testing.assert_allclose(value(unclipped[1]), b, rtol=1e-13)
    fd.check_gradients(lambda x, y: tf.clip_by_global_norm([x, y], 1.0)[0][0] * 3.0, [a, b])
    fd.check_gradients(lambda x, y: tf.clip_by_global_norm([x, y], 1.0)[1], [a, b])


def test_clip_by_global_norm_of_infinite_norm_is_nan():
    clipped, norm = tf.clip_by_global_norm([tf.constant([np.inf, 1.0])], 1.0)
    assert np.isinf(value(norm)) and np.isnan(value(clipped[0])).all()


def test_clip_by_norm_at_zero_has_a_finite_gradient():
    x = tf.zeros((3,), tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.clip_by_norm(x, 2.0))
    np.testing.assert_array_equal(value(tape.gradient(y, x)), [1.0, 1.0, 1.0])


# --- dropout ------------------------------------------------------------------------------

def test_dropout_scales_kept_values_and_its_gradient_is_the_mask():
    tf.random.set_seed(0)
    x0 = _positive((50, 40))
    x = tf.constant(x0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.dropout(x, 0.3, seed=5)
    out = value(y)
    kept = out != 0
    np.testing.assert_allclose(out[kept], x0[kept] / 0.7, rtol=1e-15)
    assert 0.6 < kept.mean() < 0.8
    np.testing.assert_array_equal(value(tape.gradient(y, x)), kept / 0.7)
    assert tf.nn.dropout(x, 0.0) is x or np.array_equal(value(tf.nn.dropout(x, 0.0)), x0)


def test_dropout_is_reproducible_under_seeds_and_honours_noise_shape():
    x = tf.ones((6, 8))
    tf.random.set_seed(3)
    first = value(tf.nn.dropout(x, 0.5, seed=1))
    tf.random.set_seed(3)
    np.testing.assert_array_equal(value(tf.nn.dropout(x, 0.5, seed=1)), first)
    rows = value(tf.nn.dropout(x, 0.5, noise_shape=[6, 1]))
    assert (rows == rows[:, :1]).all()
    same = value(tf.nn.dropout(x, 0.5, noise_shape=[None, 1]))
    assert (same == same[:, :1]).all()


def test_dropout_in_a_function_draws_a_fresh_mask_at_every_call():
    @tf.function
    def step(x):
        return tf.nn.dropout(x, 0.5)
    x = tf.ones((64,))
    first, second = value(step(x)), value(step(x))
    assert set(np.unique(first)) <= {0.0, 2.0} and set(np.unique(second)) <= {0.0, 2.0}
    assert not np.array_equal(first, second)
    assert step.experimental_get_tracing_count() == 1
    grad = tf.grad(lambda x: tf.reduce_sum(tf.nn.dropout(x, 0.5)))
    grads = [value(grad(x)) for _ in range(2)]
    assert not np.array_equal(grads[0], grads[1])


# --- errors -------------------------------------------------------------------------------

@pytest.mark.parametrize("call,error,message", [
    (lambda: tf.nn.elu(tf.constant([1, 2])), TypeError, "elu: features must be a floating"),
    (lambda: tf.nn.gelu(tf.constant([1.0]), approximate="yes"), TypeError, "gelu: approximate"),
    (lambda: tf.nn.leaky_relu([1.0], alpha=[0.1]), TypeError, "leaky_relu: alpha"),
    (lambda: tf.nn.l2_loss(tf.constant([1, 2])), TypeError, "l2_loss: t must be"),
    (lambda: tf.nn.moments(tf.constant([1.0]), None), TypeError, "moments: axes"),
    (lambda: tf.nn.moments(tf.constant([1.0]), [1]), ValueError, "moments: axis 1"),
    (lambda: tf.nn.dropout(tf.constant([1.0]), 1.0), ValueError, "dropout: rate"),
    (lambda: tf.nn.dropout(tf.constant([1.0]), -0.1), ValueError, "dropout: rate"),
    (lambda: tf.nn.dropout(tf.ones((2, 3)), 0.5, noise_shape=[2, 2]), ValueError,
     "dropout: noise_shape"),
    (lambda: tf.math.is_nan(tf.constant([1])), TypeError, "is_nan: x must be a floating"),
    (lambda: tf.math.xlogy(tf.constant([1.0]), tf.constant([1.0], tf.float64)), TypeError,
     "xlogy: x and y must have one dtype"),
    (lambda: tf.reduce_any(tf.constant([1.0])), TypeError, "reduce_any: input_tensor must be"),
    (lambda: tf.math.reduce_euclidean_norm(tf.constant([1])), TypeError,
     "reduce_euclidean_norm"),
    (lambda: tf.math.count_nonzero(tf.constant([1.0]), dtype=tf.bool), TypeError,
     "count_nonzero: dtype"),
    (lambda: tf.size(tf.ones(2), out_type=tf.float32), TypeError, "size: out_type"),
    (lambda: tf.math.cumulative_logsumexp(tf.ones(2), axis=1), ValueError,
     "cumulative_logsumexp: axis 1"),
    (lambda: tf.math.cumulative_logsumexp(tf.constant(1.0)), ValueError,
     "cumulative_logsumexp: x must have at least one dimension"),
    (lambda: tf.clip_by_norm(tf.ones(2), [1.0, 2.0]), ValueError, "clip_by_norm: clip_norm"),
    (lambda: tf.clip_by_global_norm(tf.ones(2), 1.0), TypeError,
     "clip_by_global_norm: t_list should be a sequence"),
    (lambda: tf.clip_by_global_norm([None], 1.0), ValueError, "no tensors"),
    (lambda: tf.linalg.global_norm([tf.ones(2), tf.ones(2, tf.float64)]), TypeError,
     "global_norm: the tensors must have one floating dtype"),
])
def test_bad_input_is_named(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_numpy_predicates_record_as_tapec_ops():
    """np.isnan / np.isinf / np.isfinite on recorded tensors, inside tapec.grad of a
    NumPy-written function."""
    def loss(x):
        safe = np.where(np.isfinite(x), x, 0.0)
        special = np.logical_or(np.isnan(x), np.isinf(x))
        return np.sum(safe ** 2) + np.sum(np.where(special, 1.0, 0.0))
    x0 = np.array([1.5, np.inf, -2.0, np.nan])
    g = tf.grad(loss)(tf.constant(x0))
    np.testing.assert_array_equal(value(g), [3.0, 0.0, -4.0, 0.0])
    x = tf.constant(SPECIAL)
    for fn in (np.isnan, np.isinf, np.isfinite):
        out = fn(x)
        assert isinstance(out, tf.Tensor) and out.dtype == tf.bool
        np.testing.assert_array_equal(value(out), fn(SPECIAL))
