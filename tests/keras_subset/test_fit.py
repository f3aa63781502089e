"""Model.compile / fit / evaluate / predict: values against hand computations and against
Keras 3 itself (skipped without TensorFlow), one trace per batch shape, reproducible
shuffling, the progress display and the errors."""
import re

import numpy as np
import pytest

import tapec as tf
from tapec import keras


def data(n=100, d=4, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    return x, (x[:, 0] + 0.5 * x[:, 1] > 0).astype(np.int64)


def mlp(keras_module, weights=None, d=4, hidden=5):
    model = keras_module.Sequential([keras_module.Input(shape=(d,)),
                                     keras_module.layers.Dense(hidden, activation="tanh"),
                                     keras_module.layers.Dense(2, activation="softmax")])
    if weights is not None:
        model.set_weights(weights)
    return model


def initial_weights(d=4, hidden=5, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(d, hidden)).astype(np.float32) * 0.5,
            rng.normal(size=hidden).astype(np.float32) * 0.1,
            rng.normal(size=(hidden, 2)).astype(np.float32) * 0.5,
            np.zeros(2, np.float32)]


def compiled(keras_module=keras, optimizer=None, **kwargs):
    model = mlp(keras_module, initial_weights())
    model.compile(optimizer=optimizer or keras_module.optimizers.Adam(0.05),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"], **kwargs)
    return model


def crossentropy(weights, x, y):
    """Mean sparse categorical crossentropy of the MLP, in float64 NumPy."""
    W1, b1, W2, b2 = (w.astype(np.float64) for w in weights)
    logits = np.tanh(x @ W1 + b1) @ W2 + b2
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    return -np.log(p[np.arange(len(y)), y]), p.argmax(1) == y


# --- values ---------------------------------------------------------------------------------

def test_fit_matches_keras(simplify_mode):
    tf_real = pytest.importorskip("tensorflow")
    if simplify_mode == "off":
        pytest.skip("compared with Keras once (TensorFlow's fit takes seconds); the other "
                    "tests compare tapec's modes with each other")
    x, y = data()
    ours, theirs = compiled(), compiled(tf_real.keras)
    kw = dict(epochs=3, batch_size=32, validation_split=0.2, shuffle=False, verbose=0)
    h_ours, h_theirs = ours.fit(x, y, **kw), theirs.fit(x, y, **kw)
    assert list(h_ours.history) == list(h_theirs.history) == \
        ["accuracy", "loss", "val_accuracy", "val_loss"]
    for key in h_theirs.history:
        np.testing.assert_allclose(h_ours.history[key], h_theirs.history[key], rtol=2e-5,
                                   err_msg=key)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(ours.evaluate(x, y, verbose=0),
                               theirs.evaluate(x, y, verbose=0), rtol=2e-5)
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0),
                               rtol=1e-4, atol=1e-6)
    weights = np.linspace(0.0, 2.0, len(y))
    np.testing.assert_allclose(ours.evaluate(x, y, sample_weight=weights, verbose=0),
                               theirs.evaluate(x, y, sample_weight=weights, verbose=0),
                               rtol=2e-5)


def test_epoch_loss_is_the_mean_over_samples():
    # Learning rate 0: the weights stay, so every batch sees the same model, and the
    # epoch's loss is the mean over all samples (batches weighed by their size).
    x, y = data(n=70)
    model = compiled(optimizer=keras.optimizers.SGD(learning_rate=0.0))
    history = model.fit(x, y, batch_size=32, epochs=2, verbose=0)
    losses, hits = crossentropy(initial_weights(), x.astype(np.float32), y)
    np.testing.assert_allclose(history.history["loss"], [losses.mean()] * 2, rtol=1e-5)
    np.testing.assert_allclose(history.history["accuracy"], [hits.mean()] * 2)
    loss, accuracy = model.evaluate(x, y, batch_size=16, verbose=0)
    np.testing.assert_allclose([loss, accuracy], [losses.mean(), hits.mean()], rtol=1e-5)
    assert model.evaluate(x, y, verbose=0, return_dict=True) == \
        {"accuracy": accuracy, "loss": pytest.approx(loss, rel=1e-6)}
    weights = np.arange(len(y)) % 3
    weighted = model.evaluate(x, y, sample_weight=weights, verbose=0)[0]
    # Keras 3's "sum_over_batch_size" per batch, then the mean over samples.
    per_batch = [np.sum(losses[i:i + 32] * weights[i:i + 32]) / len(losses[i:i + 32])
                 for i in range(0, 70, 32)]
    expected = sum(v * len(losses[i * 32:(i + 1) * 32]) for i, v in enumerate(per_batch)) / 70
    np.testing.assert_allclose(weighted, expected, rtol=1e-5)


