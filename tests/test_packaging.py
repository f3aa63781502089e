"""What `pip install .` ships: the wheel holds tapec with its py.typed marker and the
license, and none of the benchmark code (which lives in benchmarks/, outside the
package). Built without network from a copy of the sources; skipped where the setuptools
that pyproject.toml asks for is not installed (a fresh venv may have none)."""
import importlib.util
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _setuptools_major() -> int:
    if importlib.util.find_spec("setuptools") is None:
        return 0
    from importlib.metadata import version
    return int(version("setuptools").split(".")[0])


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory):
    if _setuptools_major() < 77:        # 77 reads the SPDX license; it builds wheels itself
        pytest.skip("building a wheel offline needs setuptools >= 77 installed")
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "tapec", source / "tapec", ignore=ignore)
    shutil.copytree(ROOT / "benchmarks", source / "benchmarks", ignore=ignore)
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "-w", str(out),
                           "--no-deps", "--no-build-isolation", "--no-index", "-q"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    (wheel,) = out.glob("tapec-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def test_wheel_has_py_typed_and_the_license(wheel_names):
    assert "tapec/py.typed" in wheel_names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in wheel_names)
    assert "tapec/cli/main.py" in wheel_names and "tapec/__init__.py" in wheel_names


def test_wheel_has_no_benchmark_code(wheel_names):
    assert not [n for n in wheel_names if n.startswith("benchmarks/")]
    assert not [n for n in wheel_names if n.startswith("tapec/bench/")]
    assert {n.split("/")[0] for n in wheel_names if not n.startswith("tapec-")} == {"tapec"}
