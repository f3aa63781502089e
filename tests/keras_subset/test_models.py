"""keras.Sequential, the functional Model(inputs, outputs), subclassed models, summary(),
get_layer, and a whole train step traced once by tapec.function."""
import numpy as np
import pytest

import tapec as tf
from tapec import keras

rng = np.random.default_rng(1)


@pytest.fixture(autouse=True)
def fresh_names():
    keras.utils.clear_session()
    yield


def _mlp():
    return keras.Sequential([keras.Input(shape=(4,)),
                             keras.layers.Dense(8, activation="relu", name="hidden"),
                             keras.layers.Dropout(0.5),
                             keras.layers.Dense(1)])


def test_sequential_builds_from_input_and_computes_the_composition():
    model = _mlp()
    assert model.built and [layer.name for layer in model.layers] == ["hidden", "dropout",
                                                                      "dense"]
    assert model.count_params() == 4 * 8 + 8 + 8 + 1
    x = rng.normal(size=(3, 4)).astype(np.float32)
    k1, b1, k2, b2 = model.get_weights()
    want = np.maximum(x @ k1 + b1, 0) @ k2 + b2
    np.testing.assert_allclose(model(x).numpy(), want, rtol=1e-5, atol=1e-6)
    assert model.output_shape == (None, 1) and model.input_shape == (None, 4)


def test_sequential_build_paths():
    by_argument = keras.Sequential([keras.layers.Dense(2, input_shape=(3,))])
    assert by_argument.built and by_argument.layers[0].kernel.shape == (3, 2)
    deferred = keras.Sequential([keras.layers.Dense(2)])
    assert not deferred.built
    deferred(np.ones((5, 3), np.float32))
    assert deferred.built and deferred.layers[0].kernel.shape == (3, 2)
    explicit = keras.Sequential()
    explicit.add(keras.layers.Dense(2))
    explicit.build((None, 6))
    assert explicit.layers[0].kernel.shape == (6, 2)


def test_sequential_add_and_pop():
    model = keras.Sequential()
    model.add(keras.Input(shape=(3,)))
    model.add(keras.layers.Dense(4))
    model.add(keras.layers.Dense(2))
    assert model.output_shape == (None, 2)
    popped = model.pop()
    assert popped.units == 2 and model.output_shape == (None, 4)
    with pytest.raises(ValueError, match="Only instances of `keras.Layer`"):
        model.add("dense")


