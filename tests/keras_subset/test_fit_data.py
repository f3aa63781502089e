"""compile(steps_per_execution=N) and Python generators as the data of fit, evaluate and
predict: the same numbers as one step per execution and as the same batches in arrays."""
import numpy as np
import pytest

from tapec import keras

RNG = np.random.default_rng(4)


@pytest.fixture(autouse=True)
def fresh_random_data():
    global RNG
    RNG = np.random.default_rng(4)


def _model(steps_per_execution=1):
    keras.utils.set_random_seed(2)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh"),
                              keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss="mse", metrics=["mae"],
                  steps_per_execution=steps_per_execution)
    return model


def _data(n=40):
    x = RNG.normal(size=(n, 3)).astype(np.float32)
    return x, (x @ np.array([[1.0], [-2.0], [0.5]])).astype(np.float32)


class Ends(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.ends = []

    def on_train_batch_end(self, batch, logs=None):
        self.ends.append(batch)


def test_steps_per_execution_gives_the_numbers_of_one_step_per_execution():
    x, y = _data()
    one, three = _model(1), _model(3)
    ends = Ends()
    h1 = one.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history
    h3 = three.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0,
                   callbacks=[ends]).history
    # (Two identical models agree to rounding, not bit for bit, with one step per
    # execution too: the compiled programs of a first trace and a cache hit may differ.)
    for name in h1:
        np.testing.assert_allclose(h3[name], h1[name], rtol=1e-6, err_msg=name)
    for a, b in zip(one.get_weights(), three.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert ends.ends == [2, 5, 8, 9] * 2             # 10 batches in groups of 3
    np.testing.assert_allclose(one.evaluate(x, y, batch_size=7, verbose=0),
                               three.evaluate(x, y, batch_size=7, verbose=0), rtol=1e-6)
    np.testing.assert_allclose(one.predict(x, batch_size=7, verbose=0),
                               three.predict(x, batch_size=7, verbose=0), rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="steps_per_execution must be a positive int"):
        _model(0)


def test_a_generator_of_batches_trains_as_the_same_batches_in_arrays():
    x, y = _data()

    def batches():
        while True:
            for start in range(0, 40, 8):
                yield x[start:start + 8].astype(np.float64), y[start:start + 8]

    arrays, streamed = _model(), _model()
    expected = arrays.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0).history
    got = streamed.fit(batches(), steps_per_epoch=5, epochs=3, verbose=0).history
    np.testing.assert_allclose(got["loss"], expected["loss"], rtol=1e-6)
    finite = ((x[s:s + 8], y[s:s + 8]) for s in range(0, 40, 8))
    np.testing.assert_allclose(streamed.evaluate(finite, verbose=0),
                               streamed.evaluate(x, y, verbose=0), rtol=1e-6)
    np.testing.assert_allclose(streamed.predict((x[s:s + 8] for s in range(0, 40, 8)),
                                                verbose=0),
                               streamed.predict(x, verbose=0), rtol=1e-6)


def test_generator_misuse_is_named():
    x, y = _data(8)
    model = _model()
    with pytest.raises(ValueError, match="when x is a generator it holds the batches: y"):
        model.fit(iter([(x, y)]), y)
    with pytest.raises(ValueError, match="no batch in epoch 2"):
        model.fit(iter([(x, y)]), epochs=2, verbose=0)
    with pytest.raises(ValueError, match="validation_split"):
        model.fit(iter([(x, y)]), validation_split=0.5, verbose=0)


@pytest.mark.parametrize("name, words", [("mixed_precision", "dtype policies"),
                                         ("ops", "keras.ops is not implemented"),
                                         ("backend", "keras.backend is not implemented")])
def test_absent_keras_namespaces_say_what_to_use(name, words):
    with pytest.raises(AttributeError, match=words):
        getattr(keras, name)
    with pytest.raises(TypeError, match="dtype policies"):
        keras.layers.Dense(2, dtype="mixed_float16")
