"""`keras.Variable`: Keras 3's constructor for a tapec (TensorFlow) Variable."""
from __future__ import annotations

from typing import Any

from ..tensor import Variable as _TapecVariable
from ..tensor import convert_to_tensor
from . import initializers

__all__ = ["Variable"]


def Variable(initializer: Any, shape: Any = None, dtype: Any = None,  # noqa: N802
             trainable: bool = True, autocast: bool = True, aggregation: str = "none",
             name: str | None = None) -> _TapecVariable:
    """A `tf.Variable` made as Keras 3 makes one: `initializer` is a value, or an
    initializer (a name such as "zeros", or a callable) called with `shape` and `dtype`.
    Assigned to a layer's attribute, it is one of the layer's weights."""
    if isinstance(initializer, str) or (callable(initializer) and
                                        not hasattr(initializer, "shape")):
        if shape is None:
            raise ValueError("keras.Variable: an initializer needs a `shape`")
        value = initializers.get(initializer)(tuple(shape), dtype=dtype or "float32")
    else:
        value = convert_to_tensor(initializer, dtype=dtype)
        if shape is not None and tuple(value.shape) != tuple(shape):
            raise ValueError(f"keras.Variable: the initial value has shape "
                             f"{tuple(value.shape)}, not the given shape {tuple(shape)}")
    return _TapecVariable(value, trainable=trainable, name=name or "variable")
