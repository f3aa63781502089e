"""Every differentiable op, over random shapes, against central finite differences.

One table row per op builds a random case (function and float64 inputs) from a
hypothesis draw: broadcasting, size-1 dimensions, 0-d and empty arrays included where
the op allows them. A test fails when a differentiable op has no row.
"""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tapec as tf
from helpers.fd import check_gradients
from tapec.ops import REGISTRY
from tapec.ops.registry import apply
from tapec.ops.reduce import PROD_OTHERS

SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)
NONEMPTY = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3)


def _values(data, shape, low=-1.5, high=1.5):
    seed = data.draw(st.integers(0, 2 ** 16), label="seed")
    return np.random.default_rng(seed).uniform(low, high, size=shape)


def unary(fn, low=-1.5, high=1.5, avoid=None):
    def build(data):
        x = _values(data, data.draw(SHAPES, label="shape"), low, high)
        if avoid is not None:                       # keep away from a kink
            x = np.where(np.abs(x - avoid) < 0.05, avoid + 0.5, x)
        return fn, [x]
    return build


def binary(fn, low=-1.5, high=1.5, second=None, offset=0.0):
    """`offset` keeps equal draws apart (maximum/minimum are not differentiable at ties)."""
    def build(data):
        shapes = data.draw(hnp.mutually_broadcastable_shapes(
            num_shapes=2, min_dims=0, max_dims=3, min_side=0, max_side=3), label="shapes")
        a = _values(data, shapes.input_shapes[0], low, high)
        b = _values(data, shapes.input_shapes[1], *(second or (low, high))) + offset
        return fn, [a, b]
    return build


def reduction(fn, nonempty=False):
    def build(data):
        shape = data.draw(NONEMPTY if nonempty else SHAPES, label="shape")
        axes = data.draw(st.lists(st.integers(0, max(len(shape) - 1, 0)), unique=True,
                                  max_size=len(shape)), label="axes") if shape else []
        axis = None if not axes else tuple(axes)
        keepdims = data.draw(st.booleans(), label="keepdims")
        return (lambda x: fn(x, axis=axis, keepdims=keepdims)), [_values(data, shape)]
    return build


def _prod_others(data):
    """The exclusive product (reduce_prod's derivative): its own gradient is the Hessian
    of the product times the cotangent."""
    shape = data.draw(NONEMPTY, label="shape")
    axes = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True, min_size=1,
                              max_size=len(shape)), label="axes") if shape else []
    return (lambda x: apply(PROD_OTHERS, x, axis=tuple(sorted(axes)))), \
        [_values(data, shape)]


def _broadcast_to(data):
    shape = data.draw(SHAPES, label="shape")
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2), label="lead")
    target = tuple(lead) + tuple(data.draw(st.sampled_from([s, 2]) if s == 1 else st.just(s))
                                 for s in shape)
    return (lambda x: tf.broadcast_to(x, target)), [_values(data, shape)]


def _reshape(data):
    shape = data.draw(SHAPES, label="shape")
    target = (-1,) if data.draw(st.booleans()) else tuple(reversed(shape))
    return (lambda x: tf.reshape(x, target)), [_values(data, shape)]


def _transpose(data):
    shape = data.draw(SHAPES, label="shape")
    perm = data.draw(st.permutations(range(len(shape))), label="perm")
    return (lambda x: tf.transpose(x, perm)), [_values(data, shape)]


def _tile(data):
    shape = data.draw(SHAPES, label="shape")
    multiples = data.draw(st.lists(st.integers(0, 2), min_size=len(shape),
                                   max_size=len(shape)), label="multiples")
    return (lambda x: tf.tile(x, multiples)), [_values(data, shape)]


def _concat(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3))
    axis = data.draw(st.integers(0, len(shape) - 1), label="axis")
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=2, max_size=3), label="sizes")
    arrays = [_values(data, shape[:axis] + (n,) + shape[axis + 1:]) for n in sizes]
    return (lambda *xs: tf.concat(list(xs), axis)), arrays


def _getitem(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    index = data.draw(hnp.basic_indices(shape, allow_newaxis=True), label="index")
    return (lambda x: x[index]), [_values(data, shape)]


def _gather(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3))
    axis = data.draw(st.integers(0, len(shape) - 1), label="axis")
    indices = data.draw(st.lists(st.integers(-shape[axis], shape[axis] - 1), max_size=4))
    indices = np.array(indices, dtype=np.int64)
    return (lambda x: tf.gather(x, indices, axis=axis)), [_values(data, shape)]


