"""keras.callbacks: EarlyStopping and ReduceLROnPlateau decide as Keras 3's do (driven side
by side with the same logs), History, LambdaCallback, CallbackList, and the progress
display's format (keras/progbar.py)."""
import io
import itertools
import re

import numpy as np
import pytest

from tapec.keras import callbacks, progbar


class FakeModel:
    """What a callback touches on a model: stop_training and the weights (the weights
    are the epoch count, so a restore says which epoch it came from)."""

    def __init__(self):
        self.stop_training = False
        self.epoch = 0
        self.restored = None
        self.metrics = []

    def get_weights(self):
        return [np.array(float(self.epoch))]

    def set_weights(self, weights):
        self.restored = float(weights[0])


def drive(callback, values, monitor="val_loss"):
    """Runs `callback` over epochs with `values` of `monitor`; returns the epoch after
    which training stopped (None: never) and the weights it restored."""
    model = FakeModel()
    callback.set_model(model)
    callback.on_train_begin()
    stopped = None
    for epoch, value in enumerate(values):
        model.epoch = epoch
        callback.on_epoch_end(epoch, {monitor: value, "loss": 1.0})
        if model.stop_training:
            stopped = epoch
            break
    callback.on_train_end()
    return stopped, model.restored


SEQUENCES = [
    [1.0, 0.9, 0.95, 0.96, 0.97, 0.5, 0.4],
    [1.0, 1.0, 1.0, 1.0, 1.0],
    [0.5, 0.6, 0.7, 0.4, 0.8, 0.9, 1.0, 1.1],
    [3.0, 2.9999, 2.99, 2.5, 2.4999, 2.4998, 2.4997],
]
SETTINGS = [dict(patience=p, min_delta=d, baseline=b, start_from_epoch=s,
                 restore_best_weights=r)
            for p, d, b, s, r in itertools.product((0, 1, 2), (0, 0.01), (None, 0.95),
                                                   (0, 2), (False, True))]


@pytest.mark.parametrize("values", SEQUENCES, ids=range(len(SEQUENCES)))
def test_early_stopping_decides_as_keras(values):
    keras_real = pytest.importorskip("keras")
    for settings in SETTINGS:
        for mode, sign in (("min", 1), ("max", -1)):
            seq = [sign * v for v in values]
            kw = dict(settings, baseline=None if settings["baseline"] is None else
                      sign * settings["baseline"], mode=mode)
            ours = callbacks.EarlyStopping(**kw)
            theirs = keras_real.callbacks.EarlyStopping(**kw)
            assert drive(ours, seq) == drive(theirs, seq), (kw, seq)
            assert (ours.stopped_epoch, ours.best_epoch, ours.wait) == \
                (theirs.stopped_epoch, theirs.best_epoch, theirs.wait), (kw, seq)


def test_early_stopping_patience_by_hand():
    # Best at epoch 1 (0.9); epochs 2 and 3 do not improve: patience 2 stops after epoch 3.
    stop = callbacks.EarlyStopping(patience=2, restore_best_weights=True)
    assert drive(stop, [1.0, 0.9, 0.95, 0.91, 0.1]) == (3, 1.0)
    assert (stop.stopped_epoch, stop.best_epoch, stop.best) == (3, 1, 0.9)
    # min_delta: 0.899 is not 0.01 better than 0.9.
    stop = callbacks.EarlyStopping(patience=1, min_delta=0.01)
    assert drive(stop, [1.0, 0.9, 0.899, 0.5])[0] == 2


def test_early_stopping_auto_mode_and_missing_monitor():
    stop = callbacks.EarlyStopping(monitor="val_accuracy", patience=0)
    assert drive(stop, [0.5, 0.6, 0.55], monitor="val_accuracy")[0] == 2   # max
    assert stop.higher_is_better
    stop = callbacks.EarlyStopping(monitor="val_mae", patience=0)
    assert drive(stop, [0.5, 0.6], monitor="val_mae")[0] == 1              # min
    stop = callbacks.EarlyStopping(monitor="val_frobnication")
    with pytest.raises(ValueError, match="mode='max'"):
        drive(stop, [0.5], monitor="val_frobnication")
    stop = callbacks.EarlyStopping(monitor="val_loss")
    with pytest.warns(UserWarning, match="not available"):
        assert drive(stop, [0.5, 0.6], monitor="loss_other") == (None, None)