def test_one_step_of_sgd_by_hand():
    x, y = data(n=8)
    model = compiled(optimizer=keras.optimizers.SGD(learning_rate=0.1))
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    # The gradient by central differences of the float64 loss.
    start = initial_weights()
    eps = 1e-6
    for index, after in enumerate(model.get_weights()):
        grad = np.zeros(start[index].shape)
        for pos in np.ndindex(grad.shape):
            plus = [w.astype(np.float64) for w in start]
            minus = [w.astype(np.float64) for w in start]
            plus[index][pos] += eps
            minus[index][pos] -= eps
            grad[pos] = (crossentropy(plus, x, y)[0].mean() -
                         crossentropy(minus, x, y)[0].mean()) / (2 * eps)
        np.testing.assert_allclose(after, start[index] - 0.1 * grad, atol=2e-6)


def test_run_eagerly_gives_the_compiled_results():
    x, y = data()
    compiled_model, eager_model = compiled(), compiled(run_eagerly=True)
    h1 = compiled_model.fit(x, y, batch_size=32, epochs=2, shuffle=False, verbose=0)
    h2 = eager_model.fit(x, y, batch_size=32, epochs=2, shuffle=False, verbose=0)
    assert isinstance(compiled_model.train_function, tf.Function)
    assert not isinstance(eager_model.train_function, tf.Function)
    for key in h1.history:
        np.testing.assert_allclose(h1.history[key], h2.history[key], rtol=1e-5)


def test_partial_last_batch_traces_once_not_every_epoch():
    x, y = data(n=100)                     # 32, 32, 32 and a last batch of 4
    model = compiled()
    model.fit(x, y, batch_size=32, epochs=4, verbose=0, validation_data=(x[:10], y[:10]))
    assert model.train_function.experimental_get_tracing_count() == 2
    assert model.test_function.experimental_get_tracing_count() == 1
    model.fit(x, y, batch_size=32, epochs=2, verbose=0)
    assert model.train_function.experimental_get_tracing_count() == 2
    assert int(model.optimizer.iterations) == 6 * 4


def test_shuffled_order_is_seeded_by_tapec_random():
    x, y = data()

    def run(seed):
        tf.random.set_seed(seed)
        return compiled().fit(x, y, batch_size=16, epochs=3, verbose=0).history["loss"]
    assert run(3) == run(3)
    assert run(3) != run(4)


# --- data forms -------------------------------------------------------------------------------

def test_dataset_input_gives_the_array_results():
    x, y = data()
    arrays = compiled().fit(x, y, batch_size=32, epochs=2, shuffle=False, verbose=0,
                            validation_data=(x[:20], y[:20]))
    ds = tf.data.Dataset.from_tensor_slices((x.astype(np.float32), y)).batch(32)
    val = tf.data.Dataset.from_tensor_slices((x[:20].astype(np.float32), y[:20])).batch(8)
    model = compiled()
    dataset = model.fit(ds, epochs=2, verbose=0, validation_data=val)
    for key in arrays.history:
        np.testing.assert_allclose(dataset.history[key], arrays.history[key], rtol=1e-6)
    np.testing.assert_allclose(model.evaluate(ds, verbose=0), model.evaluate(x, y, verbose=0),
                               rtol=1e-6)
    assert model.predict(ds.map(lambda a, b: a), verbose=0).shape == (100, 2)
    with pytest.raises(ValueError, match="must not be given"):
        model.fit(ds, batch_size=32, verbose=0)
    with pytest.raises(ValueError, match="validation_split"):
        model.fit(ds, validation_split=0.2, verbose=0)


