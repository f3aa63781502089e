"""The benchmark suite (benchmarks/, run by `python -m benchmarks` or `tapec bench`) at
tiny sizes: results agree with the hand-written NumPy references and the report is
written. No timing is asserted, and no other system (TensorFlow, JAX, PyTorch, autograd,
matplotlib) is needed. The suite is outside the package: not in the compile cache's
sources fingerprint, and not imported by the CLI's other commands."""
import dataclasses
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import benchmarks as bench
import tapec
from benchmarks import report, suite, systems, targets, worker, workloads
from benchmarks.workloads import WORKLOADS, build_cases, check
from tapec import cli
from tapec.codegen import disk_cache

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
    for section in ("## Targets", "## Compile throughput", "## Python-scalar loop",
                    "## First gradient in a fresh process"):
        assert section in text
    compiles = {row.id: row.tapec.info.get("compiles") for row in results.rows
                if row.workload == "W10"}
    assert compiles["W10 tensor"] >= 1 and compiles["W10"] >= 1
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
    assert table_ids((tmp_path / "benchmarks.md").read_text(encoding="utf-8")) == [
        "W1", "W7a", "W7b"]


def test_default_out_is_the_checkouts_docs_not_the_current_directory():
    assert bench.DEFAULT_OUT == os.path.join(ROOT, "docs")
    assert suite.run_suite.__kwdefaults__["out"] == bench.DEFAULT_OUT


def test_cli_bench_from_another_directory_writes_only_to_out(tmp_path):
    """Run from an unrelated folder, `tapec bench` finds the suite next to tapec and writes
    where --out says, nothing into the current directory."""
    work, out = tmp_path / "work", tmp_path / "out"
    work.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "tapec", "bench", "--quick", "--scale", str(SCALE), "--only",
         "W1", "--systems", "none", "--no-plot", "--out", str(out)],
        cwd=work, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert f"wrote {out / 'benchmarks.md'}" in done.stdout
    assert list(work.iterdir()) == [] and table_ids(
        (out / "benchmarks.md").read_text(encoding="utf-8")) == ["W1"]


def test_cli_bench_without_a_checkout_says_so(tmp_path, monkeypatch, capsys):
    from tapec.cli import bench as cli_bench
    monkeypatch.setattr(cli_bench, "checkout_roots", lambda: [tmp_path])
    assert cli.main(["bench", "--quick"]) == 2
    err = capsys.readouterr().err
    assert err == cli_bench.NOT_FOUND + "\n"
    assert cli.main(["bench", "--help"]) == 0
    assert "usage: tapec bench" in capsys.readouterr().out


