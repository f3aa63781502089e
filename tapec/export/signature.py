"""What an exported module accepts and says about itself.

Each exported function first checks its arguments against the traced signature
(`arguments`: shapes and dtypes, and the values of Python numbers, which were fixed when
tracing) by calling the module's `_arguments`, which takes NumPy arrays through a fast
path of plain comparisons and anything else through helpers written into the module only
when used (`HELPERS`). The
module docstring (`docstring`) lists the functions, the signature, the formulas in
LaTeX, the specialized branches and the embedded values; user text enters it only
through `display` and `doc_safe`.
"""
from __future__ import annotations

import textwrap

import numpy as np

from ..ir.nodes import topological_order
from ..tensor import Tensor, Variable
from .layout import WIDTH, ExportError, display, doc_safe, wrapped


def arguments(module) -> tuple:
    """(the line that starts each function, the lines of the module's `_arguments`).

    Every function of a module takes the same arguments, so one function checks them:
    `_arguments` returns the namespace and device (array-API form), the array arguments
    as arrays of that namespace and the sizes `_size<k>` of the None dimensions. NumPy
    arrays of the exported dtypes and shapes take the fast path, a test of plain
    comparisons and nothing else; any other call goes through the checking helpers
    (`HELPERS`: `_namespace`, `_checked`, `_same_size`), which convert what they can and
    raise ValueError naming the argument, its shape and dtype, and the signature."""
    params, xp = module.params, module.array_api
    fixed = [k for k, arg in enumerate(module.args)
             if is_python_number(arg) and module.specs[k] is None]
    arrays = [k for k in range(len(params)) if k not in fixed]
    sizes = [f"_size{k}" for k in range(len(module.groups))]
    results = ", ".join((["xp", "device"] if xp else []) + [params[k] for k in arrays] + sizes)
    call = f"{results} = _arguments({', '.join(params)})" if results else \
        f"_arguments({', '.join(params)})"
    lines = [f"def _arguments({', '.join(params)}):",
             '    """The arguments checked against the exported signature' +
             (", with their namespace and device" if xp else "") + '."""']
    for k in fixed:
        module.need("_fixed")
        lines.append(f"    _fixed({params[k]!r}, {params[k]}, {number_source(module.args[k])})")
    dtypes = {}
    if arrays:
        test = _fast_test(module, arrays, dtypes)
        fast = (["np", "None"] if xp else []) + [params[k] for k in arrays] + [
            f"{params[a]}.shape[{axis}]" for (a, axis), *_ in module.groups]
        lines += [*_wrapped_test(test), *_returned("        ", fast)]
    if xp:
        module.need("_namespace")
        lines.append(f"    xp, device = _namespace({', '.join(params)})")
    for k in arrays:
        module.need("_checked_in" if xp else "_checked")
        lines.append(f"    {params[k]} = _checked({params[k]!r}, {params[k]}, "
                     f"{declared_shape(module, k)}, {np.dtype(arg_dtype(module.args[k])).name!r}"
                     + (", xp, device)" if xp else ")"))
    for k, dims in enumerate(module.groups):
        if len(dims) == 1:
            ((a, axis),) = dims
            lines.append(f"    _size{k} = {params[a]}.shape[{axis}]")
        else:
            module.need("_same_size")
            lines.append(f"    _size{k} = _same_size(" + ", ".join(
                f"({params[a]!r}, {params[a]}, {axis})" for a, axis in dims) + ")")
    if results:
        lines += _returned("    ", [results])
    lines = [piece for line in lines for piece in
             ([line] if line.startswith("            ") else wrapped(line))]
    # The dtypes the fast path compares with, made once (a dtype object compares faster
    # than its name).
    constants = [f"{name} = np.dtype({dtype!r})" for dtype, name in dtypes.items()]
    return call, constants + (["", ""] if constants else []) + lines


def _returned(indent, names) -> list:
    """`return a, b, ...` at `indent`, parenthesized and broken after commas when long."""
    line = f"{indent}return {', '.join(names)}"
    return [line] if len(line) <= WIDTH else wrapped(f"{indent}return ({', '.join(names)})")


