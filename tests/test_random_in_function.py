"""Random ops inside tapec.function: fresh draws at every call, seeded as TensorFlow.

A random op in a trace is a random input of the compiled program, drawn at every call
from the function's own sequences: per call fresh values, the same sequence after the
same `set_seed`, op seeds that follow the eager sequence, and gradients (dropout's)
that use the mask of their own call.
"""
import math

import numpy as np
import pytest

import tapec as tf
from conftest import value
from tapec.export.layout import ExportError

DRAWS = {
    "normal": lambda x: x + tf.random.normal([64], mean=1.0, stddev=2.0),
    "uniform": lambda x: x + tf.random.uniform([64], -1.0, 3.0),
    "truncated_normal": lambda x: x + tf.random.truncated_normal([64]),
    "uniform_int": lambda x: tf.random.uniform([64], 0, 1000, dtype=tf.int32),
    "categorical": lambda x: tf.random.categorical(tf.zeros([2, 50]) + x[:1], 32),
    "shuffle": lambda x: tf.random.shuffle(x),
    "dropout": lambda x: tf.nn.dropout(x, 0.5),
    "gather": lambda x: tf.gather(x, tf.random.uniform([32], 0, 64, dtype=tf.int32)),
}


def _x():
    return tf.constant(np.arange(64, dtype=np.float32) + 1)


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_every_call_draws_fresh_values_from_one_trace(name):
    f = tf.function(DRAWS[name])
    x = _x()
    draws = [value(f(x)) for _ in range(3)]
    assert not np.array_equal(draws[0], draws[1])
    assert not np.array_equal(draws[1], draws[2])
    assert f.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_the_same_set_seed_replays_the_same_sequence_and_tracing_consumes_none(name):
    f = tf.function(DRAWS[name])
    x = _x()
    tf.random.set_seed(11)
    first = [value(f(x)) for _ in range(3)]      # the first call traces
    tf.random.set_seed(11)
    again = [value(f(x)) for _ in range(3)]      # replays only
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    tf.random.set_seed(12)
    assert not np.array_equal(value(f(x)), first[0])


def test_op_seeds_follow_the_eager_sequence_and_two_functions_draw_alike():
    # As TensorFlow: after set_seed, an op with a seed draws in a function what it draws
    # eagerly; unseeded ops draw by their position, so two such functions agree.
    tf.random.set_seed(5)
    eager = [value(tf.random.uniform([4], seed=2)) for _ in range(2)]
    f = tf.function(lambda: tf.random.uniform([4], seed=2))
    tf.random.set_seed(5)
    np.testing.assert_array_equal(value(f()), eager[0])
    np.testing.assert_array_equal(value(f()), eager[1])

    def two_draws():
        return tf.random.normal([3]), tf.random.normal([3])
    f, g = tf.function(two_draws), tf.function(two_draws)
    tf.random.set_seed(5)
    fa, fb = map(value, f())
    ga, gb = map(value, g())
    np.testing.assert_array_equal(fa, ga)
    np.testing.assert_array_equal(fb, gb)
    assert not np.array_equal(fa, fb)       # each op has its own sequence


def test_seeding_properties_match_tensorflow():
    tf_real = pytest.importorskip("tensorflow")
    for lib in (tf_real, tf):
        def two_draws():
            return lib.random.uniform([3]), lib.random.uniform([3], seed=4)
        lib.random.set_seed(9)
        f, g = lib.function(two_draws), lib.function(two_draws)
        calls = [[np.asarray(t) for t in f()] for _ in range(2)]
        assert not np.array_equal(calls[0][0], calls[1][0])          # fresh per call
        np.testing.assert_array_equal(np.asarray(g()[0]), calls[0][0])  # alike
        lib.random.set_seed(9)
        np.testing.assert_array_equal(np.asarray(f()[1]), calls[0][1])  # replayed
        lib.random.set_seed(9)
        eager = np.asarray(lib.random.uniform([3], seed=4))
        np.testing.assert_array_equal(eager, calls[0][1])            # op seed as eager


