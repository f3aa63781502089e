"""Reductions: reduce_sum/mean/max/min/prod/logsumexp, argmax/argmin and norm.

Values are compared with NumPy; gradients (float64) with central finite differences
(eps 1e-6, rtol 1e-6) of the eager function, except at ties of max/min, where the
function is not differentiable and the gradient must be TensorFlow's: shared equally
among the tied entries. Vectorized jacobians must equal the row-by-row ones, and
compiled gradients must stay right on a cache hit with new values.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tapec as tf
from batching_check import check_batching_rule
from conftest import value
from helpers import fd
from tapec.codegen.emit import compile_function, emit
from tapec.ir.nodes import Builder
from tapec.ops import REGISTRY
from tapec.ops.reduce import PROD_OTHERS as REDUCE_PROD_OTHERS
from tapec.ops.registry import apply
from tapec.ops.shape import PLACEHOLDER
from tapec.tensor import Tensor

EPS = 1e-6
RTOL = 1e-6
ATOL = 1e-8

COVERED_OPS = {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
               "reduce_logsumexp", "norm", "argmax", "argmin", "prod_others"}

RNG = np.random.default_rng(11)


def _arr(*shape):
    return RNG.uniform(0.5, 1.5, size=shape)


def _distinct(*shape, seed=0):
    """Values with no ties (a permutation, scaled and shifted), so max/min are smooth."""
    size = int(np.prod(shape, dtype=np.int64))
    values = np.random.default_rng(seed).permutation(size) * 0.37 - 0.3 * size
    return values.reshape(shape).astype(np.float64)


# (op name, argument arrays, attrs, which arguments carry the batch axis)
BATCH_CASES = [
    ("reduce_sum", [_arr(2, 3)], {"axis": (), "keepdims": False}, (True,)),
    ("reduce_max", [_distinct(2, 3, 4)], {"axis": (1,), "keepdims": False}, (True,)),
    ("reduce_max", [_distinct(2, 3)], {"axis": (0, 1), "keepdims": True}, (True,)),
    ("reduce_min", [_distinct(2, 3, 4)], {"axis": (0, 2), "keepdims": False}, (True,)),
    ("reduce_min", [_distinct(3)], {"axis": (0,), "keepdims": True}, (True,)),
    ("reduce_prod", [_arr(2, 3, 4)], {"axis": (2,), "keepdims": True}, (True,)),
    ("reduce_prod", [_arr(2, 3)], {"axis": (0, 1), "keepdims": False}, (True,)),
    ("prod_others", [_arr(2, 3, 4)], {"axis": (0, 2)}, (True,)),
    ("prod_others", [_arr(3)], {"axis": (0,)}, (True,)),
    ("reduce_logsumexp", [_arr(2, 3, 4)], {"axis": (0, 1), "keepdims": False}, (True,)),
    ("reduce_logsumexp", [_arr(4)], {"axis": (0,), "keepdims": True}, (True,)),
    ("reduce_logsumexp", [_arr(2, 3)], {"axis": (), "keepdims": False}, (True,)),
    ("argmax", [_distinct(3, 4)], {"axis": 1, "output_type": "<i8"}, (True,)),
    ("argmax", [_distinct(3, 4)], {"axis": 0, "output_type": "<i4"}, (True,)),
    ("argmin", [_distinct(2, 3, 4)], {"axis": 2, "output_type": "<i8"}, (True,)),
]


@pytest.mark.parametrize("name,args,attrs,flags", BATCH_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(BATCH_CASES)])
def test_batching_rule_matches_row_by_row(name, args, attrs, flags):
    check_batching_rule(name, args, attrs, flags)


# --- finite-difference machinery --------------------------------------------------------

def check_gradients(fn, arrays, weight_seed=1):
    """Tape gradients of sum(fn(*xs) * w) against central differences."""
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    xs = [tf.constant(a) for a in arrays]
    eager = fn(*xs)
    w = np.random.default_rng(weight_seed).standard_normal(eager.shape)
    with tf.GradientTape() as tape:
        tape.watch(xs)
        out = fn(*xs)
        y = tf.reduce_sum(out * w)
    np.testing.assert_array_equal(value(out), value(eager))
    grads = tape.gradient(y, xs)
    for i, (x, g) in enumerate(zip(xs, grads)):
        assert g is not None, f"gradient of input {i} is None"
        assert g.shape == x.shape and g.dtype == tf.float64
        np.testing.assert_allclose(value(g), fd.numeric_gradient(fn, arrays, i, w, EPS),
                                   rtol=RTOL,
                                   atol=ATOL, err_msg=f"gradient of input {i}")


def gradient_of(fn, x, weights=None):
    """d sum(fn(x) * weights) / dx (weights default to ones)."""
    x = tf.constant(np.asarray(x, dtype=np.float64))
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = fn(x)
        y = tf.reduce_sum(out if weights is None else out * weights)
    return value(tape.gradient(y, x))


# --- values against NumPy ------------------------------------------------------------------

def _np_logsumexp(x, axis=None, keepdims=False):
    """Reference: the naive formula, valid for the moderate values used here."""
    with np.errstate(divide="ignore"):
        return np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))


FUNCTIONS = {
    "reduce_sum": (tf.reduce_sum, np.sum),
    "reduce_mean": (tf.reduce_mean, np.mean),
    "reduce_max": (tf.reduce_max, np.max),
    "reduce_min": (tf.reduce_min, np.min),
    "reduce_prod": (tf.reduce_prod, np.prod),
    "reduce_logsumexp": (tf.reduce_logsumexp, _np_logsumexp),
}
AXES = [None, 0, 1, -1, -3, (0, 2), [2, 0], (1,), (-1, 0, 1), []]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("op", sorted(FUNCTIONS))
def test_values_match_numpy(op, axis, keepdims):
    ours, reference = FUNCTIONS[op]
    x = np.random.default_rng(2).uniform(-2, 2, (2, 3, 4))
    np_axis = tuple(axis) if isinstance(axis, list) else axis
    out = ours(tf.constant(x), axis=axis, keepdims=keepdims)
    expected = reference(x, axis=np_axis, keepdims=keepdims)
    assert out.shape == expected.shape and out.dtype == tf.float64
    np.testing.assert_allclose(value(out), expected, rtol=1e-13)


def test_namespaces_export_the_reductions():
    for name in ("reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_logsumexp",
                 "argmax", "argmin", "norm"):
        assert getattr(tf, name) is getattr(tf.math, name)
    assert tf.linalg.norm is tf.norm


def test_float32_keeps_float32():
    x = tf.constant(np.array([[1.5, -2.0], [0.25, 3.0]], dtype=np.float32))
    for fn in (tf.reduce_mean, tf.reduce_max, tf.reduce_min, tf.reduce_prod,
               tf.reduce_logsumexp):
        assert fn(x, axis=1).dtype == tf.float32
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_logsumexp(x) + tf.reduce_prod(x) + tf.reduce_max(x) + tf.reduce_mean(x)
    g = tape.gradient(y, x)
    assert g.dtype == tf.float32
    x64 = x.numpy().astype(np.float64)
    soft = np.exp(x64 - _np_logsumexp(x64))
    prod_grad = np.prod(x64) / x64
    expected = soft + prod_grad + (x64 == 3.0) + 0.25
    np.testing.assert_allclose(value(g), expected, rtol=1e-5)


# --- gradients against finite differences ---------------------------------------------------

def _real(shape, seed=0):
    return np.random.default_rng(seed).uniform(-2.0, 2.0, shape)


def _away0(shape, seed=0):
    r = np.random.default_rng(seed)
    return r.uniform(0.5, 2.0, shape) * r.choice([-1.0, 1.0], shape)


GRADIENT_CASES = {
    "sum-axis-tuple-keepdims": (lambda x: tf.reduce_sum(x, axis=(0, 2), keepdims=True),
                                _real((2, 3, 4))),
    "sum-axis-empty-list": (lambda x: tf.reduce_sum(x, axis=[]) * x, _real((2, 3))),
    "mean-all": (tf.reduce_mean, _real((2, 3, 4))),
    "mean-axis0": (lambda x: tf.reduce_mean(x, axis=0), _real((2, 3, 4))),
    "mean-axis-1-keepdims": (lambda x: tf.reduce_mean(x, axis=-1, keepdims=True),
                             _real((2, 3, 4))),
    "mean-axis-tuple": (lambda x: tf.reduce_mean(x, axis=(0, -1)), _real((2, 3, 4))),
    "mean-0d": (lambda x: tf.reduce_mean(x) * x, _real(())),
    "max-all": (tf.reduce_max, _distinct(2, 3, 4)),
    "max-axis1": (lambda x: tf.reduce_max(x, axis=1), _distinct(2, 3, 4, seed=1)),
    "max-axis-1-keepdims": (lambda x: tf.reduce_max(x, axis=-1, keepdims=True),
                            _distinct(3, 4, seed=2)),
    "max-axis-tuple": (lambda x: tf.reduce_max(x, axis=(0, 2)), _distinct(2, 3, 4, seed=3)),
    "max-0d": (lambda x: tf.reduce_max(x) * x, _real(())),
    "min-all": (tf.reduce_min, _distinct(2, 3, 4, seed=4)),
    "min-axis0": (lambda x: tf.reduce_min(x, axis=0), _distinct(3, 4, seed=5)),
    "min-axis-2-keepdims": (lambda x: tf.reduce_min(x, axis=-2, keepdims=True),
                            _distinct(2, 3, 4, seed=6)),
    "min-axis-list": (lambda x: tf.reduce_min(x, axis=[2, 1]), _distinct(2, 3, 4, seed=7)),
    "prod-all": (tf.reduce_prod, _real((2, 3))),
    "prod-axis1": (lambda x: tf.reduce_prod(x, axis=1), _real((3, 4))),
    "prod-axis-1-keepdims": (lambda x: tf.reduce_prod(x, axis=-1, keepdims=True),
                             _real((2, 3, 4))),
    "prod-axis-tuple": (lambda x: tf.reduce_prod(x, axis=(0, 2)), _real((2, 3, 2))),
    "prod-negative-entries": (lambda x: tf.reduce_prod(x, axis=0), _away0((4, 3))),
    "prod-one-zero": (lambda x: tf.reduce_prod(x, axis=1),
                      np.array([[1.5, 0.0, -2.0, 0.5], [1.0, 2.0, 3.0, -1.0]])),
    "prod-two-zeros": (lambda x: tf.reduce_prod(x, axis=1),
                       np.array([[0.0, 1.5, 0.0, 2.0], [0.0, 2.0, 3.0, -1.0]])),
    "prod-zeros-all-axes": (tf.reduce_prod, np.array([[0.0, 2.0], [3.0, -1.5]])),
    "prod-all-zero": (lambda x: tf.reduce_prod(x, axis=0), np.zeros((3, 2))),
    # reduce_prod's derivative, the exclusive product, differentiated again (a Hessian)
    "prod-others-axis1": (lambda x: apply(REDUCE_PROD_OTHERS, x, axis=(1,)),
                          _away0((3, 4))),
    "prod-others-one-zero": (lambda x: apply(REDUCE_PROD_OTHERS, x, axis=(0, 1)),
                             np.array([[1.5, 0.0], [-2.0, 0.5]])),
    "logsumexp-all": (tf.reduce_logsumexp, _real((2, 3, 4))),
    "logsumexp-axis0": (lambda x: tf.reduce_logsumexp(x, axis=0), _real((3, 4))),
    "logsumexp-axis-1-keepdims": (lambda x: tf.reduce_logsumexp(x, axis=-1, keepdims=True),
                                  _real((2, 3, 4))),
    "logsumexp-axis-tuple": (lambda x: tf.reduce_logsumexp(x, axis=(0, 2)), _real((2, 3, 4))),
    # (at |x| ~ 1000 the outputs' rounding swamps a finite difference with eps 1e-6;
    # those gradients are checked analytically below)
    "logsumexp-shifted": (lambda x: tf.reduce_logsumexp(x, axis=1), _real((2, 3)) + 30.0),
    "norm-1-vector": (lambda x: tf.norm(x, ord=1), _away0((5,))),
    "norm-1-axis0": (lambda x: tf.norm(x, ord=1, axis=0), _away0((3, 4))),
    "norm-2-axis-1-keepdims": (lambda x: tf.norm(x, ord=2, axis=-1, keepdims=True),
                               _real((3, 4))),
    "norm-inf-axis1": (lambda x: tf.norm(x, ord=np.inf, axis=1), _distinct(3, 4, seed=8)),
    "norm-inf-all": (lambda x: tf.norm(x, ord=np.inf), _distinct(2, 3, seed=9)),
    "norm-p3": (lambda x: tf.norm(x, ord=3, axis=0), _away0((4, 2))),
    "norm-p1.5-all": (lambda x: tf.norm(x, ord=1.5), _away0((2, 3))),
    "norm-fro-matrix": (lambda x: tf.norm(x, ord="fro", axis=(0, 1)), _real((3, 4))),
    "norm-fro-none": (lambda x: tf.norm(x, ord="fro"), _real((3, 4))),
    "norm-euclidean-matrix-batched": (lambda x: tf.norm(x, axis=(-2, -1), keepdims=True),
                                      _real((2, 3, 4))),
    "norm-matrix-1": (lambda x: tf.norm(x, ord=1, axis=[0, 1]), _distinct(3, 4, seed=10)),
    "norm-matrix-inf-batched": (lambda x: tf.norm(x, ord=np.inf, axis=(1, 2)),
                                _distinct(2, 3, 4, seed=11)),
    "norm-matrix-1-transposed-axes": (lambda x: tf.norm(x, ord=1, axis=(2, 0)),
                                      _distinct(3, 2, 4, seed=12)),
    "compose-softmax-by-hand": (lambda x: tf.exp(x - tf.reduce_logsumexp(x, axis=1,
                                                                         keepdims=True)),
                                _real((2, 3))),
    "compose-max-minus-min-over-mean": (
        lambda x: (tf.reduce_max(x, axis=0) - tf.reduce_min(x, axis=0))
        / tf.reduce_mean(x * x, axis=0), _distinct(3, 4, seed=13)),
}


@pytest.mark.parametrize("name", sorted(GRADIENT_CASES))
def test_gradient_matches_finite_differences(name):
    fn, x = GRADIENT_CASES[name]
    check_gradients(fn, [x])


# --- ties, zeros and large values: TensorFlow's analytic gradients ---------------------------

def test_reduce_max_ties_share_the_gradient_equally():
    x = np.array([[1.0, 3.0, 3.0, 2.0], [2.0, 2.0, 2.0, 0.0]])
    g = gradient_of(lambda t: tf.reduce_max(t, axis=1), x, np.array([6.0, 3.0]))
    np.testing.assert_array_equal(g, [[0, 3.0, 3.0, 0], [1.0, 1.0, 1.0, 0]])
    g = gradient_of(tf.reduce_max, x)          # 3.0 is tied twice over the whole tensor
    np.testing.assert_array_equal(g, [[0, 0.5, 0.5, 0], [0, 0, 0, 0]])
    g = gradient_of(lambda t: tf.reduce_max(t, axis=0, keepdims=True), x)
    np.testing.assert_array_equal(g, [[0, 1, 1, 1], [1, 0, 0, 0]])


def test_reduce_min_ties_share_the_gradient_equally():
    x = np.array([[1.0, -1.0, 5.0, -1.0], [4.0, 4.0, 4.0, 4.0]])
    g = gradient_of(lambda t: tf.reduce_min(t, axis=-1), x, np.array([2.0, 1.0]))
    np.testing.assert_array_equal(g, [[0, 1.0, 0, 1.0], [0.25, 0.25, 0.25, 0.25]])
    g = gradient_of(lambda t: tf.reduce_min(t, axis=(0, 1)), np.full((2, 2), 7.0))
    np.testing.assert_array_equal(g, np.full((2, 2), 0.25))


def test_norm_inf_ties_split_with_signs():
    g = gradient_of(lambda t: tf.norm(t, ord=np.inf), np.array([-3.0, 3.0, 1.0, 3.0]))
    np.testing.assert_allclose(g, [-1 / 3, 1 / 3, 0, 1 / 3], rtol=1e-15)


def test_reduce_prod_gradient_is_the_product_of_the_others():
    x = np.array([[2.0, 0.0, 3.0, -1.0],    # one zero: only the zero gets a gradient
                  [0.0, 5.0, 0.0, 2.0],     # two zeros: every product of others is 0
                  [1.0, 2.0, 4.0, 0.5]])    # no zero
    g = gradient_of(lambda t: tf.reduce_prod(t, axis=1), x)
    expected = np.array([[np.prod(np.delete(row, j)) for j in range(4)] for row in x])
    np.testing.assert_array_equal(g, expected)
    assert not np.any(np.isnan(g))
    np.testing.assert_array_equal(value(tf.reduce_prod(tf.constant(x), axis=1)), [0, 0, 4.0])


def test_reduce_logsumexp_large_inputs_stay_finite():
    x = np.array([[1000.0, 1000.0, 999.0], [-1000.0, -1001.0, -1000.0]])
    out = value(tf.reduce_logsumexp(tf.constant(x), axis=1))
    shifted = x - x.max(axis=1, keepdims=True)
    expected = x.max(axis=1) + np.log(np.exp(shifted).sum(axis=1))
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, expected, rtol=1e-15)
    g = gradient_of(lambda t: tf.reduce_logsumexp(t, axis=1), x)
    softmax = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    # exp(x - out) loses the last bits of x - out at |x| ~ 1000 (one ulp is 1e-13)
    np.testing.assert_allclose(g, softmax, rtol=1e-12)
    np.testing.assert_allclose(g.sum(axis=1), [1.0, 1.0], rtol=1e-15)


def test_reduce_logsumexp_non_finite_inputs():
    x = tf.constant(np.array([[-np.inf, -np.inf], [np.inf, 1.0], [-np.inf, 0.0]]))
    np.testing.assert_array_equal(value(tf.reduce_logsumexp(x, axis=1)), [-np.inf, np.inf, 0])


# --- argmax / argmin -------------------------------------------------------------------------

def test_argmax_argmin_values_and_dtypes():
    x = np.array([[1.0, 5.0, 5.0], [7.0, -2.0, 0.0], [7.0, 3.0, -4.0]])
    t = tf.constant(x)
    for ours, theirs in ((tf.argmax, np.argmax), (tf.argmin, np.argmin)):
        default = ours(t)              # TensorFlow's default: reduce across axis 0
        assert default.dtype == tf.int64 and default.shape == (3,)
        np.testing.assert_array_equal(value(default), theirs(x, axis=0))
        for axis in (0, 1, -1):
            np.testing.assert_array_equal(value(ours(t, axis=axis)), theirs(x, axis=axis))
        as32 = ours(t, axis=1, output_type=tf.int32)
        assert as32.dtype == tf.int32
        np.testing.assert_array_equal(value(as32), theirs(x, axis=1))
    # ties give the first index, as in TensorFlow and NumPy
    assert value(tf.argmax(tf.constant([5.0, 5.0]))) == 0
    ints = tf.constant(np.array([3, 9, 9, 1], dtype=np.int32))
    assert value(tf.argmax(ints)) == 1 and value(tf.math.argmin(ints)) == 3
    three_d = np.random.default_rng(5).normal(size=(2, 3, 4))
    np.testing.assert_array_equal(value(tf.argmax(tf.constant(three_d), axis=2)),
                                  np.argmax(three_d, axis=2))


def test_argmax_has_no_gradient():
    x = tf.constant(np.array([0.5, 2.0, 1.0]))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        i = tf.argmax(x)
        j = tf.argmin(x)
        y = tf.reduce_sum(tf.cast(i, tf.float64) * x)
    assert tape.gradient(i, x) is None
    assert tape.gradient(j, x) is None
    assert value(tape.gradient(y, x)).tolist() == [1.0, 1.0, 1.0]
    assert value(tape.gradient(i, x, unconnected_gradients="zero")).tolist() == [0, 0, 0]


# --- integers ---------------------------------------------------------------------------------

def test_integer_reductions_follow_tensorflow():
    x = tf.constant(np.array([[1, 2], [-1, -2], [3, 5]], dtype=np.int32))
    mean = tf.reduce_mean(x, axis=1)
    assert mean.dtype == tf.int32
    # integer division truncates toward zero: mean(-1, -2) is -1, not NumPy's floor -2
    np.testing.assert_array_equal(value(mean), [1, -1, 4])
    assert value(tf.reduce_mean(x)) == 1                  # 8 // 6
    np.testing.assert_array_equal(value(tf.reduce_max(x, axis=0)), [3, 5])
    np.testing.assert_array_equal(value(tf.reduce_min(x, axis=1)), [1, -2, 3])
    np.testing.assert_array_equal(value(tf.reduce_prod(x, axis=0)), [-3, -20])
    assert tf.reduce_max(x).dtype == tf.int32
    big = tf.constant(np.array([2 ** 40 + 1, 2 ** 40 + 2], dtype=np.int64))
    assert value(tf.reduce_mean(big)) == 2 ** 40 + 1
    u8 = tf.constant(np.array([250, 3, 4], dtype=np.uint8))
    assert value(tf.reduce_mean(u8, axis=0)) == (250 + 3 + 4) % 256 // 3  # sums wrap, as TF


def test_integer_sources_get_no_gradient():
    x = tf.constant(np.array([1, 4, 2], dtype=np.int64))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_max(x) + tf.reduce_prod(x)
    assert value(y) == 12
    assert tape.gradient(y, x) is None


# --- empty tensors (NumPy's values) ------------------------------------------------------------

def test_empty_reductions_follow_numpy():
    empty = np.zeros((0, 3))
    t = tf.constant(empty)
    np.testing.assert_array_equal(value(tf.reduce_sum(t, axis=0)), [0, 0, 0])
    assert value(tf.reduce_prod(t)) == 1.0
    with pytest.warns(RuntimeWarning):
        mean = value(tf.reduce_mean(t, axis=0))
    assert np.all(np.isnan(mean)) and mean.shape == (3,)
    np.testing.assert_array_equal(value(tf.reduce_logsumexp(t, axis=0)), [-np.inf] * 3)
    assert value(tf.reduce_logsumexp(tf.constant(np.zeros(0)))) == -np.inf
    # reducing a non-empty axis of an empty tensor is fine for max, min and argmax
    assert tf.reduce_max(t, axis=1).shape == (0,)
    assert tf.argmax(t, axis=1).shape == (0,)
    for fn in (tf.reduce_max, tf.reduce_min):
        with pytest.raises(ValueError, match=fn.__name__ + ".*empty"):
            fn(t)
        with pytest.raises(ValueError, match=fn.__name__):
            fn(t, axis=0)
    for fn in (tf.argmax, tf.argmin):
        with pytest.raises(ValueError, match=fn.__name__ + ".*empty"):
            fn(t, axis=0)
    with pytest.raises(ValueError, match="reduce_mean.*empty integer"):
        tf.reduce_mean(tf.constant(np.zeros((2, 0), dtype=np.int32)), axis=1)
    assert tf.reduce_mean(tf.constant(np.zeros((0, 2), dtype=np.int32)), axis=1).shape == (0,)


def test_empty_gradients_have_the_source_shape():
    x = tf.constant(np.zeros((0, 3)))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        ys = [tf.reduce_sum(tf.reduce_logsumexp(x, axis=0)), tf.reduce_sum(x),
              tf.reduce_prod(x, axis=1), tf.reduce_max(x, axis=1)]
    for y in ys:
        g = tape.gradient(y, x)
        assert g.shape == (0, 3) and g.dtype == tf.float64


# --- errors ---------------------------------------------------------------------------------

ALL_REDUCTIONS = [tf.reduce_sum, tf.reduce_mean, tf.reduce_max, tf.reduce_min, tf.reduce_prod,
                  tf.reduce_logsumexp]


@pytest.mark.parametrize("fn", ALL_REDUCTIONS + [tf.argmax, tf.argmin],
                         ids=lambda f: f.__name__)
def test_bad_axis_raises_naming_the_op(fn):
    x = tf.constant(np.ones((2, 3)))
    for axis in (2, -3, 5):
        with pytest.raises(ValueError, match=rf"{fn.__name__}: axis {axis} is out of range"):
            fn(x, axis=axis)
    with pytest.raises(TypeError, match=fn.__name__):
        fn(x, axis=1.5)


@pytest.mark.parametrize("fn", ALL_REDUCTIONS, ids=lambda f: f.__name__)
def test_axis_errors_of_reductions(fn):
    x = tf.constant(np.ones((2, 3)))
    with pytest.raises(ValueError, match=rf"{fn.__name__}: axis \(1, -1\) repeats"):
        fn(x, axis=(1, -1))
    with pytest.raises(ValueError, match=f"{fn.__name__}.*rank 0"):
        fn(tf.constant(2.0), axis=0)          # a scalar has no axis 0 (TensorFlow agrees)
    assert fn(tf.constant(2.0)).shape == ()


def test_dtype_errors_name_the_op():
    with pytest.raises(TypeError, match="reduce_logsumexp: dtype int32"):
        tf.reduce_logsumexp(tf.constant([1, 2]))
    with pytest.raises(TypeError, match="reduce_max: dtype complex128"):
        tf.reduce_max(tf.constant(np.array([1j])))
    with pytest.raises(TypeError, match="reduce_min: dtype bool"):
        tf.reduce_min(tf.constant([True, False]))
    with pytest.raises(TypeError, match="reduce_mean: dtype bool"):
        tf.reduce_mean(tf.constant([True, False]))
    with pytest.raises(TypeError, match="reduce_prod: dtype bool"):
        tf.reduce_prod(tf.constant([True]))
    with pytest.raises(TypeError, match="argmax: output_type must be int32 or int64"):
        tf.argmax(tf.constant([1.0]), output_type=tf.float32)
    with pytest.raises(ValueError, match="argmin: expects a tensor of rank >= 1"):
        tf.argmin(tf.constant(1.0))
    with pytest.raises(TypeError, match=r"argmax: axis must be an int"):
        tf.argmax(tf.constant([[1.0]]), axis=(0, 1))


def test_norm_errors():
    x = tf.constant(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match=r"norm: ord=2 .*matrix.*spectral"):
        tf.norm(x, ord=2, axis=(0, 1))
    with pytest.raises(ValueError, match=r"norm: ord=3 .*matrix"):
        tf.norm(x, ord=3, axis=(0, 1))
    with pytest.raises(ValueError, match="norm: ord='nuc'"):
        tf.norm(x, ord="nuc", axis=(1, 2))
    with pytest.raises(ValueError, match="norm: ord='fro' is a matrix norm"):
        tf.norm(x, ord="fro", axis=1)
    for ord in (0, -1, "max"):
        with pytest.raises(ValueError, match=f"norm: ord={ord!r}.*vector"):
            tf.norm(x, ord=ord, axis=1)
    with pytest.raises(ValueError, match="norm: axis must be None, an int or a pair"):
        tf.norm(x, axis=(0, 1, 2))
    with pytest.raises(ValueError, match="norm: a matrix norm needs two distinct axes"):
        tf.norm(x, axis=(1, -2))
    with pytest.raises(ValueError, match="norm: axis 3 is out of range"):
        tf.norm(x, axis=3)
    with pytest.raises(TypeError, match="norm: expects a floating tensor, got dtype int32"):
        tf.norm(tf.constant([3, 4]))


# --- norm values ------------------------------------------------------------------------------

@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("ord", ["euclidean", 1, 2, np.inf, 3, 0.5], ids=str)
@pytest.mark.parametrize("axis", [None, 0, -1, 1], ids=str)
def test_vector_norm_values_match_numpy(axis, ord, keepdims):
    x = np.random.default_rng(3).normal(size=(3, 4))
    out = tf.norm(tf.constant(x), ord=ord, axis=axis, keepdims=keepdims)
    np_ord = 2 if ord == "euclidean" else ord
    if axis is None:
        expected = np.linalg.norm(x.ravel(), np_ord)
        expected = np.reshape(expected, (1, 1)) if keepdims else expected
    else:
        expected = np.linalg.norm(x, np_ord, axis=axis, keepdims=keepdims)
    assert out.shape == np.shape(expected)
    np.testing.assert_allclose(value(out), expected, rtol=1e-13)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("ord", ["euclidean", "fro", 1, np.inf], ids=str)
@pytest.mark.parametrize("axis", [(0, 1), (1, 0), (-1, 0), (2, 1)], ids=str)
def test_matrix_norm_values_match_numpy(axis, ord, keepdims):
    x = np.random.default_rng(4).normal(size=(3, 4, 5))
    out = tf.norm(tf.constant(x), ord=ord, axis=axis, keepdims=keepdims)
    expected = np.linalg.norm(x, "fro" if ord == "euclidean" else ord, axis=axis,
                              keepdims=keepdims)
    assert out.shape == expected.shape
    np.testing.assert_allclose(value(out), expected, rtol=1e-13)


def test_norm_of_whole_tensor_is_the_flattened_vector_norm():
    x = np.random.default_rng(6).normal(size=(2, 3, 2))
    for ord in (1, 2, np.inf, "euclidean", "fro"):
        np_ord = 2 if ord in ("euclidean", "fro") else ord
        np.testing.assert_allclose(value(tf.norm(tf.constant(x), ord=ord)),
                                   np.linalg.norm(x.ravel(), np_ord), rtol=1e-13)
    assert tf.norm(tf.constant(x), keepdims=True).shape == (1, 1, 1)


# --- hypothesis: random shapes, including 0-d, size-1 and empty -------------------------------

@st.composite
def reduction_cases(draw):
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
    rank = len(shape)
    form = draw(st.sampled_from(["none", "int", "tuple"])) if rank else "none"
    if form == "none":
        axis = None
    elif form == "int":
        axis = draw(st.integers(-rank, rank - 1))
    else:
        axis = tuple(draw(st.lists(st.integers(-rank, rank - 1), unique_by=lambda a: a % rank,
                                   max_size=rank)))
    op = draw(st.sampled_from(sorted(FUNCTIONS)))
    return op, shape, axis, draw(st.booleans()), draw(st.integers(0, 2 ** 16))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=reduction_cases())
def test_reduction_property(case):
    op, shape, axis, keepdims, seed = case
    ours, reference = FUNCTIONS[op]
    x = np.random.default_rng(seed).uniform(-2.0, 2.0, shape)
    fn = lambda t: ours(t, axis=axis, keepdims=keepdims)  # noqa: E731
    axes = range(len(shape)) if axis is None else np.atleast_1d(axis) % max(len(shape), 1)
    if op in ("reduce_max", "reduce_min") and any(shape[a] == 0 for a in axes):
        with pytest.raises(ValueError, match=op):
            fn(tf.constant(x))
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # the mean of nothing is NaN
        expected = reference(x, axis=axis, keepdims=keepdims)
        out = fn(tf.constant(x))
        assert out.shape == np.shape(expected)
        np.testing.assert_allclose(value(out), expected, rtol=1e-12)
        check_gradients(fn, [x], weight_seed=seed)


# --- vectorized jacobians ----------------------------------------------------------------------

JACOBIAN_CASES = {
    "reduce_mean": (lambda x: tf.reduce_mean(x * x, axis=1), _real((2, 3))),
    "reduce_max": (lambda x: tf.reduce_max(x, axis=0, keepdims=True), _distinct(3, 2)),
    "reduce_max-ties": (lambda x: tf.reduce_max(x, axis=1), np.array([[1.0, 4, 4], [2, 2, 2]])),
    "reduce_min": (lambda x: tf.reduce_min(tf.sin(x), axis=-1), _distinct(2, 3, seed=1)),
    "reduce_prod": (lambda x: tf.reduce_prod(x, axis=1), _real((3, 3))),
    "reduce_prod-zeros": (lambda x: tf.reduce_prod(x, axis=1),
                          np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])),
    "reduce_logsumexp": (lambda x: tf.reduce_logsumexp(x, axis=(0, 2)), _real((2, 3, 2))),
    "norm-inf": (lambda x: tf.norm(x, ord=np.inf, axis=1), _distinct(3, 4, seed=2)),
    "norm-matrix-1": (lambda x: tf.norm(x, ord=1, axis=(1, 2)), _distinct(2, 3, 3, seed=3)),
    "argmax-times-x": (lambda x: tf.cast(tf.argmax(x, axis=1), tf.float64) * tf.reduce_sum(
        x, axis=1), _distinct(2, 3, seed=4)),
}


@pytest.mark.parametrize("name", sorted(JACOBIAN_CASES))
def test_vectorized_jacobian_equals_row_by_row(name):
    fn, x = JACOBIAN_CASES[name]
    t = tf.constant(x)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(t)
        y = fn(t)
    fast = tape.jacobian(y, t)
    slow = tape.jacobian(y, t, experimental_use_pfor=False)
    assert fast.shape == y.shape + t.shape
    np.testing.assert_allclose(value(fast), value(slow), rtol=1e-12, atol=1e-15)
    if "ties" not in name:
        size = int(np.prod(y.shape))
        for k in range(size):       # each row is the gradient of one output element
            w = np.zeros(size)
            w[k] = 1.0
            row = fd.numeric_gradient(fn, [x], 0, w.reshape(y.shape), EPS)
            np.testing.assert_allclose(value(fast).reshape(size, -1)[k], row.ravel(),
                                       rtol=RTOL, atol=ATOL)


# --- generated code: cache hits with new values -------------------------------------------------

CACHE_CASES = {
    "reduce_mean": (lambda x: tf.reduce_mean(x, axis=0),
                    lambda x: np.full_like(x, 1.0 / x.shape[0])),
    "reduce_max": (lambda x: tf.reduce_max(x, axis=1),
                   lambda x: (x == x.max(axis=1, keepdims=True)) * 1.0),
    "reduce_min": (lambda x: tf.reduce_min(x),     # the last values tie three times
                   lambda x: (x == x.min()) / np.sum(x == x.min())),
    "reduce_prod": (lambda x: tf.reduce_prod(x, axis=1),
                    lambda x: np.array([[np.prod(np.delete(r, j)) for j in range(len(r))]
                                        for r in x])),
    "reduce_logsumexp": (lambda x: tf.reduce_logsumexp(x, axis=1),
                         lambda x: np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)),
    "norm-1": (lambda x: tf.norm(x, ord=1, axis=1), np.sign),
}


@pytest.mark.parametrize("name", sorted(CACHE_CASES))
def test_generated_gradient_is_reused_with_new_values(name, fresh_cache):
    fn, expected = CACHE_CASES[name]
    r = np.random.default_rng(8)
    for step, x in enumerate([_distinct(3, 4, seed=20), r.uniform(-2, 2, (3, 4)),
                              np.array([[0.0, 1.5, -2.0, 0.5]] * 3)]):
        g = gradient_of(fn, x)
        assert tf.cache_info().misses == 1 and tf.cache_info().hits == step
        np.testing.assert_allclose(g, expected(x), rtol=1e-12, atol=1e-15)


# --- code templates give the eager values -------------------------------------------------------

def _generated(op_name, arrays, attrs):
    """Run one op through the NumPy code generator on placeholders fed with `arrays`."""
    builder = Builder()
    with builder:
        nodes = [builder.node(PLACEHOLDER, (), {"slot": k, "shape": a.shape,
                                                "dtype": a.dtype.str}, a.shape, a.dtype)
                 for k, a in enumerate(arrays)]
        out = apply(REGISTRY[op_name], *[Tensor._symbolic(n) for n in nodes], **attrs)
    source, _ = emit([out._node], {n: ("tape", k) for k, n in enumerate(nodes)})
    return compile_function(source, "gradient")(*arrays)[0], source


CODEGEN_CASES = [
    ("reduce_max", [_real((2, 3, 4))], {"axis": (0, 2), "keepdims": False}),
    ("reduce_min", [_real((2, 3))], {"axis": (1,), "keepdims": True}),
    ("reduce_prod", [_real((2, 3))], {"axis": (0, 1), "keepdims": False}),
    ("reduce_logsumexp", [_real((2, 3, 4)) * 800], {"axis": (1,), "keepdims": False}),
    ("reduce_logsumexp", [_real((2, 3))], {"axis": (0, 1), "keepdims": True}),
    ("reduce_logsumexp", [np.array([[-np.inf, -np.inf], [np.inf, 0]])],
     {"axis": (1,), "keepdims": False}),
    ("reduce_logsumexp", [np.zeros((0, 2))], {"axis": (0,), "keepdims": False}),
    ("argmax", [_real((3, 4))], {"axis": 1, "output_type": "<i8"}),
    ("argmin", [_real((3, 4))], {"axis": 0, "output_type": "<i4"}),
]


@pytest.mark.parametrize("name,args,attrs", CODEGEN_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CODEGEN_CASES)])
def test_code_template_matches_eager_value(name, args, attrs):
    generated, source = _generated(name, args, attrs)
    eager = apply(REGISTRY[name], *[tf.constant(a) for a in args], **attrs)
    assert generated.dtype == eager.numpy().dtype, source
    np.testing.assert_array_equal(generated, value(eager), err_msg=source)
    assert re.search(r"\bnp\.", source)


# --- higher order ------------------------------------------------------------------------------

def test_hessians_of_logsumexp_and_prod():
    x = tf.constant(np.array([0.3, -1.2, 2.0]))
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with tf.GradientTape(persistent=True) as inner:
            inner.watch(x)
            lse = tf.reduce_logsumexp(x)
            prod = tf.reduce_prod(x)
        g_lse = inner.gradient(lse, x)
        g_prod = inner.gradient(prod, x)
    s = np.exp(x.numpy()) / np.exp(x.numpy()).sum()
    np.testing.assert_allclose(value(outer.jacobian(g_lse, x)), np.diag(s) - np.outer(s, s),
                               rtol=1e-12, atol=1e-15)
    v = x.numpy()
    expected = np.array([[0.0 if i == j else np.prod(np.delete(v, [i, j])) for j in range(3)]
                         for i in range(3)])
    np.testing.assert_allclose(value(outer.jacobian(g_prod, x)), expected, rtol=1e-12)
