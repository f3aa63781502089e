"""GradientTape and custom_gradient corners where tapec follows TensorFlow 2.21.

Each scenario is written once, as a TF user writes it, taking the module (`tf`) as an
argument. Every scenario has a test that runs on tapec alone and states the expected
outcome, and `test_same_as_tensorflow` runs it under TensorFlow too (skipped where
TensorFlow is not installed) and compares. An outcome is a list of arrays and Nones,
or ("raises", exception type name).
"""
import os

import numpy as np
import pytest

import tapec

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def outcome(scenario, tf):
    try:
        result = scenario(tf)
    except Exception as error:       # noqa: BLE001 - the type is the outcome
        return ("raises", type(error).__name__)
    return [None if r is None else r if isinstance(r, (bool, int, str, tuple)) else
            np.asarray(r.numpy() if hasattr(r, "numpy") else r) for r in result]


def same(a, b):
    if isinstance(a, tuple) or isinstance(b, tuple):
        return a == b
    return len(a) == len(b) and all(
        (x is None and y is None) or (x is not None and y is not None and (
            x == y if isinstance(x, (bool, int, str, tuple)) else
            np.shape(x) == np.shape(y) and np.allclose(x, y, rtol=1e-5)))
        for x, y in zip(a, b))


# --- 1. an unwatched constant that feeds a recorded op gets None --------------------------

def unwatched_constant(tf):
    w, x = tf.constant(2.0), tf.constant(3.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(w)
        y = w * x
    return tape.gradient(y, [w, x]) + tape.gradient(y, [x], unconnected_gradients="zero")


def unwatched_constant_with_a_variable(tf):
    v, x = tf.Variable(2.0), tf.constant([3.0, 4.0])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(v * x)
    return tape.gradient(y, [v, x])


def test_unwatched_constant_gets_none():
    assert same(outcome(unwatched_constant, tapec), [3.0, None, 0.0])
    assert same(outcome(unwatched_constant_with_a_variable, tapec), [7.0, None])


def test_unwatched_constant_is_explained():
    w, x = tapec.constant(2.0), tapec.constant(3.0)
    with tapec.GradientTape() as tape:
        tape.watch(w)
        y = w * x
    message = tape.explain(y, x)
    assert " is None " in message and "not watched by this tape" in message
    assert "unwatched input of multiply" in message
    assert "connected" in tape.explain(y, w)


def watched_after_feeding_an_op(tf):
    w, c = tf.constant(2.0), tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(w)
        y = w * c                  # c recorded as an unwatched input
        tape.watch(c)
        z = y + c * c
    return tape.gradient(z, [w, c])


def test_a_tensor_watched_later_is_differentiated_through_every_recorded_use():
    assert same(outcome(watched_after_feeding_an_op, tapec), [3.0, 8.0])


# --- 2. custom_gradient ---------------------------------------------------------------------

def custom_none_for_an_input(tf):
    @tf.custom_gradient
    def first_only(a, b):
        return a * b, lambda dy: (dy * b, None)
    x, u = tf.constant([1.0, 2.0]), tf.constant(3.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, u])
        y = first_only(x, u)
        z = first_only(x, u) + u * 2.0
    return tape.gradient(y, [x, u]) + tape.gradient(z, [u]) + \
        tape.gradient(y, [u], unconnected_gradients="zero")


def custom_none_for_every_input(tf):
    @tf.custom_gradient
    def blocked(a):
        return a * 2.0, lambda dy: None
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        h = x * 3.0
        y = blocked(h)
        z = blocked(h) * x
    return [tape.gradient(y, x), tape.gradient(z, x)]


def test_custom_gradient_none_means_no_gradient():
    assert same(outcome(custom_none_for_an_input, tapec), [[3.0, 3.0], None, 4.0, 0.0])
    assert same(outcome(custom_none_for_every_input, tapec), [None, [6.0, 12.0]])


