"""GradientTape.jacobian and batch_jacobian: values, shapes, vectorization and caching.

Every value is checked in float64 against an analytic result or a central finite
difference of the eager function (eps 1e-6). The vectorized path (the default,
experimental_use_pfor=True) must agree with the row-by-row path (False) to rounding.
"""
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tapec as tf
from conftest import value
from helpers import fd

EPS = 1e-6
RTOL = 1e-6
ATOL = 1e-8


def rng(seed=0):
    return np.random.default_rng(seed)


def record(fn, arrays, persistent=True):
    """Run `fn` on tensors made from `arrays` under a tape watching all of them."""
    xs = [tf.constant(np.asarray(a)) for a in arrays]
    tape = tf.GradientTape(persistent=persistent)
    with tape:
        tape.watch(xs)
        y = fn(*xs)
    return tape, y, xs


def finite_difference(fn, arrays, i):
    """Central difference of the eager `fn` with respect to argument `i`."""
    return fd.jacobian(fd.eager(fn), arrays, i, EPS)


def assert_jacobian(jac, target, source, expected):
    """Shape target.shape + source.shape, the source's dtype, and the expected values."""
    assert jac is not None
    assert tuple(jac.shape) == tuple(target.shape) + tuple(source.shape)
    assert jac.dtype == source.dtype
    np.testing.assert_allclose(value(jac), expected, rtol=RTOL, atol=ATOL)


# --- functions used by several tests ----------------------------------------------------

CONST_23 = rng(99).normal(size=(2, 3))
CONST_34 = rng(98).normal(size=(3, 4))

CASES = {
    # name: (function, shapes of its arguments)
    "sin_times_x": (lambda x: tf.sin(x) * x, [(4,)]),
    "tanh_matvec": (lambda w, x: tf.tanh(w @ x), [(3, 4), (4, 1)]),
    "reduce_to_scalar": (lambda x: tf.reduce_sum(tf.exp(x) * x), [(2, 3)]),
    "reduce_axis_keepdims": (lambda x: tf.reduce_sum(x * x, axis=-1, keepdims=True),
                             [(2, 3)]),
    "reshape": (lambda x: tf.reshape(tf.sin(x) * x, (3, -1)), [(2, 3)]),
    "transpose_perm": (lambda x: tf.transpose(tf.exp(x), (2, 0, 1)) * 2.0, [(2, 3, 4)]),
    "transpose_default": (lambda x: tf.transpose(x) * tf.cos(tf.transpose(x)), [(2, 3)]),
    "indexing": (lambda x: x[1:, ..., None, 0] * x[0, ..., 1:2, None], [(3, 2, 4)]),
    "indexing_negative_step": (lambda x: x[::-1, 1] ** 3 + x[-1, 0], [(3, 2)]),
    "broadcast_operands": (lambda x, w: x * w + tf.sin(x), [(3,), (2, 3)]),
    "broadcast_to": (lambda x: tf.broadcast_to(x, (4, 2, 3)) * tf.constant(CONST_23),
                     [(2, 1)]),
    "matmul_batch_dims": (lambda a, b: tf.tanh(a @ b), [(2, 3, 4), (4, 5)]),
    "matmul_broadcast_batch": (lambda a, b: a @ b, [(2, 1, 3, 4), (5, 4, 2)]),
    "matmul_transposed": (lambda a, b: tf.matmul(a, b, transpose_a=True, transpose_b=True),
                          [(4, 3), (2, 4)]),
    "matmul_constant": (lambda x: tf.matmul(x, tf.constant(CONST_34)), [(2, 2, 3)]),
    "divide_pow_log": (lambda x, y: x / (y * y + 1.0) + tf.pow(tf.exp(x), 1.5)
                       - tf.math.log(tf.square(y) + 1.0), [(3,), (2, 3)]),
    "norm": (lambda x: tf.norm(x, axis=1), [(3, 2)]),
    "sqrt_abs_negative": (lambda x: tf.sqrt(tf.abs(x) + 1.0) - tf.negative(tf.cos(x)),
                          [(4,)]),
    "fan_out": (lambda x: x * x * x + tf.sin(x) @ tf.transpose(x), [(2, 2)]),
    "identity_of_source": (lambda x: tf.identity(x), [(2, 3)]),
    "scalar_target": (lambda x: tf.reduce_sum(x) * 2.0 + tf.reduce_sum(tf.sin(x)), [(2, 2)]),
    "scalar_source": (lambda x: tf.sin(x) * tf.constant([1.0, 2.0, 3.0], dtype=tf.float64),
                      [()]),
    "scalar_to_scalar": (lambda x: x ** 3 - tf.tanh(x), [()]),
}


