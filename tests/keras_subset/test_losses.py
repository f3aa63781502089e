"""tf.keras.losses: Keras 3's losses, their reductions and sample weights.

Values are checked against Keras 3's documented formulas written in NumPy; float64
gradients against central finite differences; and, where TensorFlow is installed,
values and gradients against Keras 3 itself on the same data (every reduction, sample
weights of several shapes, from_logits both ways, label smoothing, ignore_class).
"""
import os

import numpy as np
import pytest

import tapec as tf
from helpers import fd

losses = tf.keras.losses
RNG = np.random.default_rng(0)
N, C = 4, 3


@pytest.fixture(scope="module")
def keras():
    pytest.importorskip("tensorflow")
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    return pytest.importorskip("keras")


def _probabilities(shape, seed=1):
    e = np.random.default_rng(seed).uniform(0.05, 1.0, shape)
    return e / e.sum(axis=-1, keepdims=True)


def _one_hot(labels, classes=C):
    return np.eye(classes)[labels]


LABELS = np.array([0, 2, 1, 2])
REG_TRUE = RNG.normal(size=(N, C))
REG_PRED = REG_TRUE + RNG.normal(size=(N, C))          # errors on both sides of delta = 1
BIN_TRUE = RNG.integers(0, 2, size=(N, C)).astype(float)
BIN_PROB = RNG.uniform(0.05, 0.95, size=(N, C))
LOGITS = RNG.normal(scale=2.0, size=(N, C))


# --- the documented formulas, in NumPy (one value per sample) ---------------------------

def _np_bce(t, p, from_logits=False, smoothing=0.0):
    t = t * (1 - smoothing) + 0.5 * smoothing
    if from_logits:
        p = 1 / (1 + np.exp(-p))
    p = np.clip(p, 1e-7, 1 - 1e-7)
    return np.mean(-(t * np.log(p) + (1 - t) * np.log(1 - p)), axis=-1)


def _np_cce(t, p, from_logits=False, smoothing=0.0):
    t = t * (1 - smoothing) + smoothing / t.shape[-1]
    if from_logits:
        log_p = p - np.log(np.sum(np.exp(p), axis=-1, keepdims=True))
    else:
        log_p = np.log(np.clip(p / p.sum(axis=-1, keepdims=True), 1e-7, 1 - 1e-7))
    return -np.sum(t * log_p, axis=-1)


def _np_huber(t, p, delta=1.0):
    e = np.abs(p - t)
    return np.mean(np.where(e <= delta, 0.5 * e ** 2, delta * e - 0.5 * delta ** 2), axis=-1)


def _np_sparse(labels, p, from_logits=False):
    log_p = p if from_logits else np.log(np.clip(p, 1e-7, 1 - 1e-7))
    log_p = log_p - np.log(np.sum(np.exp(log_p), axis=-1, keepdims=True))
    return -np.take_along_axis(log_p, labels[:, None], axis=-1)[:, 0]


