"""tapec's top-level names: TensorFlow's namespaces, deprecated old spellings, and the
AttributeError for what tapec does not implement (tapec/namespaces/_names.py)."""
import pkgutil
import subprocess
import sys
import warnings

import numpy as np
import pytest

import tapec as tf
from tapec.namespaces import _names as _namespace


def _fresh_warning(name):
    """Forget that `name` warned already (one warning per name per process)."""
    _namespace._WARNED.discard(name)


def test_old_top_level_name_warns_once_and_works():
    _fresh_warning("log")
    x = tf.constant([1.0, 2.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = tf.log(x)
        second = tf.log(x)
    assert len(caught) == 1
    assert caught[0].category is DeprecationWarning
    assert "tf.math.log" in str(caught[0].message)
    assert caught[0].filename == __file__          # points at the caller
    np.testing.assert_array_equal(first.numpy(), np.log([1.0, 2.0]).astype(np.float32))
    np.testing.assert_array_equal(second.numpy(), first.numpy())


@pytest.mark.parametrize("name, spelling", [("relu", "tf.nn.relu"), ("det", "tf.linalg.det"),
                                            ("is_nan", "tf.math.is_nan"),
                                            ("log10", "tapec.math.log10")])
def test_each_old_name_names_its_new_spelling(name, spelling):
    _fresh_warning(name)
    with pytest.warns(DeprecationWarning, match=spelling.replace(".", r"\.")):
        fn = getattr(tf, name)
    namespace, short = _namespace.MOVED[name].split(".")
    assert fn is getattr(getattr(tf, namespace), short)


def test_from_import_of_an_old_name_works():
    _fresh_warning("softplus")
    with pytest.warns(DeprecationWarning, match=r"tf\.nn\.softplus"):
        from tapec import softplus
    assert softplus is tf.nn.softplus


def test_moved_names_left_the_top_level():
    names = set(dir(tf))
    for name, path in _namespace.MOVED.items():
        assert name not in names and name not in tf.__all__
        namespace, short = path.split(".")
        assert callable(getattr(getattr(tf, namespace), short)), path


def test_every_public_module_imports_and_runs_without_deprecation_warnings():
    # A fresh interpreter: every tapec module imported (and so run) under "error", then a
    # small program through the tape, tapec.function and NumPy.
    modules = sorted(m.name for m in pkgutil.walk_packages(tf.__path__, "tapec.")
                     if not any(part.startswith("_") for part in m.name.split(".")))
    program = f"""
import warnings
warnings.simplefilter("error", DeprecationWarning)
import importlib
import numpy as np
for name in {modules!r}:
    importlib.import_module(name)
import tapec as tf
x = tf.Variable([0.5, 1.5])
with tf.GradientTape() as tape:
    y = tf.reduce_sum(tf.math.log(x) * tf.nn.relu(x) + np.sin(x))
g = tape.gradient(y, x)
f = tf.function(lambda v: tf.linalg.det(tf.reshape(tf.concat([v, v[::-1]], 0), (2, 2))))
f(tf.constant([1.0, 2.0]))
tf.grad(lambda v: np.sum(np.exp(v)))(tf.constant([1.0]))
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.parametrize("where, name, hint", [
    ("", "summary", "TensorBoard"),
    ("", "SparseTensor", "out of scope"),
    ("", "ragged", "out of scope"),
    ("", "strings", "out of scope"),
    ("", "distribute", "out of scope"),
    ("nn", "atrous_conv2d", "convolutions"),
    ("data", "TFRecordDataset", "out of scope"),
])
def test_a_missing_tensorflow_feature_says_so(where, name, hint):
    module = getattr(tf, where) if where else tf
    spelled = f"tf.{where}.{name}" if where else f"tf.{name}"
    with pytest.raises(AttributeError, match="not implemented in tapec") as caught:
        getattr(module, name)
    assert spelled in str(caught.value) and hint in str(caught.value)
    assert not hasattr(module, name)


@pytest.mark.parametrize("where", ["", "math", "nn", "linalg", "random", "config", "data",
                                   "debugging", "errors", "nest"])
def test_a_typo_keeps_pythons_error_and_suggestion(where):
    module = getattr(tf, where) if where else tf
    shown = f"tapec.{where}" if where else "tapec"
    with pytest.raises(AttributeError) as caught:
        module.no_such_name
    message = str(caught.value)
    assert message.startswith(f"module {shown!r} has no attribute 'no_such_name'")
    assert "not implemented in tapec" in message
    # name and obj let the interpreter suggest a near spelling ("Did you mean ...?").
    assert caught.value.name == "no_such_name" and caught.value.obj is module
    assert not hasattr(module, "no_such_name")


def test_the_interpreter_suggests_a_near_spelling():
    done = subprocess.run([sys.executable, "-c", "import tapec; tapec.constnt"],
                          capture_output=True, text=True, timeout=300)
    assert "Did you mean: 'constant'?" in done.stderr


def test_tapec_numpy_is_an_attribute():
    import tapec.numpy
    assert tf.numpy is tapec.numpy


# --- printing (TensorFlow's layout; tests/test_namespace_against_tensorflow.py compares) --

def test_tensor_printing():
    assert repr(tf.constant(0.1)) == ("<tapec.Tensor: shape=(), dtype=float32, "
                                      "numpy=0.10000000149011612>")
    assert str(tf.constant(0.1)) == "tapec.Tensor(0.1, shape=(), dtype=float32)"
    assert repr(tf.constant(True)) == "<tapec.Tensor: shape=(), dtype=bool, numpy=True>"
    matrix = tf.constant(np.arange(4.0).reshape(2, 2))
    assert repr(matrix) == ("<tapec.Tensor: shape=(2, 2), dtype=float64, numpy=\n"
                            "array([[0., 1.],\n       [2., 3.]])>")
    assert str(matrix) == ("tapec.Tensor(\n[[0. 1.]\n [2. 3.]], shape=(2, 2), "
                           "dtype=float64)")


def test_variable_printing():
    v = tf.Variable([1.0, 2.0], name="w")
    assert repr(v) == str(v) == ("<tapec.Variable 'w:0' shape=(2,) dtype=float32, "
                                 "numpy=array([1., 2.], dtype=float32)>")
    assert repr(tf.Variable(3)) == "<tapec.Variable 'Variable:0' shape=() dtype=int32, numpy=3>"
    assert repr(tf.Variable(np.zeros((2, 2)))) == (
        "<tapec.Variable 'Variable:0' shape=(2, 2) dtype=float64, numpy=\n"
        "array([[0., 0.],\n       [0., 0.]])>")