def _fast_test(module, arrays, dtypes) -> list:
    """The fast path's test, a list of clauses joined by `and`: each array argument is a
    NumPy array (exactly: a subclass may behave otherwise) of its exported dtype and
    shape; a None dimension is read from the first argument that has it, and the others
    that share its size are compared with that one."""
    params = module.params
    reader = {}             # (argument, axis) -> the expression of its size
    for dims in module.groups:
        (a, axis), *others = dims
        for dim in others:
            reader[dim] = f"{params[a]}.shape[{axis}]"
    clauses = [f"type({params[k]}) is np.ndarray" for k in arrays]
    for k in arrays:
        dtype = np.dtype(arg_dtype(module.args[k])).name
        name = dtypes.setdefault(dtype, f"_{dtype.upper()}")
        clauses.append(f"{params[k]}.dtype == {name}")
    for k in arrays:
        shape, p = declared_shape(module, k), params[k]
        if None not in shape:
            clauses.append(f"{p}.shape == {shape!r}")
        elif all(d is not None or (k, axis) in reader for axis, d in enumerate(shape)):
            wanted = [repr(d) if d is not None else reader[k, axis]
                      for axis, d in enumerate(shape)]
            clauses.append(f"{p}.shape == ({', '.join(wanted)}{',' if len(wanted) == 1 else ''})")
        else:
            clauses.append(f"{p}.ndim == {len(shape)}")
            clauses += [f"{p}.shape[{axis}] == {d if d is not None else reader[k, axis]}"
                        for axis, d in enumerate(shape) if d is not None or (k, axis) in reader]
    return clauses


def _wrapped_test(clauses) -> list:
    """`if <clauses joined by and>:` in lines of at most WIDTH columns."""
    lines, line = [], "    if ("
    for i, clause in enumerate(clauses):
        piece = clause + (" and" if i < len(clauses) - 1 else "):")
        if len(line) + len(piece) + 1 > WIDTH and line.strip() not in ("if (", ""):
            lines.append(line.rstrip())
            line = "            "
        line += piece + " "
    return lines + [line.rstrip()]


def declared_shape(module, k) -> tuple:
    """Argument k's shape in the module's signature: its TensorSpec's (None where any size
    goes), else the example's."""
    spec = module.specs[k]
    return spec._shape if spec is not None else arg_shape(module.args[k])


