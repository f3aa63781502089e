"""Arrays of other libraries as arguments of recorded functions.

`tapec.function`, `grad`, `value_and_grad`, `jacobian` and `hessian` accept arrays of
any array-API library array-api-compat knows (Dask, JAX, CuPy, PyTorch,
array-api-strict) beside tapec tensors and NumPy arrays. Such a call is traced like any
other and its program runs in the arguments' namespace, written in the array-API form
(codegen/array_api.py), so the results are arrays of that library, on the arguments'
device:

* **Detection costs NumPy calls nothing.** `calls.signature` meets a foreign array only
  where it used to raise (after every NumPy and tensor check), and raises
  `ForeignArguments` there; `Function` catches it and takes this path. array-api-compat
  is imported then, never by a NumPy call.
* **One namespace per call.** The foreign arrays of a call must share one namespace
  (array-api-compat's `array_namespace`); tapec tensors, Variables, NumPy arrays and
  Python numbers beside them are NumPy's default and are moved into that namespace
  (`xp.asarray` on the foreign arrays' device). Two libraries in one call (a torch
  tensor and a JAX array) raise a TypeError naming both.
* **Tracing needs values; running never copies.** The trace runs the Python function on
  NumPy tensors. An eager array (PyTorch, CuPy, array-api-strict, a concrete JAX array)
  is copied to the host for that one trace; a lazy one (a Dask array, a JAX tracer under
  `jax.jit`) would have to be computed, so it is traced on a stand-in: a NumPy array
  of its shape and dtype holding ones, which takes no memory of its own. Either way the
  trace must not depend on the values of these arguments through Python (a branch, a
  `float()`, an index read from them): the program runs lazily or under `jax.jit`, where
  no value exists to check a guard against, so such a read raises a TypeError where it
  happens (`stand_ins`, checked by the tracing tape).
* Replays convert nothing of the foreign arrays: Dask arrays stay lazy and compute on
  whatever scheduler is active when the result is computed (a `dask.distributed.Client`
  included); JAX arrays stay on their device.
"""
from __future__ import annotations

import math

import numpy as np

from ..tensor import Tensor, Variable


class ForeignArguments(TypeError):
    """A call has an array of another library among its arguments. Raised by
    `calls.signature`, where only NumPy arguments are accepted (an export's example
    arguments); `Function` catches it and runs the call in that library's namespace."""

    def __init__(self, position, value):
        self.position = position
        super().__init__(
            f"argument {position} ({_type_name(value)}) is an array of another library: "
            "those are accepted by calls of tapec.function, grad, value_and_grad, jacobian "
            "and hessian (docs/scale.md), not here; pass a NumPy array (np.asarray(x))")


def _type_name(value) -> str:
    cls = type(value)
    return f"{cls.__module__.split('.')[0]}.{cls.__qualname__}"


def _compat():
    try:
        import array_api_compat
    except ImportError:
        raise TypeError("tapec: arrays of other libraries (Dask, JAX, CuPy, PyTorch, "
                        "array-api-strict) as arguments need array-api-compat: "
                        "pip install 'tapec[array-api]'") from None
    return array_api_compat


def is_array(value) -> bool:
    """Whether `value` is an array of another array-API library (never a NumPy array or
    a tapec tensor). Imports nothing for NumPy arrays, tensors, and values whose type
    has no array-API method, so other objects keep their usual TypeError."""
    if isinstance(value, (np.ndarray, np.generic, Tensor, Variable)):
        return False
    cls = type(value)
    if not (hasattr(cls, "__array_namespace__") or hasattr(cls, "__dlpack__")
            or cls.__module__.split(".")[0] in ("dask", "torch", "cupy", "jax", "jaxlib")):
        return False
    try:
        import array_api_compat
    except ImportError:
        return hasattr(cls, "__array_namespace__")
    return array_api_compat.is_array_api_obj(value) and \
        not array_api_compat.is_numpy_array(value)


_NUMPY_DTYPES = {}       # (type, another library's dtype) -> NumPy's (read at every call)


def numpy_dtype(dtype) -> np.dtype:
    """The NumPy dtype of another library's dtype (`torch.float32`, JAX's and Dask's
    NumPy dtypes, `array_api_strict.float64`), matched by name."""
    key = (type(dtype), dtype)    # by type first: dtypes of two libraries never compare
    found = _NUMPY_DTYPES.get(key)
    if found is None:
        found = _NUMPY_DTYPES[key] = _numpy_dtype(dtype)
    return found