def test_functional_multiple_inputs_and_outputs():
    a_in, b_in = keras.Input(shape=(3,), name="a"), keras.Input(shape=(2,), name="b")
    shared = keras.layers.Dense(4, name="shared")
    h = shared(a_in) + keras.layers.Dense(4, name="side")(b_in)
    out = keras.layers.Dense(1, name="head")(h)
    model = keras.Model([a_in, b_in], {"out": out, "hidden": h})
    assert [layer.name for layer in model.layers][:2] == ["a", "b"]
    a, b = rng.normal(size=(5, 3)).astype(np.float32), rng.normal(size=(5, 2)).astype(np.float32)
    result = model([a, b])
    ks, bs = shared.get_weights()
    kside, bside = model.get_layer("side").get_weights()
    kh, bh = model.get_layer("head").get_weights()
    hidden = a @ ks + bs + b @ kside + bside
    np.testing.assert_allclose(result["hidden"].numpy(), hidden, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(result["out"].numpy(), hidden @ kh + bh, rtol=1e-5, atol=1e-6)
    by_name = model({"a": a, "b": b})
    np.testing.assert_allclose(by_name["out"].numpy(), result["out"].numpy())


def test_functional_shared_layer_and_nested_model():
    inputs = keras.Input(shape=(3,))
    dense = keras.layers.Dense(3, activation="tanh")
    inner = keras.Model(inputs, dense(dense(inputs)))      # one layer called twice
    assert len(inner.weights) == 2
    outer_in = keras.Input(shape=(3,))
    outer = keras.Model(outer_in, keras.layers.Dense(1)(inner(outer_in)))
    x = rng.normal(size=(2, 3)).astype(np.float32)
    k, b = dense.get_weights()
    k2, b2 = outer.layers[-1].get_weights()
    want = np.tanh(np.tanh(x @ k + b) @ k + b) @ k2 + b2
    np.testing.assert_allclose(outer(x).numpy(), want, rtol=1e-5, atol=1e-6)
    assert len(outer.trainable_weights) == 4


def test_functional_layer_order_matches_keras():
    tf_real = pytest.importorskip("tensorflow")

    def build(k):
        i = k.Input(shape=(3,), name="x")
        a = k.layers.Dense(4, name="a")(i)
        b = k.layers.Dense(4, name="b")(i)
        c = k.layers.Dense(4, name="c")(a)
        return k.Model(i, k.layers.Dense(2, name="d")(c) if False else [c, b])

    ours, theirs = build(keras), build(tf_real.keras)
    assert [layer.name for layer in ours.layers] == [layer.name for layer in theirs.layers]


def test_graph_disconnected_and_bad_inputs():
    a, b = keras.Input(shape=(2,)), keras.Input(shape=(2,))
    total = a + b
    with pytest.raises(ValueError, match="Graph disconnected"):
        keras.Model(a, total)
    with pytest.raises(ValueError, match="KerasTensors"):
        keras.Model(a, np.ones(2))
    with pytest.raises(TypeError, match="symbolic"):
        np.asarray(a)


def test_keras_tensor_arithmetic_records_operations():
    x_in = keras.Input(shape=(2,))
    model = keras.Model(x_in, 1.0 - 2.0 * x_in ** 2 / 4.0)
    x = np.array([[1.0, 3.0]], np.float32)
    np.testing.assert_allclose(model(x).numpy(), 1.0 - 2.0 * x ** 2 / 4.0)
    sliced = keras.Model(x_in, x_in[:, :1])
    np.testing.assert_array_equal(sliced(x).numpy(), [[1.0]])


class TwoLayers(keras.Model):
    def __init__(self):
        super().__init__()
        self.second = keras.layers.Dense(2)
        self.first = keras.layers.Dense(3)
        self.dropout = keras.layers.Dropout(0.5)

    def call(self, x, training=None):
        return self.second(self.dropout(self.first(x)))


def test_subclassed_model_tracks_layers():
    model = TwoLayers()
    assert model.name == "two_layers"
    x = rng.normal(size=(4, 5)).astype(np.float32)
    y = model(x)
    assert y.shape == (4, 2) and len(model.weights) == 4
    assert [layer.name for layer in model.layers] == ["dense", "dense_1", "dropout"]
    assert model.get_layer(index=1) is model.first
    with pytest.raises(ValueError, match="No such layer"):
        model.get_layer("nope")


def _summary_text(model):
    lines = []
    model.summary(print_fn=lambda text, **kwargs: lines.append(text))
    return "\n".join(lines).rstrip("\n")


def test_summary_lists_layers_shapes_and_counts():
    text = _summary_text(_mlp())
    assert 'Model: "sequential"' in text
    assert "│ hidden (Dense)                  │ (None, 8)              │            40 │" \
        in text
    assert " Total params: 49 (196.00 B)" in text
    assert " Non-trainable params: 0 (0.00 B)" in text
    assert "0 (unbuilt)" in _summary_text(keras.Sequential([keras.layers.Dense(1)]))


def test_summary_matches_keras():
    tf_real = pytest.importorskip("tensorflow")

    def sequential(k):
        return k.Sequential([k.Input(shape=(4,)),
                             k.layers.Dense(8, activation="relu", name="hidden"),
                             k.layers.Dropout(0.5, name="drop"),
                             k.layers.Dense(2000, name="a_rather_long_layer_name_for_wrapping")],
                            name="mlp")

    def functional(k):
        i = k.Input(shape=(3,), name="x")
        j = k.Input(shape=(2,), name="input_with_a_long_name")
        a = k.layers.Dense(4, name="a")(i)
        b = k.layers.Dense(4, name="b")(j)
        c = k.layers.Dense(4, name="c")(a)
        return k.Model([i, j], [c, b], name="branches")

    for build in (sequential, functional):
        ours, theirs = _summary_text(build(keras)), _summary_text(build(tf_real.keras))
        assert ours == theirs


@pytest.mark.parametrize("kind", ["sequential", "functional", "subclassed"])
def test_train_step_traced_once(kind):
    keras.utils.set_random_seed(0)
    if kind == "sequential":
        model = keras.Sequential([keras.Input(shape=(3,)),
                                  keras.layers.Dense(4, activation="tanh"),
                                  keras.layers.Dense(1)])
    elif kind == "functional":
        inputs = keras.Input(shape=(3,))
        model = keras.Model(inputs, keras.layers.Dense(1)(
            keras.layers.Dense(4, activation="tanh")(inputs)))
    else:
        model = TwoLayers()
    initial = [w.numpy() for w in model.weights] if model.built else None

    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x, training=False) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        for variable, grad in zip(model.trainable_variables, grads):
            variable.assign_sub(0.1 * grad)
        return loss

    traced = tf.function(step)
    x = rng.normal(size=(8, 3 if kind != "subclassed" else 5)).astype(np.float32)
    y = rng.normal(size=(8, 1 if kind != "subclassed" else 2)).astype(np.float32)
    traced_losses = [float(traced(x, y)) for _ in range(3)]
    assert traced.experimental_get_tracing_count() == 1
    after_traced = [w.numpy() for w in model.weights]
    # the same three steps eagerly, from the same start
    for variable, value in zip(model.weights, initial or after_traced):
        variable.assign(value)
    if initial is None:
        return
    eager_losses = [float(step(x, y)) for _ in range(3)]
    np.testing.assert_allclose(traced_losses, eager_losses, rtol=1e-5)
    for variable, value in zip(model.weights, after_traced):
        np.testing.assert_allclose(variable.numpy(), value, rtol=1e-5, atol=1e-6)
    assert traced_losses[2] < traced_losses[0]


