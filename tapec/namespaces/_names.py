"""What `import tapec as tf` answers for names it does not define at the top level.

Two tables: ops TensorFlow 2 keeps only in a namespace (tapec used to export them at
the top level too: they still work there, with a DeprecationWarning naming TensorFlow's
spelling), and TensorFlow features tapec does not implement (an AttributeError that says
so, and names the nearest thing tapec has). Anything else is Python's usual
AttributeError, with `name` and `obj` set so the interpreter still suggests a near
spelling ("Did you mean: 'exp'?"), and `hasattr` still answers False.
"""
from __future__ import annotations

import importlib
import sys
import warnings

# Old top-level name -> where it lives now ("namespace.name", relative to tapec).
MOVED: dict[str, str] = {
    **{name: f"math.{name}" for name in (
        "ceil", "conj", "count_nonzero", "cumprod", "cumulative_logsumexp", "erf", "expm1",
        "floormod", "imag", "is_finite", "is_inf", "is_nan", "log", "log1p", "log_sigmoid",
        "mod", "real", "reciprocal", "reciprocal_no_nan", "reduce_euclidean_norm", "rsqrt",
        "segment_sum", "squared_difference", "unsorted_segment_sum", "xlog1py", "xlogy")},
    **{name: f"nn.{name}" for name in (
        "dropout", "elu", "gelu", "l2_loss", "leaky_relu", "log_softmax", "moments", "relu",
        "relu6", "selu", "sigmoid_cross_entropy_with_logits", "silu", "softmax",
        "softmax_cross_entropy_with_logits", "softplus", "softsign",
        "sparse_softmax_cross_entropy_with_logits", "swish")},
    **{name: f"linalg.{name}" for name in (
        "det", "diag", "diag_part", "global_norm", "inv", "matvec", "slogdet", "solve",
        "trace")},
    # TensorFlow has these only as tf.experimental.numpy.*: tapec keeps them in tapec.math.
    **{name: f"math.{name}" for name in (
        "deg2rad", "exp2", "hypot", "log10", "log2", "logaddexp", "logaddexp2", "rad2deg",
        "sinc")},
}
NUMPY_ONLY = frozenset({"deg2rad", "exp2", "hypot", "log10", "log2", "logaddexp",
                        "logaddexp2", "rad2deg", "sinc"})

_OUT_OF_SCOPE = "out of scope for tapec (docs/semantics.md, \"Out of scope\")"
_SPARSE = "sparse tensors are " + _OUT_OF_SCOPE + "; use dense tensors"
_RAGGED = ("ragged tensors are " + _OUT_OF_SCOPE + "; pad to a dense tensor (with a mask) "
           "instead")
_STRINGS = "string tensors are " + _OUT_OF_SCOPE + "; tapec tensors hold numbers and bools"
_DISTRIBUTE = "distribution strategies are " + _OUT_OF_SCOPE + "; tapec runs in one process"

# Namespace ("" for the top level) -> {TensorFlow name: what tapec offers instead}.
MISSING: dict[str, dict[str, str]] = {
    "": {
        "sparse": _SPARSE, "SparseTensor": _SPARSE, "SparseTensorSpec": _SPARSE,
        "IndexedSlices": _SPARSE + " (tapec's gather gradients are dense)",
        "ragged": _RAGGED, "RaggedTensor": _RAGGED, "RaggedTensorSpec": _RAGGED,
        "strings": _STRINGS, "string": _STRINGS,
        "distribute": _DISTRIBUTE, "dtensor": _DISTRIBUTE, "tpu": _DISTRIBUTE,
        "summary": "tapec writes no TensorBoard summaries; use tapec.print or Python logging",
        "image": "tapec has no image ops", "signal": "tapec has no signal-processing ops "
                                                     "(FFT, STFT)",
        "audio": "tapec has no audio ops", "io": _STRINGS + " (file I/O ops)",
        "lite": "tapec does not convert to TensorFlow Lite; tapec.export writes NumPy source",
        "train": "tapec has no checkpoints or optimizers yet; update tapec.Variable values "
                 "with assign_sub from tape.gradient",
        "compat": "tapec implements TensorFlow 2's API only (no tf.compat.v1 graphs or "
                  "sessions); tapec.function traces Python functions",
        "raw_ops": "tapec has no raw ops; use the public ops (tapec.math, tapec.nn, ...)",
        "feature_column": "tapec has no feature columns", "lookup": _STRINGS + " (lookup tables)",
        "queue": "tapec has no queues; use tapec.data", "estimator": "tapec has no Estimators",
        "xla": "tapec compiles to NumPy, not XLA",
    },
    "nn": {name: "atrous convolutions and tf.nn.pool are not implemented in tapec; tapec.nn "
                 "has convolution (dilations=), conv*_transpose, depthwise and separable "
                 "convolutions, max_pool* and avg_pool*"
           for name in ("atrous_conv2d", "atrous_conv2d_transpose", "pool")},
    "linalg": {"LinearOperator": "linear operators are not implemented in tapec; use dense "
                                 "matrices and tapec.linalg's ops"},
    "data": {name: _STRINGS + " (file datasets)"
             for name in ("TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset")},
}

_WARNED: set[str] = set()


def _resolve(package: str, path: str):
    namespace, name = path.rsplit(".", 1)
    return getattr(getattr(sys.modules[package], namespace), name)


def _deprecated(package: str, name: str):
    """The op `name` moved to its TensorFlow namespace, with one warning per process."""
    path = MOVED[name]
    if name not in _WARNED:
        _WARNED.add(name)
        where = (f"use tapec.{path} (TensorFlow has it only as tf.experimental.numpy.{name})"
                 if name in NUMPY_ONLY else f"use tf.{path} (tapec.{path})")
        warnings.warn(f"tapec.{name} is deprecated: TensorFlow 2 has no top-level tf.{name}; "
                      f"{where}", DeprecationWarning, stacklevel=3)
    return _resolve(package, path)


def missing(module, namespace: str, name: str) -> AttributeError:
    """The AttributeError for `name`, absent from `module` (TensorFlow's tf.<namespace>)."""
    spelled = f"tf.{namespace}.{name}" if namespace else f"tf.{name}"
    shown = f"tapec.{namespace}" if namespace else module.__name__
    message = f"module {shown!r} has no attribute {name!r}"
    hint = MISSING.get(namespace, {}).get(name)
    if hint is not None:
        message += f": {spelled} is not implemented in tapec ({hint})"
    elif not name.startswith("__"):
        message += ": not implemented in tapec"
    return AttributeError(message, name=name, obj=module)


def module_getattr(package: str):
    """PEP 562 `__getattr__` for the top-level `tapec` module."""
    def __getattr__(name: str):
        if name in MOVED:
            return _deprecated(package, name)
        if name == "numpy":                       # tapec.numpy, imported on first use
            return importlib.import_module(f"{package}.numpy")
        raise missing(sys.modules[package], "", name)
    return __getattr__


def namespace_getattr(module_name: str, namespace: str):
    """PEP 562 `__getattr__` for a TensorFlow namespace (tapec.math is TensorFlow's
    tf.math, `namespace` "math")."""
    def __getattr__(name: str):
        raise missing(sys.modules[module_name], namespace, name)
    return __getattr__
