"""Keras normalization, convolution and pooling layers against tf.keras (Keras 3 on
TensorFlow) with the same weights: outputs, moving statistics, and the examples of
TensorFlow's "Advanced automatic differentiation" guide (a jacobian with respect to a
kernel, batch_jacobian, a Hessian through BatchNormalization in training mode).
Skipped without TensorFlow."""
import numpy as np
import pytest

import tapec as tf

tf_real = pytest.importorskip("tensorflow")

RNG = np.random.default_rng(5)


@pytest.fixture(autouse=True)
def fresh_random_data():
    """Each test draws the same data however the tests are distributed or ordered."""
    global RNG
    RNG = np.random.default_rng(5)


def _pair(name, **kwargs):
    """The tapec layer and tf.keras's, built on the same input, with the same weights."""
    return getattr(tf.keras.layers, name)(**kwargs), getattr(tf_real.keras.layers, name)(**kwargs)


def _share_weights(ours, theirs, x):
    ours(x)
    theirs(x)
    weights = [RNG.normal(size=w.shape).astype(np.float32) for w in theirs.get_weights()]
    if type(theirs).__name__ == "BatchNormalization":
        weights[-1] = np.abs(weights[-1]) + 0.5                 # moving variance
    ours.set_weights(weights)
    theirs.set_weights(weights)


X1 = RNG.normal(size=(3, 11, 4)).astype(np.float32)
X2 = RNG.normal(size=(3, 9, 8, 4)).astype(np.float32)
X3 = RNG.normal(size=(2, 5, 6, 4, 3)).astype(np.float32)

CASES = [
    ("Conv1D", X1, dict(filters=5, kernel_size=3)),
    ("Conv1D", X1, dict(filters=2, kernel_size=4, strides=2, padding="same",
                        activation="relu")),
    ("Conv1D", X1, dict(filters=3, kernel_size=3, padding="causal", dilation_rate=2)),
    ("Conv1D", X1, dict(filters=3, kernel_size=3, data_format="channels_first",
                        padding="same")),
    ("Conv2D", X2, dict(filters=5, kernel_size=3, use_bias=False)),
    ("Conv2D", X2, dict(filters=2, kernel_size=(3, 2), strides=(2, 1), padding="same",
                        activation="tanh")),
    ("Conv2D", X2, dict(filters=3, kernel_size=3, dilation_rate=(2, 1), padding="same")),
    ("Conv2D", X2, dict(filters=3, kernel_size=3, data_format="channels_first")),
    ("Conv3D", X3, dict(filters=2, kernel_size=(2, 3, 2), strides=(1, 2, 1), padding="same")),
    # (tf.keras 3.15's Conv3D with channels_first adds its bias along the last axis on
    # TensorFlow's CPU backend; tapec's is checked against channels_last instead.)
    ("Conv3D", X3, dict(filters=2, kernel_size=2, data_format="channels_first",
                        use_bias=False)),
    ("Conv1D", X1, dict(filters=6, kernel_size=3, groups=2, padding="same")),
    ("Conv2D", X2, dict(filters=4, kernel_size=(3, 2), groups=4, strides=2)),
    ("DepthwiseConv1D", X1, dict(kernel_size=3, depth_multiplier=2, padding="same")),
    ("DepthwiseConv2D", X2, dict(kernel_size=3, strides=2, activation="relu")),
    ("DepthwiseConv2D", X2, dict(kernel_size=(2, 3), dilation_rate=2, depth_multiplier=3,
                                 padding="same", data_format="channels_first")),
    ("SeparableConv1D", X1, dict(filters=3, kernel_size=3, depth_multiplier=2)),
    ("SeparableConv2D", X2, dict(filters=5, kernel_size=3, strides=2, padding="same")),
    ("SeparableConv2D", X2, dict(filters=2, kernel_size=2, dilation_rate=2,
                                 use_bias=False)),
    ("Conv1DTranspose", X1, dict(filters=3, kernel_size=3, strides=2)),
    ("Conv2DTranspose", X2, dict(filters=3, kernel_size=3, strides=2, padding="same")),
    ("Conv2DTranspose", X2, dict(filters=2, kernel_size=(3, 2), strides=(2, 3),
                                 output_padding=(1, 2), activation="relu")),
    ("Conv2DTranspose", X2, dict(filters=2, kernel_size=3, strides=2, padding="same",
                                 output_padding=0)),
    ("Conv2DTranspose", X2, dict(filters=2, kernel_size=2, strides=3)),
    ("Conv3DTranspose", X3, dict(filters=2, kernel_size=2, strides=(1, 2, 1),
                                 padding="same")),
    ("MaxPooling3D", X3, dict(padding="same")),
    ("AveragePooling3D", X3, dict(pool_size=(2, 3, 2), strides=1, padding="same")),
    ("GlobalAveragePooling3D", X3, dict()),
    ("GlobalMaxPooling3D", X3, dict(data_format="channels_first", keepdims=True)),
    ("MaxPooling1D", X1, dict(pool_size=3, strides=2, padding="same")),
    ("AveragePooling1D", X1, dict(pool_size=3, strides=2, padding="same")),
    ("MaxPooling2D", X2, dict()),
    ("MaxPooling2D", X2, dict(pool_size=3, strides=2, padding="same")),
    ("AveragePooling2D", X2, dict(pool_size=(3, 2), strides=1, padding="same")),
    ("AveragePooling2D", X2, dict(pool_size=2, data_format="channels_first")),
    ("GlobalAveragePooling1D", X1, dict()),
    ("GlobalMaxPooling1D", X1, dict(keepdims=True)),
    ("GlobalAveragePooling2D", X2, dict(data_format="channels_first")),
    ("GlobalMaxPooling2D", X2, dict()),
    ("LayerNormalization", X2, dict(axis=[1, 3])),
    ("LayerNormalization", X1, dict(center=False, epsilon=0.1)),
    ("BatchNormalization", X2, dict(axis=1)),
    ("BatchNormalization", X1, dict(scale=False)),
]


