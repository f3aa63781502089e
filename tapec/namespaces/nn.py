"""`tapec.nn`: TensorFlow's neural-network namespace."""
from ..ops.elementwise import sigmoid, tanh  # noqa: F401
from ..ops.nn import *  # noqa: F401,F403
from ..ops import nn as _nn

__all__ = ["sigmoid", "tanh", *_nn.__all__]

# TensorFlow's activations and nn helpers (tapec/ops/activations.py).
from ..ops.activations import (dropout, elu, gelu, l2_loss, leaky_relu, moments,  # noqa: E402,F401
                               relu6, selu, silu, softsign, swish)

__all__ += ["dropout", "elu", "gelu", "l2_loss", "leaky_relu", "moments", "relu6", "selu",
            "silu", "softsign", "swish"]

# Convolution and pooling, channels last (tapec/ops/convolution.py).
from ..ops.convolution import *  # noqa: E402,F401,F403
from ..ops import convolution as _convolution  # noqa: E402

__all__ += _convolution.__all__


from ._names import namespace_getattr as _namespace_getattr  # noqa: E402

# A missing name says what tapec does not implement (tapec/namespaces/_names.py).
__getattr__ = _namespace_getattr(__name__, "nn")
