"""GradientTape.explain: why a gradient is None, one test per reason, and the integer-source
warnings of watch() and gradient()."""
import re
import warnings

import numpy as np
import pytest
from conftest import value

import tapec as tf


def _is_none(message):
    return " is None " in message


# --- (a) the source is not watched ----------------------------------------------------------

def test_tensor_never_watched():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(x * 2.0)
    message = tape.explain(y, x)
    assert tape.gradient(y, x) is None
    assert _is_none(message)
    assert "the tensor [1., 2.] (float32, shape (2,))" in message     # names the source
    assert "not watched by this tape" in message and "tape.watch(x)" in message


def test_unwatched_input_of_a_recorded_op_is_not_watched_as_in_tensorflow():
    x, w = tf.constant([1.0, 2.0]), tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(w)
        y = tf.reduce_sum(x * w)         # recorded because w is watched; x is its input
    message = tape.explain(y, x)
    assert _is_none(message) and "not watched by this tape" in message
    assert "unwatched input of multiply" in message
    assert tape.gradient(y, x) is None


def test_watch_inside_stop_recording_is_explained():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        with tape.stop_recording():
            tape.watch(x)
        y = tf.reduce_sum(x * x)
    message = tape.explain(y, x)
    assert _is_none(message) and "while the tape was not recording" in message
    assert tape.gradient(y, x) is None


def test_non_trainable_variable():
    c = tf.Variable(2.0, trainable=False, name="scale")
    with tf.GradientTape() as tape:
        y = c * 3.0
    message = tape.explain(y, c)
    assert "Variable 'scale:0'" in message
    assert "non-trainable" in message and "tape.watch(v)" in message
    assert tape.gradient(y, c) is None


def test_watch_accessed_variables_false():
    v = tf.Variable([1.0, 2.0], name="w")
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        y = tf.reduce_sum(v * v)
    message = tape.explain(y, v)
    assert "Variable 'w:0'" in message and "watch_accessed_variables=False" in message
    assert tape.gradient(y, v) is None


def test_variable_never_read_while_recording():
    v = tf.Variable(1.0, name="bias")
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    message = tape.explain(y, v)
    assert "Variable 'bias:0'" in message and "never used while the tape was recording" \
        in message


# --- (b) integer and bool sources -----------------------------------------------------------

@pytest.mark.parametrize("make", [lambda: tf.constant([1, 2]),
                                  lambda: tf.Variable([1, 2], name="counts"),
                                  lambda: tf.constant([True, False])])
def test_integer_or_bool_source(make):
    n = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tf.GradientTape() as tape:
            tape.watch(n)
            y = tf.reduce_sum(tf.cast(n, tf.float32) * 2.0)
        message = tape.explain(y, n)
        assert tape.gradient(y, n) is None
    assert _is_none(message)
    assert f"dtype {n.dtype.name}" in message
    assert "tf.cast(x, tf.float32)" in message
    if isinstance(n, tf.Variable):
        assert "Variable 'counts:0'" in message


def test_integer_target():
    x = tf.constant([1.5, 2.5])
    with tf.GradientTape() as tape:
        tape.watch(x)
        k = tf.cast(x, tf.int32) * 2
    message = tape.explain(k, x)
    assert "the target" in message and "int32" in message
    assert tape.gradient(k, x) is None


# --- (c) not on a recorded path -------------------------------------------------------------

def test_target_does_not_depend_on_the_source_names_its_recorded_inputs():
    x, u = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])
    v = tf.Variable(2.0, name="gain")
    with tf.GradientTape() as tape:
        tape.watch([x, u])
        y = u * v + 1.0
    message = tape.explain(y, x)
    assert "not on any recorded path" in message
    assert "its recorded inputs are the output of multiply (float32, shape (2,)) and the " \
        "constant 1.0" in message
    assert tape.gradient(y, x) is None