def test_validation_split_is_the_last_samples_and_steps_per_epoch():
    x, y = data(n=50)
    model = compiled(optimizer=keras.optimizers.SGD(learning_rate=0.0))
    history = model.fit(x, y, validation_split=0.3, epochs=1, verbose=0)
    val_losses, _ = crossentropy(initial_weights(), x[35:].astype(np.float32), y[35:])
    np.testing.assert_allclose(history.history["val_loss"], [val_losses.mean()], rtol=1e-5)
    model = compiled()
    model.fit(x, y, batch_size=10, steps_per_epoch=3, epochs=4, initial_epoch=1, verbose=0)
    assert int(model.optimizer.iterations) == 9
    with pytest.raises(ValueError, match="not sufficient"):
        model.fit(x[:1], y[:1], validation_split=0.5, verbose=0)
    seen = []
    probe = keras.callbacks.LambdaCallback(on_test_begin=lambda logs: seen.append(len(seen)))
    history = model.fit(x, y, epochs=5, validation_data=(x, y), validation_freq=2,
                        callbacks=[probe], verbose=0)
    assert len(history.history["loss"]) == 5 and len(history.history["val_loss"]) == 2
    history = model.fit(x, y, epochs=5, validation_data=(x, y), validation_freq=[1, 5],
                        verbose=0)
    assert len(history.history["val_loss"]) == 2 and len(seen) == 2


def test_class_weight_is_a_sample_weight_per_class():
    x, y = data()
    model = compiled(optimizer=keras.optimizers.SGD(learning_rate=0.0))
    by_class = model.fit(x, y, class_weight={0: 0.5, 1: 2.0}, shuffle=False, verbose=0)
    model = compiled(optimizer=keras.optimizers.SGD(learning_rate=0.0))
    by_sample = model.fit(x, y, sample_weight=np.where(y == 1, 2.0, 0.5), shuffle=False,
                          verbose=0)
    assert by_class.history == by_sample.history
    with pytest.raises(ValueError, match="no weight for classes"):
        model.fit(x, y, class_weight={0: 1.0}, verbose=0)


# --- custom steps, callbacks, errors ----------------------------------------------------------

class CustomModel(keras.Model):
    """Keras 3's guide "Customizing what happens in fit()": compute_loss and self.metrics."""

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
        gradients = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(gradients, self.trainable_variables)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


def test_custom_train_step_as_in_the_keras_guide():
    x, y = data()
    inputs = keras.Input(shape=(4,))
    hidden = keras.layers.Dense(5, activation="tanh")(inputs)
    custom = CustomModel(inputs, keras.layers.Dense(2, activation="softmax")(hidden))
    custom.set_weights(initial_weights())
    custom.compile(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy",
                   metrics=["accuracy"])
    standard = compiled(optimizer=keras.optimizers.SGD(0.1))
    h_custom = custom.fit(x, y, batch_size=100, epochs=3, verbose=0)
    h_standard = standard.fit(x, y, batch_size=100, epochs=3, verbose=0)
    assert custom.train_function.experimental_get_tracing_count() == 1
    for key in h_standard.history:                 # one batch: batch-size weighting is moot
        np.testing.assert_allclose(h_custom.history[key], h_standard.history[key], rtol=1e-6)


def test_early_stopping_ends_fit_and_restores_the_best_weights():
    x, y = data()
    model = compiled(optimizer=keras.optimizers.SGD(learning_rate=0.5))
    snapshots = []
    keep = keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: snapshots.append(model.get_weights()))
    # val_loss on mislabelled validation data rises as training fits the training data.
    stop = keras.callbacks.EarlyStopping(patience=1, restore_best_weights=True)
    history = model.fit(x, y, epochs=50, verbose=0, callbacks=[keep, stop],
                        validation_data=(x, 1 - y))
    val = history.history["val_loss"]
    assert len(val) == stop.stopped_epoch + 1 < 50
    assert stop.best_epoch == int(np.argmin(val))
    for a, b in zip(model.get_weights(), snapshots[stop.best_epoch]):
        np.testing.assert_array_equal(a, b)
    assert model.history is history


def test_callbacks_see_every_batch_and_stop_training_inside_an_epoch():
    x, y = data()
    model = compiled()
    seen = []

    def on_batch(batch, logs):
        seen.append((batch, sorted(logs)))
        if batch == 1:
            model.stop_training = True
    history = model.fit(x, y, batch_size=10, epochs=3, verbose=0,
                        callbacks=[keras.callbacks.LambdaCallback(on_train_batch_end=on_batch)])
    assert seen == [(0, ["accuracy", "loss"]), (1, ["accuracy", "loss"])]
    assert len(history.history["loss"]) == 1


