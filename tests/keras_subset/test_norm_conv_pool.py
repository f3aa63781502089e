"""Keras normalization, convolution and pooling layers: values against Keras 3's formulas
written in NumPy, gradients against central differences in float64, moving statistics
eagerly and inside tapec.function, and the derivative forms (jacobian, batch_jacobian,
Hessian). The comparisons with tf.keras itself are in
test_norm_conv_pool_against_tensorflow.py."""
import json

import numpy as np
import pytest

import tapec as tf
from tapec import keras
from tests.helpers import fd

RNG = np.random.default_rng(11)
layers = keras.layers


@pytest.fixture(autouse=True)
def fresh_random_data():
    """Each test draws the same data however the tests are distributed or ordered."""
    global RNG
    RNG = np.random.default_rng(11)


def _set_random_weights(layer, positive_last=False):
    weights = [RNG.normal(size=w.shape) for w in layer.get_weights()]
    if positive_last:                     # a variance
        weights[-1] = np.abs(weights[-1]) + 0.5
    layer.set_weights(weights)
    return weights


def batch_norm_reference(x, mean, variance, gamma, beta, epsilon):
    return (x - mean) / np.sqrt(variance + epsilon) * gamma + beta


# --- BatchNormalization ---------------------------------------------------------------------

def test_batch_normalization_training_uses_batch_statistics_and_moves_the_averages():
    x = RNG.normal(size=(8, 3)) * 3 + 2
    bn = layers.BatchNormalization(momentum=0.9, dtype="float64")
    bn.build(x.shape)
    gamma, beta, moving_mean, moving_variance = _set_random_weights(bn, positive_last=True)
    assert [w.name.split("/")[-1].split(":")[0] for w in bn.weights] == \
        ["gamma", "beta", "moving_mean", "moving_variance"]
    assert len(bn.trainable_weights) == 2 and len(bn.non_trainable_weights) == 2
    for _ in range(2):
        y = bn(x, training=True)
        mean, variance = x.mean(0), x.var(0)     # the biased variance, as Keras
        np.testing.assert_allclose(y.numpy(), batch_norm_reference(x, mean, variance, gamma,
                                                                   beta, 1e-3), rtol=1e-12)
        moving_mean = 0.9 * moving_mean + 0.1 * mean
        moving_variance = 0.9 * moving_variance + 0.1 * variance
        np.testing.assert_allclose(bn.moving_mean.numpy(), moving_mean, rtol=1e-12)
        np.testing.assert_allclose(bn.moving_variance.numpy(), moving_variance, rtol=1e-12)
    # Inference (the default) normalizes with the moving statistics and moves nothing.
    y = bn(x)
    np.testing.assert_allclose(y.numpy(), batch_norm_reference(
        x, moving_mean, moving_variance, gamma, beta, 1e-3), rtol=1e-12)
    np.testing.assert_allclose(bn.moving_mean.numpy(), moving_mean, rtol=1e-12)


def test_a_frozen_batch_normalization_runs_in_inference_mode():
    x = RNG.normal(size=(6, 2))
    bn = layers.BatchNormalization(dtype="float64")
    bn.build(x.shape)
    bn.trainable = False
    y = bn(x, training=True)
    np.testing.assert_allclose(y.numpy(), x / np.sqrt(1 + 1e-3), rtol=1e-12)
    assert bn.moving_mean.numpy().tolist() == [0.0, 0.0]


def test_batch_normalization_axis_center_scale():
    x = RNG.normal(size=(4, 3, 5, 2))
    bn = layers.BatchNormalization(axis=1, center=False, scale=False, epsilon=0.01,
                                   dtype="float64")
    y = bn(x, training=True)
    assert [tuple(w.shape) for w in bn.weights] == [(3,), (3,)]     # moving statistics
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    variance = x.var(axis=(0, 2, 3), keepdims=True)
    np.testing.assert_allclose(y.numpy(), (x - mean) / np.sqrt(variance + 0.01), rtol=1e-12)
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.01 * mean.ravel(), rtol=1e-12)


