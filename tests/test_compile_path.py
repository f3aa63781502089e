"""The miss path: what a first gradient compiles, and that it stays right."""
import math
import re
import traceback

import numpy as np
import pytest

import tapec as tf
import tapec.simplify as tapec_simplify


@pytest.fixture(autouse=True)
def fresh_cache():
    tf.clear_cache()
    yield
    tf.clear_cache()


def _scalar_gradient(x0):
    x = tf.constant(x0, dtype=tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.sin(x) + 1.0 / x
    return tape.gradient(y, x)


def test_the_numpy_fallback_of_a_float_program_is_compiled_when_first_needed():
    grad = _scalar_gradient(2.0)
    fn = grad._origin.fn
    fallback = fn.__globals__["gradient_numpy"]
    assert fallback.__name__ == "gradient_numpy"
    assert fallback.__code__.co_name == "first_call"         # not compiled yet
    expected = math.cos(2.0) - 1 / 4.0
    assert grad.numpy() == pytest.approx(expected, rel=1e-15)

    # x = inf: math.cos raises, so the NumPy version runs, compiled now, with IEEE's
    # answer (nan); afterwards it is the compiled function itself.
    with np.errstate(divide="ignore", invalid="ignore"):
        at_inf = _scalar_gradient(np.inf)
    assert at_inf._origin is grad._origin
    assert np.isnan(at_inf.numpy())
    assert fn.__globals__["gradient_numpy"].__code__.co_name == "gradient_numpy"


def test_a_deferred_fallback_keeps_its_line_numbers():
    grad = _scalar_gradient(2.0)
    source_lines = grad._origin.source.splitlines()
    fallback_line = next(i for i, line in enumerate(source_lines, 1)
                         if line.startswith("def gradient_numpy("))
    fn = grad._origin.fn
    fn.__globals__["gradient_numpy"](np.float64(1.0), np.float64(1.0))   # compile it
    assert fn.__globals__["gradient_numpy"].__code__.co_firstlineno == fallback_line
    try:
        fn.__globals__["gradient_numpy"]("not a number", np.float64(1.0))
    except TypeError:
        frames = traceback.extract_tb(__import__("sys").exc_info()[2])
        assert frames[-1].line and frames[-1].line.strip() in grad._origin.source


def _mlp_gradient(X, W1, W2):
    with tf.GradientTape() as tape:
        h = tf.tanh(X @ W1)
        loss = tf.reduce_mean(tf.square(h @ W2))
    return tape.gradient(loss, [W1, W2])


def _mlp_reference(X, W1, W2):
    h = np.tanh(X @ W1)
    out = h @ W2
    d_out = 2 * out / out.size
    d_h = (d_out @ W2.T) * (1 - h ** 2)
    return X.T @ d_h, h.T @ d_out


def _statements(source) -> int:
    """How many values the generated function computes (fused kernels are one each)."""
    return len(re.findall(r"^    \w+ = ", source, flags=re.M))


def test_a_first_gradient_before_sympy_is_unfused_then_fused_on_its_third_call(monkeypatch):
    if tf.config.simplify_setting() != "full":
        pytest.skip("fusion is part of the full mode only")
    monkeypatch.setattr(tapec_simplify, "fusion_is_cold", lambda: True)   # a fresh process
    rng = np.random.default_rng(0)
    X = tf.constant(rng.normal(size=(16, 8)))
    W1 = tf.Variable(rng.normal(size=(8, 12)))
    W2 = tf.Variable(rng.normal(size=(12, 3)))
    expected = _mlp_reference(X.numpy(), W1.numpy(), W2.numpy())
    sources = []
    for _ in range(4):
        grads = _mlp_gradient(X, W1, W2)
        for got, want in zip(grads, expected):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
        sources.append(grads[0]._origin.source)
    assert sources[1] == sources[0] and sources[3] == sources[2]
    assert _statements(sources[2]) < _statements(sources[0])    # fused: fewer statements
    assert tf.cache_info().misses == 1              # the fused version replaces it


def test_a_tf_function_program_is_fused_on_its_third_call(monkeypatch):
    if tf.config.simplify_setting() != "full":
        pytest.skip("fusion is part of the full mode only")
    monkeypatch.setattr(tapec_simplify, "fusion_is_cold", lambda: True)
    rng = np.random.default_rng(1)
    X = tf.constant(rng.normal(size=(16, 8)))
    W1 = tf.Variable(rng.normal(size=(8, 12)))
    W2 = tf.Variable(rng.normal(size=(12, 3)))
    step = tf.function(_mlp_gradient)
    expected = _mlp_reference(X.numpy(), W1.numpy(), W2.numpy())
    sources = []
    for _ in range(4):
        for got, want in zip(step(X, W1, W2), expected):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
        sources.append(step.source(X, W1, W2))
    assert _statements(sources[3]) < _statements(sources[0])    # fused: fewer statements
    assert step.experimental_get_tracing_count() == 1


def test_a_first_gradient_in_a_fresh_process_does_not_import_sympy():
    import subprocess
    import sys
    program = (
        "import sys, numpy as np, tapec as tf\n"
        "X = tf.constant(np.ones((4, 3), np.float32)); W = tf.Variable(np.ones((3, 2), "
        "np.float32))\n"
        "with tf.GradientTape() as tape:\n"
        "    y = tf.nn.softmax(tf.tanh(X @ W) / 3.0 + 0.5)\n"
        "    loss = tf.reduce_mean(tf.math.log(y) * tf.sqrt(tf.abs(y)))\n"
        "g = tape.gradient(loss, W)\n"
        "assert np.all(np.isfinite(g.numpy()))\n"
        "print('sympy' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                            timeout=120, env={**__import__("os").environ,
                                              "TAPEC_CACHE_DIR": ""})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_the_derivative_table_is_what_sympy_derives():
    from tapec.ops import sympy_rules
    from tapec.ops.derivative_table import TABLE
    assert TABLE == sympy_rules.derivative_table()
    assert ("tanh", 0, (None,)) in TABLE and ("pow", 0, (None, 2.0)) in TABLE
