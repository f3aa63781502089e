"""`tapec.keras` (reachable as `tf.keras`): a focused subset of Keras 3 on tapec's tape
and tapec.function. docs/keras.md says which layers, losses, metrics and optimizers it
holds, and what it leaves out."""
from . import activations, callbacks, initializers, layers, losses, metrics, optimizers  # noqa: F401
from .models import *  # noqa: F401,F403