def test_batch_normalization_with_a_mask_ignores_masked_steps():
    x = RNG.normal(size=(3, 5, 2))
    mask = RNG.random((3, 5)) > 0.4
    bn = layers.BatchNormalization(dtype="float64")
    y = bn(x, training=True, mask=mask)
    kept = x[mask]                                                   # (kept steps, 2)
    # Keras 3 divides the sums by (count + 1e-7), its guard for an all-masked batch.
    mean = kept.sum(0) / (len(kept) + 1e-7)
    variance = ((kept - mean) ** 2).sum(0) / (len(kept) + 1e-7)
    np.testing.assert_allclose(y.numpy(), (x - mean) / np.sqrt(variance + 1e-3), rtol=1e-10,
                               atol=1e-14)


def test_batch_normalization_updates_moving_statistics_inside_a_function():
    bn = layers.BatchNormalization(momentum=0.5, dtype="float64")
    bn.build((None, 3))

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float64)])
    def train(x):
        return bn(x, training=True)

    moving_mean, moving_variance = np.zeros(3), np.ones(3)
    for n in (5, 7, 4):
        x = RNG.normal(size=(n, 3)) + 1
        y = train(x)
        np.testing.assert_allclose(y.numpy(), (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3),
                                   rtol=1e-10)
        moving_mean = 0.5 * moving_mean + 0.5 * x.mean(0)
        moving_variance = 0.5 * moving_variance + 0.5 * x.var(0)
        np.testing.assert_allclose(bn.moving_mean.numpy(), moving_mean, rtol=1e-10)
        np.testing.assert_allclose(bn.moving_variance.numpy(), moving_variance, rtol=1e-10)
    assert train.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("training", [True, False])
def test_batch_normalization_gradients_match_finite_differences(training):
    x = RNG.normal(size=(5, 3))
    bn = layers.BatchNormalization(dtype="float64")
    bn.build(x.shape)
    gamma, beta, *stats = _set_random_weights(bn, positive_last=True)
    weight = RNG.normal(size=x.shape)

    def f(a, g, b):        # the layer's function, without moving the statistics
        mean, variance = (a.mean(0), a.var(0)) if training else stats
        return np.sum(weight * batch_norm_reference(a, mean, variance, g, b, 1e-3))

    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = tf.reduce_sum(bn(xt, training=training) * weight)
    gx, gg, gb = tape.gradient(y, [xt, bn.gamma, bn.beta])
    for k, g in enumerate([gx, gg, gb]):
        np.testing.assert_allclose(g.numpy(), fd.gradient(f, [x, gamma, beta], k),
                                   rtol=1e-6, atol=1e-7)


def _second_differences(f, x, h=1e-4):
    """The Hessian of a scalar f at x by the four-point central stencil."""
    n = x.size
    hessian = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            def at(si, sj):
                moved = x.copy().ravel()
                moved[i] += si * h
                moved[j] += sj * h
                return f(moved.reshape(x.shape))
            hessian[i, j] = (at(1, 1) - at(1, -1) - at(-1, 1) + at(-1, -1)) / (4 * h * h)
    return hessian


def test_hessian_through_batch_normalization_in_training_is_tensorflows():
    # TensorFlow's moments hold the mean inside the variance by stop_gradient: the
    # Hessian is that of the function whose variance is taken about the mean at the
    # point (a constant), not the true Hessian.
    x = RNG.normal(size=(4, 2))
    bn = layers.BatchNormalization(dtype="float64")
    bn.build(x.shape)
    gamma, beta, *_ = _set_random_weights(bn, positive_last=True)
    weight = RNG.normal(size=x.shape)

    def loss(a, held_mean):
        variance = ((a - held_mean) ** 2).mean(0)
        return np.sum(weight * np.tanh(batch_norm_reference(a, a.mean(0), variance, gamma,
                                                            beta, 1e-3)))

    xt = tf.constant(x)
    with tf.GradientTape() as outer:
        outer.watch(xt)
        with tf.GradientTape() as inner:
            inner.watch(xt)
            value = tf.reduce_sum(weight * tf.tanh(bn(xt, training=True)))
        g = inner.gradient(value, xt)
    hessian = outer.jacobian(g, xt).numpy().reshape(8, 8)
    tensorflows = _second_differences(lambda a: loss(a, x.mean(0)), x)
    true = _second_differences(lambda a: loss(a, a.mean(0)), x)
    np.testing.assert_allclose(hessian, tensorflows, rtol=1e-5, atol=1e-5)
    assert np.abs(hessian - true).max() > 1e-2          # the stop_gradient is there