def case_arrays(name, seed=0):
    _, shapes = CASES[name]
    r = rng(seed)
    return [r.normal(size=s) for s in shapes]


# --- 1. jacobian values and shapes -------------------------------------------------------

@pytest.mark.parametrize("name", sorted(CASES))
def test_jacobian_matches_finite_differences(name):
    fn, _ = CASES[name]
    arrays = case_arrays(name)
    tape, y, xs = record(fn, arrays)
    jacs = tape.jacobian(y, xs)
    assert isinstance(jacs, list) and len(jacs) == len(xs)
    for i, (jac, x) in enumerate(zip(jacs, xs)):
        assert_jacobian(jac, y, x, finite_difference(fn, arrays, i))


def test_elementwise_jacobian_is_diagonal_analytic():
    xv = rng(1).normal(size=(5,))
    tape, y, (x,) = record(lambda x: tf.sin(x) * x, [xv], persistent=False)
    jac = tape.jacobian(y, x)
    assert_jacobian(jac, y, x, np.diag(np.cos(xv) * xv + np.sin(xv)))


def test_tanh_matvec_jacobian_analytic():
    r = rng(2)
    wv, xv = r.normal(size=(3, 4)), r.normal(size=(4, 1))
    tape, y, (w, x) = record(lambda w, x: tf.tanh(w @ x), [wv, xv])
    yv = np.tanh(wv @ xv)                                   # (3, 1)
    # dy[i, 0] / dx[j, 0] = (1 - y_i^2) W[i, j]
    expected_x = ((1 - yv ** 2) * wv).reshape(3, 1, 4, 1)
    # dy[i, 0] / dW[k, j] = (1 - y_i^2) delta_ik x_j
    expected_w = np.einsum("i,ik,j->ikj", 1 - yv[:, 0] ** 2, np.eye(3), xv[:, 0])
    jac_w, jac_x = tape.jacobian(y, [w, x])
    assert_jacobian(jac_x, y, x, expected_x)
    assert_jacobian(jac_w, y, w, expected_w.reshape(3, 1, 3, 4))


def test_jacobian_of_a_scalar_equals_its_gradient():
    xv = rng(3).normal(size=(2, 3))
    tape, y, (x,) = record(lambda x: tf.reduce_sum(tf.sin(x) * x), [xv])
    jac = tape.jacobian(y, x)
    grad = tape.gradient(y, x)
    assert tuple(jac.shape) == (2, 3)
    np.testing.assert_allclose(value(jac), value(grad), rtol=1e-12, atol=0)
    np.testing.assert_allclose(value(jac), np.cos(xv) * xv + np.sin(xv), rtol=RTOL)


def test_jacobian_of_the_source_itself_is_identity():
    tape, _, (x,) = record(lambda x: x, [rng(4).normal(size=(2, 3))])
    jac = tape.jacobian(x, x)
    assert_jacobian(jac, x, x, np.eye(6).reshape(2, 3, 2, 3))


def test_zero_dim_target_and_zero_dim_source():
    xv = np.float64(0.7)
    tape, y, (x,) = record(lambda x: x ** 3 - tf.tanh(x), [xv])
    jac = tape.jacobian(y, x)
    assert tuple(jac.shape) == () and jac.dtype == tf.float64
    np.testing.assert_allclose(value(jac), 3 * xv ** 2 - (1 - np.tanh(xv) ** 2), rtol=1e-12)

    cv = np.array([1.0, -2.0, 3.0])
    tape, y, (x,) = record(lambda x: tf.sin(x) * tf.constant(cv), [xv])
    jac = tape.jacobian(y, x)
    assert_jacobian(jac, y, x, np.cos(xv) * cv)


