"""Keras metrics (`tf.keras.metrics`): stateful `update_state` / `result` / `reset_state`.

A metric's state lives in non-trainable `tapec.Variable`s updated with `assign_add`, so a
metric updated inside `tapec.function` keeps its running totals across calls (each call
writes), exactly as it does eagerly. Most metrics are a `Mean` of a per-sample function
(`MeanMetricWrapper`): total += sum(values * weights), count += sum(weights) (or the
number of samples), result = total / count (0 before any update).

`resolve` builds the metric `Model.compile(metrics=[...])` uses; "accuracy" / "acc"
become binary, sparse categorical or categorical accuracy from the target shapes, as in
Keras 3's compile. The "loss" entry of the training logs is `Mean(name="loss")` updated
with each batch's loss and `sample_weight=batch_size`, as Keras 3's trainer does.
"""
import numpy as np

from ..ops import elementwise as ew
from ..ops.math_extra import size
from ..ops.reduce import argmax, reduce_mean, reduce_sum
from ..ops.shape import cast, identity, shape as shape_of, squeeze
from ..tensor import Variable
from . import losses as losses_module
from .loss_functions import (as_tensor, binary_crossentropy, categorical_crossentropy,
                             categorical_hinge, cosine_similarity, hinge, kl_divergence,
                             log_cosh, masked_sparse_categorical_crossentropy,
                             mean_absolute_error, mean_absolute_percentage_error,
                             mean_squared_error, mean_squared_logarithmic_error, poisson,
                             sparse_categorical_crossentropy, squared_hinge,
                             squeeze_or_expand_to_same_rank)
from .losses import divide_no_nan, dtype_name
from .masking import get_keras_mask


class Metric:
    """Keras 3's metric base class. Subclasses create their state with `add_variable` in
    `__init__` and define `update_state(...)` and `result()`; `reset_state` sets every
    variable to zeros, and calling the metric updates it and returns the result."""

    def __init__(self, dtype=None, name=None):
        self.name = name or losses_module.snake_case(type(self).__name__)
        self._dtype = dtype_name(dtype)
        self._variables = []

    @property
    def dtype(self):
        """The dtype of the state and the result, as a string ("float32" by default)."""
        return self._dtype

    @property
    def variables(self):
        """The metric's state: non-trainable Variables."""
        return list(self._variables)

    def add_variable(self, shape=(), initializer="zeros", dtype=None, aggregation="sum",
                     name=None):
        """A non-trainable Variable of `shape` (`initializer`: "zeros", "ones", a number
        or a callable(shape, dtype)) that `reset_state` sets back to zeros."""
        dtype = dtype or self.dtype
        if callable(initializer):
            value = initializer(shape, dtype=dtype)
        elif initializer in ("zeros", "ones"):
            value = np.full(shape, 1.0 if initializer == "ones" else 0.0)
        elif isinstance(initializer, (int, float)):
            value = np.full(shape, float(initializer))
        else:
            raise ValueError(f"{type(self).__name__}.add_variable: unknown initializer "
                             f"{initializer!r} (use 'zeros', 'ones', a number or a callable)")
        variable = Variable(as_tensor(value, dtype), trainable=False, name=name)
        self._variables.append(variable)
        return variable

    add_weight = add_variable

    def update_state(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}: a Metric subclass must define "
                                  f"update_state")

    def result(self):
        raise NotImplementedError(f"{type(self).__name__}: a Metric subclass must define "
                                  f"result")

    def reset_state(self):
        """Every state variable back to zeros."""
        for variable in self._variables:
            variable.assign(np.zeros(tuple(variable.shape), dtype=variable.dtype.name))

    def __call__(self, *args, **kwargs):
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


