"""keras.layers.Layer: names, weights and their order, trainable flags, losses,
get/set_weights, the training flag, building (against Keras 3's documented behaviour;
TensorFlow's own Keras where it is installed)."""
import numpy as np
import pytest

import tapec as tf
from tapec import keras


@pytest.fixture(autouse=True)
def fresh_names():
    keras.utils.clear_session()
    yield


class Scale(keras.layers.Layer):
    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")
        self.count = self.add_weight(shape=(), initializer="zeros", trainable=False,
                                     name="count")
        self.b = self.add_weight(shape=(input_shape[-1],), initializer="zeros", name="b")

    def call(self, inputs):
        return inputs * self.w + self.b


class Block(keras.layers.Layer):
    """Sublayers assigned in the order second, first: weights follow assignment."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.second = keras.layers.Dense(2, name="second")
        self.first = keras.layers.Dense(3, name="first")
        self.extra = [keras.layers.Dense(1, name="extra")]

    def call(self, inputs, training=None):
        self.seen_training = training
        return self.extra[0](self.second(self.first(inputs)))


def test_automatic_names_count_per_class():
    names = [keras.layers.Dense(1).name, keras.layers.Dense(1).name, Scale().name,
             keras.layers.Dense(1, name="mine").name, keras.layers.Dense(1).name]
    assert names == ["dense", "dense_1", "scale", "mine", "dense_2"]
    keras.utils.clear_session()
    assert keras.layers.Dense(1).name == "dense"


def test_build_once_from_the_first_input_shape():
    layer = Scale()
    assert not layer.built
    y = layer(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert layer.built and layer.w.shape == (3,)
    np.testing.assert_array_equal(y.numpy(), np.arange(6).reshape(2, 3))
    w = layer.w
    layer(np.ones((5, 3), np.float32))
    assert layer.w is w


def test_weights_in_keras_order_trainable_first():
    layer = Scale()
    layer.build((None, 3))
    assert [w.name for w in layer.weights] == ["scale/w:0", "scale/b:0", "scale/count:0"]
    assert [w.name for w in layer.trainable_weights] == ["scale/w:0", "scale/b:0"]
    assert [w.name for w in layer.non_trainable_weights] == ["scale/count:0"]
    assert layer.variables == layer.weights
    assert layer.count_params() == 7


def test_sublayers_tracked_in_assignment_order():
    block = Block()
    block(np.ones((1, 4), np.float32))
    shapes = [tuple(w.shape) for w in block.weights]
    # second (3 -> 2), first (4 -> 3), extra (2 -> 1): the order of the assignments
    assert shapes == [(3, 2), (2,), (4, 3), (3,), (2, 1), (1,)]


def test_sublayer_order_matches_keras():
    keras_real = pytest.importorskip("tensorflow").keras

    class RealBlock(keras_real.layers.Layer):
        def __init__(self):
            super().__init__()
            self.second = keras_real.layers.Dense(2)
            self.first = keras_real.layers.Dense(3)

        def call(self, x):
            return self.second(self.first(x))

    class OurBlock(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.second = keras.layers.Dense(2)
            self.first = keras.layers.Dense(3)

        def call(self, x):
            return self.second(self.first(x))

    real, ours = RealBlock(), OurBlock()
    real(np.ones((1, 4), np.float32))
    ours(np.ones((1, 4), np.float32))
    assert [tuple(w.shape) for w in ours.weights] == [tuple(w.shape) for w in real.weights]


def test_trainable_is_recursive_and_freezes_variables():
    block = Block()
    block(np.ones((1, 4), np.float32))
    block.trainable = False
    assert block.trainable_weights == [] and len(block.non_trainable_weights) == 6
    assert not any(w.trainable for w in block.weights)
    assert not block.first.trainable
    with tf.GradientTape() as tape:      # frozen variables are not watched
        y = tf.reduce_sum(block(np.ones((1, 4), np.float32)))
    assert tape.gradient(y, block.first.kernel) is None
    block.trainable = True
    assert len(block.trainable_weights) == 6


def test_unfreezing_keeps_non_trainable_weights_frozen():
    layer = Scale()
    layer.build((None, 2))
    layer.trainable = False
    layer.trainable = True
    assert [w.name for w in layer.non_trainable_weights] == ["scale/count:0"]


def test_get_and_set_weights():
    layer = keras.layers.Dense(2)
    layer.build((None, 3))
    values = [np.arange(6, dtype=np.float32).reshape(3, 2), np.array([1.0, -1.0], np.float32)]
    layer.set_weights(values)
    for got, want in zip(layer.get_weights(), values):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="expected shape"):
        layer.set_weights([np.zeros((2, 2)), np.zeros(2)])
    with pytest.raises(ValueError, match="list of 2 arrays"):
        layer.set_weights([np.zeros((3, 2))])


def test_count_params_needs_a_built_layer():
    with pytest.raises(ValueError, match="isn't built"):
        keras.layers.Dense(2).count_params()


def test_add_loss_and_regularizer_losses():
    class WithLoss(keras.layers.Layer):
        def call(self, x):
            self.add_loss(tf.reduce_sum(x))
            return x

    layer = WithLoss()
    layer(np.ones((2, 2), np.float32))
    layer(np.ones((2, 3), np.float32))
    assert [float(v) for v in layer.losses] == [6.0]     # cleared at every call

    dense = keras.layers.Dense(2, kernel_regularizer=keras.regularizers.L2(0.1),
                               bias_regularizer="l1", bias_initializer="ones")
    dense.build((None, 3))
    kernel = dense.kernel.numpy()
    penalties = [float(v) for v in dense.losses]
    np.testing.assert_allclose(penalties, [0.1 * np.sum(kernel ** 2), 0.01 * 2], rtol=1e-5)


def test_training_flag_propagates_to_nested_calls():
    block = Block()
    x = np.ones((1, 4), np.float32)
    block(x)
    assert block.seen_training is None

    class Outer(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.block = block

        def call(self, x, training=None):
            return self.block(x)

    Outer()(x, training=True)
    assert block.seen_training is True
    Outer()(x)
    assert block.seen_training is None
    block(x, training=False)
    assert block.seen_training is False


def test_call_without_training_parameter_is_not_given_one():
    scale = Scale()
    y = scale(np.ones((1, 2), np.float32), training=True)   # call() has no `training`
    np.testing.assert_array_equal(y.numpy(), [[1.0, 1.0]])


def test_inputs_keyword_and_float64_autocast():
    layer = Scale()
    y = layer(inputs=np.ones((1, 2)))          # float64 NumPy input, float32 layer
    assert y.dtype == tf.float32
    layer64 = Scale(dtype="float64")
    assert layer64(np.ones((1, 2), np.float32)).dtype == tf.float64
    assert layer64.w.dtype == tf.float64


def test_variables_assigned_as_attributes_are_weights():
    class Holder(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.v = tf.Variable([1.0, 2.0])

        def call(self, x):
            return x * self.v

    holder = Holder()
    assert holder.weights == [holder.v]
    made = keras.Variable("ones", shape=(2, 3), dtype="float64", trainable=False)
    assert made.dtype == tf.float64 and not made.trainable and np.all(made.numpy() == 1)
    assert keras.Variable([1.0, 2.0]).dtype == tf.float32


def test_compute_output_shape():
    assert keras.layers.Dense(4).compute_output_shape((None, 3)) == (None, 4)
    assert keras.layers.Flatten().compute_output_shape((None, 2, 3)) == (None, 6)
    assert keras.layers.Reshape((-1, 2)).compute_output_shape((None, 6)) == (None, 3, 2)


def test_unknown_constructor_keyword_is_an_error():
    with pytest.raises(TypeError, match="unrecognized keyword arguments"):
        keras.layers.Dense(2, unit=3)
    with pytest.raises(ValueError, match="without '/'"):
        keras.layers.Dense(2, name="a/b")


def test_add_weight_defaults_follow_the_dtype():
    layer = keras.layers.Layer()
    counter = layer.add_weight(shape=(2,), dtype="int32", trainable=False, name="n")
    kernel = layer.add_weight(shape=(30, 40), name="k")
    assert counter.dtype == tf.int32 and np.all(counter.numpy() == 0)
    limit = np.sqrt(6 / 70)                        # glorot_uniform by default
    assert kernel.dtype == tf.float32 and 0.9 * limit < np.abs(kernel.numpy()).max() <= limit
    with pytest.raises(TypeError, match="dtype policies"):
        keras.layers.Dense(2, dtype="mixed_float16")


def test_symbolic_calls_leave_state_unchanged():
    class Counter(keras.layers.Layer):
        def build(self, input_shape):
            self.calls = self.add_weight(shape=(), initializer="zeros", trainable=False)

        def call(self, x, training=None):
            if training:
                self.calls.assign_add(1.0)
            return x

    counter = Counter()
    inputs = keras.Input(shape=(2,))
    model = keras.Model(inputs, counter(inputs, training=True))
    assert float(counter.calls.numpy()) == 0.0          # output-shape probes are undone
    model(np.ones((1, 2), np.float32))
    assert float(counter.calls.numpy()) == 1.0          # training=True was recorded


def test_mask_is_dropped_for_layers_without_one():
    y = keras.layers.Dense(1, kernel_initializer="ones")(np.ones((1, 2), np.float32),
                                                         mask=None)
    assert y.numpy().tolist() == [[2.0]]


def test_losses_of_frozen_weights_and_shared_layers_count_once():
    dense = keras.layers.Dense(2, kernel_regularizer="l2")
    inputs = keras.Input(shape=(2,))
    model = keras.Model(inputs, dense(dense(inputs)))
    kernel = dense.kernel.numpy()
    np.testing.assert_allclose([float(v) for v in model.losses],
                               [0.01 * np.sum(kernel ** 2)], rtol=1e-5)
    dense.trainable = False                   # Keras 3 regularizes trainable weights only
    assert model.losses == []


def test_symbolic_call_inside_a_trace_writes_nothing_into_the_program():
    dense = keras.layers.Dense(2, kernel_initializer="ones")
    dense.build((None, 3))

    @tf.function
    def f(x):
        inputs = keras.Input(shape=(3,))
        keras.Model(inputs, dense(inputs))      # output-shape probes restore the weights
        return dense(x)

    x = np.ones((1, 3), np.float32)
    np.testing.assert_array_equal(f(x).numpy(), [[3.0, 3.0]])
    dense.kernel.assign(np.zeros((3, 2), np.float32))
    np.testing.assert_array_equal(f(x).numpy(), [[0.0, 0.0]])
