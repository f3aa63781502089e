"""tf.keras.metrics: stateful metrics, their weighting, and `get` / `resolve`.

Results are checked against Keras 3's documented examples and formulas, across several
`update_state` calls; inside tapec.function (state carried across calls by Variable
writes); and, where TensorFlow is installed, against Keras 3's metrics and its compile's
choice of accuracy on the same data.
"""
import os

import numpy as np
import pytest

import tapec as tf

metrics = tf.keras.metrics
RNG = np.random.default_rng(0)


@pytest.fixture(scope="module")
def keras():
    pytest.importorskip("tensorflow")
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    return pytest.importorskip("keras")


def test_mean_and_sum_follow_the_documented_examples():
    mean, total = metrics.Mean(), metrics.Sum()
    mean.update_state([1, 3, 5, 7])
    total.update_state([1, 3, 5, 7])
    assert mean.result().numpy() == 4.0 and total.result().numpy() == 16.0
    mean.reset_state()
    total.reset_state()
    assert mean.result().numpy() == 0.0          # total / count with count 0 is 0
    mean.update_state([1, 3, 5, 7], sample_weight=[1, 1, 0, 0])
    total.update_state([1, 3, 5, 7], sample_weight=[1, 1, 0, 0])
    assert mean.result().numpy() == 2.0 and total.result().numpy() == 4.0


@pytest.mark.parametrize("cls,y_true,y_pred,weights,first,weighted", [
    (metrics.Accuracy, [[1], [2], [3], [4]], [[0], [2], [3], [4]], [1, 1, 0, 0], 0.75, 0.5),
    (metrics.BinaryAccuracy, [[1], [1], [0], [0]], [[0.98], [1], [0], [0.6]], [1, 0, 0, 1],
     0.75, 0.5),
    (metrics.CategoricalAccuracy, [[0, 0, 1], [0, 1, 0]], [[0.1, 0.9, 0.8], [0.05, 0.95, 0]],
     [0.7, 0.3], 0.5, 0.3),
    (metrics.SparseCategoricalAccuracy, [[2], [1]], [[0.1, 0.6, 0.3], [0.05, 0.95, 0]],
     [0.7, 0.3], 0.5, 0.3),
])
def test_accuracies_follow_the_documented_examples(cls, y_true, y_pred, weights, first,
                                                   weighted):
    metric = cls()
    metric.update_state(y_true, y_pred)
    np.testing.assert_allclose(metric.result().numpy(), first, rtol=1e-6)
    metric.reset_state()
    metric.update_state(y_true, y_pred, sample_weight=weights)
    np.testing.assert_allclose(metric.result().numpy(), weighted, rtol=1e-6)


def _batches(kind, seed=0, n=5, classes=3):
    """Three batches (y_true, y_pred, sample_weight) for a metric family."""
    rng = np.random.default_rng(seed)
    out = []
    for weights in (None, rng.uniform(size=n), rng.uniform(size=(n, 1))):
        if kind == "regression":
            y_true, y_pred = rng.normal(size=(n, classes)), rng.normal(size=(n, classes))
        elif kind == "positive":
            y_true, y_pred = rng.uniform(size=(n, classes)), rng.uniform(0.1, 1, (n, classes))
        elif kind == "binary":
            y_true = rng.integers(0, 2, size=(n, 1)).astype(float)
            y_pred = rng.uniform(size=(n, 1))
        elif kind == "categorical":
            y_pred = rng.uniform(size=(n, classes))
            y_true = np.eye(classes)[rng.integers(0, classes, size=n)]
        else:
            y_pred = rng.uniform(size=(n, classes))
            y_true = rng.integers(0, classes, size=n)
        out.append((y_true, y_pred, weights))
    return out


def _sparse_ce(y_true, p):
    p = np.log(np.clip(p, 1e-7, 1 - 1e-7))
    return -np.take_along_axis(p - np.log(np.exp(p).sum(-1, keepdims=True)),
                               y_true[:, None], -1)[:, 0]