def test_history_and_lambda_callback_and_list_order():
    calls = []
    lam = callbacks.LambdaCallback(
        on_train_begin=lambda logs: calls.append("begin"),
        on_epoch_end=lambda epoch, logs: calls.append(("epoch", epoch, logs["loss"])),
        on_train_batch_end=lambda batch, logs: calls.append(("batch", batch)))
    history = callbacks.History()
    model = FakeModel()
    cbs = callbacks.CallbackList([lam, history], model=model, epochs=2, steps=1, verbose=0)
    assert lam.model is model and history.params == {"epochs": 2, "steps": 1, "verbose": 0}
    cbs.on_train_begin()
    for epoch in range(2):
        cbs.on_train_batch_end(0, {"loss": 1.0})
        cbs.on_epoch_end(epoch, {"loss": 0.5 - epoch, "val_loss": 2.0})
    assert calls == ["begin", ("batch", 0), ("epoch", 0, 0.5), ("batch", 0),
                     ("epoch", 1, -0.5)]
    assert history.history == {"loss": [0.5, -0.5], "val_loss": [2.0, 2.0]}
    assert history.epoch == [0, 1] and model.history is history
    with pytest.raises(TypeError, match="unknown hook 'on_epoch_ended'"):
        callbacks.LambdaCallback(on_epoch_ended=print)
    with pytest.raises(TypeError, match="Callback instances"):
        callbacks.CallbackList([print])


def test_on_batch_aliases_receive_training_batches():
    seen = []

    class Old(callbacks.Callback):
        def on_batch_end(self, batch, logs=None):
            seen.append(batch)
    Old().on_train_batch_end(3, {})
    assert seen == [3]


def test_log_format_as_keras():
    assert progbar.format_logs({"loss": 0.123449, "accuracy": 0.9}) == \
        " - loss: 0.1234 - accuracy: 0.9000"
    assert progbar.format_logs({"loss": 1.23456e-4}) == " - loss: 1.2346e-04"
    assert progbar.format_time_per_step(0.0123) == "12ms/step"
    assert progbar.format_time_per_step(2.4) == "2s/step"
    assert progbar.format_time_per_step(3e-5) == "30us/step"


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("verbose", [1, 2])
def test_progress_bar_lines(verbose):
    plain = io.StringIO()
    bar = progbar.ProgressBar(3, verbose, stream=plain)
    for step in (1, 2):
        bar.update(step, {"loss": 1.0})
    bar.update(3, {"loss": 0.5}, finished=True)
    text = plain.getvalue()
    assert text.count("\n") == 1 and "\r" not in text       # one line, when finished
    if verbose == 1:
        assert re.fullmatch(r"3/3 ━{20} \d+s \d+[mu]?s/step - loss: 0.5000\n", text)
    else:
        assert re.fullmatch(r"3/3 - \d+s - \d+[mu]?s/step - loss: 0.5000\n", text)


def test_progress_bar_redraws_in_place_on_a_terminal():
    tty = Terminal()
    bar = progbar.ProgressBar(4, 1, stream=tty, interval=0.0)
    bar.update(1, {"loss": 2.0})
    bar.update(4, {"loss": 1.0}, finished=True)
    text = tty.getvalue()
    assert text.startswith("\r1/4 ━━━━━─────────────── ") and "loss: 2.0000" in text
    assert text.count("\r") == 2 and text.endswith("loss: 1.0000\n")


class FakeOptimizer:
    def __init__(self, learning_rate):
        self.learning_rate = learning_rate


@pytest.mark.parametrize("values", SEQUENCES, ids=range(len(SEQUENCES)))
def test_reduce_lr_on_plateau_decides_as_keras(values):
    keras_real = pytest.importorskip("keras")
    for patience, cooldown, min_lr, mode, min_delta in itertools.product(
            (0, 1, 2), (0, 1), (0.0, 0.004), ("min", "max", "auto"), (1e-4, 0.05)):
        kw = dict(patience=patience, cooldown=cooldown, min_lr=min_lr, mode=mode,
                  min_delta=min_delta, factor=0.5)
        lrs = []
        for make in (callbacks.ReduceLROnPlateau, keras_real.callbacks.ReduceLROnPlateau):
            model = FakeModel()
            model.optimizer = FakeOptimizer(0.01)
            callback = make(**kw)
            callback.set_model(model)
            callback.on_train_begin()
            seen = []
            for epoch, value in enumerate(values):
                logs = {"val_loss": value}
                callback.on_epoch_end(epoch, logs)
                seen.append((model.optimizer.learning_rate, logs["learning_rate"]))
            lrs.append(seen)
        np.testing.assert_allclose(lrs[0], lrs[1], rtol=1e-7, err_msg=str(kw))


def test_reduce_lr_on_plateau_by_hand():
    model = FakeModel()
    model.optimizer = FakeOptimizer(1.0)
    reduce = callbacks.ReduceLROnPlateau(patience=1, factor=0.5, min_lr=0.3)
    reduce.set_model(model)
    reduce.on_train_begin()
    for epoch, value in enumerate([1.0, 1.0, 1.0, 1.0]):
        reduce.on_epoch_end(epoch, {"val_loss": value})
    assert model.optimizer.learning_rate == 0.3          # 1 -> 0.5 -> 0.3 (min_lr)
    with pytest.raises(ValueError, match="factor >= 1.0"):
        callbacks.ReduceLROnPlateau(factor=1.0)
