"""Names: the symbols leaves print as, and escaping that keeps user text out of commands.

`latex_name` turns a user's name into a symbol (`W1` -> `W_{1}`, `theta` -> `\\theta`,
anything else upright and escaped); `Namer` gives every leaf of a printed graph its
display name (the user's, the Variable's, or a default letter); `temporary_names` numbers
the definitions `t_{1}, t_{2}, ...` of the layout.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

from ...tensor import Tensor, Variable

_GREEK = frozenset(
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi pi rho sigma "
    "tau upsilon phi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi "
    "Omega".split())
# Characters that need a command inside \mathrm; the braces end command names, so
# `\backslash` can never run into the letters that follow it (`\backslashinput`).
_ESCAPES = {"\\": r"{\backslash}", "{": r"\{", "}": r"\}", "_": r"\_", "%": r"\%",
            "$": r"\$", "#": r"\#", "&": r"\&", "~": r"{\sim}", "^": r"{\wedge}",
            " ": r"\ ", "<": r"{\lt}", ">": r"{\gt}"}
_PLAIN = frozenset(".,;:!?()[]/+-*=@|'")
_SUBSCRIPTED = re.compile(r"([A-Za-z]+?)_?([0-9]+)\Z")


def latex_name(raw: str) -> str:
    """A user's name as a LaTeX symbol that cannot inject commands.

    One letter prints as itself, a Greek letter's name as the letter, either followed by
    digits (optionally after `_`) as a subscript (`W1`, `x_1` -> `W_{1}`, `x_{1}`);
    anything else is upright text, `\\mathrm{...}`, with every special character escaped.
    """
    if len(raw) == 1 and raw.isascii() and raw.isalpha():
        return raw
    if raw in _GREEK:
        return "\\" + raw
    match = _SUBSCRIPTED.match(raw)
    if match:
        stem, digits = match.groups()
        if len(stem) == 1 or stem in _GREEK:
            return f"{latex_name(stem)}_{{{digits}}}"
    return r"\mathrm{" + escaped(raw) + "}"


def escaped(raw: str) -> str:
    """Text with every character that could start a command, a group, a comment or an
    alignment escaped, and anything unusual shown as `?` (non-ASCII letters too: neither
    KaTeX in strict mode nor pdflatex accepts them in math mode)."""
    out = []
    for ch in raw:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif (ch.isascii() and ch.isalnum()) or ch in _PLAIN:
            out.append(ch)
        else:
            out.append("?")      # control characters and other symbols: shown, never run
    return "".join(out)


def operator_name(name: str) -> str:
    r"""An op name as \operatorname{...}, escaped like any other text."""
    return r"\operatorname{" + escaped(name) + "}"


def key_of(obj):
    """The tensor id a tensor or variable is known by in a tape's recording."""
    if isinstance(obj, Variable):
        return obj._handle_id
    if isinstance(obj, Tensor):
        return obj._id
    raise TypeError(f"latex: expected a Tensor or a Variable, got {type(obj).__name__} "
                    f"{obj!r:.60}")


def user_names(names):
    """`names` as ({tensor id: name}, {tensor id: value}). Tensors are unhashable, so a
    dict must be keyed by `.ref()`; a list of (tensor or variable, name) pairs is
    accepted too."""
    if names is None:
        return {}, {}
    items = names.items() if isinstance(names, Mapping) else names
    result, values = {}, {}
    for pair in items:
        try:
            key, name = pair
        except (TypeError, ValueError):
            raise TypeError("latex: names must be a dict keyed by tensor.ref() or a list of "
                            f"(tensor, name) pairs, got the item {pair!r:.60}") from None
        obj = key.deref() if hasattr(key, "deref") else key
        result[key_of(obj)] = str(name)
        if obj._value is not None:
            values[key_of(obj)] = obj._value
    return result, values


def temporary_names(names):
    """t_{1}, t_{2}, ... skipping any name a leaf already has."""
    taken, k = set(names.values()), 0
    while True:
        k += 1
        name = f"t_{{{k}}}"
        if name not in taken:
            yield name


_SOURCE_LETTERS = ("x", "y", "z", "u", "v", "w")
_MATRIX_LETTERS = tuple("ABCDFGHKLMNPQRSUV")     # not E, I, J, O, T: e, identity, ones, 0, ^T


class Namer:
    """Display names of leaves: the user's, the Variable's, or a default.

    Defaults: x, y, z, u, v, w, x_{7}, ... for the sources, then for other watched
    tensors; A, B, C, ... for other leaves with at least two axes larger than 1;
    c_{1}, c_{2}, ... for the remaining leaves. Defaults skip names already in use.
    """

    def __init__(self, tape, user, source_keys, variables=()):
        self.tape, self.user = tape, user
        self.source_keys = list(source_keys)
        # The tape's Variables, and those given as target or sources (maybe unwatched).
        self.variables = dict(tape.recorded.variables)
        self.variables.update((v._handle_id, v) for v in variables)
        self.names = {}

    def explicit(self, key):
        """The name the user or the Variable gives `key`, else None."""
        if self.user.get(key):
            return latex_name(self.user[key])
        variable = self.variables.get(key)
        if variable is not None and variable._name not in ("", "Variable"):
            return latex_name(variable._name)
        return None

    def assign(self, leaves):
        """Name `leaves`, a list of (key, shape), plus the sources (for the left-hand sides)."""
        order, shapes = [], {}
        for key in self.source_keys:
            if key not in shapes:
                order.append(key)
                shapes[key] = None
        for key, shape in leaves:
            if key not in shapes or shapes[key] is None:
                if key not in shapes:
                    order.append(key)
                shapes[key] = shape
        taken = set()
        for key in order:
            name = self.explicit(key)
            if name is not None:
                self.names[key] = name
                taken.add(name)
        pools = {"source": self._pool(_SOURCE_LETTERS, "x", taken),
                 "matrix": self._pool(_MATRIX_LETTERS, "A", taken),
                 "other": self._pool((), "c", taken)}
        sources = set(self.source_keys)
        for key in order:
            if key in self.names:
                continue
            shape = shapes[key] or ()
            if key in sources or self._watched(key):
                kind = "source"
            elif sum(1 for s in shape if s != 1) >= 2:
                kind = "matrix"
            else:
                kind = "other"
            self.names[key] = next(pools[kind])
        return self.names

    def _watched(self, key):
        record = self.tape.recorded.graph.get(key)
        return record is not None and record.attrs.get("kind") == "watched"

    @staticmethod
    def _pool(letters, stem, taken):
        for letter in letters:
            if letter not in taken:
                taken.add(letter)
                yield letter
        k = len(letters) + 1 if letters else 1
        while True:
            name = f"{stem}_{{{k}}}"
            if name not in taken:
                taken.add(name)
                yield name
            k += 1
