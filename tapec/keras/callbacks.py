"""Keras callbacks (`tf.keras.callbacks`): History, EarlyStopping, LambdaCallback and the progress bar.

A callback is told about training as `Model.fit`, `evaluate` and `predict` run: the
hooks below are called with the epoch or batch index and a `logs` dict of Python
floats ("loss", metric names, and "val_"-prefixed validation results at the end of an
epoch), keys in sorted order as Keras 3 gives them. `self.model` is the model being
trained; setting `self.model.stop_training = True` ends `fit` after the current batch.
`self.params` holds "verbose", "epochs" and "steps" (batches per epoch, or None when
unknown).
"""
from __future__ import annotations

import csv
import math
import os
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .progbar import ProgressBar

__all__ = ["Callback", "CallbackList", "History", "EarlyStopping", "LambdaCallback",
           "ProgbarLogger", "TerminateOnNaN", "LearningRateScheduler", "ReduceLROnPlateau",
           "ModelCheckpoint", "CSVLogger"]


class Callback:
    """Base class of callbacks: every hook does nothing; subclasses override some."""

    def __init__(self) -> None:
        self.params: dict = {}
        self._model = None

    def set_params(self, params: dict) -> None:
        self.params = params

    def set_model(self, model) -> None:
        self._model = model

    @property
    def model(self):
        return self._model

    # Training, evaluation and prediction as a whole.
    def on_train_begin(self, logs=None): pass
    def on_train_end(self, logs=None): pass
    def on_test_begin(self, logs=None): pass
    def on_test_end(self, logs=None): pass
    def on_predict_begin(self, logs=None): pass
    def on_predict_end(self, logs=None): pass

    # Epochs (fit only).
    def on_epoch_begin(self, epoch, logs=None): pass
    def on_epoch_end(self, epoch, logs=None): pass

    # Batches. `on_batch_begin`/`on_batch_end` are Keras's older names for the training
    # hooks: the default training hooks call them.
    def on_batch_begin(self, batch, logs=None): pass
    def on_batch_end(self, batch, logs=None): pass

    def on_train_batch_begin(self, batch, logs=None):
        self.on_batch_begin(batch, logs=logs)

    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs=logs)

    def on_test_batch_begin(self, batch, logs=None): pass
    def on_test_batch_end(self, batch, logs=None): pass
    def on_predict_batch_begin(self, batch, logs=None): pass
    def on_predict_batch_end(self, batch, logs=None): pass


_HOOKS = ("on_train_begin", "on_train_end", "on_test_begin", "on_test_end",
          "on_predict_begin", "on_predict_end", "on_epoch_begin", "on_epoch_end",
          "on_train_batch_begin", "on_train_batch_end", "on_test_batch_begin",
          "on_test_batch_end", "on_predict_batch_begin", "on_predict_batch_end")


class CallbackList(Callback):
    """Calls each hook on every callback in order. `add_history` appends a History and
    `add_progbar` a ProgbarLogger when the list has none (as `fit` does); `params`
    are given to every callback."""

    def __init__(self, callbacks: Iterable[Callback] | None = None, add_history: bool = False,
                 add_progbar: bool = False, model=None, **params: Any) -> None:
        super().__init__()
        self.callbacks = list(callbacks or [])
        for callback in self.callbacks:
            if not isinstance(callback, Callback):
                raise TypeError(f"callbacks must be keras.callbacks.Callback instances, got "
                                f"{type(callback).__name__} {callback!r:.60}")
        if add_progbar and not any(isinstance(c, ProgbarLogger) for c in self.callbacks):
            self.callbacks.insert(0, ProgbarLogger())
        if add_history and not any(isinstance(c, History) for c in self.callbacks):
            self.callbacks.append(History())
        if model is not None:
            self.set_model(model)
        self.set_params(params)

    def append(self, callback: Callback) -> None:
        self.callbacks.append(callback)

    def set_params(self, params: dict) -> None:
        self.params = params
        for callback in self.callbacks:
            callback.set_params(params)

    def set_model(self, model) -> None:
        super().set_model(model)
        for callback in self.callbacks:
            callback.set_model(model)

    def __iter__(self):
        return iter(self.callbacks)


