"""Keras 3's loss functions (`tf.keras.losses.mean_squared_error`, ...): one value per
sample, the last axis reduced, no sample weights and no reduction over the batch (the
`Loss` classes in losses.py add those).

Each function converts `y_pred` to a tensor and casts `y_true` to `y_pred`'s dtype, as
Keras 3 does. Probabilities (from_logits=False) are clipped to [EPSILON, 1 - EPSILON]
before their logarithm; logits (from_logits=True) go through TensorFlow's stable
`sigmoid_cross_entropy_with_logits` / `softmax_cross_entropy_with_logits`. Every
function is a composition of tapec ops, so a tape differentiates it.
"""
import numpy as np

from ..dtypes import as_dtype
from ..ops import elementwise as ew
from ..ops.math_extra import size
from ..ops.nn import (sigmoid_cross_entropy_with_logits, softmax_cross_entropy_with_logits,
                      sparse_softmax_cross_entropy_with_logits)
from ..ops.reduce import reduce_max, reduce_mean, reduce_sum
from ..ops.shape import cast, expand_dims, squeeze
from ..tensor import convert_to_tensor, is_tensor

# Keras' `backend.epsilon()`: the fuzz factor that keeps log() of a probability finite.
EPSILON = 1e-7


def as_tensor(x, dtype=None):
    """`x` as a tapec tensor, cast to `dtype` when one is given (Keras' convert_to_tensor:
    a tensor of another dtype is cast, not refused)."""
    if not is_tensor(x):
        return convert_to_tensor(x, dtype=dtype)
    if dtype is not None and x.dtype != as_dtype(dtype):
        return cast(x, dtype)
    return x


def squeeze_or_expand_to_same_rank(x1, x2, expand_rank_1=True):
    """Keras' rank matching: when the ranks differ by exactly one and the longer tensor's
    last dimension is 1, that dimension is squeezed away, or, when the shorter tensor is
    rank 1 and `expand_rank_1`, the shorter one gets a trailing dimension of 1."""
    rank1, rank2 = len(x1.shape), len(x2.shape)
    if rank1 == rank2 + 1 and x1.shape[-1] == 1:
        if rank2 == 1 and expand_rank_1:
            x2 = expand_dims(x2, -1)
        else:
            x1 = squeeze(x1, -1)
    elif rank2 == rank1 + 1 and x2.shape[-1] == 1:
        if rank1 == 1 and expand_rank_1:
            x1 = expand_dims(x1, -1)
        else:
            x2 = squeeze(x2, -1)
    return x1, x2


def _regression_pair(y_true, y_pred):
    y_pred = as_tensor(y_pred)
    y_true = as_tensor(y_true, y_pred.dtype)
    return squeeze_or_expand_to_same_rank(y_true, y_pred)


def mean_squared_error(y_true, y_pred):
    """mean(square(y_true - y_pred), axis=-1), one value per sample."""
    y_true, y_pred = _regression_pair(y_true, y_pred)
    return reduce_mean(ew.square(ew.subtract(y_true, y_pred)), axis=-1)


def mean_absolute_error(y_true, y_pred):
    """mean(abs(y_true - y_pred), axis=-1), one value per sample."""
    y_true, y_pred = _regression_pair(y_true, y_pred)
    return reduce_mean(ew.abs(ew.subtract(y_true, y_pred)), axis=-1)


def huber(y_true, y_pred, delta=1.0):
    """The Huber loss, mean over the last axis of
    0.5 * e**2 where |e| <= delta, else delta * |e| - 0.5 * delta**2  (e = y_pred - y_true)."""
    y_true, y_pred = _regression_pair(y_true, y_pred)
    delta = as_tensor(delta, y_pred.dtype)
    error = ew.subtract(y_pred, y_true)
    magnitude = ew.abs(error)
    quadratic = ew.multiply(0.5, ew.square(error))
    linear = ew.subtract(ew.multiply(delta, magnitude), ew.multiply(0.5, ew.square(delta)))
    return reduce_mean(ew.where(ew.less_equal(magnitude, delta), quadratic, linear), axis=-1)


def compatible_shapes(shape1, shape2):
    """Equal ranks, and equal dimensions wherever both are known."""
    return len(shape1) == len(shape2) and all(
        a is None or b is None or a == b for a, b in zip(shape1, shape2))


def mean_absolute_percentage_error(y_true, y_pred):
    """100 * mean(|y_true - y_pred| / max(|y_true|, 1e-7), axis=-1)."""
    y_true, y_pred = _regression_pair(y_true, y_pred)
    scale = ew.maximum(ew.abs(y_true), as_tensor(EPSILON, y_pred.dtype))
    return ew.multiply(100.0, reduce_mean(ew.abs(ew.divide(ew.subtract(y_true, y_pred), scale)),
                                          axis=-1))


def mean_squared_logarithmic_error(y_true, y_pred):
    """mean(square(log(max(y_pred, 1e-7) + 1) - log(max(y_true, 1e-7) + 1)), axis=-1)."""
    y_true, y_pred = _regression_pair(y_true, y_pred)
    floor = as_tensor(EPSILON, y_pred.dtype)
    first = ew.log(ew.add(ew.maximum(y_pred, floor), 1.0))
    second = ew.log(ew.add(ew.maximum(y_true, floor), 1.0))
    return reduce_mean(ew.square(ew.subtract(first, second)), axis=-1)


