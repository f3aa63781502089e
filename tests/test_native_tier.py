"""The native tier of 0-d float64 programs (tapec/codegen/native.py): the Python-float
function written in C, compiled by the system's compiler, bit for bit NumPy's results.

Tests that run C skip where there is no C compiler; the ones about running without one
(or with a broken one, or with the tier turned off) run everywhere.
"""
from __future__ import annotations

import math
import re
import threading
import time

import numpy as np
import pytest

import tapec as tf
from tapec import config
from tapec.codegen import native
from tapec.ops import scalar_forms
from test_scalar_codegen import _compiled_op
from tapec.ops.registry import REGISTRY, apply

F64 = np.dtype(np.float64)
BOOL = np.dtype(np.bool_)

needs_compiler = pytest.mark.skipif(native.compiler() is None, reason="no C compiler")
LIBM_OK = (scalar_forms._agrees_with_libm("sin", np.sin)
           and scalar_forms._agrees_with_libm("cos", np.cos))

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, math.pi, 1e22, 1e-300, -1e300, 5e-324,
           1.7976931348623157e308, math.inf, -math.inf, math.nan]


def bits(v) -> bytes:
    return np.float64(v).tobytes()


@pytest.fixture
def native_on():
    before = config.native_enabled()
    tf.set_native(True)
    yield
    tf.set_native(before)


def _program(op, dtypes):
    """Generated code computing `op` of 0-d placeholders (bools as 1.0/0.0): the source,
    the dispatcher and the Tiered float version."""
    source, fn = _compiled_op(op, dtypes)
    return source, fn, fn.__globals__["gradient_scalar"]


def _cases(arity, rng, positive=False):
    xs = rng.uniform(-10, 10, 200).tolist() + \
        (np.exp(rng.uniform(-700, 700, 200)) * rng.choice([-1.0, 1.0], 200)).tolist()
    xs = SPECIAL + ([abs(x) for x in xs] if positive else xs)   # sqrt: mostly its domain
    if arity == 1:
        return [(x,) for x in xs]
    ys = rng.permutation(np.array(xs)).tolist()
    return [(a, b) for a in SPECIAL for b in SPECIAL] + list(zip(xs, ys)) + \
        [(x, x) for x in xs[:50]] + [(x, -x) for x in xs[:50]]


# Float ops with a C form (the bool-only and bool-condition ops are covered by where and
# the comparisons, which take floats).
C_OPS = sorted(name for name, op in REGISTRY.items()
               if op.c is not None and op.arity is not None and
               name not in ("logical_and", "logical_or", "logical_not", "where"))


def test_c_forms_cover_the_python_float_ops_but_erf():
    # erf's Python form is math.erf, which CPython may compute without the C library.
    python = {n for n, op in REGISTRY.items() if op.scalar is not None}
    c = {n for n, op in REGISTRY.items() if op.c is not None}
    assert python - c == {"erf"}
    assert c <= python


@needs_compiler
@pytest.mark.parametrize("name", C_OPS)
def test_each_op_in_c_is_bit_identical_to_numpy(name, native_on):
    if name in ("sin", "cos") and not LIBM_OK:
        pytest.skip("this NumPy's sin/cos are not the C library's")
    op = REGISTRY[name]
    source, fn, tiered = _program(op, [F64] * op.arity)
    assert "gradient_native = (" in source and "tapec_program" in source, source
    assert tiered.build(wait=True), tiered.state
    ran_in_c = 0
    cases = _cases(op.arity, np.random.default_rng(sum(map(ord, name))), name == "sqrt")
    for case in cases:
        arrays = [np.asarray(v) for v in case]
        with np.errstate(all="ignore"):
            eager = apply(op, *(tf.constant(a) for a in arrays)).numpy()
            expected = float(eager) if eager.dtype == BOOL else eager
            (got,) = fn(*arrays)
        assert bits(got) == bits(expected), (name, case, got, expected)
        flagged = tiered.native(arrays) is None
        # C gives up only where IEEE flags what Python floats raise on (nan, inf).
        assert not flagged or not np.isfinite(expected) or \
            any(not np.isfinite(v) for v in case) or name == "divide", (name, case)
        ran_in_c += not flagged
    assert ran_in_c > 0.8 * len(cases)