def test_target_not_recorded():
    x, z = tf.constant([1.0, 2.0]), tf.constant([5.0, 6.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = z * 2.0                      # computed from an unwatched tensor only
    message = tape.explain(y, x)
    assert "the target, the tensor [10., 12.] (float32, shape (2,)), was not recorded" \
        in message
    assert "stop_recording" not in message      # the tape never stopped recording
    assert tape.gradient(y, x) is None


def test_target_computed_after_the_with_block():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
    y = x * x
    message = tape.explain(y, x)
    assert "after the tape's with block ended" in message
    assert tape.gradient(y, x) is None


def test_target_computed_before_the_tape_started():
    x = tf.constant(3.0)
    y = x * x
    with tf.GradientTape() as tape:
        tape.watch(x)
    assert "before the tape started recording" in tape.explain(y, x)


# --- (d) stop_recording -----------------------------------------------------------------------

def test_target_computed_inside_stop_recording():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        with tape.stop_recording():
            y = tf.reduce_sum(x * x)
    message = tape.explain(y, x)
    assert "inside tape.stop_recording()" in message
    assert "Most likely" in message and "move them out of the stop_recording() block" \
        in message
    assert tape.gradient(y, x) is None


def test_value_from_stop_recording_feeds_an_unrecorded_target():
    x, u = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        with tape.stop_recording():
            h = x * 2.0
        y = tf.reduce_sum(h * u)             # h and u unwatched: y is not recorded
    message = tape.explain(y, x)
    assert "was not recorded" in message
    assert "likely cause" in message and "stop_recording()" in message
    assert tape.gradient(y, x) is None


def test_value_from_stop_recording_feeds_a_recorded_target():
    x, u = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])
    with tf.GradientTape() as tape:
        tape.watch([x, u])
        with tape.stop_recording():
            h = x * 2.0
        y = tf.reduce_sum(h * u)
    message = tape.explain(y, x)
    assert "the unwatched tensor [2., 4.] (float32, shape (2,)), was computed inside " \
        "tape.stop_recording()" in message
    assert "likely cause" in message
    assert tape.gradient(y, x) is None


def test_variable_used_only_inside_stop_recording():
    v = tf.Variable(2.0, name="v")
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        with tape.stop_recording():
            y = v * x
    message = tape.explain(y, v)
    assert "not watched" in message and "stop_recording()" in message


# --- (e) stop_gradient ------------------------------------------------------------------------

def test_every_path_cut_by_stop_gradient():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.stop_gradient(x * 2.0) * 3.0)
    message = tape.explain(y, x)
    assert "goes through tf.stop_gradient" in message
    assert "stop_gradient of the output of multiply (float32, shape (2,))" in message
    assert tape.gradient(y, x) is None


def test_stop_gradient_on_one_path_only_is_connected():
    v = tf.Variable(3.0, name="v")
    with tf.GradientTape() as tape:
        y = v * v + tf.stop_gradient(v) * 2.0
    message = tape.explain(y, v)
    assert "is connected" in message and "some paths go through tf.stop_gradient" in message
    assert value(tape.gradient(y, v)) == 6.0


# --- (f) a used tape --------------------------------------------------------------------------

def test_tape_already_used():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    message = tape.explain(y, x)
    assert "already used" in message and "persistent=True" in message
    with pytest.raises(RuntimeError):
        tape.gradient(y, x)


# --- connected ------------------------------------------------------------------------------

def test_connected_counts_the_recorded_ops():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.tanh(x) * x)
    message = tape.explain(y, x)
    assert message.startswith("The gradient with respect to the tensor [1., 2.]")
    assert "connected through 3 recorded ops (tanh, multiply, reduce_sum)" in message
    assert tape.gradient(y, x) is not None


def test_connected_variable_counts_its_reads():
    v = tf.Variable([1.0, 2.0], name="w")
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(v * v)
    assert "Variable 'w:0' (float32, shape (2,)) is connected through 4 recorded ops " \
        "(read_variable, read_variable, multiply, reduce_sum)" in tape.explain(y, v)


def test_target_is_the_source():
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
    assert "the target is the source itself" in tape.explain(x, x)
    assert value(tape.gradient(x, x)) == 1.0


def test_target_that_is_an_unwatched_source_is_connected():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        pass
    assert "the target is the source itself" in tape.explain(x, x)
    assert value(tape.gradient(x, x)).tolist() == [1.0, 1.0]      # TensorFlow: ones


def test_list_of_targets_is_connected_when_one_is():
    x, u = tf.constant(1.0), tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch([x, u])
        a, b = u * 2.0, x * 3.0
    assert "connected through 1 recorded op (multiply)" in tape.explain([a, b], x)


# --- explain reads the tape only ------------------------------------------------------------

