"""Shape, creation and indexing ops: values against NumPy, gradients by central finite
differences (float64, eps 1e-6), batching rules, vectorized jacobians, errors.

Covers expand_dims, squeeze, concat, stack, split, tile, gather (with its adjoint
scatter_add), zeros/ones/fill/range/eye, and `x[...]` with integer arrays, boolean
masks and mixed advanced/basic indices (with its adjoint scatter).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tapec as tf
from batching_check import check_batching_rule
from helpers import fd

EPS = 1e-6
RTOL = 1e-6
ATOL = 1e-8
RNG = np.random.default_rng(11)

# Registry ops whose derivative rules the gradient tests below check (first order, and
# second order for the adjoints scatter and scatter_add).
COVERED_OPS = {"getitem", "scatter", "gather", "scatter_add", "concat", "tile", "reshape",
               "transpose", "broadcast_to"}


def _arr(*shape):
    return RNG.uniform(0.5, 1.5, size=shape)


def _ints(*values):
    return np.array(values, dtype=np.int64)


def _spec(index):
    return tf.ops.indexing.normalize_index(index)


# --- batching rules ----------------------------------------------------------------------

# (op name, argument arrays, attrs, which arguments carry the batch axis)
BATCH_CASES = [
    ("concat", [_arr(2, 3), _arr(2, 1), _arr(2, 2)], {"axis": 1}, (True, False, True)),
    ("concat", [_arr(2, 3), _arr(1, 3)], {"axis": 0}, (False, True)),
    ("tile", [_arr(2, 3)], {"multiples": (2, 3)}, (True,)),
    ("tile", [_arr(2, 1)], {"multiples": (1, 0)}, (True,)),
    ("gather", [_arr(4, 3), _ints(0, 3, 3)], {"axis": 0}, (True, False)),
    ("gather", [_arr(4, 3), np.array([[2, 0], [-1, 2]])], {"axis": 1}, (True, False)),
    ("gather", [_arr(4, 3), _ints(1, 1, 0)], {"axis": 1}, (True, True)),
    ("gather", [_arr(4, 3), _ints(-1, 2)], {"axis": 0}, (False, True)),
    ("scatter_add", [_arr(3, 2), _ints(0, 2, 2)], {"shape": (4, 2), "axis": 0},
     (True, False)),
    ("scatter_add", [_arr(2, 2, 2), np.array([[1, 1], [0, -3]])],
     {"shape": (2, 3), "axis": 1}, (True, False)),
    ("scatter_add", [_arr(3, 2), _ints(0, 2, 2)], {"shape": (4, 2), "axis": 0},
     (True, True)),
    ("scatter_add", [_arr(2, 3), _ints(1, 0, 1)], {"shape": (2, 2), "axis": 1},
     (False, True)),
    ("getitem", [_arr(4, 5)], {"index": _spec(([0, 0, 3], slice(1, None)))}, (True,)),
    ("getitem", [_arr(4, 5, 3)], {"index": _spec(([1, 2], Ellipsis, [0, 0]))}, (True,)),
    ("getitem", [_arr(4, 5, 3)], {"index": _spec((0, slice(None), [2, 1]))}, (True,)),
    ("getitem", [_arr(4, 5)], {"index": _spec(np.arange(20).reshape(4, 5) % 3 == 0)},
     (True,)),
    ("scatter", [_arr(3, 4)], {"index": _spec(([0, 0, 3], slice(1, None))),
                               "shape": (4, 5)}, (True,)),
    ("scatter", [_arr(2, 4)], {"index": _spec(([1, 1], Ellipsis, [0, 2])),
                               "shape": (4, 4, 3)}, (True,)),
    ("scatter", [_arr(3)], {"index": _spec(np.array([True, False, True, True])),
                            "shape": (4,)}, (True,)),
]


@pytest.mark.parametrize("name,args,attrs,flags", BATCH_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(BATCH_CASES)])
def test_batching_rule_matches_row_by_row(name, args, attrs, flags):
    check_batching_rule(name, args, attrs, flags)


# --- gradients by finite differences -------------------------------------------------------

class Case(NamedTuple):
    name: str
    fn: Callable
    shapes: tuple


def check_gradients(fn, arrays, seed=1):
    """Tape gradients of sum(fn(*xs) * w) against central differences."""
    xs = [tf.constant(a) for a in arrays]
    w = np.random.default_rng(seed).standard_normal(tuple(fn(*xs).shape))
    with tf.GradientTape() as tape:
        tape.watch(xs)
        y = tf.reduce_sum(fn(*xs) * w)
    grads = tape.gradient(y, xs)
    for i, (a, g) in enumerate(zip(arrays, grads)):
        assert g is not None and tuple(g.shape) == a.shape and g.dtype == tf.float64
        expected = fd.numeric_gradient(fn, arrays, i, w, EPS)
        np.testing.assert_allclose(g.numpy(), expected, rtol=RTOL, atol=ATOL,
                                   err_msg=f"gradient of input {i}")


def _split_mix(x, sizes, axis):
    parts = tf.split(x, sizes, axis=axis)
    return tf.concat([p * float(k + 1) for k, p in enumerate(parts)], axis)


_MASK = np.array([[True, False, True, False], [False, False, True, True],
                  [True, True, False, False]])

CASES = [
    Case("expand_dims-0", lambda x: tf.expand_dims(x, 0), ((2, 3),)),
    Case("expand_dims-neg", lambda x: tf.expand_dims(x, -1), ((2, 3),)),
    Case("expand_dims-0d", lambda x: tf.expand_dims(x, 0), ((),)),
    Case("squeeze-all", tf.squeeze, ((1, 3, 1),)),
    Case("squeeze-axis-neg", lambda x: tf.squeeze(x, axis=-1), ((1, 3, 1),)),
    Case("squeeze-axis-list", lambda x: tf.squeeze(x, [0, 2]), ((1, 3, 1, 2),)),
    Case("concat-3-sizes", lambda a, b, c: tf.concat([a, b, c], axis=0),
         ((1, 3), (2, 3), (4, 3))),
    Case("concat-axis-neg", lambda a, b: tf.concat([a, b], -1), ((2, 1), (2, 3))),
    Case("concat-reuse", lambda a: tf.concat([a, a * a], 1), ((2, 2),)),
    Case("stack-0", lambda a, b: tf.stack([a, b]), ((2, 3), (2, 3))),
    Case("stack-neg", lambda a, b, c: tf.stack([a, b, c], axis=-1), ((2, 3),) * 3),
    Case("stack-0d", lambda a, b: tf.stack([a, b]), ((), ())),
    Case("split-int", lambda x: _split_mix(x, 3, 1), ((2, 6),)),
    Case("split-sizes", lambda x: _split_mix(x, [1, -1, 2], 0), ((5, 2),)),
    Case("split-one-piece", lambda x: tf.split(x, [0, 3], axis=-1)[1] * 2.0, ((2, 3),)),
    Case("tile-2d", lambda x: tf.tile(x, [2, 3]), ((2, 3),)),
    Case("tile-3d", lambda x: tf.tile(x, (1, 2, 2)), ((2, 1, 3),)),
    Case("gather-repeats", lambda x: tf.gather(x, [0, 2, 2, 0, 2]), ((3, 2),)),
    Case("gather-axis1", lambda x: tf.gather(x, [3, 1, 3], axis=1), ((2, 4),)),
    Case("gather-2d-indices", lambda x: tf.gather(x, [[0, 1], [1, 1], [3, 0]]), ((4, 2),)),
    Case("gather-negative", lambda x: tf.gather(x, np.array([-1, 0, -1]), axis=-1),
         ((3, 3),)),
    Case("gather-0d-index", lambda x: tf.gather(x, 1, axis=1), ((2, 3),)),
    Case("gather-batch_dims", lambda x: tf.gather(x, [[2, 2], [0, 1]], batch_dims=1),
         ((2, 3),)),
    Case("gather-batch_dims-axis2",
         lambda x: tf.gather(x, [[1, 0, 1], [0, 0, 1]], axis=2, batch_dims=1),
         ((2, 3, 2, 2),)),
    Case("index-int-array-repeats", lambda x: x[[0, 2, 2, 0]], ((3, 2),)),
    Case("index-int-array-2d", lambda x: x[np.array([[1, 1], [0, 1]])], ((2, 3),)),
    Case("index-int-tensor", lambda x: x[tf.constant([2, -1, 0])], ((4,),)),
    Case("index-two-arrays", lambda x: x[[0, 1, 0], [2, 2, 2]], ((2, 3),)),
    Case("index-array-slice", lambda x: x[[1, 1], ::-1], ((3, 4),)),
    Case("index-slice-array", lambda x: x[1:, [0, 3, 0]], ((3, 4),)),
    Case("index-int-slice-array", lambda x: x[0, :, [1, 1]], ((2, 3, 4),)),
    Case("index-array-ellipsis-array", lambda x: x[[1, 0, 1], ..., [2, 2, 0]], ((2, 3, 4),)),
    Case("index-array-newaxis", lambda x: x[None, [2, 2], 1:], ((3, 3),)),
    Case("index-mask-numpy", lambda x: x[_MASK], ((3, 4),)),
    Case("index-mask-tensor", lambda x: x[x > 0.0], ((3, 4),)),
    Case("index-mask-row", lambda x: x[np.array([True, False, True])], ((3, 2),)),
    Case("index-mask-slice", lambda x: x[:, [False, True, True, False]], ((3, 4),)),
    Case("index-mask-empty", lambda x: x[np.zeros(3, bool)], ((3, 2),)),
    Case("index-negative-step", lambda x: x[::-2, [0, 0]], ((5, 2),)),
    Case("fill-tensor-value", lambda x: tf.fill([2, 3], x), ((),)),
    Case("creation-constants", lambda x: x * tf.eye(3, dtype=tf.float64)
         + tf.cast(tf.range(3), tf.float64) * tf.ones_like(x), ((3, 3),)),
]

CASE_PARAMS = [pytest.param(c, id=c.name) for c in CASES]


def _inputs(case, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-2.0, 2.0, s) for s in case.shapes]


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_gradient_matches_finite_differences(case):
    check_gradients(case.fn, _inputs(case))


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_vectorized_jacobian_equals_row_by_row(case):
    xs = [tf.constant(a) for a in _inputs(case)]
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(xs)
        y = case.fn(*xs) ** 2
    fast = tape.jacobian(y, xs)
    slow = tape.jacobian(y, xs, experimental_use_pfor=False)
    for f, s, x in zip(fast, slow, xs):
        assert tuple(f.shape) == tuple(y.shape) + tuple(x.shape)
        np.testing.assert_allclose(f.numpy(), s.numpy(), rtol=1e-12, atol=0)


SECOND_ORDER = ["gather-repeats", "gather-batch_dims", "index-int-array-repeats",
                "index-array-ellipsis-array", "index-mask-numpy", "concat-3-sizes",
                "tile-2d"]


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_order_matches_finite_differences(name):
    """Differentiating a gradient runs the adjoints' own rules (scatter, scatter_add)."""
    case = next(c for c in CASES if c.name == name)
    arrays = _inputs(case)
    w = np.random.default_rng(5).standard_normal(tuple(case.fn(*map(tf.constant,
                                                                     arrays)).shape))
    vs = [np.random.default_rng(6 + i).standard_normal(a.shape) for i, a in enumerate(arrays)]

    def grad_dot_v(*xs):
        with tf.GradientTape() as inner:
            inner.watch(list(xs))
            y = tf.reduce_sum(case.fn(*xs) ** 3 * w)
        grads = inner.gradient(y, list(xs))
        return sum(tf.reduce_sum(g * v) for g, v in zip(grads, vs))

    check_gradients(lambda *xs: grad_dot_v(*xs), arrays)


