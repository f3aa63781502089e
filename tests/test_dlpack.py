"""Tensors through DLPack: `Tensor.__dlpack__`, `__dlpack_device__` and
`tf.experimental.dlpack` (docs/scale.md, "What a tapec Tensor is")."""
import numpy as np
import pytest

import tapec
import tapec as tf

VALUES = np.arange(6.0).reshape(2, 3)


def test_numpy_reads_a_tensor_through_dlpack_as_a_copy():
    t = tf.constant(VALUES)
    assert t.__dlpack_device__() == (1, 0)
    copy = np.from_dlpack(t)
    np.testing.assert_array_equal(copy, VALUES)
    assert copy.dtype == np.float64 and not np.shares_memory(copy, np.asarray(t))
    copy[0, 0] = 99.0                     # the copy is the reader's
    assert t.numpy()[0, 0] == 0.0


def test_copy_false_shares_the_value_read_only():
    t = tf.constant(VALUES)
    shared = np.from_dlpack(t, copy=False)
    assert np.shares_memory(shared, np.asarray(t)) and not shared.flags.writeable
    with pytest.raises(BufferError):      # the old protocol cannot mark memory read-only
        t.__dlpack__(copy=False)


def test_variables_export_their_value():
    v = tf.Variable(VALUES)
    np.testing.assert_array_equal(np.from_dlpack(v), VALUES)


def test_to_and_from_dlpack_round_trip():
    t = tf.constant(VALUES, tf.float32)
    capsule = tf.experimental.dlpack.to_dlpack(t)
    assert "dltensor" in repr(capsule)
    back = tf.experimental.dlpack.from_dlpack(capsule)
    assert isinstance(back, tf.Tensor) and back.dtype == tf.float32
    np.testing.assert_array_equal(back.numpy(), VALUES)
    from_array = tf.experimental.dlpack.from_dlpack(np.arange(3, dtype=np.int64))
    assert from_array.dtype == tf.int64 and from_array.numpy().tolist() == [0, 1, 2]


def test_from_dlpack_refuses_other_devices_and_objects():
    class OnGpu:
        def __dlpack__(self, **kwargs):
            raise AssertionError("not read: the device is checked first")

        def __dlpack_device__(self):
            return (2, 0)                 # kDLCUDA

    with pytest.raises(TypeError, match=r"DLPack device \(2, 0\).*CPU memory"):
        tf.experimental.dlpack.from_dlpack(OnGpu())
    with pytest.raises(TypeError, match="expected a DLPack capsule"):
        tf.experimental.dlpack.from_dlpack([1.0, 2.0])


def test_torch_round_trip_and_writes_do_not_reach_the_tensor():
    torch = pytest.importorskip("torch")
    t = tf.constant(VALUES)
    shared = torch.from_dlpack(t)
    assert shared.dtype == torch.float64
    shared[0, 0] = 99.0                   # PyTorch ignores DLPack's read-only flag
    assert t.numpy()[0, 0] == 0.0
    from_capsule = torch.from_dlpack(tf.experimental.dlpack.to_dlpack(t))
    np.testing.assert_array_equal(from_capsule.numpy(), VALUES)
    back = tf.experimental.dlpack.from_dlpack(torch.arange(4, dtype=torch.float32))
    assert back.dtype == tf.float32 and back.numpy().tolist() == [0.0, 1.0, 2.0, 3.0]
    back = tf.experimental.dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(torch.ones(2)))
    assert back.numpy().tolist() == [1.0, 1.0]


def test_jax_round_trip():
    jnp = pytest.importorskip("jax.numpy")
    t = tf.constant(VALUES, tf.float32)
    np.testing.assert_array_equal(np.asarray(jnp.from_dlpack(t)), VALUES)
    back = tf.experimental.dlpack.from_dlpack(jnp.arange(3, dtype=jnp.float32))
    assert back.dtype == tf.float32 and back.numpy().tolist() == [0.0, 1.0, 2.0]


def test_exporting_a_differentiated_value_inside_grad_raises():
    """DLPack hands the value to another library, as np.asarray does: inside a derivative
    its gradient would be lost, so tapec refuses, naming the read."""
    def f(x):
        np.from_dlpack(x * 2.0)
        return tf.reduce_sum(x)

    with pytest.raises(TypeError, match="__dlpack__"):
        tapec.grad(f)(tf.constant([1.0, 2.0]))


def test_a_tensor_names_no_array_namespace():
    compat = pytest.importorskip("array_api_compat")
    t = tf.constant(VALUES)
    assert not hasattr(t, "__array_namespace__")
    with pytest.raises(TypeError):
        compat.array_namespace(t)