def _samplewise(values, sample_weight, reduce_fn, dtype):
    """Keras 3's reduction of `values` to one value per sample, weighted: the weights'
    rank is matched to the values', the values are reduced (`reduce_fn`) down to the
    weights' rank and multiplied by the weights (broadcasting), and anything left beyond
    the batch axis is reduced. Returns (values, the rank-matched weights or None)."""
    values = as_tensor(values, dtype)
    if sample_weight is not None:
        sample_weight = as_tensor(sample_weight, dtype)
        values, sample_weight = squeeze_or_expand_to_same_rank(values, sample_weight)
        weight_rank, value_rank = len(sample_weight.shape), len(values.shape)
        if value_rank > weight_rank:
            values = reduce_fn(values, axis=list(range(weight_rank, value_rank)))
        values = ew.multiply(values, sample_weight)
    if len(values.shape) > 1:
        values = reduce_fn(values, axis=list(range(1, len(values.shape))))
    return values, sample_weight


def _weight_count(values, sample_weight, dtype):
    """What Keras 3 adds to a Mean's count: the sum of the weights broadcast to the
    weighted values' shape and averaged down to one per sample. Broadcasting repeats
    every weight equally often, so that is sum(weights) * samples / size(weights), with
    no shape read that would tie a traced program to one batch size."""
    samples = cast(shape_of(values)[0], dtype) if values.shape else as_tensor(1, dtype)
    if sample_weight is None:
        return samples
    return ew.multiply(reduce_sum(sample_weight),
                       ew.divide(samples, cast(size(sample_weight), dtype)))


