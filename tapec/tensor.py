"""Tensor, Variable, constant and convert_to_tensor, with TensorFlow's value semantics.

A `Tensor` is either *eager* (it holds an immutable NumPy value) or *symbolic* (it
wraps an `ir.Node` built during a reverse pass: shape and dtype, no value). Both
kinds carry the same operators, so derivative rules written with public ops work
on symbolic tensors unchanged. Every tensor has a process-unique integer `_id`,
allocated in creation order: inputs always have smaller ids than the ops that
consume them, which makes id order a topological order of any recorded graph.

Dtype rules follow TensorFlow: Python floats become float32 and ints int32, NumPy
arrays (and arrays of other libraries) keep their dtype, and a Python scalar operand
takes the dtype of the tensor it meets. Pickling gives a new identity (fresh `_id`);
`copy.deepcopy` of a Variable gives a new variable with its own storage.
"""
from __future__ import annotations

import itertools
import operator
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from . import context
from .dtypes import DType, as_dtype, as_numpy_dtype

__all__ = ["Tensor", "TensorShape", "Variable", "constant", "convert_to_tensor", "is_tensor"]

_next_id = itertools.count(1).__next__


class TensorShape(tuple):
    """A tensor's static shape: a tuple of ints with TensorFlow's helpers."""

    __slots__ = ()

    @property
    def rank(self) -> int:
        return len(self)

    ndims = rank

    def as_list(self) -> list[int]:
        return list(self)

    def num_elements(self) -> int | None:
        if any(d is None for d in self):
            return None               # a None dimension: unknown, as in TensorFlow
        return int(np.prod(self, dtype=np.int64))

    def __repr__(self):
        return f"TensorShape({list(self)})"

    def __str__(self):
        return tuple.__repr__(self)       # "(3, 2)", as TensorFlow prints a shape


def _format_value(value: np.ndarray, is_repr: bool = False) -> str:
    text = (repr if is_repr else str)(value.item() if is_repr and not value.ndim else value[()])
    return "\n" + text if "\n" in text else text


