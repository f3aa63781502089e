"""The array-API form of generated code (tapec/codegen/array_api.py).

A program traced by `tapec.function` (and its derivatives) is written a second time
against a namespace `xp`; these tests run that form under array-api-strict pinned to
the 2023.12 standard (which refuses anything outside it), under JAX (also inside
`jax.jit`), PyTorch and Dask (through array-api-compat), and compare every output with
the NumPy form's: values and gradients, float64, to 1e-12.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import tapec as tf
import tapec.numpy as _TNP
from fuzz_programs import programs
from tapec.codegen import array_api, standard
from tapec.ops.registry import REGISTRY

xps = pytest.importorskip("array_api_strict")

TOLERANCE = dict(rtol=1e-12, atol=1e-12)


def _trace(function, *args):
    """Call `function` (NumPy path) and return (its result, the trace that ran)."""
    result = function(*args)
    (programs_,) = function._traces.values()
    return result, programs_[-1].compiled()


def _strict(arrays):
    return [xps.asarray(a) for a in arrays]


def _flat(result):
    return [None if r is None else np.asarray(r) for r in tf.nest.flatten(result)]


def _assert_close(expected, got):
    expected, got = _flat(expected), _flat(got)
    assert len(expected) == len(got)
    for e, g in zip(expected, got):
        if e is None or g is None:
            assert e is None and g is None
            continue
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(g, e, **TOLERANCE)


def _run_strict(trace, arrays):
    with xps.ArrayAPIStrictFlags(api_version="2023.12"):
        result = trace.run_in(xps, _strict(arrays))
        return _flat(result)


def _loss(w, x):
    h = tf.tanh(tf.matmul(x, w))
    return tf.reduce_mean(h ** 2) + tf.reduce_sum(tf.exp(w) * 0.5) - \
        tf.reduce_sum(tf.where(x > 0.5, tf.math.log(1.0 + x * x), -x))


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(3, 2)), rng.normal(size=(4, 3))


def test_value_and_gradient_match_numpy_under_array_api_strict():
    w, x = _inputs()
    expected, trace = _trace(tf.value_and_grad(_loss, argnums=(0, 1)), w, x)
    _assert_close(expected, _run_strict(trace, [w, x]))
    assert "np." not in trace.entry.array_api().source


def test_float32_programs_stay_float32():
    w, x = (a.astype(np.float32) for a in _inputs())
    expected, trace = _trace(tf.value_and_grad(_loss, argnums=(0, 1)), w, x)
    with xps.ArrayAPIStrictFlags(api_version="2023.12"):
        got = [np.asarray(r) for r in tf.nest.flatten(trace.run_in(xps, _strict([w, x])))]
    for e, g in zip(_flat(expected), got):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_python_numbers_become_float64_arrays_in_the_namespace():
    torch, xp = _torch_namespace()
    w, x = _inputs()
    _, trace = _trace(tf.grad(_loss), w, x)
    form = trace.entry.array_api()
    assert form.arg_keys[-1][0] == "captured"        # the fed 0.5 of `tf.exp(w) * 0.5`
    got = form(xp, torch.asarray(w), torch.asarray(x), 0.5)
    assert got[0].dtype == torch.float64


def test_an_entry_without_its_ir_says_so():
    from tapec.codegen.compiled import Compiled
    from tapec.codegen.emit import CodegenError
    entry = Compiled(lambda: (), "def gradient():\n    return ()\n", (), "from disk")
    with pytest.raises(CodegenError, match="no IR to write in the array-API form"):
        entry.array_api()


def test_arguments_named_like_the_forms_own_names_do_not_shadow_them():
    def f(xp, device, tapec_xp_einsum):
        return tf.reduce_sum(tf.einsum("ij,jk->ik", xp, device) * tapec_xp_einsum)
    rng = np.random.default_rng(9)
    arrays = [rng.normal(size=(2, 3)), rng.normal(size=(3, 4)), rng.normal(size=(2, 4))]
    _forms_agree(f, arrays)


def test_the_form_is_emitted_once_per_program():
    w, x = _inputs()
    _, trace = _trace(tf.grad(_loss), w, x)
    assert trace.entry.array_api() is trace.entry.array_api()


def test_jax_and_jax_jit():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    w, x = _inputs(1)
    expected, trace = _trace(tf.value_and_grad(_loss, argnums=(0, 1)), w, x)
    _assert_close(expected, trace.run_in(jnp, [jnp.asarray(w), jnp.asarray(x)]))
    jitted = jax.jit(lambda a, b: trace.run_in(jnp, [a, b]))
    _assert_close(expected, jitted(jnp.asarray(w), jnp.asarray(x)))


def test_torch_through_array_api_compat():
    torch = pytest.importorskip("torch")
    compat = pytest.importorskip("array_api_compat")
    w, x = _inputs(2)
    expected, trace = _trace(tf.value_and_grad(_loss, argnums=(0, 1)), w, x)
    got = trace.run_in(compat.array_namespace(torch.zeros(1)),
                       [torch.asarray(w), torch.asarray(x)])
    _assert_close(expected, [t.numpy() for t in tf.nest.flatten(got)])


def test_dask_stays_lazy():
    dask_array = pytest.importorskip("dask.array")
    compat = pytest.importorskip("array_api_compat")
    w, x = _inputs(3)
    expected, trace = _trace(tf.grad(_loss), w, x)
    xp = compat.array_namespace(dask_array.ones(1))
    got = trace.run_in(xp, [dask_array.from_array(w), dask_array.from_array(x, chunks=2)])
    assert isinstance(got, dask_array.Array)        # a graph, computed only here
    np.testing.assert_allclose(got.compute(), np.asarray(expected), **TOLERANCE)


def test_an_op_without_a_form_is_a_clear_error():
    @tf.function
    def branchy(w):                 # a Python branch on a value: a guard, NumPy only
        return w * 2.0 if tf.reduce_sum(w) > 0 else -w
    w, _ = _inputs()
    _, trace = _trace(branchy, w)
    with pytest.raises(array_api.NoArrayApiForm, match="op 'guard' has no array-API form"):
        trace.entry.array_api()


def test_erf_helper_matches_math_erf():
    import math
    x = np.concatenate([np.linspace(-7, 7, 2001), [0.0, -0.0, 1e-300, 6.0, -6.0]])
    from tapec.codegen.xp_helpers import tapec_xp_erf
    expected = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(tapec_xp_erf(np, x), expected, rtol=1e-14, atol=1e-300)
    assert np.isnan(tapec_xp_erf(np, np.array([np.nan])))[0]


@pytest.mark.parametrize("text, problem", [
    ("xp.concatenate((a0, a1), axis=0)", "xp.concatenate is not in the standard"),
    ("xp.max(a0, axis=(0,), initial=-xp.inf)", "keyword initial="),
    ("np.exp(a0)", "it calls np.exp"),
    ("a0.reshape((2, 3))", ".reshape is not an attribute"),
    ("xp.linalg.eig(a0)", "xp.linalg.eig is not in the standard"),
])
def test_the_standard_check_names_what_is_outside(text, problem):
    assert problem in standard.check(text, ("a0", "a1"))


def test_standard_templates_pass_the_check():
    assert standard.check("xp.sum(xp.permute_dims(a0, (1, 0)), axis=(0,), keepdims=True)",
                          ("a0",)) is None


# --- every op of the gradient test table, and random programs ---------------------------

def _forms_agree(f, arrays):
    """Run value_and_grad of `f` in NumPy and under array-api-strict and compare; a
    program with an op listed in NO_FORM must raise NoArrayApiForm naming it."""
    function = tf.value_and_grad(f, argnums=tuple(range(len(arrays))))
    expected, trace = _trace(function, *arrays)
    ops = {n.op.name for n in _nodes(trace.entry.ir)}
    try:
        got = _run_strict(trace, arrays)
    except array_api.NoArrayApiForm as error:
        missing = {name for name in ops if f"op {name!r} has no array-API form" in str(error)}
        assert missing <= NO_FORM, str(error)
        return
    _assert_close(expected, got)


def _nodes(ir):
    from tapec.ir.nodes import topological_order
    return topological_order([o for o in ir.outputs if o is not None], leaves=ir.feeds)


# Ops whose programs raise NoArrayApiForm, by design (docs/array_api.md).
NO_FORM = {"guard", "argpartition", "eig", "random",
           "custom_gradient_call"}


def _op_cases():
    from test_op_gradients import CASES
    return CASES


@pytest.mark.parametrize("case", _op_cases(), ids=lambda c: c.name)
def test_every_op_case_matches_numpy(case):
    from test_op_gradients import _inputs as case_inputs
    arrays = case_inputs(case)
    weights = np.random.default_rng(5).normal(size=np.shape(case.fn(*arrays)))

    def f(*xs):
        return tf.reduce_sum(case.fn(*xs) * weights)
    _forms_agree(f, arrays)


def _spd(a):
    """A symmetric positive definite matrix from `a` (for cholesky, eigh)."""
    return tf.matmul(a, a, transpose_b=True) + 3.0 * tf.eye(a.shape[-1], dtype=tf.float64)


# Programs for the ops the gradient table leaves out: (name, f, input shapes).
EXTRA = [
    ("erf", lambda x: tf.math.erf(x) * x, ((2, 3),)),
    ("argmax-argmin", lambda x: x * tf.cast(tf.argmax(x, axis=1)[:, None] +
                                          tf.argmin(x, axis=1)[:, None], tf.float64), ((2, 3),)),
    ("argsort-gather", lambda x: tf.gather(x, tf.argsort(x[0], direction="DESCENDING"),
                                           axis=1), ((2, 3),)),
    ("gather-2d-indices", lambda x: tf.gather(x, np.array([[0, 2], [1, 1]]), axis=1), ((2, 3),)),
    ("getitem-array", lambda x: x[np.array([1, 0, 1])] * 2.0, ((2, 3),)),
    ("getitem-mask", lambda x: x[np.array([[True, False, True], [False, True, True]])],
     ((2, 3),)),
    ("getitem-step", lambda x: x[:, ::2] + x[1, ::-1][:2, None], ((2, 3),)),
    ("getitem-box", lambda x: x[1:, 1:3] * x[0, None, 0:2], ((2, 3),)),
    ("cumsum-cumprod", lambda x: tf.math.cumsum(x, axis=1, reverse=True) *
     tf.math.cumprod(x, axis=0), ((2, 3),)),
    ("reduce_prod", lambda x: tf.reduce_prod(x, axis=1), ((2, 3),)),
    ("reduce_max-min", lambda x: tf.reduce_max(x, axis=0) - tf.reduce_min(x, axis=1)[0],
     ((2, 3),)),
    ("logsumexp", lambda x: tf.reduce_logsumexp(x, axis=1), ((2, 3),)),
    ("softmax-xent", lambda x, y: tf.nn.softmax(x) + tf.nn.softmax_cross_entropy_with_logits(
        tf.nn.softmax(y), x)[:, None], ((2, 3), (2, 3))),
    ("concat-tile", lambda x: tf.concat([tf.tile(x, (1, 2)), x], axis=1), ((2, 3),)),
    ("einsum", lambda x, y: tf.einsum("ij,kj->ik", x, y) + tf.einsum("ii->i", x[:, :2])[0],
     ((2, 3), (4, 3))),
    ("cholesky-solve-inv", lambda a, b: tf.linalg.cholesky(_spd(a)) @ tf.linalg.solve(
        _spd(a), b) + tf.linalg.inv(_spd(a)), ((3, 3), (3, 3))),
    ("det-slogdet", lambda a: tf.linalg.det(_spd(a)) + tf.linalg.slogdet(_spd(a))[1],
     ((3, 3),)),
    ("eigh", lambda a: tf.linalg.eigvalsh(_spd(a)), ((3, 3),)),
    ("svd-pinv", lambda a: tf.linalg.svd(a, compute_uv=False)[:, None] * tf.linalg.pinv(a)[:2],
     ((2, 3),)),
    ("diag-band-trace", lambda a: tf.linalg.band_part(a, 1, 0) + tf.linalg.diag(
        tf.linalg.diag_part(a)) * tf.linalg.trace(a), ((3, 3),)),
    ("math-extras", lambda x, y: tf.math.atan2(x, y + 3.0) + tf.math.floormod(x, y + 3.0) +
     tf.math.truncatemod(x, y + 3.0) + tf.math.logaddexp(x, y) + _TNP.sinc(x)
     + tf.math.log1p(tf.abs(y)) + tf.math.expm1(x) + tf.sigmoid(x) + tf.nn.softplus(y) +
     tf.nn.relu(x) + tf.math.hypot(x, y) + tf.math.asinh(x) + tf.math.atanh(x / 2.0) +
     tf.math.exp2(x) + tf.math.log2(y * y + 1.0) + tf.math.log10(x * x + 1.0) +
     _TNP.deg2rad(x) + _TNP.rad2deg(y) +
     tf.math.logaddexp2(x, y) + tf.math.ceil(x) + tf.math.floor(y) + tf.math.round(x) +
     tf.math.sign(x) + tf.math.tan(x / 2.0) + tf.math.asin(x / 2.0) + tf.math.acos(y / 2.0) +
     tf.math.atan(x) + tf.math.sinh(x) + tf.math.cosh(y) + tf.math.acosh(x * x + 1.5),
     ((2, 3), (2, 3))),
    ("comparisons", lambda x, y: tf.where(tf.logical_or(tf.logical_not(x < y), tf.logical_and(
        x >= 0.5, tf.not_equal(x, y))), x * y, tf.maximum(x, y) - tf.minimum(x, y)) +
     tf.cast(tf.less_equal(x, 0.25), tf.float64), ((2, 3), (2, 3))),
    ("fills", lambda x: x * tf.ones_like(x) + tf.range(3, dtype=tf.float64) +
     tf.eye(2, 3, dtype=tf.float64) + tf.cast(tf.shape(x)[0], tf.float64), ((2, 3),)),
]


@pytest.mark.parametrize("name, f, shapes", EXTRA, ids=[e[0] for e in EXTRA])
def test_ops_beyond_the_gradient_table_match_numpy(name, f, shapes):
    rng = np.random.default_rng(7)
    arrays = [rng.uniform(-1.0, 1.0, size=shape) for shape in shapes]
    weights = rng.normal(size=np.shape(f(*arrays)))
    _forms_agree(lambda *xs: tf.reduce_sum(f(*xs) * weights), arrays)


def test_large_kernels_with_sines_from_tangents_match_numpy():
    """A large float64 region gets sin and cos from tangents in the NumPy form
    (simplify/fuse/trig.py); the array-API form computes them directly."""
    x = np.random.default_rng(8).normal(size=3000)
    f = tf.grad(lambda x: tf.reduce_sum(tf.sin(x) * tf.cos(x) ** 2 + tf.sin(x)))
    for _ in range(3):              # the third call compiles the fused program
        expected = f(x)
    (programs_,) = f._traces.values()
    trace = programs_[-1].compiled()
    _assert_close(expected, _run_strict(trace, [x]))


def test_an_index_too_large_to_write_out_is_a_clear_error(monkeypatch):
    from tapec.ops import indexing
    monkeypatch.setattr(indexing, "FLAT_LIMIT", 2)
    x = np.arange(6.0).reshape(2, 3)
    _, trace = _trace(tf.grad(lambda x: tf.reduce_sum(x[np.array([1, 0, 1])])), x)
    with pytest.raises(array_api.NoArrayApiForm, match="op 'scatter' has no array-API form"):
        trace.entry.array_api()


def test_negative_gather_indices_count_from_the_end():
    # regression: the gradient's one-hot scatter never matched -1, and gave zeros
    x = np.random.default_rng(10).normal(size=(3, 2))
    _forms_agree(lambda x: tf.reduce_sum(tf.gather(x * x, np.array([-1, 0, -3])) * x[0]), [x])


def test_a_gather_out_of_range_is_nan_where_numpy_raises():
    x = np.arange(3.0)
    _, trace = _trace(tf.function(lambda x, i: tf.gather(x, i)), x, np.array([0, 2]))
    with xps.ArrayAPIStrictFlags(api_version="2023.12"):
        got = trace.run_in(xps, [xps.asarray(x), xps.asarray(np.array([4, -1]))])
    np.testing.assert_array_equal(np.asarray(got), [np.nan, 2.0])


def test_jacobian_and_hessian_match_numpy():
    w, x = _inputs(4)
    for function in (tf.jacobian(lambda w: tf.tanh(tf.matmul(x, w))),
                     tf.jacobian(lambda w: tf.matmul(x, w)),        # Kronecker structure
                     tf.jacobian(lambda w: tf.sin(w) * 2.0),        # a diagonal
                     tf.hessian(lambda w: tf.reduce_sum(tf.tanh(tf.matmul(x, w)) ** 2)),
                     tf.hessian(lambda w: tf.reduce_sum(tf.exp(w) / (1.0 + w * w)))):
        expected, trace = _trace(function, w)
        _assert_close(expected, _run_strict(trace, [w]))


# The same programs in JAX (inside jax.jit) and PyTorch: one compile each, a selection.
ACROSS = ["erf", "argsort-gather", "getitem-mask", "getitem-box", "cumsum-cumprod",
          "softmax-xent", "einsum", "cholesky-solve-inv", "math-extras", "comparisons", "fills"]


def _jax_namespace():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax, jax.numpy


def _torch_namespace():
    torch = pytest.importorskip("torch")
    compat = pytest.importorskip("array_api_compat")
    return torch, compat.array_namespace(torch.zeros(1))


def _across(run):
    """`run(trace, arrays)` for each ACROSS program and for a jacobian, compared with NumPy."""
    rng = np.random.default_rng(11)
    table = {name: (f, shapes) for name, f, shapes in EXTRA}
    for name in ACROSS:
        f, shapes = table[name]
        arrays = [rng.uniform(-1.0, 1.0, size=shape) for shape in shapes]
        weights = rng.normal(size=np.shape(f(*arrays)))
        function = tf.value_and_grad(lambda *xs: tf.reduce_sum(f(*xs) * weights),
                                     argnums=tuple(range(len(arrays))))
        expected, trace = _trace(function, *arrays)
        _assert_close(expected, run(trace, arrays))
    w, x = _inputs(4)
    expected, trace = _trace(tf.jacobian(lambda w: tf.tanh(tf.matmul(x, w))), w)
    _assert_close(expected, run(trace, [w]))


def test_jax_jit_runs_the_programs():
    jax, jnp = _jax_namespace()

    def run(trace, arrays):
        jitted = jax.jit(lambda *xs: trace.run_in(jnp, list(xs)))
        return [None if r is None else np.asarray(r)
                for r in tf.nest.flatten(jitted(*map(jnp.asarray, arrays)))]
    _across(run)


def test_torch_runs_the_programs():
    torch, xp = _torch_namespace()

    def run(trace, arrays):
        result = trace.run_in(xp, [torch.asarray(a) for a in arrays])
        return [None if r is None else r.numpy() for r in tf.nest.flatten(result)]
    _across(run)


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(programs())
def test_random_programs_match_numpy(program):
    arrays = program.inputs(0)
    _forms_agree(program.f, arrays)


# Ops printed from their NumPy template (standard under `xp`): the attributes and the
# argument count of a node to check it on.
FROM_NUMPY = {"reshape": ({"shape": (2, 3)}, 1), "broadcast_to": ({"shape": (2, 3)}, 1),
              "tile": ({"multiples": (2, 1)}, 1), "svd_u": ({"full_matrices": False}, 1),
              "matmul": ({}, 2), "matrix_solve": ({}, 2),
              "custom_gradient_result": ({"index": 0}, 1)}
FROM_NUMPY.update({name: ({}, 1) for name in (
    "read_variable", "identity", "stop_gradient", "matrix_inverse", "matrix_determinant",
    "log_abs_determinant", "determinant_sign", "cholesky")})


def test_every_registered_op_has_a_form_or_is_listed_without_one():
    """Each op has an array-API facet (exercised by the cases above), or prints from a
    NumPy template that `standard.check` accepts under `xp`, or is listed in NO_FORM,
    whose programs raise NoArrayApiForm (tested above for erf)."""
    from tapec.ir.nodes import Node
    for name, op in REGISTRY.items():
        if name in NO_FORM or name in ("placeholder", "custom_gradient") or \
                op.array_api is not None or op.array_api_lines is not None:
            continue
        if op.arity is not None:            # elementwise: the template over placeholders
            attrs, count = {}, op.arity
        else:
            assert name in FROM_NUMPY, f"op {name!r}: no array-API form, and not listed"
            attrs, count = FROM_NUMPY[name]
        arguments = tuple(f"a{k}" for k in range(count))
        node = Node(op, (), attrs, (), np.dtype(np.float64))
        text = array_api.ARRAY_API.expression(node, list(arguments))
        assert standard.check(text, arguments) is None, (name, text)


@pytest.mark.parametrize("name", ["argpartition", "eig"])
def test_ops_listed_without_a_form_raise_naming_the_op(name):
    from tapec.ir.nodes import Node
    op = REGISTRY[name]
    attrs = {"argpartition": {"kth": (1,), "axis": 0, "output_type": "<i8"}}.get(name, {})
    node = Node(op, (), attrs, (), np.dtype(np.float64))
    with pytest.raises(array_api.NoArrayApiForm, match=f"op {name!r} has no array-API form"):
        if op.array_api_lines is not None:
            array_api.ARRAY_API.lines(node, "v", ["a0"])
        array_api.ARRAY_API.expression(node, ["a0"])