def _matmul(data):
    batch = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2,
                                                        min_side=0, max_side=2))
    n, k, m = (data.draw(st.integers(0, 3), label=d) for d in "nkm")
    a = _values(data, batch.input_shapes[0] + (n, k))
    b = _values(data, batch.input_shapes[1] + (k, m))
    return tf.matmul, [a, b]


EQUATIONS = ["ij,jk->ik", "ij->ji", "i,i->", "bij,bjk->bik", "ij->", "i,j->ij", "ij,j->i",
             "ijk->kj"]


def _einsum(data):
    equation = data.draw(st.sampled_from(EQUATIONS), label="equation")
    sizes = {c: data.draw(st.integers(0, 3), label=c) for c in "bijk"}
    operands = equation.split("->")[0].split(",")
    arrays = [_values(data, tuple(sizes[c] for c in op)) for op in operands]
    return (lambda *xs: tf.einsum(equation, *xs)), arrays


def _square_matrices(data):
    n = data.draw(st.integers(1, 3), label="n")
    batch = data.draw(hnp.array_shapes(min_dims=0, max_dims=1, min_side=1, max_side=2))
    return _values(data, batch + (n, n), -0.4, 0.4) + 2.0 * np.eye(n), batch, n


def _matrix(fn):
    def build(data):
        a, _, _ = _square_matrices(data)
        return fn, [a]
    return build


def _solve(data):
    a, batch, n = _square_matrices(data)
    rhs = _values(data, batch + (n, data.draw(st.integers(1, 2), label="k")))
    return tf.linalg.solve, [a, rhs]


def _diag(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=0, max_side=3))
    return tf.linalg.diag, [_values(data, shape)]


def _diag_part(data):
    n = data.draw(st.integers(0, 3), label="n")
    batch = data.draw(hnp.array_shapes(min_dims=0, max_dims=1, min_side=0, max_side=2))
    return tf.linalg.diag_part, [_values(data, batch + (n, n))]


def _cross_entropy(data):
    batch = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
    classes = data.draw(st.integers(1, 4), label="classes")
    labels = _values(data, batch + (classes,), 0.1, 1.0)
    labels = labels / labels.sum(axis=-1, keepdims=True)   # a distribution per example
    return (lambda l, z: tf.nn.softmax_cross_entropy_with_logits(l, z)), \
        [labels, _values(data, batch + (classes,))]


def _softmax(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3),
                      label="shape")
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    # A random weighting, so the gradient of the sum (zero: rows sum to 1) is not all
    # the test sees.
    weights = _values(data, shape)
    return (lambda x: tf.nn.softmax(x, axis=axis) * weights), [_values(data, shape, -3, 3)]


def _where(data):
    shapes = data.draw(hnp.mutually_broadcastable_shapes(
        num_shapes=3, min_dims=0, max_dims=3, min_side=0, max_side=3))
    condition = _values(data, shapes.input_shapes[0]) > 0
    x, y = (_values(data, s) for s in shapes.input_shapes[1:])
    return (lambda a, b: tf.where(condition, a, b)), [x, y]


def _cast(data):
    # float64 -> float32 -> float64: the gradient flows through both casts.
    shape = data.draw(SHAPES, label="shape")
    return (lambda x: tf.cast(tf.cast(x, tf.float32), tf.float64) * 0.0 + x * 2.0), \
        [_values(data, shape)]


def _diag_seed(data):
    from tapec.ops.seeds import diag_seed
    return diag_seed, [_values(data, data.draw(SHAPES, label="shape"))]


def _away_from_jumps(fn, data):
    """x mod y with 1 < |x / y| < 2 and random signs: away from the jumps of mod."""
    _, (a, b) = binary(fn, 1.2, 1.7, second=(0.9, 1.1))(data)
    signs = np.random.default_rng(a.size + 7 * b.size).choice([-1.0, 1.0], size=(2,))
    return fn, [a * signs[0], b * signs[1]]
def _cumulative(fn):
    """A cumulative op along a random axis; cumprod's inputs include exact zeros, where a
    gradient written as out / x would fail."""
    def build(data):
        shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4),
                          label="shape")
        axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
        reverse = data.draw(st.booleans(), label="reverse")
        x = _values(data, shape)
        x = np.where(np.abs(x) < 0.3, 0.0, x)
        return (lambda t: fn(t, axis=axis, reverse=reverse)), [x]
    return build


# --- decompositions, statistics and order statistics (group h16c) ------------------------