class _Operators:
    """Python's protocols shared by Tensor and Variable. The arithmetic, comparison and
    indexing operators are installed by `ops.operators`, and NumPy's protocols by
    `numpy_api`: both build on this module, which therefore imports neither."""

    __slots__ = ()

    __hash__ = None   # elementwise == makes tensors unhashable, as in TensorFlow 2

    # Python's truth and number protocols read the eager value; a trace turns each read
    # into a guard (see _used).
    def __bool__(self):
        t, value = self._python_read("bool()")
        return bool(_used(t, value))

    def __float__(self):
        t, value = self._python_read("float()")
        return float(_used(t, value, "float()"))

    def __int__(self):
        t, value = self._python_read("int()")
        return int(_used(t, value))

    def __index__(self):
        t, value = self._python_read("index()")
        if value.dtype.kind not in "iu":
            raise TypeError(f"only integer tensors can be used as an index, got {value.dtype}")
        return int(_used(t, value))

    def _python_read(self, what):
        """(the tensor read, its value) for Python reading this value: a Variable is read
        (recorded), so a trace can guard on that read."""
        if isinstance(self, Variable):
            t = self.read_value()
            return t, t._value
        return self, self._eager_value(what)

    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            raise TypeError("len() of a 0-d tensor")
        if shape[0] is None:
            raise TypeError("len() of a tensor whose first dimension is None (an "
                            "input_signature None dimension): use tf.shape(x)[0]")
        return shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        for i in range(len(self)):
            yield self[i]

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        t, value = self._python_read("numpy conversion")
        _used(t, value, "np.asarray / np.array")   # a tape warns, a derivative's trace refuses
        if dtype is not None and np.dtype(dtype) != value.dtype:
            return value.astype(dtype)
        return value.copy() if copy else value    # np.array(t, copy=True) is writable

    # NumPy-style methods, so NumPy code using `x.sum()` or `x.T` records too (through
    # the NumPy protocols, which numpy_api installs).
    @property
    def T(self) -> Tensor:
        return np.transpose(self)

    @property
    def size(self) -> int:
        return int(np.prod(self._shape, dtype=np.int64))

    def sum(self, axis: int | Sequence[int] | None = None, dtype: Any = None, out: None = None,
            keepdims: bool = False) -> Tensor:
        return np.sum(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def mean(self, axis: int | Sequence[int] | None = None, dtype: Any = None, out: None = None,
             keepdims: bool = False) -> Tensor:
        return np.mean(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def max(self, axis: int | Sequence[int] | None = None, out: None = None,
            keepdims: bool = False) -> Tensor:
        return np.max(self, axis=axis, out=out, keepdims=keepdims)

    def min(self, axis: int | Sequence[int] | None = None, out: None = None,
            keepdims: bool = False) -> Tensor:
        return np.min(self, axis=axis, out=out, keepdims=keepdims)

    def var(self, axis: int | Sequence[int] | None = None, dtype: Any = None, out: None = None,
            ddof: int = 0, keepdims: bool = False) -> Tensor:
        return np.var(self, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)

    def std(self, axis: int | Sequence[int] | None = None, dtype: Any = None, out: None = None,
            ddof: int = 0, keepdims: bool = False) -> Tensor:
        return np.std(self, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)

    def prod(self, axis: int | Sequence[int] | None = None, dtype: Any = None, out: None = None,
             keepdims: bool = False) -> Tensor:
        return np.prod(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def dot(self, other: Any) -> Tensor:
        return np.dot(self, other)

    def reshape(self, *shape: int | Sequence[int], order: str = "C") -> Tensor:
        return np.reshape(self, shape[0] if len(shape) == 1 else shape, order=order)

    def transpose(self, *axes: int | Sequence[int]) -> Tensor:
        return np.transpose(self, (axes[0] if len(axes) == 1 else axes) or None)

    def ravel(self) -> Tensor:
        return np.ravel(self)

    flatten = ravel

    def squeeze(self, axis: int | Sequence[int] | None = None) -> Tensor:
        return np.squeeze(self, axis)

    def clip(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002  (NumPy's names)
        return np.clip(self, min, max)

    def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
        return np.trace(self, offset=offset, axis1=axis1, axis2=axis2)

    def argmax(self, axis: int | None = None) -> Tensor:
        return np.argmax(self, axis=axis)

    def argmin(self, axis: int | None = None) -> Tensor:
        return np.argmin(self, axis=axis)



class Tensor(_Operators):
    """An immutable multi-dimensional array, eager (with a value) or symbolic."""

    __slots__ = ("_value", "_shape", "_dtype", "_id", "_node", "_literal", "_origin",
                 "_static_shape", "__weakref__")

    def __init__(self, *args, **kwargs):
        raise TypeError("create tensors with tapec.constant or tapec.convert_to_tensor")

    @classmethod
    def _new(cls, value, shape, dtype, node, literal=False) -> "Tensor":
        t = object.__new__(cls)
        t._value = value
        t._shape = shape
        t._dtype = dtype
        t._id = _next_id()
        t._node = node
        t._literal = literal
        t._origin = None      # the compiled function that produced it, if any
        t._static_shape = None    # what `shape` shows, if not _shape (None dimensions)
        return t

    @classmethod
    def _eager(cls, value: np.ndarray, literal: bool = False) -> "Tensor":
        return cls._new(value, value.shape, value.dtype, None, literal)

    @classmethod
    def _symbolic(cls, node) -> "Tensor":
        return cls._new(None, node.shape, node.dtype, node)

    @property
    def shape(self) -> TensorShape:
        """The static shape: a traced argument's input_signature None dimensions are None
        (their sizes vary by call; `tf.shape(x)` computes them)."""
        return TensorShape(self._shape if self._static_shape is None else self._static_shape)

    @property
    def dtype(self) -> DType:
        return as_dtype(self._dtype)

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def numpy(self) -> np.ndarray:
        """The value as a NumPy array (a NumPy scalar for 0-d tensors, as TensorFlow)."""
        value = self._eager_value("numpy()")
        _used(self, value, ".numpy()")    # a trace guards on the value Python read
        return value[()] if value.ndim == 0 else value.copy()

    def _eager_value(self, what: str) -> np.ndarray:
        if self._value is None:
            raise TypeError(f"{what} needs a value, but this tensor is symbolic (built while "
                            "differentiating); only eager tensors have values")
        return self._value

    def __str__(self):
        if self._value is None:
            return f"tapec.Tensor(<symbolic>, shape={self._shape}, dtype={self._dtype.name})"
        return (f"tapec.Tensor({_format_value(self._value)}, shape={self._shape}, "
                f"dtype={self._dtype.name})")

    def __format__(self, format_spec: str) -> str:
        """As TensorFlow: the NumPy value's format, so a 0-d tensor formats as its number
        (f"{x:.3f}"); NumPy refuses a format spec for arrays of higher rank."""
        return format(self._eager_value("format()"), format_spec)

    def __repr__(self):
        if self._value is None:
            return f"<tapec.Tensor: symbolic, shape={self._shape}, dtype={self._dtype.name}>"
        return (f"<tapec.Tensor: shape={self._shape}, dtype={self._dtype.name}, "
                f"numpy={_format_value(self._value, is_repr=True)}>")

    def ref(self) -> _Reference:
        """A hashable reference to this tensor (tensors themselves are unhashable)."""
        return _Reference(self)

    # Identity: a pickled tensor comes back as a new tensor (a fresh `_id`) holding its
    # value, and nothing else (not the compiled function in `_origin`); a copy is the
    # tensor itself, as in TensorFlow, since tensors are immutable.
    def __reduce__(self):
        value = self._eager_value("pickle")
        return _unpickle_tensor, (np.array(value),)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


def _unpickle_tensor(value) -> Tensor:
    return Tensor._eager(_to_array(value, None, "unpickle"))


class _Reference:
    __slots__ = ("_obj",)

    def __init__(self, obj):
        self._obj = obj

    def deref(self) -> Tensor | Variable:
        return self._obj

    def __hash__(self):
        return id(self._obj)

    def __eq__(self, other):
        return isinstance(other, _Reference) and other._obj is self._obj


_next_variable_index = itertools.count().__next__


class Variable(_Operators):
    """A mutable tensor. Trainable variables are watched automatically when read on a tape.

    Every read (using the variable in an op, `read_value()`, `numpy()`) gives a fresh
    tensor holding the value at that moment; a tape that watches the variable records
    the read, and the gradient with respect to the variable sums over all its reads.
    `assign` replaces the value and never mutates an array a tape may hold.
    """

    __slots__ = ("_value", "_handle_id", "_index", "trainable", "_name", "_constraint",
                 "_synchronization", "_aggregation", "__weakref__")

    def __init__(self, initial_value: Any = None, trainable: bool | None = None,
                 validate_shape: bool = True, caching_device: Any = None,
                 name: str | None = None, variable_def: Any = None, dtype: Any = None,
                 import_scope: str | None = None, constraint: Callable | None = None,
                 synchronization: Any = None, aggregation: Any = None, shape: Any = None,
                 experimental_enable_variable_lifting: bool = True) -> None:
        """TensorFlow's `tf.Variable` signature, positional order included (trainable
        None: True; the name gets the `tf.name_scope` prefix). Placement and distribution
        arguments are accepted and kept; `constraint` is kept for optimizers to apply (as
        TensorFlow); a `shape` must be the value's; graph protos are refused."""
        if variable_def is not None or import_scope is not None or initial_value is None:
            raise ValueError("Variable: an `initial_value` is required (variable_def and "
                             "import_scope, TensorFlow graph protos, are not supported)")
        if constraint is not None and not callable(constraint):
            raise ValueError(f"Variable: constraint must be callable, got {constraint!r:.60}")
        if isinstance(initial_value, Variable):
            initial_value = initial_value._value
        elif callable(initial_value):
            initial_value = initial_value()
        self._value = _to_array(initial_value, dtype, "Variable")
        if shape is not None:
            self._check_declared_shape(shape)
        self._handle_id = _next_id()
        self._index = _next_variable_index()     # construction order, for watched_variables()
        self.trainable = True if trainable is None else bool(trainable)
        self._name = context.name_scope() + ("Variable" if name is None else str(name))
        self._constraint, self._synchronization = constraint, synchronization
        self._aggregation = aggregation

    def _check_declared_shape(self, shape):
        dims = [shape] if isinstance(shape, int) else list(shape)
        if any(d is None for d in dims):
            raise ValueError(f"Variable: shape {tuple(dims)} has a None dimension; tapec "
                             "variables keep the shape of their initial value")
        if tuple(shape_arg("Variable", dims)) != self._value.shape:
            raise ValueError(f"Variable: the initial value's shape {self._value.shape} is not "
                             f"the `shape` argument {tuple(dims)}")

    @classmethod
    def _restored(cls, value, trainable, name) -> Variable:
        """A new variable with this value, flag and (full, already scoped) name."""
        v = cls(value, trainable)
        v._name = name
        return v

    constraint = property(lambda self: self._constraint)
    synchronization = property(lambda self: self._synchronization)
    aggregation = property(lambda self: self._aggregation)

    @property
    def name(self) -> str:
        return f"{self._name}:0"

    @property
    def shape(self) -> TensorShape:
        return TensorShape(self._value.shape)

    @property
    def dtype(self) -> DType:
        return as_dtype(self._value.dtype)

    @property
    def _shape(self):
        return self._value.shape

    @property
    def _dtype(self):
        return self._value.dtype

    @property
    def ndim(self) -> int:
        return self._value.ndim

    def read_value(self) -> Tensor:
        """The current value as a tensor; recorded on tapes that watch this variable."""
        value = Tensor._eager(self._value)
        for tape in context.active_tapes():
            tape._on_variable_read(self, value)
        return value

    _read = read_value

    def value(self) -> Tensor:
        return self.read_value()

    def numpy(self) -> np.ndarray:
        return self.read_value().numpy()

    def _eager_value(self, what: str) -> np.ndarray:
        return self.read_value()._value

    def assign(self, value: Any, use_locking: bool = False, name: str | None = None,
               read_value: bool = True) -> Variable | None:
        """Replace the value; shape and dtype must stay the same (TensorFlow's signature:
        `read_value` is the fourth argument). Inside a `tapec.function` trace the write
        is part of the compiled program, done by every call."""
        self._check_dtype(value, "Variable.assign")
        tracer = _tracer()
        if tracer is None:
            new = _to_array(value, self._value.dtype, "Variable.assign")
            self._check_shape(new.shape, "Variable.assign")
            self._value = new
        else:
            self._write_traced(tracer, _as_tensor_of(value, self._value.dtype,
                                                     "Variable.assign"), "Variable.assign")
        return self if read_value else None

    def assign_add(self, delta: Any, use_locking: bool = False, name: str | None = None,
                   read_value: bool = True) -> Variable | None:
        """Add `delta` (the variable's shape, or one that broadcasts to it)."""
        return self._update(delta, np.add, operator.add, "Variable.assign_add", read_value)

    def assign_sub(self, delta: Any, use_locking: bool = False, name: str | None = None,
                   read_value: bool = True) -> Variable | None:
        """Subtract `delta` (the variable's shape, or one that broadcasts to it)."""
        return self._update(delta, np.subtract, operator.sub, "Variable.assign_sub",
                            read_value)

    def _update(self, delta, combine_arrays, combine, what, read_value):
        self._check_dtype(delta, what)
        tracer = _tracer()
        if tracer is None:
            new = combine_arrays(self._value, self._delta(delta, what))
            self._value = _to_array(new, self._value.dtype, what)
        else:
            delta = _as_tensor_of(delta, self._value.dtype, what)
            self._delta(delta._value, what)
            self._write_traced(tracer, combine(self.read_value(), delta), what)
        return self if read_value else None

    def _write_traced(self, tracer, new: Tensor, what):
        """A write while tracing: the tracer records it as an effect of the program."""
        self._check_shape(new._shape, what)
        tracer._on_variable_assign(self, new)
        self._value = new._value

    def _check_shape(self, shape, what):
        if tuple(shape) != self._value.shape:
            raise ValueError(f"{what}: shape {tuple(shape)} does not match the variable's "
                             f"shape {self._value.shape}")

    def _delta(self, delta, what):
        array = _to_array(delta, self._value.dtype, what)
        shape = self._value.shape
        try:
            fits = np.broadcast_shapes(array.shape, shape) == shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"{what}: delta of shape {array.shape} does not match the "
                             f"variable's shape {shape}")
        return array

    def __str__(self):
        return (f"<tapec.Variable '{self.name}' shape={self._value.shape} "
                f"dtype={self._value.dtype.name}, numpy={_format_value(self._value, True)}>")

    __repr__ = __str__

    def ref(self) -> _Reference:
        return _Reference(self)

    # Identity: a deep copy or an unpickled variable is a new variable (fresh handle and
    # index, its own storage) with the value, trainable flag and name; `copy.copy` is
    # the variable itself (TensorFlow does the same).
    def __reduce__(self):
        return Variable._restored, (np.array(self._value), self.trainable, self._name)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        copied = Variable._restored(self._value, self.trainable, self._name)
        memo[id(self)] = copied
        return copied

    def _check_dtype(self, value, what):
        """A write of a tensor (or variable) must have this variable's dtype, eager or
        traced: TensorFlow refuses to convert one; NumPy arrays and Python numbers are
        converted."""
        if isinstance(value, (Tensor, Variable)) and value._dtype != self._value.dtype:
            kind = "Variable" if isinstance(value, Variable) else "tensor"
            raise TypeError(f"{what}: cannot write a {value._dtype.name} {kind} to Variable "
                            f"'{self.name}' of dtype {self._value.dtype.name}; cast it first "
                            f"(tapec.cast(value, tapec.{self._value.dtype.name}))")


def _tracer():
    """The innermost tape tracing a `tapec.function`, if one is recording."""
    for tape in reversed(context.active_tapes()):
        if tape._records_everything and tape._recording:
            return tape
    return None


def _as_tensor_of(value, dtype, what) -> Tensor:
    """`value` as a tensor of `dtype` (tensors, already checked to have it, keep their
    node; anything else is converted)."""
    if isinstance(value, Variable):
        value = value.read_value()
    if isinstance(value, Tensor):
        return value
    return Tensor._eager(_to_array(value, dtype, what))


def _used(t, value, converted=None):
    """Python read `value` (the array itself, before any conversion) from `t`: tell the
    tapes (a trace guards on it; `converted` names a read that turns the value into
    plain data, np.asarray or float(), which a derivative cannot follow). Returns
    `value`."""
    for tape in context.active_tapes():
        tape._on_value_used(t, value, converted)
    return value


def is_recorded(t) -> bool:
    """Whether an active tape is recording `t` (a Tensor or Variable): a value computed
    from it outside the tape's ops would lose its gradient, or, in a trace, go stale."""
    tensor_id = t._handle_id if isinstance(t, Variable) else getattr(t, "_id", None)
    for tape in context.active_tapes():
        if tape._recording and tensor_id in tape._live:
            return True
    return False


def call_site() -> tuple:
    """(file, line) of the innermost frame outside tapec and NumPy: the user's code."""
    frame = sys._getframe(1)       # frames only: reading source lines would cost far more
    while frame is not None:
        filename = frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(_PACKAGE) and \
                f"{os.sep}numpy{os.sep}" not in filename:
            return filename, frame.f_lineno
        frame = frame.f_back
    return "<unknown>", 0


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _python_scalar_dtype(value) -> np.dtype:
    """TensorFlow's default dtype for Python data: float32, int32, complex128 or bool."""
    flat = np.asarray(value)
    if flat.dtype.kind == "b":
        return np.dtype(np.bool_)
    if flat.dtype.kind in "iu":
        return np.dtype(np.int32)
    if flat.dtype.kind == "f":
        return np.dtype(np.float32)
    if flat.dtype.kind == "c":
        return np.dtype(np.complex128)
    raise TypeError(f"cannot convert {type(value).__name__} {value!r} to a tensor: expected "
                    "numbers, nested lists of numbers, or NumPy arrays")


def _to_array(value, dtype, what: str) -> np.ndarray:
    """A fresh, read-only NumPy array for `value` with TensorFlow's dtype rules."""
    if isinstance(value, Tensor):
        array = value._eager_value(what)
    elif isinstance(value, Variable):
        array = value._value
    elif isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{what}: cannot convert {type(value).__name__} {value!r} to a tensor")
    elif isinstance(value, (np.ndarray, np.generic)):
        array = value
    elif is_array_like(value):
        array = _foreign_array(value, what)
    else:
        if isinstance(value, range):
            value = list(value)
        try:
            array = np.asarray(value)
        except ValueError:      # nested lists of different lengths: a ValueError in TF too
            raise ValueError(f"{what}: cannot convert non-rectangular Python sequence "
                             f"{value!r:.80} to a tensor (every nested list at one depth "
                             "must have the same length)") from None
        except TypeError as e:
            raise TypeError(f"{what}: cannot convert {value!r} to a tensor ({e})") from None
        if array.dtype == object or array.dtype.kind in "USV":
            raise TypeError(f"{what}: cannot convert {type(value).__name__} {value!r} to a "
                            "tensor: expected numbers, nested lists of numbers, or arrays")
        if dtype is None:
            dtype = _python_scalar_dtype(array)
    if array.dtype == object or array.dtype.kind not in "fiucb":
        raise TypeError(f"{what}: arrays of dtype {array.dtype} are not supported")
    target = array.dtype if dtype is None else _dtype_arg(what, dtype)
    lossy = (array.dtype.kind == "c" and target.kind != "c") or (
        array.dtype.kind == "f" and target.kind in "iub"
        and not np.array_equal(array, np.trunc(array)))
    if lossy:
        raise TypeError(f"{what}: cannot convert {array.dtype.name} values to dtype "
                        f"{target.name} without losing information")
    result = np.array(array, dtype=target, copy=True)
    result.flags.writeable = False
    return result


def is_array_like(value) -> bool:
    """An array from another library (JAX, torch, pandas, TensorFlow, Dask, ...): it has
    `__array__` or a `dtype`, and keeps that dtype as a NumPy array does."""
    return (hasattr(type(value), "__array__") or hasattr(value, "dtype")) and not \
        isinstance(value, (Tensor, Variable, np.ndarray, np.generic, list, tuple))


def _foreign_array(value, what: str) -> np.ndarray:
    try:
        array = np.asarray(value)
        if array.dtype == object and hasattr(value, "dtype"):
            array = np.asarray(value, dtype=np.dtype(value.dtype))
    except (TypeError, ValueError, RuntimeError) as e:  # torch: RuntimeError
        raise TypeError(f"{what}: cannot convert {type(value).__name__} to a tensor "
                        f"({e})") from None
    return array


def _dtype_arg(what: str, dtype) -> np.dtype:
    """`dtype` as a NumPy dtype; a TypeError naming `what` and the argument otherwise."""
    try:
        return as_numpy_dtype(dtype)
    except TypeError as e:
        raise TypeError(f"{what}: invalid dtype argument {dtype!r:.60}: {e}") from None


def shape_arg(op_name, shape) -> tuple:
    """A shape argument (an int, a sequence, or a 1-d integer tensor) as a tuple of ints."""
    if hasattr(shape, "numpy"):
        shape = shape.numpy()
    array = np.asarray(shape) if not isinstance(shape, (str, bytes)) else None
    if array is None or array.ndim > 1 or (array.size and array.dtype.kind not in "iu"):
        raise TypeError(f"{op_name}: shape must be an int or a 1-d sequence of ints, got "
                        f"{shape!r:.60}")
    dims = tuple(int(s) for s in array.reshape(-1))
    if any(s < 0 for s in dims):
        raise ValueError(f"{op_name}: shape {dims} has a negative dimension")
    return dims


def constant(value: Any, dtype: Any = None, shape: int | Sequence[int] | None = None,
             name: str | None = None) -> Tensor:
    """A tensor holding a copy of `value` (TensorFlow's `tf.constant`)."""
    if dtype is not None:
        _dtype_arg("constant", dtype)
    array = _to_array(value, dtype, "constant")
    if shape is not None:
        shape = shape_arg("constant", shape)
        if array.size == 1 and array.ndim <= 1:
            array = np.full(shape, array.reshape(()), dtype=array.dtype)
        elif array.size == int(np.prod(shape)):
            array = array.reshape(shape).copy()
        else:
            raise ValueError(f"constant: {array.size} values cannot fill shape {shape}")
        array.flags.writeable = False
    return Tensor._eager(array)


def convert_to_tensor(value: Any, dtype: Any = None, dtype_hint: Any = None,
                      name: str | None = None) -> Tensor:
    """`value` as a Tensor: tensors pass through, variables are read, data is copied."""
    if dtype is not None:
        _dtype_arg("convert_to_tensor", dtype)
    if isinstance(value, Tensor):
        if dtype is not None and as_numpy_dtype(dtype) != value._dtype:
            raise ValueError(f"convert_to_tensor: tensor has dtype {value._dtype.name}, "
                             f"requested {as_dtype(dtype).name}")
        return value
    if isinstance(value, Variable):
        t = value.read_value()
        if dtype is not None and as_numpy_dtype(dtype) != t._dtype:
            raise ValueError(f"convert_to_tensor: variable has dtype {t._dtype.name}, "
                             f"requested {as_dtype(dtype).name}")
        return t
    if dtype is None and dtype_hint is not None and not (
            isinstance(value, (np.ndarray, np.generic)) or is_array_like(value)):
        try:
            return Tensor._eager(_to_array(value, dtype_hint, "convert_to_tensor"))
        except TypeError:
            pass
    return Tensor._eager(_to_array(value, dtype, "convert_to_tensor"))


def is_tensor(x: Any) -> bool:
    """Whether `x` is a tapec Tensor or Variable."""
    return isinstance(x, (Tensor, Variable))

