"""A call of a recorded function: its arguments flattened, and the key of its trace.

Positional and keyword arguments, nested in lists, tuples and dicts, flatten to
leaves (tensors, Variables, arrays, Python values). The trace key is the nesting plus,
per leaf, what a trace specializes on: shapes and dtypes of tensors, the identity of
Variables, the values of Python numbers and strings (as TensorFlow: each new Python
value is a new trace).
"""
from __future__ import annotations

import builtins
import inspect
import keyword
import re

import numpy as np

from .. import nest
from . import foreign
from ..codegen.names import GENERATED_GLOBALS
from ..tensor import Tensor, Variable


def signature(args, arrays_only=False, foreign_arrays=False) -> tuple:
    """The trace key of flat arguments: shapes and dtypes of tensors, Variable identity,
    Python values (as TensorFlow: each new Python number is a new trace). Strings and
    None are Python values too, unless `arrays_only` (an export's arguments). An array
    of another library raises `ForeignArguments` (a TypeError), unless `foreign_arrays`:
    then its shape and dtype are its key, as a tensor's."""
    parts = []
    for a in args:
        if type(a) is Tensor:           # the common leaf, without the shape property
            # Its true shape, not the static one: inside a trace with None dimensions
            # the static shape is the same for every size, and programs are not.
            parts.append(("tensor", tuple(a._shape), _dtype_str(a._dtype)))
        elif isinstance(a, Variable):
            # The Variable itself is traced (read at every call), so it is the signature.
            value = a._value            # (its shape and dtype: `shape` builds a TensorShape)
            parts.append(("variable", id(a), value.shape, _dtype_str(value.dtype)))
        elif isinstance(a, Tensor):
            parts.append(("tensor", tuple(a._shape), np.dtype(a._dtype).str))
        elif isinstance(a, (np.ndarray, np.generic)):
            parts.append(("tensor", a.shape, a.dtype.str))
        elif isinstance(a, (bool, int, float, complex)):
            parts.append(("python", type(a).__name__, a))
        elif not arrays_only and (a is None or isinstance(a, (str, bytes))):
            parts.append(("python", type(a).__name__, a))
        elif foreign.is_array(a):      # checked last: NumPy calls never get here
            if not foreign_arrays:
                raise foreign.ForeignArguments(len(parts), a)
            parts.append(foreign.signature_part(a, len(parts)))
        else:
            raise TypeError(f"tapec.function: argument {len(parts)} is a {type(a).__name__}; "
                            "expected tensors, Variables, NumPy arrays, Python numbers or "
                            "strings, or lists, tuples and dicts of them")
    return tuple(parts)


_DTYPE_STR = {}      # dtype -> dtype.str (a property that builds a new string per call)


def _dtype_str(dtype) -> str:
    text = _DTYPE_STR.get(dtype)
    if text is None:
        text = _DTYPE_STR[dtype] = np.dtype(dtype).str
    return text


def value_of(a):
    if isinstance(a, Variable):
        return a._value
    if isinstance(a, Tensor):
        return a._eager_value("tapec.function")
    return np.asarray(a)


# Names the generated code reads as globals or builtins; a parameter must not shadow them.
_GENERATED_GLOBALS = frozenset(dir(builtins)) | GENERATED_GLOBALS
IDENTIFIER_MAX = 40        # longer user names are cut (generated lines stay readable)


def identifier(name, fallback: str) -> str:
    """A Python identifier made from a user-given name (never the raw name itself).

    Only ASCII letters, digits and `_` survive (a run of anything else becomes one `_`:
    no newline, quote or Unicode line separator can reach generated code, and Python's
    NFKC normalization cannot merge two names); leading and trailing `_` are dropped, the
    result is cut to `IDENTIFIER_MAX` characters, and one that is empty, starts with a digit,
    is a keyword or a name generated code reads (`np`, a builtin) is prefixed with
    `fallback` (an identifier of tapec's: `arg0`). Applied to its own result it changes
    nothing, so names made unique by `unique_identifiers` stay unique.
    """
    cleaned = re.sub(r"[^A-Za-z0-9_]+", "_", str(name)).strip("_")
    cleaned = cleaned[:IDENTIFIER_MAX].rstrip("_")
    if not cleaned:
        return fallback
    if cleaned[0].isdigit() or keyword.iskeyword(cleaned) or cleaned in _GENERATED_GLOBALS:
        cleaned = f"{fallback}_{cleaned}"[:IDENTIFIER_MAX].rstrip("_")
    return cleaned