def test_multiple_sources_in_a_list_dict_and_nested_structure():
    r = rng(5)
    av, bv = r.normal(size=(3,)), r.normal(size=(2, 3))
    fn = lambda a, b: tf.exp(a) * b  # noqa: E731
    tape, y, (a, b) = record(fn, [av, bv])
    fd_a, fd_b = finite_difference(fn, [av, bv], 0), finite_difference(fn, [av, bv], 1)

    as_list = tape.jacobian(y, [a, b])
    assert isinstance(as_list, list)
    assert_jacobian(as_list[0], y, a, fd_a)
    assert_jacobian(as_list[1], y, b, fd_b)

    as_dict = tape.jacobian(y, {"a": a, "b": b})
    assert isinstance(as_dict, dict) and set(as_dict) == {"a", "b"}
    assert_jacobian(as_dict["a"], y, a, fd_a)
    assert_jacobian(as_dict["b"], y, b, fd_b)

    nested = tape.jacobian(y, (b, {"k": [a]}))
    assert isinstance(nested, tuple) and isinstance(nested[1]["k"], list)
    assert_jacobian(nested[0], y, b, fd_b)
    assert_jacobian(nested[1]["k"][0], y, a, fd_a)


def test_variable_sources_and_repeated_sources():
    r = rng(6)
    v = tf.Variable(r.normal(size=(3,)))
    xv = r.normal(size=(3,))
    x = tf.constant(xv)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = v * x + tf.sin(v)
    jac_v, jac_x, jac_x_again = tape.jacobian(y, [v, x, x])
    vv = v.numpy()
    assert_jacobian(jac_v, y, v, np.diag(xv + np.cos(vv)))
    assert_jacobian(jac_x, y, x, np.diag(vv))
    np.testing.assert_allclose(value(jac_x_again), value(jac_x), rtol=0, atol=0)


# --- 2. one compiled call, cached by structure ----------------------------------------------

def _sin_x_jacobian(xv):
    tape, y, (x,) = record(lambda x: tf.sin(x) * x, [xv], persistent=False)
    return tape.jacobian(y, x)


def test_vectorized_jacobian_is_one_compiled_call_and_cached(fresh_cache):
    r = rng(7)
    before = tf.cache_info()
    assert (before.hits, before.misses, before.size) == (0, 0, 0)
    xv = r.normal(size=(6,))
    jac = _sin_x_jacobian(xv)
    after = tf.cache_info()
    assert after.misses == 1 and after.hits == 0 and after.size == 1
    np.testing.assert_allclose(value(jac), np.diag(np.cos(xv) * xv + np.sin(xv)), rtol=1e-12)

    source = tf.generated_source(jac)
    # One function, no loop: the identity seed is either materialized or simplified away.
    assert source.count("def ") == 1
    assert not re.search(r"\bfor\b", source), source
    assert not re.search(r"\bwhile\b", source), source
    assert source.count("def ") == 1

    xv2 = r.normal(size=(6,))
    jac2 = _sin_x_jacobian(xv2)
    second = tf.cache_info()
    assert second.hits == after.hits + 1
    assert second.misses == after.misses
    np.testing.assert_allclose(value(jac2), np.diag(np.cos(xv2) * xv2 + np.sin(xv2)),
                               rtol=1e-12)
    assert tf.generated_source(jac2) == source


def test_generated_source_of_matrix_jacobian_has_no_loop(fresh_cache):
    fn, _ = CASES["tanh_matvec"]
    tape, y, xs = record(fn, case_arrays("tanh_matvec"), persistent=False)
    jac_w, jac_x = tape.jacobian(y, xs)
    assert tf.cache_info().misses == 1
    source = tf.generated_source(jac_x)
    assert tf.generated_source(jac_w) == source
    assert source.count("def ") == 1
    assert not re.search(r"\bfor\b", source)


def test_jacobian_and_gradient_of_the_same_graph_are_cached_separately(fresh_cache):
    xv = rng(8).normal(size=(3,))
    tape, y, (x,) = record(lambda x: tf.sin(x) * x, [xv])
    grad = tape.gradient(y, x)
    jac = tape.jacobian(y, x)
    info = tf.cache_info()
    assert info.misses == 2 and info.hits == 0
    assert tuple(grad.shape) == (3,) and tuple(jac.shape) == (3, 3)
    np.testing.assert_allclose(value(grad), np.diag(value(jac)), rtol=1e-12)