# (loss class, kwargs, y_true, y_pred, NumPy per-sample formula)
CASES = {
    "mse": (losses.MeanSquaredError, {}, REG_TRUE, REG_PRED,
            lambda t, p: np.mean((t - p) ** 2, axis=-1)),
    "mae": (losses.MeanAbsoluteError, {}, REG_TRUE, REG_PRED,
            lambda t, p: np.mean(np.abs(t - p), axis=-1)),
    "huber": (losses.Huber, {}, REG_TRUE, REG_PRED, _np_huber),
    "huber_delta_0.5": (losses.Huber, {"delta": 0.5}, REG_TRUE, REG_PRED,
                        lambda t, p: _np_huber(t, p, 0.5)),
    "bce": (losses.BinaryCrossentropy, {}, BIN_TRUE, BIN_PROB, _np_bce),
    "bce_logits": (losses.BinaryCrossentropy, {"from_logits": True}, BIN_TRUE, LOGITS,
                   lambda t, p: _np_bce(t, p, True)),
    "bce_smoothing": (losses.BinaryCrossentropy, {"label_smoothing": 0.2}, BIN_TRUE, BIN_PROB,
                      lambda t, p: _np_bce(t, p, smoothing=0.2)),
    "cce": (losses.CategoricalCrossentropy, {}, _one_hot(LABELS), _probabilities((N, C)),
            _np_cce),
    "cce_logits_smoothing": (losses.CategoricalCrossentropy,
                             {"from_logits": True, "label_smoothing": 0.1}, _one_hot(LABELS),
                             LOGITS, lambda t, p: _np_cce(t, p, True, 0.1)),
    "sparse": (losses.SparseCategoricalCrossentropy, {}, LABELS, _probabilities((N, C)),
               _np_sparse),
    "sparse_logits": (losses.SparseCategoricalCrossentropy, {"from_logits": True}, LABELS,
                      LOGITS, lambda t, p: _np_sparse(t, p, True)),
}

POSITIVE_TRUE = RNG.uniform(0.0, 3.0, size=(N, C))
POSITIVE_PRED = RNG.uniform(0.1, 3.0, size=(N, C))
COUNTS = RNG.integers(0, 4, size=(N, C)).astype(float)


def _np_normalize(x):
    return x / np.sqrt(np.sum(x ** 2, axis=-1, keepdims=True))


def _np_hinge_margins(t, p):
    t = 2 * t - 1 if np.all((t == 0) | (t == 1)) else t
    return np.maximum(1 - t * p, 0)


CASES.update({
    "mape": (losses.MeanAbsolutePercentageError, {}, REG_TRUE, REG_PRED,
             lambda t, p: 100 * np.mean(np.abs((t - p) / np.maximum(np.abs(t), 1e-7)), -1)),
    "msle": (losses.MeanSquaredLogarithmicError, {}, POSITIVE_TRUE, POSITIVE_PRED,
             lambda t, p: np.mean((np.log1p(p) - np.log1p(t)) ** 2, -1)),
    "log_cosh": (losses.LogCosh, {}, REG_TRUE, REG_PRED,
                 lambda t, p: np.mean(np.log(np.cosh(p - t)), -1)),
    "kld": (losses.KLDivergence, {}, _probabilities((N, C), seed=5), _probabilities((N, C)),
            lambda t, p: np.sum(t * np.log(t / p), -1)),
    "poisson": (losses.Poisson, {}, COUNTS, POSITIVE_PRED,
                lambda t, p: np.mean(p - t * np.log(p + 1e-7), -1)),
    "hinge": (losses.Hinge, {}, BIN_TRUE, LOGITS,
              lambda t, p: np.mean(_np_hinge_margins(t, p), -1)),
    "hinge_signed": (losses.Hinge, {}, 2 * BIN_TRUE - 1, LOGITS,
                     lambda t, p: np.mean(_np_hinge_margins(t, p), -1)),
    "squared_hinge": (losses.SquaredHinge, {}, BIN_TRUE, LOGITS,
                      lambda t, p: np.mean(_np_hinge_margins(t, p) ** 2, -1)),
    "categorical_hinge": (losses.CategoricalHinge, {}, _one_hot(LABELS), LOGITS,
                          lambda t, p: np.maximum(np.max((1 - t) * p, -1) - np.sum(t * p, -1)
                                                  + 1, 0)),
    "cosine": (losses.CosineSimilarity, {}, REG_TRUE, REG_PRED,
               lambda t, p: -np.sum(_np_normalize(t) * _np_normalize(p), -1)),
})

SAMPLE_WEIGHTS = {"none": None, "per_sample": np.array([1.0, 0.5, 2.0, 0.0]),
                  "column": np.array([[1.0], [0.5], [2.0], [0.0]]), "scalar": 2.5}
REDUCTIONS = ["sum_over_batch_size", "sum", "mean", "mean_with_sample_weight", "none", None]


