"""One trace for every size of an input_signature's None dimensions.

Generated code is specialized to its shapes: a reshape names its target, a mean's
gradient multiplies by 1/n. To serve every size from one trace, a function whose
`input_signature` has None dimensions is traced at the first call's sizes and three
times more at probe sizes (the same data, resized along those dimensions;
`probe_sizes`).
The generated programs are compared token by token. Where they differ only in
numbers that follow a None dimension's size d — d itself, c*d, c/d or d + c, with the
same c at every size — those numbers are rewritten as expressions of the
argument's shape, read when the program runs, and that one program serves every size.
Anything else (another branch taken, another structure, an embedded array, a number
no such form fits) leaves the program specialized: a new size traces again.

When the first call's size prints differently (a power of two: the simplifier writes
x / 4 as 0.25 * x), the three probes alone decide. The probes run the Python function
(its side effects included) three more times on the first call, as TensorFlow may run
a function more than once per trace; they are not counted by
`experimental_get_tracing_count`. Inside the function, the arguments' static
`shape` holds None for their None dimensions, as in TensorFlow, so sizes are read
with `tf.shape(x)` (a tensor computed per call), not baked in through Python.

The comparison itself (`sized_source`) reads source text only: `tapec.export` runs it on
the modules it writes for TensorSpec example arguments (tapec/export/sizes.py).
"""
from __future__ import annotations

import ast
import io
import tokenize

import numpy as np

from .. import nest
from ..codegen.compiled import Compiled
from ..codegen.emit import compile_function
from ..tensor import Tensor
from .calls import value_of
from .program import Trace

_RELATIVE = 1e-6      # numbers may be printed from float32 values


def none_dimensions(specs) -> list:
    """(leaf index, axis) of every None dimension of a flattened input_signature."""
    dims = []
    for leaf, spec in enumerate(nest.flatten(list(specs))):
        shape = spec._shape
        if shape is not None:
            dims.extend((leaf, axis) for axis, d in enumerate(shape) if d is None)
    return dims


def sizes_of(leaves, dims) -> dict:
    """(leaf, axis) -> its size in this call."""
    return {(leaf, axis): int(np.shape(value_of(leaves[leaf]))[axis]) for leaf, axis in dims}


def probe_sizes(sizes: dict) -> list:
    """Three maps actual size -> probe size: about n + 1, 2n + 3 and 3n + 5 (a neighbour,
    and ones far enough that integer division, parity and thresholds in between show),
    none a power of two (whose reciprocal is exact, which the simplifier prints another
    way) and each distinct from every actual size and from each other, so a number
    tells which size it follows."""
    actual = sorted(set(sizes.values()))
    probes, taken = [], set(actual)
    for step in (lambda n: n + 1, lambda n: 2 * n + 3, lambda n: 3 * n + 5):
        chosen = {}
        for n in actual:
            m = step(n)
            while m in taken or m & (m - 1) == 0:
                m += 1
            chosen[n] = m
            taken.add(m)
        probes.append(chosen)
    return probes


def resized(leaves, sizes: dict, probe: dict) -> list:
    """The leaves with each None dimension resized to its probe size, repeating the data
    cyclically along it (so values stay like the caller's)."""
    out = list(leaves)
    for (leaf, axis), n in sizes.items():
        array = value_of(out[leaf])
        index = np.arange(probe[n]) % n
        out[leaf] = Tensor._eager(np.take(array, index, axis=axis))
    return out


def generalize(traces: list, size_maps: list, dims: list, sizes: dict) -> Trace | None:
    """One Trace for every size, from `traces` (compiled at the sizes of `size_maps`,
    each actual size -> the size that trace used), or None when they differ otherwise."""
    first = traces[0]
    for other in traces[1:]:
        if other.feeds != first.feeds or other.n_guards != first.n_guards or \
                other.dtypes != first.dtypes or \
                [id(v) for v in other.written] != [id(v) for v in first.written] or \
                len(other.captured) != len(first.captured) or any(
                    not np.array_equal(a, b) for a, b in zip(other.captured, first.captured)) \
                or other.streams is not first.streams or \
                [p for p, _ in other.prints] != [p for p, _ in first.prints]:
            return None
    symbols = sorted(set(sizes.values()))            # one symbol per distinct actual size
    source = sized_source([t.source for t in traces], size_maps, symbols)
    if source is None:
        return None
    if source == first.source:
        return first                 # no number follows a size: the program is generic
    source = _bind_sizes(source, first.feeds, dims, sizes, symbols)
    if source is None:
        return None
    entry = Compiled(compile_function(source, "function"), source, tuple(first.feeds),
                     first.entry.title)
    return Trace(entry, first.captured, first.variables, first.n_guards, first.structure,
                 first.dtypes, first.written, first.streams, first.prints)


