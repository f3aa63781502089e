"""Blocked, multi-threaded evaluation of large fused kernels (tapec/codegen/blocks.py).

Blocking must not change a value: each element goes through the same operations, so
results are compared bit for bit with the whole-array evaluation of the same kernel,
for every thread count, block size and operand layout. MIN_SIZE and BLOCK_BYTES are
lowered so that small arrays take many blocks.
"""
import re
import threading
import time

import numpy as np
import pytest
import sympy  # noqa: F401  (programs are fused only once SymPy is imported: docs/simplifier.md)
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tapec as tf
from tapec import config
from tapec.codegen import blocks
from tapec.simplify import fuse


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(blocks, "MIN_SIZE", 8)
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 64)       # 8 float64 per block
    previous = config.num_threads()
    yield
    tf.set_num_threads(previous)
    tf.clear_cache()


def kernel(a, b, c):
    return np.sin(a) * np.exp(-b * b) + np.log1p(c * c) * np.tanh(a) / (1.0 + b * b)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), threads=st.integers(1, 4),
       block_bytes=st.sampled_from([8, 24, 64, 1000]))
def test_blocked_equals_whole_array_bit_for_bit(data, threads, block_bytes):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=9))
    # operands that span the first axis, are broadcast along it, or are 0-d
    shapes = [shape, shape[1:], (1,) + shape[1:]] if len(shape) > 1 else [shape, (), (1,)]
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16)))
    operands = [rng.normal(size=s) for s in data.draw(st.permutations(shapes))]
    if data.draw(st.booleans()) and operands[0].ndim >= 1:
        operands[0] = np.repeat(operands[0], 2, axis=0)[::2]         # a strided view
    sliced = tuple(o.ndim == len(shape) and o.shape[0] == shape[0] and shape[0] > 1
                   for o in operands)
    expected = np.broadcast_to(kernel(*operands), shape)
    original = (blocks.BLOCK_BYTES, config.num_threads())
    try:
        blocks.BLOCK_BYTES = block_bytes
        tf.set_num_threads(threads)
        got = blocks.tapec_blocked(kernel, operands, sliced, shape, np.float64)
    finally:
        blocks.BLOCK_BYTES = original[0]
        tf.set_num_threads(original[1])
    assert got.shape == shape and got.dtype == np.float64
    np.testing.assert_array_equal(got, expected)


def test_eligibility():
    big = (1 << 17,)
    assert blocks.eligible(big, [big, ()]) == (True, False)
    assert blocks.eligible((512, 512), [(512,), (512, 512), (1, 512)]) == (False, True, False)
    assert blocks.eligible((1000,), [(1000,)]) is None                 # too small
    assert blocks.eligible((), [()]) is None                           # 0-d
    assert blocks.eligible((1, 1 << 18), [(1, 1 << 18)]) is None       # one row
    assert blocks.eligible((512, 512), [(512,)]) is None               # nothing to slice


def w3(x):
    return tf.reduce_sum(tf.sin(x) * tf.exp(-x ** 2) + tf.math.log1p(x ** 2) * tf.tanh(x)
                         + tf.sqrt(1 + x ** 2))


def w3_gradient_by_hand(x):
    return (np.cos(x) * np.exp(-x ** 2) - 2 * x * np.sin(x) * np.exp(-x ** 2)
            + 2 * x / (1 + x ** 2) * np.tanh(x) + np.log1p(x ** 2) / np.cosh(x) ** 2
            + x / np.sqrt(1 + x ** 2))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_compiled_gradients_use_blocks_and_agree(small_blocks, simplify_mode, threads):
    tf.set_num_threads(threads)
    xv = np.random.default_rng(0).normal(size=(37, 5))
    grad = tf.grad(w3)
    got = grad(xv).numpy()
    np.testing.assert_allclose(got, w3_gradient_by_hand(xv), rtol=1e-12, atol=1e-14)
    assert ("tapec_blocked(" in grad.source(xv)) == (simplify_mode == "full")
    x = tf.constant(xv)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = w3(x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), got, rtol=1e-14, atol=0)


def test_blocks_follow_the_callers_errstate(small_blocks):
    tf.set_num_threads(2)
    xv = np.linspace(-1.0, 1.0, 64)         # 0.0 is not in it; 1/(x - x[40]) divides by 0
    grad = tf.grad(lambda x, c: tf.reduce_sum(tf.sin(x) / (x - c) + tf.exp(x) * x))
    c = np.full(64, xv[40])
    with np.errstate(divide="ignore", invalid="ignore"):
        value = grad(xv, c).numpy()
    assert not np.isfinite(value[40]) and np.isfinite(np.delete(value, 40)).all()
    with np.errstate(divide="raise", invalid="raise"), pytest.raises(FloatingPointError):
        grad(xv, c)