def _np_reduce(values, sample_weight, reduction):
    """Keras 3's documented reduction of per-sample values (shape (N,))."""
    weights = 1.0 if sample_weight is None else np.asarray(sample_weight)
    if np.ndim(weights) == 2:            # (N, 1) weights: the values get a trailing 1 too
        values = values[:, None]
    weighted = values * weights
    if reduction in ("none", None):
        return weighted
    if reduction == "sum":
        return weighted.sum()
    if reduction == "mean_with_sample_weight" and sample_weight is not None:
        return weighted.sum() / np.sum(sample_weight)
    return weighted.sum() / weighted.size


@pytest.mark.parametrize("case", CASES)
def test_function_forms_follow_the_documented_formulas(case):
    cls, kwargs, y_true, y_pred, formula = CASES[case]
    fn = cls(dtype="float64").fn
    got = fn(y_true, tf.constant(y_pred), **kwargs)
    assert got.shape == (N,) and got.dtype == tf.float64
    np.testing.assert_allclose(got.numpy(), formula(y_true, y_pred), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weights", SAMPLE_WEIGHTS)
@pytest.mark.parametrize("case", ["mse", "bce_logits", "sparse"])
def test_reductions_and_sample_weights_follow_keras_3(case, weights, reduction):
    cls, kwargs, y_true, y_pred, formula = CASES[case]
    loss = cls(reduction=reduction, dtype="float64", **kwargs)
    got = loss(y_true, y_pred, sample_weight=SAMPLE_WEIGHTS[weights])
    expected = _np_reduce(formula(y_true, y_pred), SAMPLE_WEIGHTS[weights], reduction)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


def test_sample_weights_of_the_values_rank_weigh_each_entry():
    # Per-timestep losses (N, T) with per-timestep weights: a weighted sum over N*T.
    t, p = RNG.normal(size=(N, 5, 2)), RNG.normal(size=(N, 5, 2))
    w = RNG.uniform(size=(N, 5))
    got = losses.MeanSquaredError(dtype="float64")(t, p, sample_weight=w)
    np.testing.assert_allclose(got.numpy(), np.sum(np.mean((t - p) ** 2, -1) * w) / (N * 5))


def test_a_zero_divisor_gives_zero():
    loss = losses.MeanSquaredError(reduction="mean_with_sample_weight")
    assert loss(REG_TRUE, REG_PRED, sample_weight=np.zeros(N)).numpy() == 0.0


def test_probabilities_are_clipped_and_logits_are_stable():
    # p = 0 and 1 are clipped to 1e-7 and 1 - 1e-7: -log(1e-7) instead of inf.
    bce = losses.binary_crossentropy(np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]]))
    np.testing.assert_allclose(bce.numpy(), [-np.log(1e-7)], rtol=1e-6)
    cce = losses.categorical_crossentropy(np.array([[0.0, 1.0]]), np.array([[1.0, 0.0]]))
    np.testing.assert_allclose(cce.numpy(), [-np.log(1e-7)], rtol=1e-6)
    # Large logits: exact, finite values (a naive log(sigmoid) overflows).
    big = losses.binary_crossentropy(np.array([[0.0, 1.0]]), np.array([[100.0, -100.0]]),
                                     from_logits=True)
    np.testing.assert_allclose(big.numpy(), [100.0], rtol=1e-6)
    wide = losses.categorical_crossentropy(np.array([[1.0, 0.0]]),
                                           np.array([[0.0, 1000.0]]), from_logits=True)
    np.testing.assert_allclose(wide.numpy(), [1000.0], rtol=1e-6)
    sparse = losses.sparse_categorical_crossentropy(np.array([0]), np.array([[0.0, 1000.0]]),
                                                    from_logits=True)
    np.testing.assert_allclose(sparse.numpy(), [1000.0], rtol=1e-6)


