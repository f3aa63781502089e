"""keras.activations against Keras 3's formulas (and TensorFlow's Keras where installed);
keras.initializers: shapes, bounds, variances from the documented formulas, seeding."""
import math

import numpy as np
import pytest
from scipy import special

import tapec as tf
from tapec import keras

x = np.linspace(-4, 4, 41)
SELU_ALPHA, SELU_SCALE = 1.6732632423543772, 1.0507009873554805

FORMULAS = {
    "relu": lambda v: np.maximum(v, 0),
    "relu6": lambda v: np.clip(v, 0, 6),
    "leaky_relu": lambda v: np.where(v > 0, v, 0.2 * v),
    "elu": lambda v: np.where(v > 0, v, np.expm1(v)),
    "selu": lambda v: SELU_SCALE * np.where(v > 0, v, SELU_ALPHA * np.expm1(v)),
    "gelu": lambda v: 0.5 * v * (1 + special.erf(v / math.sqrt(2))),
    "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
    "hard_sigmoid": lambda v: np.clip(v / 6 + 0.5, 0, 1),
    "tanh": np.tanh,
    "softplus": lambda v: np.log1p(np.exp(v)),
    "softsign": lambda v: v / (1 + np.abs(v)),
    "silu": lambda v: v / (1 + np.exp(-v)),
    "swish": lambda v: v / (1 + np.exp(-v)),
    "hard_silu": lambda v: v * np.clip(v / 6 + 0.5, 0, 1),
    "mish": lambda v: v * np.tanh(np.log1p(np.exp(v))),
    "exponential": np.exp,
    "linear": lambda v: v,
}


@pytest.mark.parametrize("name", sorted(FORMULAS))
def test_activation_formula(name):
    got = keras.activations.get(name)(tf.constant(x)).numpy()
    np.testing.assert_allclose(got, FORMULAS[name](x), rtol=1e-12, atol=1e-12)
    assert keras.activations.serialize(keras.activations.get(name)) in (name, "silu",
                                                                      "hard_silu")


@pytest.mark.parametrize("name", sorted(FORMULAS))
def test_activation_against_tensorflow(name):
    tf_real = pytest.importorskip("tensorflow")
    theirs = tf_real.keras.activations.get(name)(tf_real.constant(x)).numpy()
    np.testing.assert_allclose(keras.activations.get(name)(tf.constant(x)).numpy(), theirs,
                               rtol=1e-6, atol=1e-7)


def test_activation_options():
    v = tf.constant(x)
    np.testing.assert_allclose(keras.activations.gelu(v, approximate=True).numpy(),
                               0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) *
                                                      (x + 0.044715 * x ** 3))), rtol=1e-12)
    np.testing.assert_allclose(keras.activations.leaky_relu(v, negative_slope=0.1).numpy(),
                               np.where(x > 0, x, 0.1 * x))
    np.testing.assert_allclose(keras.activations.elu(v, alpha=0.5).numpy(),
                               np.where(x > 0, x, 0.5 * np.expm1(x)))
    np.testing.assert_allclose(
        keras.activations.relu(v, negative_slope=0.1, max_value=2.0, threshold=1.0).numpy(),
        np.where(x >= 2.0, 2.0, np.where(x > 1.0, x, 0.1 * (x - 1.0))))
    m = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(keras.activations.softmax(tf.constant(m), axis=0).numpy(),
                               np.exp(m) / np.exp(m).sum(0))
    assert keras.activations.get(None) is keras.activations.linear
    with pytest.raises(ValueError, match="Could not interpret activation"):
        keras.activations.get("relux")


def test_relu_options_against_tensorflow():
    tf_real = pytest.importorskip("tensorflow")
    kwargs = {"negative_slope": 0.1, "max_value": 2.0, "threshold": 1.0}
    np.testing.assert_allclose(keras.activations.relu(tf.constant(x), **kwargs).numpy(),
                               tf_real.keras.activations.relu(x, **kwargs).numpy(), rtol=1e-6)


SHAPE = (200, 300)
FAN_IN, FAN_OUT = SHAPE


