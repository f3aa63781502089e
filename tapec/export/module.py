"""Standalone modules: a function, its gradient, jacobian and Hessian, in one file.

    tapec.export(loss, (x, w), "loss_module.py", argnums=1, hessian=True)

writes a module that needs only NumPy and defines, for the signature of the example
arguments, `loss(x, w)`, `grad_loss(x, w)`, `value_and_grad_loss(x, w)` and, when asked,
`jacobian_loss(x, w)` and `hessian_loss(x, w)`. docs/export.md shows one.

How the module is made:

* `f` is traced once on the example arguments (`tapec.function.lower`): every output
  and derivative is built symbolically from that one trace, simplified with the exact
  rewrites ("fast": no elementwise fusion, so every line is one op of the recording and
  numexpr is never needed), and printed by `_Module` through the emitter of compiled
  code (`codegen.emit.statements`), with the names of `naming.ModuleNamer`.
* The code is the array-API form (`codegen.array_api.ARRAY_API`): each function takes
  the namespace `xp` and the device of its arguments (NumPy for NumPy inputs), so the
  module runs on Dask, JAX, PyTorch, CuPy and array-api-strict arrays too. The module's
  `_arguments` (signature.py) finds them and checks the arguments; NumPy arrays of the
  exported signature pass by plain comparisons, so NumPy calls cost what a NumPy-only
  module's did. A program with
  an op the standard cannot spell is written in the NumPy form instead.
* TensorSpec example arguments (sizes.py): their None dimensions take any size, read
  from the arguments; the module is traced on seeded data at probe sizes, and numbers
  that follow a size become expressions of it.
* Nothing of tapec is left: each function recomputes its forward values from its
  arguments; constants the function captured and Variables it read are embedded as
  module-level NumPy arrays (a snapshot taken at export time, exact to the bit,
  layout.py), converted with `xp.asarray` where they are read; guards of Python control
  flow raise ValueError instead of asking for a retrace.
* Every identifier is made by tapec. User-given names (the function's, its parameters',
  Variables' and closure variables') are reduced to ASCII identifiers (naming.py); in
  the docstring (signature.py) and comments they appear only through `layout.display`,
  which keeps a few safe characters. The docstring is raw and holds no double quote, so
  no text can end it early. An audit of the finished source (`_audit`) allows no import
  but numpy, array_api_compat (optional) and math (where an op needs it: erf).

Module map: module.py (this: what to compute, and the functions), naming.py (names),
signature.py (argument checks, helpers, docstring), layout.py (line width, literals),
sizes.py (None dimensions).
"""
from __future__ import annotations

import ast
import functools
import os
import re

import numpy as np

from .._version import __version__
from ..autodiff.reverse import gradient_nodes
from ..codegen.array_api import ARRAY_API, NoArrayApiForm, helpers
from ..codegen.emit import NUMPY, CodegenError, statements
from ..function import _plain, lower
from ..tracing.calls import signature, value_of
from ..tensor import Tensor
from ..tracing.tensor_spec import TensorSpec
from ..tracing.recorder import GUARD, guard_test
from ..ir.nodes import topological_order
from ..ops.shape import CONSTANT, fill, reshape
from ..simplify import simplify
from .layout import (ExportError, array_source, dtype_source, pack, wrapped,
                     wrapped_return)
from .naming import ModuleNamer, function_name
from .signature import HELPERS, arguments, docstring, is_python_number, number_source
from .sizes import polymorphic_source

__all__ = ["export", "ExportError"]

SIMPLIFY_MODE = "fast"      # exact rewrites only: one op per line, no numexpr


def export(f, example_args, path, *, argnums=0, jacobian=False, hessian=False, name=None):
    """Write a standalone NumPy module for `f` traced on `example_args`; returns its source.

    `example_args` is a tuple of arguments (tensors, NumPy arrays, Variables, Python
    numbers; a single array may be given bare). The module defines `<name>(...)` and,
    when `f` returns a floating scalar, `grad_<name>` and `value_and_grad_<name>` with
    respect to the argument(s) `argnums`; `jacobian_<name>` and `hessian_<name>` when
    asked. `name` defaults to `f.__name__`. A function whose result is not a floating
    scalar can be exported with `jacobian=True` (no gradient functions are written), or
    with `argnums=None`: the module then holds `<name>(...)` alone, for any result (a
    model's predictions, say).
    """
    if argnums is None:
        if jacobian or hessian:
            raise ExportError("tapec.export: argnums=None exports the value alone; "
                              "jacobian=True and hessian=True need the argnums to "
                              "differentiate with respect to")
        return _write(f, example_args, path, 0, False, False, name, value_only=True)
    return _write(f, example_args, path, argnums, jacobian, hessian, name, value_only=False)


