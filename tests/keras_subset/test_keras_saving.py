"""save_weights/load_weights (.weights.npz) and model.save/keras.models.load_model
(.keras zips) round trips, and the errors for what tapec does not save."""
import zipfile

import numpy as np
import pytest

import tapec as tf
from tapec import keras

rng = np.random.default_rng(2)


def _functional():
    a = keras.Input(shape=(3,), name="a")
    b = keras.Input(shape=(2,), name="b")
    shared = keras.layers.Dense(4, kernel_regularizer=keras.regularizers.L2(0.01))
    h = shared(a) + 2.0 * keras.layers.Dense(4, activation="relu",
                                             kernel_initializer="he_normal")(b)
    out = keras.layers.Dense(1, name="head")(keras.layers.Dropout(0.3)(h))
    return keras.Model({"a": a, "b": b}, [out, shared(shared(a)[:, :3])])


def _inputs():
    return {"a": rng.normal(size=(4, 3)).astype(np.float32),
            "b": rng.normal(size=(4, 2)).astype(np.float32)}


def _assert_same_outputs(first, second, x):
    for y1, y2 in zip(tf.nest.flatten(first(x)), tf.nest.flatten(second(x))):
        np.testing.assert_array_equal(y1.numpy(), y2.numpy())


def test_weights_round_trip(tmp_path):
    model = keras.Sequential([keras.Input(shape=(5,)), keras.layers.Dense(3),
                              keras.layers.Dense(2)])
    copy = keras.Sequential([keras.Input(shape=(5,)), keras.layers.Dense(3),
                             keras.layers.Dense(2)])
    path = tmp_path / "m.weights.npz"
    model.save_weights(path)
    copy.load_weights(path)
    for w1, w2 in zip(model.get_weights(), copy.get_weights()):
        np.testing.assert_array_equal(w1, w2)
    wrong = keras.Sequential([keras.Input(shape=(5,)), keras.layers.Dense(4),
                              keras.layers.Dense(2)])
    with pytest.raises(ValueError, match="has shape"):
        wrong.load_weights(path)
    with pytest.raises(ValueError, match="holds 4 weights"):
        keras.Sequential([keras.Input(shape=(5,)), keras.layers.Dense(2)]).load_weights(path)
    with pytest.raises(ValueError, match=r"\.weights\.npz"):
        model.save_weights(tmp_path / "m.weights.h5")


@pytest.mark.parametrize("kind", ["sequential", "functional"])
def test_model_round_trip(tmp_path, kind):
    if kind == "sequential":
        model = keras.Sequential([keras.Input(shape=(6,)),
                                  keras.layers.Dense(4, activation="tanh"),
                                  keras.layers.Reshape((2, 2)), keras.layers.Flatten(),
                                  keras.layers.Activation("softmax"),
                                  keras.layers.Dense(3, use_bias=False)], name="seq")
        x = rng.normal(size=(2, 6)).astype(np.float32)
    else:
        model, x = _functional(), _inputs()
    path = tmp_path / "model.keras"
    model.save(path)
    assert zipfile.is_zipfile(path)
    loaded = keras.models.load_model(path)
    assert type(loaded) is type(model) and loaded.name == model.name
    assert [layer.name for layer in loaded.layers] == [layer.name for layer in model.layers]
    _assert_same_outputs(model, loaded, x)
    assert len(loaded.losses) == len(model.losses)


def test_embedding_model_round_trip(tmp_path):
    model = keras.Sequential([keras.Input(shape=(4,), dtype="int32"),
                              keras.layers.Embedding(10, 3), keras.layers.Flatten(),
                              keras.layers.Dense(1)])
    model.save(tmp_path / "e.keras")
    loaded = keras.models.load_model(tmp_path / "e.keras")
    x = np.array([[1, 2, 3, 9]], np.int32)
    np.testing.assert_array_equal(model(x).numpy(), loaded(x).numpy())


def test_custom_layer_needs_custom_objects(tmp_path):
    class Scale(keras.layers.Layer):
        def __init__(self, factor=2.0, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def call(self, x):
            return x * self.factor

        def get_config(self):
            return {**super().get_config(), "factor": self.factor}

    model = keras.Sequential([keras.Input(shape=(2,)), Scale(3.0)])
    model.save(tmp_path / "c.keras")
    with pytest.raises(ValueError, match="custom_objects"):
        keras.models.load_model(tmp_path / "c.keras")
    loaded = keras.models.load_model(tmp_path / "c.keras", custom_objects={"Scale": Scale})
    np.testing.assert_array_equal(loaded(np.ones((1, 2), np.float32)).numpy(), [[3.0, 3.0]])


def test_what_is_not_saved_says_so(tmp_path):
    class Sub(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(1)

        def call(self, x):
            return self.dense(x)

    sub = Sub()
    sub(np.ones((1, 2), np.float32))
    with pytest.raises(NotImplementedError, match="subclassed"):
        sub.save(tmp_path / "s.keras")
    sub.save_weights(tmp_path / "s.weights.npz")        # weights alone are fine
    lam = keras.Sequential([keras.Input(shape=(2,)), keras.layers.Lambda(lambda t: t * 2)])
    with pytest.raises(NotImplementedError, match="Lambda"):
        lam.save(tmp_path / "l.keras")
    with pytest.raises(ValueError, match=r"\.keras"):
        lam.save(tmp_path / "l.h5")
    with zipfile.ZipFile(tmp_path / "keras_own.keras", "w") as archive:
        archive.writestr("config.json", "{}")
        archive.writestr("model.weights.h5", b"")
    with pytest.raises(ValueError, match="not written by tapec"):
        keras.models.load_model(tmp_path / "keras_own.keras")


def test_clone_model_has_the_architecture_and_fresh_weights():
    model = _functional()
    clone = keras.models.clone_model(model)
    assert [type(layer) for layer in clone.layers] == [type(layer) for layer in model.layers]
    assert [tuple(w.shape) for w in clone.weights] == [tuple(w.shape) for w in model.weights]
    assert not np.array_equal(clone.weights[0].numpy(), model.weights[0].numpy())
    rebuilt = keras.models.model_from_json(model.to_json())
    assert [layer.get_config() for layer in rebuilt.layers] == \
        [layer.get_config() for layer in model.layers]


def test_nested_and_unbuilt_models_round_trip(tmp_path):
    inner = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(3, activation="relu")],
                             name="inner")
    inputs = keras.Input(shape=(4,))
    model = keras.Model(inputs, keras.layers.Dense(1)(inner(inputs)))
    model.save(tmp_path / "nested.keras")
    loaded = keras.models.load_model(tmp_path / "nested.keras")
    assert type(loaded.get_layer("inner")) is keras.Sequential
    x = rng.normal(size=(2, 4)).astype(np.float32)
    np.testing.assert_array_equal(model(x).numpy(), loaded(x).numpy())
    unbuilt = keras.Sequential([keras.layers.Dense(3)])
    unbuilt.save(tmp_path / "unbuilt.keras")
    again = keras.models.load_model(tmp_path / "unbuilt.keras")
    assert not again.built and again(np.ones((1, 2), np.float32)).shape == (1, 3)
