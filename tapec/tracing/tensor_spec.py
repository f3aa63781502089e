"""`TensorSpec`: the shape and dtype a `tapec.function` argument must have.

As in TensorFlow, a dimension may be None (any size) and the shape itself may be None
(any rank). `check_signature` matches a call against a function's `input_signature`:
Python numbers and arrays are converted to the spec's dtype, tensors must already have
it, and a shape that does not fit raises.
"""
from __future__ import annotations

import numpy as np

from .. import nest
from . import foreign
from ..dtypes import as_dtype, as_numpy_dtype
from ..tensor import Tensor, TensorShape, Variable, _to_array


class TensorSpec:
    """Describes a tensor: `TensorSpec(shape, dtype=tf.float32, name=None)`."""

    __slots__ = ("_shape", "_dtype", "name")

    def __init__(self, shape, dtype=np.float32, name=None):
        self._shape = None if shape is None else tuple(
            None if d is None else _dimension(d) for d in shape)
        self._dtype = as_numpy_dtype(dtype)
        self.name = name

    @property
    def shape(self):
        return None if self._shape is None else TensorShape(self._shape)

    @property
    def dtype(self):
        return as_dtype(self._dtype)

    @classmethod
    def from_tensor(cls, tensor, name=None):
        return cls(tuple(tensor.shape), tensor.dtype, name)

    def is_compatible_with(self, value) -> bool:
        """Whether a tensor (or spec) of that shape and dtype fits this spec."""
        shape = value._shape if not isinstance(value, TensorSpec) else value._shape
        dtype = value._dtype if hasattr(value, "_dtype") else np.asarray(value).dtype
        return dtype == self._dtype and self._fits(shape)

    def _fits(self, shape) -> bool:
        if self._shape is None or shape is None:
            return True
        return len(shape) == len(self._shape) and all(
            want is None or got is None or want == got for want, got in zip(self._shape, shape))

    def __eq__(self, other):
        return isinstance(other, TensorSpec) and (self._shape, self._dtype, self.name) == \
            (other._shape, other._dtype, other.name)

    def __hash__(self):
        return hash((self._shape, self._dtype, self.name))

    def __repr__(self):
        shape = "None" if self._shape is None else \
            "(" + ", ".join("None" if d is None else str(d) for d in self._shape) + \
            ("," if len(self._shape) == 1 else "") + ")"
        return f"TensorSpec(shape={shape}, dtype=tf.{self._dtype.name}, name={self.name!r})"


def _dimension(d) -> int:
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 0:
        raise TypeError(f"TensorSpec: dimensions must be non-negative ints or None, got {d!r}")
    return int(d)


def check_signature(specs, args, kwargs, function_name) -> tuple:
    """`args` checked against `specs` and converted to their dtypes (TypeError or
    ValueError naming the argument otherwise)."""
    if kwargs:
        raise TypeError(f"{function_name}: a function with an input_signature takes its "
                        f"arguments positionally; got keyword argument(s) "
                        f"{', '.join(sorted(kwargs))}")
    if len(args) != len(specs):
        raise TypeError(f"{function_name}: the input_signature has {len(specs)} "
                        f"argument(s), got {len(args)}")
    converted = []
    for k, (arg, spec) in enumerate(zip(args, specs)):
        if isinstance(spec, TensorSpec):          # a list or array becomes one tensor
            converted.append(_conform(arg, spec, function_name, k))
            continue
        arg_leaves, spec_leaves = nest.flatten(arg), nest.flatten(spec)
        if len(arg_leaves) != len(spec_leaves):
            raise ValueError(f"{function_name}: argument {k} does not have the structure of "
                             f"its input_signature entry {spec!r}")
        leaves = [_conform(a, s, function_name, k) for a, s in zip(arg_leaves, spec_leaves)]
        converted.append(nest.pack_sequence_as(arg, leaves))
    return tuple(converted)


def _conform(arg, spec, function_name, k):
    if isinstance(arg, (Tensor, Variable)):
        if arg._dtype != spec._dtype:
            raise TypeError(f"{function_name}: argument {k} has dtype {arg._dtype.name}, "
                            f"but the input_signature expects {spec!r}")
        value = arg
    elif not isinstance(arg, (np.ndarray, np.generic, list, tuple, int, float, complex)) \
            and foreign.is_array(arg):      # cast in its own library, lazily
        return foreign.conform(arg, spec._dtype, k, spec._fits, function_name)
    else:
        value = Tensor._eager(_to_array(arg, spec._dtype, function_name))
    if not spec._fits(tuple(value._shape)):
        raise ValueError(f"{function_name}: argument {k} has shape {tuple(value._shape)}, "
                         f"which is not compatible with the input_signature {spec!r}")
    return value