def test_dtypes_follow_keras_3():
    # The functions cast y_true to y_pred's dtype; a Loss casts both to its own dtype.
    assert losses.mean_squared_error(np.array([1, 2]), np.array([1.0, 2.5])).dtype == tf.float64
    assert losses.mean_squared_error([1, 2], tf.constant([1.0, 2.5])).dtype == tf.float32
    assert losses.MeanSquaredError()(REG_TRUE, REG_PRED).dtype == tf.float32
    assert losses.MeanSquaredError(dtype="float64")(REG_TRUE, REG_PRED).dtype == tf.float64
    assert losses.MeanSquaredError(dtype=tf.float64).dtype == "float64"
    ints = losses.SparseCategoricalCrossentropy()(LABELS.astype(np.int64), _probabilities((N, C)))
    assert ints.dtype == tf.float32


def test_ranks_are_matched_as_keras_3_matches_them():
    y = RNG.normal(size=(N, 1))
    p = RNG.normal(size=(N,))
    # (N, 1) against (N,): the rank-1 side gets a trailing 1, one value per sample.
    got = losses.MeanSquaredError(reduction="none", dtype="float64")(y, p)
    np.testing.assert_allclose(got.numpy(), (y[:, 0] - p) ** 2)
    labels = LABELS[:, None]             # sparse labels with a trailing 1
    probs = _probabilities((N, C))
    np.testing.assert_allclose(
        losses.sparse_categorical_crossentropy(labels, probs).numpy(), _np_sparse(LABELS, probs))


GRADIENT_CASES = ["mse", "mae", "huber", "bce", "bce_logits", "bce_smoothing", "cce",
                  "cce_logits_smoothing", "sparse", "sparse_logits", "mape", "msle", "log_cosh",
                  "kld", "poisson", "hinge", "squared_hinge", "categorical_hinge", "cosine"]