def _numpy_dtype(dtype) -> np.dtype:
    try:
        return np.dtype(dtype)
    except TypeError:
        pass
    name = str(dtype).rsplit(".", 1)[-1]
    try:
        found = np.dtype(name)
    except TypeError:
        found = None
    if found is None or found.kind not in "biufc" or found.name != name:
        raise TypeError(f"tapec: arrays of dtype {dtype} are not supported (tapec tensors "
                        "hold bool, integer, float and complex values NumPy has)")
    return found


def shape_of(value, position) -> tuple:
    """The shape of a foreign array as ints; a ValueError for unknown sizes (a Dask
    array whose chunks are not known, such as the result of a boolean mask)."""
    shape = tuple(value.shape)
    for d in shape:
        if d is None or (isinstance(d, float) and math.isnan(d)):
            raise ValueError(
                f"tapec.function: argument {position} ({_type_name(value)}) has shape "
                f"{shape} with unknown sizes; a trace specializes on sizes (or names them "
                "None in an input_signature), so they must be known: for a Dask array "
                "call x.compute_chunk_sizes() first")
    return tuple(int(d) for d in shape)


def signature_part(value, position) -> tuple:
    """What a trace specializes on for a foreign argument: its shape and NumPy dtype."""
    return ("tensor", shape_of(value, position), numpy_dtype(value.dtype).str)


class Namespace:
    """The namespace of a call's foreign arguments: `xp`, the `device` its results and
    moved arguments live on, and `name` (part of a trace's key)."""

    __slots__ = ("xp", "device", "name")

    def __init__(self, leaves):
        compat = _compat()
        foreign = [(k, a) for k, a in enumerate(leaves) if is_array(a)]
        try:
            self.xp = compat.array_namespace(*[a for _, a in foreign])
        except TypeError:
            found = {}
            for k, a in foreign:
                found.setdefault(compat.array_namespace(a).__name__, k)
            names = ", ".join(f"{name} (argument {k})" for name, k in found.items())
            raise TypeError(f"tapec.function: the arguments' arrays come from different "
                            f"libraries: {names}; a call runs in one array namespace, so "
                            "convert them to one library first") from None
        self.device = compat.device(foreign[0][1])
        self.name = self.xp.__name__

    def asarray(self, value):
        """A NumPy value (an array, a Python number) as an array of this namespace."""
        return self.xp.asarray(value, device=self.device)

    def dtype(self, dtype: np.dtype):
        """The namespace's dtype for a NumPy dtype (`xp.float32`, `xp.bool`)."""
        return getattr(self.xp, "bool" if dtype.kind == "b" else dtype.name)


def is_lazy(value) -> bool:
    """Whether reading `value` would compute it: a Dask array, or a JAX tracer (an
    argument of a function `jax.jit` or `jax.grad` is tracing)."""
    cls = type(value)
    root = cls.__module__.split(".")[0]
    if root == "dask":
        return True
    if root in ("jax", "jaxlib"):
        import jax
        return isinstance(value, jax.core.Tracer)
    return False


def trace_value(value, position) -> np.ndarray:
    """The NumPy array a trace runs the function on for a foreign argument: a host copy
    of an eager array, and for a lazy one a read-only stand-in of ones (a broadcast
    view: no memory of its own)."""
    dtype = numpy_dtype(value.dtype)
    shape = shape_of(value, position)
    if is_lazy(value):
        return np.broadcast_to(np.ones((), dtype), shape)
    compat = _compat()
    if compat.is_torch_array(value):
        value = value.detach()
    if compat.is_cupy_array(value):
        return value.get()
    try:
        array = np.from_dlpack(value, device="cpu", copy=True)
    except (BufferError, TypeError, ValueError, RuntimeError, AttributeError):
        array = np.asarray(value)
    return array.astype(dtype, copy=False)


def conform(value, dtype: np.dtype, position, fits, what) -> object:
    """A foreign argument checked against an input_signature entry: its shape must fit
    (`fits(shape)`), and it is cast to the entry's dtype in its own namespace (lazily)."""
    shape = shape_of(value, position)
    if not fits(shape):
        raise ValueError(f"{what}: argument {position} has shape {shape}, which is not "
                         "compatible with the input_signature")
    if numpy_dtype(value.dtype) == dtype:
        return value
    xp = _compat().array_namespace(value)
    return xp.astype(value, getattr(xp, "bool" if dtype.kind == "b" else dtype.name))