def test_different_shapes_are_different_cache_entries(fresh_cache):
    _sin_x_jacobian(rng(9).normal(size=(3,)))
    jac = _sin_x_jacobian(rng(9).normal(size=(4,)))
    info = tf.cache_info()
    assert info.misses == 2 and info.hits == 0
    assert tuple(jac.shape) == (4, 4)


# --- 3. experimental_use_pfor=False --------------------------------------------------------

@pytest.mark.parametrize("name", sorted(CASES))
def test_row_by_row_jacobian_equals_vectorized(name):
    fn, _ = CASES[name]
    tape, y, xs = record(fn, case_arrays(name, seed=1))
    vectorized = tape.jacobian(y, xs)
    rows = tape.jacobian(y, xs, experimental_use_pfor=False)
    for jv, jr, x in zip(vectorized, rows, xs):
        assert tuple(jr.shape) == tuple(y.shape) + tuple(x.shape)
        assert jr.dtype == x.dtype
        np.testing.assert_allclose(value(jr), value(jv), rtol=1e-12, atol=0)


def test_row_by_row_needs_a_persistent_tape():
    tape, y, (x,) = record(lambda x: tf.sin(x) * x, [np.ones(3)], persistent=False)
    with pytest.raises(RuntimeError, match="persistent"):
        tape.jacobian(y, x, experimental_use_pfor=False)
    # the failed call did not consume the tape
    jac = tape.jacobian(y, x)
    np.testing.assert_allclose(value(jac), np.diag(np.cos(1.0) + np.sin(1.0) * np.ones(3)),
                               rtol=1e-12)


def test_non_persistent_tape_allows_one_jacobian():
    tape, y, (x,) = record(lambda x: tf.sin(x) * x, [np.ones(3)], persistent=False)
    tape.jacobian(y, x)
    with pytest.raises(RuntimeError, match="non-persistent"):
        tape.jacobian(y, x)


# --- 4. unconnected sources ------------------------------------------------------------------

@pytest.mark.parametrize("pfor", [True, False])
def test_unconnected_sources(pfor):
    r = rng(10)
    x = tf.constant(r.normal(size=(3,)))
    z = tf.constant(r.normal(size=(2, 2)))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, z])
        y = tf.sin(x)
    jac_x, jac_z = tape.jacobian(y, [x, z], experimental_use_pfor=pfor)
    assert jac_z is None
    np.testing.assert_allclose(value(jac_x), np.diag(np.cos(x.numpy())), rtol=1e-12)
    assert tape.jacobian(y, z, experimental_use_pfor=pfor) is None
    for mode in ("zero", tf.UnconnectedGradients.ZERO):
        jac_x, jac_z = tape.jacobian(y, [x, z], unconnected_gradients=mode,
                                     experimental_use_pfor=pfor)
        assert tuple(jac_z.shape) == (3, 2, 2)
        assert jac_z.dtype == tf.float64
        np.testing.assert_array_equal(value(jac_z), np.zeros((3, 2, 2)))
        np.testing.assert_allclose(value(jac_x), np.diag(np.cos(x.numpy())), rtol=1e-12)
    assert tape.jacobian(y, z, unconnected_gradients=tf.UnconnectedGradients.NONE) is None


def test_unconnected_through_stop_gradient_and_unrecorded_target():
    x = tf.constant(np.array([0.5, 1.5]))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.stop_gradient(x) * 3.0
        unrelated = tf.constant(np.ones(4)) * 2.0
    assert tape.jacobian(y, x) is None
    zeros = tape.jacobian(unrelated, x, unconnected_gradients="zero")
    assert tuple(zeros.shape) == (4, 2)
    np.testing.assert_array_equal(value(zeros), np.zeros((4, 2)))


def test_integer_sources_give_none():
    x = tf.constant(np.array([1.0, 2.0]))
    i = tf.constant([1, 2])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, i])
        y = x * tf.cast(i, tf.float64)
    jac_x, jac_i = tape.jacobian(y, [x, i])
    assert jac_i is None
    np.testing.assert_allclose(value(jac_x), np.diag([1.0, 2.0]), rtol=1e-12)
    assert tape.jacobian(y, [x, i], experimental_use_pfor=False)[1] is None