def test_float16_inputs_are_normalized_in_float32():
    # Squares of values near 1000 overflow float16 (max 65504): the statistics are taken
    # in float32 and the output cast back, as Keras.
    x = (RNG.normal(size=(32, 2)) * 300 + 1000).astype(np.float16)
    exact = (x - x.astype(np.float64).mean(0)) / np.sqrt(x.astype(np.float64).var(0) + 1e-3)
    bn = layers.BatchNormalization(dtype="float16")
    y = bn(x, training=True)
    assert y.dtype == tf.float16 and bn.moving_variance.dtype == tf.float16
    np.testing.assert_allclose(y.numpy(), exact, atol=5e-3)
    assert np.isfinite(bn.moving_variance.numpy()).all()
    ln = layers.LayerNormalization(dtype="float16")
    np.testing.assert_allclose(ln(x.T).numpy(), exact.T, atol=5e-3)


# --- LayerNormalization --------------------------------------------------------------------

@pytest.mark.parametrize("axis", [-1, [1, 2], 1])
def test_layer_normalization_matches_its_formula_and_finite_differences(axis):
    x = RNG.normal(size=(3, 4, 2)) * 2 + 1
    ln = layers.LayerNormalization(axis=axis, dtype="float64")
    ln.build(x.shape)
    gamma, beta = _set_random_weights(ln)
    axes = tuple(np.atleast_1d(axis) % 3)
    kept = [x.shape[a] if a in axes else 1 for a in range(3)]

    def f(a, g, b):
        mean, variance = a.mean(axes, keepdims=True), a.var(axes, keepdims=True)
        return (a - mean) / np.sqrt(variance + 1e-3) * g.reshape(kept) + b.reshape(kept)

    np.testing.assert_allclose(ln(x).numpy(), f(x, gamma, beta), rtol=1e-12)
    weight = RNG.normal(size=x.shape)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = tf.reduce_sum(ln(xt) * weight)
    grads = tape.gradient(y, [xt, ln.gamma, ln.beta])
    for k, g in enumerate(grads):
        expected = fd.gradient(lambda *a: np.sum(f(*a) * weight), [x, gamma, beta], k)
        np.testing.assert_allclose(g.numpy(), expected, rtol=1e-6, atol=1e-7)


def test_layer_normalization_without_center_and_scale_and_with_rms_scaling():
    x = RNG.normal(size=(3, 5))
    plain = layers.LayerNormalization(center=False, scale=False, epsilon=0.1, dtype="float64")
    np.testing.assert_allclose(plain(x).numpy(), (x - x.mean(1, keepdims=True)) /
                               np.sqrt(x.var(1, keepdims=True) + 0.1), rtol=1e-12)
    assert plain.weights == []
    rms = layers.LayerNormalization(rms_scaling=True, dtype="float64")
    # Keras 3's rms_scaling divides by sqrt(variance + epsilon), without centering.
    np.testing.assert_allclose(rms(x).numpy(), x / np.sqrt(x.var(1, keepdims=True) + 1e-3),
                               rtol=1e-12)
    assert [tuple(w.shape) for w in rms.weights] == [(5,)]


def test_batch_renormalization_first_step_gives_back_its_input():
    """With renorm statistics at their start (mean 0, stddev 1), r = batch stddev and
    d = batch mean undo the normalization: gamma = 1, beta = 0 give x back; the moving
    statistics then move as Keras 3's formulas say."""
    x = RNG.normal(size=(6, 3)) * 2 + 1
    bn = layers.BatchNormalization(renorm=True, momentum=0.5, renorm_momentum=0.25,
                                   dtype="float64")
    np.testing.assert_allclose(bn(x, training=True).numpy(), x, rtol=1e-12, atol=1e-12)
    mean, stddev = x.mean(0), np.sqrt(x.var(0) + 1e-3)
    moving_stddev = 0.5 + 0.5 * stddev
    expected = [np.ones(3), np.zeros(3), 0.5 * mean, np.maximum(moving_stddev ** 2 - 1e-3, 0),
                moving_stddev, 0.75 * mean, 0.25 + 0.75 * stddev]
    for got, want in zip(bn.get_weights(), expected):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    clipped = layers.BatchNormalization(renorm=True, renorm_clipping={"rmax": 1.0, "dmax": 0.0},
                                        dtype="float64")
    np.testing.assert_allclose(clipped(x, training=True).numpy(),
                               (x - mean) / np.sqrt(x.var(0) + 1e-3) * np.minimum(stddev, 1),
                               rtol=1e-12, atol=1e-12)