@pytest.mark.parametrize("case", GRADIENT_CASES)
def test_gradients_match_finite_differences(case):
    cls, kwargs, y_true, y_pred, _ = CASES[case]
    loss = cls(dtype="float64", **kwargs)
    weights = np.array([1.0, 0.5, 2.0, 3.0])
    fd.check_gradients(lambda p: loss(y_true, p, sample_weight=weights), [y_pred],
                       rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("case", ["mse", "huber", "bce"])
def test_regression_and_binary_gradients_reach_y_true(case):
    cls, kwargs, y_true, y_pred, _ = CASES[case]
    loss = cls(dtype="float64", **kwargs)
    fd.check_gradients(lambda t, p: loss(t, p), [y_true, y_pred])


def test_a_loss_inside_tapec_function_gives_the_eager_value_and_gradient():
    loss = losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1)
    w = tf.Variable(RNG.normal(size=(2, C)).astype(np.float32))
    x = tf.constant(RNG.normal(size=(N, 2)).astype(np.float32))
    y = tf.constant(_one_hot(LABELS).astype(np.float32))

    def step(x, y):
        with tf.GradientTape() as tape:
            value = loss(y, tf.matmul(x, w))
        return value, tape.gradient(value, w)

    eager_value, eager_grad = step(x, y)
    traced_value, traced_grad = tf.function(step)(x, y)
    np.testing.assert_allclose(traced_value.numpy(), eager_value.numpy(), rtol=1e-6)
    np.testing.assert_allclose(traced_grad.numpy(), eager_grad.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("case", ["mse", "huber", "bce_smoothing", "cce", "sparse_logits"])
def test_one_trace_serves_every_batch_size(case):
    cls, kwargs, y_true, y_pred, _ = CASES[case]
    loss = cls(**kwargs)
    true_spec = tf.TensorSpec((None,) + y_true.shape[1:],
                              tf.int64 if y_true.dtype.kind == "i" else tf.float32)
    traced = tf.function(lambda t, p: loss(t, p, sample_weight=tf.abs(p[:, 0])),
                         input_signature=[true_spec, tf.TensorSpec((None, C), tf.float32)])
    for rows in ([0, 1, 2, 3], [1, 2], [0, 1, 2, 3, 0, 1, 2]):
        t, p = y_true[rows], y_pred[rows].astype(np.float32)
        np.testing.assert_allclose(traced(t.astype(true_spec.dtype.name), p).numpy(),
                                   loss(t, p, sample_weight=np.abs(p[:, 0])).numpy(),
                                   rtol=1e-6)
    assert traced.experimental_get_tracing_count() == 1


def test_ignore_class_leaves_labels_out_of_the_mean():
    labels = np.array([0, -1, 2, -1])
    probs = _probabilities((N, C))
    loss = losses.SparseCategoricalCrossentropy(ignore_class=-1, dtype="float64")
    kept = _np_sparse(np.array([0, 2]), probs[[0, 2]])
    np.testing.assert_allclose(loss(labels, probs).numpy(), kept.mean())
    none = losses.SparseCategoricalCrossentropy(ignore_class=-1, reduction="none",
                                                dtype="float64")
    np.testing.assert_allclose(none(labels, probs).numpy(), [kept[0], 0.0, kept[1], 0.0])


def test_a_loss_subclass_defines_call_and_gets_the_reductions():
    class MeanFourthPower(losses.Loss):
        def call(self, y_true, y_pred):
            return tf.reduce_mean((y_true - y_pred) ** 4, axis=-1)

    loss = MeanFourthPower(reduction="sum", dtype="float64")
    assert loss.name == "mean_fourth_power"
    expected = np.sum(np.mean((REG_TRUE - REG_PRED) ** 4, -1) * [1.0, 0.0, 2.0, 1.0])
    np.testing.assert_allclose(loss(REG_TRUE, REG_PRED, [1.0, 0.0, 2.0, 1.0]).numpy(), expected)
    with pytest.raises(NotImplementedError, match="must define call"):
        losses.Loss()(REG_TRUE, REG_PRED)


# --- identifiers, configs, errors --------------------------------------------------------

def test_get_resolves_names_as_keras_3_does():
    assert losses.get("mse") is losses.mean_squared_error
    assert losses.get("MAE") is losses.mean_absolute_error
    assert losses.get("sparse_categorical_crossentropy") is losses.sparse_categorical_crossentropy
    assert isinstance(losses.get("Huber"), losses.Huber)
    assert losses.get("kld") is losses.KLD is losses.kl_divergence
    assert losses.get("MAPE") is losses.mean_absolute_percentage_error
    instance = losses.BinaryCrossentropy(from_logits=True)
    assert losses.get(instance) is instance
    assert losses.get(None) is None
    config = {"class_name": "CategoricalCrossentropy", "config": {"from_logits": True}}
    assert losses.get(config).from_logits is True
    with pytest.raises(ValueError, match="Could not interpret loss identifier: 'msee'"):
        losses.get("msee")


def test_resolve_builds_the_compile_loss():
    wrapped = losses.resolve("mse")
    assert isinstance(wrapped, losses.LossFunctionWrapper) and wrapped.name == "mse"
    np.testing.assert_allclose(wrapped(REG_TRUE, REG_PRED).numpy(),
                               np.mean((REG_TRUE - REG_PRED) ** 2), rtol=1e-6)
    assert losses.resolve("ce", (N, 1), (N, 1)).fn is losses.binary_crossentropy
    assert losses.resolve("ce", (N,), (N, C)).fn is losses.sparse_categorical_crossentropy
    assert losses.resolve("crossentropy", (N, C), (N, C)).fn is losses.categorical_crossentropy
    with pytest.raises(ValueError, match="needs y_true_shape"):
        losses.resolve("ce")


@pytest.mark.parametrize("cls", [losses.MeanSquaredError, losses.MeanAbsoluteError,
                                 losses.Huber, losses.BinaryCrossentropy,
                                 losses.CategoricalCrossentropy,
                                 losses.SparseCategoricalCrossentropy, losses.LogCosh,
                                 losses.CosineSimilarity, losses.Hinge])
def test_configs_round_trip(cls):
    loss = cls(reduction="sum", name="custom")
    again = cls.from_config(loss.get_config())
    assert again.get_config() == loss.get_config()
    assert again.name == "custom" and again.reduction == "sum"
    assert losses.deserialize(losses.serialize(loss)).get_config() == loss.get_config()


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="reduction"):
        losses.MeanSquaredError(reduction="average")
    with pytest.raises(ValueError, match=r"binary_crossentropy: y_true and y_pred must have "
                                         r"the same shape, got y_true \(4,\) and y_pred \(4, 3\)"):
        losses.binary_crossentropy(np.ones(N), BIN_PROB)
    with pytest.raises(ValueError, match="y_true must have shape y_pred.shape"):
        losses.sparse_categorical_crossentropy(np.zeros((N, 2)), BIN_PROB)
    with pytest.raises(ValueError, match="only the last axis"):
        losses.sparse_categorical_crossentropy(LABELS, BIN_PROB, axis=0)
    with pytest.raises(ValueError, match="axis must be an int"):
        losses.categorical_crossentropy(BIN_TRUE, BIN_PROB, axis=True)


