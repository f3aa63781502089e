"""The names of an exported module, derived from the user's where there are any.

`ModuleNamer` is the `Namer` tapec.export hands to the emitter. Before anything is
printed it names, in this order (earlier names win):

* parameters as the function's own (`x`, `w`), functions after it (`grad_loss`);
* embedded constants after the Variable or the closure variable they came from;
* outputs `loss`, `dloss_dx`, `d2loss_dx_dw`, shared by every function returning them;
* forward values after their op (`tanh_2`), cotangents of forward values `b_tanh_2`,
  other derivative values after their op.

User text becomes a name only through `identifier`: ASCII letters, digits and `_`, no
leading `_` (the module's helpers own those), no keyword, builtin or `np`.
"""
from __future__ import annotations

import inspect
import re

import numpy as np

from ..codegen.names import RESERVED, Namer, has_helpers
from ..ir.nodes import topological_order
from ..ops.shape import CONSTANT
from ..tensor import Tensor, Variable
from ..tracing.recorder import GUARD
from .layout import display


def identifier(raw, fallback: str) -> str:
    """An ASCII identifier made from user text: other characters become `_`; no leading
    underscore (those are the module's own helpers), no keyword, builtin or `np`."""
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", str(raw)).strip("_")
    cleaned = re.sub(r"__+", "_", cleaned)[:40].rstrip("_") or fallback
    if cleaned[0].isdigit():
        cleaned = f"{fallback}_{cleaned}"
    if cleaned in RESERVED:
        cleaned = f"{cleaned}_"
    return cleaned


def function_name(fn, name) -> str:
    """The module's name for `fn`: `name`, else fn's own (`f` for a lambda)."""
    if name is None:
        name = getattr(fn, "__name__", "f")
        if name == "<lambda>":
            name = "f"
    return identifier(name, "f")


def _parameter_names(fn, count) -> list:
    """The names of `fn`'s first `count` parameters as written (`arg<i>` where unknown)."""
    try:
        names = [p.name for p in inspect.signature(fn).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    return [names[i] if i < len(names) else f"arg{i}" for i in range(count)]


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


class ModuleNamer(Namer):
    """Every name of one exported module (see the module docstring for the order).

    After construction: `params`, `functions` {kind: name}, `leaf_names` {fed node:
    parameter or constant}, `constants` [name], `constant_info` {name: (what, array)} and
    `output_names` {kind: [name per output]}; values get theirs from `value(node)`."""

    def __init__(self, low, fn, args, fname, kinds, adjoint_of):
        super().__init__()
        self.low, self.fname, self.kinds = low, fname, kinds
        self._name_leaves(fn, len(args))
        self._name_outputs()
        self._name_values(adjoint_of)

    def function(self, outputs, output_names) -> "_FunctionNames":
        """The names one function uses: its outputs under their output names (the first,
        where a node is two outputs), every other value under the module's name for it."""
        own = {}
        for node, name in zip(outputs, output_names):
            if node is not None and node not in self.low.feeds and node.op is not CONSTANT:
                own.setdefault(node, name)
        return _FunctionNames(self, own)

    def _name_leaves(self, fn, count):
        """Parameters first (they are the interface), then the embedded constants."""
        low = self.low
        self.params = [self.claim(identifier(n, f"arg{i}"))
                       for i, n in enumerate(_parameter_names(fn, count))]
        f = self.fname
        self.functions = {"value": f, "grad": f"grad_{f}", "value_and_grad": f"value_and_grad_{f}",
                          "jacobian": f"jacobian_{f}", "hessian": f"hessian_{f}"}
        for function_name in self.functions.values():
            self.take(function_name)         # a constant must not replace a function
        closure = _closure_values(fn)
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
                    f"Variable {display(label)}"
                value, fallback = variable._value, "var"
            else:
                tensor = low.tape.recorded.tensors.get(low.captured_ids[k])
                value = low.captured[k]
                base = by_id.get(id(tensor)) or by_id.get(id(value)) or \
                    _closure_match(closure, np.asarray(value)) or "const"
                # A tensor f closed over, or one it made (a random draw) while traced.
                what, fallback = "a tensor the function captured", "const"
            name = self.claim(identifier(base, fallback))
            by_key[key] = self.leaf_names[node] = name
            self.constants.append(name)
            self.constant_info[name] = (what, np.asarray(value))

    def _name_outputs(self):
        """`<f>` for the value, `d<f>_d<arg>` for derivatives; one output keeps its name in
        every function that returns it."""
        f, params, argnums = self.fname, self.params, self.low.function._argnums
        value_count = len(self.kinds["value"][0])
        bases = {"value": [f] if value_count == 1 else [f"{f}_{i}" for i in range(value_count)]}
        wrt = [params[k] for k in argnums]
        if "grad" in self.kinds:
            bases["grad"] = [f"d{f}_d{a}" for a in wrt]
        if "jacobian" in self.kinds:
            bases["jacobian"] = [f"d{o}_d{a}" for o in bases["value"] for a in wrt]
        if "hessian" in self.kinds:
            bases["hessian"] = [f"d2{f}_d{a}_d{b}" for a in wrt for b in wrt]
        # An output computed by a multi-line template lends its name to the helpers.
        stems = {base for kind, names in bases.items()
                 for base, node in zip(names, self.kinds[kind][0])
                 if node is not None and has_helpers(node.op)}
        chosen, self.output_names = {}, {}
        for kind, names in bases.items():
            for base in names:
                if base not in chosen:
                    # A local may shadow the function's own name: functions never call
                    # each other. It must not shadow a parameter or a constant.
                    shadows = base in self.functions.values() and base not in params \
                        and base not in self.constants
                    chosen[base] = base if shadows else self.claim(base, base in stems)
            self.output_names[kind] = [chosen[base] for base in names]

    def _name_values(self, adjoint_of):
        """Forward values after their op (`tanh_2`), in emission order; cotangents of
        forward values `b_<forward name>`; other derivative values after their op."""
        low = self.low
        forward = set(low.nodes.values())
        roots = list(low.guards) + [n for nodes, _ in self.kinds.values() for n in nodes]
        order = [n for n in topological_order(roots, is_leaf=lambda n: n in low.feeds)
                 if n not in low.feeds and n.op is not CONSTANT and n.op is not GUARD]
        for node in order:
            if node in forward:
                self.value(node)
        for node in order:
            if self.named(node):
                continue
            of = adjoint_of.get(node)
            if of is not None and self.named(of):
                self.assign(node, f"b_{self.value(of)}")
            elif of is not None and of in self.leaf_names:
                self.assign(node, f"b_{self.leaf_names[of]}")
            else:
                self.value(node)


class _FunctionNames:
    """A namer for one function of the module: `own` names first, then the module's."""

    def __init__(self, module_namer, own):
        self._module, self._own = module_namer, own

    def value(self, node) -> str:
        return self._own.get(node) or self._module.value(node)
