"""Keras losses (`tf.keras.losses`), with Keras 3's reduction rules.

A `Loss` is called as `loss(y_true, y_pred, sample_weight=None)`: both inputs are cast to
the loss's dtype (float32 unless given), `call` gives one value per sample (the last
axis reduced), the sample weights multiply those values (ranks matched as Keras 3
matches them, then broadcast), and `reduction` combines them:

    "sum_over_batch_size", "mean"   sum(values * weights) / number of values
    "sum"                           sum(values * weights)
    "mean_with_sample_weight"       sum(values * weights) / sum(weights)
    "none", None                    values * weights, unreduced

The division is by the number of values, not by the sum of the weights, as in Keras 3; a
zero divisor gives 0. The per-sample functions (`mean_squared_error`, ...) live in
loss_functions.py and are re-exported here.
"""
from ..dtypes import as_dtype
from ..ops import elementwise as ew
from ..ops.reduce import reduce_sum
from ..ops.shape import cast
from .loss_functions import (BCE, KLD, MAE, MAPE, MSE, MSLE, as_tensor, batch_size_divisor,
                             bce, binary_crossentropy, categorical_crossentropy,
                             categorical_hinge, cosine_similarity, hinge, huber, kl_divergence,
                             kld, log_cosh, mae, mape, masked_sparse_categorical_crossentropy,
                             mean_absolute_error, mean_absolute_percentage_error,
                             mean_squared_error, mean_squared_logarithmic_error, mse, msle,
                             poisson, sparse_categorical_crossentropy, squared_hinge,
                             squeeze_or_expand_to_same_rank)
from .masking import get_keras_mask

REDUCTIONS = ("sum_over_batch_size", "sum", "mean", "mean_with_sample_weight", "none", None)
_AVERAGING = ("sum_over_batch_size", "mean", "mean_with_sample_weight")