def log_cosh(y_true, y_pred):
    """mean(log(cosh(y_pred - y_true)), axis=-1), computed as x + softplus(-2x) - log 2
    (no overflow for large errors)."""
    y_true, y_pred = _regression_pair(y_true, y_pred)
    x = ew.subtract(y_pred, y_true)
    return reduce_mean(ew.subtract(ew.add(x, ew.softplus(ew.multiply(-2.0, x))),
                                   float(np.log(2.0))), axis=-1)


def _l2_normalize(x, axis):
    # Keras 3: x * min(1/sqrt(sum(x^2)), 1/epsilon), so a zero vector stays zero.
    inverse_norm = ew.divide(1.0, ew.sqrt(reduce_sum(ew.square(x), axis=axis, keepdims=True)))
    return ew.multiply(x, ew.minimum(inverse_norm, as_tensor(1.0 / EPSILON, x.dtype)))


def cosine_similarity(y_true, y_pred, axis=-1):
    """-sum(l2_normalize(y_true) * l2_normalize(y_pred), axis): -1 for parallel vectors,
    0 for orthogonal ones."""
    y_true, y_pred = _regression_pair(y_true, y_pred)
    return ew.negative(reduce_sum(ew.multiply(_l2_normalize(y_true, axis),
                                              _l2_normalize(y_pred, axis)), axis=axis))


def kl_divergence(y_true, y_pred):
    """sum(t * log(t / p), axis=-1) with t and p clipped to [1e-7, 1]."""
    y_pred = as_tensor(y_pred)
    t = ew.clip_by_value(as_tensor(y_true, y_pred.dtype), EPSILON, 1.0)
    p = ew.clip_by_value(y_pred, EPSILON, 1.0)
    return reduce_sum(ew.multiply(t, ew.log(ew.divide(t, p))), axis=-1)


def poisson(y_true, y_pred):
    """mean(y_pred - y_true * log(y_pred + 1e-7), axis=-1)."""
    y_pred = as_tensor(y_pred)
    y_true = as_tensor(y_true, y_pred.dtype)
    return reduce_mean(ew.subtract(y_pred, ew.multiply(y_true, ew.log(ew.add(y_pred, EPSILON)))),
                       axis=-1)


def _hinge_labels(y_true):
    """Labels that are all 0 or 1 become -1 / 1 (decided on the values, at run time,
    without a Python branch); other labels are used as they are."""
    binary = ew.logical_or(ew.equal(y_true, 0), ew.equal(y_true, 1))
    all_binary = ew.equal(reduce_sum(cast(ew.logical_not(binary), y_true.dtype)), 0)
    return ew.where(all_binary, ew.subtract(ew.multiply(2.0, y_true), 1.0), y_true)


def _hinge_margins(y_true, y_pred):
    y_pred = as_tensor(y_pred)
    y_true = _hinge_labels(as_tensor(y_true, y_pred.dtype))
    return ew.maximum(ew.subtract(1.0, ew.multiply(y_true, y_pred)), as_tensor(0, y_pred.dtype))


def hinge(y_true, y_pred):
    """mean(max(1 - y_true * y_pred, 0), axis=-1), labels -1 / 1 (0 / 1 are converted)."""
    return reduce_mean(_hinge_margins(y_true, y_pred), axis=-1)


def squared_hinge(y_true, y_pred):
    """mean(square(max(1 - y_true * y_pred, 0)), axis=-1), labels as in `hinge`."""
    return reduce_mean(ew.square(_hinge_margins(y_true, y_pred)), axis=-1)


def categorical_hinge(y_true, y_pred):
    """max(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0) over the last axis
    (one-hot labels)."""
    y_pred = as_tensor(y_pred)
    y_true = as_tensor(y_true, y_pred.dtype)
    positive = reduce_sum(ew.multiply(y_true, y_pred), axis=-1)
    negative = reduce_max(ew.multiply(ew.subtract(1.0, y_true), y_pred), axis=-1)
    return ew.maximum(ew.add(ew.subtract(negative, positive), 1.0), as_tensor(0, y_pred.dtype))


def _same_shape(name, target, output):
    """Keras requires equal ranks and (known) dimensions for the crossentropies: they do
    not broadcast labels against predictions."""
    if not compatible_shapes(tuple(target.shape), tuple(output.shape)):
        raise ValueError(f"{name}: y_true and y_pred must have the same shape, got y_true "
                         f"{tuple(target.shape)} and y_pred {tuple(output.shape)}")


