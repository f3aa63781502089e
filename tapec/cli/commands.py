"""The `tapec latex`, `tapec export` and `tapec graph` commands.

Each takes `FILE.py:FUNC` and one `--arg NAME=SPEC` per argument of FUNC, where SPEC is
`DTYPE[DIMS]` (`float64[3]`, `float32[2,3]`, `float64[]` for a 0-d tensor) or a Python
number (`2.5`, `3`). Tensor arguments are filled with reproducible normal samples
(seed 0, offset by the argument's position), so the command records what FUNC does on
arrays of those shapes. For `tapec export` a dimension may be `None` (`float64[None,5]`):
the argument is then `tapec.TensorSpec([None, 5], tapec.float64)`, and the module takes
any size there (docs/export.md "Every batch size from one export"). Problems with the command line — a missing file or function, a
malformed spec — print one line and exit with status 2.
"""
from __future__ import annotations

import importlib.util
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np

_SPEC = re.compile(r"^(?P<name>[A-Za-z_]\w*)=(?P<value>.+)$")
_TENSOR = re.compile(r"^(?P<dtype>[a-z]+[0-9]*)\[(?P<dims>[0-9A-Za-z,\s]*)\]$")


class UsageError(Exception):
    """A problem with the command line: reported in one line, exit status 2."""


