"""Exported modules run on the arrays they are given: NumPy, Dask (lazily), JAX (also
under jax.jit), PyTorch and array-api-strict, at two batch sizes from one export, in a
Python where tapec cannot be imported (docs/export.md "Any array namespace")."""
import importlib.util
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tapec as tf

F64 = tf.float64
W2 = np.array([[0.5], [-1.25], [2.0], [0.75]])


def loss(w, X, y):
    """A small network's logistic loss: a hidden tanh layer w (3, 4), fixed W2 embedded."""
    z = tf.reshape(tf.tanh(X @ w) @ W2, (-1,))
    return tf.reduce_mean(tf.nn.softplus(z) - y * z)


def loss_np(w, X, y):
    z = (np.tanh(X @ w) @ W2).reshape(-1)
    return np.mean(np.logaddexp(0, z) - y * z)


def grad_np(w, X, y):
    h = np.tanh(X @ w)
    z = (h @ W2).reshape(-1)
    dz = (1 / (1 + np.exp(-z)) - y) / len(y)
    return X.T @ (dz[:, None] * W2.T * (1 - h * h))


# The child process: tapec refused by a meta-path finder (and absent from sys.modules),
# then every namespace at two sizes. JAX and PyTorch are tried only where installed.
CHILD = textwrap.dedent(r'''
    import importlib.util, json, sys

    class NoTapec:
        def find_spec(self, name, path=None, target=None):
            if name == "tapec" or name.startswith("tapec."):
                raise ImportError("tapec is blocked in this process")
            return None

    sys.meta_path.insert(0, NoTapec())
    import numpy as np
    spec = importlib.util.spec_from_file_location("exported", sys.argv[1])
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    try:
        import tapec  # noqa: F401
        report = {"tapec": True}
    except ImportError:
        report = {"tapec": False}

    data = np.load(sys.argv[2])
    report["results"] = results = {}

    def record(name, n, value, grad, kind):
        results[f"{name} {n}"] = {"value": float(np.asarray(value)),
                                  "grad": np.asarray(grad).tolist(), "type": kind}

    for n in (7, 40):
        w, X, y = data["w"], data[f"X{n}"], data[f"y{n}"]
        value, grad = m.value_and_grad_loss(w, X, y)
        record("numpy", n, value, grad, type(grad).__module__)

        import dask.array as da
        value, grad = m.value_and_grad_loss(da.from_array(w), da.from_array(X, chunks=5),
                                            da.from_array(y, chunks=5))
        lazy = type(grad).__module__
        record("dask", n, value.compute(), grad.compute(), lazy)

        import array_api_strict as xps
        value, grad = m.value_and_grad_loss(xps.asarray(w), xps.asarray(X), xps.asarray(y))
        record("array_api_strict", n, np.asarray(value), np.asarray(grad),
               type(grad).__module__)
        try:
            import jax
        except ImportError:
            pass
        else:
            jax.config.update("jax_enable_x64", True)
            import jax.numpy as jnp
            args = (jnp.asarray(w), jnp.asarray(X), jnp.asarray(y))
            value, grad = m.value_and_grad_loss(*args)
            record("jax", n, value, grad, type(grad).__module__)
            value, grad = jax.jit(m.value_and_grad_loss)(*args)
            record("jax.jit", n, value, grad, type(grad).__module__)
        try:
            import torch
        except ImportError:
            pass
        else:
            value, grad = m.value_and_grad_loss(*(torch.asarray(a) for a in (w, X, y)))
            record("torch", n, value, grad.numpy(), type(grad).__module__)
    report["modules"] = sorted(n for n in sys.modules if n.split(".")[0] == "tapec")
    print(json.dumps(report))
''')


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    directory = tmp_path_factory.mktemp("namespaces")
    source = tf.export(loss, (tf.TensorSpec([3, 4], F64), tf.TensorSpec([None, 3], F64),
                              tf.TensorSpec([None], F64)), directory / "m.py")
    return directory, source


