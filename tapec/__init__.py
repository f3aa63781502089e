"""tapec: TensorFlow 2's GradientTape with a symbolic differentiation compiler underneath.

    import tapec as tf
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)          # tapec.Tensor(6.0, shape=(), dtype=float32)

Recorded operations form a networkx graph; `gradient` differentiates it symbolically,
generates NumPy code, and caches the compiled function by the graph's structure.
"""
from ._version import __version__

from . import data, nest, numpy_api, ops, random  # noqa: E402,F401  (numpy_api: NumPy calls on tensors)
from . import numpy_handlers  # noqa: E402,F401  (NumPy functions, by family)
from .codegen.cache import CACHE as _CACHE, CacheInfo as _CacheInfo  # noqa: E402
from .codegen.emit import readable as _readable  # noqa: E402
from .dtypes import (DType, as_dtype, bool_ as bool, complex64, complex128,  # noqa: E402,A004
                     float16, float32, float64, int8, int16, int32, int64, uint8)
from .custom import custom_gradient  # noqa: E402
from .ops.elementwise import *  # noqa: E402,F401,F403
from .ops.elementwise_math import *  # noqa: E402,F401,F403
from .ops.linalg import *  # noqa: E402,F401,F403
from .ops.nn import *  # noqa: E402,F401,F403
from .ops.reduce import *  # noqa: E402,F401,F403
from .ops.shape import *  # noqa: E402,F401,F403
from .ops.indexing import *  # noqa: E402,F401,F403
from .ops.structure import *  # noqa: E402,F401,F403
from .ops.sorting import *  # noqa: E402,F401,F403
from .ops.activations import *  # noqa: E402,F401,F403
from .ops.math_extra import *  # noqa: E402,F401,F403
from .ops.sparse_indexing import *  # noqa: E402,F401,F403
from .namespaces import debugging, errors, experimental, linalg, math, nn  # noqa: E402
from .namespaces.debugging import print_ as print  # noqa: E402,A001  (tf.print)
from .namespaces.module import Module, name_scope  # noqa: E402
from .config import (device, native_enabled, num_threads, set_native,  # noqa: E402
                     set_num_threads, set_simplify, simplify_mode)
from .function import (Function, function, grad, hessian, jacobian,  # noqa: E402
                       record, value_and_grad)
from .tape import GradientTape, UnconnectedGradients  # noqa: E402
from .tracing.tensor_spec import TensorSpec  # noqa: E402
from .export.module import export  # noqa: E402
from .export import saved_model  # noqa: E402  (tf.saved_model: save, load)
from . import keras  # noqa: E402  (tf.keras)
from .tensor import (Tensor, TensorShape, Variable, constant, convert_to_tensor,  # noqa: E402
                     is_tensor)


def cache_info() -> _CacheInfo:
    """Compile-cache statistics: CacheInfo(hits, misses, size, maxsize)."""
    return _CACHE.info()


def clear_cache() -> None:
    """Drop every compiled function (and tapec.function traces); reset the statistics."""
    from .function import clear_traces
    _CACHE.clear()
    clear_traces()


def set_cache_size(maxsize: int) -> None:
    """Bound the number of compiled functions kept (least recently used are dropped)."""
    _CACHE.resize(maxsize)


def generated_source(gradient: Tensor, full: bool = False) -> str:
    """The NumPy source that computed `gradient`, a tensor returned by a tape.

    A derivative of 0-d float64 values runs the same statements on Python floats (or in
    C) before NumPy; only the NumPy function is shown, unless `full` asks for the whole
    compiled text (docs/reading-generated-code.md)."""
    if not isinstance(gradient, Tensor):
        raise TypeError(f"generated_source: expected a Tensor returned by a tape, got "
                        f"{type(gradient).__name__}")
    if gradient._origin is None:
        raise ValueError("generated_source: this tensor was not computed by generated code "
                         "(it was not returned by gradient(), or an enclosing tape recorded "
                         "its computation op by op)")
    source = gradient._origin.source
    return source if full else _readable(source)


# The public names: what is defined or imported above by name, and the ops modules' own
# lists (imported with *), so `from tapec import *` and tools see one API.
__all__ = [
    "DType", "as_dtype", "bool", "complex64", "complex128", "float16", "float32", "float64",
    "int8", "int16", "int32", "int64", "uint8",
    "Tensor", "TensorShape", "Variable", "constant", "convert_to_tensor", "is_tensor",
    "GradientTape", "UnconnectedGradients", "custom_gradient",
    "Function", "function", "record", "grad", "value_and_grad", "jacobian", "hessian",
    "TensorSpec", "export", "saved_model",
    "set_simplify", "simplify_mode", "num_threads", "set_num_threads", "native_enabled",
    "set_native",
    "cache_info", "clear_cache", "set_cache_size", "generated_source",
    "linalg", "math", "nn", "random", "nest", "errors", "debugging", "config", "data", "keras",
    "experimental",
    "Module", "name_scope", "device",
    *ops.elementwise.__all__, *ops.elementwise_math.__all__, *ops.linalg.__all__,
    *ops.nn.__all__, *ops.reduce.__all__,
    *ops.shape.__all__, *ops.indexing.__all__,
    *ops.structure.__all__, *ops.sorting.__all__,
    *ops.activations.__all__, *ops.math_extra.__all__, *ops.sparse_indexing.__all__,
]

from .namespaces._names import MOVED as _MOVED, module_getattr as _module_getattr  # noqa: E402

# Ops TensorFlow 2 keeps only in a namespace (tf.math.log, tf.nn.relu, tf.linalg.det):
# the top-level spelling still works, with a DeprecationWarning naming TensorFlow's
# (PEP 562 __getattr__, tapec/namespaces/_names.py). Unknown names raise an AttributeError that
# says what tapec does not implement.
for _name in _MOVED:
    globals().pop(_name, None)
__all__ = [_name for _name in __all__ if _name not in _MOVED]
del _name
__getattr__ = _module_getattr(__name__)