# --- 5. batch_jacobian ------------------------------------------------------------------------

def test_batch_jacobian_seed_example():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    with tf.GradientTape() as g:
        g.watch(x)
        y = x * x
    batch_jac = g.batch_jacobian(y, x)
    assert tuple(batch_jac.shape) == (2, 2, 2)
    assert batch_jac.dtype == tf.float32
    np.testing.assert_array_equal(value(batch_jac),
                                  [[[2, 0], [0, 4]], [[6, 0], [0, 8]]])


def _per_example_tanh(b, d, k, seed):
    r = rng(seed)
    xv, wv = r.normal(size=(b, d)), r.normal(size=(d, k))
    tape, y, (x, w) = record(lambda x, w: tf.tanh(x @ w), [xv, wv])
    yv = np.tanh(xv @ wv)
    expected = np.stack([(1 - yv[i][:, None] ** 2) * wv.T for i in range(b)])   # (b, k, d)
    return tape, y, x, expected


@pytest.mark.parametrize("pfor", [True, False])
def test_batch_jacobian_per_example_nonlinear_map(pfor):
    b, d, k = 5, 3, 4
    tape, y, x, expected = _per_example_tanh(b, d, k, seed=11)
    batch_jac = tape.batch_jacobian(y, x, experimental_use_pfor=pfor)
    assert tuple(batch_jac.shape) == (b, k, d)
    assert batch_jac.dtype == tf.float64
    np.testing.assert_allclose(value(batch_jac), expected, rtol=1e-12, atol=1e-15)


def _diagonal_blocks(full, batch, target_rank):
    """[i, y..., i, x...] blocks of a full jacobian, stacked over i."""
    rest = (slice(None),) * (target_rank - 1)
    return np.stack([full[(i,) + rest + (i,)] for i in range(batch)])


CONST_R3 = rng(97).normal(size=(3, 4))

BATCH_CASES = {
    "rank2_tanh": (lambda x: tf.tanh(x) * x, (4, 3)),
    "rank3_elementwise": (lambda x: tf.sin(x) * x, (2, 3, 4)),
    "rank3_transpose": (lambda x: tf.transpose(tf.exp(x), (0, 2, 1)) * 2.0, (2, 3, 4)),
    "rank3_reduce": (lambda x: tf.reduce_sum(x * tf.constant(CONST_R3), axis=2), (2, 3, 4)),
    "rank3_reduce_keepdims": (lambda x: tf.reduce_sum(x * x, axis=-1, keepdims=True) * x,
                              (2, 3, 4)),
    "rank3_indexing": (lambda x: x[:, 1:, ::2] ** 2, (2, 3, 4)),
    "rank3_to_rank4": (lambda x: tf.reshape(tf.tanh(x), (2, 4, 1, 3)), (2, 3, 4)),
    "rank3_matmul_self": (lambda x: tf.matmul(x, x, transpose_b=True), (2, 3, 4)),
    "rank2_norm": (lambda x: tf.norm(x, axis=1, keepdims=True) * x, (3, 4)),
    "batch_of_one": (lambda x: tf.tanh(x) * x, (1, 3)),
    "identity": (lambda x: x * 1.0, (3, 2)),
}