# --- convolution -----------------------------------------------------------------------------

def test_conv2d_layer_is_the_convolution_plus_bias_and_activation():
    x = RNG.normal(size=(2, 7, 6, 3))
    conv = layers.Conv2D(4, (3, 2), strides=(2, 1), padding="same", activation="relu",
                         dtype="float64")
    y = conv(x)
    assert tuple(conv.kernel.shape) == (3, 2, 3, 4) and tuple(conv.bias.shape) == (4,)
    assert conv.count_params() == 3 * 2 * 3 * 4 + 4
    expected = tf.nn.conv2d(x, conv.kernel, (2, 1), "SAME").numpy() + conv.bias.numpy()
    np.testing.assert_allclose(y.numpy(), np.maximum(expected, 0), rtol=1e-12)
    assert y.shape == (2, 4, 6, 4)
    no_bias = layers.Conv2D(2, 3, use_bias=False, dtype="float64")
    assert no_bias(x).shape == (2, 5, 4, 2) and len(no_bias.weights) == 1


def test_channels_first_conv_layers_are_channels_last_transposed():
    for conv, shape in [(layers.Conv1D, (2, 7, 3)), (layers.Conv2D, (2, 6, 5, 3)),
                        (layers.Conv3D, (2, 4, 5, 3, 3))]:
        x = RNG.normal(size=shape)
        last = conv(2, 2, padding="same", dtype="float64")
        first = conv(2, 2, padding="same", data_format="channels_first", dtype="float64")
        moved = np.moveaxis(x, -1, 1)
        last(x)
        first(moved)
        first.set_weights(_set_random_weights(last))
        np.testing.assert_allclose(first(moved).numpy(), np.moveaxis(last(x).numpy(), -1, 1),
                                   rtol=1e-12, atol=1e-12)


def test_grouped_depthwise_separable_and_transposed_layers_are_their_tf_nn_ops():
    x = RNG.normal(size=(2, 6, 5, 4))
    grouped = layers.Conv2D(6, 3, groups=2, padding="same", dtype="float64")
    depthwise = layers.DepthwiseConv2D(3, depth_multiplier=2, strides=2, dtype="float64")
    separable = layers.SeparableConv2D(3, 2, depth_multiplier=2, activation="relu",
                                       dtype="float64")
    transposed = layers.Conv2DTranspose(3, 3, strides=2, padding="same", output_padding=1,
                                        dtype="float64")
    for layer in (grouped, depthwise, separable, transposed):
        layer(x)
        _set_random_weights(layer)
    assert [tuple(w.shape) for w in grouped.weights] == [(3, 3, 2, 6), (6,)]
    halves = [tf.nn.conv2d(x[..., 2 * g:2 * g + 2], grouped.kernel.numpy()[..., 3 * g:3 * g + 3],
                           1, "SAME").numpy() for g in range(2)]
    np.testing.assert_allclose(grouped(x).numpy(), np.concatenate(halves, -1) +
                               grouped.bias.numpy(), rtol=1e-12, atol=1e-12)
    assert [w.name.split("/")[-1] for w in depthwise.weights] == ["depthwise_kernel:0",
                                                                   "bias:0"]
    assert tuple(depthwise.depthwise_kernel.shape) == (3, 3, 4, 2)
    np.testing.assert_allclose(depthwise(x).numpy(), tf.nn.depthwise_conv2d(
        x, depthwise.depthwise_kernel, [1, 2, 2, 1], "VALID").numpy() +
        depthwise.bias.numpy(), rtol=1e-12)
    assert [tuple(w.shape) for w in separable.weights] == [(2, 2, 4, 2), (1, 1, 8, 3), (3,)]
    np.testing.assert_allclose(separable(x).numpy(), np.maximum(tf.nn.separable_conv2d(
        x, separable.depthwise_kernel, separable.pointwise_kernel, 1, "VALID").numpy() +
        separable.bias.numpy(), 0), rtol=1e-12)
    # Keras' length with output_padding: (n - 1) * stride + kernel - 2 * (kernel // 2) + 1.
    assert tuple(transposed.kernel.shape) == (3, 3, 3, 4)
    y = transposed(x)
    assert y.shape == (2, 12, 10, 3)
    np.testing.assert_allclose(y.numpy(), tf.nn.conv2d_transpose(
        x, transposed.kernel, (2, 12, 10, 3), 2, "SAME").numpy() + transposed.bias.numpy(),
        rtol=1e-12)