def unique_identifiers(names, fallbacks) -> list:
    """`identifier` of each name, the later of two equal ones numbered (`x`, `x_2`): `x` and
    `x_`, `a-b` and `a_b`, or `x` and the first leaf of a nested `x` named `x_0` next to
    a parameter `x_0`, must not become one parameter name twice (a SyntaxError)."""
    result, taken = [], set()
    for name, fallback in zip(names, fallbacks):
        base = identifier(name, fallback)
        candidate, k = base, 2
        while candidate in taken:
            suffix = f"_{k}"
            candidate = base[:IDENTIFIER_MAX - len(suffix)].rstrip("_") + suffix
            k += 1
        taken.add(candidate)
        result.append(candidate)
    return result


class Call:
    """One call's arguments: positional and keyword arguments flattened to `leaves`
    (tensors, Variables, arrays, Python values), and how to rebuild them."""

    __slots__ = ("leaves", "structure", "n_positional", "_parameter_names", "_flat")

    def __init__(self, args, kwargs, parameter_names):
        self.structure = (args, kwargs)
        # The common call, flat positional tensors, needs no flattening.
        flat = not kwargs
        for a in args:           # a loop: a generator costs more than one argument's check
            if isinstance(a, (list, tuple, dict)):
                flat = False
                break
        self._flat = flat
        self.leaves = list(args) if self._flat else nest.flatten(self.structure)
        self.n_positional = len(args)
        self._parameter_names = parameter_names

    @property
    def names(self) -> list:
        """A parameter name per leaf (nested leaves numbered after their argument): safe
        identifiers, all different (`unique_identifiers`)."""
        names = _leaf_names(*self.structure, self._parameter_names)
        return unique_identifiers(names, [f"arg{i}" for i in range(len(names))])

    def key(self) -> tuple:
        """The trace key (`signature`); raises `ForeignArguments` for an array of another
        library (`foreign_key` is its key)."""
        if self._flat:
            return (len(self.leaves),) + signature(self.leaves)
        return (_shape_of_structure(self.structure),) + signature(self.leaves)

    def foreign_key(self, namespace: str) -> tuple:
        """The trace key of a call with arrays of the library `namespace`."""
        nesting = len(self.leaves) if self._flat else _shape_of_structure(self.structure)
        return (namespace, nesting) + signature(self.leaves, foreign_arrays=True)

    def rebuild(self, leaves):
        args, kwargs = nest.pack_sequence_as(self.structure, leaves)
        return args, kwargs

    def leaf_of_argument(self, k, what) -> int:
        """The leaf index of positional argument `k` (which must be a single value)."""
        if not -self.n_positional <= k < self.n_positional:
            raise ValueError(f"argnums {k} is out of range for {self.n_positional} arguments")
        k %= self.n_positional
        start = len(nest.flatten(self.structure[0][:k]))
        if nest.is_nested(self.structure[0][k]):
            raise TypeError(f"tapec.{what}: argument {k} is a "
                            f"{type(self.structure[0][k]).__name__}; only tensor arguments "
                            "can be differentiated")
        return start


def _shape_of_structure(structure):
    """The nesting of a call (which leaves are where), without the leaves."""
    if isinstance(structure, dict):
        return ("dict", tuple((k, _shape_of_structure(structure[k]))
                              for k in sorted(structure)))
    if isinstance(structure, (list, tuple)):
        return (type(structure).__name__,
                tuple(_shape_of_structure(item) for item in structure))
    return "."


def _leaf_names(args, kwargs, parameter_names) -> list:
    names = []
    for k, arg in enumerate(args):
        base = parameter_names[k] if k < len(parameter_names) else f"arg{k}"
        names += _names_of(base, arg)
    for key in sorted(kwargs):
        names += _names_of(str(key), kwargs[key])
    return names


def _names_of(base, value) -> list:
    count = len(nest.flatten(value))
    if not nest.is_nested(value):
        return [base]
    return [f"{base}_{j}" for j in range(count)]


def parameter_names(fn) -> list:
    """The function's positional parameter names, as safe identifiers."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return []
    return [identifier(p.name, f"arg{k}") for k, p in enumerate(parameters)
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
