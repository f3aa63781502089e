"""Draw docs/latex_gallery.md: each program of the LaTeX case table (tests/latex_cases.py)
as tapec prints it, rendered, beside its textbook form.

    python scripts/latex_gallery.py            # writes docs/latex_gallery.md and the SVGs
    python scripts/latex_gallery.py --check    # fails if the page is not what it would write

Formulas are rendered by matplotlib's mathtext (no TeX installation needed) to SVG with
glyphs as paths, a fixed hash salt and no date, so the same matplotlib writes the same
bytes. mathtext has no `aligned` environment and no \\lVert: each row of an aligned
block is drawn as a line of its own, and \\lVert x \\rVert is drawn as \\Vert x \\Vert.
"""
from __future__ import annotations

import argparse
import io
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "latex_gallery.md"
IMAGES = ROOT / "docs" / "latex_gallery"
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from latex_cases import CASES, PRINTED, TEXTBOOK, VERDICT  # noqa: E402

FONT_SIZE = 11
EXAMPLE = r'''One of them, run here:

```python
import numpy as np
import tapec as tf

rng = np.random.default_rng(0)
A = tf.constant(rng.normal(size=(4, 3)))
b = tf.constant(rng.normal(size=(4, 1)))
x = tf.constant(rng.normal(size=(3, 1)))
with tf.GradientTape(persistent=True) as outer:
    outer.watch(x)
    with tf.GradientTape() as inner:
        inner.watch(x)
        f = tf.reduce_sum(tf.square(A @ x - b))
    g = inner.gradient(f, x)
print(outer.latex(g, x, [(A, "A"), (b, "b"), (x, "x")]))
```

```text
\frac{\partial^{2} f}{\partial x \, \partial x^{T}} = 2 A^{T} A \in \mathbb{R}^{3 \times 3}
```

'''
TABLE_HEAD = """| program | tapec prints | textbook | verdict |
| --- | --- | --- | --- |
"""


def rows(tex: str) -> list:
    """The lines of a formula: the rows of an aligned block (`a &= b` as `a = b`)."""
    tex = tex.strip()
    if not tex.startswith(r"\begin{aligned}"):
        return [tex]
    body = tex.removeprefix(r"\begin{aligned}").removesuffix(r"\end{aligned}")
    return [row.replace("&=", "=").strip() for row in re.split(r"\\\\(?![A-Za-z])", body)]


def for_mathtext(tex: str) -> str:
    """The same formula in what mathtext reads."""
    tex = tex.replace(r"\left\lVert", r"\Vert").replace(r"\right\rVert", r"\Vert")
    return tex.replace(r"\lVert", r"\Vert").replace(r"\rVert", r"\Vert")


def svg(lines) -> bytes:
    """The lines drawn one under another, as SVG bytes."""
    import matplotlib
    matplotlib.use("svg")
    from matplotlib.figure import Figure
    matplotlib.rcParams["svg.hashsalt"] = "tapec-latex-gallery"
    matplotlib.rcParams["svg.fonttype"] = "path"
    height = 0.34 * len(lines) + 0.1
    figure = Figure(figsize=(8, height))
    for k, line in enumerate(lines):
        figure.text(0.0, 1 - (k + 0.5) / len(lines), "$" + for_mathtext(line) + "$",
                    fontsize=FONT_SIZE, va="center", ha="left")
    out = io.BytesIO()
    figure.savefig(out, format="svg", bbox_inches="tight", pad_inches=0.02,
                   transparent=True, metadata={"Date": None, "Creator": None})
    return out.getvalue()


def slug(name: str) -> str:
    return name.split()[0].lower()


def page() -> str:
    """The gallery page's Markdown."""
    counts = {v: sum(1 for n in CASES if VERDICT[n] == v) for v in ("ideal", "cluttered",
                                                                      "wrong")}
    head = f"""# LaTeX gallery

What `tape.latex` prints for {len(CASES)} derivative programs, scalar, vector and matrix
(the Hessians are jacobians of an inner tape's gradient), drawn beside the form a
textbook or the Matrix Cookbook writes. The programs are `tests/latex_cases.py`; the
test suite checks that each prints exactly the string shown under it, that KaTeX parses
it and that every symbol on its right-hand side is defined. Our judgement: {counts['ideal']}
read as the textbook does (up to naming and the order of terms), {counts['cluttered']} are
right but cluttered, {counts['wrong']} are wrong as printed. `python scripts/latex_gallery.py`
draws this page (matplotlib's mathtext; `\\lVert` is drawn as `\\Vert` there, and each
row of an `aligned` block as a line).

"""
    lines = []
    for name in CASES:
        key = slug(name)
        program = name.split(" ", 1)[1].replace("|", "\\|")
        lines.append(f"| {key}: {program} | ![{key}](latex_gallery/{key}.svg) | "
                     f"![{key} textbook](latex_gallery/{key}_textbook.svg) | {VERDICT[name]} |")
    return head + EXAMPLE + TABLE_HEAD + "\n".join(lines) + "\n"


def outputs() -> dict:
    """{path: bytes} of everything the gallery is."""
    found = {PAGE: page().encode()}
    for name in CASES:
        key = slug(name)
        found[IMAGES / f"{key}.svg"] = svg(rows(PRINTED[name]))
        found[IMAGES / f"{key}_textbook.svg"] = svg([TEXTBOOK[name]])
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="only check that the page and images are up to date")
    args = parser.parse_args(argv)
    stale = []
    for path, data in outputs().items():
        if args.check:
            if not path.exists() or path.read_bytes() != data:
                stale.append(str(path.relative_to(ROOT)))
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    if stale:
        print("out of date (run python scripts/latex_gallery.py):", *stale, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
