"""`tapec.experimental.dlpack`: TensorFlow's `tf.experimental.dlpack`.

    capsule = tf.experimental.dlpack.to_dlpack(t)      # a PyCapsule named "dltensor"
    t2 = tf.experimental.dlpack.from_dlpack(capsule)   # a tapec tensor

As TensorFlow's, `to_dlpack` returns a capsule another library consumes once
(`torch.from_dlpack(capsule)`), and `from_dlpack` takes one, or (as the array API's
`from_dlpack`) any array with `__dlpack__`. Unlike TensorFlow's, neither shares
memory: a tapec tensor is an immutable NumPy array, and a buffer shared with a library
that writes into it (PyTorch ignores DLPack's read-only flag) would change it, so both
directions copy. A tensor's own `__dlpack__` shares memory when asked to (`copy=False`).
Tensors live in CPU memory: arrays on another device raise.

This module also gives `Tensor` and `Variable` the array API's DLPack methods,
`__dlpack__` and `__dlpack_device__` (installed on import, as ops/operators.py installs
the operators), so `np.from_dlpack(t)`, `torch.from_dlpack(t)` and
`jax.numpy.from_dlpack(t)` read a tensor.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor, Variable, _to_array, _used, convert_to_tensor

__all__ = ["from_dlpack", "to_dlpack"]

_CPU = 1            # DLPack's device type for CPU memory


def to_dlpack(tf_tensor: Any) -> Any:
    """A DLPack capsule ("dltensor") holding a copy of the tensor's value, consumed once
    by another library's `from_dlpack`."""
    if not isinstance(tf_tensor, (Tensor, Variable)):
        tf_tensor = convert_to_tensor(tf_tensor)
    return tf_tensor.__dlpack__()


def from_dlpack(dlcapsule: Any) -> Tensor:
    """A tapec tensor holding a copy of a DLPack capsule's array, or of an array with
    `__dlpack__` (PyTorch, JAX, array-api-strict, NumPy) in CPU memory."""
    if type(dlcapsule).__name__ == "PyCapsule":
        source = _Capsule(dlcapsule)
    elif hasattr(dlcapsule, "__dlpack__"):
        source = dlcapsule
        device = dlcapsule.__dlpack_device__() if hasattr(dlcapsule, "__dlpack_device__") \
            else (_CPU, 0)
        if device[0] != _CPU:
            raise TypeError(f"from_dlpack: the {type(dlcapsule).__name__} is on DLPack device "
                            f"{tuple(device)}, and tapec tensors live in CPU memory; copy it "
                            "to the host first (e.g. x.cpu() or cupy.asnumpy(x))")
    else:
        raise TypeError(f"from_dlpack: expected a DLPack capsule or an array with "
                        f"__dlpack__, got {type(dlcapsule).__name__}")
    try:
        array = np.from_dlpack(source)
    except (BufferError, RuntimeError) as e:
        raise TypeError(f"from_dlpack: cannot read the array as NumPy's ({e})") from None
    return Tensor._eager(_to_array(array, None, "from_dlpack"))


class _Capsule:
    """A bare capsule given the two methods `np.from_dlpack` calls. It names no device:
    NumPy reads the device from the capsule itself and refuses one not in CPU memory."""

    __slots__ = ("capsule",)

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **_):
        return self.capsule

    def __dlpack_device__(self):
        return (_CPU, 0)


def tensor_dlpack(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
               dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
    """The value as a DLPack capsule (the array API's `__dlpack__`): a copy, or with
    `copy=False` the value itself, marked read-only (DLPack 1.0: NumPy refuses a
    consumer of the older protocol, which cannot be told). A tensor is immutable and
    consumers write into memory DLPack marks read-only (PyTorch does), hence the copy.
    Python reads the value: a trace guards on it, as on `np.asarray`."""
    t, value = self._python_read("__dlpack__")
    _used(t, value, "__dlpack__")
    exported = value if copy is False else np.array(value)
    return exported.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device,
                               copy=False)


def tensor_dlpack_device(self) -> tuple[int, int]:
    """(1, 0): DLPack's CPU device (a tensor's value is a NumPy array in CPU memory)."""
    return (_CPU, 0)


for _cls in (Tensor, Variable):
    _cls.__dlpack__ = tensor_dlpack
    _cls.__dlpack_device__ = tensor_dlpack_device
del _cls
