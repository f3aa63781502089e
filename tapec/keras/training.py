"""`Model.compile` / `fit` / `evaluate` / `predict`: a train step traced once by tapec.function.

`fit` calls `make_train_function()`, which wraps `train_step` in `tapec.function`:
the forward pass, the tape's gradient, the optimizer's update and the metrics' updates
become ONE compiled program (graph mode: the Variable writes are effects of that
program), traced once per batch shape, so a partial last batch adds one trace in the
first epoch and none after. `compile(run_eagerly=True)` calls the steps as plain
Python instead. `train_step`, `test_step` and `predict_step` are overridable as in
Keras 3: a step receives one batch `(x, y, sample_weight)` (see data_adapter.py) and
returns a dict of metric results. What compile builds (the loss, the metrics) is in
compile_utils.py, the batching in data_adapter.py, the display in progbar.py;
docs/keras_training.md describes the whole.

Trainer uses only these members of the model: `self(x, training=...)`,
`self.trainable_variables`, `self.losses`, `self.built`, `self.outputs` (to match
per-output losses by name) and, for callbacks, `get_weights` / `set_weights`.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import nest
from ..function import function as tf_function
from ..ops.shape import cast
from ..ops.shape import shape as tf_shape
from ..tape import GradientTape
from ..tensor import Tensor
from . import callbacks as callbacks_module
from . import metrics as metrics_module
from . import optimizers as optimizers_module
from .compile_utils import (CompiledLoss, aligned, compiled_metrics, metric_list,
                            output_layer_names)
from .data_adapter import (EpochIterator, batches_of, executions, is_generator,
                           pack_x_y_sample_weight, train_validation_split,
                           unpack_x_y_sample_weight)

__all__ = ["Trainer", "unpack_x_y_sample_weight", "pack_x_y_sample_weight"]


class _State:
    """What compile and fit keep on a model: one attribute, not walked by tf.Module's
    variable search (the optimizer's and metrics' Variables are not the model's)."""

    def __init__(self):
        self.compiled = False
        self.optimizer = None
        self.loss = None                 # what compile received
        self.compiled_loss = None        # a _CompiledLoss
        self.metric_specs = ([], [])     # (metrics, weighted_metrics) as given
        self.compiled_metrics = None     # [MetricEntry] once resolved
        self.loss_tracker = None
        self.run_eagerly = False
        self.steps_per_execution = 1
        self.train_function = self.test_function = self.predict_function = None
        self.history = None


class Trainer:
    """Training half of `keras.Model`: compile, fit, evaluate, predict."""

    stop_training = False

    # --- state ---------------------------------------------------------------------------

    @property
    def _training(self) -> _State:
        state = self.__dict__.get("_training_state")
        if state is None:
            state = _State()
            object.__setattr__(self, "_training_state", state)
        return state

    @property
    def optimizer(self):
        return self._training.optimizer

    @optimizer.setter
    def optimizer(self, value):
        self._training.optimizer = value

    @property
    def loss(self):
        """The loss given to compile."""
        return self._training.loss

    @property
    def compiled(self) -> bool:
        return self._training.compiled

    @property
    def run_eagerly(self) -> bool:
        return self._training.run_eagerly

    @run_eagerly.setter
    def run_eagerly(self, value: bool) -> None:
        self._training.run_eagerly = bool(value)
        self._training.train_function = self._training.test_function = None
        self._training.predict_function = None

    @property
    def history(self):
        return self._training.history

    @history.setter
    def history(self, value):
        self._training.history = value

    @property
    def train_function(self):
        return self._training.train_function

    @property
    def test_function(self):
        return self._training.test_function

    @property
    def predict_function(self):
        return self._training.predict_function

    @property
    def metrics(self) -> list:
        """The loss tracker ("loss") and the compiled metrics, once built (after the first
        step of fit or evaluate), in compile's order."""
        state = self._training
        tracked = [state.loss_tracker] if state.loss_tracker is not None else []
        return tracked + [entry.metric for entry in state.compiled_metrics or ()]

    @property
    def metrics_names(self) -> list[str]:
        """The names of the logs: "loss", then the metrics (those of one output among
        several prefixed by the output's name, as Keras 3)."""
        state = self._training
        tracked = [state.loss_tracker.name] if state.loss_tracker is not None else []
        return tracked + [entry.log_name for entry in state.compiled_metrics or ()]

    @property
    def metrics_variables(self) -> list:
        return [v for metric in self.metrics for v in metric.variables]

    def reset_metrics(self) -> None:
        for metric in self.metrics:
            metric.reset_state()

    # --- compile -------------------------------------------------------------------------

    def compile(self, optimizer: Any = "rmsprop", loss: Any = None, loss_weights: Any = None,
                metrics: Any = None, weighted_metrics: Any = None, run_eagerly: bool = False,
                steps_per_execution: int = 1, jit_compile: Any = "auto",
                auto_scale_loss: bool = True) -> None:
        """Configure training: the optimizer (a name, a dict or an Optimizer), the loss (a
        name, a Loss, a function, or a list / dict of them for several outputs), optional
        `loss_weights`, `metrics` (updated without sample weights) and `weighted_metrics`
        (updated with them). `jit_compile` and `auto_scale_loss` are accepted and have no
        effect (tapec always compiles). With `steps_per_execution` N, fit, evaluate and
        predict run N compiled steps between two calls of the batch callbacks (the
        numbers are those of N = 1)."""
        if isinstance(steps_per_execution, bool) or \
                not isinstance(steps_per_execution, (int, np.integer)) or \
                steps_per_execution < 1:
            raise ValueError(f"compile: steps_per_execution must be a positive int, got "
                             f"{steps_per_execution!r}")
        state = self._training
        state.steps_per_execution = int(steps_per_execution)
        state.optimizer = optimizers_module.get(optimizer)
        state.loss = loss
        state.compiled_loss = None if loss is None else CompiledLoss(loss, loss_weights)
        state.metric_specs = (metric_list(metrics, "metrics"),
                              metric_list(weighted_metrics, "weighted_metrics"))
        state.compiled_metrics = None
        state.loss_tracker = metrics_module.Mean(name="loss")
        state.run_eagerly = bool(run_eagerly)
        state.train_function = state.test_function = state.predict_function = None
        state.compiled = True

    def _assert_compiled(self, what: str) -> None:
        if not self._training.compiled:
            raise RuntimeError(f"You must call `compile()` before using the model "
                               f"(`{what}` needs the optimizer and loss that compile sets)")

    # --- losses and metrics --------------------------------------------------------------

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                     training: bool = True) -> Tensor:
        """The compiled loss of (y, y_pred) plus the model's added losses (`self.losses`,
        e.g. weight regularization), as Keras 3. Raises ValueError when there is none."""
        state = self._training
        terms = []
        if state.compiled_loss is not None:
            terms.append(state.compiled_loss(y, y_pred, sample_weight,
                                             output_names=output_layer_names(self)))
        terms += list(getattr(self, "losses", None) or [])
        if not terms:
            raise ValueError("No loss to compute. Provide a `loss` argument in `compile()`.")
        total = terms[0]
        for term in terms[1:]:
            total = total + cast(term, total.dtype)
        return total

    def _build_metrics(self, y, y_pred) -> None:
        """Resolve compile's metrics ("accuracy" by the loss and shapes; one list per
        output for several outputs) once, on the first batch."""
        state = self._training
        if state.compiled_metrics is None:
            state.compiled_metrics = compiled_metrics(state.metric_specs, state.loss, y,
                                                      y_pred, output_layer_names(self))

    def compute_metrics(self, x, y, y_pred, sample_weight=None) -> dict:
        """Update the compiled metrics with this batch; returns every metric's result."""
        self._build_metrics(y, y_pred)
        entries = self._training.compiled_metrics
        if entries:
            preds = nest.flatten(y_pred)
            names = None if isinstance(y_pred, dict) else output_layer_names(self)
            trues = aligned(y, y_pred, names, "y") if len(preds) > 1 else [y]
            weights = aligned(sample_weight, y_pred, names, "sample_weight") \
                if len(preds) > 1 else [sample_weight]
            weights = weights * len(preds) if len(weights) == 1 else weights
            for entry in entries:
                i = entry.output
                y_pred_i = y_pred if len(preds) == 1 else preds[i]
                entry.metric.update_state(trues[i], y_pred_i,
                                          sample_weight=weights[i] if entry.weighted else None)
        return self.get_metrics_result()

    def get_metrics_result(self) -> dict:
        """The result of every metric in `self.metrics`, by log name."""
        log_names = {id(entry.metric): entry.log_name
                     for entry in self._training.compiled_metrics or ()}
        results = {}
        for metric in self.metrics:
            value = metric.result()
            if isinstance(value, dict):
                results.update(value)
            else:
                results[log_names.get(id(metric), metric.name)] = value
        return results

    def _track_loss(self, loss, x) -> None:
        """The "loss" log: the mean over samples of the batch losses (each batch weighed
        by its size, so a partial last batch counts for what it holds)."""
        tracker = self._training.loss_tracker
        if tracker is not None:
            first = nest.flatten(x)[0]
            size = first.shape[0] if first.shape[0] is not None else tf_shape(first)[0]
            tracker.update_state(loss, sample_weight=size)

    # --- the steps -----------------------------------------------------------------------

    def train_step(self, data) -> dict:
        """One optimization step on one batch: forward pass under a tape, loss, gradient,
        optimizer update, metric updates; returns the metrics' results."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)
        self._track_loss(loss, x)
        variables = list(self.trainable_variables)
        if variables:
            gradients = tape.gradient(loss, variables)
            self.optimizer.apply_gradients(zip(gradients, variables))
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def test_step(self, data) -> dict:
        """Loss and metrics of one batch, in inference mode."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        y_pred = self(x, training=False)
        loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight,
                                 training=False)
        self._track_loss(loss, x)
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def predict_step(self, data):
        x, _, _ = unpack_x_y_sample_weight(data)
        return self(x, training=False)

    def _make_function(self, kind: str, step):
        state = self._training
        current = getattr(state, kind)
        if current is None:
            current = step if state.run_eagerly else tf_function(step)
            setattr(state, kind, current)
        return current

    def make_train_function(self, force: bool = False):
        """`train_step` under tapec.function (plain, with run_eagerly): called with one
        batch, returns the logs as tensors."""
        if force:
            self._training.train_function = None
        return self._make_function("train_function", self.train_step)

    def make_test_function(self, force: bool = False):
        if force:
            self._training.test_function = None
        return self._make_function("test_function", self.test_step)

    def make_predict_function(self, force: bool = False):
        if force:
            self._training.predict_function = None
        return self._make_function("predict_function", self.predict_step)

    def _prepare(self, first_batch, training: bool = False) -> None:
        """Before the first traced step: build the model, the metrics and (for training)
        the optimizer's slots eagerly on the first batch (one forward pass), so no
        Variable is created inside a trace."""
        state = self._training
        needs_model = not getattr(self, "built", True)
        needs_metrics = state.compiled_metrics is None and any(state.metric_specs)
        if needs_model or needs_metrics:
            x, y, _ = unpack_x_y_sample_weight(first_batch)
            y_pred = self(x, training=False)
            if needs_metrics and y is not None:
                self._build_metrics(y, y_pred)
        if training and state.optimizer is not None and hasattr(state.optimizer, "build") \
                and not getattr(state.optimizer, "built", False):
            state.optimizer.build(list(self.trainable_variables))

    # --- fit -----------------------------------------------------------------------------

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1):
        """Train for `epochs` epochs (from `initial_epoch`); returns the History, whose
        `history` dict holds a list per log ("loss", metrics, "val_..." ones)."""
        self._assert_compiled("fit")
        verbose = _verbose(verbose)
        if validation_split and validation_data is None:
            if not 0 < validation_split < 1:
                raise ValueError(f"validation_split must be in (0, 1), got {validation_split}")
            if _is_dataset(x) or is_generator(x):
                raise ValueError("validation_split is only supported for arrays and tensors, "
                                 "not a Dataset or a generator; pass validation_data")
            (x, y, sample_weight), validation_data = train_validation_split(
                (x, y, sample_weight), validation_split)
        train = EpochIterator(batches_of(x, y, sample_weight, batch_size, shuffle,
                                         class_weight, "fit"), steps_per_epoch)
        validation = None
        if validation_data is not None:
            validation = _validation_batches(validation_data,
                                             validation_batch_size or batch_size,
                                             validation_steps)
        callback_list = callbacks_module.CallbackList(
            callbacks, add_history=True, add_progbar=verbose != 0, model=self,
            verbose=verbose, epochs=epochs, steps=train.num_batches)
        self.stop_training = False
        spe = self._training.steps_per_execution
        train_function = self.make_train_function()
        callback_list.on_train_begin()
        prepared = False
        epoch_logs: dict = {}
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            callback_list.on_epoch_begin(epoch)
            logs: dict = {}
            ran = False
            for first, last, group in executions(train.epoch(), spe):
                if not prepared:
                    self._prepare(group[0], training=True)
                    prepared = True
                callback_list.on_train_batch_begin(first)
                for batch in group:
                    result = train_function(batch)
                logs = python_logs(result)
                ran = True
                callback_list.on_train_batch_end(last, logs)
                if self.stop_training:
                    break
            if not ran:
                raise ValueError(f"fit: the data gave no batch in epoch {epoch + 1}; a "
                                 "generator runs once, so pass steps_per_epoch with one "
                                 "that yields batches without end, or a Dataset")
            epoch_logs = dict(logs)
            if validation is not None and _validates(epoch, validation_freq):
                val_logs = self._evaluate_batches(validation, callback_list)
                epoch_logs.update({"val_" + key: value for key, value in val_logs.items()})
            callback_list.on_epoch_end(epoch, epoch_logs)
            if self.stop_training:
                break
        callback_list.on_train_end(logs=epoch_logs)
        history = next(c for c in callback_list if isinstance(c, callbacks_module.History))
        self.history = history
        return history

    # --- evaluate and predict ------------------------------------------------------------

    def _evaluate_batches(self, batches: EpochIterator, callback_list) -> dict:
        test_function = self.make_test_function()
        self.reset_metrics()
        callback_list.on_test_begin()
        logs: dict = {}
        for first, last, group in executions(batches.epoch(),
                                             self._training.steps_per_execution):
            if first == 0:
                self._prepare(group[0])
            callback_list.on_test_batch_begin(first)
            for batch in group:
                result = test_function(batch)
            logs = python_logs(result)
            callback_list.on_test_batch_end(last, logs)
        callback_list.on_test_end(logs)
        return logs

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 steps=None, callbacks=None, return_dict=False):
        """The loss and metrics over the data: the loss alone when no metric is compiled,
        else [loss, metric, ...] in `metrics_names` order (a dict with return_dict)."""
        self._assert_compiled("evaluate")
        verbose = _verbose(verbose)
        batches = EpochIterator(batches_of(x, y, sample_weight, batch_size, False, None,
                                           "evaluate"), steps)
        callback_list = callbacks_module.CallbackList(
            callbacks, add_progbar=verbose != 0, model=self, verbose=verbose, epochs=1,
            steps=batches.num_batches)
        logs = self._evaluate_batches(batches, callback_list)
        if return_dict:
            return logs
        return self._in_metrics_order(logs)

    def _in_metrics_order(self, logs: dict):
        names = self.metrics_names
        values = [logs[name] for name in names if name in logs]
        values += [logs[key] for key in sorted(logs) if key not in names]
        return values[0] if len(values) == 1 else values

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """The model's outputs on `x`, batch by batch, concatenated as NumPy arrays (the
        model's output structure for several outputs)."""
        verbose = _verbose(verbose)
        batches = EpochIterator(batches_of(x, None, None, batch_size, False, None, "predict"),
                                steps)
        callback_list = callbacks_module.CallbackList(
            callbacks, add_progbar=verbose != 0, model=self, verbose=verbose, epochs=1,
            steps=batches.num_batches)
        predict_function = self.make_predict_function()
        callback_list.on_predict_begin()
        outputs = []
        for first, last, group in executions(batches.epoch(),
                                             self._training.steps_per_execution):
            if first == 0:
                self._prepare(group[0])
            callback_list.on_predict_batch_begin(first)
            for batch in group:
                outputs.append(nest.map_structure(_to_numpy, predict_function(batch)))
            callback_list.on_predict_batch_end(last, {"outputs": outputs[-1]})
        callback_list.on_predict_end()
        if not outputs:
            raise ValueError("predict: the data gave no batch to predict on")
        return nest.map_structure(lambda *parts: np.concatenate(parts, axis=0), *outputs)

    # --- single batches ------------------------------------------------------------------

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None,
                       return_dict=False):
        """One train step on exactly this batch (metrics are not reset)."""
        self._assert_compiled("train_on_batch")
        batch = next(iter(batches_of(x, y, sample_weight, _rows(x), False, class_weight,
                                     "train_on_batch")))
        self._prepare(batch, training=True)
        logs = python_logs(self.make_train_function()(batch))
        return logs if return_dict else self._in_metrics_order(logs)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        self._assert_compiled("test_on_batch")
        batch = next(iter(batches_of(x, y, sample_weight, _rows(x), False, None,
                                     "test_on_batch")))
        self._prepare(batch)
        self.reset_metrics()
        logs = python_logs(self.make_test_function()(batch))
        return logs if return_dict else self._in_metrics_order(logs)

    def predict_on_batch(self, x):
        batch = next(iter(batches_of(x, None, None, _rows(x), False, None, "predict_on_batch")))
        return nest.map_structure(_to_numpy, self.make_predict_function()(batch))