@pytest.mark.parametrize("name", sorted(BATCH_CASES))
def test_batch_jacobian_equals_diagonal_blocks_of_full_jacobian(name):
    fn, shape = BATCH_CASES[name]
    xv = rng(12).normal(size=shape)
    tape, y, (x,) = record(fn, [xv])
    batch_jac = tape.batch_jacobian(y, x)
    rows = tape.batch_jacobian(y, x, experimental_use_pfor=False)
    full = tape.jacobian(y, x)
    expected = _diagonal_blocks(value(full), shape[0], len(y.shape))
    assert tuple(batch_jac.shape) == tuple(y.shape) + tuple(x.shape)[1:]
    assert batch_jac.dtype == x.dtype
    np.testing.assert_allclose(value(batch_jac), expected, rtol=1e-12, atol=0)
    np.testing.assert_allclose(value(rows), value(batch_jac), rtol=1e-12, atol=0)
    # and the full jacobian itself is right
    np.testing.assert_allclose(value(full), finite_difference(fn, [xv], 0),
                               rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("target_shape, source_shape", [
    ((5, 4), (4, 3)),      # first dimensions differ
    ((5,), (5, 3)),        # target rank 1
    ((5, 4), (5,)),        # source rank 1
    ((), (5, 3)),          # target rank 0
])
def test_batch_jacobian_rejects_bad_shapes(target_shape, source_shape):
    x = tf.constant(np.ones(source_shape))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.reduce_sum(x) * tf.constant(np.ones(target_shape))
    for pfor in (True, False):
        with pytest.raises(ValueError, match="batch_jacobian"):
            tape.batch_jacobian(y, x, experimental_use_pfor=pfor)


@pytest.mark.parametrize("pfor", [True, False])
def test_batch_jacobian_unconnected_source_gives_zeros(pfor):
    x = tf.constant(np.ones((2, 3)))
    z = tf.constant(np.ones((2, 4)))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, z])
        y = tf.sin(x)
    result = tape.batch_jacobian(y, z, experimental_use_pfor=pfor)
    assert result is not None
    assert tuple(result.shape) == (2, 3, 4)
    np.testing.assert_array_equal(value(result), np.zeros((2, 3, 4)))


def test_batch_jacobian_row_by_row_needs_a_persistent_tape():
    x = tf.constant(np.ones((2, 3)))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(RuntimeError, match="persistent"):
        tape.batch_jacobian(y, x, experimental_use_pfor=False)


def test_vectorized_batch_jacobian_never_forms_the_full_jacobian(fresh_cache):
    b, d = 16, 8
    tape, y, x, expected = _per_example_tanh(b, d, d, seed=13)
    batch_jac = tape.batch_jacobian(y, x)
    assert tf.cache_info().misses == 1
    np.testing.assert_allclose(value(batch_jac), expected, rtol=1e-12, atol=1e-15)
    source = tf.generated_source(batch_jac)
    assert "(16, 8, 16" not in source, source
    assert not re.search(r"\bfor\b", source)
    # the full jacobian of the same computation does contain that shape
    full = tape.jacobian(y, x)
    assert "(16, 8, 16" in tf.generated_source(full)
    np.testing.assert_allclose(_diagonal_blocks(value(full), b, 2), expected, rtol=1e-12,
                               atol=1e-15)


def test_batch_jacobian_and_jacobian_are_cached_separately(fresh_cache):
    tape, y, x, expected = _per_example_tanh(3, 2, 2, seed=14)
    batch_jac = tape.batch_jacobian(y, x)
    full = tape.jacobian(y, x)
    assert tf.cache_info().misses == 2
    assert tuple(batch_jac.shape) == (3, 2, 2) and tuple(full.shape) == (3, 2, 3, 2)
    tape2, y2, x2, expected2 = _per_example_tanh(3, 2, 2, seed=15)
    again = tape2.batch_jacobian(y2, x2)
    assert tf.cache_info().hits == 1 and tf.cache_info().misses == 2
    np.testing.assert_allclose(value(again), expected2, rtol=1e-12, atol=1e-15)


# --- 6. Hessians -------------------------------------------------------------------------------

def _quadratic_form(n, seed):
    r = rng(seed)
    return r.normal(size=(n, n)), r.normal(size=(n, 1))


def test_hessian_of_quadratic_form_with_nested_tapes():
    n = 4
    av, xv = _quadratic_form(n, seed=16)
    a, x = tf.constant(av), tf.constant(xv)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            f = tf.matmul(tf.transpose(x) @ a, x)
        grad = inner.gradient(f, x)
    np.testing.assert_allclose(value(grad), (av + av.T) @ xv, rtol=1e-12)
    hessian = outer.jacobian(grad, x)
    assert tuple(hessian.shape) == (n, 1, n, 1)
    np.testing.assert_allclose(value(hessian).reshape(n, n), av + av.T, rtol=1e-12,
                               atol=1e-14)
    source = tf.generated_source(hessian)
    assert source.count("def ") == 1 and not re.search(r"\b(for|while)\b", source)