# metric, data kind, the per-sample value in NumPy
STREAMED = {
    "mse": (metrics.MeanSquaredError, "regression", lambda t, p: np.mean((t - p) ** 2, -1)),
    "mae": (metrics.MeanAbsoluteError, "regression", lambda t, p: np.mean(np.abs(t - p), -1)),
    "binary_accuracy": (metrics.BinaryAccuracy, "binary",
                        lambda t, p: np.mean(t == (p > 0.5), -1)),
    "categorical_accuracy": (metrics.CategoricalAccuracy, "categorical",
                             lambda t, p: t.argmax(-1) == p.argmax(-1)),
    "sparse_categorical_accuracy": (metrics.SparseCategoricalAccuracy, "sparse",
                                    lambda t, p: t == p.argmax(-1)),
    "sparse_categorical_crossentropy": (metrics.SparseCategoricalCrossentropy, "sparse",
                                        _sparse_ce),
}


@pytest.mark.parametrize("name", STREAMED)
def test_metrics_average_over_every_sample_seen(name):
    cls, kind, per_sample = STREAMED[name]
    metric = cls(dtype="float64")
    totals, counts = 0.0, 0.0
    for y_true, y_pred, weights in _batches(kind):
        metric.update_state(y_true, y_pred, sample_weight=weights)
        w = np.ones(len(y_pred)) if weights is None else np.reshape(weights, -1)
        totals += np.sum(per_sample(y_true, y_pred) * w)
        counts += np.sum(w)
    np.testing.assert_allclose(metric.result().numpy(), totals / counts, rtol=1e-12)
    assert metric.result().dtype == tf.float64


def test_root_mean_squared_error_is_the_root_of_the_mean_square():
    metric = metrics.RootMeanSquaredError(dtype="float64")
    squares, count = 0.0, 0.0
    for y_true, y_pred, weights in _batches("regression"):
        metric.update_state(y_true, y_pred, sample_weight=weights)
        w = np.ones(len(y_pred)) if weights is None else np.reshape(weights, -1)
        squares += np.sum(np.mean((y_true - y_pred) ** 2, -1) * w)
        count += np.sum(w)
    np.testing.assert_allclose(metric.result().numpy(), np.sqrt(squares / count), rtol=1e-12)


def test_state_is_in_non_trainable_variables_and_resets():
    metric = metrics.MeanAbsoluteError()
    assert [v.name for v in metric.variables] == ["total:0", "count:0"]
    assert all(isinstance(v, tf.Variable) and not v.trainable for v in metric.variables)
    assert metric.dtype == "float32" and metric.name == "mean_absolute_error"
    assert metric([1.0, 2.0], [2.0, 4.0]).numpy() == 1.5       # __call__: update, result
    metric.reset_state()
    assert [v.numpy() for v in metric.variables] == [0.0, 0.0]


def test_a_metric_subclass_keeps_its_own_state():
    class LargestError(metrics.Metric):
        def __init__(self, name=None, dtype=None):
            super().__init__(name=name, dtype=dtype)
            self.largest = self.add_variable(shape=(), initializer="zeros", name="largest")

        def update_state(self, y_true, y_pred, sample_weight=None):
            error = tf.reduce_max(tf.abs(tf.constant(y_true, tf.float32) - y_pred))
            self.largest.assign(tf.maximum(self.largest, error))

        def result(self):
            return tf.identity(self.largest)

    metric = LargestError()
    assert metric.name == "largest_error" and metric.get_config() == {
        "name": "largest_error", "dtype": "float32"}
    metric.update_state([1.0, 2.0], tf.constant([1.5, 2.0]))
    metric.update_state([0.0], tf.constant([0.25]))
    assert metric.result().numpy() == 0.5
    metric.reset_state()
    assert metric.result().numpy() == 0.0
    with pytest.raises(ValueError, match="unknown initializer 'glorot'"):
        metric.add_variable(initializer="glorot")


