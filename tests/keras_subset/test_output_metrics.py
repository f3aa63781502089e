"""Metrics per output of a model with several outputs, in Keras 3's forms (a list with one
entry per output, a dict keyed by output name), named "<output>_<metric>": values
against the metric on that output alone, and against tf.keras where installed."""
import numpy as np
import pytest

from tapec import keras

RNG = np.random.default_rng(8)
X = RNG.normal(size=(16, 3)).astype(np.float32)
Y_SCORE = RNG.normal(size=(16, 1)).astype(np.float32)
Y_LABEL = RNG.integers(0, 3, 16)
WEIGHTS = RNG.uniform(size=16).astype(np.float32)


def _model(k, metrics, weighted=None):
    k.utils.set_random_seed(0)
    inputs = k.Input((3,))
    hidden = k.layers.Dense(4, activation="tanh")(inputs)
    model = k.Model(inputs, [k.layers.Dense(1, name="score")(hidden),
                             k.layers.Dense(3, name="label")(hidden)])
    model.compile(optimizer=k.optimizers.SGD(0.1), metrics=metrics, weighted_metrics=weighted,
                  loss=["mse", k.losses.SparseCategoricalCrossentropy(from_logits=True)])
    return model


FORMS = [(["mae", ["accuracy", "accuracy"]], None),
         ({"label": "accuracy"}, None),
         ({"score": ["mae", "mse"], "label": ["accuracy"]}, ["mae", None])]


def test_each_output_has_its_own_metrics_named_after_it():
    model = _model(keras, *FORMS[2])
    logs = model.evaluate(X, [Y_SCORE, Y_LABEL], sample_weight=WEIGHTS, verbose=0,
                          return_dict=True)
    assert sorted(logs) == ["label_accuracy", "loss", "score_mae", "score_mse",
                            "score_weighted_mae"]
    score, label = model.predict(X, verbose=0)
    np.testing.assert_allclose(logs["score_mae"], np.abs(score - Y_SCORE).mean(), rtol=1e-5)
    np.testing.assert_allclose(logs["score_weighted_mae"],
                               np.sum(np.abs(score - Y_SCORE)[:, 0] * WEIGHTS) / WEIGHTS.sum(),
                               rtol=1e-5)
    np.testing.assert_allclose(logs["label_accuracy"], np.mean(label.argmax(-1) == Y_LABEL))
    assert model.metrics_names == ["loss", "score_mae", "score_mse", "label_accuracy",
                                   "score_weighted_mae"]


def test_metrics_that_fit_no_output_are_named():
    model = _model(keras, ["mae"])
    with pytest.raises(ValueError, match="Invalid `metrics`"):
        model.evaluate(X, [Y_SCORE, Y_LABEL], verbose=0)
    model = _model(keras, {"scores": "mae"})
    with pytest.raises(ValueError, match=r"output names of the model \['score', 'label'\]"):
        model.evaluate(X, [Y_SCORE, Y_LABEL], verbose=0)


@pytest.mark.parametrize("metrics, weighted", FORMS)
def test_output_metrics_match_tf_keras(metrics, weighted):
    tf_real = pytest.importorskip("tensorflow")
    ours, theirs = _model(keras, metrics, weighted), _model(tf_real.keras, metrics, weighted)
    theirs.set_weights(ours.get_weights())
    mine = ours.fit(X, [Y_SCORE, Y_LABEL], sample_weight=WEIGHTS, batch_size=8, epochs=2,
                    shuffle=False, verbose=0).history
    reference = theirs.fit(X, [Y_SCORE, Y_LABEL], sample_weight=WEIGHTS, batch_size=8,
                           epochs=2, shuffle=False, verbose=0).history
    # Keras 3 also logs each output's loss ("score_loss"); tapec logs the total only.
    assert set(mine) == {name for name in reference if not name.endswith("_loss")} | {"loss"}
    for name in mine:
        np.testing.assert_allclose(mine[name], reference[name], rtol=1e-5, err_msg=name)
