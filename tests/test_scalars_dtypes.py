"""NumPy scalars and arrays meeting tensors, arrays of other libraries, and the dtype a
Variable write must have (docs/semantics.md, "Scalars, dtypes and identity")."""
import operator

import numpy as np
import pytest

import tapec as tf

OPERATORS = [operator.add, operator.sub, operator.mul, operator.truediv]


def _tf():
    pytest.importorskip("tensorflow")
    import tensorflow
    return tensorflow


def check(t, dtype, expected):
    assert isinstance(t, tf.Tensor)
    assert t.dtype == dtype, f"dtype {t.dtype.name}, expected {np.dtype(dtype).name}"
    np.testing.assert_array_equal(t.numpy(), np.asarray(expected, dtype=dtype))


# --- 1. a NumPy scalar on the left of an operator ---------------------------------------

@pytest.mark.parametrize("op", OPERATORS, ids=lambda o: o.__name__)
@pytest.mark.parametrize("scalar", [np.float64(0.5), np.sqrt(2.0), np.float32(0.25)],
                         ids=["float64", "sqrt", "float32"])
def test_numpy_scalar_is_weak_on_either_side(op, scalar):
    x = np.array([1.0, 2.0], np.float32)
    t = tf.constant(x)
    check(op(scalar, t), np.float32, op(np.float32(scalar), x))
    check(op(t, scalar), np.float32, op(x, np.float32(scalar)))
    t64 = tf.constant(x.astype(np.float64))
    check(op(scalar, t64), np.float64, op(np.float64(scalar), x.astype(np.float64)))


def test_numpy_scalar_left_operand_records_a_gradient():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(np.sqrt(2.0) * x - np.float64(0.5) / x)
    g = tape.gradient(y, x)
    check(g, np.float32, np.float32(np.sqrt(2.0)) + np.float32(0.5) / np.float32([1, 4]))


@pytest.mark.parametrize("op", OPERATORS, ids=lambda o: o.__name__)
def test_numpy_scalar_left_operand_matches_tensorflow(op):
    rtf = _tf()
    got = op(np.float64(0.5), tf.constant([1.0, 2.0]))
    want = op(np.float64(0.5), rtf.constant([1.0, 2.0]))
    assert got.dtype.name == want.dtype.name
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


# --- 2. tapec ops on a NumPy array and a Python number ----------------------------------

BINARY = ["add", "subtract", "multiply", "divide", "pow", "maximum", "minimum"]


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("number", [1.0, 2])
def test_python_number_takes_the_arrays_dtype(name, number):
    a = np.array([1.5, 2.0])
    fn, ref = getattr(tf, name), getattr(np, "true_divide" if name == "divide" else
                                          "power" if name == "pow" else name)
    check(fn(a, number), np.float64, ref(a, float(number)))
    # Python numbers are the weakest operand in either order (TensorFlow would convert
    # the first operand on its own here: see docs/semantics.md).
    check(fn(number, a), np.float64, ref(float(number), a))


@pytest.mark.parametrize("name", ["add", "pow", "multiply", "maximum"])
def test_array_and_number_match_tensorflow(name):
    rtf = _tf()
    a = np.array([1.5, 2.0])
    got, want = getattr(tf, name)(a, 1.0), getattr(rtf, name)(a, 1.0)
    assert got.dtype.name == want.dtype.name == "float64"
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_numpy_scalar_and_number():
    check(tf.add(np.float64(2.0), 1.0), np.float64, 3.0)
    check(tf.add(1.0, np.float64(2.0)), np.float64, 3.0)


def test_integer_array_and_numbers():
    check(tf.add(np.array([1, 2]), 1), np.int64, [2, 3])
    with pytest.raises(TypeError, match="int64"):
        tf.add(np.array([1, 2]), 1.5)


def test_arrays_of_different_dtypes_do_not_convert_each_other():
    # TensorFlow converts the second array to the first one's dtype; tapec raises, as
    # for tensors of different dtypes (docs/semantics.md).
    with pytest.raises(TypeError, match="different dtypes"):
        tf.add(np.array([1.0], np.float32), np.array([2.0]))
    check(tf.add(np.array([1.0]), np.array([2.0])), np.float64, [3.0])
    check(tf.where(np.array([True, False]), 1.0, np.array([2.0, 3.0])), np.float64,
          [1.0, 3.0])


def test_tensor_still_decides():
    check(tf.add(np.array([1.5]), tf.constant([1.0])), np.float32, [2.5])
    check(tf.maximum(1.0, tf.constant([0.5], tf.float64)), np.float64, [1.0])


# --- 3. arrays of other libraries keep their dtype --------------------------------------

class ArrayLike:
    """The smallest foreign array: `__array__` and a `dtype`."""

    def __init__(self, value):
        self._value = np.asarray(value)
        self.dtype = self._value.dtype

    def __array__(self, dtype=None, copy=None):
        return self._value if dtype is None else self._value.astype(dtype)


class DtypeOnly:
    """A scalar-like object with a `dtype` and no `__array__`."""

    dtype = np.dtype(np.float64)

    def __float__(self):
        return 0.1


CONVERTERS = {
    "constant": tf.constant,
    "convert_to_tensor": tf.convert_to_tensor,
    "dtype_hint": lambda v: tf.convert_to_tensor(v, dtype_hint=tf.float32),
    "Variable": lambda v: tf.Variable(v).read_value(),
}