def _dispatch(hook: str) -> Callable:
    # Every callback receives `logs` as a positional argument, as Keras passes it (a
    # LambdaCallback's functions take it so).
    if hook.endswith(("_begin", "_end")) and ("batch" in hook or "epoch" in hook):
        def call(self, index, logs=None):
            for callback in self.callbacks:
                getattr(callback, hook)(index, logs)
    else:
        def call(self, logs=None):
            for callback in self.callbacks:
                getattr(callback, hook)(logs)
    call.__name__ = hook
    call.__doc__ = f"`{hook}` of every callback, in order."
    return call


for _hook in _HOOKS:
    setattr(CallbackList, _hook, _dispatch(_hook))


class History(Callback):
    """Records the epoch-end logs: `history.history["loss"]` is the list of every epoch's
    loss. `Model.fit` adds one and returns it (it is also `model.history`)."""

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, list] = {}
        self.epoch: list[int] = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(value)
        if self.model is not None:
            self.model.history = self


class LambdaCallback(Callback):
    """A callback made of functions: `on_epoch_begin(epoch, logs)`, `on_epoch_end(epoch,
    logs)`, `on_train_begin(logs)`, `on_train_end(logs)`, `on_train_batch_begin(batch,
    logs)`, `on_train_batch_end(batch, logs)`, and any other hook by its name."""

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None,
                 on_train_end=None, on_train_batch_begin=None, on_train_batch_end=None,
                 **kwargs: Callable) -> None:
        super().__init__()
        given = dict(on_epoch_begin=on_epoch_begin, on_epoch_end=on_epoch_end,
                     on_train_begin=on_train_begin, on_train_end=on_train_end,
                     on_train_batch_begin=on_train_batch_begin,
                     on_train_batch_end=on_train_batch_end, **kwargs)
        for hook, fn in given.items():
            if hook not in _HOOKS + ("on_batch_begin", "on_batch_end"):
                raise TypeError(f"LambdaCallback: unknown hook {hook!r}; hooks are "
                                f"{', '.join(_HOOKS)}")
            if fn is not None:
                setattr(self, hook, fn)