def test_distributions_drawn_in_a_function_have_their_moments():
    n = 200_000

    @tf.function
    def draws():
        return (tf.random.normal([n], mean=2.0, stddev=3.0, dtype=tf.float64),
                tf.random.uniform([n], 1.0, 5.0, dtype=tf.float64),
                tf.random.truncated_normal([n], stddev=2.0, dtype=tf.float64),
                tf.random.categorical(tf.math.log([[0.2, 0.3, 0.5]]), n))
    normal, uniform, truncated, classes = map(value, draws())
    tolerance = 5 / math.sqrt(n)                       # 5 standard errors
    assert abs(normal.mean() - 2.0) < 3.0 * tolerance
    assert abs(normal.std() - 3.0) < 3.0 * tolerance * 2
    assert 1.0 <= uniform.min() and uniform.max() < 5.0
    assert abs(uniform.mean() - 3.0) < 4 / math.sqrt(12) * tolerance
    # a standard normal truncated to [-2, 2] has variance 1 - 4 phi(2) / (2 Phi(2) - 1)
    phi = math.exp(-2) / math.sqrt(2 * math.pi)
    mass = math.erf(2 / math.sqrt(2))
    assert np.abs(truncated).max() <= 4.0
    assert abs(truncated.std() - 2.0 * math.sqrt(1 - 4 * phi / mass)) < 2 * tolerance
    frequencies = np.bincount(classes.ravel(), minlength=3) / n
    np.testing.assert_allclose(frequencies, [0.2, 0.3, 0.5], atol=tolerance)