def test_metric_state_carries_across_tapec_function_calls():
    traced, eager = metrics.SparseCategoricalAccuracy(), metrics.SparseCategoricalAccuracy()

    @tf.function
    def update(y_true, y_pred):
        traced.update_state(y_true, y_pred)
        return traced.result()

    for y_true, y_pred, _ in _batches("sparse"):
        y_true, y_pred = tf.constant(y_true), tf.constant(y_pred.astype(np.float32))
        eager.update_state(y_true, y_pred)
        np.testing.assert_allclose(update(y_true, y_pred).numpy(), eager.result().numpy())
    np.testing.assert_allclose(traced.result().numpy(), eager.result().numpy())
    assert traced.count.numpy() == 15.0
    traced.reset_state()
    assert traced.result().numpy() == 0.0


@pytest.mark.parametrize("name", ["mse", "binary_accuracy", "categorical_accuracy",
                                  "sparse_categorical_accuracy"])
def test_one_trace_updates_the_state_for_every_batch_size(name):
    cls, kind, _ = STREAMED[name]
    traced, eager = cls(), cls()
    batches = _batches(kind, n=6)
    y_true0, y_pred0, _ = batches[0]
    true_dtype = tf.int64 if y_true0.dtype.kind == "i" else tf.float32
    update = tf.function(lambda t, p, w: traced.update_state(t, p, sample_weight=w),
                         input_signature=[tf.TensorSpec((None,) + y_true0.shape[1:], true_dtype),
                                          tf.TensorSpec((None,) + y_pred0.shape[1:], tf.float32),
                                          tf.TensorSpec((None,), tf.float32)])
    for (y_true, y_pred, _), rows in zip(batches, ([0, 1, 2], [1, 2, 3, 4, 5], [0, 5])):
        t, p = y_true[rows].astype(true_dtype.name), y_pred[rows].astype(np.float32)
        w = np.linspace(0.5, 1.5, len(rows)).astype(np.float32)
        update(t, p, w)
        eager.update_state(t, p, sample_weight=w)
        np.testing.assert_allclose(traced.result().numpy(), eager.result().numpy(), rtol=1e-6)
    assert update.experimental_get_tracing_count() == 1


def test_a_train_step_with_loss_tracker_and_metrics_in_tapec_function():
    # The shape of a compiled train step: a tape, an update, a "loss" Mean weighted by
    # the batch size, and an accuracy metric, all traced once and replayed.
    w = tf.Variable(np.zeros((2, 3), np.float32))
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    loss_tracker = metrics.Mean(name="loss")
    accuracy = metrics.resolve("accuracy", y_true_shape=(None,), y_pred_shape=(None, 3))

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            logits = tf.matmul(x, w)
            loss = loss_fn(y, logits)
        w.assign_sub(0.5 * tape.gradient(loss, w))
        loss_tracker.update_state(loss, sample_weight=tf.shape(x)[0])
        accuracy.update_state(y, logits)
        return loss

    losses_seen, sizes, right = [], [], 0.0
    for size in (4, 4, 2):
        x = RNG.normal(size=(size, 2)).astype(np.float32)
        y = RNG.integers(0, 3, size=size)
        predicted = (x @ w.numpy()).argmax(-1)
        losses_seen.append(float(train_step(tf.constant(x), tf.constant(y)).numpy()))
        sizes.append(size)
        right += np.sum(predicted == y)
    np.testing.assert_allclose(loss_tracker.result().numpy(),
                               np.dot(losses_seen, sizes) / sum(sizes), rtol=1e-6)
    np.testing.assert_allclose(accuracy.result().numpy(), right / sum(sizes), rtol=1e-6)
    assert accuracy.name == "accuracy"


# --- identifiers -------------------------------------------------------------------------

