"""tapec.export: standalone NumPy modules, checked in a fresh interpreter without tapec.

Each exported file is imported by a driver run as `python -I -S` with only NumPy's
site-packages directory on sys.path: `-S` skips the .pth files, so tapec's editable
install is not importable there (the driver reports that it is not). Inputs and
outputs travel as .npy files.
"""
import ast
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tapec as tf
from tapec.export.layout import array_source

RNG = np.random.default_rng(11)
NUMPY_SITE = os.path.dirname(os.path.dirname(np.__file__))

DRIVER = r'''
import importlib.util, json, sys
sys.path.insert(0, sys.argv[2])          # NumPy only: no .pth file is processed under -S
import numpy as np
try:
    import tapec  # noqa: F401
    importable = True
except ImportError:
    importable = False
spec = importlib.util.spec_from_file_location("exported", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)


def flatten(value):
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in flatten(item)]
    return [value]


report = {"tapec_importable": importable, "calls": []}
with open("calls.json") as handle:
    calls = json.load(handle)
for k, call in enumerate(calls):
    args = [np.load(name) for name in call["args"]]
    try:
        result = getattr(module, call["fn"])(*args)
    except Exception as error:
        report["calls"].append({"error": type(error).__name__, "message": str(error)})
        continue
    leaves = flatten(result)
    for i, leaf in enumerate(leaves):
        np.save(f"out{k}_{i}.npy", np.asarray(leaf))
    report["calls"].append({"count": len(leaves)})
report["tapec_loaded"] = any(name.split(".")[0] == "tapec" for name in sys.modules)
with open("report.json", "w") as handle:
    json.dump(report, handle)
'''


def run_fresh(directory, module_path, calls):
    """Call functions of the exported module in a fresh interpreter without tapec.

    `calls` is a list of (function name, argument arrays); returns, per call, the list of
    output arrays (flattened) or an (error type, message) pair."""
    specs = []
    for k, (fn, args) in enumerate(calls):
        names = []
        for i, a in enumerate(args):
            name = f"in{k}_{i}.npy"
            np.save(directory / name, np.asarray(a))
            names.append(name)
        specs.append({"fn": fn, "args": names})
    (directory / "calls.json").write_text(json.dumps(specs))
    (directory / "driver.py").write_text(DRIVER)
    done = subprocess.run([sys.executable, "-I", "-S", str(directory / "driver.py"),
                           str(module_path), NUMPY_SITE], cwd=directory,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads((directory / "report.json").read_text())
    assert report["tapec_importable"] is False, "tapec must not be importable in the driver"
    assert report["tapec_loaded"] is False
    results = []
    for k, entry in enumerate(report["calls"]):
        if "error" in entry:
            results.append((entry["error"], entry["message"]))
        else:
            results.append([np.load(directory / f"out{k}_{i}.npy")
                            for i in range(entry["count"])])
    return results


def flat_arrays(value):
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in flat_arrays(item)]
    return [np.asarray(value.numpy() if hasattr(value, "numpy") else value)]


def assert_same(got, expected):
    expected = flat_arrays(expected)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


def check_against_tapec(tmp_path, f, args, argnums, name, jacobian=False, hessian=False):
    """Export f, run every function it defines in a fresh interpreter, compare with tapec."""
    path = tmp_path / f"{name}_exported.py"
    source = tf.export(f, args, path, argnums=argnums, jacobian=jacobian, hessian=hessian,
                       name=name)
    assert path.read_text() == source
    expected = {name: tf.function(f)(*args),
                f"grad_{name}": tf.grad(f, argnums)(*args),
                f"value_and_grad_{name}": tf.value_and_grad(f, argnums)(*args)}
    if jacobian:
        expected[f"jacobian_{name}"] = tf.jacobian(f, argnums)(*args)
    if hessian:
        expected[f"hessian_{name}"] = tf.hessian(f, argnums)(*args)
    results = run_fresh(tmp_path, path, [(fn, args) for fn in expected])
    for (fn, want), got in zip(expected.items(), results):
        assert isinstance(got, list), (fn, got)
        assert_same(got, want)
    assert_standalone(source)
    return source


