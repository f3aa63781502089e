"""Pickling and copying tensors and Variables: identity (`_id`, `_handle_id`, `_index`)
is never carried over to another object, storage is never shared, results pickle."""
import copy
import pickle
import subprocess
import sys

import numpy as np
import tapec as tf


def test_pickled_tensor_is_a_new_tensor():
    t = tf.constant([1.0, 2.0], tf.float64)
    u = pickle.loads(pickle.dumps(t))
    assert u is not t and u._id != t._id
    assert u.dtype == tf.float64
    np.testing.assert_array_equal(u.numpy(), [1.0, 2.0])
    assert not u._value.flags.writeable


def test_unpickled_tensor_is_not_its_original_on_a_tape():
    x = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    assert tape.gradient(y, pickle.loads(pickle.dumps(x))) is None
    assert tape.gradient(y, x).numpy() == 6.0


def test_gradient_tensor_pickles():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.sin(x) * x)
    g = tape.gradient(y, x)
    u = pickle.loads(pickle.dumps(g))
    assert u._origin is None and u.dtype == tf.float32
    np.testing.assert_array_equal(u.numpy(), g.numpy())


def test_copy_of_a_tensor_is_the_tensor():
    # Tensors are immutable: TensorFlow's copy and deepcopy return the tensor itself, so
    # a copy is the same source on a tape (never a second object with the same id).
    x = tf.constant(3.0)
    assert copy.copy(x) is x and copy.deepcopy(x) is x
    assert copy.deepcopy([x, {"k": x}])[1]["k"] is x
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        z = copy.deepcopy(x)
    assert tape.gradient(y, z).numpy() == 6.0


def test_deepcopy_of_a_variable_is_a_new_variable():
    v = tf.Variable([1.0, 2.0], name="w", trainable=False)
    w = copy.deepcopy(v)
    assert w is not v and w._handle_id != v._handle_id and w._index != v._index
    assert w.name == "w:0" and w.trainable is False and w.dtype == tf.float32
    w.assign([5.0, 6.0])
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(w.numpy(), [5.0, 6.0])


def test_deepcopy_of_a_variable_has_its_own_gradient():
    v = tf.Variable(2.0)
    w = copy.deepcopy(v)
    with tf.GradientTape() as tape:
        y = v * v + 10.0 * w
    dv, dw = tape.gradient(y, [v, w])
    assert dv.numpy() == 4.0 and dw.numpy() == 10.0
    with tf.GradientTape() as tape:
        y = v * v
    assert tape.gradient(y, w) is None


def test_deepcopy_keeps_sharing_within_one_copy():
    v = tf.Variable(1.0)
    a, b = copy.deepcopy([v, v])
    assert a is b and a is not v


def test_copy_of_a_variable_is_the_variable():
    v = tf.Variable(1.0)
    assert copy.copy(v) is v


def test_pickled_variable_in_this_process():
    v = tf.Variable([1.0, 2.0], name="w")
    w = pickle.loads(pickle.dumps(v))
    assert w._handle_id != v._handle_id and w._index != v._index
    assert w.name == "w:0" and w.trainable and w.dtype == tf.float32
    w.assign_add([1.0, 1.0])
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        y = tf.reduce_sum(w * w)
    np.testing.assert_array_equal(tape.gradient(y, w).numpy(), [4.0, 6.0])
    assert tape.gradient(y, v) is None


CHILD = """
import pickle, sys
import tapec as tf
v = pickle.loads(sys.stdin.buffer.read())
with tf.GradientTape() as tape:
    y = tf.reduce_sum(v * v)
g = tape.gradient(y, v)
print(v.name, v.dtype.name, None if g is None else g.numpy().tolist())
"""


def test_pickled_variable_in_another_process():
    _ = [tf.constant(1.0) for _ in range(50)]     # ids the child process never allocates
    v = tf.Variable(np.array([1.0, 2.0]), name="w")
    done = subprocess.run([sys.executable, "-c", CHILD], input=pickle.dumps(v),
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().split("\n")[0] == "w:0 float64 [2.0, 4.0]"

