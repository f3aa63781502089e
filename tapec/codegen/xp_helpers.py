"""Helpers that array-API code carries, where the standard has a gap.

Each helper is an ordinary function of this module, written against the namespace it is
given (`xp`, its first parameter) and the standard only; `sources` copies the text of
the ones a program calls into its source (array_api.py), so generated code defines them
itself and runs without tapec. They read only shapes (static under `jax.jit`, known to
Dask), never values, and write nothing in place.
"""
from __future__ import annotations

import inspect
import re
import sys


def sources(names) -> list:
    """The source lines of the helpers called `names`, and of those they call, each
    helper once, in name order."""
    wanted, stack = set(), list(names)
    while stack:
        name = stack.pop()
        if name in wanted:
            continue
        wanted.add(name)
        stack.extend(_CALLS.findall(_source(name)))
    return [_source(name).splitlines() for name in sorted(wanted)]


_CALLS = re.compile(r"\btapec_xp_\w+")
_SOURCES = {}


def _source(name) -> str:
    found = _SOURCES.get(name)
    if found is None:
        function = getattr(sys.modules[__name__], name, None)
        if function is None or not name.startswith("tapec_xp_"):
            raise KeyError(f"no array-API helper {name!r}")
        found = _SOURCES[name] = inspect.getsource(function).rstrip()
    return found