def _write(f, example_args, path, argnums, jacobian, hessian, name, value_only):
    """`export`; with `value_only`, the module holds the value function alone (any result:
    tapec.saved_model's functions)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"tapec.export: path must be a str or os.PathLike naming the file to "
                        f"write, got {type(path).__name__} {path!r:.60}")
    fn = _plain(f)
    if not callable(fn):
        raise TypeError(f"tapec.export: expected a callable, got {type(fn).__name__}")
    args = tuple(example_args) if isinstance(example_args, (tuple, list)) else (example_args,)

    def module(values, groups=()):
        return _module(fn, values, argnums, function_name(fn, name), jacobian, hessian,
                       value_only, [a if isinstance(a, TensorSpec) else None for a in args],
                       groups)
    if any(isinstance(a, TensorSpec) for a in args):
        source = polymorphic_source(args, module)
    else:
        source = module(args).source()
    _audit(source)
    with open(os.fspath(path), "w", encoding="utf-8") as handle:
        handle.write(source)
    return source


def _module(fn, args, argnums, fname, jacobian, hessian, value_only, specs, groups):
    """The `_Module` of `fn` traced on `args` (values; `specs[k]` the TensorSpec argument
    k stands for, if any, whose None dimensions the function sees as None)."""
    signature(args, arrays_only=True)   # the argument check of tapec.function
    low = _lower(fn, args, argnums, specs)
    unit = not value_only and _unit(low.flat)
    if unit:        # a (1, 1) x^T A x: differentiated as the scalar it holds
        low = _lower(_as_scalar(fn), args, argnums, specs)
    if low.effects:
        names = ", ".join(sorted({repr(v.name) for v, _ in low.effects}))
        raise ExportError(f"tapec.export: the function assigns Variable(s) {names}; an "
                          "exported module is a pure function of its arguments and holds no "
                          "Variables. Export the update as a function that returns the new "
                          "values instead (see docs/export.md)")
    if low.random or low.prints:
        ops = sorted({f"tapec.{n.attrs['what']}" for n in low.random} |
                     ({"tapec.print"} if low.prints else set()))
        raise ExportError(f"tapec.export: the function calls {', '.join(ops)}; an "
                          "exported module is a pure function of its arguments, which "
                          "cannot draw fresh random values or print at every call. Pass "
                          "random values in as arguments, and print outside the function")
    return _Module(low, fn, args, fname, jacobian, hessian, value_only, specs, groups, unit)


def _unit(flat) -> bool:
    """One floating result of size 1 that is not a scalar."""
    return len(flat) == 1 and flat[0] is not None and flat[0]._dtype.kind in "fc" and \
        len(flat[0]._shape) > 0 and all(d == 1 for d in flat[0]._shape)


def _as_scalar(fn):
    """`fn` with its size-1 result reshaped to a scalar (its parameters, for the module's
    names, seen through `__wrapped__`)."""
    @functools.wraps(fn)
    def scalar(*args):
        return reshape(fn(*args), ())
    return scalar


def _lower(fn, args, argnums, specs):
    """`tapec.function.lower`, where the TensorSpec arguments' None dimensions read as None
    in the traced tensors' static shapes (as under tf.function's input_signature), so that
    Python code cannot bake the example's size into the module."""
    if not any(s is not None and s._shape is not None and None in s._shape for s in specs):
        return lower(fn, args, argnums)
    signature_ = [s if s is not None else TensorSpec(np.shape(value_of(a)) if not
                                                     is_python_number(a) else ())
                  for s, a in zip(specs, args)]
    return lower(fn, args, argnums, input_signature=signature_)


# --- the module -----------------------------------------------------------------------------