def standardize_reduction(reduction):
    """`reduction` if Keras 3 knows it; ValueError naming the allowed values otherwise."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"Invalid value for argument `reduction`: {reduction!r}; expected "
                         f"one of {REDUCTIONS}")
    return reduction


def dtype_name(dtype):
    """The dtype a loss or metric computes in, as a string (Keras' default: float32)."""
    return as_dtype(dtype or "float32").name


def divide_no_nan(numerator, denominator):
    """numerator / denominator, and 0 where the denominator is 0 (with a finite gradient
    there too: the division never sees a zero)."""
    zero = ew.equal(denominator, 0)
    safe = ew.where(zero, as_tensor(1, denominator.dtype), denominator)
    return ew.where(zero, as_tensor(0, numerator.dtype), ew.divide(numerator, safe))


def apply_mask(sample_weight, mask, dtype, reduction):
    """Keras 3 folds a mask into the sample weights. For the batch-size averages the
    kept entries weigh total/kept, so the mean runs over the kept entries only."""
    if mask is None:
        return sample_weight
    float_mask = cast(mask, dtype)
    if reduction in ("sum_over_batch_size", "mean"):
        total = batch_size_divisor(float_mask)
        float_mask = ew.multiply(float_mask, divide_no_nan(total, reduce_sum(float_mask)))
    if sample_weight is None:
        return float_mask
    float_mask, sample_weight = squeeze_or_expand_to_same_rank(float_mask, sample_weight)
    return ew.multiply(sample_weight, float_mask)


def reduce_weighted_values(values, sample_weight=None, mask=None,
                           reduction="sum_over_batch_size", dtype=None):
    """Weight the per-sample `values` by `sample_weight` (and `mask`) and reduce them as
    `reduction` says (the table in this module's docstring)."""
    reduction = standardize_reduction(reduction)
    values = as_tensor(values, dtype)
    if sample_weight is not None:
        sample_weight = as_tensor(sample_weight, values.dtype)
    sample_weight = apply_mask(sample_weight, mask, values.dtype, reduction)
    if sample_weight is not None:
        values, sample_weight = squeeze_or_expand_to_same_rank(values, sample_weight)
        values = ew.multiply(values, sample_weight)
    if reduction in (None, "none") or tuple(values.shape) in ((), (0,)):
        return values
    total = reduce_sum(values)
    if reduction not in _AVERAGING:
        return total
    if reduction == "mean_with_sample_weight" and sample_weight is not None:
        divisor = reduce_sum(sample_weight)     # not broadcast: Keras 3 sums them as given
    else:
        divisor = batch_size_divisor(values)
    return divide_no_nan(total, divisor)


class Loss:
    """Keras 3's loss base class: subclasses define `call(y_true, y_pred)` returning one
    value per sample; `__call__` casts, weights and reduces (this module's docstring)."""

    def __init__(self, name=None, reduction="sum_over_batch_size", dtype=None):
        self.name = name or snake_case(type(self).__name__)
        self.reduction = standardize_reduction(reduction)
        self._dtype = dtype_name(dtype)

    @property
    def dtype(self):
        """The dtype the loss computes in, as a string ("float32" by default)."""
        return self._dtype

    def __call__(self, y_true, y_pred, sample_weight=None):
        # Keras 3: the mask a layer attached to y_pred (Embedding(mask_zero=True),
        # Masking...) weighs the values, with the loss's own mask (ignore_class).
        in_mask = get_keras_mask(y_pred)
        y_pred = as_tensor(y_pred, self.dtype)
        y_true = as_tensor(y_true, self.dtype)
        values, mask = self._call_with_mask(y_true, y_pred)
        if in_mask is not None:
            mask = in_mask if mask is None else ew.logical_and(cast(in_mask, "bool"), mask)
        return reduce_weighted_values(values, sample_weight, mask, self.reduction, self.dtype)

    def call(self, y_true, y_pred):
        """The per-sample loss values; subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__}: a Loss subclass must define "
                                  f"call(y_true, y_pred)")

    def _call_with_mask(self, y_true, y_pred):
        """(values, mask of the values that count, or None)."""
        return self.call(y_true, y_pred), None

    def get_config(self):
        return {"name": self.name, "reduction": self.reduction}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


class LossFunctionWrapper(Loss):
    """A per-sample loss function `fn(y_true, y_pred, **kwargs)` as a `Loss`: the ranks
    of y_true and y_pred are matched first (a trailing dimension of 1 squeezed or added),
    as Keras 3 does for every built-in loss class."""

    def __init__(self, fn, reduction="sum_over_batch_size", name=None, dtype=None, **kwargs):
        super().__init__(name=name or getattr(fn, "__name__", None), reduction=reduction,
                         dtype=dtype)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        return {**super().get_config(), **self._fn_kwargs}

    def __repr__(self):
        return f"<LossFunctionWrapper({getattr(self.fn, '__name__', self.fn)}, " \
               f"kwargs={self._fn_kwargs})>"


class MeanSquaredError(LossFunctionWrapper):
    """mean(square(y_true - y_pred), axis=-1) per sample, then `reduction`."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_error", dtype=None):
        super().__init__(mean_squared_error, reduction=reduction, name=name, dtype=dtype)

    def get_config(self):
        return Loss.get_config(self)


class MeanAbsoluteError(LossFunctionWrapper):
    """mean(abs(y_true - y_pred), axis=-1) per sample, then `reduction`."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_error",
                 dtype=None):
        super().__init__(mean_absolute_error, reduction=reduction, name=name, dtype=dtype)

    def get_config(self):
        return Loss.get_config(self)


class Huber(LossFunctionWrapper):
    """The Huber loss (`huber`): quadratic for errors up to `delta`, linear beyond."""

    def __init__(self, delta=1.0, reduction="sum_over_batch_size", name="huber_loss",
                 dtype=None):
        super().__init__(huber, reduction=reduction, name=name, dtype=dtype, delta=delta)
        self.delta = delta

    def get_config(self):
        # Keras 3.15 leaves delta out of the config; it is kept so from_config round-trips.
        return {**Loss.get_config(self), "delta": self.delta}


class MeanAbsolutePercentageError(LossFunctionWrapper):
    """100 * mean(|y_true - y_pred| / max(|y_true|, 1e-7), axis=-1) per sample."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_percentage_error",
                 dtype=None):
        super().__init__(mean_absolute_percentage_error, reduction=reduction, name=name,
                         dtype=dtype)

    def get_config(self):
        return Loss.get_config(self)


