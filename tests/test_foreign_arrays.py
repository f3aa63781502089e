"""Arrays of other libraries as arguments of tapec.function, grad, value_and_grad,
jacobian and hessian (tracing/foreign.py, docs/scale.md): their program runs in their
namespace and returns their arrays, with NumPy's values."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tapec
import tapec as tf

pytest.importorskip("array_api_compat")

RNG = np.random.default_rng(19)
X = RNG.normal(size=(40, 5))
Y = (RNG.random(40) > 0.5).astype(np.float64)
W = RNG.normal(size=5) * 0.3


def logistic_loss(w, x, y):
    z = tf.linalg.matvec(x, w)
    return tf.reduce_mean(tf.nn.softplus(z) - y * z)


def features(w, x):
    return tf.tanh(tf.linalg.matvec(x, w)) * 2.0 + tf.reduce_sum(w * w)


# Each form, with the arguments it takes and the argnums it differentiates.
FORMS = {
    "function": (lambda: tapec.function(logistic_loss), (W, X, Y)),
    "grad": (lambda: tapec.grad(logistic_loss), (W, X, Y)),
    "value_and_grad": (lambda: tapec.value_and_grad(logistic_loss, argnums=(0, 1)),
                       (W, X, Y)),
    "jacobian": (lambda: tapec.jacobian(features), (W, X[:6])),
    "hessian": (lambda: tapec.hessian(logistic_loss), (W, X, Y)),
}


def _numpy(value):
    return value.numpy() if isinstance(value, tf.Tensor) else np.asarray(value)


def _check_against_numpy(form, convert, to_numpy, result_type, rtol=1e-12):
    make, args = FORMS[form]
    expected = tapec.nest.flatten(make()(*args))
    got = make()(*[convert(a) for a in args])
    flat = tapec.nest.flatten(got)
    assert len(flat) == len(expected)
    for g, e in zip(flat, expected):
        assert isinstance(g, result_type), type(g)
        np.testing.assert_allclose(to_numpy(g), _numpy(e), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("form", FORMS)
def test_array_api_strict_arguments_match_numpy(form):
    xs = pytest.importorskip("array_api_strict")
    _check_against_numpy(form, xs.asarray, np.from_dlpack, type(xs.asarray(1.0)))


@pytest.mark.parametrize("form", FORMS)
def test_torch_arguments_match_numpy(form):
    torch = pytest.importorskip("torch")
    _check_against_numpy(form, torch.asarray, lambda t: t.numpy(), torch.Tensor)


@pytest.fixture(scope="module")
def jax_x64():
    """JAX in float64, as NumPy (for the module: each switch empties JAX's caches)."""
    jax = pytest.importorskip("jax")
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield jax
    jax.config.update("jax_enable_x64", before)


# Eager JAX compiles each op at its first use: two forms here, every form under jax.jit.
@pytest.mark.parametrize("form", ["value_and_grad", "hessian"])
def test_jax_arguments_match_numpy(form, jax_x64):
    jnp = jax_x64.numpy
    _check_against_numpy(form, jnp.asarray, np.asarray, jax_x64.Array)


@pytest.mark.parametrize("form", FORMS)
def test_under_jax_jit_matches_numpy(form, jax_x64):
    make, args = FORMS[form]
    expected = tapec.nest.flatten(make()(*args))
    f = make()
    got = jax_x64.jit(f)(*[jax_x64.numpy.asarray(a) for a in args])
    for g, e in zip(tapec.nest.flatten(got), expected):
        assert isinstance(g, jax_x64.Array)
        np.testing.assert_allclose(np.asarray(g), _numpy(e), rtol=1e-12, atol=1e-12)
    # a second compiled call, at other values, reuses the one trace
    again = jax_x64.jit(f)(*[jax_x64.numpy.asarray(a * 0.5) for a in args])
    np.testing.assert_allclose(np.asarray(tapec.nest.flatten(again)[0]),
                               _numpy(tapec.nest.flatten(make()(*[a * 0.5 for a in args]))[0]),
                               rtol=1e-12, atol=1e-12)
    assert f.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("form", FORMS)
def test_dask_arguments_match_numpy_and_stay_lazy(form):
    da = pytest.importorskip("dask.array")
    from dask.callbacks import Callback

    computed = []

    class Count(Callback):
        def _start(self, dsk):
            computed.append(len(dsk))

    make, args = FORMS[form]
    expected = tapec.nest.flatten(make()(*args))
    with Count():
        got = make()(*[da.from_array(a, chunks=(10,) + a.shape[1:]) for a in args])
        assert computed == [], "a Dask argument was computed before .compute()"
        flat = tapec.nest.flatten(got)
        assert all(isinstance(g, da.Array) for g in flat)
        values = [g.compute() for g in flat]
    assert computed
    for g, e in zip(values, expected):
        np.testing.assert_allclose(g, _numpy(e), rtol=1e-12, atol=1e-12)


def test_numpy_and_tensor_arguments_join_the_foreign_namespace():
    torch = pytest.importorskip("torch")
    expected = tapec.grad(logistic_loss)(W, X, Y).numpy()
    got = tapec.grad(logistic_loss)(tf.constant(W), torch.asarray(X), Y)
    assert isinstance(got, torch.Tensor)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)
    v = tf.Variable(W)
    got = tapec.function(lambda x, y: logistic_loss(v, x, y))(torch.asarray(X), Y)
    np.testing.assert_allclose(got.numpy(), logistic_loss(W, X, Y).numpy(), rtol=1e-12)