def docstring(module, sizes=None) -> str:
    """The module docstring (raw, without its quotes): functions, signature, formulas,
    specialized branches, embedded values and what the module needs. `sizes`, for a
    module that serves every size of its None dimensions, says at which sizes the
    formulas were printed, when they depend on them."""
    low, f = module.low, module.fname
    wrt = ", ".join(module.params[k] for k in module.argnums)
    what = f if len(module.kinds) == 1 else f"{f} and its derivatives"
    form = "" if module.array_api else " as plain NumPy"    # the last paragraph says more
    parts = [f"{what}, exported from a recording of {f}{form}.",
             "", "Functions (each computes what it returns from its arguments alone):"]
    call = f"({', '.join(module.params)})"
    for kind, fn_name in module.functions.items():
        if kind == "value" or kind in module.kinds or \
                (kind == "value_and_grad" and "grad" in module.kinds):
            parts.append(f"    {fn_name}{call}")
    if len(module.argnums) and len(module.kinds) > 1:
        parts.append(f"Derivatives are taken with respect to {wrt}.")
    parts += ["", "Input signature (other shapes or dtypes raise ValueError):"]
    for k, (param, arg) in enumerate(zip(module.params, module.args)):
        if is_python_number(arg) and module.specs[k] is None:
            parts.append(f"    {param}: the Python {type(arg).__name__} "
                         f"{number_source(arg)} (fixed when exported)")
        else:
            parts.append(f"    {param}: {np.dtype(arg_dtype(arg)).name} array of shape "
                         f"{declared_shape(module, k)}")
    if module.groups:
        parts += ["", *textwrap.wrap(
            "A None dimension takes any size: the functions read the sizes from their "
            "arguments. None dimensions traced as one size must be equal "
            "(ValueError otherwise): " + "; ".join(
                " = ".join(f"{module.params[a]}.shape[{axis}]" for a, axis in dims)
                for dims in module.groups if len(dims) > 1) + "."
            if any(len(dims) > 1 for dims in module.groups) else
            "A None dimension takes any size: the functions read the sizes from their "
            "arguments.", WIDTH - 4)]
    parts += ["", "Formulas (LaTeX):" if sizes is None else
              f"Formulas (LaTeX), printed at the sizes traced ({sizes}):"]
    parts += _formulas(module)
    if low.guards:
        parts += ["", *textwrap.wrap(
            f"Control flow: {len(low.guards)} Python branch decision(s) were specialized "
            "on the example inputs; an input that would take another branch raises "
            "ValueError('input outside the traced branch: ...').", WIDTH - 4)]
    if module.constants:
        parts += ["", *textwrap.wrap(
            "Embedded values: the arrays below are what the function read when it was "
            "exported (Variables included: later assignments are not seen).", WIDTH - 4)]
        for name in module.constants:
            what, value = module.constant_info[name]
            parts.append(f"    {name}: {what}, {value.dtype.name} {value.shape}")
    if module.array_api:
        parts += ["", *textwrap.wrap(
            "Runs on the arrays it is given: NumPy, or any namespace of the array-API "
            "standard (Dask, JAX, PyTorch, CuPy, array-api-strict; through "
            "array-api-compat where it is installed), on the arguments' device; results "
            "are arrays of that namespace. Requires NumPy.", WIDTH - 4)]
    else:
        needs = "NumPy and the standard library's math (for erf)" if any(
            n.op.name == "erf" for n in topological_order(
                [n for nodes, _ in module.kinds.values() for n in nodes])) else "NumPy only"
        parts += ["", f"Requires {needs} (an op of the function has no array-API form: "
                      "NumPy arrays only)."]
    return doc_safe("\n".join(parts)) + "\n"


def _formulas(module) -> list:
    """LaTeX of the value and of its derivative, from tapec.export.latex when it
    can print this recording; a note saying so when it cannot."""
    low = module.low
    pairs = [(t, p) for t, p in zip(low.traced, module.params) if isinstance(t, Tensor)]
    for node, name in module.leaf_names.items():
        kind, k = low.feeds[node]
        if kind == "variable":
            pairs.append((low.variables[k], name))
        elif kind == "captured" and low.captured_ids[k] in low.tape.recorded.tensors:
            pairs.append((low.tape.recorded.tensors[low.captured_ids[k]], name))
    formulas = []
    try:
        from .latex import tape_latex
        for t, name in zip(low.flat, module.output_names["value"]):
            formulas.append((f"{name} =", tape_latex(low.tape, t, None,
                                                     pairs + [(t, name)])))
        if "grad" in module.kinds or "jacobian" in module.kinds:
            sources = [low.traced[k] for k in module.argnums]
            label = "gradient:" if "grad" in module.kinds else "jacobian:"
            for t, name in zip(low.flat, module.output_names["value"]):
                formulas.append((label, tape_latex(low.tape, t, sources,
                                                   pairs + [(t, name)])))
    except Exception as error:  # noqa: BLE001  (a formula is documentation only)
        return [(f"    (no formula: the LaTeX printer failed with "
                 f"{display(type(error).__name__)})")]
    lines = []
    for label, tex in formulas:
        lines.append(f"    {label}")
        lines += textwrap.wrap(tex, WIDTH - 8, initial_indent="        ",
                               subsequent_indent="        ", break_long_words=False,
                               break_on_hyphens=False)
    return lines


def is_python_number(arg) -> bool:
    """A Python number argument (part of the traced signature), not a NumPy scalar (which
    is a 0-d array argument, although np.float64 subclasses float)."""
    return isinstance(arg, (bool, int, float, complex)) and not isinstance(arg, np.generic)


def arg_dtype(arg):
    if isinstance(arg, Variable):
        return arg._value.dtype
    if isinstance(arg, Tensor):
        return arg._dtype
    return np.asarray(arg).dtype