def load_function(target: str):
    """The function FUNC of FILE.py, from 'FILE.py:FUNC'."""
    if ":" not in target:
        raise UsageError(f"expected FILE.py:FUNC, got {target!r}")
    path_text, func_name = target.rsplit(":", 1)
    path = pathlib.Path(path_text)
    if not path.is_file():
        raise UsageError(f"no such file: {path_text}")
    spec = importlib.util.spec_from_file_location(f"tapec_user_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.resolve().parent))
    try:
        spec.loader.exec_module(module)
    except Exception as e:       # the user's module failed to import: say so in one line
        raise UsageError(f"importing {path_text} failed: {type(e).__name__}: {e}") from None
    finally:
        sys.path.pop(0)
    fn = getattr(module, func_name, None)
    if not callable(fn):
        raise UsageError(f"{path_text} has no function {func_name!r}")
    return fn


def parse_args(specs, fn, none_dims=False) -> tuple:
    """Example arguments from `--arg NAME=SPEC` strings, in FUNC's parameter order; with
    `none_dims`, a tensor with a `None` dimension is a TensorSpec (tapec export)."""
    import inspect
    values = {}
    for position, text in enumerate(specs or []):
        match = _SPEC.match(text.strip())
        if not match:
            raise UsageError(f"malformed --arg {text!r}: expected NAME=DTYPE[DIMS] or "
                             "NAME=NUMBER")
        values[match["name"]] = _value(match["value"].strip(), position, text, none_dims)
    try:
        parameters = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        parameters = list(values)
    missing = [p for p in parameters if p not in values]
    unknown = [v for v in values if v not in parameters]
    if unknown:
        raise UsageError(f"--arg names {unknown} are not parameters of the function "
                         f"({parameters})")
    if missing:
        raise UsageError(f"missing --arg for parameter(s) {missing}")
    return parameters, tuple(values[p] for p in parameters)


def _value(text, position, whole, none_dims=False):
    tensor = _TENSOR.match(text)
    if tensor:
        try:
            dtype = np.dtype(tensor["dtype"])
        except TypeError:
            raise UsageError(f"unknown dtype {tensor['dtype']!r} in --arg {whole!r}") from None
        dims = [d for d in tensor["dims"].replace(" ", "").split(",") if d]
        bad = [d for d in dims if not d.isdigit() and d != "None"]
        if bad:
            raise UsageError(f"malformed --arg {whole!r}: a dimension is a size or None, "
                             f"got {bad[0]!r}")
        shape = tuple(None if d == "None" else int(d) for d in dims)
        if None in shape:
            if not none_dims:
                raise UsageError(f"--arg {whole!r}: a None dimension (any size) is for "
                                 "tapec export; this command records FUNC on arrays, so "
                                 "give every size")
            import tapec
            return tapec.TensorSpec(shape, dtype)
        rng = np.random.default_rng(position)
        return rng.normal(size=shape).astype(dtype)
    try:
        return int(text) if re.fullmatch(r"[-+]?\d+", text) else float(text)
    except ValueError:
        raise UsageError(f"malformed --arg {whole!r}: expected NAME=DTYPE[DIMS] or "
                         "NAME=NUMBER") from None


def latex_command(target, arg_specs, wrt=None) -> str:
    """LaTeX of FUNC's value and of its derivative with respect to `wrt` (all tensors by
    default)."""
    import tapec
    fn = load_function(target)
    names, args = parse_args(arg_specs, fn)
    tensors = [tapec.constant(a) if isinstance(a, np.ndarray) else a for a in args]
    chosen = wrt or [n for n, a in zip(names, args) if isinstance(a, np.ndarray)]
    for w in chosen:
        if w not in names:
            raise UsageError(f"--wrt {w!r} is not a parameter ({names})")
    sources = [tensors[names.index(w)] for w in chosen]
    pairs = [(t, n) for t, n in zip(tensors, names) if isinstance(t, tapec.Tensor)]
    with tapec.GradientTape(persistent=True) as tape:
        for t, _ in pairs:
            tape.watch(t)
        result = fn(*tensors)
    value = tape.latex(result, names=pairs)
    derivative = tape.latex(result, sources, names=pairs)
    return f"{_label(fn)} = {value}\n\nderivative:\n{derivative}"


def _label(fn) -> str:
    """FUNC's name for the output: as written when it is a plain ASCII identifier, else
    escaped by the LaTeX printer (a file may give its function any `__name__`: a newline,
    a terminal escape or `\\input` must not reach the output)."""
    from ..export.latex import latex_name
    name = str(getattr(fn, "__name__", "f"))
    return name if name.isascii() and name.isidentifier() else latex_name(name)


def export_command(target: str, arg_specs: list[str], output: str,
                   wrt: list[str] | None = None) -> str:
    """Write OUT.py with FUNC and its gradient with respect to the parameters `wrt`, in
    that order (the first parameter by default, as `tapec.export`)."""
    import tapec
    fn = load_function(target)
    names, args = parse_args(arg_specs, fn, none_dims=True)
    if not output:
        raise UsageError("needs -o OUT.py")
    argnums = 0 if not wrt else _argnums(wrt, names, args)
    tapec.export(fn, args, output, argnums=argnums)
    return f"wrote {output}"


def _argnums(wrt, names, args):
    """`tapec.export`'s argnums for the parameter names `wrt`: an int for one name (the
    gradient is one array), a tuple for several."""
    positions = []
    for w in wrt:
        if w not in names:
            raise UsageError(f"--wrt {w!r} is not a parameter ({names})")
        if w in wrt[:len(positions)]:
            raise UsageError(f"--wrt {w!r} is given twice")
        k = names.index(w)
        if isinstance(args[k], (int, float)):
            raise UsageError(f"--wrt {w!r}: a gradient is taken with respect to tensors; "
                             f"{w} is the number {args[k]!r} (give it as DTYPE[DIMS])")
        positions.append(k)
    return positions[0] if len(positions) == 1 else tuple(positions)


def graph_command(target, arg_specs, output) -> str:
    """The recorded DAG and the simplified gradient DAG, as DOT (and SVG/PNG through
    Graphviz's `dot` or matplotlib when installed)."""
    import tapec
    from .. import engine
    fn = load_function(target)
    names, args = parse_args(arg_specs, fn)
    if not output:
        raise UsageError("needs -o OUT.dot|OUT.svg|OUT.png")
    suffix = pathlib.Path(output).suffix.lower()
    if suffix not in (".dot", ".svg", ".png"):
        # main() prefixes "tapec graph: " to every UsageError: not repeated here.
        raise UsageError(f"-o must end in .dot, .svg or .png, got {output!r}")
    tensors = [tapec.constant(a) if isinstance(a, np.ndarray) else a for a in args]
    watched = [t for t in tensors if isinstance(t, tapec.Tensor)]
    with tapec.GradientTape(persistent=True) as tape:
        for t in watched:
            tape.watch(t)
        result = fn(*tensors)
    label = {t._id: n for t, n in zip(tensors, names) if isinstance(t, tapec.Tensor)}
    recorded = tape.graph
    request = engine.Request([result], [t._id for t in watched], [t._dtype for t in watched],
                             [t._shape for t in watched], [None])
    outputs, leaves = engine.symbolic(tape, request)
    dot = _dot(recorded, label, outputs, leaves)
    dot_path = pathlib.Path(output).with_suffix(".dot")
    dot_path.write_text(dot)
    if suffix == ".dot":
        return f"wrote {dot_path}"
    return _render(dot_path, pathlib.Path(output), suffix, recorded)


def _dot(recorded, label, outputs, leaves) -> str:
    """DOT text with two clusters: what was recorded, and its simplified gradient."""
    lines = ["digraph tapec {", "  rankdir=TB;", '  node [shape=box, fontname="monospace"];',
             '  subgraph cluster_recorded { label="recorded";']
    for node_id, data in recorded.nodes(data=True):
        text = label.get(node_id, data["op"].name)
        lines.append(f'    r{node_id} [label="{_quoted(text)}\\n{data["shape"]}"];')
    for a, b in recorded.edges():
        lines.append(f"    r{a} -> r{b};")
    lines += ["  }", '  subgraph cluster_gradient { label="gradient (simplified)";']
    from ..ir.nodes import topological_order
    order = topological_order([o for o in outputs if o is not None])
    ids = {node: k for k, node in enumerate(order)}
    for node, k in ids.items():
        text = label.get(leaves.get(node), node.op.name)
        lines.append(f'    g{k} [label="{_quoted(text)}\\n{node.shape}"];')
        for parent in node.inputs:
            lines.append(f"    g{ids[parent]} -> g{k};")
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"


def _quoted(text) -> str:
    return str(text).replace("\\", "\\\\").replace('"', '\\"')


def _render(dot_path, output, suffix, recorded) -> str:
    dot = shutil.which("dot")
    if dot:
        subprocess.run([dot, f"-T{suffix[1:]}", str(dot_path), "-o", str(output)], check=True)
        return f"wrote {dot_path} and {output}"
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError(f"rendering {suffix} needs Graphviz (`dot`) or matplotlib "
                         f"(pip install 'tapec[graph]'); wrote {dot_path}") from None
    from ..ir.graph import draw
    figure = plt.figure(figsize=(8, 6))
    draw(recorded, figure.gca())
    figure.savefig(output, format=suffix[1:])
    plt.close(figure)
    return f"wrote {dot_path} and {output} (matplotlib: the recorded DAG)"
