"""KaTeX, the parser the LaTeX tests read every printed string with, run through node.

One node process (`katex_parse.js`) serves the whole test session: `parse_errors(texs)`
sends a batch of strings as one JSON line and reads one line back, so checking hundreds
of strings costs milliseconds. KaTeX is looked for in `.ci/node/node_modules` (where
`.ci/run` installs it: `npm install --prefix .ci/node katex`), then wherever node's own
`require` finds it. Without node or KaTeX the tests that need it skip, saying so.
"""
from __future__ import annotations

import atexit
import json
import shutil
import subprocess
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
_LOCAL = _HERE.parent.parent / ".ci" / "node" / "node_modules" / "katex"
_SKIP = ("KaTeX through node is not available: install node and run "
         "`npm install --prefix .ci/node katex` in the repository to check the printed LaTeX")


class _KaTeX:
    """The node process; started on first use, stopped at exit."""

    def __init__(self):
        self.process, self.missing = None, None

    def start(self):
        if self.process is not None or self.missing:
            return
        node = shutil.which("node")
        if node is None:
            self.missing = _SKIP
            return
        module = str(_LOCAL) if _LOCAL.is_dir() else "katex"
        probe = subprocess.run([node, "-e", f"require({json.dumps(module)})"],
                               capture_output=True, text=True)
        if probe.returncode != 0:
            self.missing = _SKIP
            return
        self.process = subprocess.Popen([node, str(_HERE / "katex_parse.js"), module],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, bufsize=1)
        atexit.register(self.stop)

    def stop(self):
        if self.process is not None:
            self.process.stdin.close()
            self.process.wait(timeout=10)
            self.process = None

    def errors(self, texs):
        self.start()
        if self.missing:
            pytest.skip(self.missing)
        self.process.stdin.write(json.dumps(list(texs)) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())


_KATEX = _KaTeX()


def available() -> bool:
    """Whether KaTeX can be run (node and the katex package are found)."""
    _KATEX.start()
    return not _KATEX.missing


def parse_errors(texs) -> list:
    """For each LaTeX string, None when KaTeX parses it (display mode, strict), else the
    parser's message. Skips the calling test when KaTeX is not available."""
    return _KATEX.errors(texs)


def assert_parses(*texs):
    """Fail, quoting KaTeX, unless every string parses."""
    bad = [(t, e) for t, e in zip(texs, parse_errors(texs)) if e is not None]
    assert not bad, "KaTeX cannot parse:\n" + "\n".join(f"{t}\n  -> {e}" for t, e in bad)