def test_one_export_computes_the_same_gradient_in_every_namespace(exported, simplify_mode):
    if simplify_mode == "off":      # export simplifies in its own mode: the same module
        pytest.skip("the module does not depend on the simplify setting; run once")
    pytest.importorskip("dask.array")
    pytest.importorskip("array_api_strict")
    directory, source = exported
    rng = np.random.default_rng(3)
    data = {"w": rng.normal(size=(3, 4))}
    for n in (7, 40):
        data[f"X{n}"] = rng.normal(size=(n, 3))
        data[f"y{n}"] = (rng.random(n) > 0.5) * 1.0
    np.savez(directory / "data.npz", **data)
    (directory / "child.py").write_text(CHILD)
    done = subprocess.run([sys.executable, str(directory / "child.py"), str(directory / "m.py"),
                           str(directory / "data.npz")], capture_output=True, text=True,
                          timeout=600, cwd=directory)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["tapec"] is False and report["modules"] == []
    results = report["results"]
    expected = {"numpy": "numpy", "dask": "dask.array.core",
                "array_api_strict": "array_api_strict._array_object"}
    if importlib.util.find_spec("jax"):
        expected.update({"jax": "jaxlib", "jax.jit": "jaxlib"})
    if importlib.util.find_spec("torch"):
        expected["torch"] = "torch"
    for n in (7, 40):
        w, X, y = data["w"], data[f"X{n}"], data[f"y{n}"]
        for name, module in expected.items():
            got = results[f"{name} {n}"]
            assert got["type"].startswith(module), (name, got["type"])
            np.testing.assert_allclose(got["value"], loss_np(w, X, y), rtol=1e-12)
            np.testing.assert_allclose(got["grad"], grad_np(w, X, y), rtol=1e-10, atol=1e-14)


def test_the_module_names_no_numpy_call_and_holds_no_namespace_constant(exported):
    _, source = exported
    code = source[source.index('"""\n', 10) + 4:]
    functions = code[code.index("\ndef loss("):]
    assert "np." not in functions.replace("xp.", "")
    assert "W2 = _data_W2 if xp is np else xp.asarray(_data_W2, device=device)" in functions
    assert "\n_data_W2 = np.array(" in code