@pytest.mark.parametrize("name, x, kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in
                                                        enumerate(CASES)])
def test_layer_matches_tf_keras(name, x, kwargs):
    ours, theirs = _pair(name, **kwargs)
    _share_weights(ours, theirs, x)
    for training in (False, True):
        y, expected = ours(x, training=training), theirs(x, training=training)
        assert y.shape == tuple(expected.shape) and y.dtype == tf.float32
        np.testing.assert_allclose(y.numpy(), expected.numpy(), rtol=2e-5, atol=2e-5,
                                   err_msg=f"training={training}")
    for a, b in zip(ours.get_weights(), theirs.get_weights()):   # moving statistics too
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    assert [tuple(w.shape) for w in ours.weights] == [tuple(w.shape) for w in theirs.weights]


def _three_training_steps_agree(ours, theirs):
    """Three training steps, each under the library's tf.function, give the same outputs,
    and leave the same weights (moving statistics included)."""
    step = tf.function(lambda x: ours(x, training=True))
    their_step = tf_real.function(lambda x: theirs(x, training=True))
    for _ in range(3):
        x = RNG.normal(size=X1.shape).astype(np.float32) * 2 + 1
        np.testing.assert_allclose(step(x).numpy(), their_step(x).numpy(), rtol=2e-5,
                                   atol=2e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("clipping", [None, {"rmax": 1.5, "rmin": 0.8, "dmax": 0.3}])
def test_batch_renormalization_follows_keras_over_steps_in_a_function(clipping):
    kwargs = dict(momentum=0.8, renorm=True, renorm_momentum=0.7, renorm_clipping=clipping)
    ours, theirs = _pair("BatchNormalization", **kwargs)
    ours(X1)
    theirs(X1)
    assert [w.name.split("/")[-1].split(":")[0] for w in ours.weights] == \
        [w.name for w in theirs.weights]
    _three_training_steps_agree(ours, theirs)
    np.testing.assert_allclose(ours(X1).numpy(), theirs(X1).numpy(), rtol=2e-5, atol=2e-5)
    with tf.GradientTape() as tape:                       # r and d pass no gradient
        loss = tf.reduce_sum(ours(tf.constant(X1), training=True) ** 2)
    with tf_real.GradientTape() as their_tape:
        their_loss = tf_real.reduce_sum(theirs(X1, training=True) ** 2)
    for a, b in zip(tape.gradient(loss, ours.trainable_weights),
                    their_tape.gradient(their_loss, theirs.trainable_weights)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-4)


def test_batch_normalization_statistics_follow_keras_over_steps_in_a_function():
    ours, theirs = _pair("BatchNormalization", momentum=0.8)
    _share_weights(ours, theirs, X1)
    _three_training_steps_agree(ours, theirs)


@pytest.mark.parametrize("name", ["BatchNormalization", "LayerNormalization"])
def test_float16_normalization_matches_tf_keras(name):
    x = (RNG.normal(size=(16, 3)) * 300 + 1000).astype(np.float16)
    ours, theirs = _pair(name, dtype="float16")
    y, expected = ours(x, training=True), theirs(x, training=True)
    assert y.dtype == tf.float16
    np.testing.assert_allclose(y.numpy().astype(np.float32), expected.numpy(), atol=2e-3)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a.astype(np.float32), b, rtol=1e-3)