@pytest.mark.parametrize("name, stddev, bound", [
    ("glorot_uniform", math.sqrt(2 / (FAN_IN + FAN_OUT)), math.sqrt(6 / (FAN_IN + FAN_OUT))),
    ("he_uniform", math.sqrt(2 / FAN_IN), math.sqrt(6 / FAN_IN)),
    ("lecun_uniform", math.sqrt(1 / FAN_IN), math.sqrt(3 / FAN_IN)),
    ("glorot_normal", math.sqrt(2 / (FAN_IN + FAN_OUT)),
     2 * math.sqrt(2 / (FAN_IN + FAN_OUT)) / 0.87962566103423978),
    ("he_normal", math.sqrt(2 / FAN_IN), 2 * math.sqrt(2 / FAN_IN) / 0.87962566103423978),
    ("lecun_normal", math.sqrt(1 / FAN_IN), 2 * math.sqrt(1 / FAN_IN) / 0.87962566103423978),
])
def test_variance_scaling_formulas(name, stddev, bound):
    values = keras.initializers.get(name)(SHAPE).numpy()
    assert values.dtype == np.float32 and values.shape == SHAPE
    assert np.abs(values).max() <= bound * (1 + 1e-6)
    assert abs(values.std() / stddev - 1) < 0.02       # 60,000 samples
    assert abs(values.mean()) < 0.02 * stddev * 10


def test_convolution_kernel_fans_count_the_receptive_field():
    values = keras.initializers.GlorotUniform(seed=1)((3, 3, 16, 32)).numpy()
    limit = math.sqrt(6 / (9 * 16 + 9 * 32))
    assert np.abs(values).max() <= limit and np.abs(values).max() > 0.95 * limit


def test_constant_random_and_seeding():
    np.testing.assert_array_equal(keras.initializers.Zeros()((2, 2)).numpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal(keras.initializers.Ones()((3,), dtype="float64").numpy(),
                                  np.ones(3))
    np.testing.assert_array_equal(keras.initializers.Constant(2.5)((2,)).numpy(), [2.5, 2.5])
    normal = keras.initializers.RandomNormal(mean=1.0, stddev=0.5, seed=4)
    a, b = normal((100, 100)).numpy(), normal((100, 100)).numpy()
    np.testing.assert_array_equal(a, b)          # a seeded initializer repeats (Keras 3)
    assert abs(a.mean() - 1.0) < 0.02 and abs(a.std() - 0.5) < 0.02
    uniform = keras.initializers.RandomUniform(-1.0, 2.0)
    u = uniform((100, 100)).numpy()
    assert u.min() >= -1.0 and u.max() < 2.0 and abs(u.mean() - 0.5) < 0.05
    assert not np.array_equal(u, uniform((100, 100)).numpy())     # unseeded: fresh draws
    truncated = keras.initializers.TruncatedNormal(stddev=1.0, seed=0)((10000,)).numpy()
    assert np.abs(truncated).max() <= 2.0


def test_global_seed_makes_unseeded_initializers_reproducible():
    keras.utils.set_random_seed(7)
    first = keras.layers.Dense(4)
    first.build((None, 3))
    keras.utils.set_random_seed(7)
    second = keras.layers.Dense(4)
    second.build((None, 3))
    np.testing.assert_array_equal(first.kernel.numpy(), second.kernel.numpy())


def test_initializer_get_and_serialize():
    for name in ("GlorotUniform", "glorot_uniform", "he_normal", "zeros", "uniform"):
        assert callable(keras.initializers.get(name))
    init = keras.initializers.VarianceScaling(2.0, "fan_out", "uniform", seed=3)
    again = keras.initializers.get(keras.initializers.serialize(init))
    np.testing.assert_array_equal(init((4, 5)).numpy(), again((4, 5)).numpy())
    with pytest.raises(ValueError, match="Could not interpret initializer"):
        keras.initializers.get("glorot")
    with pytest.raises(ValueError, match="mode"):
        keras.initializers.VarianceScaling(mode="fan")


def test_to_categorical():
    np.testing.assert_array_equal(keras.utils.to_categorical([0, 2, 1]),
                                  np.eye(3)[[0, 2, 1]])
    assert keras.utils.to_categorical([[1], [0]], num_classes=4).shape == (2, 4)
    with pytest.raises(ValueError, match="labels must lie"):
        keras.utils.to_categorical([3], num_classes=2)


@pytest.mark.parametrize("name", ["GlorotNormal", "HeNormal", "LecunUniform", "HeUniform",
                                  "GlorotUniform", "LecunNormal"])
def test_initializer_spread_matches_tensorflow(name):
    tf_real = pytest.importorskip("tensorflow")
    shape = (3, 3, 40, 60)
    ours = getattr(keras.initializers, name)(seed=0)(shape).numpy()
    theirs = getattr(tf_real.keras.initializers, name)(seed=0)(shape).numpy()
    assert abs(ours.std() / theirs.std() - 1) < 0.02          # 21,600 samples each
    assert abs(np.abs(ours).max() / np.abs(theirs).max() - 1) < 0.05