def test_progress_output(capsys):
    x, y = data()
    model = compiled()
    model.fit(x, y, epochs=2, verbose=0)
    assert capsys.readouterr().out == ""
    model.fit(x, y, epochs=2, verbose=2, validation_split=0.2)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Epoch 1/2" and lines[2] == "Epoch 2/2" and len(lines) == 4
    assert re.fullmatch(r"3/3 - \d+s - \d+[mu]?s/step - accuracy: \d\.\d{4} - loss: "
                        r"\d\.\d{4} - val_accuracy: \d\.\d{4} - val_loss: \d\.\d{4}", lines[1])
    model.fit(x, y, epochs=1, verbose=1)            # captured output is not a terminal
    (line,) = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"4/4 ━{20} \d+s \d+[mu]?s/step - accuracy: \d\.\d{4} - loss: "
                        r"\d\.\d{4}", line)
    model.evaluate(x, y)
    assert re.fullmatch(r"4/4 ━{20} .* - accuracy: \d\.\d{4} - loss: \d\.\d{4}\n",
                        capsys.readouterr().out)


def test_errors_name_the_mistake():
    x, y = data()
    model = mlp(keras, initial_weights())
    with pytest.raises(RuntimeError, match="compile"):
        model.fit(x, y, verbose=0)
    model.compile(optimizer="sgd")
    with pytest.raises(ValueError, match="No loss to compute"):
        model.fit(x, y, verbose=0)
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match="cardinality"):
        model.fit(x, y[:10], verbose=0)
    with pytest.raises(ValueError, match="verbose"):
        model.fit(x, y, verbose=3)
    with pytest.raises(ValueError, match="batch_size"):
        model.fit(x, y, batch_size=0, verbose=0)


def test_batch_normalization_statistics_are_updated_by_every_traced_step():
    # Moving mean after the steps: m <- 0.99 m + 0.01 batch_mean, batch by batch in order.
    x = np.random.default_rng(3).normal(size=(40, 3)) * 2 + 1
    y = x.sum(axis=1, keepdims=True)
    model = keras.Sequential([keras.Input(shape=(3,)), keras.layers.BatchNormalization(),
                              keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss="mse")
    model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    expected = np.zeros(3)
    for _ in range(2):
        for start in range(0, 40, 16):
            batch = x[start:start + 16].astype(np.float32)
            expected = 0.99 * expected + 0.01 * batch.mean(axis=0)
    moving_mean = model.layers[0].non_trainable_weights[0].numpy()
    np.testing.assert_allclose(moving_mean, expected, rtol=1e-5)
    assert model.train_function.experimental_get_tracing_count() == 2


def test_single_batch_methods_and_an_unbuilt_model():
    x, y = data(n=20)
    model = compiled(optimizer=keras.optimizers.SGD(0.1))
    loss, accuracy = model.train_on_batch(x, y)
    losses, hits = crossentropy(initial_weights(), x.astype(np.float32), y)
    np.testing.assert_allclose([loss, accuracy], [losses.mean(), hits.mean()], rtol=1e-5)
    reference = compiled(optimizer=keras.optimizers.SGD(0.1))
    reference.fit(x, y, batch_size=20, epochs=1, verbose=0)
    for a, b in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert model.test_on_batch(x, y, return_dict=True) == \
        reference.evaluate(x, y, batch_size=20, verbose=0, return_dict=True)
    np.testing.assert_array_equal(model.predict_on_batch(x), reference.predict(x, verbose=0))
    # No Input: fit builds the model on the first batch, before tracing.
    lazy = keras.Sequential([keras.layers.Dense(3), keras.layers.Dense(1)])
    lazy.compile(optimizer="sgd", loss="mse")
    assert not lazy.built
    lazy.fit(x, x[:, :1], epochs=1, verbose=0)
    assert lazy.built and lazy.predict(x, verbose=0).shape == (20, 1)


def test_learning_rate_callbacks_reach_the_traced_step():
    x, y = data(n=32)
    model = compiled(optimizer=keras.optimizers.SGD(0.1))
    after_first = []
    schedule = keras.callbacks.LearningRateScheduler(lambda epoch, lr: 0.1 if epoch == 0
                                                     else 0.0)
    keep = keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: after_first.append(model.get_weights()))
    history = model.fit(x, y, batch_size=32, epochs=3, verbose=0, callbacks=[schedule, keep])
    np.testing.assert_allclose(history.history["learning_rate"], [0.1, 0.0, 0.0])
    assert not np.array_equal(after_first[0][0], initial_weights()[0])
    for later in after_first[1:]:                   # learning rate 0: nothing moves
        for a, b in zip(later, after_first[0]):
            np.testing.assert_array_equal(a, b)
    assert model.train_function.experimental_get_tracing_count() == 1