class _Module:
    """Builds every output from one trace and prints the module."""

    def __init__(self, low, fn, args, fname, want_jacobian, want_hessian, value_only=False,
                 specs=(), groups=(), unit=False):
        self.low, self.fn, self.args, self.fname = low, fn, args, fname
        # per argument its TensorSpec or None; per size symbol _size<k> the (argument,
        # axis) pairs it is read from
        self.specs, self.groups = list(specs) or [None] * len(args), list(groups)
        self.argnums = low.function._argnums
        self.single = low.function._single
        for node in low.feeds:
            if node.dtype == object:
                raise ExportError("tapec.export: a custom_gradient's gradient is a Python "
                                  "function and cannot be written into a module")
        flat = low.flat
        self.scalar = len(flat) == 1 and flat[0]._shape == () and flat[0]._dtype.kind in "fc"
        if value_only:
            self.scalar = want_jacobian = want_hessian = False
        elif not self.scalar and not want_jacobian:
            shapes = ", ".join(f"{t._shape} {t._dtype.name}" for t in flat)
            raise ExportError(f"tapec.export: {fname} returns {shapes}, not a floating "
                              "scalar, so it has no gradient; pass jacobian=True to export "
                              "its jacobian")
        if want_hessian and not self.scalar:
            raise ExportError("tapec.export: hessian=True needs a function that returns a "
                              "floating scalar")
        self.kinds = {"value": low.derive("value")}
        if unit:      # `<name>` returns f's own (1, 1) value; the others, the scalar's
            self.kinds["value"] = ([n.inputs[0] for n in self.kinds["value"][0]],
                                   self.kinds["value"][1])
        if self.scalar:
            self.kinds["grad"] = low.derive("grad")
        if want_jacobian:
            self.kinds["jacobian"] = low.derive("jacobian")
            if unit:    # as tapec.jacobian: f's own (1, 1) shape + the argument's
                nodes, structure = self.kinds["jacobian"]
                shape = tuple(self.kinds["value"][0][0].shape)
                with low.builder:
                    nodes = [reshape(Tensor._symbolic(n), shape + tuple(n.shape))._node
                             for n in nodes]
                self.kinds["jacobian"] = (nodes, structure)
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
        adjoint_of = {}
        for (node, _), cotangent in zip(adjoints, simplified[start:]):
            adjoint_of.setdefault(cotangent, node)
        self.namer = ModuleNamer(low, fn, args, fname, self.kinds, adjoint_of)
        namer = self.namer
        self.params, self.functions = namer.params, namer.functions
        self.leaf_names, self.output_names = namer.leaf_names, namer.output_names
        self.constants, self.constant_info = namer.constants, namer.constant_info

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

    # -- printing --

    def source(self) -> str:
        return self.header() + self.body()

    def header(self, sizes=None) -> str:
        """The header comment and the docstring (`sizes`: signature.docstring's)."""
        self._printed          # noqa: B018 - which form, for the docstring
        # The only mention of tapec is this comment. No user text is in the first two
        # lines, where a comment could declare the file's encoding.
        return "\n".join([(f"# Generated by tapec {__version__} (tapec.export). Do not "
                           "edit: export the function again."),
                          'r"""' + docstring(self, sizes) + '"""']) + "\n"

    def body(self) -> str:
        """Everything after the docstring: imports, embedded values, helpers, functions."""
        lines = []
        functions = self._printed
        code = "\n".join(line for function in functions for line in function)
        if re.search(r"\bmath\.", code):
            lines.append("import math")
        lines.append("import numpy as np")
        if self.array_api:
            lines += ["", "try:", "    import array_api_compat",
                      "except ImportError:         # NumPy arrays, and arrays that name their "
                      "namespace", "    array_api_compat = None"]
        if self.constants:
            lines += ["", ("# Values the function read when it was exported (a snapshot, "
                           "exact to the bit).")]
            prefix = "_data_" if self.array_api else ""
            for name in self.constants:
                what, value = self.constant_info[name]
                lines.append(f"# {what}, {value.dtype.name} {value.shape}")
                lines += array_source(value, f"{prefix}{name} = ")
        for helper in self._helpers:
            lines += ["", "", *HELPERS[helper]]
        lines += ["", "", *self._arguments[1]]
        standard_gaps = helpers(code.splitlines()) if self.array_api else []
        for helper in standard_gaps:
            lines += ["", "", *helper]
        for function in functions:
            lines += ["", "", *function]
        text = "\n".join(lines) + "\n"
        # The helpers for the standard's gaps are the module's own: `_xp_einsum`, a name no
        # user name can take (they never start with `_`), and no mention of tapec.
        gaps = {re.match(r"def (\w+)", h[0]).group(1) for h in standard_gaps}
        if gaps:
            text = re.sub(r"\b(" + "|".join(sorted(gaps)) + r")\b",
                          lambda m: "_xp_" + m.group(1)[len("tapec_xp_"):], text)
        return text

    @functools.cached_property
    def _printed(self) -> list:
        """The functions' lines: the array-API form (any namespace), or NumPy's where an op
        of the program has no array-API form (docs/array_api.md). Sets `array_api`."""
        self.array_api = True
        try:
            return self._functions()
        except NoArrayApiForm:
            self.array_api = False
            return self._functions()

    _helpers: list
    _arguments: tuple       # signature.arguments: each function's first line, `_arguments`

    def _functions(self) -> list:
        self._helpers = []
        self._arguments = arguments(self)
        kinds = self.kinds
        value_nodes, value_structure = kinds["value"]
        value_names = self.output_names["value"]
        out = [self._function("value", value_nodes, value_names,
                              lambda names: pack(value_structure, iter(names)),
                              f"The value of {self.fname}.")]
        wrt = ", ".join(self.params[k] for k in self.argnums)
        if "grad" in kinds:
            grad_nodes, _ = kinds["grad"]
            grad_names = self.output_names["grad"]
            pack_grad = self._pack_args
            out.append(self._function(
                "grad", grad_nodes, grad_names, pack_grad,
                f"The gradient of {self.fname} with respect to {wrt}."))
            # As tapec.value_and_grad: the value is the scalar itself, not f's structure
            # (or f's size-1 array, whose one element the gradient is of).
            out.append(self._function(
                "value_and_grad", value_nodes + grad_nodes, value_names + grad_names,
                lambda names: f"{names[0]}, {pack_grad(names[1:])}",
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
        return pack(self.kinds["value"][1], iter(groups))

    def _pack_hessian(self, names):
        if self.single:
            return names[0]
        n = len(self.argnums)
        rows = ["(" + ", ".join(names[i * n:(i + 1) * n]) + ("," if n == 1 else "") + ")"
                for i in range(n)]
        return "(" + ", ".join(rows) + ("," if n == 1 else "") + ")"

    def _function(self, kind, outputs, output_names, pack_results, doc) -> list:
        """One function of the module: argument checks, then the one emitter's statements
        (guards written as errors), wrapped to WIDTH, then the packed results."""
        low = self.low
        names = dict(self.leaf_names)
        order = topological_order(list(low.guards) + [o for o in outputs if o is not None],
                                  is_leaf=lambda n: n in low.feeds)

        def guard(node, args):
            return self._guard(node, args, names) if node.op is GUARD else None
        form = ARRAY_API if self.array_api else None
        try:
            body = statements(order, names, self.namer.function(outputs, output_names), guard,
                              form=form)
        except NoArrayApiForm:
            raise
        except CodegenError as error:
            raise ExportError(f"tapec.export: {error}") from None
        lines = [f"def {self.functions[kind]}({', '.join(self.params)}):", f'    """{doc}"""',
                 *wrapped("    " + self._arguments[0])]
        if self.array_api:     # the embedded values this function reads, where xp computes
            read = set(re.findall(r"\b\w+\b", "\n".join(body)))
            lines += [f"    {name} = _data_{name} if xp is np else xp.asarray(_data_{name}, "
                      "device=device)" for name in self.constants if name in read]
        lines += [piece for line in body for piece in wrapped("    " + line)]
        results = []
        for node, name in zip(outputs, output_names):
            if node is None:
                results.append("None")
            elif node.op is CONSTANT:
                # A literal would return a Python number; the caller expects an array.
                lines.append(f"    {name} = {self._array_of(names[node], node.dtype)}")
                results.append(name)
            else:
                results.append(names[node])
        lines += wrapped_return(pack_results(results))
        return lines

    def _array_of(self, expression, dtype) -> str:
        if not self.array_api:
            return f"np.asarray({expression}, dtype={dtype_source(dtype)})"
        name = "bool" if np.dtype(dtype).name == "bool" else np.dtype(dtype).name
        return f"xp.asarray({expression}, dtype=xp.{name}, device=device)"

    def need(self, helper):
        """Write `helper` (signature.HELPERS) into the module: a function calls it."""
        if helper not in self._helpers:
            self._helpers.append(helper)

    def _guard(self, node, args, names) -> list:
        """A specialized branch: the value Python saw when tracing, checked at every call."""
        expected = node.attrs["expected"]
        (value,) = node.inputs
        test = guard_test(args[0], expected)
        if self.array_api:
            test = test.replace("np.isnan(", "xp.isnan(")
        seen = number_source(expected) if not isinstance(expected, tuple) else \
            f"the array {list(expected[2])!r:.40}"
        if value in self.low.feeds or not value.inputs:
            what = args[0]
        else:
            # a constant as its NumPy literal: `0.0`, not the array-API form's xp.asarray
            what = f"{value.op.name}(" + ", ".join(
                NUMPY.constant(i) if i.op is CONSTANT else names[i] for i in value.inputs) + ")"
        what = what if len(what) <= 60 else what[:57] + "..."   # tapec's names: no escaping
        return [f"if {test}:",
                "    raise ValueError(\"input outside the traced branch: \"",
                f"                     {what + ' was ' + seen + ' when exported'!r})"]

def _audit(source: str):
    """The finished module parses, and imports nothing but numpy (math for erf, and
    array_api_compat where it is installed)."""
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add(f"from {node.module}")
    if not imported <= {"numpy", "math", "array_api_compat"}:
        raise RuntimeError(f"tapec.export wrote imports of {sorted(imported)}; this is a bug "
                           "in tapec")
