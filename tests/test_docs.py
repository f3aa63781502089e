"""Every code block of README.md and docs/*.md runs as a reader pasting it would.

The convention the pages follow (and this file enforces):

- A ```python block runs. The blocks of one page run in order, in one namespace, in a
  fresh scratch directory that is the working directory and is on sys.path; the compile
  cache starts empty, as in a new interpreter. Each block is its own test
  (``test_block[full-docs/api.md:L63]``), and running one alone runs the page's
  earlier blocks first.
- A ```text block that directly follows a ```python block (nothing but blank lines
  between) is what that block prints. Whitespace is compared normalized (pages wrap long
  lines), and ``...`` stands for any text. Output is shown for the default configuration
  (simplify "full"): under the conftest's "off" run the blocks still run and must not
  raise, but generated code differs there, so output is compared only under "full".
- A ```python block whose first line is ``# NAME.py`` is a file the reader saves, not
  pastes: it is written to the scratch directory (so ``from NAME import ...`` works).
- ```bash, ```console, ```text and unlabelled blocks are shell commands, output or
  prose, and never run.
- An HTML comment ``<!-- docs-test: skip: REASON -->`` on the line before a ```python
  block opts it out (a slow benchmark, say); the test reports it as skipped with REASON.
  Use it sparingly: a block that cannot run as written is usually a doc bug.
- ``<!-- docs-test: needs: jax, torch -->`` on the line before a ```python block runs it
  only where those modules are installed (optional libraries CI does not install); it
  is skipped, naming them, elsewhere.
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import io
import os
import pathlib
import re
import shutil
import sys
import tempfile
import traceback

import pytest

import tapec
from tapec import config
from tapec.ops.registry import REGISTRY

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = ["README.md"] + sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))

# Blocks known to fail, as xfail(strict=False) with the reason, keyed by page and the
# block's first line (which moves less than its line number). None today.
XFAIL = {}

FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[ \t]*$")
SKIP = re.compile(r"<!--\s*docs-test:\s*skip:\s*(?P<reason>.*?)\s*-->\s*$")
NEEDS = re.compile(r"<!--\s*docs-test:\s*needs:\s*(?P<modules>[\w., ]+?)\s*-->\s*$")
FILE = re.compile(r"#\s*(?P<name>[A-Za-z_]\w*)\.py\b")


@dataclasses.dataclass
class Block:
    page: str
    line: int                  # 1-based line of the opening fence
    lang: str
    code: str
    before: str                # the page's text between the previous fence and this one
    output: str | None = None  # the ```text block that follows, for python blocks
    skip: str | None = None    # the reason of a docs-test: skip marker
    file: str | None = None    # module name, for a "# NAME.py" block

    @property
    def id(self):
        return f"{self.page}:L{self.line}"


def parse(page, text=None):
    """The fenced blocks of a page, in order (indented fences, in list items, included)."""
    lines = (text if text is not None else (ROOT / page).read_text()).splitlines()
    blocks, i, last_end = [], 0, 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, start = m.group("indent"), i
        i += 1
        body = []
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        before = "\n".join(lines[last_end:start])
        blocks.append(Block(page, start + 1, m.group("lang"), "\n".join(body) + "\n", before))
        i += 1
        last_end = i
    for prev, block in zip(blocks, blocks[1:]):
        if prev.lang == "python" and block.lang == "text" and not block.before.strip():
            prev.output = block.code
    for block in blocks:
        tail = block.before.rstrip().splitlines()[-1:] or [""]
        if m := SKIP.search(tail[0]):
            block.skip = m.group("reason")
        elif m := NEEDS.search(tail[0]):
            missing = [name for name in re.split(r"[,\s]+", m.group("modules").strip())
                       if importlib.util.find_spec(name) is None]
            if missing:
                block.skip = f"needs {', '.join(missing)}, not installed here"
        first = block.code.lstrip().splitlines()[:1] or [""]
        if block.lang == "python" and (m := FILE.match(first[0])):
            block.file = m.group("name")
    return blocks


BLOCKS = {page: [b for b in parse(page) if b.lang == "python"] for page in PAGES}


def _matches(expected, actual):
    """Whitespace-normalized comparison in which "..." stands for any text."""
    norm = lambda s: " ".join(s.split())          # noqa: E731
    pattern = r".*?".join(re.escape(piece.strip()) for piece in norm(expected).split("..."))
    return re.fullmatch(r"\s*" + pattern + r"\s*", norm(actual), flags=re.S) is not None


class PageRun:
    """One page's blocks run lazily, in order, in one namespace (one per simplify mode)."""

    def __init__(self, page, mode):
        self.page, self.blocks = page, BLOCKS[page]
        self.namespace = {"__name__": "__main__"}
        self.scratch = tempfile.mkdtemp(prefix="tapec_docs_")
        self.mode, self.results, self.failed = mode, [], []
        self.ops = set(REGISTRY)                 # docs/adding_ops.md declares ops
        tapec.clear_cache()                      # a reader's fresh interpreter

    def result(self, k):
        while len(self.results) <= k:
            self.results.append(self._run(self.blocks[len(self.results)]))
        return self.results[k]

    def _run(self, block):
        """(stdout, error text or None) of one block."""
        if block.skip:
            return "", None
        if block.file:
            pathlib.Path(self.scratch, f"{block.file}.py").write_text(block.code)
            sys.modules.pop(block.file, None)
            importlib.invalidate_caches()
            return "", None
        printed, error = io.StringIO(), None
        cwd, threads, cache_size = os.getcwd(), config._threads, tapec.cache_info().maxsize
        sys.path.insert(0, self.scratch)
        os.chdir(self.scratch)
        try:
            with tapec.simplify_mode(self.mode), contextlib.redirect_stdout(printed):
                try:
                    exec(compile(block.code, block.id, "exec"), self.namespace)  # noqa: S102
                finally:
                    self.mode = config.simplify_setting()     # the page's next block sees it
        except Exception:                                     # noqa: BLE001
            error = traceback.format_exc()
            self.failed.append(block.id)
        finally:
            os.chdir(cwd)
            sys.path.remove(self.scratch)
            config._threads = threads
            tapec.set_cache_size(cache_size)
        return printed.getvalue(), error

    def close(self):
        """Forget what the page declared, so it can run again (the other simplify mode)
        and the registry-driven tests never see it."""
        for name in set(REGISTRY) - self.ops:
            del REGISTRY[name]
        tapec.clear_cache()
        shutil.rmtree(self.scratch, ignore_errors=True)