# --- against Keras 3 itself --------------------------------------------------------------

KERAS_CLASSES = {"mse": "MeanSquaredError", "mae": "MeanAbsoluteError", "huber": "Huber",
                 "huber_delta_0.5": "Huber", "bce": "BinaryCrossentropy",
                 "bce_logits": "BinaryCrossentropy", "bce_smoothing": "BinaryCrossentropy",
                 "cce": "CategoricalCrossentropy",
                 "cce_logits_smoothing": "CategoricalCrossentropy",
                 "sparse": "SparseCategoricalCrossentropy",
                 "sparse_logits": "SparseCategoricalCrossentropy",
                 "mape": "MeanAbsolutePercentageError", "msle": "MeanSquaredLogarithmicError",
                 "log_cosh": "LogCosh", "kld": "KLDivergence", "poisson": "Poisson",
                 "hinge": "Hinge", "hinge_signed": "Hinge", "squared_hinge": "SquaredHinge",
                 "categorical_hinge": "CategoricalHinge", "cosine": "CosineSimilarity"}


def _keras_value_and_gradient(keras, loss, y_true, y_pred, sample_weight):
    import tensorflow
    pred = tensorflow.Variable(np.asarray(y_pred, np.float32))
    with tensorflow.GradientTape() as tape:
        value = loss(y_true, pred, sample_weight=sample_weight)
        total = tensorflow.reduce_sum(value)
    return value.numpy(), tape.gradient(total, pred).numpy()


def _tapec_value_and_gradient(loss, y_true, y_pred, sample_weight):
    pred = tf.Variable(np.asarray(y_pred, np.float32))
    with tf.GradientTape() as tape:
        value = loss(y_true, pred, sample_weight=sample_weight)
        total = tf.reduce_sum(value)
    return value.numpy(), tape.gradient(total, pred).numpy()


# (sample weights, reduction): each weight shape with the reductions it changes.
KERAS_COMBINATIONS = [("none", "sum_over_batch_size"), ("per_sample", "sum_over_batch_size"),
                      ("per_sample", "sum"), ("scalar", "mean_with_sample_weight"),
                      ("column", "none"), ("per_sample", None)]
_KERAS_RESULTS = {}     # Keras' answers, computed once for both simplify modes


