"""tf.print inside tapec.function: part of the program, as in TensorFlow's graph mode.

Nothing prints while tracing; every call prints the values of that call, in the order
of the function's prints, with the text eager tf.print writes for the same values.
"""
import sys

import numpy as np
import pytest

import tapec as tf
from conftest import value


def _eager_text(capsys, *inputs, **options):
    """What eager tf.print writes for `inputs` (on stderr unless `output_stream`)."""
    capsys.readouterr()
    tf.print(*inputs, **options)
    captured = capsys.readouterr()
    return captured.out + captured.err


def test_every_call_prints_its_own_values(capsys):
    @tf.function
    def f(x):
        tf.print("x =", x, "doubled:", 2 * x)
        return x + 1
    for k in range(3):
        x = tf.constant([k, k + 0.5])
        np.testing.assert_array_equal(value(f(x)), value(x) + 1)
        printed = capsys.readouterr()
        assert printed.out == ""
        assert printed.err == _eager_text(capsys, "x =", x, "doubled:", 2 * x)
    assert f.experimental_get_tracing_count() == 1


def test_prints_come_in_program_order_on_their_streams(capsys, tmp_path):
    log = tmp_path / "log.txt"

    @tf.function
    def f(x):
        tf.print("first", x, output_stream=sys.stdout)
        y = x * x
        tf.print("second", y, output_stream=sys.stdout, sep="|", end=";\n")
        tf.print("to the file", y, output_stream=f"file://{log}")
        tf.print("third", tf.reduce_sum(y), output_stream=sys.stdout)
        return y
    f(tf.constant([1.0, 2.0]))
    f(tf.constant([3.0, 4.0]))
    assert capsys.readouterr().out == ("first [1 2]\nsecond|[1 4];\nthird 5\n"
                                       "first [3 4]\nsecond|[9 16];\nthird 25\n")
    assert log.read_text() == "to the file [1 4]\nto the file [9 16]\n"


def test_nested_structures_print_as_eagerly(capsys):
    @tf.function
    def f(x):
        tf.print({"b": x, "a": [x * 2, ("label", 3)]}, (x[0],), summarize=2)
        return x
    x = tf.constant(np.arange(7, dtype=np.float32))
    f(x)
    assert capsys.readouterr().err == _eager_text(
        capsys, {"b": x, "a": [x * 2, ("label", 3)]}, (x[0],), summarize=2)


def test_variables_print_their_value_at_that_point_of_the_program(capsys):
    v = tf.Variable(1.0)

    @tf.function
    def step():
        tf.print("before", v)
        v.assign_add(1.0)
        tf.print("after", v)
    step()
    step()
    assert capsys.readouterr().err == "before 1\nafter 2\nbefore 2\nafter 3\n"


def test_a_train_step_prints_the_loss_of_every_step(capsys):
    w = tf.Variable([1.0, -1.0])
    x = tf.constant([0.5, 2.0])

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum((w * x) ** 2)
        w.assign_sub(0.1 * tape.gradient(loss, w))
        tf.print("loss", loss)
        return loss
    losses = [step() for _ in range(3)]
    printed = capsys.readouterr().err
    assert printed == "".join(_eager_text(capsys, "loss", loss) for loss in losses)
    assert len(set(printed.splitlines())) == 3


def test_prints_of_a_nested_function_keep_their_order(capsys):
    @tf.function
    def inner(x):
        tf.print("inner", x)
        return x + 1

    @tf.function
    def outer(x):
        tf.print("outer", x)
        y = inner(inner(x))
        tf.print("done", y)
        return y
    outer(tf.constant(0))
    outer(tf.constant(10))
    assert capsys.readouterr().err == ("outer 0\ninner 0\ninner 1\ndone 2\n"
                                       "outer 10\ninner 10\ninner 11\ndone 12\n")


def test_none_dimensions_print_each_calls_shape(capsys):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def f(x):
        tf.print(x, tf.shape(x))
        return x
    for n in (2, 3, 5):
        f(tf.ones([n]))
        assert capsys.readouterr().err == f"{[1] * n} [{n}]\n".replace(",", "")


def test_a_retrace_prints_once_per_call(capsys):
    @tf.function
    def f(x):
        tf.print("x", x)
        return x if x > 0 else -x          # a guard: a new sign traces again
    for x in (1.0, -2.0, 3.0):
        f(tf.constant(x))
    assert capsys.readouterr().err == "x 1\nx -2\nx 3\n"


def test_functional_forms_and_calls_under_a_tape_print(capsys):
    def loss(x):
        tf.print("at", x)
        return tf.reduce_sum(x * x)
    x = tf.constant([1.0, 2.0])
    np.testing.assert_array_equal(value(tf.grad(loss)(x)), [2.0, 4.0])
    f = tf.function(loss)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    np.testing.assert_array_equal(value(tape.gradient(y, x)), [2.0, 4.0])
    assert capsys.readouterr().err == "at [1 2]\nat [1 2]\n"


def test_print_and_random_together(capsys):
    @tf.function
    def f():
        noise = tf.random.uniform([3])
        tf.print(noise)
        return noise
    for _ in range(2):
        drawn = f()
        assert capsys.readouterr().err == _eager_text(capsys, drawn)


def test_bad_stream_is_refused_when_traced():
    f = tf.function(lambda x: tf.print(x, output_stream="nowhere"))
    with pytest.raises(ValueError, match="Unsupported output stream"):
        f(tf.constant(1.0))


def test_the_text_of_every_call_is_tensorflows(capfd):
    tf_real = pytest.importorskip("tensorflow")
    printed = []
    for lib in (tf_real, tf):
        @lib.function
        def f(x):
            lib.print("x =", x, {"b": x, "a": [x * 2, ("label", 3)]}, summarize=2)
            lib.print("sum", lib.reduce_sum(x), sep="|", end=";\n")
            return x
        capfd.readouterr()
        f(lib.constant(np.arange(7, dtype=np.float32)))
        f(lib.constant(np.arange(3, dtype=np.float32) + 0.5))
        err = capfd.readouterr().err
        printed.append([line for line in err.splitlines()      # TensorFlow's own logs
                        if not line.startswith(("WARNING", "I0000", "W0000", "E0000"))])
    assert printed[1] == printed[0]
    assert len(printed[1]) == 4
