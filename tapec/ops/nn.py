"""Neural-network ops: the softmax family and losses.

`log_softmax`, `sparse_softmax_cross_entropy_with_logits` and
`sigmoid_cross_entropy_with_logits` are composites (stable formulas over primitives,
differentiated through their parts). `softmax` is a primitive so that generated code
computes it as an expert writes it (one exp, one sum, one division) and the
cross-entropy gradient `softmax(logits) - labels` costs no logsumexp.
`softmax_cross_entropy_with_logits` is a primitive because TensorFlow's fused kernel
defines its gradient as `softmax(logits) - labels` (exact when each label row sums to
1), which no composition of the loss formula reproduces for labels that do not.
"""
from __future__ import annotations

import numpy as np

from . import elementwise as ew
from .reduce import _check_kind, _logsumexp, normalize_axis, reduce_logsumexp, reduce_sum
from .registry import Op, apply, declare, to_tensors
from .shape import broadcast_to, cast, reshape


def _class_axis(name, x, axis) -> int:
    """`axis` of `x` as a non-negative int (None: the last); the class axis must exist
    (rank >= 1)."""
    if not x._shape:
        raise ValueError(f"{name}: logits must have rank >= 1, got a scalar (shape ())")
    if axis is None and name in ("softmax", "log_softmax"):
        axis = -1
    if isinstance(axis, (bool, np.bool_)) or np.ndim(axis) != 0 or \
            np.asarray(axis).dtype.kind not in "iu":
        raise TypeError(f"{name}: axis must be an int, got {axis!r}")
    return normalize_axis(name, int(axis), len(x._shape))[0]


# --- softmax (primitive) ----------------------------------------------------------------

def _softmax_impl(x, axis):
    # Shifted by the maximum, so exp never overflows and the largest weight is exp(0).
    # A +inf logit makes the shift inf and the slice nan, as TensorFlow's float64 kernel.
    with np.errstate(invalid="ignore"):
        weights = np.exp(x - np.max(x, axis=axis, keepdims=True, initial=-np.inf))
        return weights / np.sum(weights, axis=axis, keepdims=True)


def _softmax_infer(x, axis):
    _check_kind("softmax", x, "f")
    return x._shape, x._dtype


def _softmax_vjp(g, out, x, axis):
    # d softmax: J = diag(s) - s s^T along the axis, so J^T g = s * (g - <g, s>).
    projection = reduce_sum(ew.multiply(g, out), axis=axis, keepdims=True)
    return (ew.multiply(out, ew.subtract(g, projection)),)


def _softmax_batch(args, batched, size, axis):
    return apply(SOFTMAX, args[0], axis=tuple(a + 1 for a in axis))


def _softmax_lines(out, args, node):
    x, axis = args[0], node.attrs["axis"]
    return ["with np.errstate(invalid='ignore'):",
            f"    {out} = np.exp({x} - np.max({x}, axis={axis}, keepdims=True, "
            f"initial=-np.inf))",
            f"    {out} /= np.sum({out}, axis={axis}, keepdims=True)"]


def _softmax_array_api(out, args, node):
    x, axis = args[0], node.attrs["axis"]
    return [f"{out} = xp.exp({x} - xp.max({x}, axis={axis}, keepdims=True))",
            f"{out} = {out} / xp.sum({out}, axis={axis}, keepdims=True)"]


SOFTMAX = declare(Op(
    name="softmax", impl=_softmax_impl, infer=_softmax_infer, vjp=_softmax_vjp,
    batch=_softmax_batch, numpy_lines=_softmax_lines, array_api_lines=_softmax_array_api,
    latex=r"\operatorname{{softmax}}({0})"))


# --- activations under TensorFlow's argument names ----------------------------------------

def relu(features, name=None):
    """max(features, 0), as `tf.nn.relu` (gradient 0 at 0, as TensorFlow)."""
    return ew.relu(features)


def softplus(features, name=None):
    """log(1 + exp(features)), as `tf.nn.softplus` / `tf.math.softplus`."""
    return ew.softplus(features)


