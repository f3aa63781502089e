"""Standalone NumPy modules: a function, its gradient, jacobian and Hessian, in one file.

    tapec.export(loss, (x, w), "loss_module.py", argnums=1, hessian=True)

writes a module that needs only NumPy and defines, for the signature of the example
arguments, `loss(x, w)`, `grad_loss(x, w)`, `value_and_grad_loss(x, w)` and, when asked,
`jacobian_loss(x, w)` and `hessian_loss(x, w)`. docs/export.md shows one.

How the module is made:

* `f` is traced once on the example arguments (`tapec.function.lower`): every output
  and derivative is built symbolically from that one trace, simplified with the exact
  rewrites ("fast": no elementwise fusion, so every line is one op of the recording and
  numexpr is never needed), and printed by `_Module`, which reuses each op's NumPy
  template but names values itself.
* Nothing of tapec is left: each function recomputes its forward values from its
  arguments; constants the function captured and Variables it read are embedded as
  module-level arrays (a snapshot taken at export time, exact to the bit); guards of
  Python control flow raise ValueError instead of asking for a retrace.
* Every identifier is made here. User-given names (the function's, its parameters',
  Variables' and closure variables') are reduced to ASCII identifiers; in the docstring
  and comments they appear only through `_display`, which keeps a few safe characters.
  The docstring is raw and holds no double quote, so no text can end it early. An audit
  of the finished source (`_audit`) allows no import but numpy (and math where an op
  needs it: erf).
"""
from __future__ import annotations

import ast
import builtins
import inspect
import keyword
import os
import re
import textwrap

import numpy as np

from .._version import __version__
from ..autodiff.reverse import gradient_nodes
from ..codegen.emit import GENERATED_GLOBALS
from ..codegen.literals import python_literal
from ..tracing.calls import signature
from ..function import _plain, lower
from ..tracing.recorder import GUARD, guard_test
from ..ir.nodes import topological_order
from ..ops.shape import CONSTANT, PLACEHOLDER, fill
from ..simplify import simplify
from ..tensor import Tensor, Variable

__all__ = ["export"]

WIDTH = 100                 # the longest line the module should have (literals are wrapped)
LITERAL_MAX_ELEMENTS = 100  # larger constants are embedded as hex bytes, not decimals
SIMPLIFY_MODE = "fast"      # exact rewrites only: one op per line, no numexpr

# Shorter spellings of long op names, for the names of values (`xent_3`, not
# `softmax_cross_entropy_with_logits_3`, which would push lines past the width).
_SHORT = {"reduce_sum": "sum", "reduce_max": "max", "reduce_min": "min",
          "reduce_prod": "prod", "reduce_logsumexp": "logsumexp",
          "softmax_cross_entropy_with_logits": "xent", "log_abs_determinant": "logabsdet",
          "matrix_determinant": "det", "determinant_sign": "det_sign",
          "matrix_inverse": "inv", "matrix_solve": "solve", "matrix_diag": "diag",
          "matrix_diag_part": "diag_part", "broadcast_to": "broadcast",
          "read_variable": "read", "custom_gradient_result": "custom"}

# Names generated code uses that a user-derived name must never shadow.
_RESERVED = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | \
    frozenset(dir(builtins)) | GENERATED_GLOBALS


class ExportError(TypeError):
    """Raised when a recording cannot be written as a standalone module."""


