"""A traced program run in another library's namespace (see foreign.py).

The program is the one a NumPy call of the same signature runs, written in the
array-API form (`Trace.run_in`, codegen/array_api.py): the foreign arguments are
passed as they are; tapec tensors, Variables' values, NumPy arrays and the values the
trace captured are moved into the namespace, on the foreign arguments' device. The
outputs are that library's arrays, of the dtypes a NumPy call gives, packed as the
function's results.

What the array-API form cannot do raises, naming it, rather than running a program
that would be wrong: a trace with guards (the form has no branch on a value), one
that assigns Variables or prints (tapec Variables and prints hold NumPy values, and the
results here are lazy or on a device), and ops the standard cannot spell
(`NoArrayApiForm`).
"""
from __future__ import annotations

import warnings

from .. import nest
from ..tensor import Tensor, Variable
from . import foreign
from .calls import value_of


def run(program, leaves, namespace: foreign.Namespace, kind: str):
    """`program` (a tracing.program.Program) run on `leaves` in `namespace`."""
    trace = program.compiled()
    what = f"tapec.{'function' if kind == 'value' else kind}"
    if trace.n_guards:
        raise TypeError(
            f"{what}: {program.name} reads the value of a tensor in Python while tracing "
            "(float(), bool(), .numpy(), an index or a branch), so its program holds "
            f"checks of those values; a program run on {namespace.name} arrays cannot "
            "check values (it runs lazily, or under jax.jit). Compute with tensor ops "
            "(tf.where for a branch, tf.gather for an index), or pass NumPy arrays")
    if trace.written or trace.prints:
        effect = "assigns Variables" if trace.written else "prints (tf.print)"
        raise TypeError(
            f"{what}: {program.name} {effect}; with {namespace.name} arrays as arguments "
            "its program computes arrays of that library, lazily or on their device, and "
            "tapec Variables and prints hold NumPy values. Keep the update or print "
            "outside the function, or pass NumPy arrays")
    # tapec's own values are NumPy arrays, which run_in moves to the namespace
    values = [value_of(a) if isinstance(a, (Tensor, Variable)) else a for a in leaves]
    if namespace.name.endswith("torch"):
        # PyTorch warns that it shares the memory of read-only NumPy arrays (tapec's
        # values are), which it could write; the program writes nothing in place.
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "The given NumPy array is not writable")
            result = trace.run_in(namespace.xp, values, namespace.device)
    else:
        result = trace.run_in(namespace.xp, values, namespace.device)
    if trace.single:
        return None if result is None else _of_dtype(result, trace.dtypes[0], namespace)
    outputs = [None if v is None else _of_dtype(v, d, namespace)
               for v, d in zip(nest.flatten(result), trace.dtypes)]
    return nest.pack_sequence_as(trace.structure, outputs)


def _of_dtype(value, dtype, namespace):
    """An output as an array of the namespace with the dtype a NumPy call gives."""
    if not foreign.is_array(value):          # a NumPy value the program passed through
        value = namespace.asarray(value)
    if foreign.numpy_dtype(value.dtype) != dtype:
        value = namespace.xp.astype(value, namespace.dtype(dtype))
    return value