# --- values against NumPy ----------------------------------------------------------------

X = np.arange(24.0).reshape(2, 3, 4)


@pytest.mark.parametrize("fn,expected", [
    (lambda: tf.expand_dims(X, -2), np.expand_dims(X, -2)),
    (lambda: tf.squeeze(np.ones((1, 2, 1))), np.ones(2)),
    (lambda: tf.concat([X, X[:, :1]], axis=-2), np.concatenate([X, X[:, :1]], axis=-2)),
    (lambda: tf.stack([X, X + 1], axis=-1), np.stack([X, X + 1], axis=-1)),
    (lambda: tf.stack([X, X + 1], axis=1), np.stack([X, X + 1], axis=1)),
    (lambda: tf.tile(X, [1, 2, 3]), np.tile(X, (1, 2, 3))),
    (lambda: tf.gather(X, [[1, 0], [1, 1]], axis=1), np.take(X, [[1, 0], [1, 1]], axis=1)),
    (lambda: tf.gather(X, [[0, 3], [2, 2]], axis=2, batch_dims=1),
     np.stack([np.take(X[i], [[0, 3], [2, 2]][i], axis=1) for i in range(2)])),
    (lambda: tf.constant(X)[[1, 0], :, [3, 3]], X[[1, 0], :, [3, 3]]),
    (lambda: tf.constant(X)[X % 5 == 0], X[X % 5 == 0]),
    (lambda: tf.constant(X)[:, X[0] > 4], X[:, X[0] > 4]),
    (lambda: tf.constant(X)[..., [0, -1]], X[..., [0, -1]]),
    (lambda: tf.constant(X)[[]], X[[]]),
])
def test_values_match_numpy(fn, expected):
    out = fn()
    assert tuple(out.shape) == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)