def _scaled(tf, v, keyword=True, count=1):
    @tf.custom_gradient
    def scaled(a):
        y = a * v

        def grad(dy, variables=None):
            assert [w.name for w in variables] == [v.name]
            return dy * v, [tf.reduce_sum(dy * a)] * count

        def grad_without_keyword(dy):
            return dy * v
        return y, grad if keyword else grad_without_keyword
    return scaled


def custom_variables_protocol(tf):
    v = tf.Variable(2.0, name="scale")
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = _scaled(tf, v)(x)
    return tape.gradient(y, [x, v])


def custom_variables_without_keyword(tf):
    v = tf.Variable(2.0, name="scale")
    return [_scaled(tf, v, keyword=False)(tf.constant(1.0))]


def custom_variables_wrong_count(tf):
    v = tf.Variable(2.0, name="scale")
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = _scaled(tf, v, count=2)(x)
    return tape.gradient(y, [x, v])


def custom_variables_unwatched_input(tf):
    v = tf.Variable(2.0, name="scale")
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        y = _scaled(tf, v)(x)
    return tape.gradient(y, [x, v])


def custom_non_trainable_variable_is_not_passed(tf):
    frozen = tf.Variable(3.0, trainable=False)

    @tf.custom_gradient
    def f(a):
        return a * frozen, lambda dy: dy * 3.0       # no `variables` keyword needed
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return [tape.gradient(y, x)]


def test_custom_gradient_variables_protocol():
    assert same(outcome(custom_variables_protocol, tapec), [[2.0, 2.0], 3.0])
    assert outcome(custom_variables_without_keyword, tapec) == ("raises", "TypeError")
    assert outcome(custom_variables_wrong_count, tapec) == ("raises", "ValueError")
    assert same(outcome(custom_variables_unwatched_input, tapec), [None, 3.0])
    assert same(outcome(custom_non_trainable_variable_is_not_passed, tapec), [3.0])


def test_custom_gradient_variables_errors_say_what_to_do():
    v = tapec.Variable(2.0, name="scale")
    with pytest.raises(TypeError, match="must accept keyword argument 'variables'"):
        _scaled(tapec, v, keyword=False)(tapec.constant(1.0))
    x = tapec.constant(1.0)
    with tapec.GradientTape() as tape:
        tape.watch(x)
        y = _scaled(tapec, v, count=0)(x)
    with pytest.raises(ValueError, match="Must return gradient for each variable"):
        tape.gradient(y, x)


def custom_vectorized_jacobian(tf):
    v = tf.Variable(2.0, name="scale")

    @tf.custom_gradient
    def f(a, b):
        s = tf.reduce_sum(b)               # grad_fn reduces: it must see one row at a time

        def grad(dy, variables=None):
            return ((dy * tf.cos(a) * s * v, tf.ones_like(b) * tf.reduce_sum(dy * tf.sin(a)) * v),
                    [tf.reduce_sum(dy * tf.sin(a) * s)])
        return tf.sin(a) * s * v, grad
    a, b = tf.constant([0.1, 0.2, 0.3]), tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        y = f(a, b) * 2.0
    return tape.jacobian(y, [a, b, v])


def test_custom_gradient_under_a_vectorized_jacobian():
    result = outcome(custom_vectorized_jacobian, tapec)
    assert [np.shape(r) for r in result] == [(3, 3), (3, 2), (3,)]
    a, s = np.array([0.1, 0.2, 0.3]), 3.0
    np.testing.assert_allclose(result[0], np.diag(np.cos(a) * s * 4.0), rtol=1e-6)
    np.testing.assert_allclose(result[1], np.outer(np.sin(a) * 4.0, [1.0, 1.0]), rtol=1e-6)
    np.testing.assert_allclose(result[2], np.sin(a) * s * 2.0, rtol=1e-6)


