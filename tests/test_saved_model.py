"""tf.saved_model.save / load: a Module's traced tf.functions and variables as a directory
of NumPy code that loads with tapec (tensors out) and without it (NumPy only)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tapec as tf
from tapec.export.layout import ExportError
from tapec.export.saved_model import LOADER

NUMPY_SITE = os.path.dirname(os.path.dirname(np.__file__))


class Dense(tf.Module):
    def __init__(self, n_in, n_out, seed, name=None):
        super().__init__(name=name)
        self.w = tf.Variable(tf.random.normal([n_in, n_out], seed=seed), name="w")
        self.b = tf.Variable(tf.fill([n_out], 0.1), name="b", trainable=False)

    def __call__(self, x):
        return tf.matmul(x, self.w) + self.b


class Model(tf.Module):
    def __init__(self):
        super().__init__()
        self.l1 = Dense(3, 5, seed=1)
        self.l2 = Dense(5, 2, seed=2)

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def __call__(self, x):
        return self.l2(tf.nn.relu(self.l1(x)))

    @tf.function
    def both(self, x, y):
        h = self.l2(tf.nn.relu(self.l1(x)))
        return {"sum": tf.reduce_sum(h * y), "h": h}

    @tf.function(input_signature=[tf.TensorSpec([2], tf.float64)])
    def norm(self, v):
        return tf.sqrt(tf.reduce_sum(v * v))


@pytest.fixture
def saved(tmp_path):
    model = Model()
    x4 = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    x7 = np.linspace(-2, 1, 21, dtype=np.float32).reshape(7, 3)
    model(x4), model(x7)
    model.both(x4, np.ones((4, 2), np.float32))
    model.both(x7, np.ones((7, 2), np.float32))
    tf.saved_model.save(model, tmp_path / "saved")
    return model, tmp_path / "saved", x4, x7


def test_directory_layout_and_manifest(saved):
    model, path, *_ = saved
    assert sorted(os.listdir(path)) == ["both_1.py", "both_2.py", "call_1.py", "manifest.json",
                                        "norm_1.py", "saved_model.py", "variables.npz"]
    manifest = json.loads((path / "manifest.json").read_text())
    assert sorted(manifest["functions"]) == ["__call__", "both", "norm"]
    shapes = sorted(tuple(e["inputs"][0]["shape"]) for e in manifest["functions"]["both"])
    assert shapes == [(4, 3), (7, 3)]
    # An input_signature's None dimension is saved as null: one module serves every size.
    assert [e["inputs"][0]["shape"] for e in manifest["functions"]["__call__"]] == \
        [[None, 3]]
    assert manifest["functions"]["norm"][0]["inputs"] == [
        {"name": "v", "shape": [2], "dtype": "float64"}]
    # Two functions have an input_signature: no default serving signature (as TensorFlow).
    assert manifest["signatures"] == {}
    assert [v["name"] for v in manifest["variables"]] == [v.name for v in model.variables]
    assert (path / "saved_model.py").read_text() == LOADER
    for file in ("call_1.py", "both_1.py", "norm_1.py"):
        assert "import tapec" not in (path / file).read_text()


def test_loaded_functions_give_the_model_values_as_tensors(saved):
    model, path, x4, x7 = saved
    loaded = tf.saved_model.load(path)
    for x in (x4, x7, x7[:2]):                     # a size never traced
        out = loaded(x)
        assert isinstance(out, tf.Tensor) and out.dtype == tf.float32
        np.testing.assert_array_equal(out.numpy(), model(x).numpy())
        np.testing.assert_array_equal(loaded.__call__(tf.constant(x)).numpy(),
                                      model(x).numpy())
    for x in (x4, x7):
        y = np.ones((len(x), 2), np.float32)
        got, want = loaded.both(x, y), model.both(x, y)
        assert sorted(got) == ["h", "sum"]
        np.testing.assert_allclose(got["sum"].numpy(), want["sum"].numpy(), rtol=1e-6)
        np.testing.assert_array_equal(got["h"].numpy(), want["h"].numpy())
    # A fully defined input_signature is saved without a call; Python lists convert.
    assert float(loaded.norm([3.0, 4.0])) == 5.0
    for mine, theirs in zip(loaded.variables, model.variables):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    assert len(loaded.trainable_variables) == 2 and len(loaded.non_trainable_variables) == 2


def test_other_signatures_raise(saved):
    _, path, _, x7 = saved
    loaded = tf.saved_model.load(path)
    with pytest.raises(ValueError, match=r"__call__: no saved signature .*\(5, 4\)"):
        loaded(np.zeros((5, 4), np.float32))
    with pytest.raises(ValueError, match=r"saved: \[\[\('x', \(None, 3\), 'float32'\)\]\]"):
        loaded(x7[:, :2])
    with pytest.raises(ValueError, match=r"both: no saved signature .*\(5, 3\)"):
        loaded.both(np.zeros((5, 3), np.float32), np.ones((5, 2), np.float32))
    with pytest.raises(ValueError, match="no saved signature"):
        loaded(np.zeros((4, 3), np.float64))          # arrays are not cast


def test_serving_signature_returns_a_dict(tmp_path):
    class One(tf.Module):
        def __init__(self):
            super().__init__()
            self.scale = tf.Variable(2.0)

        @tf.function(input_signature=[tf.TensorSpec([3], tf.float32)])
        def __call__(self, x):
            return self.scale * x

    tf.saved_model.save(One(), tmp_path)
    loaded = tf.saved_model.load(tmp_path)
    assert list(loaded.signatures) == ["serving_default"]
    out = loaded.signatures["serving_default"](x=np.array([1, 2, 3], np.float32))
    assert list(out) == ["output_0"]
    np.testing.assert_array_equal(out["output_0"].numpy(), [2, 4, 6])
    with pytest.raises(TypeError, match=r"keyword arguments \['x'\]"):
        loaded.signatures["serving_default"](y=np.zeros(3, np.float32))
    # Explicit signatures: a tf.function, or a dict of them.
    module = One()
    tf.saved_model.save(module, tmp_path / "b", signatures={"scaled": module.__call__})
    assert list(tf.saved_model.load(tmp_path / "b").signatures) == ["scaled"]


def test_loads_and_runs_without_tapec(saved, tmp_path):
    model, path, x4, _ = saved
    np.save(tmp_path / "x.npy", x4)
    driver = tmp_path / "driver.py"
    driver.write_text(
        "import sys\n"
        "sys.path[:0] = [sys.argv[1], sys.argv[2]]\n"
        "try:\n    import tapec\n    importable = True\nexcept ImportError:\n"
        "    importable = False\n"
        "import numpy as np\n"
        "import saved_model\n"
        "loaded = saved_model.load()\n"
        "out = loaded(np.load(sys.argv[3]))\n"
        "assert type(out) is np.ndarray\n"
        "try:\n    loaded.variables[0][...] = 0\n    writable = True\n"
        "except ValueError:\n    writable = False\n"
        "np.save(sys.argv[4], out)\n"
        "np.save(sys.argv[4] + '.3.npy', loaded(np.load(sys.argv[3])[:3]))  # another size\n"
        "print(importable, 'tapec' in sys.modules, writable, len(loaded.variables))\n")
    done = subprocess.run([sys.executable, "-I", "-S", str(driver), str(path), NUMPY_SITE,
                           str(tmp_path / "x.npy"), str(tmp_path / "out.npy")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False", "False", "4"]
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), model(x4).numpy())
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy.3.npy"), model(x4[:3]).numpy())


def test_a_function_that_assigns_variables_is_refused(tmp_path):
    class Counter(tf.Module):
        def __init__(self):
            super().__init__()
            self.count = tf.Variable(0.0, name="count")

        @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
        def add(self, x):
            self.count.assign_add(x)
            return self.count.read_value()

    with pytest.raises(ExportError, match=r"cannot save add: .*assigns Variable\(s\) 'count"):
        tf.saved_model.save(Counter(), tmp_path)


def test_python_value_arguments_are_refused(tmp_path):
    class Scaled(tf.Module):
        @tf.function
        def scale(self, x, factor):
            return x * factor

    module = Scaled()
    module.scale(np.ones(2), 3.0)
    with pytest.raises(ValueError, match=r"scale was traced with the Python float 3.0 as "
                                         r"argument 1; a saved function takes tensors only"):
        tf.saved_model.save(module, tmp_path)


def test_untraced_functions_are_skipped_and_bad_input_named(tmp_path):
    class Lazy(tf.Module):
        @tf.function
        def f(self, x):
            return 2 * x

    tf.saved_model.save(Lazy(), tmp_path / "lazy")
    assert not hasattr(tf.saved_model.load(tmp_path / "lazy"), "f")
    with pytest.raises(TypeError, match="expected a tf.Module, got int"):
        tf.saved_model.save(3, tmp_path)
    with pytest.raises(FileNotFoundError, match="holds no saved_model.py"):
        tf.saved_model.load(tmp_path / "nowhere")


def test_an_edited_loader_is_refused_and_names_are_data(tmp_path):
    hostile = '"""; import os; os.system("touch PWNED") #'

    class Named(tf.Module):
        def __init__(self):
            super().__init__()
            self.v = tf.Variable(np.ones(2), name=hostile)

        @tf.function(input_signature=[tf.TensorSpec([2], tf.float64)])
        def __call__(self, x):
            return self.v * x

    tf.saved_model.save(Named(), tmp_path)
    loaded = tf.saved_model.load(tmp_path)
    assert loaded.variable_names[0].startswith(hostile)
    np.testing.assert_array_equal(loaded(np.arange(2.0)).numpy(), [0.0, 1.0])
    assert not (tmp_path / "PWNED").exists()
    (tmp_path / "saved_model.py").write_text(LOADER + "\nimport os\n")
    with pytest.raises(ValueError, match="is not the loader this tapec writes"):
        tf.saved_model.load(tmp_path)