def export(f, example_args, path, *, argnums=0, jacobian=False, hessian=False, name=None):
    """Write a standalone NumPy module for `f` traced on `example_args`; returns its source.

    `example_args` is a tuple of arguments (tensors, NumPy arrays, Variables, Python
    numbers; a single array may be given bare). The module defines `<name>(...)` and,
    when `f` returns a floating scalar, `grad_<name>` and `value_and_grad_<name>` with
    respect to the argument(s) `argnums`; `jacobian_<name>` and `hessian_<name>` when
    asked. `name` defaults to `f.__name__`. A function whose result is not a floating
    scalar can be exported with `jacobian=True` (no gradient functions are written).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"tapec.export: path must be a str or os.PathLike naming the file to "
                        f"write, got {type(path).__name__} {path!r:.60}")
    fn = _plain(f)
    if not callable(fn):
        raise TypeError(f"tapec.export: expected a callable, got {type(fn).__name__}")
    args = tuple(example_args) if isinstance(example_args, (tuple, list)) else (example_args,)
    signature(args, arrays_only=True)   # the argument check of tapec.function
    low = lower(fn, args, argnums)
    if low.effects:
        names = ", ".join(sorted({repr(v.name) for v, _ in low.effects}))
        raise ExportError(f"tapec.export: the function assigns Variable(s) {names}; an "
                          "exported module is a pure function of its arguments and holds no "
                          "Variables. Export the update as a function that returns the new "
                          "values instead (see docs/export.md)")
    module = _Module(low, fn, args, _function_name(fn, name), jacobian, hessian)
    source = module.source()
    _audit(source)
    with open(os.fspath(path), "w", encoding="utf-8") as handle:
        handle.write(source)
    return source


# --- names ---------------------------------------------------------------------------------

def _identifier(raw, fallback: str) -> str:
    """An ASCII identifier made from user text: other characters become `_`; no leading
    underscore (those are the module's own helpers), no keyword, builtin or `np`."""
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", str(raw)).strip("_")
    cleaned = re.sub(r"__+", "_", cleaned)[:40].rstrip("_") or fallback
    if cleaned[0].isdigit():
        cleaned = f"{fallback}_{cleaned}"
    if cleaned in _RESERVED:
        cleaned = f"{cleaned}_"
    return cleaned


def _parameter_names(fn, count) -> list:
    """The names of `fn`'s first `count` parameters as written (`arg<i>` where unknown)."""
    try:
        names = [p.name for p in inspect.signature(fn).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    return [names[i] if i < len(names) else f"arg{i}" for i in range(count)]


def _function_name(fn, name) -> str:
    if name is None:
        name = getattr(fn, "__name__", "f")
        if name == "<lambda>":
            name = "f"
    return _identifier(name, "f")


def _display(raw, limit=40) -> str:
    """User text for a docstring or comment: letters, digits and ` _.:-` kept, anything
    else shown as `?`, so it can neither end the docstring nor start a line of code."""
    text = "".join(ch if (ch.isascii() and ch.isalnum()) or ch in " _.:-" else "?"
                   for ch in str(raw))
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _doc_safe(text: str) -> str:
    """Text (LaTeX) for the raw docstring: printable ASCII and newlines only, and no
    double quote, so nothing can close the docstring."""
    return "".join(ch if ch == "\n" or " " <= ch <= "~" else "?"
                   for ch in text.replace('"', "'"))


class _Names:
    """Hands out unique identifiers. Templates of some ops derive `<name>_shift` from a
    value's name, so a name is free only if its `_shift` form is free too."""

    def __init__(self):
        self.taken = set(_RESERVED)

    def free(self, candidate) -> bool:
        return candidate not in self.taken and candidate + "_shift" not in self.taken

    def claim(self, base) -> str:
        candidate, k = base, 2
        while not self.free(candidate):
            candidate, k = f"{base}_{k}", k + 1
        self.taken.update((candidate, candidate + "_shift"))
        return candidate


def _closure_values(fn) -> list:
    """[(name, value)] for the tensors, Variables and arrays `fn` reads from its closure
    or its globals, so embedded constants can be named as the user named them."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return []
    pairs = []
    for var, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or ()):
        try:
            pairs.append((var, cell.cell_contents))
        except ValueError:                 # an empty cell
            pass
    scope = getattr(fn, "__globals__", {})
    pairs += [(var, scope[var]) for var in code.co_names if var in scope]
    return [(var, value) for var, value in pairs
            if isinstance(value, (Tensor, Variable, np.ndarray))]


def _closure_match(closure_values, value):
    """The closure name of an array equal to a captured `value` (ops may have copied it)."""
    for var, candidate in closure_values:
        if isinstance(candidate, Tensor):
            candidate = candidate._value
        if isinstance(candidate, np.ndarray) and candidate.shape == value.shape and \
                candidate.dtype == value.dtype and np.array_equal(candidate, value):
            return var
    return None


# --- constants -------------------------------------------------------------------------------

def _dtype_source(dtype) -> str:
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


def _array_source(value: np.ndarray, prefix: str = "") -> list:
    """Lines of `prefix` followed by an expression equal to `value` bit for bit: a decimal
    `np.array` literal for small arrays (checked by evaluating it), else the raw bytes as
    hex."""
    dtype = _dtype_source(value.dtype)
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


# --- the module -----------------------------------------------------------------------------

class _Module:
    """Builds every output from one trace and prints the module."""

    def __init__(self, low, fn, args, fname, want_jacobian, want_hessian):
        self.low, self.fn, self.args, self.fname = low, fn, args, fname
        self.argnums = low.function._argnums
        self.single = low.function._single
        for node in low.feeds:
            if node.dtype == object:
                raise ExportError("tapec.export: a custom_gradient's gradient is a Python "
                                  "function and cannot be written into a module")
        flat = low.flat
        self.scalar = len(flat) == 1 and flat[0]._shape == () and flat[0]._dtype.kind in "fc"
        if not self.scalar and not want_jacobian:
            shapes = ", ".join(f"{t._shape} {t._dtype.name}" for t in flat)
            raise ExportError(f"tapec.export: {fname} returns {shapes}, not a floating "
                              "scalar, so it has no gradient; pass jacobian=True to export "
                              "its jacobian")
        if want_hessian and not self.scalar:
            raise ExportError("tapec.export: hessian=True needs a function that returns a "
                              "floating scalar")
        self.kinds = {"value": low.derive("value")}
        if self.scalar:
            self.kinds["grad"] = low.derive("grad")
        if want_jacobian:
            self.kinds["jacobian"] = low.derive("jacobian")
        if want_hessian:
            self.kinds["hessian"] = low.derive("hessian")
        adjoints = self._adjoints() if self.scalar else []
        # The cotangents are simplified with the outputs: rewriting is deterministic and
        # hash-consed, so a cotangent the gradient uses becomes the node the gradient uses.
        everything = [n for nodes, _ in self.kinds.values() for n in nodes]
        simplified = simplify(everything + [c for _, c in adjoints], low.feeds, low.builder,
                              SIMPLIFY_MODE)
        start = 0
        for kind, (nodes, structure) in list(self.kinds.items()):
            self.kinds[kind] = (simplified[start:start + len(nodes)], structure)
            start += len(nodes)
        self.adjoint_of = {}
        for (node, _), cotangent in zip(adjoints, simplified[start:]):
            self.adjoint_of.setdefault(cotangent, node)
        self.names = _Names()
        self._name_leaves()
        self._name_outputs()
        self._name_values()

    # -- analysis --

    def _adjoints(self) -> list:
        """[(forward node, its cotangent node)], nearest the output first, for `b_` names.

        The reverse pass is run again, in the same hash-consing builder, with every node
        on the path as a source: it makes the same nodes as the gradient did (same ops on
        the same inputs), and returns the cotangent of each. Best effort: names only."""
        low = self.low
        target = low.node_of(low.flat[0])
        sources = {low.node_of(low.traced[k]) for k in self.argnums}
        path = []
        for node in topological_order([target]):
            if node in sources or any(i in sources for i in node.inputs):
                sources.add(node)
                path.append(node)
        try:
            with low.builder:
                cotangents = gradient_nodes(target, path, fill((), 1, target.dtype))
        except Exception:       # noqa: BLE001  (names are a nicety; the gradient is built)
            return []
        return [(node, cotangent._node)
                for node, cotangent in zip(reversed(path), reversed(cotangents))
                if cotangent is not None and node is not target]

    # -- naming --

    def _name_leaves(self):
        """Parameters first (they are the interface), then the embedded constants."""
        low, names = self.low, self.names
        self.params = [names.claim(_identifier(n, f"arg{i}"))
                       for i, n in enumerate(_parameter_names(self.fn, len(self.args)))]
        self.functions = {"value": self.fname, "grad": f"grad_{self.fname}",
                          "value_and_grad": f"value_and_grad_{self.fname}",
                          "jacobian": f"jacobian_{self.fname}",
                          "hessian": f"hessian_{self.fname}"}
        for function_name in self.functions.values():
            names.taken.add(function_name)   # a constant must not replace a function
        closure = _closure_values(self.fn)
        by_id = {}
        for var, value in closure:
            by_id.setdefault(id(value), var)
        self.leaf_names, self.constants, self.constant_info = {}, [], {}
        by_key = {}
        for node, key in sorted(low.feeds.items(), key=lambda item: item[1]):
            kind, k = key
            if kind == "arg":
                self.leaf_names[node] = self.params[k]
                continue
            if key in by_key:                # two reads of one Variable: one constant
                self.leaf_names[node] = by_key[key]
                continue
            if kind == "variable":
                variable = low.variables[k]
                label = variable._name
                base = label if label != "Variable" else by_id.get(id(variable), "var")
                what = "an unnamed Variable" if label == "Variable" else \
                    f"Variable {_display(label)}"
                value, fallback = variable._value, "var"
            else:
                tensor = low.tape._tensors.get(low.captured_ids[k])
                value = low.captured[k]
                base = by_id.get(id(tensor)) or by_id.get(id(value)) or \
                    _closure_match(closure, np.asarray(value)) or "const"
                # A tensor f closed over, or one it made (a random draw) while traced.
                what, fallback = "a tensor the function captured", "const"
            name = names.claim(_identifier(base, fallback))
            by_key[key] = self.leaf_names[node] = name
            self.constants.append(name)
            self.constant_info[name] = (what, np.asarray(value))

    def _name_outputs(self):
        """`<f>` for the value, `d<f>_d<arg>` for derivatives; one output keeps its name in
        every function that returns it."""
        f, params = self.fname, self.params
        value_count = len(self.kinds["value"][0])
        bases = {"value": [f] if value_count == 1 else [f"{f}_{i}" for i in range(value_count)]}
        wrt = [params[k] for k in self.argnums]
        if "grad" in self.kinds:
            bases["grad"] = [f"d{f}_d{a}" for a in wrt]
        if "jacobian" in self.kinds:
            bases["jacobian"] = [f"d{o}_d{a}" for o in bases["value"] for a in wrt]
        if "hessian" in self.kinds:
            bases["hessian"] = [f"d2{f}_d{a}_d{b}" for a in wrt for b in wrt]
        chosen, self.output_names = {}, {}
        for kind, names in bases.items():
            for base in names:
                if base not in chosen:
                    # A local may shadow the function's own name: functions never call
                    # each other. It must not shadow a parameter or a constant.
                    shadows = base in self.functions.values() and base not in params \
                        and base not in self.constants
                    chosen[base] = base if shadows else self.names.claim(base)
            self.output_names[kind] = [chosen[base] for base in names]

    def _name_values(self):
        """Forward values after their op (`tanh_2`), in emission order; cotangents of
        forward values `b_<forward name>`; other derivative values after their op."""
        low = self.low
        forward = set(low.nodes.values())
        roots = list(low.guards) + [n for nodes, _ in self.kinds.values() for n in nodes]
        order = [n for n in topological_order(roots, is_leaf=lambda n: n in low.feeds)
                 if n not in low.feeds and n.op is not CONSTANT and n.op is not GUARD]
        counters, self.value_names = {}, {}

        def numbered(node):
            # `sum_1` shadows nothing, so op names need no keyword or builtin check.
            base = re.sub(r"[^A-Za-z0-9_]", "_", _SHORT.get(node.op.name, node.op.name))
            base = base if base[:1].isalpha() else f"value{base}"
            counters[base] = counters.get(base, 0) + 1
            candidate = f"{base}_{counters[base]}"
            while not self.names.free(candidate):
                counters[base] += 1
                candidate = f"{base}_{counters[base]}"
            return self.names.claim(candidate)

        for node in order:
            if node in forward:
                self.value_names[node] = numbered(node)
        for node in order:
            if node in self.value_names:
                continue
            of = self.adjoint_of.get(node)
            if of is not None and of in self.value_names:
                self.value_names[node] = self.names.claim(f"b_{self.value_names[of]}")
            elif of is not None and of in self.leaf_names:
                self.value_names[node] = self.names.claim(f"b_{self.leaf_names[of]}")
            else:
                self.value_names[node] = numbered(node)

    # -- printing --

    def source(self) -> str:
        # The only mention of tapec is this comment. No user text is in the first two
        # lines, where a comment could declare the file's encoding.
        lines = [(f"# Generated by tapec {__version__} (tapec.export). Do not edit: export "
                  "the function again."), 'r"""' + self._docstring() + '"""']
        functions = self._functions()
        code = "\n".join(line for function in functions for line in function)
        if re.search(r"\bmath\.", code):
            lines.append("import math")
        lines.append("import numpy as np")
        if self.constants:
            lines += ["", ("# Values the function read when it was exported (a snapshot, "
                           "exact to the bit).")]
            for name in self.constants:
                what, value = self.constant_info[name]
                lines.append(f"# {what}, {value.dtype.name} {value.shape}")
                lines += _array_source(value, f"{name} = ")
        if self._helpers:
            for helper in self._helpers:
                lines += ["", "", *_HELPERS[helper]]
        for function in functions:
            lines += ["", "", *function]
        return "\n".join(lines) + "\n"

    _helpers: list

    def _functions(self) -> list:
        self._helpers = []
        kinds = self.kinds
        value_nodes, value_structure = kinds["value"]
        value_names = self.output_names["value"]
        out = [self._function("value", value_nodes, value_names,
                              lambda names: _pack(value_structure, iter(names)),
                              f"The value of {self.fname}.")]
        wrt = ", ".join(self.params[k] for k in self.argnums)
        if "grad" in kinds:
            grad_nodes, _ = kinds["grad"]
            grad_names = self.output_names["grad"]
            pack = self._pack_args
            out.append(self._function(
                "grad", grad_nodes, grad_names, pack,
                f"The gradient of {self.fname} with respect to {wrt}."))
            # As tapec.value_and_grad: the value is the scalar itself, not f's structure.
            out.append(self._function(
                "value_and_grad", value_nodes + grad_nodes, value_names + grad_names,
                lambda names: f"{names[0]}, {pack(names[1:])}",
                f"The value of {self.fname} and its gradient with respect to {wrt}."))
        if "jacobian" in kinds:
            nodes, _ = kinds["jacobian"]
            names = self.output_names["jacobian"]
            out.append(self._function(
                "jacobian", nodes, names, self._pack_jacobian,
                f"The jacobian of {self.fname} with respect to {wrt}: shape output.shape "
                "+ argument.shape."))
        if "hessian" in kinds:
            nodes, _ = kinds["hessian"]
            names = self.output_names["hessian"]
            out.append(self._function(
                "hessian", nodes, names, self._pack_hessian,
                f"The Hessian of {self.fname} with respect to {wrt}."))
        return out

    def _pack_args(self, names):
        return names[0] if self.single else "(" + ", ".join(names) + ("," if len(names) == 1
                                                                      else "") + ")"

    def _pack_jacobian(self, names):
        per_output = len(self.argnums)
        groups = [self._pack_args(names[i:i + per_output])
                  for i in range(0, len(names), per_output)]
        return _pack(self.kinds["value"][1], iter(groups))

    def _pack_hessian(self, names):
        if self.single:
            return names[0]
        n = len(self.argnums)
        rows = ["(" + ", ".join(names[i * n:(i + 1) * n]) + ("," if n == 1 else "") + ")"
                for i in range(n)]
        return "(" + ", ".join(rows) + ("," if n == 1 else "") + ")"

    def _function(self, kind, outputs, output_names, pack, doc) -> list:
        low = self.low
        fn_name = self.functions[kind]
        names = dict(self.leaf_names)
        for node, name in zip(outputs, output_names):
            if node is not None and node not in low.feeds and node.op is not CONSTANT:
                names.setdefault(node, name)
        lines = [f"def {fn_name}({', '.join(self.params)}):", f'    """{doc}"""']
        lines += self._checks()
        order = topological_order(list(low.guards) + [o for o in outputs if o is not None],
                                  is_leaf=lambda n: n in low.feeds)
        for node in order:
            if node in low.feeds:
                continue
            if node.op is CONSTANT:
                names[node] = node.op.numpy([], node)
                continue
            if node.op is PLACEHOLDER:
                raise ExportError(f"tapec.export: the recording needs a value it does not "
                                  f"hold ({node!r}); this is a bug in tapec")
            args = [names[i] for i in node.inputs]
            if node.op is GUARD:
                lines += ["    " + line for line in self._guard(node, args, names)]
                continue
            name = names.get(node) or self.value_names[node]
            names[node] = name
            if node.op.numpy_lines is not None:
                body = node.op.numpy_lines(name, args, node)
            elif node.op.numpy is not None:
                body = [f"{name} = {node.op.numpy(args, node)}"]
            else:
                raise ExportError(f"tapec.export: op {node.op.name!r} has no NumPy template")
            lines += [piece for line in body for piece in _wrapped("    " + line)]
        results = []
        for node, name in zip(outputs, output_names):
            if node is None:
                results.append("None")
            elif node.op is CONSTANT:
                # A literal would return a Python number; the caller expects an array.
                lines.append(f"    {name} = np.asarray({names[node]}, "
                             f"dtype={_dtype_source(node.dtype)})")
                results.append(name)
            else:
                results.append(names[node])
        lines += _wrapped_return(pack(results))
        return lines

    def _checks(self) -> list:
        """Argument checks: the traced shapes and dtypes, and Python numbers' values."""
        lines = []
        for param, arg in zip(self.params, self.args):
            if _is_python_number(arg):
                self._need("_fixed")
                lines.append(f"    _fixed({param!r}, {param}, {_number_source(arg)})")
            else:
                self._need("_checked")
                lines.append(f"    {param} = _checked({param!r}, {param}, {_arg_shape(arg)}, "
                             f"{np.dtype(_arg_dtype(arg)).name!r})")
        return lines

    def _need(self, helper):
        if helper not in self._helpers:
            self._helpers.append(helper)

    def _guard(self, node, args, names) -> list:
        """A specialized branch: the value Python saw when tracing, checked at every call."""
        expected = node.attrs["expected"]
        (value,) = node.inputs
        test = guard_test(args[0], expected)
        seen = _number_source(expected) if not isinstance(expected, tuple) else \
            f"the array {list(expected[2])!r:.40}"
        if value in self.low.feeds or not value.inputs:
            what = args[0]
        else:
            what = f"{value.op.name}({', '.join(names[i] for i in value.inputs)})"
        what = what if len(what) <= 60 else what[:57] + "..."   # tapec's names: no escaping
        return [f"if {test}:",
                "    raise ValueError(\"input outside the traced branch: \"",
                f"                     {what + ' was ' + seen + ' when exported'!r})"]

    def _docstring(self) -> str:
        low, f = self.low, self.fname
        wrt = ", ".join(self.params[k] for k in self.argnums)
        parts = [f"{f} and its derivatives, exported from a recording of {f} as plain NumPy.",
                 "", "Functions (each computes what it returns from its arguments alone):"]
        call = f"({', '.join(self.params)})"
        for kind, fn_name in self.functions.items():
            if kind == "value" or kind in self.kinds or \
                    (kind == "value_and_grad" and "grad" in self.kinds):
                parts.append(f"    {fn_name}{call}")
        if len(self.argnums) and len(self.kinds) > 1:
            parts.append(f"Derivatives are taken with respect to {wrt}.")
        parts += ["", "Input signature (other shapes or dtypes raise ValueError):"]
        for param, arg in zip(self.params, self.args):
            if _is_python_number(arg):
                parts.append(f"    {param}: the Python {type(arg).__name__} "
                             f"{_number_source(arg)} (fixed when exported)")
            else:
                parts.append(f"    {param}: {np.dtype(_arg_dtype(arg)).name} array of shape "
                             f"{_arg_shape(arg)}")
        parts += ["", "Formulas (LaTeX):"]
        parts += self._formulas()
        if low.guards:
            parts += ["", *textwrap.wrap(
                f"Control flow: {len(low.guards)} Python branch decision(s) were specialized "
                "on the example inputs; an input that would take another branch raises "
                "ValueError('input outside the traced branch: ...').", WIDTH - 4)]
        if self.constants:
            parts += ["", *textwrap.wrap(
                "Embedded values: the arrays below are what the function read when it was "
                "exported (Variables included: later assignments are not seen).", WIDTH - 4)]
            for name in self.constants:
                what, value = self.constant_info[name]
                parts.append(f"    {name}: {what}, {value.dtype.name} {value.shape}")
        needs = "NumPy and the standard library's math (for erf)" if any(
            n.op.name == "erf" for n in topological_order(
                [n for nodes, _ in self.kinds.values() for n in nodes])) else "NumPy only"
        parts += ["", f"Requires {needs}."]
        return _doc_safe("\n".join(parts)) + "\n"

    def _formulas(self) -> list:
        """LaTeX of the value and of its derivative, from tapec.export.latex when it
        can print this recording; a note saying so when it cannot."""
        low = self.low
        pairs = [(t, p) for t, p in zip(low.traced, self.params) if isinstance(t, Tensor)]
        for node, name in self.leaf_names.items():
            kind, k = low.feeds[node]
            if kind == "variable":
                pairs.append((low.variables[k], name))
            elif kind == "captured" and low.captured_ids[k] in low.tape._tensors:
                pairs.append((low.tape._tensors[low.captured_ids[k]], name))
        formulas = []
        try:
            from .latex import tape_latex
            for t, name in zip(low.flat, self.output_names["value"]):
                formulas.append((f"{name} =", tape_latex(low.tape, t, None,
                                                         pairs + [(t, name)])))
            if "grad" in self.kinds or "jacobian" in self.kinds:
                sources = [low.traced[k] for k in self.argnums]
                label = "gradient:" if "grad" in self.kinds else "jacobian:"
                for t, name in zip(low.flat, self.output_names["value"]):
                    formulas.append((label, tape_latex(low.tape, t, sources,
                                                       pairs + [(t, name)])))
        except Exception as error:  # noqa: BLE001  (a formula is documentation only)
            return [(f"    (no formula: the LaTeX printer failed with "
                     f"{_display(type(error).__name__)})")]
        lines = []
        for label, tex in formulas:
            lines.append(f"    {label}")
            lines += textwrap.wrap(tex, WIDTH - 8, initial_indent="        ",
                                   subsequent_indent="        ", break_long_words=False,
                                   break_on_hyphens=False)
        return lines


def _is_python_number(arg) -> bool:
    """A Python number argument (part of the traced signature), not a NumPy scalar (which
    is a 0-d array argument, although np.float64 subclasses float)."""
    return isinstance(arg, (bool, int, float, complex)) and not isinstance(arg, np.generic)


def _arg_dtype(arg):
    if isinstance(arg, Variable):
        return arg._value.dtype
    if isinstance(arg, Tensor):
        return arg._dtype
    return np.asarray(arg).dtype


def _arg_shape(arg) -> tuple:
    if isinstance(arg, Variable):
        return tuple(arg._value.shape)
    if isinstance(arg, Tensor):
        return tuple(arg._shape)
    # np.asarray, not np.shape: an ndarray subclass may override `shape` with objects
    # whose repr is code (the shape is printed into the module).
    return tuple(int(d) for d in np.asarray(arg).shape)


def _pack(structure, names) -> str:
    """Python source of `structure` (the function's result) with its leaves replaced, in
    nest's order, by `names`."""
    if isinstance(structure, dict):
        for key in structure:
            if type(key) not in (str, int):  # ascii() of another object runs its __repr__
                raise ExportError(f"tapec.export: a result dict key must be a str or an "
                                  f"int, got a {_display(type(key).__name__)}")
        return "{" + ", ".join(f"{key!a}: {_pack(structure[key], names)}"
                               for key in sorted(structure)) + "}"
    if isinstance(structure, (list, tuple)):
        items = [_pack(item, names) for item in structure]
        if isinstance(structure, list):
            return "[" + ", ".join(items) + "]"
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    return next(names)


def _wrapped(line) -> list:
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


def _wrapped_return(expression) -> list:
    line = f"    return {expression}"
    # Parenthesized, the tuple is the same and may break after any of its commas.
    return [line] if len(line) <= WIDTH else _wrapped(f"    return ({expression})")


# Helpers the functions call, written into the module only when used. Their names start
# with `_`, which no name derived from the user's can (`_identifier` strips it).
_HELPERS = {
    "_checked": r'''
def _checked(name, value, shape, dtype):
    """`value` as an array, if it has the shape and dtype this module was exported for."""
    array = np.asarray(value)
    if array.shape != shape or array.dtype != dtype:
        raise ValueError(f"argument {name}: expected shape {shape} dtype {dtype} (the exported "
                         f"signature), got shape {array.shape} dtype {array.dtype}")
    return array
'''.strip().splitlines(),
    "_fixed": r'''
def _fixed(name, value, exported):
    """A Python-number argument was fixed when exporting: any other value is another function."""
    if value != exported:
        raise ValueError(f"argument {name}: the module was exported for {name} = {exported!r}, "
                         f"got {value!r}")
'''.strip().splitlines(),
}


def _number_source(value) -> str:
    """A Python number as Python source that evaluates to it exactly (repr is exact for
    floats; inf and nan have no literal). The value is first made a plain bool, int,
    float or complex through the builtin types' own slots: an example argument may be a
    subclass whose `__repr__` (or `real`) returns code."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return int.__repr__(int.real.__get__(value))
    if isinstance(value, complex):
        real, imag = complex.real.__get__(value), complex.imag.__get__(value)
        return f"complex({_number_source(real)}, {_number_source(imag)})"
    if isinstance(value, float):
        value = float.real.__get__(value)
        return float.__repr__(value) if np.isfinite(value) else f"float({str(value)!r})"
    raise ExportError(f"tapec.export: expected a Python number, got a "
                      f"{_display(type(value).__name__)}")


def _audit(source: str):
    """The finished module parses, and imports nothing but numpy (and math for erf)."""
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add(f"from {node.module}")
    if not imported <= {"numpy", "math"}:
        raise RuntimeError(f"tapec.export wrote imports of {sorted(imported)}; this is a bug "
                           "in tapec")