def softmax(logits, axis=None, name=None):
    """exp(logits) normalized to sum to 1 along `axis` (None: the last axis), as
    `tf.nn.softmax`.

    Computed as exp(logits - max) / sum(exp(logits - max)): it cannot overflow and its
    entries sum to 1 to rounding. Its gradient is s * (g - sum(g * s)) for s = softmax."""
    (x,) = to_tensors("softmax", [logits])
    _check_kind("softmax", x, "f")
    return apply(SOFTMAX, x, axis=(_class_axis("softmax", x, axis),))


def log_softmax(logits, axis=None, name=None):
    """log(softmax(logits)) along `axis` (None: the last axis), as `tf.nn.log_softmax`,
    computed stably as logits - logsumexp(logits)."""
    (x,) = to_tensors("log_softmax", [logits])
    _check_kind("log_softmax", x, "f")
    axis = _class_axis("log_softmax", x, axis)
    return ew.subtract(x, reduce_logsumexp(x, axis=axis, keepdims=True))


# --- softmax_cross_entropy_with_logits (primitive) --------------------------------------

def _sce_impl(labels, logits, axis):
    log_probabilities = logits - _logsumexp(logits, (axis,), True)
    return -np.sum(labels * log_probabilities, axis=axis)


def _sce_infer(labels, logits, axis):
    name = "softmax_cross_entropy_with_logits"
    _check_kind(name, logits, "f")
    if labels._dtype != logits._dtype:
        raise TypeError(f"{name}: labels and logits must have the same dtype, got "
                        f"{labels._dtype.name} {labels._shape} and {logits._dtype.name} "
                        f"{logits._shape}")
    if labels._shape != logits._shape:
        raise ValueError(f"{name}: labels and logits must have the same shape, got "
                         f"{labels._shape} and {logits._shape}")
    if not 0 <= axis < len(logits._shape):
        raise ValueError(f"{name}: axis {axis} is invalid for logits of shape {logits._shape}")
    return tuple(s for i, s in enumerate(logits._shape) if i != axis), logits._dtype


def _sce_vjp(g, out, labels, logits, axis):
    # TensorFlow's gradients: -log_softmax for the labels, softmax - labels for the logits.
    g = reshape(g, tuple(1 if i == axis else s for i, s in enumerate(logits._shape)))
    return (ew.multiply(g, ew.negative(log_softmax(logits, axis=axis))),
            ew.multiply(g, ew.subtract(apply(SOFTMAX, logits, axis=(axis,)), labels)))


def _sce_batch(args, batched, size, axis):
    # Both arguments must have the same shape, so an unbatched one is broadcast.
    labels, logits = (a if flag else broadcast_to(a, (size,) + a._shape)
                      for a, flag in zip(args, batched))
    return apply(SOFTMAX_CROSS_ENTROPY, labels, logits, axis=axis + 1)


def _sce_lines(out, args, node):
    labels, logits = args
    axis, shift = node.attrs["axis"], f"{out}_shift"
    return [f"{shift} = np.max({logits}, axis={axis}, keepdims=True, initial=-np.inf)",
            f"{shift} = np.where(np.isfinite({shift}), {shift}, 0)",
            "with np.errstate(divide='ignore'):",
            f"    {shift} = {shift} + np.log(np.sum(np.exp({logits} - {shift}), "
            f"axis={axis}, keepdims=True))",
            f"{out} = -np.sum({labels} * ({logits} - {shift}), axis={axis})"]


def _sce_array_api(out, args, node):
    labels, logits = args
    axis, shift = node.attrs["axis"], f"{out}_shift"
    return [f"{shift} = xp.max({logits}, axis={axis}, keepdims=True)",
            f"{shift} = xp.where(xp.isfinite({shift}), {shift}, xp.zeros_like({shift}))",
            f"{shift} = {shift} + xp.log(xp.sum(xp.exp({logits} - {shift}), "
            f"axis={axis}, keepdims=True))",
            f"{out} = -xp.sum({labels} * ({logits} - {shift}), axis={axis})"]