@needs_compiler
def test_where_and_logical_ops_in_c(native_on, fresh_cache):
    def program(x, y):
        both = tf.logical_and(tf.greater(x, 0.0), tf.logical_not(tf.less(y, 0.0)))
        either = tf.logical_or(both, tf.equal(x, y))
        return tf.where(either, x * y, x - y)

    f = tf.function(tf.grad(program, argnums=(0, 1)))
    for x, y in [(1.0, 2.0), (-1.0, 2.0), (1.0, -2.0), (3.0, 3.0), (-0.0, 0.0)]:
        args = (tf.constant(x, tf.float64), tf.constant(y, tf.float64))
        python = [bits(g) for g in f(*args)]
        _tiered_of(f, *args).build(wait=True)
        assert [bits(g) for g in f(*args)] == python, (x, y)


def _tiered_of(function, *args):
    """The Tiered float version behind a tf.function's program for `args`."""
    function.source(*args)              # traces the signature (shows the NumPy body only)
    program = function._traces[next(k for k in function._traces)][-1]
    entry = program._compiled or program.compiled()
    assert "function_native = (" in entry.source, entry.source
    fn = entry.fn
    return fn.__globals__["function_scalar"]


def loop(x, n=300):
    y = x
    for _ in range(n):
        y = tf.sin(y) * 0.5 + y * 0.3
    return y


@needs_compiler
@pytest.mark.skipif(not LIBM_OK, reason="this NumPy's sin/cos are not the C library's")
def test_long_loop_gradient_is_bit_identical_in_c(native_on, fresh_cache):
    f = tf.function(tf.grad(loop))
    rng = np.random.default_rng(3)
    values = [tf.constant(v, tf.float64) for v in rng.uniform(-4, 4, 20)]
    python = [bits(f(v)) for v in values]
    tiered = _tiered_of(f, values[0])
    assert tiered.build(wait=True)
    calls, c_version = [], tiered.native
    tiered.native = lambda args: calls.append(args) or c_version(args)
    assert [bits(f(v)) for v in values] == python
    # Each call ran in C, and the NumPy version (both float versions' reference) agrees.
    assert len(calls) == len(values)
    numpy_version = tiered.python.__globals__["function_numpy"]
    assert [bits(numpy_version(*args)[0]) for args in calls] == python


@needs_compiler
@pytest.mark.skipif(not LIBM_OK, reason="this NumPy's sin/cos are not the C library's")
def test_a_long_program_keeps_its_values_off_the_c_stack(native_on, fresh_cache):
    # Over OPTIMIZE_UP_TO statements the C code writes its values to a scratch buffer of
    # the caller's thread: it runs in a thread whose stack holds far fewer doubles than
    # the program has values, and threads calling at once do not share a buffer.
    f = tf.function(tf.grad(lambda x: loop(x, n=1500)))
    x = tf.constant(0.3, tf.float64)
    tiered = _tiered_of(f, x)
    scratch = int(re.search(r"tapec_scratch = (\d+);", tiered.c_source).group(1))
    assert scratch * 8 > 3 * 32768            # three times the smallest thread stack
    assert "double v" not in tiered.c_source.split("tapec_program")[1]   # no locals
    rng = np.random.default_rng(5)
    values = [tf.constant(v, tf.float64) for v in rng.uniform(-4, 4, 8)]
    python = [bits(f(v)) for v in values]
    assert tiered.build(wait=True)
    results = {}

    def run(k):
        results[k] = [bits(f(v)) for v in values[k::2]]
    previous = threading.stack_size(32768)
    try:
        threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        threading.stack_size(previous)
    assert results[0] == python[0::2] and results[1] == python[1::2]


@needs_compiler
@pytest.mark.skipif(not LIBM_OK, reason="this NumPy's sin/cos are not the C library's")
def test_ieee_exceptions_fall_back_to_numpy(native_on, fresh_cache):
    def program(x):
        return tf.sin(x) / x + tf.sqrt(x)

    f = tf.function(tf.grad(program))
    tiered = _tiered_of(f, tf.constant(2.0, tf.float64))
    assert tiered.build(wait=True)
    calls, c_version = [], tiered.native
    tiered.native = lambda args: calls.append((args, c_version(args))) or calls[-1][1]
    numpy_version = tiered.python.__globals__["function_numpy"]
    for v in (2.0, 0.0, -1.0, math.inf, math.nan):
        got = f(tf.constant(v, tf.float64)).numpy()
        args, c_result = calls[-1]
        # 1/0, sqrt(-1), sin(inf) raise IEEE flags, a nan argument gives a nan: C leaves
        # all of them to NumPy's version.
        assert (c_result is None) == (v != 2.0), v
        with np.errstate(all="ignore"):
            assert bits(got) == bits(numpy_version(*args)[0]), v