def test_split_values_and_shapes():
    parts = tf.split(X, 2, axis=-1)
    assert len(parts) == 2
    for p, e in zip(parts, np.split(X, 2, axis=-1)):
        np.testing.assert_array_equal(p.numpy(), e)
    parts = tf.split(X, [1, -1], axis=1)
    assert [tuple(p.shape) for p in parts] == [(2, 1, 4), (2, 2, 4)]


@pytest.mark.parametrize("fn,expected,dtype", [
    (lambda: tf.zeros((2, 3)), np.zeros((2, 3)), tf.float32),
    (lambda: tf.zeros(3, dtype=tf.int64), np.zeros(3), tf.int64),
    (lambda: tf.ones([2]), np.ones(2), tf.float32),
    (lambda: tf.ones((), tf.float64), np.ones(()), tf.float64),
    (lambda: tf.zeros_like(np.ones((2, 2), np.int32)), np.zeros((2, 2)), tf.int32),
    (lambda: tf.ones_like(tf.constant([1.0, 2.0], tf.float64)), np.ones(2), tf.float64),
    (lambda: tf.ones_like([1, 2], dtype=tf.float32), np.ones(2), tf.float32),
    (lambda: tf.fill([2, 3], 9), np.full((2, 3), 9), tf.int32),
    (lambda: tf.fill((2,), 1.5), np.full(2, 1.5), tf.float32),
    (lambda: tf.fill(tf.constant([3]), np.float64(2.5)), np.full(3, 2.5), tf.float64),
    (lambda: tf.fill([2], tf.constant(4.0, tf.float64)), np.full(2, 4.0), tf.float64),
    (lambda: tf.range(5), np.arange(5), tf.int32),
    (lambda: tf.range(2, 11, 3), np.arange(2, 11, 3), tf.int32),
    (lambda: tf.range(5, 0, -2), np.arange(5, 0, -2), tf.int32),
    (lambda: tf.range(3, 1), np.arange(3, 1), tf.int32),
    (lambda: tf.range(0.0, 1.0, 0.25), np.arange(0.0, 1.0, 0.25), tf.float32),
    (lambda: tf.range(1, 2.5, 0.5), np.arange(1, 2.5, 0.5), tf.float32),
    (lambda: tf.range(4, dtype=tf.float64), np.arange(4.0), tf.float64),
    (lambda: tf.range(tf.constant(3)), np.arange(3), tf.int32),
    (lambda: tf.eye(3), np.eye(3), tf.float32),
    (lambda: tf.eye(2, 4, dtype=tf.float64), np.eye(2, 4), tf.float64),
    (lambda: tf.eye(2, batch_shape=[3]), np.broadcast_to(np.eye(2), (3, 2, 2)), tf.float32),
    (lambda: tf.eye(0), np.eye(0), tf.float32),
])
def test_creation_values_and_dtypes(fn, expected, dtype):
    out = fn()
    assert out.dtype == dtype
    assert tuple(out.shape) == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)