def sized_source(sources: list, size_maps: list, symbols: list, bound=False) -> str | None:
    """`sources[0]` with each number that follows a size written as an expression of the
    size symbols `_size{k}` (`symbols[k]` an actual size; `size_maps[i]` maps it to the
    size `sources[i]` was made at); `sources[0]` itself when no number differs; None when
    the sources differ in another way (their structure, a guard, a number no form fits).
    With `bound`, the sources bind the symbols themselves; else no name in them may be
    one.

    The sources are compared token by token; a guard (an `if` whose body only returns None
    or raises) may not differ: its value was read by Python, which may have used it in
    ways that three sizes cannot show (min(n, 1000))."""
    streams = [_tokens(source) for source in sources]
    if any(len(s) != len(streams[0]) for s in streams):
        return None
    guards = _guard_rows(sources[0])
    replacements = []
    for tokens in zip(*streams):
        if len({(tok.type, tok.string) for tok in tokens}) == 1:
            continue
        if any(tok.type != tokenize.NUMBER for tok in tokens) or tokens[0].start[0] in guards:
            return None
        values = [ast.literal_eval(tok.string) for tok in tokens]
        expression = _fit(values, symbols, size_maps)
        if expression is None:
            return None
        replacements.append((tokens[0].start, tokens[0].end, expression))
    if not replacements:
        return sources[0]
    taken = {tok.string for tok in streams[0] if tok.type == tokenize.NAME}
    if not bound and any(f"_size{k}" in taken for k in range(len(symbols))):
        return None
    return _rewrite(sources[0], replacements)


def _guard_rows(source) -> set:
    """The lines of the guards' tests (`if <test>: return None`, or `raise` in an
    exported module)."""
    rows = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.If) and len(node.body) == 1 and (
                isinstance(node.body[0], ast.Raise) or (
                    isinstance(node.body[0], ast.Return) and
                    isinstance(node.body[0].value, ast.Constant) and
                    node.body[0].value.value is None)):
            rows.update(range(node.lineno, node.test.end_lineno + 1))
    return rows


def _tokens(source):
    return [tok for tok in tokenize.generate_tokens(io.StringIO(source).readline)
            if tok.type not in (tokenize.COMMENT, tokenize.NL)]


def _fit(values, symbols, size_maps):
    """An expression of a size symbol `_size{k}` that gives each trace's value, or None."""
    is_int = all(isinstance(v, int) for v in values)
    for k, n in enumerate(symbols):
        sizes = [m[n] for m in size_maps]
        name = f"_size{k}"
        candidates = [(name, lambda d: d), ]
        c = values[0] / sizes[0]
        candidates.append((f"({_number(c, is_int)} * {name})", lambda d, c=c: c * d))
        if not is_int:
            c = values[0] * sizes[0]
            candidates.append((f"({_number(c, False)} / {name})", lambda d, c=c: c / d))
        c = values[0] - sizes[0]
        candidates.append((f"({name} + {_number(c, is_int)})", lambda d, c=c: d + c))
        for text, form in candidates:
            if is_int and not float(form(sizes[0])).is_integer():
                continue
            if all(_close(form(d), v, is_int) for d, v in zip(sizes, values)):
                if text == name and not is_int:
                    text = f"float({name})"
                return text
    return None


def _number(c, is_int):
    if is_int:
        return repr(int(round(c)))
    nearest = round(c)
    if abs(c - nearest) <= 1e-12 * max(1.0, abs(c)):
        c = float(nearest)
    return repr(float(c))


def _close(got, want, is_int):
    if is_int:
        return float(got).is_integer() and int(got) == want
    return abs(got - want) <= _RELATIVE * max(abs(want), 1e-300)


def _rewrite(source, replacements):
    lines = source.split("\n")
    for (row, col), (end_row, end_col), text in sorted(replacements, reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + text + line[end_col:]
    return "\n".join(lines)


def _bind_sizes(source, feeds, dims, sizes, symbols):
    """Read each size symbol from its argument's shape at the top of the function."""
    tree = ast.parse(source)
    function = next((node for node in tree.body if isinstance(node, ast.FunctionDef)), None)
    if function is None:
        return None
    params = [a.arg for a in function.args.args]
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    bindings = []
    for k, n in enumerate(symbols):
        name = f"_size{k}"
        if name not in names:
            continue                 # this size appears in no number of the program
        leaf, axis = next(d for d in dims if sizes[d] == n)
        position = feeds.index(("arg", leaf)) if ("arg", leaf) in feeds else None
        if position is None:
            return None
        bindings.append(f"{name} = {params[position]}.shape[{axis}]")
    first = function.body[0]
    lines = source.split("\n")
    indent = lines[first.lineno - 1][:first.col_offset]
    lines[first.lineno - 1:first.lineno - 1] = [indent + b for b in bindings]
    return "\n".join(lines)
