"""Core layers (Dense, Flatten, Reshape, Lambda, Activation, Dropout, Embedding) against
Keras 3's formulas and, where it is installed, TensorFlow's Keras with the same weights;
derivatives through Dense against finite differences and TensorFlow, eagerly and in
tapec.function."""
import numpy as np
import pytest

import tapec as tf
from tapec import keras

rng = np.random.default_rng(0)


def _dense(units=3, **kwargs):
    layer = keras.layers.Dense(units, **kwargs)
    layer.build((None, 4))
    kernel = rng.normal(size=(4, units)).astype(layer.dtype)
    bias = rng.normal(size=(units,)).astype(layer.dtype)
    layer.set_weights([kernel, bias])
    return layer, kernel, bias


@pytest.mark.parametrize("activation", ["relu", "tanh", "sigmoid", "softmax", None])
def test_dense_formula(activation):
    layer, kernel, bias = _dense(activation=activation)
    x = rng.normal(size=(5, 4)).astype(np.float32)
    z = x @ kernel + bias
    want = {"relu": np.maximum(z, 0), "tanh": np.tanh(z), "sigmoid": 1 / (1 + np.exp(-z)),
            "softmax": np.exp(z) / np.exp(z).sum(-1, keepdims=True), None: z}[activation]
    np.testing.assert_allclose(layer(x).numpy(), want, rtol=1e-5, atol=1e-6)


def test_dense_against_tensorflow():
    tf_real = pytest.importorskip("tensorflow")
    layer, kernel, bias = _dense(activation="gelu")
    real = tf_real.keras.layers.Dense(3, activation="gelu")
    real.build((None, 4))
    real.set_weights([kernel, bias])
    x = rng.normal(size=(2, 6, 4)).astype(np.float32)       # rank 3: the last axis
    np.testing.assert_allclose(layer(x).numpy(), real(x).numpy(), rtol=1e-5, atol=1e-6)
    assert [w.shape for w in real.weights] == [tuple(w.shape) for w in layer.weights]


def test_dense_on_integer_input_computes_in_float():
    layer, kernel, bias = _dense()
    y = layer(np.ones((1, 4), np.int32))
    assert y.dtype == tf.float32
    np.testing.assert_allclose(y.numpy(), kernel.sum(0, keepdims=True) + bias, rtol=1e-5,
                               atol=1e-6)


def test_dense_without_bias_and_bad_units():
    layer = keras.layers.Dense(2, use_bias=False)
    layer.build((None, 3))
    assert [w.name for w in layer.weights] == ["dense/kernel:0"] or len(layer.weights) == 1
    with pytest.raises(ValueError, match="units"):
        keras.layers.Dense(0)
    with pytest.raises(ValueError, match="expected min_ndim=2, found ndim=1"):
        keras.layers.Dense(2)(np.ones(3, np.float32))
    built, _, _ = _dense()
    message = 'Input 0 of layer "dense.*" is incompatible with the layer: expected axis -1 ' \
              r"of input shape to have value 4, but received input with shape \(1, 3\)"
    with pytest.raises(ValueError, match=message):
        built(np.ones((1, 3), np.float32))
    with pytest.raises(ValueError, match="expected axis -1"):
        built(keras.Input(shape=(5,)))


def _finite_difference(f, x, eps=1e-6):
    """d f(x) / d x by central differences, shape f(x).shape + x.shape (float64)."""
    y0 = f(x)
    jac = np.zeros(y0.shape + x.shape)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = eps
        jac[(...,) + index] = (f(x + step) - f(x - step)) / (2 * eps)
    return jac


@pytest.mark.parametrize("traced", [False, True])
def test_dense_derivatives_match_finite_differences(traced):
    layer, kernel, bias = _dense(activation="tanh", dtype="float64")
    x = tf.constant(rng.normal(size=(3, 4)))

    def derivatives(x):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = layer(x)
            loss = tf.reduce_sum(y ** 2)
        return (tape.gradient(loss, [x, layer.kernel]), tape.jacobian(y, layer.kernel),
                tape.batch_jacobian(y, x))

    run = tf.function(derivatives) if traced else derivatives
    (dx, dkernel), jac_kernel, batch_jac = run(x)
    xv = x.numpy()

    def forward(xv, k):
        return np.tanh(xv @ k + bias)
    np.testing.assert_allclose(dx.numpy(), _finite_difference(
        lambda v: np.sum(forward(v, kernel) ** 2), xv), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dkernel.numpy(), _finite_difference(
        lambda k: np.sum(forward(xv, k) ** 2), kernel), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jac_kernel.numpy(), _finite_difference(
        lambda k: forward(xv, k), kernel), rtol=1e-6, atol=1e-8)
    full = _finite_difference(lambda v: forward(v, kernel), xv)      # [b, y, b, x]
    diagonal = np.stack([full[i, :, i, :] for i in range(3)])
    np.testing.assert_allclose(batch_jac.numpy(), diagonal, rtol=1e-6, atol=1e-8)
    if traced:
        run(tf.constant(rng.normal(size=(3, 4))))
        assert run.experimental_get_tracing_count() == 1


