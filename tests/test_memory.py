"""Tapes release what they hold; compiled functions hold no user values."""
import gc
import os
import weakref

import numpy as np
import pytest

import tapec as tf


def _resident_mb():
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
    except OSError:
        pytest.skip("resident memory is read from /proc")
    return pages * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def _run(step, n):
    for _ in range(n):
        step()


def test_ten_thousand_steps_keep_resident_memory_flat():
    rng = np.random.default_rng(0)
    w = tf.Variable(rng.normal(size=(32, 32)))
    x = tf.constant(rng.normal(size=(8, 32)))

    def step():
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(tf.tanh(tf.matmul(x, w)))
        return tape.gradient(y, w)

    def persistent_step():
        with tf.GradientTape(persistent=True) as tape:
            y = tf.reduce_sum(tf.tanh(tf.matmul(x, w)))
        g = tape.gradient(y, w)
        del tape
        return g

    for fn in (step, persistent_step):
        _run(fn, 300)
        gc.collect()
        before = _resident_mb()
        _run(fn, 10_000)
        gc.collect()
        growth = _resident_mb() - before
        assert growth < 4.0, f"{fn.__name__}: resident memory grew {growth:.1f} MB"


def test_non_persistent_tape_drops_intermediates_after_gradient():
    x = tf.constant(np.ones(10))
    with tf.GradientTape() as tape:
        tape.watch(x)
        hidden = tf.exp(x)
        y = tf.reduce_sum(hidden * hidden)
    ref = weakref.ref(hidden._value)             # the array, which the tape keeps
    del hidden
    assert ref() is not None                     # the tape still holds its value
    tape.gradient(y, x)
    gc.collect()
    assert ref() is None


def test_persistent_tape_releases_when_deleted():
    x = tf.constant(np.ones(10))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        hidden = tf.exp(x)
        y = tf.reduce_sum(hidden)
    ref = weakref.ref(hidden)
    tape_ref = weakref.ref(tape)
    del hidden
    tape.gradient(y, x)
    tape.gradient(y, x)
    assert ref() is not None
    del tape
    gc.collect()
    assert tape_ref() is None and ref() is None


def test_compiled_functions_hold_no_user_values(fresh_cache):
    x = tf.constant(np.ones(4))
    with tf.GradientTape() as tape:
        tape.watch(x)
        hidden = tf.sin(x)
        y = tf.reduce_sum(hidden * x)
    g = tape.gradient(y, x)
    ref = weakref.ref(hidden)
    del hidden, y, tape
    gc.collect()
    assert ref() is None
    assert g._origin.fn.__closure__ is None


def test_recorded_functions_keep_resident_memory_flat():
    rng = np.random.default_rng(1)
    w = rng.normal(size=(32, 16))
    x = rng.normal(size=(8, 32))
    value_and_grad = tf.value_and_grad(lambda x, w: tf.reduce_sum(tf.tanh(x @ w)), argnums=1)
    _run(lambda: value_and_grad(x, w), 300)
    gc.collect()
    before = _resident_mb()
    _run(lambda: value_and_grad(x, w), 10_000)
    gc.collect()
    growth = _resident_mb() - before
    assert growth < 4.0, f"tapec.value_and_grad: resident memory grew {growth:.1f} MB"
    assert value_and_grad.trace_count == 1


def test_new_shapes_past_the_cache_size_keep_resident_memory_flat(fresh_cache, simplify_mode):
    """Each compiled source was registered in linecache for good: 150 new shapes through
    a 16-entry cache grew resident memory by about 6.4 MB (170 sources kept), now about
    1 MB (16 kept)."""
    import linecache
    if simplify_mode == "full":
        pytest.skip("what linecache keeps does not depend on the simplifier; one mode is enough")

    def step(n):
        x = tf.constant(np.ones(n))
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x
            for _ in range(60):                  # a long source: about 9 kB per shape
                y = tf.sin(y) * x + y
            y = tf.reduce_sum(y)
        return tape.gradient(y, x)

    def sources():
        return sum(1 for name in linecache.cache if name.startswith("<tapec-generated-"))

    tf.set_cache_size(16)
    try:
        for n in range(1, 22):
            step(n)
        gc.collect()
        before, held = _resident_mb(), sources()
        for n in range(22, 172):
            step(n)
        gc.collect()
        growth = _resident_mb() - before
        assert sources() <= held, f"{sources() - held} more generated sources in linecache"
        assert growth < 3.0, f"150 new shapes: resident memory grew {growth:.1f} MB"
    finally:
        tf.set_cache_size(512)