class TerminateOnNaN(Callback):
    """Stops training when a batch's loss is NaN or infinite."""

    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(np.mean(loss))):
            print(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True


# --- EarlyStopping -----------------------------------------------------------------------

# Metric names whose larger values are better, when a metric does not say (Keras's rule
# for metrics without a direction, extended by the usual scores).
_HIGHER_IS_BETTER = ("acc", "auc", "precision", "recall", "fmeasure", "f1")


class EarlyStopping(Callback):
    """Stops training when `monitor` has not improved for `patience` epochs.

    An epoch improves when its value beats the best so far by more than `min_delta`
    (`mode` "min": lower is better, "max": higher, "auto": from the metric, losses
    lower). With `baseline`, the patience count restarts only on values better than the
    baseline too. Epochs before `start_from_epoch` are not looked at.
    `restore_best_weights` puts back the weights of the best epoch when training ends
    (when at least one epoch was looked at); `best_epoch` and `stopped_epoch` say
    which (0-based; `stopped_epoch` is 0 when training was not stopped).
    """

    def __init__(self, monitor: str = "val_loss", min_delta: float = 0, patience: int = 0,
                 verbose: int = 0, mode: str = "auto", baseline: float | None = None,
                 restore_best_weights: bool = False, start_from_epoch: int = 0) -> None:
        super().__init__()
        if mode not in ("auto", "min", "max"):
            warnings.warn(f"EarlyStopping mode {mode!r} is unknown, fallback to auto mode.",
                          stacklevel=2)
            mode = "auto"
        self.monitor, self.mode = monitor, mode
        self.min_delta = abs(min_delta)
        self.patience, self.verbose, self.baseline = patience, verbose, baseline
        self.restore_best_weights, self.start_from_epoch = restore_best_weights, start_from_epoch
        self.wait = self.stopped_epoch = self.best_epoch = 0
        self.best = self.best_weights = None
        self.higher_is_better: bool | None = None

    def _direction(self) -> bool:
        """True when larger values of the monitored quantity are better."""
        if self.mode != "auto":
            return self.mode == "max"
        name = self.monitor[4:] if self.monitor.startswith("val_") else self.monitor
        if name == "loss" or name.endswith("_loss"):
            return False
        for metric in getattr(self.model, "metrics", None) or ():
            if getattr(metric, "name", None) == name and \
                    getattr(metric, "_direction", None) in ("up", "down"):
                return metric._direction == "up"
        if any(word in name for word in _HIGHER_IS_BETTER):
            return True
        if name in ("mse", "mae", "mape", "msle") or "error" in name:
            return False
        raise ValueError(f"EarlyStopping callback received monitor={self.monitor!r} but it "
                         "cannot tell whether that metric should be maximized or minimized. "
                         "Pass mode='max' in order to do early stopping based on the highest "
                         "metric value, or mode='min' to use the lowest value.")

    def on_train_begin(self, logs=None):
        self.wait = self.stopped_epoch = self.best_epoch = 0
        self.best = self.best_weights = None

    def _improves(self, value, reference) -> bool:
        if reference is None:
            return True
        if self.higher_is_better:
            return value - self.min_delta > reference
        return value + self.min_delta < reference

    def on_epoch_end(self, epoch, logs=None):
        if self.higher_is_better is None:
            self.higher_is_better = self._direction()
        current = (logs or {}).get(self.monitor)
        if current is None:
            warnings.warn(f"Early stopping conditioned on metric `{self.monitor}` which is not "
                          f"available. Available metrics are: {','.join(logs or {})}",
                          stacklevel=2)
            return
        if epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if self._improves(current, self.best):
            self.best, self.best_epoch = current, epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._improves(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                print("Restoring model weights from the end of the best epoch: "
                      f"{self.best_epoch + 1}.")
            self.model.set_weights(self.best_weights)


# --- learning rate ---------------------------------------------------------------------

def _learning_rate(model) -> float:
    return float(np.asarray(getattr(model.optimizer.learning_rate, "numpy",
                                    lambda: model.optimizer.learning_rate)()))


class LearningRateScheduler(Callback):
    """Sets the optimizer's learning rate at the start of each epoch to
    `schedule(epoch, lr)` (or `schedule(epoch)`), and logs it as "learning_rate". The
    optimizer's learning rate is a Variable read by the traced step: no retrace."""

    def __init__(self, schedule: Callable, verbose: int = 0) -> None:
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch, logs=None):
        try:
            lr = self.schedule(epoch, _learning_rate(self.model))
        except TypeError:           # a schedule of the epoch alone (Keras's fallback)
            lr = self.schedule(epoch)
        if hasattr(lr, "numpy"):
            lr = lr.numpy()
        if not isinstance(lr, (float, int, np.floating, np.integer)) or np.ndim(lr):
            raise ValueError(f"The output of the `schedule` function should be a float. Got: "
                             f"{lr!r:.60}")
        self.model.optimizer.learning_rate = float(lr)
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to "
                  f"{float(lr)}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = _learning_rate(self.model)


class ReduceLROnPlateau(Callback):
    """Multiplies the learning rate by `factor` (down to `min_lr`) when `monitor` has
    not improved by more than `min_delta` for `patience` epochs, then waits `cooldown`
    epochs before watching again. Mode "auto" maximizes monitors whose name contains
    "acc", and minimizes the others (Keras's rule). Logs "learning_rate"."""

    def __init__(self, monitor: str = "val_loss", factor: float = 0.1, patience: int = 10,
                 verbose: int = 0, mode: str = "auto", min_delta: float = 1e-4,
                 cooldown: int = 0, min_lr: float = 0.0, **kwargs) -> None:
        super().__init__()
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau does not support a factor >= 1.0. "
                             f"Received factor={factor}")
        if kwargs:
            raise TypeError(f"ReduceLROnPlateau: unexpected arguments {sorted(kwargs)}")
        if mode not in ("auto", "min", "max"):
            warnings.warn(f"Learning rate reduction mode {mode} is unknown, fallback to auto "
                          "mode.", stacklevel=2)
            mode = "auto"
        self.monitor, self.factor, self.patience, self.verbose = monitor, factor, patience, verbose
        self.mode, self.min_delta, self.cooldown, self.min_lr = mode, min_delta, cooldown, min_lr
        self._reset()

    def _reset(self):
        self.higher_is_better = self.mode == "max" or (self.mode == "auto" and
                                                       "acc" in self.monitor)
        self.best = -np.inf if self.higher_is_better else np.inf
        self.wait = self.cooldown_counter = 0

    def _improves(self, current) -> bool:
        if self.higher_is_better:
            return current > self.best + self.min_delta
        return current < self.best - self.min_delta

    def on_train_begin(self, logs=None):
        self._reset()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        logs["learning_rate"] = _learning_rate(self.model)
        current = logs.get(self.monitor)
        if current is None:
            warnings.warn(f"Learning rate reduction is conditioned on metric `{self.monitor}` "
                          f"which is not available. Available metrics are: "
                          f"{','.join(logs)}.", stacklevel=2)
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self._improves(current):
            self.best, self.wait = current, 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience:
                old_lr = _learning_rate(self.model)
                if old_lr > np.float32(self.min_lr):
                    new_lr = max(old_lr * self.factor, self.min_lr)
                    self.model.optimizer.learning_rate = new_lr
                    if self.verbose > 0:
                        print(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning "
                              f"rate to {new_lr}.")
                    self.cooldown_counter, self.wait = self.cooldown, 0