def test_variant_layers_train_and_round_trip_their_config():
    x = RNG.normal(size=(3, 6, 4)).astype(np.float32)
    model = keras.Sequential([keras.Input((6, 4)),
                              layers.DepthwiseConv1D(3, depth_multiplier=2, padding="same"),
                              layers.SeparableConv1D(3, 2, activation="tanh"),
                              layers.Conv1DTranspose(2, 3, strides=2),
                              layers.Conv1D(4, 3, groups=2)])
    assert model.output_shape == (None, 9, 4)         # 6, 6, 5, 5 * 2 + (3 - 2), 9
    config = json.loads(model.to_json())
    clone = keras.models.model_from_json(json.dumps(config))
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone(x).numpy(), model(x).numpy(), rtol=1e-6)
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    history = model.fit(x, np.zeros((3, 9, 4), np.float32), epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_variant_layer_gradients_match_finite_differences():
    x = RNG.normal(size=(1, 4, 3, 2))
    for layer in (layers.DepthwiseConv2D(2, depth_multiplier=2, padding="same",
                                         dtype="float64"),
                  layers.Conv2DTranspose(2, 3, strides=2, dtype="float64")):
        layer(x)
        weights = _set_random_weights(layer)
        xt = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            loss = tf.reduce_sum(layer(xt) ** 2)
        grads = tape.gradient(loss, [xt, *layer.weights])

        def value(a, *ws, layer=layer):
            layer.set_weights(ws)
            return np.sum(layer(a).numpy() ** 2)

        for k, g in enumerate(grads):
            np.testing.assert_allclose(g.numpy(), fd.gradient(value, [x, *weights], k),
                                       rtol=1e-6, atol=1e-7)


def test_conv1d_causal_padding_sees_only_the_past():
    x = tf.constant(RNG.normal(size=(1, 8, 2)))
    conv = layers.Conv1D(3, 3, padding="causal", dilation_rate=2, dtype="float64")
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = conv(x)
    assert y.shape == (1, 8, 3)
    jac = tape.jacobian(y, x).numpy()[0, :, :, 0, :, :]            # (out t, f, in s, c)
    reach = np.abs(jac).sum(axis=(1, 3)) > 0                        # (t, s)
    steps = np.arange(8)
    lag = steps[:, None] - steps[None, :]                           # t - s
    expected = np.isin(lag, [0, 2, 4])          # output t reads x[t - 4], x[t - 2], x[t]
    assert (reach == expected).all()


def test_conv_layer_gradients_and_jacobians_match_finite_differences():
    x = RNG.normal(size=(2, 5, 4, 2))
    conv = layers.Conv2D(2, 2, padding="same", activation="tanh", dtype="float64")
    conv.build(x.shape)
    kernel, bias = _set_random_weights(conv)

    def f(a, k, b):
        return np.tanh(tf.nn.conv2d(a, k, 1, "SAME").numpy() + b)

    xt = tf.constant(x)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(xt)
        y = conv(xt)
    np.testing.assert_allclose(tape.jacobian(y, conv.kernel).numpy(),
                               fd.jacobian(f, [x, kernel, bias], 1), rtol=1e-6, atol=1e-8)
    full = fd.jacobian(f, [x, kernel, bias], 0)                     # (2, 5, 4, 2, 2, 5, 4, 2)
    np.testing.assert_allclose(tape.batch_jacobian(y, xt).numpy(),
                               np.stack([full[i, ..., i, :, :, :] for i in range(2)]),
                               rtol=1e-6, atol=1e-8)


# --- pooling ---------------------------------------------------------------------------------

def test_pooling_layers_default_strides_to_the_pool_size():
    x = RNG.normal(size=(2, 6, 7, 3)).astype(np.float32)
    assert layers.MaxPooling2D()(x).shape == (2, 3, 3, 3)
    pooled = layers.AveragePooling2D(3, padding="same")(x)
    np.testing.assert_allclose(pooled.numpy(), tf.nn.avg_pool2d(x, 3, 3, "SAME").numpy())
    assert layers.MaxPooling1D(3, strides=1)(x[:, :, 0]).shape == (2, 4, 3)
    np.testing.assert_allclose(layers.AveragePooling1D(2)(x[:, 0]).numpy(),
                               x[:, 0, :6].reshape(2, 3, 2, 3).mean(2), rtol=1e-6)
    with pytest.raises(TypeError):
        layers.AveragePooling2D()            # Keras 3: pool_size is required


def test_global_pooling_layers():
    x = RNG.normal(size=(2, 4, 5, 3)).astype(np.float32)
    np.testing.assert_allclose(layers.GlobalAveragePooling2D()(x).numpy(), x.mean((1, 2)), rtol=1e-6)
    np.testing.assert_allclose(layers.GlobalMaxPooling2D(keepdims=True)(x).numpy(),
                               x.max((1, 2), keepdims=True))
    np.testing.assert_allclose(
        layers.GlobalAveragePooling2D(data_format="channels_first")(x).numpy(), x.mean((2, 3)), rtol=1e-6)
    steps = x[:, 0]                                                  # (2, 5, 3)
    mask = np.array([[1, 1, 0, 0, 1], [1, 0, 0, 0, 0]], bool)
    masked = layers.GlobalAveragePooling1D()(steps, mask=mask).numpy()
    np.testing.assert_allclose(masked[0], steps[0, [0, 1, 4]].mean(0), rtol=1e-6)
    np.testing.assert_allclose(masked[1], steps[1, 0])
    np.testing.assert_allclose(layers.GlobalMaxPooling1D()(steps).numpy(), steps.max(1))


# --- a small network -------------------------------------------------------------------------

def _network():
    return keras.Sequential([
        layers.Conv2D(3, 3, padding="same", activation="relu", dtype="float64"),
        layers.BatchNormalization(dtype="float64"),
        layers.MaxPooling2D(2, dtype="float64"),
        layers.LayerNormalization(dtype="float64"),
        layers.GlobalAveragePooling2D(dtype="float64"),
        layers.Dense(1, dtype="float64")])


def test_a_convolutional_network_trains_inside_a_function_as_eagerly():
    x, target = RNG.normal(size=(4, 6, 6, 2)), RNG.normal(size=(4, 1))
    eager, traced = _network(), _network()
    eager.build((None, 6, 6, 2))
    traced.build((None, 6, 6, 2))
    traced.set_weights(eager.get_weights())

    def step(model, x, target):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x, training=True) - target) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        for v, g in zip(model.trainable_variables, grads):
            v.assign_sub(0.1 * g)
        return loss

    compiled = tf.function(lambda a, b: step(traced, a, b))
    for _ in range(3):
        np.testing.assert_allclose(compiled(x, target).numpy(),
                                   step(eager, x, target).numpy(), rtol=1e-10)
    for a, b in zip(eager.get_weights(), traced.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    assert len(eager.non_trainable_weights) == 2           # the moving statistics moved
    assert not np.allclose(eager.layers[1].moving_mean.numpy(), 0)


def test_the_network_gradient_matches_finite_differences():
    x = RNG.normal(size=(3, 4, 4, 2))
    model = _network()
    model.build((None, 4, 4, 2))
    kernel = model.layers[0].kernel
    base = kernel.numpy()

    def loss_at(k):
        kernel.assign(k)
        return float(tf.reduce_sum(model(x, training=True) ** 2).numpy())

    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(x, training=True) ** 2)
    g = tape.gradient(loss, kernel).numpy()
    expected = fd.gradient(loss_at, [base], 0)
    kernel.assign(base)
    np.testing.assert_allclose(g, expected, rtol=1e-5, atol=1e-7)


