"""`tapec export --arg NAME=DTYPE[None,...]`: a None dimension makes the argument a
TensorSpec, and the module takes any size there (docs/cli.md)."""
import importlib.util

import numpy as np
import pytest

cli_main = importlib.import_module("tapec.cli.main")   # the module (tapec.cli.main is
                                                       # also the name of its function)

MODEL = '''import numpy as np

def logistic(w, X, y):
    return np.mean(np.log(1 + np.exp(-y * (X @ w))))
'''


def analytic(w, X, y):
    e = np.exp(-y * (X @ w))
    return -(X.T @ (y * e / (1 + e))) / len(y)


def test_a_none_dimension_exports_one_module_for_every_batch_size(tmp_path, monkeypatch,
                                                                  capsys):
    (tmp_path / "model.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    status = cli_main.main(["export", "model.py:logistic", "--arg", "w=float64[3]",
                            "--arg", "X=float64[None, 3]", "--arg", "y=float64[None]",
                            "-o", "logistic_grad.py"])
    assert status == 0, capsys.readouterr().err
    spec = importlib.util.spec_from_file_location("cli_logistic", tmp_path / "logistic_grad.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    assert "X: float64 array of shape (None, 3)" in m.__doc__
    rng = np.random.default_rng(0)
    w = rng.normal(size=3)
    for n in (2, 50):
        X, y = rng.normal(size=(n, 3)), np.where(rng.random(n) < 0.5, -1.0, 1.0)
        np.testing.assert_allclose(m.grad_logistic(w, X, y), analytic(w, X, y), rtol=1e-12)
    with pytest.raises(ValueError, match=r"argument X: expected shape \(None, 3\)"):
        m.grad_logistic(w, np.ones((4, 2)), np.ones(4))


@pytest.mark.parametrize("command, spec, message", [
    ("latex", "X=float64[None,3]", "a None dimension (any size) is for tapec export"),
    ("export", "X=float64[n,3]", "a dimension is a size or None, got 'n'"),
    ("export", "X=float64[none,3]", "a dimension is a size or None, got 'none'"),
])
def test_none_dimensions_elsewhere_and_other_words_are_usage_errors(tmp_path, monkeypatch,
                                                                    capsys, command, spec,
                                                                    message):
    (tmp_path / "model.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    args = [command, "model.py:logistic", "--arg", "w=float64[3]", "--arg", spec,
            "--arg", "y=float64[4]"] + (["-o", "out.py"] if command == "export" else [])
    assert cli_main.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tapec {command}: ") and message in err
    assert not (tmp_path / "out.py").exists()
