"""The LaTeX case table (latex_cases.py): each program prints exactly its recorded string,
which KaTeX parses and whose every symbol is defined; our judgement of the table has
no case wrong as printed; and where SymPy differentiates the same matrix expression
(sympy.MatrixSymbol), its derivative and tapec's printed formula give the same numbers."""
import numpy as np
import pytest

from helpers import katex, symbols
from latex_cases import CASES, PRINTED, TEXTBOOK, VERDICT, printed


@pytest.mark.parametrize("name", list(CASES))
def test_case_prints_its_recorded_string(name):
    assert printed(name) == PRINTED[name]


@pytest.mark.parametrize("name", list(CASES))
def test_case_uses_only_defined_symbols(name):
    tape, target, sources, names = CASES[name]()
    tex = tape.latex(target, sources, names)
    symbols.assert_defined(tex, symbols.inputs_of(tape, names, target, sources))


def test_every_case_and_textbook_form_parses_with_katex():
    texs = [PRINTED[n] for n in CASES] + [TEXTBOOK[n] for n in CASES]
    katex.assert_parses(*texs)


def test_the_judgement_of_the_table():
    counts = {v: sum(1 for n in CASES if VERDICT[n] == v) for v in ("ideal", "cluttered",
                                                                      "wrong")}
    assert set(VERDICT.values()) <= set(counts)
    assert counts["wrong"] == 0 and counts["ideal"] == len(CASES), counts


def test_symbol_check_rejects_what_the_printer_used_to_print():
    # Hess ||Ax - b||^2 printed A^T diag(c_1) A, with the 2 invisible in c_1.
    assert symbols.undefined(r"A^{T} \operatorname{diag}\left(c_{1}\right) A", {"A"}) == \
        {"c_{1}"}
    assert symbols.undefined(r"\begin{aligned} t_{1} &= x \\ f &= t_{1} + t_{2} "
                             r"\end{aligned}", {"x"}) == {"t_{2}"}
    indexed = r"\frac{\partial f_{ij}}{\partial X_{kl}} = \delta_{jl} X_{ki} + \sum_{p} " \
        r"\delta_{il} X_{kp}"
    assert symbols.sources_on_the_left(indexed) == {"X"}
    assert not symbols.undefined(indexed, {"X"})


def test_katex_rejects_what_it_cannot_parse():
    errors = katex.parse_errors([r"\frac{1}{", r"\input{x}", r"x^{T}"])
    assert errors[0] and errors[1] and errors[2] is None


# --- SymPy's matrix derivatives ---------------------------------------------------------

def _sympy_cases():
    sp = pytest.importorskip("sympy")
    x, a = sp.MatrixSymbol("x", 3, 1), sp.MatrixSymbol("a", 3, 1)
    A, X = sp.MatrixSymbol("A", 3, 3), sp.MatrixSymbol("X", 3, 3)
    R, b = sp.MatrixSymbol("A", 4, 3), sp.MatrixSymbol("b", 4, 1)
    # SymPy 1.14 differentiates log(det(X)) to 0: that case is not compared.
    return {
        "V1 a^T x": (a.T * x, x),
        "V3 ||x||^2": (x.T * x, x),
        "V8 x^T A x": (x.T * A * x, x),
        "V9 ||Ax-b||^2": ((R * x - b).T * (R * x - b), x),
        "M1 tr X": (sp.Trace(X), X),
        "M2 tr(AX)": (sp.Trace(A * X), X),
        "M5 ||X||_F^2": (sp.Trace(X.T * X), X),
        "H1 Hess x^T A x": ((x.T * A * x).diff(x), x),
        "H2 Hess ||Ax-b||^2": (((R * x - b).T * (R * x - b)).diff(x), x),
    }


@pytest.mark.parametrize("name", ["V1 a^T x", "V3 ||x||^2", "V8 x^T A x", "V9 ||Ax-b||^2",
                                  "M1 tr X", "M2 tr(AX)", "M5 ||X||_F^2", "H1 Hess x^T A x",
                                  "H2 Hess ||Ax-b||^2"])
def test_sympy_matrix_derivatives_agree_with_the_printed_formula(name, monkeypatch):
    import sympy as sp
    from test_latex import assert_printed_formulas_compute
    expression, by = _sympy_cases()[name]
    tape, target, source, names = CASES[name]()
    values = {sp.MatrixSymbol(latex_symbol, *np.shape(t.numpy())): t.numpy()
              for t, latex_symbol in names}
    values = {s: v.reshape(s.shape) for s, v in values.items()}
    derivative = expression.diff(by)
    if hasattr(derivative, "shape") and derivative.shape == (1, 1):
        derivative = derivative[0, 0]
    found = sp.Matrix(derivative.subs({s: sp.Matrix(v) for s, v in values.items()}).doit())
    expected = np.array(found.tolist(), dtype=float)
    computed = tape.jacobian(target, source) if np.size(target.numpy()) > 1 else \
        tape.gradient(target, source)
    computed = np.reshape(computed.numpy(), expected.shape)
    np.testing.assert_allclose(expected, computed, rtol=1e-10)
    assert_printed_formulas_compute(monkeypatch, tape, target, source, [expected], names)


def test_the_gallery_page_is_the_table():
    """docs/latex_gallery.md is what scripts/latex_gallery.py writes (its images need
    matplotlib and differ between its versions: only their presence is checked)."""
    import importlib.util
    import pathlib
    root = pathlib.Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("latex_gallery",
                                                  root / "scripts" / "latex_gallery.py")
    gallery = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gallery)
    assert (root / "docs" / "latex_gallery.md").read_text() == gallery.page(), \
        "run python scripts/latex_gallery.py"
    for name in CASES:
        assert (root / "docs" / "latex_gallery" / f"{gallery.slug(name)}.svg").exists()


@pytest.mark.parametrize("name", ["M8 attention softmax", "M9 logistic loss",
                                  "H3 Hess logistic"])
def test_the_attention_and_logistic_formulas_compute_tapecs_values(name, monkeypatch):
    """The cases that read as the textbook once unrecorded values printed by their
    provenance (M9, H3) and a shared product became a definition (M8)."""
    from test_latex import assert_printed_formulas_compute
    tape, target, source, names = CASES[name]()
    derivative = tape.jacobian if np.size(target.numpy()) > 1 else tape.gradient
    assert_printed_formulas_compute(monkeypatch, tape, target, source,
                                    [derivative(target, source).numpy()], names)