def test_get_resolves_names_as_keras_3_does():
    assert isinstance(metrics.get("mse"), metrics.MeanSquaredError)
    assert isinstance(metrics.get("mean_absolute_error"), metrics.MeanAbsoluteError)
    assert isinstance(metrics.get("accuracy"), metrics.Accuracy)
    assert isinstance(metrics.get("msle"), metrics.MeanSquaredLogarithmicError)
    assert metrics.get("log_cosh_error").name == "logcosh"
    assert isinstance(metrics.get("SparseCategoricalAccuracy"), metrics.SparseCategoricalAccuracy)
    config = {"class_name": "BinaryAccuracy", "config": {"threshold": 0.7}}
    assert metrics.get(config).threshold == 0.7
    instance = metrics.Mean(name="loss")
    assert metrics.get(instance) is instance and metrics.get(None) is None
    with pytest.raises(ValueError, match="Could not interpret metric identifier: 'acc'"):
        metrics.get("acc")


@pytest.mark.parametrize("y_true_shape,y_pred_shape,expected", [
    ((None, 1), (None, 1), metrics.BinaryAccuracy),
    ((None,), (None, 1), metrics.BinaryAccuracy),
    ((None,), (None, 10), metrics.SparseCategoricalAccuracy),
    ((None, 1), (None, 10), metrics.SparseCategoricalAccuracy),
    ((None, 10), (None, 10), metrics.CategoricalAccuracy),
    ((None, 5, 10), (None, 5, 10), metrics.CategoricalAccuracy),
])
def test_resolve_chooses_accuracy_by_the_target_shapes(y_true_shape, y_pred_shape, expected):
    for identifier in ("accuracy", "acc", "Accuracy"):
        metric = metrics.resolve(identifier, y_true_shape=y_true_shape,
                                 y_pred_shape=y_pred_shape)
        assert type(metric) is expected and metric.name == identifier


def test_resolve_names_and_wraps_other_identifiers():
    assert metrics.resolve("mse").name == "mse"
    assert type(metrics.resolve("accuracy", loss="sparse_categorical_crossentropy")) is \
        metrics.SparseCategoricalAccuracy
    assert type(metrics.resolve("acc", loss=tf.keras.losses.BinaryCrossentropy())) is \
        metrics.BinaryAccuracy
    wrapped = metrics.resolve(tf.keras.losses.huber)
    assert isinstance(wrapped, metrics.MeanMetricWrapper) and wrapped.name == "huber"
    np.testing.assert_allclose(wrapped([[0.0, 3.0]], [[0.5, 0.0]]).numpy(),
                               (0.125 + 2.5) / 2, rtol=1e-6)
    with pytest.raises(ValueError, match="y_true_shape and y_pred_shape"):
        metrics.resolve("accuracy")


# --- against Keras 3 itself --------------------------------------------------------------

KERAS_METRICS = {"mse": ("MeanSquaredError", {}, "regression"),
                 "mae": ("MeanAbsoluteError", {}, "regression"),
                 "rmse": ("RootMeanSquaredError", {}, "regression"),
                 "accuracy": ("Accuracy", {}, "sparse_pairs"),
                 "binary_accuracy": ("BinaryAccuracy", {"threshold": 0.3}, "binary"),
                 "categorical_accuracy": ("CategoricalAccuracy", {}, "categorical"),
                 "sparse_categorical_accuracy": ("SparseCategoricalAccuracy", {}, "sparse"),
                 "binary_crossentropy": ("BinaryCrossentropy", {"from_logits": True},
                                         "binary"),
                 "categorical_crossentropy": ("CategoricalCrossentropy",
                                              {"label_smoothing": 0.1}, "categorical"),
                 "sparse_categorical_crossentropy": ("SparseCategoricalCrossentropy", {},
                                                     "sparse"),
                 "mape": ("MeanAbsolutePercentageError", {}, "regression"),
                 "msle": ("MeanSquaredLogarithmicError", {}, "positive"),
                 "logcosh": ("LogCoshError", {}, "regression"),
                 "kld": ("KLDivergence", {}, "positive"),
                 "poisson": ("Poisson", {}, "positive"),
                 "hinge": ("Hinge", {}, "binary"),
                 "squared_hinge": ("SquaredHinge", {}, "binary"),
                 "categorical_hinge": ("CategoricalHinge", {}, "categorical"),
                 "cosine_similarity": ("CosineSimilarity", {}, "regression")}


