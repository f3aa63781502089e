"""The benchmark suite (`tapec bench`) at tiny sizes: results agree with the hand-written
NumPy references and the report is written. No timing is asserted, and no other system
(TensorFlow, JAX, PyTorch, autograd, matplotlib) is needed."""
import dataclasses
import os
import subprocess
import sys

import numpy as np
import pytest

import tapec
from tapec import bench, cli
from tapec.bench import report, suite, systems, worker
from tapec.bench.workloads import WORKLOADS, build_cases, check

SCALE = 0.01
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def quiet(*args):
    pass


def table_ids(markdown: str) -> list:
    """Workload ids of the first table's rows."""
    section = markdown.split("## Ratio to hand-written NumPy", 1)[1].split("\n## ", 1)[0]
    return [line.split("|")[1].strip() for line in section.splitlines()
            if line.startswith("| W")]


@pytest.mark.parametrize("case", build_cases(SCALE), ids=lambda c: c.id)
def test_tapec_matches_numpy_reference(case):
    expected = case.numpy()
    check(case.tapec(*case.tapec_args), expected, case.rtol, case.id)
    check(case.tapec(*case.tapec_args), expected, case.rtol, case.id)   # cache hit


def test_check_rejects_a_wrong_result():
    check([np.ones(3)], [np.ones(3)], 1e-6)
    check(np.ones((2, 1)), np.ones(2), 1e-6)                 # same size: reshaped
    with pytest.raises(AssertionError):
        check(np.ones(3) * (1 + 1e-5), np.ones(3), 1e-6)
    with pytest.raises(AssertionError):
        check([np.ones(3)], [np.ones(3), np.ones(3)], 1e-6)


def test_quick_suite_writes_one_row_per_case(tmp_path):
    results = suite.run_suite(scale=SCALE, quick=True, systems=(), out=str(tmp_path),
                              plot=False, isolate=False, log=quiet)
    cases = build_cases(SCALE)
    assert [row.id for row in results.rows] == [c.id for c in cases]
    assert all(row.tapec.status in ("", "noisy") for row in results.rows), results.problems
    assert all(row.tapec.seconds > 0 and row.numpy.seconds > 0 for row in results.rows)
    text = (tmp_path / "benchmarks.md").read_text(encoding="utf-8")
    ids = table_ids(text)
    assert ids == [c.id for c in cases]
    assert {row.workload for row in results.rows} == set(WORKLOADS)
    for key in ("nproc", "NumPy", "median", "ratio"):
        assert key.lower() in text.lower()
    assert not (tmp_path / "benchmarks.png").exists()


def test_noisy_measurements_are_taken_again():
    outcomes = {"tapec": {"cells": {"W1": [2.0, "", 1.0], "W2": [5.0, "", 1.0]}},
                "jax": {"cells": {"W1": [9.0, "", 10.0], "W2": [4.0, "", 1.1]}}}
    asked = []

    def run(key, ids):
        asked.append((key, ids))
        return {"cells": {"W1": [0.5, "", 1.2 if len(asked) == 1 else 5.0]}}
    assert suite._remeasure_noisy(outcomes, run, quiet) == {}
    assert asked == [("jax", ["W1"])]
    assert outcomes["jax"]["cells"]["W1"] == [0.5, "", 1.2]
    outcomes["jax"]["cells"]["W1"] = [9.0, "", 10.0]
    asked.append("second")          # from now on re-measuring finds the same busy spell
    still = suite._remeasure_noisy(outcomes, run, quiet, rounds=2)
    assert list(still) == [("jax", "W1")] and still["jax", "W1"] == pytest.approx(5.0)


def test_missing_system_is_reported_not_fatal(tmp_path, monkeypatch):
    class Missing(systems.System):
        key, label, note = "missing", "Missing", "a system that is not installed"

        def load(self):
            raise ImportError("No module named 'missing'")

    monkeypatch.setattr(suite, "SYSTEMS", [Missing()])
    monkeypatch.setattr(worker, "SYSTEMS", [Missing()])
    results = suite.run_suite(scale=SCALE, quick=True, only=["W1"], systems=("missing",),
                              out=str(tmp_path), plot=False, isolate=False, log=quiet)
    assert results.rows[0].others["Missing"].status == "n/a"
    text = (tmp_path / "benchmarks.md").read_text(encoding="utf-8")
    assert "not installed" in text and "| n/a |" in text