def test_custom_gradient_vectorized_jacobian_matches_the_row_loop():
    @tapec.custom_gradient
    def g(x):
        return tapec.tanh(x), lambda dy: dy * (1 - tapec.tanh(x) ** 2)
    x = tapec.constant([[0.1, 0.2], [0.3, 0.4]])
    with tapec.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = g(x)
    for method in (tape.jacobian, tape.batch_jacobian):
        np.testing.assert_allclose(method(y, x).numpy(),
                                   method(y, x, experimental_use_pfor=False).numpy())


# --- 3. stop_recording() and reset() outside the context -------------------------------------

def stop_recording_on_a_fresh_tape(tf):
    with tf.GradientTape().stop_recording():
        pass
    return []


def stop_recording_after_the_with_block(tf):
    with tf.GradientTape() as tape:
        pass
    with tape.stop_recording():
        pass
    return []


def stop_recording_after_release(tf):
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    with tape.stop_recording():
        pass
    return []


def reset_after_the_with_block(tf):
    with tf.GradientTape() as tape:
        pass
    tape.reset()
    return []


def reset_on_a_fresh_tape(tf):
    tf.GradientTape().reset()
    return []


def test_stop_recording_and_reset_outside_the_context():
    assert outcome(stop_recording_on_a_fresh_tape, tapec) == ("raises", "RuntimeError")
    assert outcome(stop_recording_after_the_with_block, tapec) == ("raises", "ValueError")
    assert outcome(stop_recording_after_release, tapec) == ("raises", "RuntimeError")
    assert outcome(reset_after_the_with_block, tapec) == ("raises", "ValueError")
    assert outcome(reset_on_a_fresh_tape, tapec) == ("raises", "ValueError")


# --- 4. output_gradients --------------------------------------------------------------------

def _two_targets(tf, output_gradients):
    x, w = tf.constant([1.0, 2.0]), tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch([x, w])
        targets = [x * x, w * w]
    return tape.gradient(targets, [x, w], output_gradients=output_gradients)


def seeds_one_per_target(tf):
    return _two_targets(tf, [tf.constant([1.0, 10.0]), 5.0])


def seeds_scalar_broadcasts(tf):
    return _two_targets(tf, [2.0, 5.0])


def seeds_missing_are_ones(tf):
    return _two_targets(tf, [tf.constant([1.0, 10.0])])


def seeds_none_entry(tf):
    return _two_targets(tf, [tf.constant([1.0, 10.0]), None])


def test_output_gradients():
    assert same(outcome(seeds_one_per_target, tapec), [[2.0, 40.0], 30.0])
    assert same(outcome(seeds_scalar_broadcasts, tapec), [[4.0, 8.0], 30.0])
    assert same(outcome(seeds_missing_are_ones, tapec), [[2.0, 40.0], 6.0])
    assert outcome(seeds_none_entry, tapec) == ("raises", "ValueError")


def test_output_gradients_python_list_for_one_target_is_taken_whole():
    # TensorFlow flattens [1.0, 10.0] into two scalar seeds and uses the first (a wrong
    # result without an error); tapec takes the list as the one target's seed.
    x = tapec.constant([1.0, 2.0])
    with tapec.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    for seeds in ([1.0, 10.0], [[1.0, 10.0]], np.array([1.0, 10.0])):
        assert tape.gradient(y, x, output_gradients=seeds).numpy().tolist() == [2.0, 40.0]
    with pytest.raises(ValueError, match="got 3 output_gradients for 1 target"):
        tape.gradient(y, x, output_gradients=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="does not match target shape"):
        tape.gradient(y, x, output_gradients=_three_seeds())
    with pytest.raises(ValueError, match="at most one per target"):
        tape.gradient([y], x, output_gradients=[1.0, 2.0])


def _three_seeds():
    return tapec.constant([1.0, 2.0, 3.0])


# --- 5. a target that is an unwatched source -------------------------------------------------

def target_is_an_unwatched_source(tf):
    x, u = tf.constant([1.0, 2.0]), tf.constant(3.0)
    v = tf.Variable(2.0)
    with tf.GradientTape(persistent=True) as tape:
        y = u * 2.0
    return tape.gradient([x, y], [x, u]) + [
        tape.gradient(x, x, output_gradients=[tf.constant([3.0, 4.0])]),
        tape.gradient(x, x, unconnected_gradients="zero"),
        tape.gradient(v, v)]


