"""W12, the benchmark of exported modules' per-call time (benchmarks/exported.py): its
cases compute the hand-written gradient, its NumPy rows call a module that takes the
fast path, and the report shows the module against the hand-written code. No timing is
asserted."""
import numpy as np

from benchmarks import exported, report, suite
from benchmarks.report import Cell, Results, Row
from benchmarks.workloads import build_cases, check


def test_w12_cases_match_their_hand_written_gradients():
    cases = build_cases(0.05, ["W12"])
    assert [c.id for c in cases][:2] == ["W12 logistic", "W12 mlp"]
    for case in cases:
        assert case.tapec_only and case.workload == "W12"
        check(case.tapec(*case.tapec_args), case.numpy(), case.rtol, case.id)


def test_w12_has_no_tf_idiom_or_functional_column():
    """Its tapec step calls a module, not a TF body: under tf.function it would trace
    the NumPy call into a constant."""
    from benchmarks.systems import TapecFunction, TapecTFIdiom
    (w12,) = [c for c in build_cases(0.05, ["W12"]) if c.id == "W12 mlp"]
    (w2,) = build_cases(0.05, ["W2"])
    for system in (TapecFunction(), TapecTFIdiom()):
        assert not system.runs(w12) and system.runs(w2)


def test_the_numpy_rows_call_a_module_on_its_fast_path(monkeypatch):
    (case,) = [c for c in build_cases(1.0, ["W12"]) if c.id == "W12 logistic"]
    (exporter,) = [c.cell_contents for c in case.tapec.__closure__
                   if hasattr(c.cell_contents, "cache_info")]
    grad = exporter()                   # the module's grad_logistic
    called = []
    monkeypatch.setitem(grad.__globals__, "_namespace", lambda *args: called.append(args))
    check(case.tapec(), case.numpy(), case.rtol, case.id)
    assert called == []


def test_the_report_shows_each_exported_case_against_the_hand_written_one():
    rows = [Row("W12 logistic", "W12", "t", Cell(9e-6), Cell(12e-6, "", 10e-6),
                params={"namespace": "numpy"}),
            Row("W12 logistic torch", "W12", "t", Cell(30e-6), Cell(status="error"),
                params={"namespace": "torch"}),
            Row("W1", "W1", "t", Cell(1e-6), Cell(2e-6, "", 1e-6))]
    lines = report.exported_section(Results(rows, [], {}, {}, [], {}))
    assert lines[1] == "## Exported modules per call"
    assert "| W12 logistic | numpy | 12.0 µs | 10.0 µs | 1.20 | +2.0 µs |" in lines
    assert any(line.startswith("| W12 logistic torch | torch | error |") for line in lines)
    assert not any("| W1 |" in line for line in lines)
    assert report.exported_section(Results(rows[2:], [], {}, {}, [], {})) == []


def test_a_quick_run_of_w12_writes_the_section(tmp_path):
    results = suite.run_suite(scale=0.05, quick=True, only=["W12"], systems=(),
                              out=str(tmp_path), plot=False, isolate=False,
                              log=lambda *a: None)
    assert all(row.tapec.status in ("", "noisy") for row in results.rows), results.problems
    text = (tmp_path / "benchmarks.md").read_text(encoding="utf-8")
    section = text.split("## Exported modules per call", 1)[1].split("\n## ", 1)[0]
    assert "| W12 logistic | numpy |" in section and "| W12 mlp | numpy |" in section
    foreign = exported._foreign_namespace()
    if foreign is not None:
        assert f"| W12 logistic {foreign[1]} | {foreign[1]} |" in section
    assert np.isfinite([row.tapec.ratio() for row in results.rows]).all()
