"""Exports that serve every size of their TensorSpec arguments' None dimensions.

    tapec.export(loss, (w, tf.TensorSpec([None, 3], tf.float64), tf.TensorSpec([None]))...

An export needs values to trace, so a TensorSpec argument is traced on example data
made from a fixed seed (`example_value`): floats uniform in [0.5, 1.5) (positive and
away from 0, so logs, square roots and divisions trace without NaN), integers and
booleans zero (a valid index into any non-empty axis). Each None dimension gets its own
size (5, 7, 11, ...: distinct, so a size in the generated code tells which dimension it
follows); where the function cannot run on those (it adds two of them, say), all None
dimensions are traced at one size and the module requires them to be equal.

The module is then made again at three probe sizes (`tracing.polymorphic.probe_sizes`,
the machinery `tapec.function` uses for an input_signature's None dimensions) and the
four modules' code is compared token by token (`tracing.polymorphic.sized_source`):
every number that follows a size (a mean's 1/n, a reshape to n rows) becomes an
expression of `_size<k>`, which each function reads from its arguments' shapes. Anything
else that changes with the size (another branch, an embedded array of that size, a
number no such form fits) raises ExportError: the module would be right only at the
sizes traced. Python branches on values are specialized to the example data and
guarded in the module, as in every export.
"""
from __future__ import annotations

import difflib

import numpy as np

from ..tracing.polymorphic import probe_sizes, resized, sized_source
from ..tracing.tensor_spec import TensorSpec
from .layout import ExportError

SEED = 0
SIZES = (5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47)   # the None dimensions' sizes


def polymorphic_source(args, make) -> str:
    """The module's source for example `args` that hold TensorSpecs; `make(values,
    groups)` is the `_Module` traced on `values`, reading `_size<k>` from the argument
    dimensions `groups[k]` ((argument index, axis) pairs)."""
    dims = []
    for k, arg in enumerate(args):
        if isinstance(arg, TensorSpec):
            if arg._shape is None:
                raise ExportError(f"tapec.export: argument {k} is a TensorSpec of unknown "
                                  f"rank ({arg!r}); an exported module needs the rank: give "
                                  "a shape, with None for dimensions of any size")
            dims += [(k, axis) for axis, d in enumerate(arg._shape) if d is None]
    if len(dims) > len(SIZES):
        raise ExportError(f"tapec.export: {len(dims)} None dimensions; at most "
                          f"{len(SIZES)} are supported")
    sizes = {dim: SIZES[i] for i, dim in enumerate(dims)}
    try:
        module = make(_examples(args, sizes), _groups(sizes))
    except ExportError:
        raise
    except Exception:        # noqa: BLE001 - the dimensions interact: trace them as one size
        if len(set(sizes.values())) < 2:
            raise
        sizes = {dim: SIZES[0] for dim in dims}
        module = make(_examples(args, sizes), _groups(sizes))
    if not dims:
        return module.source()
    values = _examples(args, sizes)
    modules, size_maps = [module], [{n: n for n in sizes.values()}]
    for probe in probe_sizes(sizes):
        try:
            modules.append(make(resized(values, sizes, probe), _groups(sizes)))
        except ExportError:
            raise
        except Exception as error:
            at = ", ".join(f"{module.params[k]}.shape[{axis}] = {probe[sizes[k, axis]]}"
                           for k, axis in dims)
            raise ExportError(f"tapec.export: {module.fname} traced at {at} raised "
                              f"{type(error).__name__}: {str(error)[:200]}; a TensorSpec's "
                              "None dimension must take any size (give it a size in the "
                              "TensorSpec otherwise)") from error
        size_maps.append(probe)
    bodies = [m.body() for m in modules]
    symbols = sorted(set(sizes.values()))
    body = sized_source(bodies, size_maps, symbols, bound=True)
    if body is None:
        raise ExportError(_not_generic(module, dims, sizes, bodies, size_maps))
    note = None
    if _formulas(modules[0]) != _formulas(modules[1]):
        note = ", ".join(f"{module.params[k]}.shape[{axis}] = {sizes[k, axis]}"
                         for k, axis in dims)
    return module.header(note) + body


def example_value(spec: TensorSpec, shape, k=0) -> np.ndarray:
    """The seeded data the TensorSpec argument k is traced on (module docstring); each
    argument draws its own, so two of one shape are not equal."""
    dtype = np.dtype(spec._dtype)
    if dtype.kind in "fc":
        return np.random.default_rng([SEED, k]).uniform(0.5, 1.5, shape).astype(dtype)
    return np.zeros(shape, dtype)


def _examples(args, sizes) -> list:
    return [example_value(a, tuple(sizes[k, axis] if d is None else d
                                   for axis, d in enumerate(a._shape)), k)
            if isinstance(a, TensorSpec) else a for k, a in enumerate(args)]


def _groups(sizes) -> list:
    """Per size symbol (in the order of `sized_source`'s symbols) its dimensions."""
    return [[dim for dim, n in sizes.items() if n == size]
            for size in sorted(set(sizes.values()))]


def _formulas(module) -> str:
    header = module.header()
    return header[header.find("Formulas (LaTeX)"):]


def _not_generic(module, dims, sizes, bodies, size_maps) -> str:
    """The ExportError's message: which dimensions, and the first line that differs."""
    names = ", ".join(f"{module.params[k]}.shape[{axis}]" for k, axis in dims)
    first, other = bodies[0].splitlines(), bodies[1].splitlines()
    where = ""
    for tag, i1, _, j1, _ in difflib.SequenceMatcher(None, first, other,
                                                      autojunk=False).get_opcodes():
        if tag != "equal":
            at = ", ".join(f"{module.params[k]}.shape[{axis}] = {sizes[k, axis]}"
                           for k, axis in dims)
            to = ", ".join(f"{size_maps[1][sizes[k, axis]]}" for k, axis in dims)
            shown = first[i1].strip() if i1 < len(first) else "(nothing)"
            again = other[j1].strip() if j1 < len(other) else "(nothing)"
            where = (f" At {at} the module has `{shown[:80]}`; at {to} it has "
                     f"`{again[:80]}`.")
            break
    return (f"tapec.export: the exported program depends on the size of the None "
            f"dimension(s) {names} in a way the module cannot compute from the arguments' "
            f"shapes (another branch or structure, an embedded array of that size, or a "
            f"number that is not n, c*n, c/n or n + c).{where} Give those dimensions a "
            "size in the TensorSpec, or export once per size")