def arg_shape(arg) -> tuple:
    if isinstance(arg, Variable):
        return tuple(arg._value.shape)
    if isinstance(arg, Tensor):
        return tuple(arg._shape)
    # np.asarray, not np.shape: an ndarray subclass may override `shape` with objects
    # whose repr is code (the shape is printed into the module).
    return tuple(int(d) for d in np.asarray(arg).shape)


# Helpers the functions call, written into the module only when used. Their names start
# with `_`, which no name derived from the user's can (`naming.identifier` strips it).
HELPERS = {
    "_checked": r'''
def _checked(name, value, shape, dtype):
    """`value` as an array, if it has the shape and dtype this module was exported for."""
    array = np.asarray(value)
    if array.ndim != len(shape) or array.dtype != dtype or any(
            want is not None and want != got for want, got in zip(shape, array.shape)):
        raise ValueError(f"argument {name}: expected shape {shape} dtype {dtype} (the exported "
                         f"signature), got shape {array.shape} dtype {array.dtype}")
    return array
'''.strip().splitlines(),
    "_namespace": r'''
def _namespace(*args):
    """The array namespace and device the arguments live in: NumPy's (the fast path) for
    NumPy arrays, Python numbers and lists; else the array-API namespace of the others
    (array-api-compat's, which also wraps PyTorch, Dask and CuPy, or their own)."""
    arrays = [a for a in args if not isinstance(a, _NUMPY_INPUTS)]
    if not arrays:
        return np, None
    if array_api_compat is not None:
        return array_api_compat.array_namespace(*arrays), array_api_compat.device(arrays[0])
    found = {a.__array_namespace__() for a in arrays if hasattr(a, "__array_namespace__")}
    if len(found) != 1 or not all(hasattr(a, "__array_namespace__") for a in arrays):
        types = ", ".join(sorted({type(a).__name__ for a in arrays}))
        raise TypeError(f"arguments of type {types} need array-api-compat to find their "
                        "namespace (pip install array-api-compat), or pass NumPy arrays")
    return found.pop(), getattr(arrays[0], "device", None)


_NUMPY_INPUTS = (np.ndarray, np.generic, bool, int, float, complex, list)
'''.strip().splitlines(),
    "_checked_in": r'''
def _checked(name, value, shape, dtype, xp, device):
    """`value` as an array of `xp`, if it has the shape and dtype this module was exported for
    (None: any size)."""
    array = value if xp is np and type(value) is np.ndarray else xp.asarray(value, device=device)
    if array.dtype != getattr(xp, dtype) or (tuple(array.shape) != shape and (
            array.ndim != len(shape) or any(want is not None and want != got
                                            for want, got in zip(shape, array.shape)))):
        raise ValueError(f"argument {name}: expected shape {shape} dtype {dtype} (the exported "
                         f"signature), got shape {tuple(array.shape)} dtype {array.dtype}")
    return array
'''.strip().splitlines(),
    "_same_size": r'''
def _same_size(*dimensions):
    """The size of argument dimensions exported as one None dimension, which must agree."""
    sizes = [value.shape[axis] for _, value, axis in dimensions]
    if sizes.count(sizes[0]) != len(sizes):     # text only for the error: this runs per call
        raise ValueError("these None dimensions were exported as one size and must be equal: "
                         + ", ".join(f"{name}.shape[{axis}] = {value.shape[axis]}"
                                     for name, value, axis in dimensions))
    return sizes[0]
'''.strip().splitlines(),
    "_fixed": r'''
def _fixed(name, value, exported):
    """A Python-number argument was fixed when exporting: any other value is another function."""
    if value != exported:
        raise ValueError(f"argument {name}: the module was exported for {name} = {exported!r}, "
                         f"got {value!r}")
'''.strip().splitlines(),
}


def number_source(value) -> str:
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
        return f"complex({number_source(real)}, {number_source(imag)})"
    if isinstance(value, float):
        value = float.real.__get__(value)
        return float.__repr__(value) if np.isfinite(value) else f"float({str(value)!r})"
    raise ExportError(f"tapec.export: expected a Python number, got a "
                      f"{display(type(value).__name__)}")