def test_model_checkpoint_and_csv_logger(tmp_path):
    x, y = data()
    model = compiled(optimizer=keras.optimizers.SGD(0.5))
    checkpoint = keras.callbacks.ModelCheckpoint(
        str(tmp_path / "best-{epoch:02d}.weights.npz"), save_best_only=True,
        save_weights_only=True)
    log = keras.callbacks.CSVLogger(str(tmp_path / "log.csv"))
    saved = []
    watch = keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: saved.append(model.get_weights()))
    history = model.fit(x, y, epochs=6, verbose=0, validation_data=(x, 1 - y),
                        callbacks=[checkpoint, log, watch])
    val = history.history["val_loss"]
    improved = [i for i in range(6) if val[i] < min(val[:i], default=np.inf)]
    files = sorted(p.name for p in tmp_path.glob("best-*.weights.npz"))
    assert files == [f"best-{i + 1:02d}.weights.npz" for i in improved]
    model.load_weights(str(tmp_path / files[-1]))
    for a, b in zip(model.get_weights(), saved[improved[-1]]):
        np.testing.assert_array_equal(a, b)
    rows = (tmp_path / "log.csv").read_text().splitlines()
    assert rows[0] == "epoch,accuracy,loss,val_accuracy,val_loss" and len(rows) == 7
    assert [float(r.split(",")[4]) for r in rows[1:]] == pytest.approx(val, rel=1e-12)


def test_several_outputs_with_losses_by_list_or_by_output_name():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(30, 3)).astype(np.float32)
    y_reg = x.sum(axis=1, keepdims=True)
    y_cls = (x[:, 0] > 0).astype(np.int64)
    inputs = keras.Input(shape=(3,))
    reg = keras.layers.Dense(1, name="reg")(inputs)
    cls = keras.layers.Dense(2, activation="softmax", name="cls")(inputs)
    model = keras.Model(inputs, [reg, cls])
    W_reg, b_reg, W_cls, b_cls = model.get_weights()
    probabilities = np.exp(x @ W_cls + b_cls)
    probabilities /= probabilities.sum(axis=1, keepdims=True)
    expected = 2.0 * np.mean((x @ W_reg + b_reg - y_reg) ** 2) + \
        0.5 * np.mean(-np.log(probabilities[np.arange(30), y_cls]))
    by_list = dict(loss=["mse", "sparse_categorical_crossentropy"], loss_weights=[2.0, 0.5])
    by_name = dict(loss={"cls": "sparse_categorical_crossentropy", "reg": "mse"},
                   loss_weights={"reg": 2.0, "cls": 0.5})
    for how, targets in ((by_list, [y_reg, y_cls]), (by_name, {"cls": y_cls, "reg": y_reg})):
        model.compile(optimizer=keras.optimizers.SGD(0.0), **how)
        history = model.fit(x, targets, batch_size=30, verbose=0)
        np.testing.assert_allclose(history.history["loss"], [expected], rtol=1e-5)
    with pytest.raises(ValueError, match="keys"):
        model.fit(x, {"cls": y_cls, "other": y_reg}, verbose=0)


def test_progress_bar_on_a_terminal(monkeypatch):
    import io
    import sys

    class Terminal(io.StringIO):
        def isatty(self):
            return True
    x, y = data()
    model = compiled()
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    model.fit(x, y, epochs=2, verbose=1)
    text = terminal.getvalue()
    assert text.startswith("Epoch 1/2\n\r") and "Epoch 2/2\n\r" in text
    assert re.search(r"\r4/4 ━{20} \d+s \d+[mu]?s/step - accuracy: \d\.\d{4} - loss: "
                     r"\d\.\d{4} *\n$", text)