def test_mixing_two_libraries_raises():
    torch = pytest.importorskip("torch")
    xs = pytest.importorskip("array_api_strict")
    with pytest.raises(TypeError, match=r"different libraries: .*torch.*array_api_strict"):
        tapec.grad(logistic_loss)(torch.asarray(W), xs.asarray(X), Y)


def test_reading_a_lazy_value_in_python_raises_where_it_is_read():
    da = pytest.importorskip("dask.array")

    def branchy(w, x):
        if tf.reduce_sum(x) > 0:          # a branch on the data: no value exists lazily
            return tf.reduce_sum(w * 2.0)
        return tf.reduce_sum(w)

    with pytest.raises(TypeError, match="array of another library .*test_foreign_arrays"):
        tapec.grad(branchy)(W, da.from_array(X))


def test_reading_a_numpy_argument_in_python_raises_with_foreign_arrays():
    torch = pytest.importorskip("torch")

    def scaled(w, x, k):
        return tf.reduce_sum(tf.linalg.matvec(x, w)) * float(k)     # a guard on k

    with pytest.raises(TypeError, match="cannot check values"):
        tapec.grad(scaled)(torch.asarray(W), torch.asarray(X), tf.constant(2.0))


def test_variable_writes_with_foreign_arrays_raise():
    torch = pytest.importorskip("torch")
    v = tf.Variable(0.0, dtype=tf.float64)

    @tapec.function
    def step(x):
        v.assign_add(tf.reduce_sum(x))
        return v.read_value()

    with pytest.raises(TypeError, match="assigns Variables"):
        step(torch.asarray(X))
    assert v.numpy() == 0.0


def test_a_recording_tape_refuses_foreign_arrays():
    torch = pytest.importorskip("torch")
    w = tf.constant(W)
    with tf.GradientTape() as tape:
        tape.watch(w)
        with pytest.raises(TypeError, match="cannot record"):
            tapec.grad(logistic_loss)(w, torch.asarray(X), Y)


def test_input_signature_checks_and_casts_foreign_arrays():
    torch = pytest.importorskip("torch")
    spec = [tf.TensorSpec([None, 5], tf.float64)]
    f = tapec.function(lambda x: tf.reduce_sum(x * x), input_signature=spec)
    got = f(torch.asarray(X, dtype=torch.float32))
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float64
    np.testing.assert_allclose(got.numpy(), np.sum(X.astype(np.float32).astype(float) ** 2),
                               rtol=1e-12)
    with pytest.raises(ValueError, match="not compatible"):
        f(torch.asarray(W))


def test_exports_refuse_foreign_example_arguments_clearly():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="torch.Tensor"):
        tapec.function(logistic_loss).source(W, torch.asarray(X), Y)


def test_numpy_calls_do_not_import_array_api_compat(simplify_mode):
    if simplify_mode == "off":           # a fresh interpreter: once is enough
        pytest.skip("checked with the simplifier on")
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = ("import sys, numpy as np, tapec\n"
            "tapec.grad(lambda w: tapec.reduce_sum(w * w))(np.ones(3))\n"
            "spec = [tapec.TensorSpec([None], tapec.float64)]\n"
            "f = tapec.function(lambda x: tapec.reduce_sum(x), input_signature=spec)\n"
            "f(np.ones(3)), f(tapec.constant(np.ones(4))), f([1.0, 2.0])\n"
            "print('array_api_compat' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": root})
    assert out.stdout.strip() == "False"