def _check_conversions(value, dtype, expected):
    for name, convert in CONVERTERS.items():
        t = convert(value)
        assert t.dtype == dtype, f"{name}: dtype {t.dtype.name}"
        np.testing.assert_array_equal(t.numpy(), np.asarray(expected, dtype))


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int64, np.int8, np.bool_])
def test_array_like_keeps_its_dtype(dtype):
    values = np.array([1, 0, 1], dtype)
    _check_conversions(ArrayLike(values), dtype, values)
    check(tf.constant(ArrayLike(values), dtype=tf.float32), np.float32, values)


def test_object_with_dtype_only():
    _check_conversions(DtypeOnly(), np.float64, 0.1)


def test_array_like_in_an_op():
    check(tf.add(ArrayLike(np.array([1.5])), 1.0), np.float64, [2.5])
    check(tf.constant([1.0]) * ArrayLike(np.array([2.0])), np.float32, [2.0])


def test_jax_arrays():
    jnp = pytest.importorskip("jax.numpy")
    for dtype in (np.float16, np.int8, np.int16, np.float32):
        _check_conversions(jnp.asarray(np.array([1, 2], dtype)), dtype, [1, 2])


def test_torch_tensors():
    torch = pytest.importorskip("torch")
    for dtype, np_dtype in ((torch.float64, np.float64), (torch.int64, np.int64),
                            (torch.float16, np.float16)):
        _check_conversions(torch.tensor([1, 2], dtype=dtype), np_dtype, [1, 2])
    with pytest.raises(TypeError, match="requires grad"):
        tf.constant(torch.tensor([1.0], requires_grad=True))


def test_tensorflow_tensors():
    rtf = _tf()
    _check_conversions(rtf.constant([1.0, 2.0], rtf.float64), np.float64, [1, 2])
    _check_conversions(rtf.constant([1, 2], rtf.int64), np.int64, [1, 2])


def test_pandas():
    pd = pytest.importorskip("pandas")
    _check_conversions(pd.Series([1.5, 2.0]), np.float64, [1.5, 2.0])
    _check_conversions(pd.DataFrame({"a": [1, 2], "b": [3, 4]}), np.int64, [[1, 3], [2, 4]])


def test_dask():
    da = pytest.importorskip("dask.array")
    _check_conversions(da.from_array(np.array([1.0, 2.0])), np.float64, [1, 2])


# --- 4. the dtype of a Variable write ---------------------------------------------------

WRITES = {"assign": lambda v, x: v.assign(x), "assign_add": lambda v, x: v.assign_add(x),
          "assign_sub": lambda v, x: v.assign_sub(x)}


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
@pytest.mark.parametrize("make", [
    lambda: tf.constant([1.0, 2.0], tf.float64),
    lambda: tf.constant([1.0, 2.0], tf.float16),
    lambda: tf.constant([1, 2]),
    lambda: tf.Variable([1.0, 2.0], dtype=tf.float64),
], ids=["float64", "float16", "int32", "float64-variable"])
def test_writing_a_tensor_of_another_dtype_raises(write, make):
    v = tf.Variable([1.0, 2.0], name="w")
    value = make()
    with pytest.raises(TypeError) as info:
        write(v, value)
    message = str(info.value)
    assert "'w:0'" in message and "float32" in message and value.dtype.name in message
    check(v.read_value(), np.float32, [1.0, 2.0])


def test_numpy_arrays_and_numbers_are_converted_on_write():
    v = tf.Variable([1.0, 2.0])
    v.assign(np.array([0.1, 0.2]))
    check(v.read_value(), np.float32, np.array([0.1, 0.2], np.float32))
    v.assign_add(np.array([1, 2]))
    check(v.read_value(), np.float32, np.array([0.1, 0.2], np.float32) + [1, 2])
    s = tf.Variable(1.0)
    s.assign_sub(np.float64(0.1))
    check(s.read_value(), np.float32, np.float32(1.0) - np.float32(0.1))
    s.assign_add(0.5)
    check(s.read_value(), np.float32, np.float32(1.0) - np.float32(0.1) + np.float32(0.5))


def test_variable_writes_match_tensorflow():
    rtf = _tf()
    for method in ("assign", "assign_add", "assign_sub"):
        ref = rtf.Variable([1.0, 2.0])
        with pytest.raises(ValueError):          # TensorFlow refuses too (ValueError)
            getattr(ref, method)(rtf.constant([1.0, 2.0], rtf.float64))
        v = tf.Variable([1.0, 2.0])
        getattr(ref, method)(np.array([0.1, 0.2]))
        getattr(v, method)(np.array([0.1, 0.2]))
        check(v.read_value(), np.float32, ref.numpy())


def test_numpy_left_operand_follows_numpy_promotion_with_int_tensors():
    t = tf.constant([1, 2])
    check(np.float64(2.0) * t, np.float64, [2.0, 4.0])   # a NumPy call: NumPy's rule
    with pytest.raises(TypeError):
        t * np.float64(2.0)                              # a tapec op: no float -> int


def test_symbolic_tensors_do_not_pickle():
    import pickle

    from tapec.tensor import Tensor

    symbolic = Tensor._new(None, (), np.dtype(np.float32), node=object())
    with pytest.raises(TypeError, match="symbolic"):
        pickle.dumps(symbolic)
