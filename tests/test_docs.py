"""The docs' code blocks run as pasted: each page's ```python blocks, in order, in one
namespace (a page's first block holds its imports)."""
import contextlib
import io
import pathlib
import re

import pytest

import tapec

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"
RUNNABLE = ["functions.md"]          # pages written to run top to bottom as one script


def _blocks(page):
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), flags=re.S)


@pytest.mark.parametrize("page", RUNNABLE)
def test_code_blocks_run_in_order(page):
    blocks = _blocks(page)
    assert blocks, f"{page} has no python blocks"
    namespace = {"__name__": f"docs_{page}"}
    printed = io.StringIO()
    for k, block in enumerate(blocks):
        if block.lstrip().startswith("tapec.function(fn)"):
            continue                  # the page's synopsis of signatures, not a program
        with contextlib.redirect_stdout(printed):
            exec(compile(block, f"{page} block {k}", "exec"), namespace)   # noqa: S102


def test_graph_mode_outputs_shown_in_the_page_are_what_runs():
    namespace, printed = {"__name__": "docs"}, io.StringIO()
    with contextlib.redirect_stdout(printed):
        for block in _blocks("functions.md")[1:]:
            exec(compile(block, "functions.md", "exec"), namespace)          # noqa: S102
    text = (DOCS / "functions.md").read_text()
    lines = ["-0.5 [[-102400.]] traces: 2", "[20. 40.  0.] [  0.   0. 120.]"]
    if tapec.config.simplify_setting() != "off":       # the page shows simplified code
        lines += ["    t2 = t0 + t1", "    t13 = read_variable1 - 0.5 * t12"]
    for line in lines:
        assert line in printed.getvalue() and line in text, line