def test_dense_derivatives_against_tensorflow():
    tf_real = pytest.importorskip("tensorflow")
    layer, kernel, bias = _dense(activation="sigmoid", dtype="float64")
    real = tf_real.keras.layers.Dense(3, activation="sigmoid", dtype="float64")
    real.build((None, 4))
    real.set_weights([kernel, bias])
    xv = rng.normal(size=(2, 4))
    x, x_real = tf.constant(xv), tf_real.constant(xv)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = layer(x)
    with tf_real.GradientTape(persistent=True) as tape_real:
        tape_real.watch(x_real)
        y_real = real(x_real)
    pairs = [(tape.jacobian(y, layer.kernel), tape_real.jacobian(y_real, real.kernel)),
             (tape.batch_jacobian(y, x), tape_real.batch_jacobian(y_real, x_real)),
             (tape.gradient(y, layer.bias), tape_real.gradient(y_real, real.bias))]
    for ours, theirs in pairs:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)


def test_flatten_reshape_activation_lambda():
    x = rng.normal(size=(2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(keras.layers.Flatten()(x).numpy(), x.reshape(2, 12))
    np.testing.assert_array_equal(keras.layers.Reshape((4, 3))(x).numpy(), x.reshape(2, 4, 3))
    np.testing.assert_array_equal(keras.layers.Reshape((-1, 2))(x).numpy(),
                                  x.reshape(2, 6, 2))
    np.testing.assert_allclose(keras.layers.Activation("relu")(x).numpy(), np.maximum(x, 0))
    np.testing.assert_allclose(keras.layers.Lambda(lambda t, k: t * k,
                                                   arguments={"k": 3.0})(x).numpy(), 3 * x)
    with pytest.raises(ValueError, match="target_shape"):
        keras.layers.Reshape((5,))(x)


def test_flatten_channels_first_against_tensorflow():
    tf_real = pytest.importorskip("tensorflow")
    x = rng.normal(size=(2, 3, 4, 5)).astype(np.float32)
    for fmt in ("channels_first", "channels_last"):
        np.testing.assert_array_equal(
            keras.layers.Flatten(data_format=fmt)(x).numpy(),
            tf_real.keras.layers.Flatten(data_format=fmt)(x).numpy())


def test_dropout_inference_is_identity_training_drops_and_scales():
    x = np.ones((200, 50), np.float32)
    layer = keras.layers.Dropout(0.25, seed=3)
    np.testing.assert_array_equal(layer(x).numpy(), x)
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
    y = layer(x, training=True).numpy()
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((y == 0).mean() - 0.25) < 0.02
    with pytest.raises(ValueError, match="rate"):
        keras.layers.Dropout(1.5)


def test_dropout_noise_shape_shares_the_mask():
    y = keras.layers.Dropout(0.5, noise_shape=(None, 1), seed=1)(
        np.ones((64, 5), np.float32), training=True).numpy()
    assert np.all(y == y[:, :1])


def test_embedding_lookup_and_gradient():
    layer = keras.layers.Embedding(10, 3)
    layer.build()
    table = layer.embeddings.numpy()
    assert np.all(np.abs(table) <= 0.05)         # "uniform": RandomUniform(-0.05, 0.05)
    indices = np.array([[1, 4], [4, 9]])
    np.testing.assert_array_equal(layer(indices).numpy(), table[indices])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(indices))
    grad = tf.convert_to_tensor(tape.gradient(loss, layer.embeddings)).numpy()
    want = np.zeros((10, 3))
    np.add.at(want, indices.ravel(), 1.0)
    np.testing.assert_array_equal(grad, want)