class MeanSquaredLogarithmicError(LossFunctionWrapper):
    """mean(square(log(1 + y_pred) - log(1 + y_true)), axis=-1) per sample (both floored
    at 1e-7)."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_logarithmic_error",
                 dtype=None):
        super().__init__(mean_squared_logarithmic_error, reduction=reduction, name=name,
                         dtype=dtype)

    def get_config(self):
        return Loss.get_config(self)


class LogCosh(LossFunctionWrapper):
    """mean(log(cosh(y_pred - y_true)), axis=-1) per sample."""

    def __init__(self, reduction="sum_over_batch_size", name="log_cosh", dtype=None):
        super().__init__(log_cosh, reduction=reduction, name=name, dtype=dtype)

    def get_config(self):
        return Loss.get_config(self)


class KLDivergence(LossFunctionWrapper):
    """sum(y_true * log(y_true / y_pred), axis=-1) per sample (both clipped to [1e-7, 1])."""

    def __init__(self, reduction="sum_over_batch_size", name="kl_divergence", dtype=None):
        super().__init__(kl_divergence, reduction=reduction, name=name, dtype=dtype)

    def get_config(self):
        return Loss.get_config(self)


class Poisson(LossFunctionWrapper):
    """mean(y_pred - y_true * log(y_pred + 1e-7), axis=-1) per sample."""

    def __init__(self, reduction="sum_over_batch_size", name="poisson", dtype=None):
        super().__init__(poisson, reduction=reduction, name=name, dtype=dtype)

    def get_config(self):
        return Loss.get_config(self)


class Hinge(LossFunctionWrapper):
    """mean(max(1 - y_true * y_pred, 0), axis=-1) per sample; 0/1 labels become -1/1."""

    def __init__(self, reduction="sum_over_batch_size", name="hinge", dtype=None):
        super().__init__(hinge, reduction=reduction, name=name, dtype=dtype)

    def get_config(self):
        return Loss.get_config(self)


class SquaredHinge(LossFunctionWrapper):
    """mean(square(max(1 - y_true * y_pred, 0)), axis=-1) per sample; 0/1 labels become -1/1."""

    def __init__(self, reduction="sum_over_batch_size", name="squared_hinge", dtype=None):
        super().__init__(squared_hinge, reduction=reduction, name=name, dtype=dtype)

    def get_config(self):
        return Loss.get_config(self)


class CategoricalHinge(LossFunctionWrapper):
    """max(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0) per sample."""

    def __init__(self, reduction="sum_over_batch_size", name="categorical_hinge", dtype=None):
        super().__init__(categorical_hinge, reduction=reduction, name=name, dtype=dtype)

    def get_config(self):
        return Loss.get_config(self)


class CosineSimilarity(LossFunctionWrapper):
    """-sum(l2_normalize(y_true) * l2_normalize(y_pred), axis) per sample: -1 when the
    vectors point the same way."""

    def __init__(self, axis=-1, reduction="sum_over_batch_size", name="cosine_similarity",
                 dtype=None):
        super().__init__(cosine_similarity, reduction=reduction, name=name, dtype=dtype,
                         axis=axis)
        self.axis = axis

    def get_config(self):
        # Keras 3.15 leaves axis out of the config; it is kept so from_config round-trips.
        return {**Loss.get_config(self), "axis": self.axis}


class BinaryCrossentropy(LossFunctionWrapper):
    """Binary crossentropy (`binary_crossentropy`) of labels in [0, 1] and probabilities
    or, with `from_logits=True`, logits."""

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="binary_crossentropy", dtype=None):
        super().__init__(binary_crossentropy, reduction=reduction, name=name, dtype=dtype,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)
        self.from_logits, self.label_smoothing, self.axis = from_logits, label_smoothing, axis

    def get_config(self):
        return {**Loss.get_config(self), "from_logits": self.from_logits,
                "label_smoothing": self.label_smoothing, "axis": self.axis}


class CategoricalCrossentropy(LossFunctionWrapper):
    """Categorical crossentropy (`categorical_crossentropy`) of one-hot (or probability)
    labels and probabilities or, with `from_logits=True`, logits."""

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="categorical_crossentropy",
                 dtype=None):
        super().__init__(categorical_crossentropy, reduction=reduction, name=name, dtype=dtype,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)
        self.from_logits, self.label_smoothing, self.axis = from_logits, label_smoothing, axis

    def get_config(self):
        return {**Loss.get_config(self), "from_logits": self.from_logits,
                "label_smoothing": self.label_smoothing, "axis": self.axis}


class SparseCategoricalCrossentropy(LossFunctionWrapper):
    """Crossentropy with integer labels (`sparse_categorical_crossentropy`). Labels equal
    to `ignore_class` are left out: their loss is 0 and, for the batch-size averages, they
    do not count in the divisor."""

    def __init__(self, from_logits=False, ignore_class=None, reduction="sum_over_batch_size",
                 axis=-1, name="sparse_categorical_crossentropy", dtype=None):
        super().__init__(sparse_categorical_crossentropy, reduction=reduction, name=name,
                         dtype=dtype, from_logits=from_logits, ignore_class=ignore_class,
                         axis=axis)
        self.from_logits, self.ignore_class, self.axis = from_logits, ignore_class, axis

    def _call_with_mask(self, y_true, y_pred):
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        return masked_sparse_categorical_crossentropy(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        return {**Loss.get_config(self), "from_logits": self.from_logits,
                "ignore_class": self.ignore_class}


_CLASSES = (Loss, LossFunctionWrapper, MeanSquaredError, MeanAbsoluteError, Huber,
            MeanAbsolutePercentageError, MeanSquaredLogarithmicError, LogCosh, KLDivergence,
            Poisson, Hinge, SquaredHinge, CategoricalHinge, CosineSimilarity,
            BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy)
_FUNCTIONS = (mean_squared_error, mean_absolute_error, huber, mean_absolute_percentage_error,
              mean_squared_logarithmic_error, log_cosh, kl_divergence, poisson, hinge,
              squared_hinge, categorical_hinge, cosine_similarity, binary_crossentropy,
              categorical_crossentropy, sparse_categorical_crossentropy)
# Keras 3's lookup table: class names, function names and the upper/lower-case aliases.
_BY_NAME = {obj.__name__: obj for obj in _CLASSES + _FUNCTIONS}
_BY_NAME.update({"mse": mean_squared_error, "MSE": mean_squared_error,
                 "mae": mean_absolute_error, "MAE": mean_absolute_error,
                 "mape": mean_absolute_percentage_error, "MAPE": mean_absolute_percentage_error,
                 "msle": mean_squared_logarithmic_error, "MSLE": mean_squared_logarithmic_error,
                 "kld": kl_divergence, "KLD": kl_divergence,
                 "bce": binary_crossentropy, "BCE": binary_crossentropy})


def snake_case(name):
    """A class name in snake_case ("MeanSquaredError" -> "mean_squared_error")."""
    out = "".join(f"_{c.lower()}" if c.isupper() else c for c in name)
    return out.lstrip("_")


def serialize(loss):
    """A `Loss` as {"class_name", "config"}; a loss function as its name."""
    if isinstance(loss, Loss):
        return {"class_name": type(loss).__name__, "config": loss.get_config()}
    return getattr(loss, "__name__", loss)


def deserialize(config):
    """The inverse of `serialize`."""
    if isinstance(config, str):
        return get(config)
    cls = _BY_NAME.get(config.get("class_name")) if isinstance(config, dict) else None
    if not (isinstance(cls, type) and issubclass(cls, Loss)):
        raise ValueError(f"Could not interpret loss config: {config!r}")
    return cls.from_config(dict(config.get("config", {})))


def get(identifier):
    """A loss from its identifier, as `keras.losses.get`: a function or class name
    ("mse", "mean_squared_error", "MeanSquaredError", ...; a class is instantiated with
    its defaults), a {"class_name", "config"} dict, a Loss instance or a callable (both
    returned as they are), or None."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    obj = _BY_NAME.get(identifier) if isinstance(identifier, str) else identifier
    if isinstance(obj, type):
        return obj()
    if callable(obj):
        return obj
    known = ", ".join(sorted(_BY_NAME))
    raise ValueError(f"Could not interpret loss identifier: {identifier!r} (known names: "
                     f"{known})")


