"""How an exported module's text is laid out: lines within WIDTH, exact literals.

* `wrapped` breaks a long statement after a comma inside brackets (never in a string);
* `array_source` writes an embedded array as a decimal `np.array` literal, checked by
  reading it back, or as its bytes in hex: either way equal to the array bit for bit;
* `pack` writes a function's result structure around the names of its leaves;
* `display` and `doc_safe` are the only ways user text reaches a comment or docstring.
"""
from __future__ import annotations

import textwrap

import numpy as np

from ..ops.literals import python_literal

WIDTH = 100                 # the longest line the module should have (literals are wrapped)
LITERAL_MAX_ELEMENTS = 100  # larger constants are embedded as hex bytes, not decimals


# Here, in the module every other export module imports, so each can raise it;
# tapec.export.module re-exports it as part of its API.
class ExportError(TypeError):
    """Raised when a recording cannot be written as a standalone module."""


def display(raw, limit=40) -> str:
    """User text for a docstring or comment: letters, digits and ` _.:-` kept, anything
    else shown as `?`, so it can neither end the docstring nor start a line of code."""
    text = "".join(ch if (ch.isascii() and ch.isalnum()) or ch in " _.:-" else "?"
                   for ch in str(raw))
    return text if len(text) <= limit else text[:limit - 3] + "..."


def doc_safe(text: str) -> str:
    """Text (LaTeX) for the raw docstring: printable ASCII and newlines only, and no
    double quote, so nothing can close the docstring."""
    return "".join(ch if ch == "\n" or " " <= ch <= "~" else "?"
                   for ch in text.replace('"', "'"))


def dtype_source(dtype) -> str:
    name = np.dtype(dtype).name
    return "np.bool_" if name == "bool" else f"np.{name}"


def _tokens(value) -> list:
    """Each element as the shortest literal that round-trips in its dtype."""
    tokens = []
    for item in value.reshape(-1):
        if value.dtype.kind == "c":        # written out: python_literal's `(a + (b)j)` for a
            tokens.append(f"complex({_tokens(item.real)[0]}, {_tokens(item.imag)[0]})")
            continue                       # negative b is not Python
        text = python_literal(item)
        if text.startswith("(-"):
            text = text[1:-1]              # a list needs no parentheses around -0.5
        tokens.append(text)
    return tokens


def _nested(tokens, shape, indent, force=False) -> list:
    """Lines of a nested list literal of `tokens` (flat, C order) with `shape`, for a
    place indented by `indent`; one line where it fits (and `force` is off)."""
    if len(shape) == 1:
        line = "[" + ", ".join(tokens) + "]"
        if not force and len(indent) + len(line) + 1 <= WIDTH:
            return [line]
        wrapped = textwrap.wrap(", ".join(tokens) + ",", WIDTH - len(indent) - 4,
                                break_long_words=False, break_on_hyphens=False)
        return ["["] + ["    " + w for w in wrapped] + ["]"]
    step = len(tokens) // shape[0]
    lines = ["["]
    for i in range(shape[0]):
        inner = _nested(tokens[i * step:(i + 1) * step], shape[1:], indent + "    ")
        inner[-1] += ","
        lines += ["    " + line for line in inner]
    return lines + ["]"]


def array_source(value: np.ndarray, prefix: str = "") -> list:
    """Lines of `prefix` followed by an expression equal to `value` bit for bit: a decimal
    `np.array` literal for small arrays (checked by evaluating it), else the raw bytes as
    hex."""
    dtype = dtype_source(value.dtype)
    if value.size == 0:
        return [f"{prefix}np.zeros({value.shape}, dtype={dtype})"]
    if value.size <= LITERAL_MAX_ELEMENTS and value.dtype.kind in "biufc":
        tokens = _tokens(value)
        one_line = f"{prefix}np.array({', '.join(tokens)}, dtype={dtype})" if value.ndim == 0 \
            else f"{prefix}np.array([{', '.join(tokens)}], dtype={dtype})"
        if value.ndim == 0 or (value.ndim == 1 and len(one_line) <= WIDTH):
            lines = [one_line]
        else:
            body = _nested(tokens, value.shape, "", force=True)
            lines = [f"{prefix}np.array({body[0]}", *body[1:-1], f"{body[-1]}, dtype={dtype})"]
        expression = "\n".join([lines[0][len(prefix):], *lines[1:]])
        try:
            rebuilt = eval(compile(expression, "<literal>", "eval"), {"np": np})
        except (SyntaxError, ValueError, TypeError, OverflowError):
            rebuilt = np.empty(0)      # not a literal Python reads back: use the bytes
        if rebuilt.dtype == value.dtype and rebuilt.shape == value.shape and \
                rebuilt.tobytes() == value.tobytes():
            return lines
    # Hex needs no import (base64 would); the little-endian bytes are exact for any dtype.
    little = value.astype(value.dtype.newbyteorder("<"))
    hexed = little.tobytes().hex()
    chunk = WIDTH - 12
    lines = [f"{prefix}np.frombuffer(bytes.fromhex("]
    lines += [f'    "{hexed[i:i + chunk]}"' for i in range(0, len(hexed), chunk)]
    lines.append(f'), dtype="{little.dtype.str}").astype({dtype}).reshape({value.shape})')
    return lines


def pack(structure, names) -> str:
    """Python source of `structure` (the function's result) with its leaves replaced, in
    nest's order, by `names`."""
    if isinstance(structure, dict):
        for key in structure:
            if type(key) not in (str, int):  # ascii() of another object runs its __repr__
                raise ExportError(f"tapec.export: a result dict key must be a str or an "
                                  f"int, got a {display(type(key).__name__)}")
        return "{" + ", ".join(f"{key!a}: {pack(structure[key], names)}"
                               for key in sorted(structure)) + "}"
    if isinstance(structure, (list, tuple)):
        items = [pack(item, names) for item in structure]
        if isinstance(structure, list):
            return "[" + ", ".join(items) + "]"
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    return next(names)


def wrapped(line) -> list:
    """`line` broken after commas inside brackets (never inside a string) so that each
    piece fits in WIDTH where it can; continuation lines are indented 8 more."""
    pieces, indent = [], " " * (len(line) - len(line.lstrip()) + 8)
    while len(line) > WIDTH:
        depth, quote, cut = 0, None, None
        for i, ch in enumerate(line):
            if quote:
                quote = None if ch == quote and line[i - 1] != "\\" else quote
            elif ch in "'\"":
                quote = ch
            elif ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            elif ch == "," and depth > 0 and line[i + 1:i + 2] == " " and i < WIDTH:
                cut = i + 1
        if cut is None or not line[cut:].strip():
            break
        pieces.append(line[:cut].rstrip())
        line = indent + line[cut:].lstrip()
    return pieces + [line]


def wrapped_return(expression) -> list:
    line = f"    return {expression}"
    # Parenthesized, the tuple is the same and may break after any of its commas.
    return [line] if len(line) <= WIDTH else wrapped(f"    return ({expression})")