def _clipped(probabilities):
    return ew.clip_by_value(probabilities, EPSILON, 1.0 - EPSILON)


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Binary crossentropy, averaged over `axis`: the mean of
    -(t log p + (1 - t) log(1 - p)) with p = clip(y_pred, 1e-7, 1 - 1e-7), or
    sigmoid_cross_entropy_with_logits(t, y_pred) when `from_logits`. Labels are smoothed
    towards 1/2: t = y_true * (1 - label_smoothing) + label_smoothing / 2."""
    name = "binary_crossentropy"
    y_pred = as_tensor(y_pred)
    y_true = as_tensor(y_true, y_pred.dtype)
    _same_shape(name, y_true, y_pred)
    if label_smoothing:
        y_true = ew.add(ew.multiply(y_true, 1.0 - label_smoothing), 0.5 * label_smoothing)
    if from_logits:
        elementwise = sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    else:
        p = _clipped(y_pred)
        log_likelihood = ew.add(ew.multiply(y_true, ew.log(p)),
                                ew.multiply(ew.subtract(1.0, y_true), ew.log(ew.subtract(1.0, p))))
        elementwise = ew.negative(log_likelihood)
    return reduce_mean(elementwise, axis=axis)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Categorical crossentropy along `axis`: -sum(t log p) with p = y_pred normalised to
    sum 1 along `axis` and clipped to [1e-7, 1 - 1e-7], or
    softmax_cross_entropy_with_logits(t, y_pred, axis) when `from_logits`. Labels are
    smoothed towards uniform: t = y_true * (1 - label_smoothing) + label_smoothing / C,
    C the size of the last axis (Keras 3 uses the last axis whatever `axis` is)."""
    name = "categorical_crossentropy"
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise ValueError(f"{name}: axis must be an int, got {axis!r} of type "
                         f"{type(axis).__name__}")
    y_pred = as_tensor(y_pred)
    y_true = as_tensor(y_true, y_pred.dtype)
    if not y_true.shape:
        raise ValueError(f"{name}: y_true and y_pred must be at least rank 1, got shapes "
                         f"{tuple(y_true.shape)} and {tuple(y_pred.shape)}")
    _same_shape(name, y_true, y_pred)
    if label_smoothing:
        classes = y_true.shape[-1]
        y_true = ew.add(ew.multiply(y_true, 1.0 - label_smoothing), label_smoothing / classes)
    if from_logits:
        return softmax_cross_entropy_with_logits(labels=y_true, logits=y_pred, axis=axis)
    p = _clipped(ew.divide(y_pred, reduce_sum(y_pred, axis=axis, keepdims=True)))
    return ew.negative(reduce_sum(ew.multiply(y_true, ew.log(p)), axis=axis))


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None,
                                    axis=-1):
    """Crossentropy with integer class labels `y_true` (shape y_pred.shape[:-1], or with
    a trailing 1). With probabilities it is Keras 3's
    sparse_softmax_cross_entropy_with_logits(y_true, log(clip(y_pred, 1e-7, 1 - 1e-7))),
    which equals -log p[y_true] when the clipped row sums to 1. Only the last axis may be
    the class axis. `ignore_class` labels give a loss of 0 (the `Loss` classes also leave
    them out of the mean)."""
    return masked_sparse_categorical_crossentropy(y_true, y_pred, from_logits, ignore_class,
                                                  axis)[0]


def masked_sparse_categorical_crossentropy(y_true, y_pred, from_logits=False,
                                           ignore_class=None, axis=-1):
    """`sparse_categorical_crossentropy` and the mask of labels that count (None when no
    `ignore_class` is given)."""
    name = "sparse_categorical_crossentropy"
    y_pred = as_tensor(y_pred)
    if not y_pred.shape:
        raise ValueError(f"{name}: y_pred must be at least rank 1, got shape ()")
    if axis not in (-1, len(y_pred.shape) - 1):
        raise ValueError(f"{name}: only the last axis can be the class axis (axis=-1); got "
                         f"axis={axis} for y_pred of shape {tuple(y_pred.shape)}")
    y_true = as_tensor(y_true)
    if len(y_true.shape) == len(y_pred.shape) and y_true.shape[-1] == 1:
        y_true = squeeze(y_true, -1)
    if not compatible_shapes(tuple(y_true.shape), tuple(y_pred.shape)[:-1]):
        raise ValueError(f"{name}: y_true must have shape y_pred.shape[:-1] (class indices), "
                         f"got y_true {tuple(y_true.shape)} and y_pred {tuple(y_pred.shape)}")
    mask = None
    if ignore_class is not None:
        mask = ew.not_equal(y_true, as_tensor(ignore_class, y_true.dtype))
        y_true = ew.where(mask, y_true, as_tensor(0, y_true.dtype))
    if y_true.dtype.is_floating or y_true.dtype.is_bool:
        y_true = cast(y_true, "int64")
    logits = y_pred if from_logits else ew.log(_clipped(y_pred))
    losses = sparse_softmax_cross_entropy_with_logits(labels=y_true, logits=logits)
    if mask is not None:
        losses = ew.where(mask, losses, as_tensor(0, losses.dtype))
    return losses, mask


def batch_size_divisor(values):
    """The number of loss values, in their dtype (read at run time, so one trace serves
    every batch size)."""
    return cast(size(values), values.dtype)


# The short names Keras 3 and tf.keras accept for the same functions.
mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kl_divergence
bce = BCE = binary_crossentropy