SOFTMAX_CROSS_ENTROPY = declare(Op(
    name="softmax_cross_entropy_with_logits", short="xent",
    impl=_sce_impl,
    infer=_sce_infer,
    vjp=_sce_vjp,
    batch=_sce_batch,
    numpy_lines=_sce_lines, array_api_lines=_sce_array_api,
    latex=r"-\sum {0} \log \operatorname{{softmax}}({1})"))


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    """Cross entropy -sum(labels * log_softmax(logits)) along `axis`, one loss per
    example, as `tf.nn.softmax_cross_entropy_with_logits` (TensorFlow 2).

    `labels` and `logits` have the same shape and floating dtype; each label vector
    should be a probability distribution. As in TensorFlow, the gradient with respect
    to the logits is softmax(logits) - labels (the derivative when labels sum to 1)
    and with respect to the labels -log_softmax(logits)."""
    name = "softmax_cross_entropy_with_logits"
    labels, x = to_tensors(name, [labels, logits])
    axis = _class_axis(name, x, axis)
    return apply(SOFTMAX_CROSS_ENTROPY, labels, x, axis=axis)


def sparse_softmax_cross_entropy_with_logits(labels, logits, name=None):
    """Cross entropy with integer class indices, as
    `tf.nn.sparse_softmax_cross_entropy_with_logits`: `labels` (int32/int64) has shape
    `logits.shape[:-1]` and values in [0, num_classes); a label out of range raises
    ValueError (TensorFlow's CPU behaviour). Labels get no gradient; the logits get
    softmax(logits) - one_hot(labels)."""
    name = "sparse_softmax_cross_entropy_with_logits"
    # Converted apart: Python labels are indices and must not adopt the logits' dtype.
    (labels,), (x,) = to_tensors(name, [labels]), to_tensors(name, [logits])
    _check_kind(name, x, "f")
    if labels._dtype not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise TypeError(f"{name}: labels must be int32 or int64, got {labels._dtype.name} "
                        f"{labels._shape}")
    if not x._shape or labels._shape != x._shape[:-1]:
        raise ValueError(f"{name}: labels must have shape logits.shape[:-1]; got labels "
                         f"{labels._shape} and logits {x._shape}")
    classes = x._shape[-1]
    if labels._value is not None and labels._value.size and (
            labels._value.min() < 0 or labels._value.max() >= classes):
        bad = labels._value[(labels._value < 0) | (labels._value >= classes)].flat[0]
        raise ValueError(f"{name}: received a label value of {bad}, outside the valid "
                         f"range [0, {classes})")
    # The one-hot labels are an integer comparison: never recorded, so no gradient.
    indices = np.arange(classes, dtype=labels._dtype)
    one_hot = cast(ew.equal(reshape(labels, labels._shape + (1,)), indices), x._dtype)
    return apply(SOFTMAX_CROSS_ENTROPY, one_hot, x, axis=len(x._shape) - 1)


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Logistic loss per element, as `tf.nn.sigmoid_cross_entropy_with_logits`:
    max(x, 0) - x * z + log1p(exp(-|x|)) for logits x and labels z of the same shape
    and dtype (the stable form of -z log(sigmoid(x)) - (1 - z) log(1 - sigmoid(x))).
    Its gradient is sigmoid(x) - z for the logits and -x for the labels."""
    name = "sigmoid_cross_entropy_with_logits"
    if labels is None or logits is None:
        raise ValueError(f"{name}: both labels and logits must be provided")
    z, x = to_tensors(name, [labels, logits])
    _check_kind(name, x, "f")
    if z._dtype != x._dtype or z._shape != x._shape:
        error = TypeError if z._dtype != x._dtype else ValueError
        raise error(f"{name}: labels and logits must have the same shape and dtype, got "
                    f"{z._dtype.name} {z._shape} and {x._dtype.name} {x._shape}")
    # TensorFlow's form: where(x >= 0, x, 0) - x * z + log1p(exp(where(x >= 0, -x, x))).
    # At x = 0 the gradient is 1 - z - 1/2 = sigmoid(0) - z, the true derivative. (The
    # former (x + |x|) / 2 was nan at x = -inf, and log(1 + e) lost e < 1e-16: the
    # loss at x = 100, z = 1 was 0, not 3.7e-44.)
    positive = ew.greater_equal(x, 0)
    relu = ew.where(positive, x, 0)
    negative_magnitude = ew.where(positive, ew.negative(x), x)
    softplus_negative = ew.log1p(ew.exp(negative_magnitude))
    return ew.add(ew.subtract(relu, ew.multiply(x, z)), softplus_negative)


__all__ = ["relu", "softplus", "softmax", "log_softmax", "softmax_cross_entropy_with_logits",
           "sparse_softmax_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits"]