def _load(directory, name):
    spec = importlib.util.spec_from_file_location(name, directory / "m.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def test_numpy_arrays_take_the_fast_path_past_the_namespace_machinery(exported, monkeypatch):
    """NumPy arrays of the exported dtypes and shapes are checked by plain comparisons:
    no namespace lookup, no checking helper, no array_api_compat (its per-call cost made
    the NumPy path slower than NumPy-only modules); anything else takes the general path."""
    directory, source = exported
    m = _load(directory, "exported_fast")
    calls = []

    def counted(helper):
        original = getattr(m, helper)

        def helper_called(*args):
            calls.append(helper)
            return original(*args)
        return helper_called
    for helper in ("_namespace", "_checked", "_same_size"):
        monkeypatch.setattr(m, helper, counted(helper))

    class NoCompat:
        def __getattr__(self, name):
            calls.append(f"array_api_compat.{name}")
            raise AssertionError("array_api_compat used")
    monkeypatch.setattr(m, "array_api_compat", NoCompat())
    rng = np.random.default_rng(5)
    w = rng.normal(size=(3, 4))
    for n in (1, 9):
        X, y = rng.normal(size=(n, 3)), (rng.random(n) > 0.5) * 1.0
        value, grad = m.value_and_grad_loss(w, X, y)
        assert type(grad) is np.ndarray
        np.testing.assert_allclose(value, loss_np(w, X, y), rtol=1e-12)
        np.testing.assert_allclose(grad, grad_np(w, X, y), rtol=1e-12)
    assert calls == []
    monkeypatch.setattr(m, "array_api_compat", None)
    np.testing.assert_allclose(m.grad_loss(w, X.tolist(), y), grad_np(w, X, y), rtol=1e-12)
    assert calls == ["_namespace", "_checked", "_checked", "_checked", "_same_size"]
    with pytest.raises(ValueError, match=r"exported as one size and must be equal: "
                                         r"X.shape\[0\] = 9, y.shape\[0\] = 8"):
        m.grad_loss(w, X, y[:8])
    with pytest.raises(ValueError, match=r"argument X: expected shape \(None, 3\)"):
        m.grad_loss(w, X.T, y)
    with pytest.raises(ValueError, match=r"argument w: expected shape \(3, 4\)"):
        m.grad_loss(w[None], X, y)
    # Scalar constants are the Python literals the standard allows beside an array, not
    # arrays made on every call.
    code = source[source.index("\ndef loss("):]
    assert "xp.asarray(1.0" not in code and "xp.asarray(0." not in code


def test_numpy_inputs_get_numpy_results_and_lists_convert(exported):
    directory, _ = exported
    spec = importlib.util.spec_from_file_location("exported_ns", directory / "m.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    w, X, y = np.ones((3, 4)) / 4, np.arange(6.0).reshape(2, 3) / 6, np.array([1.0, 0.0])
    grad = m.grad_loss(w.tolist(), X, y)
    assert type(grad) is np.ndarray
    np.testing.assert_allclose(grad, grad_np(w, X, y), rtol=1e-12)
    with pytest.raises(ValueError, match=r"argument X: expected shape \(None, 3\) dtype "
                                         r"float64 .* got shape \(2, 3\) dtype float32"):
        m.grad_loss(w, X.astype(np.float32), y)


def test_foreign_arrays_without_array_api_compat_raise_clearly(exported, monkeypatch):
    directory, _ = exported
    spec = importlib.util.spec_from_file_location("exported_nocompat", directory / "m.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    monkeypatch.setattr(m, "array_api_compat", None)

    class Foreign:                 # an array type that names no namespace
        shape, dtype, ndim = (2, 3), np.float64, 2
    with pytest.raises(TypeError, match="arguments of type Foreign need array-api-compat"):
        m.grad_loss(np.ones((3, 4)), Foreign(), np.ones(2))
    xps = pytest.importorskip("array_api_strict")   # names its own: no compat needed
    grad = m.grad_loss(xps.ones((3, 4), dtype=xps.float64),
                       xps.ones((2, 3), dtype=xps.float64), xps.ones(2, dtype=xps.float64))
    np.testing.assert_allclose(np.asarray(grad), grad_np(np.ones((3, 4)), np.ones((2, 3)),
                                                         np.ones(2)), rtol=1e-12)


def test_an_op_without_an_array_api_form_writes_a_numpy_module(tmp_path, monkeypatch):
    from tapec.codegen import array_api
    from tapec.export import module

    class WithoutTanh(type(array_api.ARRAY_API)):     # as if tanh had no array-API form
        @staticmethod
        def expression(node, args):
            if node.op.name == "tanh":
                raise array_api.NoArrayApiForm("op 'tanh' has no array-API form")
            return array_api.ARRAY_API.expression(node, args)
    monkeypatch.setattr(module, "ARRAY_API", WithoutTanh())
    source = tf.export(lambda x: tf.reduce_sum(tf.tanh(x)), (np.ones(3),), tmp_path / "m.py",
                       name="f")
    assert "def _namespace" not in source and "xp." not in source \
        and "NumPy arrays only" in source
    spec = importlib.util.spec_from_file_location("exported_numpy_form", tmp_path / "m.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(m.grad_f(x), 1 - np.tanh(x) ** 2, rtol=1e-14)


def test_scalar_constants_are_literals_only_where_the_standard_allows_them(tmp_path):
    """Beside an array of its dtype in an operator a constant is the Python literal (the
    standard gives it the array's dtype); as a function's argument it stays a 0-d array
    (2023.12 functions take arrays)."""
    from tapec.codegen import standard
    assert standard.is_operator("a0 + a1") and standard.is_operator("a0 < a1")
    assert standard.is_operator("a0 ** a1") and not standard.is_operator("a0 @ a1")
    assert not standard.is_operator("xp.maximum(a0, a1)")
    assert not standard.is_operator("a0 + a1 + a0") and not standard.is_operator("-a0")

    def f(x):
        return tf.reduce_sum(tf.maximum(x * 3.0, 0.5) - 1.5)
    source = tf.export(f, (np.array([0.1, 0.2, 0.3], np.float32),), tmp_path / "m.py")
    code = source[source.index("\ndef f("):]
    assert "x * 3.0" in code and "- 1.5" in code
    assert "xp.maximum(multiply_1, xp.asarray(0.5, dtype=xp.float32, device=device))" in code
    xps = pytest.importorskip("array_api_strict")
    m = _load(tmp_path, "exported_literals")
    x = np.array([0.1, 0.2, 0.3], np.float32)
    for arrays in (x, xps.asarray(x)):
        value, grad = m.value_and_grad_f(arrays)
        assert np.asarray(value).dtype == np.float32 and np.asarray(grad).dtype == np.float32
        np.testing.assert_allclose(np.asarray(value), np.sum(np.maximum(3 * x, 0.5) - 1.5),
                                   rtol=1e-6)
        np.testing.assert_allclose(np.asarray(grad), np.where(3 * x > 0.5, 3.0, 0.0))
