"""The `tapec` command: every subcommand, --help, and one-line errors with status 2."""
import io
import subprocess
import sys

import pytest

MODEL = '''import numpy as np

def quad(x, A):
    return np.sum(x * (A @ x))

def layer(W, x, b):
    return np.sum(np.tanh(W @ x + b))
'''


def run(*args, cwd):
    return subprocess.run([sys.executable, "-m", "tapec", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def model_dir(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    return tmp_path


def _flat(text):
    return "".join(text.split())


def test_latex_of_a_plain_numpy_function(model_dir):
    done = run("latex", "model.py:quad", "--arg", "x=float64[3]", "--arg", "A=float64[3,3]",
               "--wrt", "x", cwd=model_dir)
    assert done.returncode == 0, done.stderr
    assert _flat("\\left(A + A^{T}\\right) x") in _flat(done.stdout)


def test_latex_of_a_layer_gradient_is_an_outer_product(model_dir):
    done = run("latex", "model.py:layer", "--arg", "W=float64[2,3]", "--arg", "x=float64[3]",
               "--arg", "b=float64[2]", "--wrt", "W", cwd=model_dir)
    assert done.returncode == 0, done.stderr
    assert _flat(r"\left(1 - \tanh\left(W x + b\right)^{\circ 2}\right) x^{T}") in \
        _flat(done.stdout)


def test_export_writes_a_numpy_module(model_dir):
    done = run("export", "model.py:quad", "--arg", "x=float64[3]", "--arg",
               "A=float64[3,3]", "-o", "quad_grad.py", cwd=model_dir)
    assert done.returncode == 0, done.stderr
    source = (model_dir / "quad_grad.py").read_text()
    assert "def grad_quad(" in source and "import tapec" not in source


def test_graph_writes_dot(model_dir):
    done = run("graph", "model.py:quad", "--arg", "x=float64[3]", "--arg", "A=float64[3,3]",
               "-o", "g.dot", cwd=model_dir)
    assert done.returncode == 0, done.stderr
    dot = (model_dir / "g.dot").read_text()
    assert dot.startswith("digraph tapec") and "cluster_recorded" in dot
    assert "cluster_gradient" in dot and "matmul" in dot


@pytest.mark.parametrize("args,message", [
    (("latex", "missing.py:quad", "--arg", "x=float64[3]"), "no such file"),
    (("latex", "model.py:nothing", "--arg", "x=float64[3]"), "no function"),
    (("latex", "model.py:quad", "--arg", "x=float64"), "malformed --arg"),
    (("latex", "model.py:quad", "--arg", "x=float64[3]"), "missing --arg"),
    (("latex", "model.py:quad", "--arg", "x=bogus[3]", "--arg", "A=float64[3,3]"),
     "unknown dtype"),
    (("latex", "model.py", "--arg", "x=float64[3]"), "FILE.py:FUNC"),
    (("graph", "model.py:quad", "--arg", "x=float64[3]", "--arg", "A=float64[3,3]",
      "-o", "g.gif"), ".dot, .svg or .png"),
])
def test_command_line_problems_are_one_line_and_status_2(model_dir, args, message):
    done = run(*args, cwd=model_dir)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("command", ["demo", "latex", "export", "graph", "bench"])
def test_every_command_has_help(command, tmp_path):
    done = run(command, "--help", cwd=tmp_path)
    assert done.returncode == 0 and "usage: tapec" in done.stdout


def test_version(tmp_path):
    done = run("--version", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("tapec ")


def test_graph_with_a_wrong_suffix_names_the_command_once(model_dir):
    done = run("graph", "model.py:quad", "--arg", "x=float64[3]", "--arg", "A=float64[3,3]",
               "-o", "x.pdf", cwd=model_dir)
    assert done.returncode == 2
    assert done.stderr == "tapec graph: -o must end in .dot, .svg or .png, got 'x.pdf'\n"
    assert done.stdout == "" and not (model_dir / "x.dot").exists()


def test_demo_into_a_closed_pipe_exits_quietly(tmp_path):
    """`tapec demo | head -1`: the reader goes away; no traceback, status 128 + SIGPIPE."""
    process = subprocess.Popen([sys.executable, "-m", "tapec", "demo"], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()               # before the first write: that write fails
    err = process.stderr.read()
    assert process.wait(timeout=300) == 141
    assert err == b""


def test_demo_piped_to_head(tmp_path):
    done = subprocess.run(f"'{sys.executable}' -m tapec demo | head -1; "
                          "echo \"status ${PIPESTATUS[0]}\"",
                          shell=True, executable="/bin/bash", cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[0] == "== first derivative" and lines[-1] in ("status 0", "status 141")


def test_broken_pipe_in_process_returns_141(monkeypatch):
    import importlib
    main = importlib.import_module("tapec.cli.main")   # the module: tapec.cli.main is shadowed
    from tapec.cli import demo

    def closed():
        raise BrokenPipeError(32, "Broken pipe")
    monkeypatch.setattr(demo, "main", closed)
    # No file descriptor: pytest's own stdout (under -s) must not be pointed at /dev/null.
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert main.main(["demo"]) == main.EXIT_BROKEN_PIPE == 141


def _load(path):
    import importlib.util
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_export_wrt_chooses_and_orders_the_gradients(model_dir):
    import numpy as np
    done = run("export", "model.py:quad", "--arg", "x=float64[3]", "--arg",
               "A=float64[3,3]", "--wrt", "A", "--wrt", "x", "-o", "both.py", cwd=model_dir)
    assert (done.returncode, done.stdout, done.stderr) == (0, "wrote both.py\n", "")
    module = _load(model_dir / "both.py")
    x, A = np.arange(3.0), np.arange(9.0).reshape(3, 3)
    dA, dx = module.grad_quad(x, A)
    np.testing.assert_allclose(dA, np.outer(x, x))
    np.testing.assert_allclose(dx, (A + A.T) @ x)
    done = run("export", "model.py:quad", "--arg", "x=float64[3]", "--arg",
               "A=float64[3,3]", "--wrt", "A", "-o", "a.py", cwd=model_dir)
    assert done.returncode == 0, done.stderr
    np.testing.assert_allclose(_load(model_dir / "a.py").grad_quad(x, A), np.outer(x, x))
    done = run("export", "model.py:quad", "--arg", "x=float64[3]", "--arg",
               "A=float64[3,3]", "-o", "first.py", cwd=model_dir)     # default: the first
    np.testing.assert_allclose(_load(model_dir / "first.py").grad_quad(x, A), (A + A.T) @ x)


SCALED = "import numpy as np\n\ndef scaled(x, k):\n    return np.sum(k * x * x)\n"


@pytest.mark.parametrize("wrt,message", [
    (["y"], "tapec export: --wrt 'y' is not a parameter (['x', 'k'])\n"),
    (["x", "x"], "tapec export: --wrt 'x' is given twice\n"),
    (["k"], "tapec export: --wrt 'k': a gradient is taken with respect to tensors; k is "
            "the number 3 (give it as DTYPE[DIMS])\n"),
])
def test_export_wrt_problems(tmp_path, wrt, message):
    (tmp_path / "scaled.py").write_text(SCALED)
    flags = [part for w in wrt for part in ("--wrt", w)]
    done = run("export", "scaled.py:scaled", "--arg", "x=float64[2]", "--arg", "k=3",
               *flags, "-o", "out.py", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (2, message)
    assert not (tmp_path / "out.py").exists()


def test_bench_help_documents_the_default_out(tmp_path):
    done = run("bench", "--help", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("usage: tapec bench")
    assert "--out DIR" in done.stdout and "docs" in done.stdout


def test_unknown_option_of_another_command_is_refused(model_dir):
    done = run("demo", "--quick", cwd=model_dir)
    assert done.returncode == 2 and "unrecognized arguments: --quick" in done.stderr


def test_networkx_is_imported_only_by_ir_graph():
    """The IR may change without touching its users: networkx stays behind ir/graph.py."""
    import ast
    import pathlib

    import tapec
    package = pathlib.Path(tapec.__file__).resolve().parent
    importers = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n.split(".")[0] == "networkx" for n in names):
                importers.add(path.relative_to(package).as_posix())
    assert importers == {"ir/graph.py"}


def test_graph_png_through_matplotlib_without_graphviz(model_dir):
    """The matplotlib fallback draws through tapec/ir/graph.py (the networkx module)."""
    import shutil
    pytest.importorskip("matplotlib")
    if shutil.which("dot"):
        pytest.skip("Graphviz is installed: it renders instead of matplotlib")
    done = run("graph", "model.py:quad", "--arg", "x=float64[3]", "--arg", "A=float64[3,3]",
               "-o", "g.png", cwd=model_dir)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "wrote g.dot and g.png (matplotlib: the recorded DAG)\n"
    assert (model_dir / "g.png").read_bytes().startswith(b"\x89PNG")