# --- files ----------------------------------------------------------------------------

class ModelCheckpoint(Callback):
    """Saves the model (`model.save`) or its weights (`model.save_weights`) at the end
    of each epoch, to `filepath` formatted with `epoch` (1-based) and the logs
    ("model-{epoch:02d}-{val_loss:.2f}.weights.npz"). With `save_best_only`, only when
    `monitor` improved (mode as EarlyStopping's; `initial_value_threshold` is the value
    to beat at first). Only `save_freq="epoch"` is supported."""

    def __init__(self, filepath, monitor: str = "val_loss", verbose: int = 0,
                 save_best_only: bool = False, save_weights_only: bool = False,
                 mode: str = "auto", save_freq: Any = "epoch",
                 initial_value_threshold: float | None = None) -> None:
        super().__init__()
        if save_freq != "epoch":
            raise NotImplementedError(f"ModelCheckpoint: save_freq={save_freq!r} is not "
                                      "supported; tapec saves once per epoch ('epoch')")
        self.filepath = os.fspath(filepath)
        self.monitor, self.verbose = monitor, verbose
        self.save_best_only, self.save_weights_only = save_best_only, save_weights_only
        self._stopper = EarlyStopping(monitor=monitor, mode=mode)
        self.best = initial_value_threshold

    def set_model(self, model) -> None:
        super().set_model(model)
        self._stopper.set_model(model)

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        path = self.filepath.format(epoch=epoch + 1, **logs)
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None:
                warnings.warn(f"Can save best model only with {self.monitor} available.",
                              stacklevel=2)
                return
            if self._stopper.higher_is_better is None:
                self._stopper.higher_is_better = self._stopper._direction()
            if not self._stopper._improves(current, self.best):
                if self.verbose > 0:
                    print(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from "
                          f"{self.best:.5f}")
                return
            if self.verbose > 0:
                previous = "inf" if self.best is None else f"{self.best:.5f}"
                print(f"\nEpoch {epoch + 1}: {self.monitor} improved from {previous} to "
                      f"{current:.5f}, saving model to {path}")
            self.best = current
        elif self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: saving model to {path}")
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        if self.save_weights_only:
            self.model.save_weights(path, overwrite=True)
        else:
            self.model.save(path, overwrite=True)


