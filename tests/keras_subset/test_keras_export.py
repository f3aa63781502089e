"""tapec.export of functions that call a trained Keras model: the written module holds the
weights and runs in a Python that never imports tapec, giving the model's outputs (and,
for a scalar function, its gradient)."""
import json
import subprocess
import sys

import numpy as np
import pytest

import tapec as tf
from tapec import keras

RUNNER = """
import json, sys
import numpy as np
import pytest
sys.path.insert(0, sys.argv[1])
import {module} as exported
x = np.load(sys.argv[2])
results = {{name: np.asarray(getattr(exported, name)(x)).tolist() for name in {names!r}}}
assert not any(m == "tapec" or m.startswith("tapec.") for m in sys.modules)
print(json.dumps(results))
"""


def run_isolated(directory, module, names, x):
    """Calls `names` of the module in a fresh interpreter run with -I (no PYTHONPATH, no
    user site): only NumPy is importable besides the module."""
    np.save(directory / "x.npy", x)
    script = RUNNER.format(module=module, names=names)
    done = subprocess.run([sys.executable, "-I", "-c", script, str(directory),
                           str(directory / "x.npy")], capture_output=True, text=True,
                          timeout=120, cwd=directory)
    assert done.returncode == 0, done.stderr
    return {name: np.array(value) for name, value in json.loads(done.stdout).items()}


def trained_model():
    tf.random.set_seed(7)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = (x[:, 0] > x[:, 1]).astype(np.int64)
    model = keras.Sequential([keras.Input(shape=(4,)),
                              keras.layers.Dense(6, activation="tanh"),
                              keras.layers.Dense(2, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(x, y, epochs=2, batch_size=16, verbose=0)
    return model, x, y


def test_exported_predictions_run_without_tapec(tmp_path):
    model, x, _ = trained_model()

    def predict(x):
        return model(x, training=False)
    source = tf.export(predict, (x,), tmp_path / "classifier.py", argnums=None)
    assert "import tapec" not in source and "grad_predict" not in source
    result = run_isolated(tmp_path, "classifier", ["predict"], x)
    np.testing.assert_allclose(result["predict"], model.predict(x, verbose=0), rtol=1e-5,
                               atol=1e-7)


def test_exported_loss_and_input_gradient_run_without_tapec(tmp_path):
    model, x, y = trained_model()
    labels = tf.constant(y)
    loss_fn = keras.losses.SparseCategoricalCrossentropy()

    def loss(x):
        return loss_fn(labels, model(x))
    tf.export(loss, (x,), tmp_path / "model_loss.py")
    result = run_isolated(tmp_path, "model_loss", ["loss", "grad_loss"], x)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        value = loss(xt)
    np.testing.assert_allclose(result["loss"], value.numpy(), rtol=1e-5)
    np.testing.assert_allclose(result["grad_loss"], tape.gradient(value, xt).numpy(),
                               rtol=1e-4, atol=1e-8)
    np.testing.assert_allclose(result["loss"], model.evaluate(x, y, verbose=0), rtol=1e-5)


def test_value_only_export_refuses_derivative_options(tmp_path):
    with pytest.raises(TypeError, match="argnums=None exports the value alone"):
        tf.export(lambda x: x * 2, (np.ones(3),), tmp_path / "m.py", argnums=None,
                  jacobian=True)