class Sum(Metric):
    """The (weighted) sum of all values seen: state `total`."""

    def __init__(self, name="sum", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable(name="total")

    def update_state(self, values, sample_weight=None):
        values, _ = _samplewise(values, sample_weight, reduce_sum, self.dtype)
        self.total.assign_add(reduce_sum(values))

    def result(self):
        return identity(self.total)


class Mean(Metric):
    """The (weighted) mean of all values seen: total / count, state `total` and `count`
    (count: the sum of the sample weights, or the number of samples)."""

    def __init__(self, name="mean", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable(name="total")
        self.count = self.add_variable(name="count")

    def update_state(self, values, sample_weight=None):
        values, sample_weight = _samplewise(values, sample_weight, reduce_mean, self.dtype)
        self.total.assign_add(reduce_sum(values))
        self.count.assign_add(_weight_count(values, sample_weight, self.dtype))

    def result(self):
        return divide_no_nan(identity(self.total), self.count)


class MeanMetricWrapper(Mean):
    """The mean of a per-sample function `fn(y_true, y_pred, **kwargs)` over all samples
    seen (weighted by `sample_weight`); any loss function makes a loss metric."""

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name=name or getattr(fn, "__name__", None) or "mean_metric_wrapper",
                         dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        # Keras 3: a mask attached to y_pred multiplies the sample weights.
        mask = get_keras_mask(y_pred)
        values = self._fn(y_true, y_pred, **self._fn_kwargs)
        if mask is not None:
            sample_weight = losses_module.apply_mask(
                None if sample_weight is None else as_tensor(sample_weight, self.dtype),
                mask, self.dtype, "sum")
        super().update_state(values, sample_weight)

    def get_config(self):
        return {**super().get_config(), **self._fn_kwargs}


# --- per-sample functions of the accuracy metrics (1.0 where right, 0.0 where wrong) ------

def accuracy(y_true, y_pred):
    """1.0 where y_true == y_pred (y_true cast to y_pred's dtype), else 0.0."""
    y_pred = as_tensor(y_pred)
    y_true = as_tensor(y_true, y_pred.dtype)
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    return cast(ew.equal(y_true, y_pred), "float32")


def binary_accuracy(y_true, y_pred, threshold=0.5):
    """1.0 where (y_pred > threshold) equals y_true, else 0.0."""
    y_pred, y_true = as_tensor(y_pred), as_tensor(y_true)
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    predicted = cast(ew.greater(y_pred, as_tensor(threshold, y_pred.dtype)), y_true.dtype)
    return cast(ew.equal(y_true, predicted), "float32")


def _class_matches(y_true_labels, y_pred):
    """1.0 where argmax(y_pred, -1) equals the integer-valued `y_true_labels` (a trailing
    label dimension of 1 is squeezed first), else 0.0."""
    y_true_labels = as_tensor(y_true_labels, y_pred.dtype)
    if len(y_true_labels.shape) == len(y_pred.shape) and y_true_labels.shape[-1] == 1:
        y_true_labels = squeeze(y_true_labels, -1)
    predicted = cast(argmax(y_pred, axis=-1), y_true_labels.dtype)
    return cast(ew.equal(y_true_labels, predicted), "float32")


def categorical_accuracy(y_true, y_pred):
    """1.0 where argmax(y_true, -1) == argmax(y_pred, -1) (one-hot labels), else 0.0."""
    y_pred = as_tensor(y_pred)
    return _class_matches(argmax(as_tensor(y_true), axis=-1), y_pred)


def sparse_categorical_accuracy(y_true, y_pred):
    """1.0 where the integer label y_true == argmax(y_pred, -1), else 0.0 (labels of
    shape y_pred.shape[:-1], or with a trailing 1)."""
    y_pred = as_tensor(y_pred)
    return _class_matches(y_true, y_pred)


# --- the metric classes -------------------------------------------------------------------

class Accuracy(MeanMetricWrapper):
    """How often predictions equal labels exactly (`accuracy`)."""

    def __init__(self, name="accuracy", dtype=None):
        super().__init__(accuracy, name=name, dtype=dtype)


class BinaryAccuracy(MeanMetricWrapper):
    """How often (y_pred > threshold) matches the binary labels (`binary_accuracy`)."""

    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        super().__init__(binary_accuracy, name=name, dtype=dtype, threshold=threshold)
        self.threshold = threshold


class CategoricalAccuracy(MeanMetricWrapper):
    """How often argmax(y_pred) matches one-hot labels (`categorical_accuracy`)."""

    def __init__(self, name="categorical_accuracy", dtype=None):
        super().__init__(categorical_accuracy, name=name, dtype=dtype)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    """How often argmax(y_pred) matches integer labels (`sparse_categorical_accuracy`)."""

    def __init__(self, name="sparse_categorical_accuracy", dtype=None):
        super().__init__(sparse_categorical_accuracy, name=name, dtype=dtype)


class MeanSquaredError(MeanMetricWrapper):
    """The mean of `mean_squared_error` over all samples seen."""

    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(mean_squared_error, name=name, dtype=dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    """The mean of `mean_absolute_error` over all samples seen."""

    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(mean_absolute_error, name=name, dtype=dtype)


class MeanAbsolutePercentageError(MeanMetricWrapper):
    """The mean of `mean_absolute_percentage_error` over all samples seen."""

    def __init__(self, name="mean_absolute_percentage_error", dtype=None):
        super().__init__(mean_absolute_percentage_error, name=name, dtype=dtype)


class MeanSquaredLogarithmicError(MeanMetricWrapper):
    """The mean of `mean_squared_logarithmic_error` over all samples seen."""

    def __init__(self, name="mean_squared_logarithmic_error", dtype=None):
        super().__init__(mean_squared_logarithmic_error, name=name, dtype=dtype)


class LogCoshError(MeanMetricWrapper):
    """The mean of `log_cosh` over all samples seen."""

    def __init__(self, name="logcosh", dtype=None):
        super().__init__(log_cosh, name=name, dtype=dtype)


class KLDivergence(MeanMetricWrapper):
    """The mean of `kl_divergence` over all samples seen."""

    def __init__(self, name="kl_divergence", dtype=None):
        super().__init__(kl_divergence, name=name, dtype=dtype)


class Poisson(MeanMetricWrapper):
    """The mean of `poisson` over all samples seen."""

    def __init__(self, name="poisson", dtype=None):
        super().__init__(poisson, name=name, dtype=dtype)


class Hinge(MeanMetricWrapper):
    """The mean of `hinge` over all samples seen."""

    def __init__(self, name="hinge", dtype=None):
        super().__init__(hinge, name=name, dtype=dtype)


class SquaredHinge(MeanMetricWrapper):
    """The mean of `squared_hinge` over all samples seen."""

    def __init__(self, name="squared_hinge", dtype=None):
        super().__init__(squared_hinge, name=name, dtype=dtype)


class CategoricalHinge(MeanMetricWrapper):
    """The mean of `categorical_hinge` over all samples seen."""

    def __init__(self, name="categorical_hinge", dtype=None):
        super().__init__(categorical_hinge, name=name, dtype=dtype)


class CosineSimilarity(MeanMetricWrapper):
    """The mean cosine similarity sum(l2_normalize(y_true) * l2_normalize(y_pred), axis):
    1 when the vectors point the same way (the loss of that name is its negative)."""

    def __init__(self, name="cosine_similarity", dtype=None, axis=-1):
        super().__init__(_cosine_similarity, name=name, dtype=dtype, axis=axis)


def _cosine_similarity(y_true, y_pred, axis=-1):
    return ew.negative(cosine_similarity(y_true, y_pred, axis=axis))


class RootMeanSquaredError(Mean):
    """sqrt of the (weighted) mean of square(y_pred - y_true) over every element seen."""

    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = squeeze_or_expand_to_same_rank(as_tensor(y_true, self.dtype),
                                                        as_tensor(y_pred, self.dtype))
        super().update_state(ew.square(ew.subtract(y_pred, y_true)), sample_weight)

    def result(self):
        return ew.sqrt(super().result())


class BinaryCrossentropy(MeanMetricWrapper):
    """The mean of `binary_crossentropy` over all samples seen."""

    def __init__(self, name="binary_crossentropy", dtype=None, from_logits=False,
                 label_smoothing=0.0):
        super().__init__(binary_crossentropy, name=name, dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing)


class CategoricalCrossentropy(MeanMetricWrapper):
    """The mean of `categorical_crossentropy` over all samples seen."""

    def __init__(self, name="categorical_crossentropy", dtype=None, from_logits=False,
                 label_smoothing=0.0, axis=-1):
        super().__init__(categorical_crossentropy, name=name, dtype=dtype,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)


class SparseCategoricalCrossentropy(MeanMetricWrapper):
    """The mean of `sparse_categorical_crossentropy` over all samples seen; labels equal
    to `ignore_class` are not counted."""

    def __init__(self, name="sparse_categorical_crossentropy", dtype=None, from_logits=False,
                 ignore_class=None, axis=-1):
        super().__init__(sparse_categorical_crossentropy, name=name, dtype=dtype,
                         from_logits=from_logits, ignore_class=ignore_class, axis=axis)

    def update_state(self, y_true, y_pred, sample_weight=None):
        values, mask = masked_sparse_categorical_crossentropy(y_true, y_pred,
                                                              **self._fn_kwargs)
        if mask is not None:
            mask = cast(mask, self.dtype)
            if sample_weight is None:
                sample_weight = mask
            else:
                mask, weights = squeeze_or_expand_to_same_rank(
                    mask, as_tensor(sample_weight, self.dtype))
                sample_weight = ew.multiply(weights, mask)
        Mean.update_state(self, values, sample_weight)


_CLASSES = (Metric, Mean, Sum, MeanMetricWrapper, Accuracy, BinaryAccuracy,
            CategoricalAccuracy, SparseCategoricalAccuracy, MeanSquaredError,
            MeanAbsoluteError, RootMeanSquaredError, MeanAbsolutePercentageError,
            MeanSquaredLogarithmicError, LogCoshError, KLDivergence, Poisson, Hinge,
            SquaredHinge, CategoricalHinge, CosineSimilarity, BinaryCrossentropy,
            CategoricalCrossentropy, SparseCategoricalCrossentropy)
# Keras 3's lookup table: class names, their snake_case forms, and the short aliases.
_BY_NAME = {cls.__name__: cls for cls in _CLASSES}
_BY_NAME.update({losses_module.snake_case(cls.__name__): cls for cls in _CLASSES})
_BY_NAME.update({"mse": MeanSquaredError, "MSE": MeanSquaredError, "mae": MeanAbsoluteError,
                 "MAE": MeanAbsoluteError, "mape": MeanAbsolutePercentageError,
                 "MAPE": MeanAbsolutePercentageError, "msle": MeanSquaredLogarithmicError,
                 "MSLE": MeanSquaredLogarithmicError, "bce": BinaryCrossentropy,
                 "BCE": BinaryCrossentropy})


def get(identifier):
    """A metric from its identifier, as `keras.metrics.get`: a class name or its
    snake_case form ("accuracy", "mean_squared_error", "mse", "SparseCategoricalAccuracy",
    ...; instantiated with the defaults), a {"class_name", "config"} dict, a Metric
    instance or a callable (returned as they are), or None. "acc" is not a name here
    (only `resolve` knows it, as in Keras 3)."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        cls = _BY_NAME.get(identifier.get("class_name"))
        if cls is None:
            raise ValueError(f"Could not interpret metric config: {identifier!r}")
        return cls.from_config(dict(identifier.get("config", {})))
    obj = _BY_NAME.get(identifier) if isinstance(identifier, str) else identifier
    if isinstance(obj, type):
        return obj()
    if callable(obj):
        return obj
    known = ", ".join(sorted(_BY_NAME))
    raise ValueError(f"Could not interpret metric identifier: {identifier!r} (known names: "
                     f"{known})")


_ACCURACY_FOR_LOSS = {"binary_crossentropy": BinaryAccuracy, "bce": BinaryAccuracy,
                      "categorical_crossentropy": CategoricalAccuracy,
                      "sparse_categorical_crossentropy": SparseCategoricalAccuracy}


def _loss_name(loss):
    if isinstance(loss, str):
        return losses_module.snake_case(loss) if loss[:1].isupper() else loss.lower()
    fn = getattr(loss, "fn", loss)      # a LossFunctionWrapper names its function
    return getattr(fn, "__name__", losses_module.snake_case(type(loss).__name__))


def _accuracy_class(identifier, loss, y_true_shape, y_pred_shape):
    if y_true_shape is not None and y_pred_shape is not None:
        is_binary, is_sparse = losses_module.classify_targets(y_true_shape, y_pred_shape)
        return (BinaryAccuracy if is_binary else
                SparseCategoricalAccuracy if is_sparse else CategoricalAccuracy)
    by_loss = _ACCURACY_FOR_LOSS.get(_loss_name(loss)) if loss is not None else None
    if by_loss is None:
        raise ValueError(f"metrics=[{identifier!r}]: give y_true_shape and y_pred_shape (or a "
                         f"crossentropy loss) to choose binary, categorical or sparse "
                         f"categorical accuracy; got loss={loss!r}")
    return by_loss


def resolve(identifier, loss=None, y_true_shape=None, y_pred_shape=None):
    """The `Metric` `Model.compile(metrics=[identifier])` uses, as Keras 3's compile
    builds it. "accuracy" / "acc" (any case) become `BinaryAccuracy` when y_pred has one
    column, `SparseCategoricalAccuracy` when the labels have a lower rank or one column
    against several, else `CategoricalAccuracy` (the shapes decide, as in Keras 3; without
    them the crossentropy `loss` decides, as in Keras 2). A metric named by a string is
    named by that string ("mse" stays "mse"); a function is wrapped in a
    `MeanMetricWrapper` named after it."""
    if identifier is None:
        raise ValueError("Expected a metric, received None")
    if isinstance(identifier, str) and identifier.lower() in ("accuracy", "acc"):
        metric = _accuracy_class(identifier, loss, y_true_shape, y_pred_shape)(name=identifier)
    else:
        metric = get(identifier)
        if not isinstance(metric, Metric):
            metric = MeanMetricWrapper(metric)
        if isinstance(identifier, str):
            metric.name = identifier
    return metric


__all__ = ["Metric", "Mean", "Sum", "MeanMetricWrapper", "Accuracy", "BinaryAccuracy",
           "CategoricalAccuracy", "SparseCategoricalAccuracy", "MeanSquaredError",
           "MeanAbsoluteError", "RootMeanSquaredError", "MeanAbsolutePercentageError",
           "MeanSquaredLogarithmicError", "LogCoshError", "KLDivergence", "Poisson", "Hinge",
           "SquaredHinge", "CategoricalHinge", "CosineSimilarity", "BinaryCrossentropy",
           "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "accuracy",
           "binary_accuracy", "categorical_accuracy", "sparse_categorical_accuracy",
           "mean_squared_error", "mean_absolute_error", "binary_crossentropy",
           "categorical_crossentropy", "sparse_categorical_crossentropy", "get", "resolve"]