def test_creation_ops_are_not_recorded():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.zeros_like(x) + tf.ones_like(x) * x)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [1.0, 1.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        z = tf.zeros_like(x)
    assert tape.gradient(z, x) is None


# --- generated code and the cache --------------------------------------------------------

def _gradient(fn, x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(fn(x) ** 2)
    return tape.gradient(y, x)


def test_generated_code_prints_index_arrays_and_accumulates(fresh_cache):
    g = _gradient(lambda x: x[[2, 2, 0], 1:], np.arange(12.0).reshape(3, 4))
    source = tf.generated_source(g)
    assert "np.add.at(" in source and "np.array([2, 2, 0])" in source
    expected = np.zeros((3, 4))
    np.add.at(expected, ([2, 2, 0], slice(1, None)),
              2 * np.arange(12.0).reshape(3, 4)[[2, 2, 0], 1:])
    np.testing.assert_array_equal(g.numpy(), expected)


def test_masks_are_structure_and_gather_indices_are_values(fresh_cache):
    x = np.arange(4.0)
    a = _gradient(lambda t: t[np.array([True, False, True, False])], x)
    b = _gradient(lambda t: t[np.array([False, True, False, True])], x)
    np.testing.assert_array_equal(a.numpy(), [0, 0, 4, 0])
    np.testing.assert_array_equal(b.numpy(), [0, 2, 0, 6])
    assert tf.cache_info().misses == 2        # different masks: different graphs
    tf.clear_cache()
    c = _gradient(lambda t: tf.gather(t, [1, 1]), x)
    d = _gradient(lambda t: tf.gather(t, [3, 0]), x)
    np.testing.assert_array_equal(c.numpy(), [0, 4, 0, 0])
    np.testing.assert_array_equal(d.numpy(), [0, 0, 0, 6])
    info = tf.cache_info()
    assert (info.misses, info.hits) == (1, 1)   # indices are fed: one compiled gradient


def test_basic_index_keeps_plain_assignment(fresh_cache):
    source = tf.generated_source(_gradient(lambda x: x[1:, ::-1], np.ones((3, 2))))
    assert "np.add.at" not in source and "[1:, ::-1] = " in source


def test_batch_jacobian_through_gather_and_concat():
    x = tf.constant(np.random.default_rng(2).uniform(-1, 1, (3, 4)))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.concat([tf.gather(x, [0, 0, 3], axis=1), x[:, ::-1] ** 2], axis=1)
    fast = tape.batch_jacobian(y, x)
    slow = tape.batch_jacobian(y, x, experimental_use_pfor=False)
    np.testing.assert_allclose(fast.numpy(), slow.numpy(), rtol=1e-12)


# --- errors --------------------------------------------------------------------------------

def test_concat_shape_mismatch_names_op_and_shapes():
    with pytest.raises(ValueError, match=r"concat.*\(2, 3\).*\(3, 4\)"):
        tf.concat([np.ones((2, 3)), np.ones((3, 4))], axis=0)
    with pytest.raises(ValueError, match="concat"):
        tf.concat([np.ones((2, 3)), np.ones((2, 3, 1))], axis=1)


@pytest.mark.parametrize("fn,match", [
    (lambda: tf.concat([np.ones((2, 3))] * 2, axis=2), "concat: axis 2"),
    (lambda: tf.concat([np.ones((2, 3))], axis=-3), "concat: axis -3"),
    (lambda: tf.concat([], axis=0), "concat"),
    (lambda: tf.stack([np.ones(2), np.ones(3)]), r"stack.*\(2,\).*\(3,\)"),
    (lambda: tf.stack([np.ones(2)], axis=2), "stack: axis 2"),
    (lambda: tf.expand_dims(np.ones(2), 2), "expand_dims: axis 2"),
    (lambda: tf.squeeze(np.ones((1, 2)), axis=1), r"squeeze.*\(1, 2\)"),
    (lambda: tf.squeeze(np.ones((1, 2)), axis=3), "squeeze: axis 3"),
    (lambda: tf.split(np.ones(5), 2), r"split.*\(5,\)"),
    (lambda: tf.split(np.ones(5), [2, 2]), "split"),
    (lambda: tf.split(np.ones(5), 2, axis=1), "split: axis 1"),
    (lambda: tf.tile(np.ones((2, 3)), [2]), r"tile.*\(2, 3\)"),
    (lambda: tf.gather(np.ones((2, 3)), [0], axis=2), "gather"),
    (lambda: tf.gather(np.ones((2, 3)), [[0]], batch_dims=1, axis=1), "gather"),
    (lambda: tf.range(0, 3, 0), "range"),
    (lambda: tf.fill([2], [1.0, 2.0]), "fill"),
])
def test_bad_arguments_raise_value_error(fn, match):
    with pytest.raises(ValueError, match=match):
        fn()


@pytest.mark.parametrize("index", [5, [0, 3], np.array([[-4]]), (0, [0, 7]),
                                   np.ones(2, bool), np.ones((3, 3), bool)])
def test_out_of_range_index_raises_index_error_naming_shape(index):
    with pytest.raises(IndexError, match=r"getitem.*\(3,\)|getitem.*\(3, 4\)"):
        tf.constant(np.ones((3, 4)) if isinstance(index, tuple) else np.ones(3))[index]


def test_gather_out_of_range_and_bad_dtypes():
    with pytest.raises(IndexError, match=r"gather.*\(3, 2\)"):
        tf.gather(np.ones((3, 2)), [0, 3])
    with pytest.raises(TypeError, match="gather"):
        tf.gather(np.ones(3), np.array([0.0]))
    with pytest.raises(TypeError, match="getitem"):
        tf.constant(np.ones(3))[np.array([0.5])]
    with pytest.raises(TypeError, match="concat"):
        tf.concat([np.ones(2), np.ones(2, np.float32)], 0)


# --- hypothesis: random shapes, including 0-d, size-1 and empty dimensions -----------------

@st.composite
def shape_cases(draw):
    """An op, its input shapes, and a function of the inputs to differentiate."""
    shape = tuple(draw(st.lists(st.integers(0, 3), min_size=0, max_size=3)))
    rank = len(shape)
    op = draw(st.sampled_from(["reshape", "transpose", "concat", "stack", "tile",
                               "expand_dims", "squeeze"]))
    if op == "reshape":
        target = draw(st.sampled_from([(-1,), shape[::-1], shape + (1,), (1,) + shape]))
        return op, [shape], lambda x: tf.reshape(x, target)
    if op == "transpose":
        perm = draw(st.permutations(range(rank)))
        return op, [shape], lambda x: tf.transpose(x, perm)
    if op == "concat":
        shape = shape or (draw(st.integers(0, 2)),)
        axis = draw(st.integers(-len(shape), len(shape) - 1))
        other = list(shape)
        other[axis] = draw(st.integers(0, 3))
        return op, [shape, tuple(other)], lambda a, b: tf.concat([a, b * b], axis)
    if op == "stack":
        axis = draw(st.integers(-rank - 1, rank))
        return op, [shape, shape], lambda a, b: tf.stack([a * b, b], axis=axis)
    if op == "tile":
        multiples = draw(st.lists(st.integers(0, 2), min_size=rank, max_size=rank))
        return op, [shape], lambda x: tf.tile(x, multiples)
    if op == "expand_dims":
        axis = draw(st.integers(-rank - 1, rank))
        return op, [shape], lambda x: tf.expand_dims(x, axis)
    ones = draw(st.lists(st.booleans(), min_size=rank, max_size=rank))
    shape = tuple(1 if one else s for s, one in zip(shape, ones))
    axes = [i for i, s in enumerate(shape) if s == 1]
    axis = draw(st.sampled_from([None] + ([axes] if axes else [])))
    return op, [shape], lambda x: tf.squeeze(x, axis)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=shape_cases(), seed=st.integers(0, 2 ** 16))
def test_shape_op_gradients_property(case, seed):
    _, shapes, fn = case
    rng = np.random.default_rng(seed)
    check_gradients(fn, [rng.uniform(-2.0, 2.0, s) for s in shapes], seed=seed + 1)
