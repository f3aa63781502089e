"""Where the user's code recorded an op, and what that line named the result.

A tape keeps, per recorded op, the user's frame position as `(code object, instruction
offset)`: two references, no string work, taken on the recording path. Everything
readable is derived from it later, on a cache miss, when generated code is printed:

    describe(site)   -> ("train.py", 12)       the file and line of the instruction
    assigned(site)   -> "h"                   the variable of `h = tf.matmul(x, w)`

`assigned` reads the line's source (linecache) and finds the expression the instruction
computes: the op's result has a name only when that expression is the whole right-hand
side of an assignment to one plain name (`h = x @ w`; not `loss = tf.reduce_sum(t)`'s
inner `t` or `a, b = ...`).
"""
from __future__ import annotations

import ast
import functools
import linecache
import os
import sys

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_NUMPY = f"{os.sep}numpy{os.sep}"
_INSIDE = {}        # code object -> whether it is tapec's (or NumPy's) own


def capture():
    """(code, instruction offset) of the innermost frame outside tapec and NumPy, or None."""
    frame = sys._getframe(2)
    inside = _INSIDE
    while frame is not None:
        code = frame.f_code
        known = inside.get(code)
        if known is None:
            filename = code.co_filename
            known = inside[code] = os.path.abspath(filename).startswith(_PACKAGE) or \
                _NUMPY in filename
        if not known:
            return code, frame.f_lasti
        frame = frame.f_back
    return None


def _position(site):
    """(line, end line, column, end column) of the site's instruction (None: unknown)."""
    code, offset = site
    positions = getattr(code, "co_positions", None)
    if positions is None:                       # Python 3.10: the line only
        line = _line_of_offset(code, offset)
        return line, line, None, None
    for k, position in enumerate(positions()):
        if 2 * k == offset:
            return position
    return None, None, None, None


def _line_of_offset(code, offset):
    line = code.co_firstlineno
    for start, _, number in code.co_lines():
        if start > offset:
            break
        if number is not None:
            line = number
    return line


def describe(site):
    """(file name, line number) of a site; line 0 when it is not known."""
    line = _position(site)[0]
    return site[0].co_filename, line or 0


@functools.lru_cache(maxsize=4096)
def assigned(site):
    """The plain name the site's line assigns the op's result to, or None."""
    for node, is_site in _parsed(site):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name) and is_site(node.value):
            return node.targets[0].id
    return None


@functools.lru_cache(maxsize=4096)
def argument(site):
    """The plain name passed as the only argument of the site's call (`tape.watch(x)`:
    "x"), or None."""
    for node, is_site in _parsed(site):
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords and \
                isinstance(node.args[0], ast.Name) and is_site(node):
            return node.args[0].id
    return None


def _parsed(site):
    """(every node of the statement holding the site, a test whether an expression is
    the site's instruction), from the source file as linecache has it; () where the file
    or the instruction's columns are unknown or the statement does not parse alone."""
    line, end_line, column, end_column = _position(site)
    if None in (line, end_line, column, end_column):
        return ()
    lines = linecache.getlines(site[0].co_filename)
    statement = _statement_at(lines, line) if end_line <= len(lines) else None
    if statement is None:
        return ()
    tree, first = statement
    span = (line, column, end_line, end_column)

    def is_site(node):
        return (node.lineno + first - 1, node.col_offset,
                node.end_lineno + first - 1, node.end_col_offset) == span
    return [(node, is_site) for node in ast.walk(tree)]


def _statement_at(lines, line):
    """(the statement that starts on `line`, parsed; the file's line of the parse's line
    1) for a simple statement, else None. An indented line is parsed under an
    `if 1:` so that columns stay those of the file; a call spread over several lines is
    parsed with the lines after it."""
    text = lines[line - 1]
    indented = text[:1].isspace()
    for end in range(line, min(line + 20, len(lines)) + 1):
        try:
            tree = ast.parse(("if 1:\n" if indented else "") + "".join(lines[line - 1:end]))
        except SyntaxError:
            continue
        return tree, line - 1 if indented else line
    return None


def annotate(recording, ids, nodes) -> None:
    """Give the nodes lowered from recorded `ids` ({id: node}) the origin and the name
    of what the user wrote: `(op, call site)`, and the variable a result was assigned
    to (or a watched tensor's name in `tape.watch(x)`). A result read by an op recorded
    at the same site (`tf.tanh` inside `loss = tf.reduce_sum(tf.tanh(h))`, an op inside
    a composite function) is not the assigned value, and keeps no name."""
    site_of = recording.sites
    read_here = set()
    for tensor_id in ids:
        site = site_of.get(tensor_id)
        if site is not None:
            read_here.update(i for i in recording[tensor_id].inputs if site_of.get(i) == site)
    variables = recording.names
    for tensor_id in ids:
        node, record, site = nodes[tensor_id], recording[tensor_id], site_of.get(tensor_id)
        if record.inputs and node.origin is None:
            node.origin = (record.op.name, site)
        if node.label is not None:
            continue
        if tensor_id in variables:
            node.label = _variable_name(variables[tensor_id])
        elif record.op.name == "read_variable" and record.inputs[0] in variables:
            node.label = _variable_name(variables[record.inputs[0]])
        elif site is not None and tensor_id not in read_here:
            node.label = assigned(site) if record.inputs else argument(site)


def _variable_name(name):
    """A Variable's own name (`dense/kernel` -> `kernel`), None for the default one."""
    name = name.rsplit("/", 1)[-1]
    return None if name == "Variable" else name
