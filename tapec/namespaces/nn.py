"""`tapec.nn`: TensorFlow's neural-network namespace."""
from ..ops.elementwise import relu, sigmoid, softplus, tanh  # noqa: F401
from ..ops.nn import *  # noqa: F401,F403
