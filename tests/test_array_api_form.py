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
    return [np.asarray(r) for r in tf.nest.flatten(result)]


def _assert_close(expected, got):
    expected, got = _flat(expected), _flat(got)
    assert len(expected) == len(got)
    for e, g in zip(expected, got):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(g, e, **TOLERANCE)


def _run_strict(trace, arrays):
    with xps.ArrayAPIStrictFlags(api_version="2023.12"):
        result = trace.run_in(xps, _strict(arrays))
        return [np.asarray(r) for r in tf.nest.flatten(result)]


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
    w, x = _inputs()
    _, trace = _trace(tf.function(lambda w: tf.math.erf(w)), w)
    with pytest.raises(array_api.NoArrayApiForm, match="op 'erf' has no array-API form"):
        trace.entry.array_api()


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
NO_FORM = {"erf", "guard", "argpartition", "eig", "delta_einsum", "random",
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


@pytest.mark.parametrize("name", ["erf", "argpartition", "eig"])
def test_ops_listed_without_a_form_raise_naming_the_op(name):
    from tapec.ir.nodes import Node
    op = REGISTRY[name]
    attrs = {"argpartition": {"kth": (1,), "axis": 0, "output_type": "<i8"}}.get(name, {})
    node = Node(op, (), attrs, (), np.dtype(np.float64))
    with pytest.raises(array_api.NoArrayApiForm, match=f"op {name!r} has no array-API form"):
        if op.array_api_lines is not None:
            array_api.ARRAY_API.lines(node, "v", ["a0"])
        array_api.ARRAY_API.expression(node, ["a0"])
