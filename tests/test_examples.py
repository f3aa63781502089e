"""Every script in examples/ runs and prints what it should."""
import pathlib
import re
import os
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def run(name, *args, cwd):
    # The examples import the tapec of this checkout (not another one installed).
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(EXAMPLES.parent), *filter(None, [os.environ.get("PYTHONPATH")])]))
    done = subprocess.run([sys.executable, str(EXAMPLES / name), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_example_has_a_test():
    tested = {"seeds.py", "training_loop.py", "softmax_regression_digits.py",
              "rosenbrock_scipy.py", "saved_model_mlp.py", "keras_digits.py"}
    assert {p.name for p in EXAMPLES.glob("*.py")} == tested


def test_seeds(tmp_path):
    out = run("seeds.py", cwd=tmp_path)
    assert "tapec.Tensor(6.0, shape=(), dtype=float32)" in out
    assert "Second Derivative: 2.0" in out


def test_training_loop(tmp_path):
    out = run("training_loop.py", cwd=tmp_path)
    assert float(re.search(r"final loss (\S+);", out).group(1)) < 1e-3
    assert "misses=1" in out


def test_softmax_regression_on_digits_exports_its_gradient(tmp_path):
    pytest.importorskip("sklearn")
    out = run("softmax_regression_digits.py", str(tmp_path), cwd=tmp_path)
    assert float(re.search(r"test accuracy (\S+)", out).group(1)) > 0.9
    assert float(re.search(r"tape's gradient: (\S+)", out).group(1)) < 1e-12
    assert "import tapec" not in (tmp_path / "softmax_gradient.py").read_text()


def test_rosenbrock_with_scipy_and_exported_derivatives(tmp_path):
    pytest.importorskip("scipy")
    out = run("rosenbrock_scipy.py", str(tmp_path), cwd=tmp_path)
    assert "converged: True" in out and "[1. 1. 1. 1. 1.]" in out


def test_saved_model_mlp_trains_saves_and_loads(tmp_path):
    out = run("saved_model_mlp.py", str(tmp_path / "saved"), cwd=tmp_path)
    losses = [float(v) for v in re.findall(r"loss (\d+\.\d{4})$", out, re.M)]
    assert len(losses) == 4 and losses[-1] < losses[0] < 0.5
    assert "saved signatures: ['serving_default']" in out
    assert "largest difference after loading: 0.0e+00" in out
    assert "same predictions: True" in out
    assert (tmp_path / "saved" / "saved_model.py").exists()