@needs_compiler
@pytest.mark.skipif(not LIBM_OK, reason="this NumPy's sin/cos are not the C library's")
def test_a_program_that_keeps_running_is_compiled_in_the_background(native_on, monkeypatch,
                                                                   fresh_cache):
    monkeypatch.setattr(native, "COMPILE_AFTER_SECONDS", math.inf)
    f = tf.function(tf.grad(loop))
    x = tf.constant(0.3, tf.float64)
    first = bits(f(x))
    tiered = _tiered_of(f, x)
    assert tiered.state == "python"
    monkeypatch.setattr(native, "COMPILE_AFTER_SECONDS", 0.0)
    f(x)                                     # its time passes the threshold: a build starts
    assert tiered.state in ("building", "native")
    deadline = time.monotonic() + 120
    while tiered.state == "building" and time.monotonic() < deadline:
        assert bits(f(x)) == first           # the Python version serves meanwhile
        time.sleep(0.01)
    assert native.wait_for_builds(timeout=120)
    assert tiered.state == "native"
    assert bits(f(x)) == first
    assert not any(t.name == "tapec-native" for t in threading.enumerate())


def test_a_short_program_stays_in_python(native_on, monkeypatch, fresh_cache):
    # A few operations in Python floats cost less than one call through ctypes.
    monkeypatch.setattr(native, "COMPILE_AFTER_SECONDS", 0.0)
    f = tf.function(tf.grad(lambda x: x * x * 0.75))
    x = tf.constant(0.3, tf.float64)
    assert f(x).numpy() == 0.3 * 2 * 0.75
    tiered = _tiered_of(f, x)
    f(x)
    assert tiered.state == "short" and tiered.native is None


def test_without_a_compiler_programs_stay_in_python(native_on, monkeypatch, fresh_cache):
    monkeypatch.setenv("CC", "/nonexistent/tapec-test-cc")
    f = tf.function(tf.grad(loop))
    x = tf.constant(0.3, tf.float64)
    expected = bits(f(x))
    tiered = _tiered_of(f, x)
    assert tiered.build(wait=True) is False and tiered.state == "failed"
    assert bits(f(x)) == expected


def test_a_failing_compiler_leaves_the_program_in_python(native_on, monkeypatch, fresh_cache):
    monkeypatch.setenv("CC", "false")        # a command that exists and always fails
    if native.compiler() is None:
        pytest.skip("no `false` command")
    f = tf.function(tf.grad(loop))
    x = tf.constant(0.3, tf.float64)
    expected = bits(f(x))
    tiered = _tiered_of(f, x)
    assert tiered.build(wait=True) is False and tiered.state == "failed"
    assert bits(f(x)) == expected


def test_the_tier_can_be_turned_off(native_on, fresh_cache):
    tf.set_native(False)
    f = tf.function(tf.grad(loop))
    x = tf.constant(0.3, tf.float64)
    f(x)
    tiered = _tiered_of(f, x)
    assert tiered.build(wait=True) is False and tiered.state == "python"
    with pytest.raises(TypeError, match="set_native: enabled must be a bool"):
        tf.set_native(1)


def test_the_environment_variable_is_checked(monkeypatch):
    monkeypatch.setattr(config, "_native", None)
    monkeypatch.setenv("TAPEC_NATIVE", "0")
    assert tf.native_enabled() is False
    monkeypatch.setattr(config, "_native", None)
    monkeypatch.setenv("TAPEC_NATIVE", "maybe")
    with pytest.raises(ValueError, match="TAPEC_NATIVE must be 0 or 1, got 'maybe'"):
        tf.native_enabled()
    monkeypatch.setattr(config, "_native", None)


def test_c_source_holds_no_user_text():
    # A hostile Variable name becomes a sanitized Python parameter; in C every value is
    # a numbered variable and every literal a hexadecimal float.
    v = tf.Variable(0.25, dtype=tf.float64, name='a"); system("echo pwned"); double b = (1')
    x = tf.constant(0.5, tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.sin(x * v) * 0.1 + x / 3.0
    g = tape.gradient(y, x)
    source = tf.generated_source(g, full=True)
    c_text = source[source.index("gradient_native = ("):source.index("def gradient_numpy")]
    assert "pwned" not in c_text and "system" not in c_text and "0.1" not in c_text
    assert re.search(r"\(0x1\.[0-9a-f]+p[-+][0-9]+\)", c_text)    # exact literals