def test_a_loaded_function_under_a_recording_tape_raises(saved):
    _, path, x4, _ = saved
    loaded = tf.saved_model.load(path)
    x = tf.constant(x4)
    with tf.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(ValueError, match="NumPy code without a gradient"):
            loaded(x)
    assert loaded.variables[0].numpy().flags.writeable in (True, False)   # a tensor's copy


def test_keyword_calls_zero_arguments_and_a_signature_outside_the_module(tmp_path):
    class Odd(tf.Module):
        def __init__(self):
            super().__init__()
            self.v = tf.Variable(np.array([1.0, 2.0]))

        @tf.function
        def total(self):
            return tf.reduce_sum(self.v)

        @tf.function
        def scaled(self, x):
            return self.v * x

    module = Odd()
    module.total()

    @tf.function(input_signature=[tf.TensorSpec([2], tf.float64)])
    def outside(x):
        return module.v + x

    tf.saved_model.save(module, tmp_path / "a", signatures={"shifted": outside})
    loaded = tf.saved_model.load(tmp_path / "a")
    assert float(loaded.total()) == 3.0
    assert sorted(loaded.functions) == ["total"]
    out = loaded.signatures["shifted"](x=np.array([1.0, 1.0]))["output_0"]
    np.testing.assert_array_equal(out.numpy(), [2.0, 3.0])
    module.scaled(x=np.ones(2))
    with pytest.raises(ValueError, match="scaled was traced with keyword or nested"):
        tf.saved_model.save(module, tmp_path / "b")