def test_explain_does_not_consume_a_non_persistent_tape():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x * x)
        size, live = len(tape._graph), set(tape._live)
        assert "connected" in tape.explain(y, x)             # inside the with block
        assert len(tape._graph) == size and tape._live == live
        z = y * 2.0                                          # the tape still records
    assert "connected" in tape.explain(z, x)
    assert "connected" in tape.explain(z, x)
    np.testing.assert_allclose(value(tape.gradient(z, x)), [4.0, 8.0])
    with pytest.raises(RuntimeError):
        tape.gradient(z, x)


def test_explain_agrees_with_gradient():
    x, u = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])
    unwatched = tf.constant([5.0, 6.0])
    v = tf.Variable(0.5, name="v")
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, u])
        with tape.stop_recording():
            paused = x * 2.0
        mid = x * u
        targets = [tf.reduce_sum(x * u), u * 2.0, tf.stop_gradient(x) * v, paused,
                   tf.reduce_sum(x) + v, x, u * unwatched, unwatched * 2.0,
                   tf.reduce_sum(paused * u), tf.stop_gradient(u * v) + x, mid * 2.0, v,
                   [mid, u * 3.0]]
    after = x * 5.0
    for target in targets + [after]:
        for source in (x, u, v, unwatched, paused, mid):
            message = tape.explain(target, source)
            none = tape.gradient(target, source) is None
            assert none == _is_none(message), message


def test_explain_rejects_bad_arguments():
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
    with pytest.raises(TypeError, match="explain: source"):
        tape.explain(y, "x")
    with pytest.raises(TypeError, match="explain: target"):
        tape.explain(None, x)
    with pytest.raises(TypeError, match="explain: target"):
        tape.explain([y, 3.0], x)
    assert "empty list" in tape.explain([], x)
    assert value(tape.gradient(y, x)) == 2.0


# --- integer watch and gradient warnings ----------------------------------------------------

def test_watching_an_integer_tensor_warns_with_a_cast_suggestion():
    n = tf.constant([1, 2])
    with tf.GradientTape() as tape, pytest.warns(
            UserWarning, match=r"the tensor \[1, 2\] \(int32, shape \(2,\)\).*"
                               r"tf\.cast\(x, tf\.float32\)"):
        tape.watch(n)


def test_watching_an_integer_variable_warns_naming_it():
    v = tf.Variable([1, 2], name="steps")
    with tf.GradientTape() as tape, pytest.warns(UserWarning,
                                                 match="Variable 'steps:0'.*int32"):
        tape.watch(v)


def test_watching_a_float_tensor_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with tf.GradientTape() as tape:
            tape.watch([tf.constant(1.0), tf.Variable(2.0)])


def test_gradient_with_integer_sources_warns_once_per_call():
    n, b, x = tf.constant(3), tf.constant(True), tf.constant(1.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * 2.0
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert tape.gradient(y, [x, n, b])[1:] == [None, None]
        messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
        assert len(messages) == 1
        assert "the tensor 3 (int32, shape ())" in messages[0]
        assert "the tensor True (bool, shape ())" in messages[0]
        assert caught[0].filename == __file__          # points at the caller
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tape.gradient(y, x)                             # a float source: no warning


def test_connected_notes_a_value_computed_inside_stop_recording():
    x, u = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])
    with tf.GradientTape() as tape:
        tape.watch([x, u])
        with tape.stop_recording():
            h = x * 2.0
        y = tf.reduce_sum(h * u + x)
    message = tape.explain(y, x)
    assert "is connected through 2 recorded ops (add, reduce_sum)" in message
    assert "Note: the value the unwatched tensor [2., 4.] (float32, shape (2,)), which the " \
        "target was computed from, was computed inside tape.stop_recording()" in message
    np.testing.assert_allclose(value(tape.gradient(y, x)), [1.0, 1.0])


def test_a_value_converted_to_numpy_warns_once_and_explain_names_the_line():
    x = tf.constant(1.5)
    with pytest.warns(UserWarning, match="converted to a NumPy array") as caught:
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = tf.reduce_sum(np.mean([x, x * 2]))          # NumPy converts the list
            z = tf.constant(np.asarray(x * 3)) * 2.0
    assert len([w for w in caught if "NumPy array" in str(w.message)]) == 1   # once
    assert caught[0].filename == __file__
    assert tape.gradient(y, x) is None
    # NumPy reads the 0-d tensors of the list with float(); the line is the test's
    assert re.search(r"(np\.asarray / np\.array|float\(\)) at " + re.escape(__file__),
                     tape.explain(y, x))
    message = tape.explain(z, x)
    assert "np.asarray / np.array at " + __file__ in message
    assert "computed from the source" in message