class CSVLogger(Callback):
    """Writes each epoch's logs as a CSV row ("epoch" then the log keys, sorted), to
    `filename`; `append` adds to an existing file (no second header)."""

    def __init__(self, filename, separator: str = ",", append: bool = False) -> None:
        super().__init__()
        self.filename, self.separator, self.append = os.fspath(filename), separator, append
        self.keys: list | None = None
        self._file = self._writer = None

    def on_train_begin(self, logs=None):
        has_rows = self.append and os.path.exists(self.filename) and \
            os.path.getsize(self.filename) > 0
        self._header = not has_rows
        self._file = open(self.filename, "a" if self.append else "w", newline="",
                          encoding="utf-8")
        self.keys, self._writer = None, None

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self.keys is None:
            self.keys = sorted(logs)
            self._writer = csv.DictWriter(self._file, fieldnames=["epoch"] + self.keys,
                                          delimiter=self.separator)
            if self._header:
                self._writer.writeheader()
        row = {"epoch": epoch}
        row.update((key, logs.get(key, "NA")) for key in self.keys)
        self._writer.writerow(row)
        self._file.flush()

    def on_train_end(self, logs=None):
        if self._file is not None:
            self._file.close()
            self._file = self._writer = None


# --- the progress display ----------------------------------------------------------------

class ProgbarLogger(Callback):
    """The progress display of `fit`, `evaluate` and `predict` ("Epoch 1/5", then a bar
    or a line per epoch, as `params["verbose"]` says: 0 nothing, 1 a progress bar, 2
    one line per epoch). `fit` and friends add one when verbose is not 0."""

    def __init__(self) -> None:
        super().__init__()
        self.bar: ProgressBar | None = None
        self.seen = 0
        self.in_fit = False       # fit's validation runs evaluate: it shows no bar of its own

    @property
    def verbose(self) -> int:
        return self.params.get("verbose", 1)

    def _start(self):
        self.seen = 0
        self.bar = ProgressBar(self.params.get("steps"), self.verbose) if self.verbose else None

    def on_train_begin(self, logs=None):
        self.in_fit = True

    def on_train_end(self, logs=None):
        self.in_fit = False

    def on_epoch_begin(self, epoch, logs=None):
        self._start()
        epochs = self.params.get("epochs", 1)
        if self.verbose and epochs > 1:
            print(f"Epoch {epoch + 1}/{epochs}")

    def on_test_begin(self, logs=None):
        if self.in_fit:
            return
        self._start()

    def on_predict_begin(self, logs=None):
        self._start()

    def _batch(self, batch, logs):
        self.seen = batch + 1
        if self.bar is not None:
            self.bar.update(self.seen, logs)

    def on_train_batch_end(self, batch, logs=None):
        self._batch(batch, logs)

    def on_test_batch_end(self, batch, logs=None):
        if not self.in_fit:
            self._batch(batch, logs)

    def on_predict_batch_end(self, batch, logs=None):
        self._batch(batch, None)

    def _finish(self, logs):
        if self.bar is not None:
            if self.bar.target is None:
                self.bar.target = self.seen
            self.bar.update(self.seen, logs, finished=True)
            self.bar = None

    def on_epoch_end(self, epoch, logs=None):
        self._finish(logs)

    def on_test_end(self, logs=None):
        if not self.in_fit:
            self._finish(logs)

    def on_predict_end(self, logs=None):
        self._finish(None)