def assert_standalone(source):
    """No reference to tapec in code: only numpy (and math for erf) are imported, and the
    word appears in the header comment only."""
    assert "import tapec" not in source and "from tapec" not in source
    assert all("tapec" not in line for line in source.splitlines()[1:])
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            assert {a.name for a in node.names} <= {"numpy", "math", "array_api_compat"}
        assert not isinstance(node, ast.ImportFrom)


# --- the examples ------------------------------------------------------------------------------

def scalar_fn(x, y):
    return tf.sin(x) * tf.exp(y) + x ** 2 / y


def test_scalar_function_with_jacobian_and_hessian(tmp_path):
    args = (np.float64(0.3), np.float64(1.7))
    source = check_against_tapec(tmp_path, scalar_fn, args, (0, 1), "scalar_fn",
                                 jacobian=True, hessian=True)
    assert "def grad_scalar_fn(x, y):" in source and "dscalar_fn_dx" in source
    assert "d2scalar_fn_dx_dy" in source
    # The formulas come from tapec.export.latex, escaped into a raw docstring.
    assert "e^{y} \\sin{\\left(x \\right)}" in source


LABELS = np.eye(3)[RNG.integers(0, 3, 6)]


def mlp_loss(x, w1, b1, w2):
    h = tf.tanh(x @ w1 + b1)
    return tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(LABELS, h @ w2))


def test_mlp_loss(tmp_path):
    args = (RNG.normal(size=(6, 4)), RNG.normal(size=(4, 5)), RNG.normal(size=5),
            RNG.normal(size=(5, 3)))
    source = check_against_tapec(tmp_path, mlp_loss, args, (1, 2, 3), "mlp_loss")
    assert "def value_and_grad_mlp_loss(x, w1, b1, w2):" in source
    # Values the function assigned to a variable keep its name (`h`), cotangents `b_h`.
    for name in ("dmlp_loss_dw1", "dmlp_loss_db1", "dmlp_loss_dw2", "h = xp.tanh(",
                 "b_h = ", "_data_LABELS = np.array(["):
        assert name in source, name
    assert max(len(line) for line in source.splitlines()) <= 100


def logistic_loss(w, X, y):
    p = tf.sigmoid(X @ w)
    return -tf.reduce_mean(y * tf.math.log(p) + (1 - y) * tf.math.log(1 - p))


def test_logistic_regression_with_jacobian_and_hessian(tmp_path):
    X = RNG.normal(size=(10, 3))
    y = (RNG.random(10) > 0.5).astype(np.float64)
    args = (RNG.normal(size=3), X, y)
    check_against_tapec(tmp_path, logistic_loss, args, 0, "logistic_loss", jacobian=True,
                        hessian=True)


def control_flow(a):
    b = a * 2
    while tf.norm(b) < 1000:
        b = b * 2
    if tf.reduce_sum(b) > 0:
        c = b
    else:
        c = 100 * b
    return c


def guarded(a):
    return tf.reduce_sum(control_flow(a))


def test_guards_raise_outside_the_traced_branch(tmp_path):
    source = check_against_tapec(tmp_path, guarded, (np.array([[0.5]]),), 0, "guarded")
    assert "return None" not in source
    same_path, other_sign, more_loops = np.array([[0.7]]), np.array([[-0.5]]), np.array([[0.3]])
    results = run_fresh(tmp_path, tmp_path / "guarded_exported.py", [
        ("value_and_grad_guarded", (same_path,)), ("guarded", (other_sign,)),
        ("grad_guarded", (more_loops,)), ("value_and_grad_guarded", (other_sign,))])
    assert_same(results[0], tf.value_and_grad(guarded)(same_path))
    for error in results[1:]:
        assert error[0] == "ValueError" and \
            error[1].startswith("input outside the traced branch: "), error