@pytest.mark.parametrize("weights,reduction", KERAS_COMBINATIONS)
@pytest.mark.parametrize("case", KERAS_CLASSES)
def test_values_and_gradients_match_keras(keras, case, weights, reduction):
    cls, kwargs, y_true, y_pred, _ = CASES[case]
    sample_weight = SAMPLE_WEIGHTS[weights]
    key = (case, weights, reduction)
    if key not in _KERAS_RESULTS:
        theirs = getattr(keras.losses, KERAS_CLASSES[case])(reduction=reduction, **kwargs)
        _KERAS_RESULTS[key] = _keras_value_and_gradient(keras, theirs, y_true, y_pred,
                                                        sample_weight)
    want_value, want_grad = _KERAS_RESULTS[key]
    got_value, got_grad = _tapec_value_and_gradient(cls(reduction=reduction, **kwargs),
                                                    y_true, y_pred, sample_weight)
    assert got_value.shape == want_value.shape
    np.testing.assert_allclose(got_value, want_value, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(got_grad, want_grad, rtol=2e-5, atol=1e-7)


def test_clipped_probabilities_match_keras(keras):
    # Probabilities at 0 and 1: the clipped values, and the gradient clipping zeroes.
    y_true = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    y_pred = np.array([[0.0, 1.0, 0.0], [0.2, 0.8, 0.0]])
    for name in ("BinaryCrossentropy", "CategoricalCrossentropy"):
        want = _keras_value_and_gradient(keras, getattr(keras.losses, name)(), y_true, y_pred,
                                         None)
        got = _tapec_value_and_gradient(getattr(losses, name)(), y_true, y_pred, None)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
    want = _keras_value_and_gradient(keras, keras.losses.SparseCategoricalCrossentropy(),
                                     np.array([0, 1]), y_pred, None)
    got = _tapec_value_and_gradient(losses.SparseCategoricalCrossentropy(), np.array([0, 1]),
                                    y_pred, None)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)


def test_ignore_class_and_function_forms_match_keras(keras):
    labels, probs = np.array([0, 255, 2, 1]), _probabilities((N, C)).astype(np.float32)
    for reduction in ("sum_over_batch_size", "sum", "none"):
        theirs = keras.losses.SparseCategoricalCrossentropy(ignore_class=255, reduction=reduction)
        ours = losses.SparseCategoricalCrossentropy(ignore_class=255, reduction=reduction)
        np.testing.assert_allclose(ours(labels, probs).numpy(),
                                   np.asarray(theirs(labels, probs)), rtol=1e-6)
    pairs = [("mean_squared_error", REG_TRUE, REG_PRED, {}),
             ("huber", REG_TRUE, REG_PRED, {"delta": 0.7}),
             ("binary_crossentropy", BIN_TRUE, LOGITS, {"from_logits": True,
                                                        "label_smoothing": 0.3}),
             ("categorical_crossentropy", _one_hot(LABELS), _probabilities((N, C)),
              {"label_smoothing": 0.2}),
             ("sparse_categorical_crossentropy", LABELS, LOGITS, {"from_logits": True})]
    for name, y_true, y_pred, kwargs in pairs:
        want = getattr(keras.losses, name)(y_true, y_pred.astype(np.float32), **kwargs)
        got = getattr(losses, name)(y_true, y_pred.astype(np.float32), **kwargs)
        assert got.dtype == tf.float32
        np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-6, err_msg=name)


def test_gradients_at_the_kinks_match_keras(keras):
    # Zero errors (|e| has no derivative at 0) and |e| == delta (Huber's switch point).
    y_true = np.array([[0.0, 1.0, 2.0], [1.0, -1.0, 0.5]])
    y_pred = np.array([[0.0, 2.0, 2.0], [0.0, -1.0, 1.5]])
    for name, kwargs in [("MeanAbsoluteError", {}), ("Huber", {}), ("Huber", {"delta": 0.5}),
                         ("MeanSquaredError", {})]:
        want = _keras_value_and_gradient(keras, getattr(keras.losses, name)(**kwargs), y_true,
                                         y_pred, None)
        got = _tapec_value_and_gradient(getattr(losses, name)(**kwargs), y_true, y_pred, None)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6, err_msg=name)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6, err_msg=f"{name} {kwargs}")