@pytest.mark.parametrize("rate", [0.25, 0.5])
def test_dropout_gradient_is_the_scaled_mask_of_the_same_call(rate):
    @tf.function
    def masked(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.nn.dropout(x, rate)
            total = tf.reduce_sum(y)
        return y, tape.gradient(total, x)
    x = tf.constant(np.linspace(1.0, 2.0, 4000), dtype=tf.float64)
    masks = []
    for _ in range(2):
        y, g = map(value, masked(x))
        kept = g != 0
        np.testing.assert_array_equal(g[kept], 1 / (1 - rate))          # mask / (1 - rate)
        np.testing.assert_allclose(y, value(x) * g, rtol=1e-15)         # same mask as y
        assert abs(kept.mean() - (1 - rate)) < 5 * math.sqrt(rate * (1 - rate) / 4000)
        masks.append(kept)
    assert not np.array_equal(masks[0], masks[1])
    assert masked.experimental_get_tracing_count() == 1


def test_dropout_in_a_train_step_updates_variables_with_each_calls_mask():
    rate, lr = 0.5, 0.1
    w = tf.Variable(np.ones(64, np.float32))
    x = tf.constant(np.linspace(0.5, 1.5, 64, dtype=np.float32))

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            y = tf.nn.dropout(x * w, rate)
            loss = tf.reduce_sum(y)
        g = tape.gradient(loss, w)
        w.assign_sub(lr * g)
        return y, g
    grads = []
    for _ in range(3):
        before = value(w)
        y, g = map(value, step(x))
        kept = y != 0
        np.testing.assert_allclose(g, value(x) * kept / (1 - rate), rtol=1e-6)
        np.testing.assert_allclose(value(w), before - lr * g, rtol=1e-6)
        grads.append(g)
    assert not np.array_equal(grads[0], grads[1])
    assert step.experimental_get_tracing_count() == 1


def test_dropout_noise_shape_and_none_dimensions_serve_every_size_from_one_trace():
    @tf.function(input_signature=[tf.TensorSpec([None, 6], tf.float32)])
    def f(x):
        return tf.nn.dropout(x, 0.5)
    for n in (4, 7, 10, 3):
        out = value(f(tf.ones([n, 6])))
        assert out.shape == (n, 6) and set(np.unique(out)) <= {0.0, 2.0}
    assert f.experimental_get_tracing_count() == 1
    rows = tf.function(lambda x: tf.nn.dropout(x, 0.5, noise_shape=[None, 1]))
    out = value(rows(tf.ones([40, 5])))
    assert (out == out[:, :1]).all()


def test_shapes_computed_by_the_program_are_read_at_every_call():
    # tf.shape(x) of a None dimension: the draw takes each call's size, with no retrace
    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def f(x):
        noise = tf.random.normal(tf.shape(x)) + tf.random.uniform([tf.shape(x)[0], 1])
        return noise, tf.nn.dropout(x, 0.5, noise_shape=[tf.shape(x)[0], 1])
    previous = None
    for n in (4, 7, 10, 3, 7):
        noise, rows = map(value, f(tf.ones([n, 3])))
        assert noise.shape == rows.shape == (n, 3)
        assert (rows == rows[:, :1]).all() and set(np.unique(rows)) <= {0.0, 2.0}
        assert previous is None or not np.array_equal(noise[:3], previous[:3])
        previous = noise
    assert f.experimental_get_tracing_count() == 1


def test_random_ops_of_a_nested_function_draw_at_every_inner_call():
    inner = tf.function(lambda x: x + tf.random.uniform([8]))

    @tf.function
    def outer(x):
        return inner(x), inner(x)
    x = tf.zeros([8])
    a1, b1 = map(value, outer(x))
    a2, b2 = map(value, outer(x))
    assert not np.array_equal(a1, b1) and not np.array_equal(a1, a2)


def test_a_function_called_under_a_tape_differentiates_its_own_draw():
    f = tf.function(lambda x: tf.nn.dropout(x, 0.5))
    x = tf.ones([256])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    np.testing.assert_array_equal(value(tape.gradient(y, x)), value(y))


def test_functional_forms_draw_at_every_call_and_differentiate_that_draw():
    x = tf.constant(np.linspace(1.0, 2.0, 500))
    value_and_grad = tf.value_and_grad(lambda x: tf.reduce_sum(tf.nn.dropout(x, 0.5)))
    (v1, g1), (v2, g2) = value_and_grad(x), value_and_grad(x)
    assert not np.array_equal(value(g1), value(g2))
    np.testing.assert_allclose(value(v1), np.sum(value(g1) * value(x)), rtol=1e-12)
    hessian = tf.hessian(lambda x: tf.reduce_sum(tf.random.normal([3], dtype=tf.float64)
                                                 * x * x))
    h1, h2 = value(hessian(tf.ones([3], tf.float64))), value(hessian(tf.ones([3],
                                                                          tf.float64)))
    assert np.count_nonzero(h1 - np.diag(np.diag(h1))) == 0
    assert not np.array_equal(h1, h2)
    jacobian = tf.jacobian(lambda x: tf.nn.dropout(x, 0.5))
    j = value(jacobian(tf.ones([50])))
    assert set(np.unique(np.diag(j))) <= {0.0, 2.0}
    assert not np.array_equal(j, value(jacobian(tf.ones([50]))))


def test_python_reading_a_random_value_while_tracing_is_refused_clearly():
    f = tf.function(lambda x: x if tf.random.uniform([]) > 0.5 else -x)
    with pytest.raises(TypeError, match="read the value of a random tensor"):
        f(tf.ones([2]))
    index = tf.function(lambda x: x[tf.random.uniform([], 0, 2, dtype=tf.int32)])
    with pytest.raises(TypeError, match="tf.gather for an index"):
        index(tf.ones([2]))
    shape_only = tf.function(lambda x: x * float(tf.shape(tf.random.uniform([3, 2]))[0]))
    np.testing.assert_array_equal(value(shape_only(tf.ones([2]))), [3.0, 3.0])


def test_export_and_saved_model_refuse_a_function_that_draws(tmp_path):
    with pytest.raises(ExportError, match=r"tapec\.nn\.dropout"):
        tf.export(lambda x: tf.nn.dropout(x, 0.5), (np.ones(3, np.float32),),
                  tmp_path / "m.py", jacobian=True)

    class Noisy(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([3], tf.float32)])
        def __call__(self, x):
            return x + tf.random.normal([3])
    with pytest.raises(ExportError, match=r"tapec\.random\.normal"):
        tf.saved_model.save(Noisy(), tmp_path / "saved")


def test_a_random_tensor_drawn_outside_is_captured_as_traced():
    noise = tf.random.normal([4])
    f = tf.function(lambda x: x + noise)
    np.testing.assert_array_equal(value(f(tf.zeros([4]))), value(f(tf.zeros([4]))))