def test_hessian_of_quadratic_form_persistent_row_by_row():
    n = 4
    av, xv = _quadratic_form(n, seed=17)
    a, x = tf.constant(av), tf.constant(xv)
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with tf.GradientTape(persistent=True) as inner:
            inner.watch(x)
            f = tf.matmul(tf.transpose(x) @ a, x)
        grad = inner.gradient(f, x)
    rows = outer.jacobian(grad, x, experimental_use_pfor=False)
    vectorized = outer.jacobian(grad, x)
    np.testing.assert_allclose(value(rows).reshape(n, n), av + av.T, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(value(rows), value(vectorized), rtol=1e-12, atol=0)


@pytest.mark.parametrize("inner_kind", ["gradient", "jacobian"])
@pytest.mark.parametrize("pfor", [True, False])
def test_hessian_of_sum_sin_x_times_x_is_diagonal(inner_kind, pfor):
    xv = rng(18).normal(size=(5,))
    x = tf.constant(xv)
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.reduce_sum(tf.sin(x) * x)
        # a jacobian of a scalar is its gradient; under the recording outer tape it is
        # evaluated op by op so that the outer tape can differentiate it again
        grad = getattr(inner, inner_kind)(y, x)
    np.testing.assert_allclose(value(grad), np.cos(xv) * xv + np.sin(xv), rtol=1e-12)
    hessian = outer.jacobian(grad, x, experimental_use_pfor=pfor)
    assert tuple(hessian.shape) == (5, 5)
    np.testing.assert_allclose(value(hessian), np.diag(2 * np.cos(xv) - xv * np.sin(xv)),
                               rtol=1e-12, atol=1e-15)


def test_jacobian_of_a_jacobian_matches_finite_differences():
    xv = rng(19).normal(size=(2, 2))

    def jacobian_of(x):
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.sin(x) @ x
        return t.jacobian(y, x)

    x = tf.constant(xv)
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(x)
        jac = jacobian_of(x)
    third = outer.jacobian(jac, x)
    assert tuple(third.shape) == (2,) * 6
    np.testing.assert_allclose(value(third), finite_difference(jacobian_of, [xv], 0),
                               rtol=RTOL, atol=ATOL)
    rows = outer.jacobian(jac, x, experimental_use_pfor=False)
    np.testing.assert_allclose(value(rows), value(third), rtol=1e-12, atol=0)


# --- 7. property test --------------------------------------------------------------------------

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=shapes, keepdims=st.booleans(), kind=st.sampled_from(["reduce", "tanh"]),
       seed=st.integers(0, 2 ** 16))
def test_property_vectorized_equals_rows_equals_finite_differences(shape, keepdims, kind,
                                                                   seed):
    if kind == "reduce":
        fn = lambda x: tf.reduce_sum(tf.sin(x) * x, axis=-1, keepdims=keepdims)  # noqa: E731
    else:
        fn = lambda x: tf.tanh(x) * 2.0  # noqa: E731
    xv = rng(seed).normal(size=shape)
    tape, y, (x,) = record(fn, [xv])
    vectorized = tape.jacobian(y, x)
    rows = tape.jacobian(y, x, experimental_use_pfor=False)
    assert tuple(vectorized.shape) == tuple(y.shape) + shape
    assert vectorized.dtype == tf.float64
    np.testing.assert_allclose(value(rows), value(vectorized), rtol=1e-12, atol=0)
    np.testing.assert_allclose(value(vectorized), finite_difference(fn, [xv], 0),
                               rtol=RTOL, atol=ATOL)


# --- 8. inside a persistent tape's context; float32 ---------------------------------------

def test_jacobian_inside_a_persistent_tapes_context():
    xv = rng(20).normal(size=(3,))
    x = tf.constant(xv)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.sin(x) * x
        jac = tape.jacobian(y, x)
        rows = tape.jacobian(y, x, experimental_use_pfor=False)
        column = tf.reshape(x, (3, 1))
        batch_jac = tape.batch_jacobian(tf.sin(column) * column, column)
        total = tf.reduce_sum(jac)
    expected = np.diag(np.cos(xv) * xv + np.sin(xv))
    assert_jacobian(jac, y, x, expected)
    np.testing.assert_allclose(value(rows), expected, rtol=1e-12)
    assert tuple(batch_jac.shape) == (3, 1, 1)
    np.testing.assert_allclose(value(batch_jac).reshape(3), np.diag(expected), rtol=1e-12)
    # the jacobian computation was recorded: it can be differentiated
    grad = tape.gradient(total, x)
    np.testing.assert_allclose(value(grad), 2 * np.cos(xv) - xv * np.sin(xv), rtol=1e-12)