def test_target_that_is_an_unwatched_source_gives_ones():
    assert same(outcome(target_is_an_unwatched_source, tapec),
                [[1.0, 1.0], None, [3.0, 4.0], [1.0, 1.0], 1.0])


# --- 6. integer Variables --------------------------------------------------------------------

def integer_variable(tf):
    count, scale = tf.Variable(3), tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = tf.cast(count, tf.float32) * scale
    listed = tuple(v.dtype.name for v in tape.watched_variables())
    gradients = tape.gradient(y, [count, scale])
    after = tuple(v.dtype.name for v in tape.watched_variables())
    return [listed] + gradients + [after]


def test_integer_variable_is_watched_and_gets_none(recwarn):
    assert same(outcome(integer_variable, tapec),
                [("int32", "float32"), None, 3.0, ("int32", "float32")])


# --- 7. watch() while not recording ----------------------------------------------------------

def watch_inside_stop_recording(tf):
    x, v = tf.constant([1.0, 2.0]), tf.Variable(2.0)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        with tape.stop_recording():
            tape.watch([x, v])
        y = x * x * v
    return [tape.gradient(y, x), len(tape.watched_variables())]


def watch_after_the_with_block(tf):
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        pass
    tape.watch(x)
    with tape:
        y = x * x
    return [tape.gradient(y, x)]


def test_watch_while_not_recording_has_no_effect():
    assert same(outcome(watch_inside_stop_recording, tapec), [None, 0])
    assert same(outcome(watch_after_the_with_block, tapec), [None])


# --- 8. watched_variables() after gradient() and reset() -------------------------------------

def watched_variables_after_release(tf):
    v = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = v * v
    gradient = tape.gradient(y, v)
    return [len(tape.watched_variables()), gradient]


def watched_variables_after_reset(tf):
    v, w = tf.Variable(2.0), tf.Variable(1.0)
    with tf.GradientTape() as tape:
        y = v * v
        tape.reset()
        empty = len(tape.watched_variables())
        z = w * 2.0
    return [empty, tape.watched_variables()[0].numpy(), len(tape.watched_variables())]


def reentering_a_released_tape(tf):
    v = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = v * v
    tape.gradient(y, v)
    with tape:
        z = v * 3.0
    return [tape.gradient(z, v)]


def test_watched_variables_survive_release_and_respect_reset():
    assert same(outcome(watched_variables_after_release, tapec), [1, 4.0])
    assert same(outcome(watched_variables_after_reset, tapec), [0, 1.0, 1])
    assert same(outcome(reentering_a_released_tape, tapec), [3.0])


# --- the same scenarios under TensorFlow -----------------------------------------------------

SCENARIOS = [
    unwatched_constant, unwatched_constant_with_a_variable, watched_after_feeding_an_op,
    custom_none_for_an_input, custom_none_for_every_input, custom_variables_protocol,
    custom_variables_without_keyword, custom_variables_wrong_count,
    custom_variables_unwatched_input, custom_non_trainable_variable_is_not_passed,
    custom_vectorized_jacobian, stop_recording_on_a_fresh_tape,
    stop_recording_after_the_with_block, stop_recording_after_release,
    reset_after_the_with_block, reset_on_a_fresh_tape, seeds_one_per_target,
    seeds_scalar_broadcasts, seeds_missing_are_ones, seeds_none_entry,
    target_is_an_unwatched_source, integer_variable, watch_inside_stop_recording,
    watch_after_the_with_block, watched_variables_after_release,
    watched_variables_after_reset, reentering_a_released_tape,
]


@pytest.fixture(scope="module")
def tensorflow():
    return pytest.importorskip("tensorflow")


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_same_as_tensorflow(scenario, tensorflow):
    expected = outcome(scenario, tensorflow)
    assert same(outcome(scenario, tapec), expected), expected