_runs = {}


def _page_run(page, mode):
    if (page, mode) not in _runs:
        for key in [key for key in _runs if key[1] != mode]:   # another mode's runs are done
            _runs.pop(key).close()
        _runs[(page, mode)] = PageRun(page, mode)
    return _runs[(page, mode)]


def _params():
    for page, blocks in BLOCKS.items():
        for k, block in enumerate(blocks):
            first = block.code.lstrip().splitlines()[0] if block.code.strip() else ""
            marks = [pytest.mark.xfail(strict=False, reason=f"{block.id}: {reason}")
                     for (xpage, start), reason in XFAIL.items()
                     if xpage == page and first.startswith(start)]
            yield pytest.param(page, k, id=block.id, marks=marks)


@pytest.fixture(autouse=True, scope="module")
def _close_runs():
    """Pages left half run (a -k selection) are closed with the module."""
    yield
    while _runs:
        _runs.popitem()[1].close()


@pytest.mark.parametrize(("page", "k"), list(_params()))
def test_block(page, k, simplify_mode):
    block = BLOCKS[page][k]
    if block.skip:
        pytest.skip(f"{block.id}: {block.skip}")
    run = _page_run(page, simplify_mode)
    printed, error = run.result(k)
    if k == len(run.blocks) - 1:
        _runs.pop((page, simplify_mode)).close()
    earlier = [b for b in run.failed if b != block.id]
    note = f"\n(earlier blocks of this page failed: {', '.join(earlier)})" if earlier else ""
    if error is not None:
        pytest.fail(f"{block.id} raised:\n{error}{note}", pytrace=False)
    if block.output is not None and simplify_mode == "full" and not _matches(block.output,
                                                                             printed):
        pytest.fail(f"{block.id} printed:\n{printed}\nthe page shows:\n{block.output}{note}",
                    pytrace=False)


@pytest.mark.parametrize("page", PAGES)
def test_output_blocks_are_labelled_text(page):
    """Output directly after a python block is a ```text block, so it is compared; an
    unlabelled block there would silently not be."""
    blocks = parse(page)
    for prev, block in zip(blocks, blocks[1:]):
        if prev.lang == "python" and block.lang != "python" and not block.before.strip():
            assert block.lang == "text", f"{block.id}: label the output block ```text"


def test_every_page_is_collected():
    assert "README.md" in PAGES and "docs/functions.md" in PAGES
    assert sum(map(len, BLOCKS.values())) > 40


def test_the_convention_is_parsed_as_documented():
    page = "\n".join([
        "```python", "# model.py: saved, not pasted", "def f(): return 1", "```",
        "", "<!-- docs-test: skip: takes minutes -->", "```python", "slow()", "```",
        "<!-- docs-test: needs: numpy, no_such_module_xyz -->", "```python", "gpu()", "```",
        "- a list item:", "", "  ```python", "  print(1)", "  ```", "",
        "  ```text", "  1", "  ```", "```python", "print(2)", "```", "prose", "```text",
        "not output", "```"])
    blocks = [b for b in parse("page.md", page) if b.lang == "python"]
    assert [b.file for b in blocks] == ["model", None, None, None, None]
    assert [b.skip for b in blocks] == [None, "takes minutes",
                                        "needs no_such_module_xyz, not installed here", None,
                                        None]
    assert [b.output for b in blocks] == [None, None, None, "1\n", None]
    assert blocks[3].code == "print(1)\n"
    assert _matches("a ...\nb   c", "a x y\nz b c") and not _matches("a b", "a b c")