def test_float32_jacobians_are_float32():
    xv = rng(21).normal(size=(2, 3)).astype(np.float32)
    tape, y, (x,) = record(lambda x: tf.tanh(x) * 2.0, [xv])
    expected = np.diag((2 * (1 - np.tanh(xv.astype(np.float64)) ** 2)).ravel())
    for pfor in (True, False):
        jac = tape.jacobian(y, x, experimental_use_pfor=pfor)
        assert jac.dtype == tf.float32
        assert value(jac).dtype == np.float32
        assert tuple(jac.shape) == (2, 3, 2, 3)
        np.testing.assert_allclose(value(jac).reshape(6, 6), expected, rtol=1e-5, atol=1e-6)
        batch_jac = tape.batch_jacobian(y, x, experimental_use_pfor=pfor)
        assert batch_jac.dtype == tf.float32
        np.testing.assert_allclose(value(batch_jac),
                                   np.stack([np.diag(r) for r in
                                             2 * (1 - np.tanh(xv.astype(np.float64)) ** 2)]),
                                   rtol=1e-5, atol=1e-6)


def test_jacobian_dtype_follows_the_source_through_a_cast():
    xv = rng(22).normal(size=(3,))
    tape, y, (x,) = record(lambda x: tf.sin(tf.cast(x, tf.float32)), [xv])
    assert y.dtype == tf.float32
    jac = tape.jacobian(y, x)
    rows = tape.jacobian(y, x, experimental_use_pfor=False)
    assert jac.dtype == tf.float64 and rows.dtype == tf.float64
    np.testing.assert_allclose(value(jac), np.diag(np.cos(xv)), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(value(rows), value(jac), rtol=1e-12, atol=0)


def test_parallel_iterations_is_accepted_and_validated():
    xv = rng(23).normal(size=(3,))
    tape, y, (x,) = record(lambda x: tf.exp(x), [xv])
    for pfor in (True, False):
        jac = tape.jacobian(y, x, parallel_iterations=2, experimental_use_pfor=pfor)
        np.testing.assert_allclose(value(jac), np.diag(np.exp(xv)), rtol=1e-12)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="parallel_iterations"):
            tape.jacobian(y, x, parallel_iterations=bad)


def test_vectorized_jacobian_keeps_the_nan_of_zero_times_inf():
    # Row i of a jacobian is the gradient seeded with the one-hot e_i; its zeros times an
    # inf are nan, in TensorFlow's vectorized and row-by-row jacobians alike. The
    # vectorized seed used to hold exact zeros, giving a finite number in those rows.
    x = tf.constant(np.array([[[-0.5]]]))
    y = tf.constant(np.array([-np.inf, 0.625]))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, y])
        v = x * y
    with np.errstate(invalid="ignore"):
        vectorized = tape.jacobian(v, x).numpy().ravel()
        by_rows = tape.jacobian(v, x, experimental_use_pfor=False).numpy().ravel()
    np.testing.assert_array_equal(vectorized, [-np.inf, np.nan])
    np.testing.assert_array_equal(by_rows, [-np.inf, np.nan])


def test_nested_tape_hessian_folds_the_inner_seed_of_ones():
    """The inner gradient's seed of ones, broadcast while an outer tape records, stays a
    fill on the outer tape: the eager Hessian of x^T A x compiles to A + A^T."""
    rng = np.random.default_rng(7)
    A = tf.constant(rng.normal(size=(5, 5)))
    x = tf.constant(rng.normal(size=5))
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            f = tf.reduce_sum(x * tf.linalg.matvec(A, x))
        g = inner.gradient(f, x)
    H = outer.jacobian(g, x)
    np.testing.assert_allclose(H.numpy(), A.numpy() + A.numpy().T, rtol=1e-15)
    if tf.config.simplify_setting() != "off":
        body = [line for line in H._origin.source.split("def gradient")[1].splitlines()[1:]
                if line.strip() and not line.strip().startswith(("return", "#"))]
        assert len(body) == 1 and "+" in body[0], H._origin.source
