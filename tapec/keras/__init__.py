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

__all__ = ["activations", "callbacks", "initializers", "layers", "losses", "metrics",
           "optimizers", "regularizers", "saving", "utils", "models", "Input", "Layer", "Model",
           "Sequential", "Variable"]
