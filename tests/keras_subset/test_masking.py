"""Keras masks: Embedding(mask_zero=True) and Masking make them, Dense, Dropout,
Activation, Lambda and the normalizations pass them on, GlobalAveragePooling1D averages
the unmasked steps, and losses and metrics weigh by them (Keras 3's formulas written in
NumPy; tf.keras itself where installed)."""
import warnings

import numpy as np
import pytest

import tapec as tf
from tapec import keras
from tapec.keras.masking import get_keras_mask

layers = keras.layers
RNG = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def fresh_random_data():
    global RNG
    RNG = np.random.default_rng(3)


TOKENS = np.array([[3, 1, 0, 0], [2, 0, 5, 0], [0, 0, 0, 0]])


def test_embedding_mask_passes_through_layers_that_support_masking():
    embed = layers.Embedding(6, 3, mask_zero=True)
    h = embed(TOKENS)
    np.testing.assert_array_equal(get_keras_mask(h).numpy(), TOKENS != 0)
    for layer in (layers.Dense(2), layers.Dropout(0.5), layers.Activation("tanh"),
                  layers.LayerNormalization(), layers.BatchNormalization()):
        h = layer(h)
        np.testing.assert_array_equal(get_keras_mask(h).numpy(), TOKENS != 0,
                                      err_msg=layer.name)
    assert get_keras_mask(layers.Lambda(lambda t: t * 2)(h)) is None   # no `mask=` given
    assert get_keras_mask(layers.Embedding(6, 3)(TOKENS)) is None


def test_global_average_pooling_averages_the_unmasked_steps_only():
    x = RNG.normal(size=(3, 4, 2)).astype(np.float32)
    x[TOKENS == 0] = np.nan                 # masked steps never reach the average
    masked = layers.Masking(mask_value=np.nan)
    h = layers.Lambda(lambda t: t, mask=lambda t, m: tf.constant(TOKENS != 0))(x)
    y = layers.GlobalAveragePooling1D()(h)
    keep = (TOKENS != 0)[..., None]
    with np.errstate(invalid="ignore"):
        expected = np.where(keep, x, 0).sum(1) / keep.sum(1)
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-6)
    assert np.isnan(y.numpy()[2]).all()     # a fully masked row: 0 / 0, as Keras
    assert get_keras_mask(y) is None
    assert masked.mask_value is not None


def test_masking_layer_zeroes_and_masks_the_timesteps_equal_to_mask_value():
    x = RNG.normal(size=(2, 3, 2))
    x[0, 1] = -1.0
    x[1, 2, 0] = -1.0                       # only one feature: not masked
    y = layers.Masking(mask_value=-1.0, dtype="float64")(x)
    expected_mask = np.array([[True, False, True], [True, True, True]])
    np.testing.assert_array_equal(get_keras_mask(y).numpy(), expected_mask)
    np.testing.assert_array_equal(y.numpy(), np.where(expected_mask[..., None], x, 0))
    assert layers.Masking(0.5).get_config()["mask_value"] == 0.5


def test_a_layer_without_mask_support_warns_and_drops_the_mask():
    h = layers.Embedding(6, 3, mask_zero=True)(TOKENS)
    with pytest.warns(UserWarning, match="does not support masking"):
        y = layers.Flatten()(h)
    assert get_keras_mask(y) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        layers.Flatten()(layers.Embedding(6, 3)(TOKENS))      # no mask: no warning


def _per_step_model():
    keras.utils.set_random_seed(1)
    inputs = keras.Input((4,), dtype="int32")
    h = layers.Embedding(6, 3, mask_zero=True)(inputs)
    return keras.Model(inputs, layers.Dense(3)(h))


def test_losses_and_metrics_weigh_by_the_mask_of_the_predictions():
    model = _per_step_model()
    labels = RNG.integers(0, 3, size=TOKENS.shape)
    logits = model(TOKENS)
    keep = TOKENS != 0
    z = logits.numpy()
    log_p = z - np.log(np.exp(z).sum(-1, keepdims=True))
    per_step = -np.take_along_axis(log_p, labels[..., None], -1)[..., 0]
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    # Keras 3: the mask weighs each kept step total/kept, so the mean is over kept steps.
    np.testing.assert_allclose(loss(labels, logits).numpy(), per_step[keep].mean(),
                               rtol=1e-6)
    accuracy = keras.metrics.SparseCategoricalAccuracy()
    accuracy.update_state(labels, logits)
    np.testing.assert_allclose(accuracy.result().numpy(),
                               (z.argmax(-1) == labels)[keep].mean(), rtol=1e-6)
    model.compile(optimizer="sgd", loss=loss, metrics=["sparse_categorical_accuracy"])
    evaluated = model.evaluate(TOKENS, labels, verbose=0)
    np.testing.assert_allclose(evaluated, [per_step[keep].mean(),
                                           (z.argmax(-1) == labels)[keep].mean()], rtol=1e-6)
    history = model.fit(TOKENS, labels, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()


@pytest.mark.parametrize("per_step", [False, True])
def test_masked_training_matches_tf_keras(per_step):
    tf_real = pytest.importorskip("tensorflow")
    x = RNG.integers(0, 10, (8, 6))
    x[:, 4:] = 0
    x[0, 1:] = 0
    y = RNG.integers(0, 3, (8, 6) if per_step else (8,))

    def build(k):
        k.utils.set_random_seed(0)
        inputs = k.Input((6,), dtype="int32")
        h = k.layers.Dense(5, activation="tanh")(k.layers.Embedding(10, 4,
                                                                    mask_zero=True)(inputs))
        if not per_step:
            h = k.layers.GlobalAveragePooling1D()(h)
        model = k.Model(inputs, k.layers.Dense(3)(h))
        model.compile(optimizer=k.optimizers.SGD(0.1), metrics=["sparse_categorical_accuracy"],
                      loss=k.losses.SparseCategoricalCrossentropy(from_logits=True))
        return model

    ours, theirs = build(keras), build(tf_real.keras)
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(ours.evaluate(x, y, verbose=0), theirs.evaluate(x, y, verbose=0),
                               rtol=1e-5)
    mine = ours.fit(x, y, epochs=2, batch_size=4, verbose=0, shuffle=False).history
    reference = theirs.fit(x, y, epochs=2, batch_size=4, verbose=0, shuffle=False).history
    for name in reference:
        np.testing.assert_allclose(mine[name], reference[name], rtol=1e-5, err_msg=name)