def test_a_failing_block_raises_after_every_worker_finished(small_blocks):
    tf.set_num_threads(3)
    finished = []

    def failing(a):
        if a[0] == 0.0:
            raise ValueError("first block")
        finished.append(threading.current_thread().name)
        return a * 2.0

    # 6 blocks of 8 rows, 2 per thread; this thread fails on its first, the workers'
    # 4 blocks all run before the error is raised
    with pytest.raises(ValueError, match="first block"):
        blocks.tapec_blocked(failing, (np.arange(48.0),), (True,), (48,), np.float64)
    assert len(finished) == 4 and all(name.startswith("tapec-blocks") for name in finished)


def test_num_threads_setting(monkeypatch):
    previous = config.num_threads()
    try:
        tf.set_num_threads(3)
        assert tf.num_threads() == 3
        for bad in (0, -1, 1.5, True, "2"):
            with pytest.raises(ValueError, match="set_num_threads"):
                tf.set_num_threads(bad)
        assert tf.num_threads() == 3
        monkeypatch.setattr(config, "_threads", None)
        monkeypatch.setenv("TAPEC_NUM_THREADS", "5")
        assert tf.num_threads() == 5
        monkeypatch.setattr(config, "_threads", None)
        monkeypatch.setenv("TAPEC_NUM_THREADS", "many")
        with pytest.raises(ValueError, match="TAPEC_NUM_THREADS"):
            tf.num_threads()
    finally:
        tf.set_num_threads(previous)


def test_a_parameter_named_like_the_helper_is_renamed(small_blocks):
    def f(tapec_blocked):
        return tf.reduce_sum(tf.sin(tapec_blocked) * tf.exp(tapec_blocked))
    xv = np.linspace(-1.0, 1.0, 40)
    np.testing.assert_allclose(tf.grad(f)(xv).numpy(),
                               (np.cos(xv) + np.sin(xv)) * np.exp(xv), rtol=1e-14)


def test_memory_bound_kernels_are_not_blocked(small_blocks):
    # a few adds and products per element: a whole-array pass writes in place
    def f(a, b):
        return tf.reduce_sum(a * b * b + a * a)
    a, b = np.linspace(-1.0, 1.0, 64), np.linspace(0.5, 2.0, 64)
    grad = tf.grad(f, argnums=(0, 1))
    assert "tapec_blocked(" not in grad.source(a, b)
    da, db = grad(a, b)
    np.testing.assert_allclose(da.numpy(), b * b + 2 * a, rtol=1e-15)
    np.testing.assert_allclose(db.numpy(), 2 * a * b, rtol=1e-15)


def test_the_kernel_writes_its_last_operation_into_the_output_block(small_blocks,
                                                                   simplify_mode):
    xv = np.random.default_rng(1).normal(size=(40, 3))
    for f, last in [(lambda x: tf.tanh(x) * tf.exp(x) * x + x, r"np\.add\(.*, out=out\)"),
                    (lambda x: tf.exp(tf.sin(x) * x), r"np\.exp\(s\d, out=out\)"),
                    (lambda x: (tf.sin(x) * x) ** 3.0, r"r = s\d \*\* 3\.0\n *out\[\.\.\.\] = r")]:
        function = tf.function(f)
        source = function.source(xv)
        # a ufunc result is written with out=; any other (x ** 3.0) is copied into the block
        assert ("scratch=" in source) == (simplify_mode == "full"), source
        if simplify_mode == "full":
            assert re.search(last, source), source
        with np.errstate(all="ignore"):
            np.testing.assert_allclose(function(xv).numpy(), np.asarray(f(tf.constant(xv))),
                                       rtol=1e-14, atol=0)


