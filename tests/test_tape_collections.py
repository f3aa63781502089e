"""A long recording collects only the youngest generation until it stops (context.py):
the older thresholds are put back however the recording ends, tapes of several threads
share one postponement, and the tape keeps recorded values, not the Tensors, so an
intermediate the user dropped is freed while the gradient stays right."""
import gc
import math
import threading
import weakref

import numpy as np
import pytest

import tapec as tf
from tapec import context
from tapec.tape import _LONG_RECORDING


@pytest.fixture(autouse=True)
def _thresholds():
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*saved)


def _record(tape, x, steps):
    y = x
    for _ in range(steps):
        y = tf.sin(y) * 0.5 + y * 0.3
    return y


def _loop_gradient(x0, steps):
    y, g = x0, 1.0
    for _ in range(steps):
        g *= math.cos(y) * 0.5 + 0.3
        y = math.sin(y) * 0.5 + y * 0.3
    return g


def test_a_long_recording_postpones_the_older_generations_until_it_stops():
    x = tf.constant(0.7, dtype=tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = _record(tape, x, 10)
        assert gc.get_threshold() == (700, 10, 10)          # short so far: untouched
        y = _record(tape, y, _LONG_RECORDING)
        assert gc.get_threshold() == (700, context._POSTPONED, context._POSTPONED)
    assert gc.get_threshold() == (700, 10, 10)
    assert tape.gradient(y, x).numpy() == pytest.approx(
        _loop_gradient(0.7, 10 + _LONG_RECORDING), rel=1e-12)


def test_thresholds_come_back_when_the_recording_raises_or_is_differentiated_inside():
    x = tf.constant(0.7, dtype=tf.float64)
    with pytest.raises(ZeroDivisionError):
        with tf.GradientTape() as tape:
            tape.watch(x)
            _record(tape, x, _LONG_RECORDING)
            1 / 0
    assert gc.get_threshold() == (700, 10, 10)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = _record(tape, x, _LONG_RECORDING)
        tape.gradient(y, x)          # a non-persistent tape stops recording here
        assert gc.get_threshold() == (700, 10, 10)


def test_a_threshold_the_user_changes_meanwhile_is_kept():
    x = tf.constant(0.7, dtype=tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        _record(tape, x, _LONG_RECORDING)
        gc.set_threshold(500, 20, 30)
    assert gc.get_threshold() == (500, 20, 30)


def test_tapes_in_two_threads_share_one_postponement():
    x = tf.constant(0.7, dtype=tf.float64)
    inside, release = threading.Event(), threading.Event()
    seen = []

    def other():
        with tf.GradientTape() as tape:
            tape.watch(x)
            _record(tape, x, _LONG_RECORDING)
            inside.set()
            release.wait(30)
        seen.append(gc.get_threshold())

    thread = threading.Thread(target=other)
    thread.start()
    assert inside.wait(60)
    with tf.GradientTape() as tape:
        tape.watch(x)
        _record(tape, x, _LONG_RECORDING)
    # This thread's recording stopped, the other's has not: still postponed.
    assert gc.get_threshold() == (700, context._POSTPONED, context._POSTPONED)
    release.set()
    thread.join(60)
    assert seen == [(700, 10, 10)] and gc.get_threshold() == (700, 10, 10)


def test_recorded_intermediates_are_freed_when_dropped_and_the_gradient_is_right():
    x = tf.constant(np.linspace(0.1, 1.0, 5))
    with tf.GradientTape() as tape:
        tape.watch(x)
        hidden = tf.exp(x)
        ref = weakref.ref(hidden)
        y = tf.reduce_sum(hidden * tf.sin(hidden))
        del hidden
        assert ref() is None              # the tape holds its value, not the Tensor
    e = np.exp(np.linspace(0.1, 1.0, 5))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(),
                               (np.sin(e) + e * np.cos(e)) * e, rtol=1e-13)


@pytest.mark.parametrize("persistent", [False, True])
def test_nested_and_persistent_tapes_still_differentiate_their_gradients(persistent):
    x = tf.constant(0.3, dtype=tf.float64)
    with tf.GradientTape(persistent=persistent) as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.sin(x) * x
        dy = inner.gradient(y, x)
    assert outer.gradient(dy, x).numpy() == pytest.approx(2 * math.cos(0.3) - 0.3 * math.sin(0.3))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.sin(x) * x
        dy = tape.gradient(y, x)
    assert tape.gradient(dy, x).numpy() == pytest.approx(2 * math.cos(0.3) - 0.3 * math.sin(0.3))


def test_a_tape_entered_inside_a_recording_one_lets_it_differentiate_inside():
    # `inner` records first; `outer` starts while it records (not nested as a `with`),
    # so the gradient `inner` takes inside `outer`'s recording must be recorded by outer.
    x = tf.constant(0.3, dtype=tf.float64)
    inner = tf.GradientTape()
    inner.__enter__()
    inner.watch(x)
    a = tf.exp(x)
    with tf.GradientTape() as outer:
        outer.watch(x)
        y = a * tf.sin(x)
        inner.__exit__(None, None, None)
        dy = inner.gradient(y, x)       # exp(x) sin(x) + exp(x) cos(x)
    e, s, c = math.exp(0.3), math.sin(0.3), math.cos(0.3)
    assert dy.numpy() == pytest.approx(e * (s + c), rel=1e-13)
    # outer saw only y = a * sin(x) with `a` a constant: d(dy)/dx through what it saw.
    assert outer.gradient(dy, x).numpy() == pytest.approx(e * (c - s), rel=1e-13)