def test_worker_process_skips_a_system_that_fails_to_import(tmp_path, monkeypatch):
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "autograd.py").write_text("raise ImportError('blocked for the test')\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(blocked), ROOT, os.environ.get("PYTHONPATH", "")]))
    results = suite.run_suite(scale=SCALE, quick=True, only=["W1", "W8"],
                              systems=("autograd",), out=None, log=quiet)
    assert [row.others["autograd"].status for row in results.rows] == ["n/a"] * len(results.rows)
    assert "blocked for the test" in results.systems["autograd"]


def test_worker_in_process_measures_tapec_function_or_reports_na():
    outcome = worker.measure_system("function", SCALE, True, ["W1"], log=quiet)
    if hasattr(tapec, "function"):
        assert outcome["cells"]["W1"][1] in ("", "error", "wrong")
    else:
        assert outcome["error"].startswith("n/a")


@pytest.mark.parametrize("case", build_cases(SCALE), ids=lambda c: c.id)
def test_tf_idiom_runs_the_tape_step_inside_tapec_function(case):
    if not hasattr(tapec, "function"):
        pytest.skip("tapec has no `function`")
    system = systems.by_key("tf-idiom")
    system.load()
    # A wrong functional form must not matter: the column times the TF body, not it.
    case = dataclasses.replace(case, functional=lambda *args: np.zeros(1))
    fn = system.build(case)
    expected = case.numpy()
    check(fn(), expected, case.rtol, case.id)        # traces
    check(fn(), expected, case.rtol, case.id)        # the trace, reused


def test_worker_in_process_measures_tf_idiom():
    if not hasattr(tapec, "function"):
        pytest.skip("tapec has no `function`")
    outcome = worker.measure_system("tf-idiom", SCALE, True, ["W1", "W6"], log=quiet)
    assert {cid: cell[1] for cid, cell in outcome["cells"].items()} == {"W1": "", "W6": ""}
    assert all(cell[0] > 0 for cell in outcome["cells"].values())


def _row(rid, tape, forms, idiom, first=False, status=""):
    """A Row with these seconds, every one measured beside a NumPy time of 1 s."""
    return report.Row(rid, rid.split()[0], rid, report.Cell(1.0), report.Cell(tape, "", 1.0),
                      {report.FORMS[0]: report.Cell(forms, status, 1.0),
                       report.IDIOM: report.Cell(idiom, "", 1.0)}, first_call=first)


def test_idiom_ratio_is_over_the_fastest_working_tapec_form():
    rows = [_row("W1", 4.0, 2.0, 3.0), _row("W4", 1.0, 2.0, 30.0),
            _row("W5", 4.0, 1.0, 3.0, status="wrong"), _row("W8 N=1 first", 1.0, 1.0, 9.0,
                                                              first=True)]
    results = report.Results(rows, [report.IDIOM, report.FORMS[0]], {}, {}, [],
                             {"scale": 1.0, "quick": False, "command": "test"})
    got = [(row.id, label, ratio) for row, label, ratio in report.idiom_ratios(results)]
    assert got == [("W1", report.FORMS[0], pytest.approx(1.5)),
                   ("W4", "tapec", pytest.approx(30.0)),
                   ("W5", "tapec", pytest.approx(0.75))]     # a wrong form does not count
    section = report.markdown(results, {}).split("## TF idiom against", 1)[1]
    section = section.split("\n## ", 1)[0]
    assert "| W4 |" in section and "**no**" in section and "| W8 N=1 first" not in section
    assert "W4 30.0 (over)" in report.text_table(results)
    rows[0].tapec.status = "noisy"          # not W1's best form: no mark
    assert "W1 1.50 (over)," in report.text_table(results)
    rows[0].others[report.FORMS[0]].status = "noisy"
    assert "W1 1.50 ~ (over)," in report.text_table(results)
    results.labels.remove(report.IDIOM)
    assert report.idiom_ratios(results) == []
    assert "## TF idiom against" not in report.markdown(results, {})


def test_cli_bench_only(tmp_path):
    rc = cli.main(["bench", "--quick", "--scale", str(SCALE), "--only", "W1,w7",
                   "--systems", "none", "--no-plot", "--out", str(tmp_path)])
    assert rc == 0
    assert table_ids((tmp_path / "benchmarks.md").read_text(encoding="utf-8")) == ["W1", "W7"]


def test_cli_bench_rejects_unknown_names(tmp_path):
    assert bench.main(["--only", "W9", "--out", str(tmp_path)]) == 2
    assert bench.main(["--systems", "matlab", "--out", str(tmp_path)]) == 2
    assert not (tmp_path / "benchmarks.md").exists()


def test_plot_when_matplotlib_is_installed(tmp_path):
    pytest.importorskip("matplotlib")
    suite.run_suite(scale=SCALE, quick=True, only=["W1", "W3"], systems=(),
                    out=str(tmp_path), isolate=False, log=quiet)
    assert (tmp_path / "benchmarks.png").stat().st_size > 0


def test_python_m_benchmarks_delegates(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--scale", str(SCALE), "--only",
         "W1", "--systems", "none", "--no-write"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert "W1" in out.stdout and "ratio" in out.stdout