def test_grad_over_chunked_dask_arrays_runs_on_a_local_cluster(simplify_mode):
    """The logistic loss's gradient over 20,000 x 5 rows in chunks of 2,500, computed by
    two worker processes of a dask.distributed LocalCluster, matches NumPy's."""
    if simplify_mode == "off":       # starting workers takes seconds: one mode is enough
        pytest.skip("the cluster runs with the simplifier on only")
    da = pytest.importorskip("dask.array")
    distributed = pytest.importorskip("distributed")
    rng = np.random.default_rng(5)
    x = rng.normal(size=(20_000, 5))
    y = (rng.random(20_000) > 0.5).astype(np.float64)
    w = rng.normal(size=5) * 0.1
    expected = tapec.grad(logistic_loss)(w, x, y).numpy()
    gradient = tapec.grad(logistic_loss)(w, da.from_array(x, chunks=(2_500, 5)),
                                         da.from_array(y, chunks=2_500))
    assert isinstance(gradient, da.Array)
    try:
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                           dashboard_address=None, silence_logs=50)
    except Exception as e:           # noqa: BLE001 - a machine that cannot start workers
        pytest.skip(f"dask.distributed could not start a LocalCluster here: {e}")
    with cluster, distributed.Client(cluster) as client:
        with distributed.get_task_stream(client) as tasks:
            got = gradient.compute()
        workers = set(client.scheduler_info()["workers"])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)
    assert len(workers) == 2 and len(tasks.data) >= 8      # one task per chunk, at least
    assert {task["worker"] for task in tasks.data} <= workers


def test_torch_runs_quietly_on_tapec_read_only_values():
    """tapec's values are read-only NumPy arrays; PyTorch warns when it wraps one (a
    captured constant here), which the program never writes: no warning reaches users."""
    torch = pytest.importorskip("torch")
    captured = tf.constant(np.linspace(0.5, 1.5, 5))

    def leaky(w, x):
        z = tf.linalg.matvec(x, w * captured)
        return tf.reduce_sum(tf.where(z > 0, z, 0.1 * z))

    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = tapec.grad(leaky)(torch.asarray(W), torch.asarray(X))
    np.testing.assert_allclose(got.numpy(), tapec.grad(leaky)(W, X).numpy(), rtol=1e-12)


def test_nested_and_keyword_foreign_arguments():
    torch = pytest.importorskip("torch")

    def model(params, x):
        return tf.reduce_sum(tf.sigmoid(tf.linalg.matvec(x, params["w"])) * params["scale"])

    f = tapec.function(model)
    got = f({"w": torch.asarray(W), "scale": 2.0}, x=torch.asarray(X))
    assert isinstance(got, torch.Tensor)
    np.testing.assert_allclose(got.numpy(), f({"w": W, "scale": 2.0}, x=X).numpy(),
                               rtol=1e-12)


def test_dask_arrays_of_unknown_size_raise():
    da = pytest.importorskip("dask.array")
    x = da.from_array(X, chunks=10)
    with pytest.raises(ValueError, match=r"unknown sizes.*compute_chunk_sizes"):
        tapec.grad(logistic_loss)(W, x[x[:, 0] > 0], Y[:20])


def test_jax_transforms_the_program_jax_vmap_and_jax_grad(jax_x64):
    jnp = jax_x64.numpy
    ws = np.stack([W, 2.0 * W])
    mapped = jax_x64.vmap(tapec.grad(logistic_loss), in_axes=(0, None, None))(
        jnp.asarray(ws), jnp.asarray(X), jnp.asarray(Y))
    for row, w in zip(np.asarray(mapped), ws):
        np.testing.assert_allclose(row, tapec.grad(logistic_loss)(w, X, Y).numpy(),
                                   rtol=1e-12)
    # JAX differentiates tapec's program: its gradient is tapec's own
    through_jax = jax_x64.grad(tapec.function(logistic_loss))(
        jnp.asarray(W), jnp.asarray(X), jnp.asarray(Y))
    np.testing.assert_allclose(np.asarray(through_jax),
                               tapec.grad(logistic_loss)(W, X, Y).numpy(), rtol=1e-12)


@settings(max_examples=8, deadline=None)
@given(rows=st.integers(1, 7), columns=st.integers(1, 4),
       dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2**16))
def test_array_api_strict_matches_numpy_across_shapes_and_dtypes(rows, columns, dtype,
                                                                 seed):
    """value_and_grad of the logistic loss, whatever the shapes and float dtype: the
    strict namespace (which rejects anything outside the standard) gives NumPy's
    values, in the arguments' dtype."""
    xs = pytest.importorskip("array_api_strict")
    rng = np.random.default_rng(seed)
    args = [rng.normal(size=columns).astype(dtype),
            rng.normal(size=(rows, columns)).astype(dtype),
            (rng.random(rows) > 0.5).astype(dtype)]
    f = tapec.value_and_grad(logistic_loss, argnums=(0, 1))
    expected = tapec.nest.flatten(f(*args))
    got = tapec.nest.flatten(f(*[xs.asarray(a) for a in args]))
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    for g, e in zip(got, expected):
        assert g.dtype == getattr(xs, np.dtype(dtype).name)
        np.testing.assert_allclose(np.from_dlpack(g), e.numpy(), rtol=tolerance,
                                   atol=tolerance)