def test_arguments_are_checked_at_entry(tmp_path):
    path = tmp_path / "checked.py"
    tf.export(logistic_loss, (np.zeros(3), np.ones((4, 3)), np.ones(4)), path)
    module = _load(path)
    with pytest.raises(ValueError, match=r"argument w: expected shape \(3,\) dtype float64"):
        module.logistic_loss(np.zeros(4), np.ones((4, 3)), np.ones(4))
    with pytest.raises(ValueError, match="argument X: .* got shape \\(4, 3\\) dtype float32"):
        module.grad_logistic_loss(np.zeros(3), np.ones((4, 3), np.float32), np.ones(4))
    # A Python number in the example is part of the signature: other values are refused.
    tf.export(lambda x, k: tf.reduce_sum(x * k), (np.ones(2), 3.0), tmp_path / "fixed.py")
    fixed = _load(tmp_path / "fixed.py")
    assert fixed.f(np.ones(2), 3.0) == 6.0
    with pytest.raises(ValueError, match="argument k: the module was exported for k = 3.0"):
        fixed.f(np.ones(2), 4.0)


def _load(path):
    spec = importlib.util.spec_from_file_location(f"exported_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- names and security ------------------------------------------------------------------------

HOSTILE = ['"""; import os; os.system("touch PWNED") #', "x\nimport os",
           "y\r\nimport os; os.system('touch PWNED')", "coding: utf-7 ''' \\"]


def test_hostile_names_execute_nothing(tmp_path):
    v1 = tf.Variable(np.array([1.0, 2.0, 3.0]), name=HOSTILE[0])
    v2 = tf.Variable(0.5, name=HOSTILE[1], dtype=tf.float64)
    v3 = tf.Variable(np.array([0.25, -1.5, 2.0]), name=HOSTILE[2])
    v4 = tf.Variable(np.float64(2.0), name=HOSTILE[3])

    def hostile(x):
        return tf.reduce_sum(v1 * x + v3 * x * x) * v2 + v4

    path = tmp_path / "hostile.py"
    source = tf.export(hostile, (np.ones(3),), path, name=HOSTILE[0])
    compile(source, str(path), "exec")
    assert_standalone(source)
    for line in source.splitlines():
        assert not line.lstrip().startswith(("import os", "os.system")), line
    x = RNG.normal(size=3)
    results = run_fresh(tmp_path, path, [("import_os_os_system_touch_PWNED", (x,)),
                                         ("grad_import_os_os_system_touch_PWNED", (x,))])
    assert not (tmp_path / "PWNED").exists() and not os.path.exists("PWNED")
    assert_same(results[0], tf.function(hostile)(x))
    assert_same(results[1], tf.grad(hostile)(x))


def test_identifiers_are_made_by_tapec(tmp_path):
    def f(ξ, sum, np_):          # a Greek letter, a builtin and a near-clash with np
        return tf.reduce_sum(ξ * sum) + np_
    source = tf.export(f, (np.ones(2), np.ones(2), np.float64(1.0)), tmp_path / "names.py",
                       name="3 weird-name!")
    assert "def f_3_weird_name(arg0, sum_, np_):" in source
    module = _load(tmp_path / "names.py")
    value, grad = module.value_and_grad_f_3_weird_name(np.ones(2), 2 * np.ones(2), 1.0)
    assert value == 5.0 and grad.tolist() == [2.0, 2.0]


# --- embedded values ---------------------------------------------------------------------------

def test_constants_and_variables_are_embedded_exactly(tmp_path):
    small = np.array([0.1, 1 / 3, -0.0, 1e-300, 2.0 ** -1074, np.pi])
    large = RNG.normal(size=(20, 30))                  # past the literal size: hex bytes
    weights = tf.Variable(RNG.normal(size=(2, 30)).astype(np.float32), name="weights")
    scale = tf.constant(np.float32(1.1))

    def model(x):
        h = tf.cast(tf.tanh(tf.reduce_sum(x * large, axis=1)[:6] * small), tf.float32)
        return tf.reduce_sum(weights * scale) + tf.reduce_sum(h)

    path = tmp_path / "embedded.py"
    source = tf.export(model, (np.ones(30),), path)
    assert "bytes.fromhex(" in source and "np.array([" in source
    assert "weights = np.array([" in source
    x = RNG.normal(size=30)
    expected_value, expected_grad = tf.value_and_grad(model)(x)
    weights.assign(np.zeros((2, 30), np.float32))      # the module is a snapshot
    results = run_fresh(tmp_path, path, [("value_and_grad_model", (x,))])
    assert_same(results[0], (expected_value, expected_grad))
    assert results[0][0].tobytes() == expected_value.numpy().tobytes()


@pytest.mark.parametrize("value", [
    RNG.normal(size=(3, 4)), RNG.normal(size=7).astype(np.float32),
    (RNG.normal(size=(2, 2)) + 1j * RNG.normal(size=(2, 2))).astype(np.complex64),
    np.array([np.nan, np.inf, -np.inf, -0.0]), np.array([True, False]),
    RNG.integers(-9, 9, size=(2, 3, 2)), np.float64(np.e), np.zeros((0, 3)),
    RNG.normal(size=500).astype(np.float16), RNG.normal(size=(40, 40)),
    np.frombuffer(bytes.fromhex("0100f87f0000f8ff"), dtype="<f4")])    # NaN payloads
def test_array_literals_are_bit_exact(value):
    value = np.asarray(value)
    lines = array_source(value)
    assert all(len(line) <= 100 for line in lines)
    rebuilt = eval("\n".join(lines), {"np": np})       # our own literal
    assert rebuilt.dtype == value.dtype and rebuilt.shape == value.shape
    assert rebuilt.tobytes() == value.tobytes()


# --- errors ------------------------------------------------------------------------------------

def test_a_non_scalar_function_exports_with_its_jacobian(tmp_path):
    a = RNG.normal(size=(3, 3))

    def layer(x):
        return tf.tanh(tf.linalg.matvec(tf.constant(a), x))

    x = RNG.normal(size=3)
    with pytest.raises(TypeError, match="jacobian=True"):
        tf.export(layer, (x,), tmp_path / "layer.py")
    source = tf.export(layer, (x,), tmp_path / "layer.py", jacobian=True)
    assert "def grad_layer" not in source and "def jacobian_layer(x):" in source
    results = run_fresh(tmp_path, tmp_path / "layer.py",
                        [("layer", (x,)), ("jacobian_layer", (x,))])
    assert_same(results[0], tf.function(layer)(x))
    assert_same(results[1], tf.jacobian(layer)(x))


def test_result_structure_is_kept(tmp_path):
    def f(x):
        return {"loss": tf.reduce_sum(x * x)}
    x = RNG.normal(size=3)
    tf.export(f, (x,), tmp_path / "structured.py", hessian=True)
    module = _load(tmp_path / "structured.py")
    value = module.f(x)
    assert list(value) == ["loss"] and value["loss"] == tf.function(f)(x)["loss"].numpy()
    loss, grad = module.value_and_grad_f(x)        # as tapec.value_and_grad: the scalar
    assert_same([np.asarray(loss), grad], tf.value_and_grad(f)(x))
    assert_same([module.hessian_f(x)], tf.hessian(f)(x))


def test_without_a_formula_the_module_is_still_written(tmp_path, monkeypatch):
    # `tapec.export` is the function; the subpackage is reached by a from-import.
    from tapec.export import latex as latex_module

    def broken(*args, **kwargs):
        raise RuntimeError("no LaTeX today")
    monkeypatch.setattr(latex_module, "tape_latex", broken)
    source = tf.export(scalar_fn, (np.float64(0.3), np.float64(1.7)), tmp_path / "plain.py")
    assert "(no formula: the LaTeX printer failed with RuntimeError)" in source
    assert _load(tmp_path / "plain.py").scalar_fn(0.3, 1.7) == \
        tf.function(scalar_fn)(np.float64(0.3), np.float64(1.7)).numpy()