def _separated(data, rows, cols, batch):
    """Matrices Q1 diag(d) Q2^T with well separated d (1, 2, 3, ...): distinct eigen- or
    singular values, so the vectors' derivatives are well conditioned."""
    q1, _ = np.linalg.qr(_values(data, batch + (rows, rows)) + 3 * np.eye(rows))
    q2, _ = np.linalg.qr(_values(data, batch + (cols, cols)) + 3 * np.eye(cols))
    k = min(rows, cols)
    core = np.zeros((rows, cols))
    core[np.arange(k), np.arange(k)] = np.arange(1.0, k + 1)
    return q1 @ core @ np.swapaxes(q2, -1, -2)


def _decomposition(fn, square=True, spd=False, real_spectrum=False):
    def build(data):
        batch = data.draw(hnp.array_shapes(min_dims=0, max_dims=1, min_side=1, max_side=2),
                          label="batch")
        rows = data.draw(st.integers(1, 3), label="rows")
        cols = rows if square else data.draw(st.integers(1, 3), label="cols")
        if real_spectrum:
            v = _values(data, batch + (rows, rows), -0.4, 0.4) + np.eye(rows)
            a = v @ (np.arange(1.0, rows + 1)[:, None] * np.linalg.inv(v))
        else:
            a = _separated(data, rows, cols, batch)
        if spd:
            a = a @ np.swapaxes(a, -1, -2) + np.eye(rows)
        return fn, [a + 0.01 * _values(data, a.shape)]       # not exactly symmetric
    return build


