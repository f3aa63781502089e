"""`tapec.keras` (reachable as `tf.keras`): a focused subset of Keras 3 on tapec's tape
and tapec.function. docs/keras.md says which layers, losses, metrics and optimizers it
holds, and what it leaves out."""
from . import (activations, callbacks, initializers, layers, losses, masking,  # noqa: F401
               metrics, optimizers, regularizers, saving, utils)
from . import models  # noqa: F401
from .layers.core import Input  # noqa: F401
from .layers.base import Layer  # noqa: F401
from .models import Model, Sequential  # noqa: F401
from .variables import Variable  # noqa: F401

__all__ = ["activations", "callbacks", "initializers", "layers", "losses", "masking",
           "metrics", "optimizers", "regularizers", "saving", "utils", "models", "Input",
           "Layer", "Model", "Sequential", "Variable"]

# Keras namespaces this subset leaves out, with what to do instead.
_ABSENT = {
    "mixed_precision": "dtype policies (mixed_precision.set_global_policy('mixed_float16'), "
                       "'mixed_bfloat16') are not implemented in tapec; layers compute in "
                       "their own dtype: pass dtype='float64' (or 'float16') to a layer",
    "ops": "keras.ops is not implemented in tapec; use tapec's ops (tf.math, tf.nn, ...) "
           "inside a layer's call or a Lambda layer",
    "backend": "keras.backend is not implemented in tapec; use tapec's ops and "
               "keras.utils.clear_session",
}


def __getattr__(name):
    if name in _ABSENT:
        raise AttributeError(f"tf.keras.{name}: {_ABSENT[name]}")
    raise AttributeError(f"module 'tapec.keras' has no attribute {name!r}")