def test_symbolic_inputs_give_output_shapes():
    inputs = keras.Input(shape=(10, 3))
    h = layers.Conv1D(4, 3, padding="causal")(inputs)
    h = layers.MaxPooling1D()(h)
    outputs = layers.GlobalAveragePooling1D()(layers.BatchNormalization()(h))
    assert tuple(h.shape) == (None, 5, 4) and tuple(outputs.shape) == (None, 4)
    model = keras.Model(inputs, outputs)
    assert model(np.ones((2, 10, 3), np.float32)).shape == (2, 4)


def test_automatic_names_are_keras():
    keras.utils.clear_session()
    names = [layer.name for layer in (layers.Conv2D(1, 1), layers.Conv2D(1, 1),
                                      layers.MaxPooling2D(), layers.GlobalAveragePooling1D(),
                                      layers.BatchNormalization(), layers.Conv1D(1, 1))]
    assert names == ["conv2d", "conv2d_1", "max_pooling2d", "global_average_pooling1d",
                     "batch_normalization", "conv1d"]


def test_configs_rebuild_the_layers_and_a_saved_model_loads(tmp_path):
    model = keras.Sequential([
        keras.Input(shape=(6, 6, 2)),
        layers.Conv2D(3, 3, padding="same", activation="relu",
                      kernel_regularizer=keras.regularizers.L2(0.01)),
        layers.BatchNormalization(momentum=0.9), layers.MaxPooling2D(),
        layers.AveragePooling2D(1), layers.LayerNormalization(axis=[1, 2]),
        layers.GlobalMaxPooling2D(keepdims=True), layers.GlobalAveragePooling2D(),
        layers.Dense(1)])
    x = RNG.normal(size=(4, 6, 6, 2)).astype(np.float32)
    model(x, training=True)                                  # moves the statistics
    for layer in model.layers:
        config = json.loads(json.dumps(layer.get_config()))
        rebuilt = type(layer).from_config(config)
        assert json.loads(json.dumps(rebuilt.get_config())) == config
    model.save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(loaded(x).numpy(), model(x).numpy())