def test_other_commands_do_not_import_the_suite(tmp_path):
    code = ("import sys; from tapec import cli; cli.main(['--version']); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'benchmarks'))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=True)
    assert done.stdout.splitlines()[-1] == "[]"


def test_suite_is_outside_the_package_and_its_fingerprint():
    """Editing a benchmark must not invalidate cached gradients: no benchmark source is
    under tapec/, whose .py files the disk cache fingerprints."""
    package = pathlib.Path(tapec.__file__).resolve().parent
    assert not (package / "bench").exists()
    assert pathlib.Path(bench.__file__).resolve().parent == pathlib.Path(ROOT) / "benchmarks"
    hashed = sorted(p.relative_to(package).as_posix() for p in package.rglob("*.py"))
    assert hashed and not any("bench" in p and p != "cli/bench.py" for p in hashed)
    assert pathlib.Path(disk_cache.__file__).resolve().parent.parent == package


def test_cli_bench_rejects_unknown_names(tmp_path):
    assert bench.main(["--only", "W99", "--out", str(tmp_path)]) == 2
    assert bench.main(["--systems", "matlab", "--out", str(tmp_path)]) == 2
    assert not (tmp_path / "benchmarks.md").exists()


def test_plot_when_matplotlib_is_installed(tmp_path):
    pytest.importorskip("matplotlib")
    suite.run_suite(scale=SCALE, quick=True, only=["W1", "W3"], systems=(),
                    out=str(tmp_path), isolate=False, log=quiet)
    assert (tmp_path / "benchmarks.png").stat().st_size > 0


def test_python_m_benchmarks_runs_the_suite(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--scale", str(SCALE), "--only",
         "W1", "--systems", "none", "--no-write"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert "W1" in out.stdout and "ratio" in out.stdout


def test_workload_names_select_case_insensitively():
    assert workloads.select(["w7"]) == ["W7a", "W7b"]
    assert workloads.select(["W7B", "w10", "W1"]) == ["W7b", "W10", "W1"]
    with pytest.raises(ValueError, match="W99"):
        workloads.select(["W99"])


def test_w7b_reference_is_the_per_example_jacobian():
    """result[i, j, k] = dy[i, j] / dx[i, k], checked against central differences."""
    (case,) = build_cases(SCALE, ["W7b"])
    x, M = case.data["x"].astype(np.float64), case.data["M"].astype(np.float64)
    expected, step = case.numpy(), 1e-6
    i, k = 1, 0
    dx = np.zeros_like(x)
    dx[i, k] = step
    column = (np.tanh((x + dx) @ M) - np.tanh((x - dx) @ M))[i] / (2 * step)
    np.testing.assert_allclose(expected[i, :, k], column, rtol=1e-4, atol=1e-6)


def test_compile_throughput_case_runs_on_tapec_only():
    cases = [c for c in build_cases(1.0, ["W8"]) if c.params["compile_throughput"]]
    assert [(c.id, c.params["ops"], c.first_call) for c in cases] == [
        ("W8 N=12000 first", 48_000, True)]
    assert systems.by_key("tapec").runs(cases[0]) and systems.by_key("tf-idiom").runs(cases[0])
    assert not systems.by_key("jax").runs(cases[0])


def test_compiles_are_counted_from_a_cold_cache():
    if not hasattr(tapec, "function"):
        pytest.skip("tapec has no `function`")
    outcome = worker.measure_system("tf-idiom", SCALE, True, ["W10"], log=quiet,
                                    ids=["W10 tensor"])
    seconds, status, _, info = outcome["cells"]["W10 tensor"]
    assert status == "" and seconds > 0
    assert info["compiles"] == info["misses"] == 1 <= info["traces"]  # one program


def _target_results():
    """Results with W2 (ratio target), W8 first (ops/s), W10 (compiles) and W11 (JAX)."""
    def row(rid, workload, tape, idiom, params=None, first=False, info=(None, None),
            jax=None):
        others = {report.IDIOM: report.Cell(idiom, "", 1.0, info[1] or {})}
        if jax is not None:
            others[targets.JAX] = report.Cell(jax, "", 1.0)
        return report.Row(rid, workload, rid, report.Cell(1.0),
                          report.Cell(tape, "", 1.0, info[0] or {}), others,
                          first_call=first, params=params or {})
    rows = [row("W2", "W2", 1.0, 3.0),
            row("W8 N=12000 first", "W8", 1.0, 4.0, {"ops": 48_000, "size": 12000,
                                                      "compile_throughput": True}, True),
            row("W10", "W10", 1.0, 1.0, {"steps": 50, "anneal": 25.0, "tensor_beta": False},
                info=({"compiles": 3}, {"compiles": 26})),
            row("W11", "W11", 0.2, 0.5, first=True, jax=0.3)]
    labels = [report.IDIOM, targets.JAX]
    for r in rows:
        r.others.setdefault(targets.JAX, report.Cell(status="n/a"))
    return report.Results(rows, labels, {}, {}, [],
                          {"scale": 1.0, "quick": False, "command": "test"})


def test_targets_judge_the_better_and_the_worse_idiom():
    got = {t.what: t for t in targets.all_targets(_target_results())}
    w2 = got["W2"]          # 1.0 <= 1.10 meets; 3.0 > 2.2 not within
    assert (w2.better, w2.worse, w2.meets, w2.within) == ("1.00 (tape)", "3.00 (tf.function)",
                                                          True, False)
    rate = got["W8 N=12000 first (48,000 ops)"]     # 48,000 and 12,000 ops/s
    assert (rate.meets, rate.within) == (True, False)
    assert targets.allowed_compiles({"steps": 50, "anneal": 25.0}) == 3
    assert (got["W10"].meets, got["W10"].within) == (True, False)   # 3 <= 3; 26 > 6
    assert (got["W11"].meets, got["W11"].within) == (True, True)    # 0.2 <= 0.3; 0.5 <= 0.6
    text = report.markdown(_target_results(), {})
    section = text.split("## Targets", 1)[1].split("\n## ", 1)[0]
    assert "| W2 | ≤ 1.1× / 2.2× NumPy | 1.00 (tape) | 3.00 (tf.function) | yes | **no** |" \
        in section
    assert "48,000 | 1.00 s | 48,000 |" in text.split("## Compile throughput", 1)[1]
    assert "| W10 | tapec tf.function (TF body) |" in text