@pytest.mark.parametrize("name", KERAS_METRICS)
def test_streamed_results_match_keras(keras, name):
    class_name, kwargs, kind = KERAS_METRICS[name]
    theirs = getattr(keras.metrics, class_name)(**kwargs)
    ours = getattr(metrics, class_name)(**kwargs)
    batches = _batches("sparse" if kind == "sparse_pairs" else kind, seed=3)
    for y_true, y_pred, weights in batches:
        if kind == "sparse_pairs":           # exact equality on integer-valued data
            y_pred = y_pred.argmax(-1)
        y_pred = y_pred.astype(np.float32)
        theirs.update_state(y_true, y_pred, sample_weight=weights)
        ours.update_state(y_true, y_pred, sample_weight=weights)
        np.testing.assert_allclose(ours.result().numpy(), np.asarray(theirs.result()),
                                   rtol=1e-6)
    if class_name != "CosineSimilarity":     # tapec's config also holds its axis
        assert ours.get_config() == theirs.get_config()


def test_ignore_class_labels_are_not_counted(keras):
    labels, probs = np.array([0, 255, 2, 1, 255]), RNG.uniform(size=(5, 3)).astype(np.float32)
    kept = labels != 255
    unweighted = metrics.SparseCategoricalCrossentropy(ignore_class=255)
    unweighted.update_state(labels, probs)
    np.testing.assert_allclose(unweighted.result().numpy(),
                               _sparse_ce(labels[kept], probs[kept]).mean(), rtol=1e-6)
    # Keras 3.15 leaves them out only when sample weights are given (without weights it
    # counts them as zeros): compare the weighted case.
    weights = np.array([1.0, 2.0, 0.5, 1.0, 1.0])
    theirs = keras.metrics.SparseCategoricalCrossentropy(ignore_class=255)
    ours = metrics.SparseCategoricalCrossentropy(ignore_class=255)
    theirs.update_state(labels, probs, sample_weight=weights)
    ours.update_state(labels, probs, sample_weight=weights)
    np.testing.assert_allclose(ours.result().numpy(), np.asarray(theirs.result()), rtol=1e-6)
    assert ours.count.numpy() == np.asarray(theirs.count) == 2.5


def test_resolve_matches_keras_compile(keras):
    from keras.src.trainers.compile_utils import get_metric
    shapes = [((8, 1), (8, 1)), ((8,), (8, 1)), ((8,), (8, 4)), ((8, 1), (8, 4)),
              ((8, 4), (8, 4)), ((8, 2, 4), (8, 2, 4))]
    for y_true_shape, y_pred_shape in shapes:
        for identifier in ("accuracy", "acc", "mse", "mae"):
            theirs = get_metric(identifier, np.zeros(y_true_shape), np.zeros(y_pred_shape))
            ours = metrics.resolve(identifier, y_true_shape=y_true_shape,
                                   y_pred_shape=y_pred_shape)
            assert type(ours).__name__ == type(theirs).__name__
            assert ours.name == theirs.name


def test_mean_weighting_of_every_rank_matches_keras(keras):
    values = RNG.normal(size=(4, 3)).astype(np.float32)
    for weights in (None, 2.0, RNG.uniform(size=4), RNG.uniform(size=(4, 1)),
                    RNG.uniform(size=(4, 3))):
        for name in ("Mean", "Sum"):
            theirs, ours = getattr(keras.metrics, name)(), getattr(metrics, name)()
            for _ in range(2):
                theirs.update_state(values, sample_weight=weights)
                ours.update_state(values, sample_weight=weights)
            np.testing.assert_allclose(ours.result().numpy(), np.asarray(theirs.result()),
                                       rtol=1e-6, atol=1e-6, err_msg=f"{name} weights {weights}")
            for mine, keras_variable in zip(ours.variables, theirs.variables):
                np.testing.assert_allclose(mine.numpy(), np.asarray(keras_variable), rtol=1e-6,
                                           atol=1e-6)