# --- errors ----------------------------------------------------------------------------------

@pytest.mark.parametrize("make, error, words", [
    (lambda: layers.Conv2D(3, 3, groups=2), ValueError, "filters must be evenly divisible"),
    (lambda: layers.Conv2D(4, 3, groups=2)(np.ones((1, 5, 5, 3), np.float32)), ValueError,
     "input channels must be evenly divisible"),
    (lambda: layers.Conv2D(4, 3, padding="causal"), ValueError, "padding must be one of"),
    (lambda: layers.DepthwiseConv2D(3, depth_multiplier=0), ValueError, "depth_multiplier"),
    (lambda: layers.Conv2DTranspose(2, 3, strides=2, output_padding=2), ValueError,
     "Strides must be greater than output padding"),
    (lambda: layers.Conv2D(4, 3, strides=2, dilation_rate=2), ValueError, "dilation_rate"),
    (lambda: layers.Conv1D(0, 3), ValueError, "filters"),
    (lambda: layers.Conv2D(2, (3, 3, 3)), ValueError, "kernel_size"),
    (lambda: layers.BatchNormalization(renorm=True, renorm_clipping={"rmax": 1, "rmin": 2}),
     ValueError, "rmax should be greater than rmin"),
    (lambda: layers.BatchNormalization(renorm=True, renorm_clipping={"r": 1}), ValueError,
     "invalid keys for `renorm_clipping`"),
    (lambda: layers.MaxPooling2D(padding="full"), ValueError, "padding"),
    (lambda: layers.Conv2D(2, 3)(np.ones((2, 5, 3), np.float32)), ValueError, "rank 4"),
    (lambda: layers.Conv2D(2, 3)(np.ones((1, 2, 5, 3), np.float32)), ValueError,
     "does not fit"),
    (lambda: layers.BatchNormalization(axis=3)(np.ones((2, 3), np.float32)), ValueError,
     "out of bounds"),
])
def test_bad_layer_arguments_are_named(make, error, words):
    with pytest.raises(error, match=words):
        make()