def test_model_built_first_inside_a_trace_keeps_its_weights():
    model = keras.Sequential([keras.layers.Dense(2)])
    traced = tf.function(lambda x: model(x))
    x = np.ones((1, 3), np.float32)
    first = traced(x).numpy()
    kernel = model.layers[0].kernel.numpy()
    np.testing.assert_allclose(first, x @ kernel, rtol=1e-5, atol=1e-6)
    model.layers[0].kernel.assign(np.zeros((3, 2), np.float32))
    np.testing.assert_array_equal(traced(x).numpy(), np.zeros((1, 2)))
    assert traced.experimental_get_tracing_count() == 1


def test_feature_extractor_from_layer_outputs():
    model = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(4, name="features"),
                              keras.layers.Dense(1)])
    model.add(keras.layers.Dense(2))         # a rebuild: the layers' outputs follow it
    extractor = keras.Model(model.input, model.get_layer("features").output)
    x = rng.normal(size=(2, 3)).astype(np.float32)
    k, b = model.get_layer("features").get_weights()
    np.testing.assert_allclose(extractor(x).numpy(), x @ k + b, rtol=1e-5, atol=1e-6)
    shared = keras.layers.Dense(1)
    a_in = keras.Input(shape=(1,))
    shared(shared(a_in))
    with pytest.raises(AttributeError, match="multiple inbound nodes"):
        _ = shared.output


def test_subclassed_model_build_creates_weights():
    model = TwoLayers()
    model.build((None, 5))
    assert [tuple(w.shape) for w in model.weights] == [(3, 2), (2,), (5, 3), (3,)]
    assert "│ dense (Dense)                   │ ?" in _summary_text(model)


def test_models_match_keras_with_the_same_weights():
    tf_real = pytest.importorskip("tensorflow")

    def sequential(k):
        return k.Sequential([k.Input(shape=(5,), dtype="int32"), k.layers.Embedding(20, 4),
                             k.layers.Flatten(), k.layers.Dense(6, activation="selu"),
                             k.layers.Dropout(0.3), k.layers.Reshape((3, 2)),
                             k.layers.Activation("softmax")])

    def functional(k):
        a, b = k.Input(shape=(3,)), k.Input(shape=(3,))
        shared = k.layers.Dense(3, activation="elu")
        h = k.layers.Dense(2, activation="gelu")(shared(a) * 2.0 - shared(b))
        return k.Model([a, b], [h, shared(b)])

    x_seq = rng.integers(0, 20, size=(4, 5)).astype(np.int32)
    x_fun = [rng.normal(size=(4, 3)).astype(np.float32) for _ in range(2)]
    for build, x in ((sequential, x_seq), (functional, x_fun)):
        ours, theirs = build(keras), build(tf_real.keras)
        theirs.set_weights(ours.get_weights())
        for got, want in zip(tf.nest.flatten(ours(x)), tf_real.nest.flatten(theirs(x))):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_first_call_of_a_subclassed_model_runs_call_once():
    class Counting(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(1)
            self.calls = 0

        def call(self, x):
            self.calls += 1
            return self.dense(x)

    model = Counting()
    model(np.ones((2, 3), np.float32))
    assert model.calls == 1 and model.built