@pytest.mark.parametrize("threads", [1, 3])
def test_a_kernel_writing_through_scratch_blocks_equals_the_whole_array(small_blocks, threads):
    tf.set_num_threads(threads)
    a, b = np.random.default_rng(2).normal(size=(2, 45, 4))
    seen = {}

    def kernel(x, y, out, scratch):
        (s0,) = scratch
        # views of the one allocation each thread's run of blocks makes
        seen.setdefault(threading.current_thread().name, set()).add(id(s0.base))
        assert s0.shape == x.shape
        np.add(y, 1.0, out=s0)
        return np.multiply(np.sin(x), s0, out=out)
    got = blocks.tapec_blocked(kernel, (a, b[0]), (True, False), a.shape, np.float64,
                               scratch=1)
    np.testing.assert_array_equal(got, np.sin(a) * (b[0] + 1.0))
    # 45 rows, 8 per block: 6 blocks, in `threads` runs, one scratch allocation per run
    assert sum(len(bases) for bases in seen.values()) <= threads < 6


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_scratch_kernel_is_the_expression_kernel_bit_for_bit(small_blocks, dtype):
    from tapec.simplify.fuse.kernel_printer import print_kernel
    from tapec.simplify.fuse.numpy_printer import NumpyStyle, print_program
    from tapec.simplify.fuse.program import Call
    square = Call("square", "np.square({0})", None, 1, 100, None)
    tan = Call("tan", "np.tan({0})", None, 20, 100, None)
    same = Call("identity", "{0}", None, 1, None, None)        # returns its operand
    isnan = Call("isnan", "np.isnan({0})", None, 1, 100, None)
    code = (("mul", (("in", 0), ("in", 1)), None),              # 0: x * y
            ("call", (("v", 0),), tan),                          # 1: tan(x * y)
            ("call", (("v", 1),), same),                         # 2: a view of 1
            ("add", (("v", 1), ("lit", "1.0")), None),           # 3: 1 dies here...
            ("call", (("v", 3),), square),                       # 4: ...but 2 reads it
            ("mul", (("v", 2), ("v", 4)), None),                 # 5
            ("call", (("in", 1),), isnan),                       # 6: bool: no scratch
            ("sub", (("v", 5), ("in", 2)), None),                # 7: c broadcasts
            ("div", (("v", 7), ("v", 0)), None))                 # 8
    program, shapes, shape = (code, ("v", 8)), [(40, 3), (40, 3), (3,)], (40, 3)
    lines, slots = print_kernel(program, ["a0", "a1", "a2"], shapes, shape, dtype)
    assert "np.isnan(a1)" in "\n".join(lines) and "out=s" in "\n".join(lines)
    namespace = {"np": np}
    exec("def kernel(a0, a1, a2, out, scratch):\n" + "".join(
        f"    {line}\n" for line in lines) + "    return r\n", namespace)
    expression = print_program(program, NumpyStyle(["a0", "a1", "a2"]), "r")
    exec("def whole(a0, a1, a2):\n" + "".join(f"    {line}\n" for line in expression)
         + "    return r\n", namespace)
    rng = np.random.default_rng(3)
    args = [rng.normal(size=s).astype(dtype) for s in shapes]
    got = blocks.tapec_blocked(namespace["kernel"], args, (True, True, False), shape, dtype,
                               scratch=slots)
    np.testing.assert_array_equal(got, namespace["whole"](*args))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_eager_ops_on_large_arrays_run_in_blocks_bit_for_bit(small_blocks, monkeypatch, threads):
    """An eager op whose loop is bound by arithmetic (measured: here decided by the
    test) is computed in blocks on the threads, with the same value and the same
    gradient; one that is bound by memory, or a single thread, runs whole."""
    tf.set_num_threads(threads)
    calls = []
    blocked = blocks.tapec_blocked
    monkeypatch.setattr(blocks, "tapec_blocked", lambda *a, **k: calls.append(1) or blocked(*a, **k))
    monkeypatch.setattr(blocks, "_measure", lambda impl, values: impl is np.sin)
    monkeypatch.setattr(blocks, "_COMPUTE_BOUND", {})
    xv = np.random.default_rng(0).normal(size=(37, 5))
    x = tf.constant(xv)
    with tf.GradientTape() as tape:
        tape.watch(x)
        s = tf.sin(x)
        e = tf.exp(x)                    # "memory-bound": whole
        y = tf.reduce_sum(s * e)
    assert len(calls) == (1 if threads > 1 else 0)
    # comparisons and rounding are never blocked, whatever their declared cost
    tf.math.floor(x), x > 0.0
    assert len(calls) == (1 if threads > 1 else 0)
    np.testing.assert_array_equal(s.numpy(), np.sin(xv))
    np.testing.assert_array_equal(e.numpy(), np.exp(xv))
    assert s.dtype == tf.float64 and s.shape == (37, 5)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(),
                               np.exp(xv) * (np.cos(xv) + np.sin(xv)), rtol=1e-13)


def test_the_measure_tells_a_slow_loop_from_a_fast_one():
    def slow(a):
        time.sleep(1e-3)         # 60 ns per element of the sample: bound by "arithmetic"
        return a
    sample = np.zeros(1 << 15)
    assert blocks._measure(slow, [sample])
    assert not blocks._measure(np.negative, [sample])
