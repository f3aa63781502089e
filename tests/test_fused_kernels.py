"""Fused kernels: how literals print in fused code, and the trigonometric strength
reduction of large float64 kernels (`tapec.simplify.fuse.trig`).

IR is built directly, as in test_fusion.py (whose helpers these tests share), and the
fused code is compared with the unfused code and with NumPy.
"""
import re

import numpy as np
import pytest

import tapec as tf
from tapec.simplify import fuse

from test_fusion import assert_close, fused_nodes, pair, random_args

pytest.importorskip("sympy")

# A literal printed as an integer of 16 digits or more (5404319552844595.0) is a float
# literal that went through SymPy as an exact fraction and was printed as one.
LONG_INTEGER = re.compile(r"\b\d{16,}\.0\b")


def _literals(source):
    """Every float literal of a generated source, as text."""
    return re.findall(r"(?<![\w.])\d+\.\d*(?:e[-+]?\d+)?", source)


# --- literals (task: a float literal prints once, as the shortest round-tripping text) -

def test_a_decimal_written_as_an_exact_fraction_prints_as_one_literal():
    # 0.3 is exactly 5404319552844595 / 2**54: what a derivative rule gave for `y * 0.3`.
    specs = [((1000,), np.float64)]
    plain, fused, source, new, feeds = pair(
        lambda x: 5404319552844595.0 * x / 18014398509481984.0 + tf.cos(x), *specs)
    (node,) = fused_nodes(new, feeds)
    assert not node.attrs["exact"], source
    assert not LONG_INTEGER.search(source), source
    assert "0.3 *" in source and "/" not in source.split("def gradient")[1], source
    args = random_args(specs)
    # A power-of-two scale is exact: one multiplication by 0.3 is bit for bit the same.
    np.testing.assert_array_equal(fused(*args)[0], plain(*args)[0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_folded_products_no_float_holds_keep_the_exact_form(dtype):
    # 0.3 * 0.3 is a fraction of 106 bits: rounding it would make the fused form depend
    # on the literals' values, so the group keeps its exact form.
    specs = [((1000,), dtype)]
    plain, fused, source, new, feeds = pair(
        lambda x: (tf.sin(x) * 0.5 + x * 0.3) * 0.3 + tf.sin(x) * 0.1, *specs)
    assert not LONG_INTEGER.search(source), source
    args = random_args(specs)
    (got,), (expected,) = fused(*args), plain(*args)
    assert got.dtype == dtype
    if dtype == np.float64:
        np.testing.assert_array_equal(got, expected)
    else:           # float32 literals: NumPy's weak scalars may round the product once
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


def test_a_tape_gradient_prints_no_exact_fraction():
    # The task's reproduction, on an array: each coefficient prints once.
    x = tf.constant(np.linspace(-2.0, 2.0, 1000))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(3):
            y = tf.sin(y) * 0.5 + y * 0.3
    g = tape.gradient(y, x)
    source = tf.generated_source(g)
    assert not LONG_INTEGER.search(source), source
    xv = np.linspace(-2.0, 2.0, 1000)
    expected, value = np.ones_like(xv), xv
    for _ in range(3):
        expected = expected * (0.5 * np.cos(value) + 0.3)
        value = np.sin(value) * 0.5 + value * 0.3
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-14, atol=1e-15)


# --- sines and cosines from tangents (fuse/trig.py) -------------------------------------

def _ulps(got, expected):
    """Distance in units of the last place of `expected` (float64)."""
    return np.abs(got - expected) / np.spacing(np.abs(expected))


def _trig_arguments(n=4096, seed=0):
    """Normal arguments, exact zeros of both signs, and the doubles nearest the zeros of
    cos and sin, where a cosine computed any other way loses its relative accuracy."""
    rng = np.random.default_rng(seed)
    k = rng.integers(-100, 100, n // 4)
    near_cos_zeros = (k + 0.5) * np.pi
    near_cos_zeros += rng.integers(-8, 8, k.size) * np.spacing(near_cos_zeros)
    near_sin_zeros = k * np.pi + rng.integers(-8, 8, k.size) * np.spacing(np.pi)
    x = np.concatenate([rng.standard_normal(n // 2 - 2), [0.0, -0.0], near_cos_zeros,
                        near_sin_zeros])
    return x


@pytest.mark.parametrize("half_angle", [False, True])
def test_a_kernel_computing_sin_and_cos_of_one_value_calls_tan_not_cos(monkeypatch, half_angle):
    monkeypatch.setattr(fuse.settings, "TRIG_HALF_ANGLE", half_angle)
    specs = [((4096,), np.float64), ((4096,), np.float64)]
    plain, fused, source, new, feeds = pair(lambda x, y: tf.sin(x) * y + tf.cos(x) * x, *specs)
    (node,) = fused_nodes(new, feeds)
    assert "np.cos" not in source and not node.attrs["exact"], source
    if half_angle:      # sin from tan(x / 2), cos from that sine over tan(x)
        assert "np.sin" not in source and source.count("np.tan") == 2, source
    else:               # np.sin kept, cos from it over tan(x)
        assert source.count("np.sin") == 1 and source.count("np.tan") == 1, source
    x, y = _trig_arguments(), np.random.default_rng(1).standard_normal(4096)
    with np.errstate(all="raise", under="ignore"):   # x = 0 never computes 0 / 0
        (got,) = fused(x, y)
    expected = np.sin(x) * y + np.cos(x) * x
    assert_close([got], [expected], 1e-15)
    # the cosine alone: within 4 ulps of np.cos (3 without the half angle), zeros included
    _, cosine, source, _, _ = pair(lambda x: tf.sin(x) * 0.0 + tf.cos(x), specs[0])
    with np.errstate(all="raise", under="ignore"):
        (got,) = cosine(x)
    assert np.max(_ulps(got, np.cos(x))) <= (4 if half_angle else 3)
    assert got[np.flatnonzero(x == 0)].tolist() == [1.0, 1.0]


def test_a_lone_sine_from_the_half_angle_tangent_is_within_3_ulps():
    specs = [((4096,), np.float64), ((4096,), np.float64)]
    _, sine, source, _, _ = pair(lambda x, y: tf.sin(x) * y, *specs)
    assert "np.sin" not in source and "np.tan(0.5 * x0)" in source, source
    x = _trig_arguments()
    # subnormal, tiny, huge: x / 2 of a subnormal is inexact, so |x| < 1e-8 gives x itself
    x[:8] = [5e-324, -1e-310, 2.2250738585072014e-308, 1e-9, -3e-8, 1e300, -1e200, 1e22]
    with np.errstate(all="raise", under="ignore"):     # t * t underflows below 1e-154
        (got,) = sine(x, np.ones_like(x))
    assert np.max(_ulps(got, np.sin(x))) <= 3
    np.testing.assert_array_equal(got[:5], np.sin(x[:5]))
    np.testing.assert_array_equal(np.signbit(got[x == 0]), np.signbit(x[x == 0]))   # -0.0
    with np.errstate(all="ignore"):
        (got,) = sine(np.array([np.inf, -np.inf, np.nan] * 1366)[:4096], np.ones(4096))
    assert np.isnan(got).all()


def test_non_finite_arguments_give_what_np_cos_gives():
    specs = [((4096,), np.float64)]
    _, cosine, source, _, _ = pair(lambda x: tf.sin(x) * 0.0 + tf.cos(x), *specs)
    assert "np.cos" not in source
    x = _trig_arguments()
    x[:6] = [np.inf, -np.inf, np.nan, 1e300, -1e-300, 5e-324]
    with np.errstate(all="ignore"):
        (got,) = cosine(x)
        expected = np.sin(x) * 0.0 + np.cos(x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    finite = np.isfinite(expected)
    assert np.max(_ulps(got[finite], expected[finite])) <= 4


def _tape_gradient(forward, xv):
    x = tf.constant(xv)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(forward(x))
    g = tape.gradient(y, x)
    return g.numpy(), tf.generated_source(g)


def test_a_tape_gradient_reads_the_forward_sine_for_its_cosine(simplify_mode):
    xv = _trig_arguments(8192)
    got, source = _tape_gradient(lambda x: tf.sin(x) * tf.exp(-x * x), xv)
    by_hand = np.exp(-xv * xv) * (np.cos(xv) - 2 * xv * np.sin(xv))
    assert_close([got], [by_hand], 1e-13)
    if simplify_mode == "full":
        assert "np.cos" not in source and "np.tan" in source, source
        assert re.search(r"def gradient\([^)]*\bsin\d", source), source   # fed: sin0
    else:
        assert "np.cos" in source


def test_a_tape_gradient_reads_the_forward_cosine_for_its_sine(simplify_mode):
    xv = _trig_arguments(8192)
    got, source = _tape_gradient(lambda x: tf.cos(x) * tf.exp(x * 0.5), xv)
    by_hand = np.exp(xv * 0.5) * (0.5 * np.cos(xv) - np.sin(xv))
    assert_close([got], [by_hand], 1e-13)
    if simplify_mode == "full":
        assert "np.sin" not in source and "np.tan" in source, source


@pytest.mark.parametrize("dtype,n", [(np.float32, 4096), (np.float64, 100)])
def test_float32_and_small_kernels_keep_cos(dtype, n):
    # float32 sin and cos are NumPy SIMD loops already; tiny kernels gain nothing
    specs = [((n,), dtype)]
    plain, fused, source, new, feeds = pair(lambda x: tf.sin(x) * x + tf.cos(x), *specs)
    assert "np.cos" in source and "np.tan" not in source
    (node,) = fused_nodes(new, feeds)
    args = random_args(specs)
    if node.attrs["exact"]:
        np.testing.assert_array_equal(fused(*args)[0], plain(*args)[0])


def test_the_rewritten_kernel_prints_as_the_math_it_computes():
    sympy = pytest.importorskip("sympy")
    specs = [((4096,), np.float64)]
    _, _, _, new, feeds = pair(lambda x: tf.sin(x) * x + tf.cos(x), *specs)
    (node,) = fused_nodes(new, feeds)
    a0 = sympy.Symbol("a0")
    assert sympy.simplify(tf.simplify.fuse.fused_expression(node, [a0])
                          - (sympy.sin(a0) * a0 + sympy.cos(a0))) == 0


# --- conditions fused with the where that reads them ----------------------------------

def test_a_derivative_guard_is_computed_in_the_kernel():
    # sqrt's derivative rule guards 0 / 0 with where(out + |g| == 0, 1, out): before, the
    # comparison and the where were whole-array passes outside the fused kernel.
    specs = [((1000,), np.float64), ((1000,), np.float64)]
    plain, fused, source, new, feeds = pair(
        lambda x, g: g * 0.5 / tf.where(tf.equal(x + tf.abs(g), 0.0), 1.0, x) + x * g, *specs)
    (node,) = fused_nodes(new, feeds)
    body = source.split("def gradient")[1]
    assert body.count(" = ") == 1 and "np.where(" in body and "== 0.0" in body, source
    args = random_args(specs)
    args[0] = np.abs(args[0])                # x is sqrt's output
    args[0][:5] = args[1][:5] = 0.0          # 0 / 0 guarded: 0 * 0.5 / 1
    with np.errstate(all="raise"):
        (got,) = fused(*args)
        (expected,) = plain(*args)
    assert_close([got], [expected], 1e-15)
    assert (got[:5] == 0.0).all()


def test_a_condition_used_outside_the_group_is_computed_once_outside():
    specs = [((1000,), np.float64), ((1000,), np.float64)]
    plain, fused, source, new, feeds = pair(
        lambda x, g: (tf.where(x > 0.0, x * g, g) + g, tf.greater(x * g, 0.0)), *specs)
    assert source.count(" > 0.0") == 2, source           # the returned bool is its own
    args = random_args(specs)
    for got, expected in zip(fused(*args), plain(*args)):
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


def test_a_bool_value_never_roots_a_fused_node():
    specs = [((1000,), np.float64), ((1000,), np.float64)]
    plain, fused, source, new, feeds = pair(
        lambda x, y: tf.logical_and(tf.greater(x * y, 0.0), tf.less(x, 1.0)), *specs)
    assert not fused_nodes(new, feeds)
    args = random_args(specs)
    np.testing.assert_array_equal(fused(*args)[0], plain(*args)[0])


def test_the_w3_functional_gradient_is_one_blocked_kernel(simplify_mode):
    xv = np.random.default_rng(3).standard_normal(200_000)

    def f(x):
        return tf.reduce_sum(tf.sin(x) * tf.exp(-x ** 2) + tf.math.log1p(x ** 2) * tf.tanh(x)
                             + tf.sqrt(1 + x ** 2))
    grad = tf.grad(f)
    x = tf.constant(xv)
    got = grad(x).numpy()
    source = grad.source(x)
    by_hand = (np.cos(xv) * np.exp(-xv ** 2) - 2 * xv * np.sin(xv) * np.exp(-xv ** 2)
               + 2 * xv / (1 + xv ** 2) * np.tanh(xv) + np.log1p(xv ** 2) / np.cosh(xv) ** 2
               + xv / np.sqrt(1 + xv ** 2))
    assert_close([got], [by_hand], 1e-13)
    if simplify_mode == "full":
        body = source.split("def function")[1]
        assert body.count("tapec_blocked(") == 1 and "np.sin" not in body \
            and "np.cos" not in body, source
        statements = [line for line in body.splitlines() if re.match(r"    \w+ = ", line)]
        assert len(statements) == 1, source    # no whole-array pass besides the kernel