# --- the "Advanced automatic differentiation" guide -----------------------------------------

def test_jacobian_of_a_conv_layer_output_with_respect_to_its_kernel():
    x = RNG.normal(size=(2, 5, 5, 2)).astype(np.float32)
    ours, theirs = _pair("Conv2D", filters=2, kernel_size=2, activation="relu")
    _share_weights(ours, theirs, x)
    with tf.GradientTape() as tape:
        y = ours(x)
    with tf_real.GradientTape() as their_tape:
        their_y = theirs(x)
    j = tape.jacobian(y, ours.kernel)
    expected = their_tape.jacobian(their_y, theirs.kernel)
    assert j.shape == tuple(expected.shape) == (2, 4, 4, 2, 2, 2, 2, 2)
    np.testing.assert_allclose(j.numpy(), expected.numpy(), rtol=1e-5, atol=1e-5)


def _guide_stack(framework, x):
    """The guide's batch_jacobian example: Dense(elu), BatchNormalization in training,
    Dense(relu)."""
    keras = framework.keras
    return [keras.layers.Dense(8, activation="elu"), keras.layers.BatchNormalization(),
            keras.layers.Dense(6, activation="relu")]


def _shared_stacks(x):
    ours, theirs = _guide_stack(tf, x), _guide_stack(tf_real, x)
    h, their_h = x, x
    for a, b in zip(ours, theirs):
        _share_weights(a, b, h)
        h, their_h = a(h), b(their_h)
    return ours, theirs


def _apply(stack, x, training=True):
    h = x
    for layer in stack:
        h = layer(h, training=training) if "Normalization" in type(layer).__name__ else \
            layer(h)
    return h


def test_batch_jacobian_through_batch_normalization_matches_tensorflow():
    x = RNG.normal(size=(7, 5)).astype(np.float32)
    ours, theirs = _shared_stacks(x)
    xt, their_x = tf.constant(x), tf_real.constant(x)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(xt)
        y = _apply(ours, xt)
    with tf_real.GradientTape(persistent=True) as their_tape:
        their_tape.watch(their_x)
        their_y = _apply(theirs, their_x)
    jb, expected = tape.batch_jacobian(y, xt), their_tape.batch_jacobian(their_y, their_x)
    assert jb.shape == (7, 6, 5)
    np.testing.assert_allclose(jb.numpy(), expected.numpy(), rtol=1e-4, atol=1e-5)
    j, their_j = tape.jacobian(y, xt), their_tape.jacobian(their_y, their_x)
    np.testing.assert_allclose(j.numpy(), their_j.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("conv", [False, True])
def test_hessian_through_batch_normalization_in_training_matches_tensorflow(conv):
    if conv:
        x = RNG.normal(size=(3, 5, 5, 1)).astype(np.float32)
        make = [lambda k: k.layers.Conv2D(2, 2, activation="tanh"),
                lambda k: k.layers.BatchNormalization(),
                lambda k: k.layers.GlobalAveragePooling2D(), lambda k: k.layers.Dense(2)]
    else:
        x = RNG.normal(size=(7, 5)).astype(np.float32)
        make = [lambda k: k.layers.Dense(4, activation="tanh"),
                lambda k: k.layers.BatchNormalization(), lambda k: k.layers.Dense(2)]
    ours, theirs = [m(tf.keras) for m in make], [m(tf_real.keras) for m in make]
    h, their_h = x, x
    for a, b in zip(ours, theirs):
        _share_weights(a, b, h)
        h, their_h = a(h), b(their_h)

    def hessian(framework, stack):
        kernel = stack[0].kernel
        with framework.GradientTape() as outer:
            with framework.GradientTape() as inner:
                loss = framework.reduce_mean(_apply(stack, x) ** 2)
            g = inner.gradient(loss, kernel)
        return outer.jacobian(g, kernel).numpy()

    ours_h, theirs_h = hessian(tf, ours), hessian(tf_real, theirs)
    assert ours_h.shape == theirs_h.shape
    scale = np.abs(theirs_h).max()
    np.testing.assert_allclose(ours_h, theirs_h, rtol=1e-3, atol=1e-4 * scale)