# --- arguments and logs --------------------------------------------------------------------

def _verbose(verbose) -> int:
    if verbose == "auto":
        return 1
    if verbose not in (0, 1, 2) or isinstance(verbose, bool):
        raise ValueError(f"verbose must be 'auto', 0, 1 or 2, got {verbose!r}")
    return int(verbose)


def _validates(epoch: int, validation_freq) -> bool:
    """Whether the epoch (0-based) ends with validation: every `validation_freq` epochs,
    or the 1-based epochs listed."""
    if isinstance(validation_freq, int) and not isinstance(validation_freq, bool):
        if validation_freq < 1:
            raise ValueError(f"validation_freq must be a positive int or a list of epochs, "
                             f"got {validation_freq}")
        return (epoch + 1) % validation_freq == 0
    return epoch + 1 in validation_freq


def _is_dataset(x) -> bool:
    from ..data import Dataset
    return isinstance(x, Dataset)


def _validation_batches(validation_data, batch_size, steps) -> EpochIterator:
    if _is_dataset(validation_data):
        return EpochIterator(batches_of(validation_data, what="validation_data"), steps)
    if isinstance(validation_data, (tuple, list)) and len(validation_data) in (2, 3):
        return EpochIterator(batches_of(*validation_data, batch_size=batch_size,
                                        what="validation_data"), steps)
    raise ValueError("validation_data must be a tuple (x_val, y_val) or (x_val, y_val, "
                     f"val_sample_weight), or a Dataset; got {type(validation_data).__name__}")


def _rows(x) -> int:
    first = nest.flatten(x)[0]
    return int(np.shape(first.numpy() if isinstance(first, Tensor) else first)[0])


def _to_numpy(value):
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


def python_logs(logs) -> dict:
    """A step's result as logs: Python floats (arrays for non-scalar results), keys
    sorted, nested dicts flattened (as Keras 3 gives them to callbacks)."""
    if not isinstance(logs, dict):
        return {}
    flat = {}

    def add(mapping):
        for key, value in mapping.items():
            if isinstance(value, dict):
                add(value)
            else:
                array = _to_numpy(value)
                flat[key] = float(array) if array.ndim == 0 else array
    add(logs)
    return dict(sorted(flat.items()))
