"""Keras layers (`tf.keras.layers`)."""
from .base import *  # noqa: F401,F403
from .core import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .convolutional import *  # noqa: F401,F403
from .convolutional_variants import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