def _conv_family(name):
    """A random convolution geometry (1 or 2 spatial axes, windows, strides, dilations,
    paddings, groups) and the op `name` on random operands of its shapes."""
    from tapec.ops.conv import output_size

    def build(data):
        draw = lambda label, low, high: data.draw(st.integers(low, high), label=label)  # noqa: E731
        spatial, groups = draw("spatial", 1, 2), draw("groups", 1, 2)
        window = tuple(draw("window", 1, 3) for _ in range(spatial))
        strides = tuple(draw("stride", 1, 2) for _ in range(spatial))
        dilations = tuple(draw("dilation", 1, 2) for _ in range(spatial))
        pads = tuple((draw("before", 0, 2), draw("after", 0, 2)) for _ in range(spatial))
        size = tuple(max(draw("size", 1, 4), (k - 1) * d + 1 - a - b)
                     for k, d, (a, b) in zip(window, dilations, pads))
        cin, fout = groups * draw("channels", 1, 2), groups * draw("filters", 1, 2)
        outs = tuple(map(output_size, size, window, strides, dilations, pads))
        n = draw("batch", 1, 2)
        x, w, g = (_values(data, shape) for shape in
                   [(n, *size, cin), (*window, cin // groups, fout), (n, *outs, fout)])
        geometry = {"strides": strides, "dilations": dilations, "pads": pads,
                    "groups": groups}
        op = REGISTRY[name]
        if name == "conv":
            return (lambda a, b: apply(op, a, b, **geometry)), [x, w]
        if name == "conv_backprop_input":
            return (lambda a, b: apply(op, a, b, input_size=size, **geometry)), [g, w]
        return (lambda a, b: apply(op, a, b, window=window, **geometry)), [x, g]
    return build


def _band_part(data):
    shape = data.draw(hnp.array_shapes(min_dims=2, max_dims=3, min_side=0, max_side=3))
    lower, upper = (data.draw(st.integers(-1, 2), label=w) for w in ("lower", "upper"))
    return (lambda x: tf.linalg.band_part(x, lower, upper)), [_values(data, shape)]


BUILDERS = {
    "diag_seed": _diag_seed,
    "abs": unary(tf.abs, avoid=0.0), "acos": unary(tf.acos, -0.9, 0.9),
    "asin": unary(tf.asin, -0.9, 0.9), "atan": unary(tf.atan), "cos": unary(tf.cos),
    "cosh": unary(tf.cosh), "erf": unary(tf.math.erf), "exp": unary(tf.exp),
    "expm1": unary(tf.math.expm1), "log": unary(tf.math.log, 0.2, 2.0),
    "log1p": unary(tf.math.log1p, -0.5, 2.0), "negative": unary(tf.negative),
    "relu": unary(tf.nn.relu, avoid=0.0), "sigmoid": unary(tf.sigmoid),
    "sign": unary(tf.sign, avoid=0.0), "sin": unary(tf.sin), "sinh": unary(tf.sinh),
    "softplus": unary(tf.nn.softplus), "sqrt": unary(tf.sqrt, 0.2, 2.0),
    "square": unary(tf.square), "tan": unary(tf.tan, -1.2, 1.2), "tanh": unary(tf.tanh),
    "identity": unary(tf.identity), "cast": _cast,
    "add": binary(tf.add), "subtract": binary(tf.subtract), "multiply": binary(tf.multiply),
    "divide": binary(tf.divide, second=(0.5, 2.0)), "pow": binary(tf.pow, 0.5, 2.0),
    "maximum": binary(tf.maximum, offset=0.123), "minimum": binary(tf.minimum, offset=0.123),
    "where": _where,
    "reduce_sum": reduction(tf.reduce_sum), "reduce_prod": reduction(tf.reduce_prod),
    "reduce_logsumexp": reduction(tf.reduce_logsumexp), "prod_others": _prod_others,
    "reduce_max": reduction(tf.reduce_max, nonempty=True),
    "reduce_min": reduction(tf.reduce_min, nonempty=True),
    "broadcast_to": _broadcast_to, "reshape": _reshape, "transpose": _transpose,
    "tile": _tile, "concat": _concat, "getitem": _getitem, "gather": _gather,
    "matmul": _matmul, "einsum": _einsum,
    **{name: _conv_family(name) for name in ("conv", "conv_backprop_input",
                                             "conv_backprop_filter")},
    "matrix_inverse": _matrix(tf.linalg.inv), "matrix_determinant": _matrix(tf.linalg.det),
    "log_abs_determinant": _matrix(lambda a: tf.linalg.slogdet(a)[1]),
    "matrix_solve": _solve, "matrix_diag": _diag, "matrix_diag_part": _diag_part,
    "softmax_cross_entropy_with_logits": _cross_entropy, "softmax": _softmax,
    # elementwise math (inverse hyperbolics, bases 2 and 10, angles, remainders, pairs)
    **{
        "asinh": unary(tf.asinh), "acosh": unary(tf.acosh, 1.1, 3.0),
        "atanh": unary(tf.atanh, -0.9, 0.9), "log2": unary(tf.math.log2, 0.2, 2.0),
        "log10": unary(tf.math.log10, 0.2, 2.0), "exp2": unary(tf.math.exp2),
        "deg2rad": unary(tf.math.deg2rad), "rad2deg": unary(tf.math.rad2deg),
        "sinc": unary(tf.math.sinc, -2.5, 2.5),
        "floormod": lambda data: _away_from_jumps(tf.math.floormod, data),
        "truncatemod": lambda data: _away_from_jumps(tf.truncatemod, data),
        "atan2": binary(tf.atan2, 0.3, 1.5), "hypot": binary(tf.math.hypot, 0.3, 1.5),
        "logaddexp": binary(tf.math.logaddexp, -3.0, 3.0),
        "logaddexp2": binary(tf.math.logaddexp2, -3.0, 3.0),
    },
    # shape and structure (cumulative sums and products)
    "cumsum": _cumulative(tf.math.cumsum), "cumprod": _cumulative(tf.math.cumprod),
    # decompositions, statistics and order statistics (group h16c)
    "cholesky": _decomposition(tf.linalg.cholesky, spd=True),
    "eigh_values": _decomposition(tf.linalg.eigvalsh),
    "eigh_vectors": _decomposition(lambda x: tf.linalg.eigh(x)[1] ** 2),
    "eig": _decomposition(lambda x: np.linalg.eig(x)[1] ** 2 + np.linalg.eig(x)[0][..., None],
                          real_spectrum=True),
    "svd_values": _decomposition(lambda x: tf.linalg.svd(x, compute_uv=False), square=False),
    "svd_u": _decomposition(lambda x: tf.linalg.svd(x)[1] ** 2, square=False),
    "svd_v": _decomposition(lambda x: tf.linalg.svd(x)[2] ** 2, square=False),
    "pinv": _decomposition(tf.linalg.pinv, square=False),
    "matrix_band_part": _band_part,
}

# The reverse pass's own plumbing (exercised by every broadcasting, indexing and gather
# case above), variable reads, stop_gradient and custom_gradient (a user's own rule).
EXEMPT = {"sum_to", "scatter", "scatter_add", "read_variable", "stop_gradient",
          "custom_gradient"}


def test_every_differentiable_op_has_a_property_test():
    differentiable = {n for n, op in REGISTRY.items() if op.vjp is not None} - EXEMPT
    assert differentiable <= set(BUILDERS), sorted(differentiable - set(BUILDERS))


@pytest.mark.parametrize("name", sorted(BUILDERS))
@settings(max_examples=int(os.environ.get("TAPEC_PROPERTY_EXAMPLES", 8)), deadline=None,
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_gradient_matches_finite_differences_over_random_shapes(name, data):
    fn, arrays = BUILDERS[name](data)
    with np.errstate(invalid="ignore", divide="ignore"):
        check_gradients(fn, arrays, rtol=1e-5, atol=1e-7)
