"""`tapec.nn`: TensorFlow's neural-network namespace."""
from ..ops.elementwise import relu, sigmoid, softplus, tanh  # noqa: F401
from ..ops.nn import *  # noqa: F401,F403
from ..ops import nn as _nn

__all__ = ["relu", "sigmoid", "softplus", "tanh", *_nn.__all__]
