"""The miss path: what a first gradient compiles, and that it stays right."""
import math
import traceback

import numpy as np
import pytest

import tapec as tf


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