def classify_targets(y_true_shape, y_pred_shape):
    """(is_binary, is_sparse_categorical) as Keras 3's compile decides them from the
    label and prediction shapes: binary when predictions have one column; sparse when the
    labels have a lower rank, or one column against several predicted ones."""
    y_true_shape, y_pred_shape = tuple(y_true_shape), tuple(y_pred_shape)
    if not y_pred_shape:
        raise ValueError("Cannot tell binary from categorical targets for a scalar y_pred")
    is_binary = y_pred_shape[-1] == 1
    is_sparse = len(y_true_shape) < len(y_pred_shape) or (
        bool(y_true_shape) and y_true_shape[-1] == 1 and (y_pred_shape[-1] or 0) > 1)
    return is_binary, is_sparse


def resolve(identifier, y_true_shape=None, y_pred_shape=None):
    """The `Loss` instance `Model.compile(loss=identifier)` uses, as Keras 3's compile
    builds it: "crossentropy" / "ce" become binary, sparse or categorical crossentropy
    by the target shapes (`classify_targets`); a function is wrapped in a
    `LossFunctionWrapper` named by the identifier string, or by the function's name."""
    if identifier is None:
        return None
    if isinstance(identifier, str) and identifier.lower() in ("crossentropy", "ce"):
        if y_true_shape is None or y_pred_shape is None:
            raise ValueError(f"loss={identifier!r} needs y_true_shape and y_pred_shape to "
                             f"choose binary, sparse or categorical crossentropy")
        is_binary, is_sparse = classify_targets(y_true_shape, y_pred_shape)
        fn = (binary_crossentropy if is_binary else
              sparse_categorical_crossentropy if is_sparse else categorical_crossentropy)
    else:
        fn = get(identifier)
    if isinstance(fn, Loss):
        return fn
    if not callable(fn):
        raise TypeError(f"loss: expected a name, Loss or callable, got {type(fn).__name__}")
    name = identifier if isinstance(identifier, str) else getattr(fn, "__name__", None)
    return LossFunctionWrapper(fn, name=name)


__all__ = ["Loss", "LossFunctionWrapper", "MeanSquaredError", "MeanAbsoluteError", "Huber",
           "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError", "LogCosh",
           "KLDivergence", "Poisson", "Hinge", "SquaredHinge", "CategoricalHinge",
           "CosineSimilarity", "BinaryCrossentropy", "CategoricalCrossentropy",
           "SparseCategoricalCrossentropy", "mean_squared_error", "mean_absolute_error", "huber",
           "mean_absolute_percentage_error", "mean_squared_logarithmic_error", "log_cosh",
           "kl_divergence", "poisson", "hinge", "squared_hinge", "categorical_hinge",
           "cosine_similarity", "binary_crossentropy", "categorical_crossentropy",
           "sparse_categorical_crossentropy", "mse", "MSE", "mae", "MAE", "mape", "MAPE", "msle",
           "MSLE", "kld", "KLD", "bce", "BCE", "get", "resolve", "serialize",
           "deserialize", "classify_targets", "reduce_weighted_values"]
