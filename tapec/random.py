"""Random tensors (`tapec.random`), seeded like TensorFlow.

`set_seed(s)` fixes the global seed and restarts every sequence, so a program run
twice after the same `set_seed` draws the same values. An op-level `seed` picks its
own reproducible sequence under the global one. Random ops have no tensor inputs,
so tapes never record them.

Inside a `tapec.function` trace a random op is a *random input* of the program (a
`random` node: distribution, shape, dtype, parameters, op seed, stream number):
the compiled program draws fresh values at every call from the function's own
`Streams`, and the draw made while tracing (from a scratch generator, so tracing
consumes no sequence) only stands in for it. As in TensorFlow's graph mode, each random
op of a function has its own sequence: with a global seed, an op without a seed
follows one fixed by its position in the function (two functions that draw alike
draw the same values), an op with a seed follows the sequence that seed gives eagerly,
and `set_seed` restarts them all.
"""
from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from .ops.registry import Op
from . import context
from .tensor import Tensor, _dtype_arg, shape_arg

__all__ = ["set_seed", "normal", "uniform", "truncated_normal", "shuffle", "categorical"]

_lock = threading.Lock()
_global_seed = None
_generators = {}
_epoch = 0          # counts set_seed calls: a function's Streams restart when it changes


def _seed(seed, what):
    """A seed: None or an int (TypeError otherwise)."""
    if seed is not None and (not isinstance(seed, (int, np.integer)) or
                             isinstance(seed, (bool, np.bool_))):
        raise TypeError(f"{what}: seed must be an int or None, got "
                        f"{type(seed).__name__} {seed!r:.60}")
    return None if seed is None else int(seed)


def set_seed(seed: int | None) -> None:
    """Set the global random seed and restart all random sequences (those of
    `tapec.function` programs too)."""
    global _global_seed, _epoch
    seed = _seed(seed, "set_seed")
    with _lock:
        _global_seed = seed
        _generators.clear()
        _epoch += 1


def _entropy(x: int) -> int:
    """NumPy seeds must be non-negative: a negative seed maps to its two's complement (in
    128 bits), so every int seeds its own sequence and non-negative seeds are unchanged."""
    return x if x >= 0 else x % (1 << 128)


def _new_generator(op_seed, position=None):
    """A generator for an op seed under the global seed: op-seeded sequences are those of
    eager ops; `position` numbers an unseeded op of a function (its own sequence)."""
    if _global_seed is None and op_seed is None:
        return np.random.default_rng()
    entropy = [] if _global_seed is None else [_entropy(_global_seed)]
    if op_seed is not None:
        entropy += [_entropy(op_seed), 1]
    elif position is None:
        entropy += [0]
    else:
        entropy += [position, 2]
    return np.random.default_rng(entropy)


def _generator(op_seed):
    key = (_global_seed, op_seed)
    with _lock:
        gen = _generators.get(key)
        if gen is None:
            gen = _generators[key] = _new_generator(op_seed)
        return gen


class Streams:
    """The random sequences of one `tapec.function`: one generator per random op of its
    programs (numbered in trace order), created on first use and restarted by
    `set_seed`. Compiled programs take it as an argument and call `draw`."""

    def __init__(self):
        self._epoch = _epoch
        self._generators = {}

    def generator(self, stream: int, op_seed):
        if self._epoch != _epoch:
            with _lock:
                self._generators, self._epoch = {}, _epoch
        gen = self._generators.get(stream)
        if gen is None:
            with _lock:
                gen = self._generators[stream] = _new_generator(op_seed, stream)
        return gen

    def draw(self, stream: int, kind: str, op_seed, shape: tuple, dtype: str,
             *params) -> np.ndarray:
        """A fresh sample of random input `stream` (what generated code calls)."""
        return _SAMPLERS[kind](self.generator(stream, op_seed), shape, np.dtype(dtype),
                               *params)


# --- the distributions: (generator, shape, dtype, *parameters) -> array ------------------

def _normal(gen, shape, dtype, mean, stddev):
    return _frozen(gen.normal(mean, stddev, shape), dtype)


def _uniform(gen, shape, dtype, low, high):
    return _frozen(gen.uniform(low, high, shape), dtype)


def _integers(gen, shape, dtype, low, high):
    return _frozen(gen.integers(low, high, shape), dtype)


def _truncated_normal(gen, shape, dtype, mean, stddev):
    standard = gen.standard_normal(shape)
    outside = np.abs(standard) > 2
    while outside.any():            # each redraw keeps about 95% of what it draws
        standard[outside] = gen.standard_normal(int(outside.sum()))
        outside = np.abs(standard) > 2
    return _frozen(mean + stddev * standard, dtype)


def _permutation(gen, shape, dtype):
    return _frozen(gen.permutation(shape[0]), dtype)


def _gumbel(gen, shape, dtype):
    """Standard Gumbel noise, -log(-log(u)) for u uniform on (0, 1)."""
    return _frozen(-np.log(-np.log(gen.uniform(np.finfo(np.float64).tiny, 1.0, shape))),
                   dtype)


_SAMPLERS = {"normal": _normal, "uniform": _uniform, "integers": _integers,
             "truncated_normal": _truncated_normal, "permutation": _permutation,
             "gumbel": _gumbel}


def _frozen(array, dtype):
    array = np.asarray(array, dtype=dtype)
    array.flags.writeable = False
    return array


# --- random inputs of traced programs ----------------------------------------------------

def _parameter_source(value) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return "float('nan')" if value != value else \
            ("float('inf')" if value > 0 else "-float('inf')")
    return repr(value)


def _random_numpy(args, node):
    a = node.attrs
    params = "".join(", " + _parameter_source(p) for p in a["params"])
    # a shape computed by the program (tf.shape(x)) is read when it runs
    shape = f"tuple({args[1]}.tolist())" if len(args) > 1 else repr(a["shape"])
    return (f"{args[0]}.draw({a['stream']}, {a['kind']!r}, {a['seed']!r}, {shape}, "
            f"{a['dtype']!r}{params})")


# A random input of a traced program: its first input is the function's Streams (a fed
# argument), its second, if any, the shape computed by the program; its attributes say
# what to draw. Stateful: two draws never merge.
RANDOM = Op(name="random", impl=None,
            infer=lambda *inputs, **attrs: (attrs["shape"], np.dtype(attrs["dtype"])),
            numpy=_random_numpy, differentiable=False, stateful=True,
            latex=r"\operatorname{{random}}")


_SCRATCH = np.random.default_rng(0x7a9ec)    # values that stand in for draws while tracing


def _draw(kind, shape, dtype, seed, params, what, streams=None, stream=None,
          shape_tensor=None) -> Tensor:
    """A sample of `kind` as a tensor: eagerly from the op seed's sequence (or, replaying
    random input `stream` of a program through the ops, from its `streams`); while a
    function is traced, a random input of its program (of the shape `shape_tensor`
    holds when the program runs, when the shape was a traced tensor)."""
    tracer = context.tracing_tape()
    if tracer is None:
        gen = _generator(seed) if streams is None else streams.generator(stream, seed)
        return Tensor._eager(_SAMPLERS[kind](gen, shape, dtype, *params))
    t = Tensor._eager(_SAMPLERS[kind](_SCRATCH, shape, dtype, *params))
    tracer.record_random(t, {"kind": kind, "seed": seed, "shape": tuple(shape),
                             "dtype": dtype.str, "params": tuple(params), "what": what},
                         shape_tensor)
    return t


def replay(node, streams) -> Tensor:
    """Random input `node` of a program run through the ops: a fresh draw from `streams`
    (or, inside another trace, a random input of that trace's program)."""
    a = node.attrs
    return _draw(a["kind"], a["shape"], np.dtype(a["dtype"]), a["seed"], a["params"],
                 a["what"], streams, a["stream"])


def _shape(shape, what):
    """A shape argument as (a tuple of non-negative ints, None: a scalar), and, while a
    function is traced, the tensor that computes it when it is one of the trace's
    (`tf.shape(x)`, or a list holding such sizes): the program reads the sizes when it
    runs, so a None dimension of an input_signature needs no retrace."""
    if shape is None:
        return (), None
    tensor = _traced_shape(shape)
    if tensor is None:
        return shape_arg(what, shape), None
    if tensor._dtype.kind not in "iu" or len(tensor._shape) != 1:
        raise TypeError(f"{what}: shape must be an int or a 1-d sequence of ints, got a "
                        f"tensor of shape {tensor._shape} and dtype {tensor._dtype.name}")
    return shape_arg(what, tensor._value), tensor      # read without a guard


def _traced_shape(shape):
    """`shape` as a tensor of the trace in progress, or None (eager, or not traced)."""
    from .ops.shape import cast, stack
    tracer = context.tracing_tape()
    if tracer is None:
        return None

    def traced(t):
        return isinstance(t, Tensor) and t._id in tracer._live
    if traced(shape):
        return shape
    if isinstance(shape, (list, tuple)) and any(traced(d) for d in shape) and all(
            isinstance(d, (int, np.integer, Tensor)) for d in shape):
        return stack([cast(d, np.int64) if isinstance(d, Tensor) else int(d)
                      for d in shape])
    return None


def _number(value, what, name) -> float:
    """A real scalar parameter (a number or a 0-d tensor) as a float; NaN and inf pass."""
    if hasattr(value, "numpy"):
        value = value.numpy()
    kind = np.asarray(value).dtype.kind if not isinstance(value, (str, bytes)) else "U"
    if kind not in "iuf" or np.ndim(value) != 0 or isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what}: {name} must be a real number, got "
                        f"{type(value).__name__} {value!r:.60}")
    return float(value)


def _floating(dtype, what):
    dtype = _dtype_arg(what, dtype)
    if dtype.kind != "f":
        raise TypeError(f"{what}: dtype must be floating, got {dtype.name}")
    return dtype


def normal(shape: int | Sequence[int], mean: float = 0.0, stddev: float = 1.0,
           dtype: Any = "float32", seed: int | None = None, name: str | None = None) -> Tensor:
    """Samples from a normal distribution. A NaN or infinite mean or stddev gives NaN or
    infinite samples, as NumPy; a negative stddev raises ValueError."""
    what = "random.normal"
    dtype = _floating(dtype, what)
    shape, shape_tensor = _shape(shape, what)
    mean, stddev = _number(mean, what, "mean"), _number(stddev, what, "stddev")
    if stddev < 0:
        raise ValueError(f"{what}: stddev must be >= 0, got {stddev!r}")
    return _draw("normal", shape, dtype, _seed(seed, what), (mean, stddev), what,
                 shape_tensor=shape_tensor)


def uniform(shape: int | Sequence[int], minval: float = 0, maxval: float | None = None,
            dtype: Any = "float32", seed: int | None = None, name: str | None = None) -> Tensor:
    """Samples from a uniform distribution on [minval, maxval) (maxval defaults to 1).
    The bounds must be finite with minval <= maxval (minval < maxval for integers)."""
    what = "random.uniform"
    dtype = _dtype_arg(what, dtype)
    shape, shape_tensor = _shape(shape, what)
    seed = _seed(seed, what)
    if dtype.kind in "iu":
        if maxval is None:
            raise ValueError("random.uniform: maxval must be given for integer dtypes")
        low, high = (_integer_bound(v, name) for v, name in ((minval, "minval"),
                                                            (maxval, "maxval")))
        if low >= high:
            raise ValueError(f"{what}: minval must be less than maxval for integer dtypes, "
                             f"got minval={low}, maxval={high}")
        return _draw("integers", shape, dtype, seed, (low, high), what,
                     shape_tensor=shape_tensor)
    dtype = _floating(dtype, what)
    low = _number(minval, what, "minval")
    high = 1.0 if maxval is None else _number(maxval, what, "maxval")
    if not (math.isfinite(low) and math.isfinite(high)) or low > high:
        raise ValueError(f"{what}: minval and maxval must be finite with minval <= maxval, "
                         f"got minval={low!r}, maxval={high!r}")
    return _draw("uniform", shape, dtype, seed, (low, high), what,
                 shape_tensor=shape_tensor)


def _integer_bound(value, name) -> int:
    number = _number(value, "random.uniform", name)
    if not number.is_integer():
        raise (ValueError if not math.isfinite(number) else TypeError)(
            f"random.uniform: {name} must be an integer for integer dtypes, got {value!r}")
    return int(value) if not isinstance(value, float) else int(number)


def truncated_normal(shape: int | Sequence[int], mean: float = 0.0, stddev: float = 1.0,
                     dtype: Any = "float32", seed: int | None = None,
                     name: str | None = None) -> Tensor:
    """Samples from a normal distribution, redrawing every sample more than two
    standard deviations from the mean (so all lie in [mean - 2 stddev, mean + 2 stddev])."""
    what = "random.truncated_normal"
    dtype = _floating(dtype, what)
    shape, shape_tensor = _shape(shape, what)
    mean, stddev = _number(mean, what, "mean"), _number(stddev, what, "stddev")
    if stddev < 0 or not (math.isfinite(mean) and math.isfinite(stddev)):
        raise ValueError(f"{what}: mean and stddev must be finite with stddev >= 0, got "
                         f"mean={mean!r}, stddev={stddev!r}")
    return _draw("truncated_normal", shape, dtype, _seed(seed, what), (mean, stddev), what,
                 shape_tensor=shape_tensor)


def shuffle(value: Any, seed: int | None = None, name: str | None = None) -> Tensor:
    """`value` with its first dimension randomly permuted. The permutation is drawn
    now (in a `tapec.function`, at every call) and applied with `gather`, so the
    gradient flows back through it (TensorFlow registers none)."""
    from .ops.indexing import gather
    from .ops.registry import to_tensors
    what = "random.shuffle"
    (value,) = to_tensors(what, [value])
    if not value._shape:
        raise ValueError(f"{what}: value must have at least one dimension, got a scalar")
    permutation = _draw("permutation", (value._shape[0],), np.dtype(np.int64),
                        _seed(seed, what), (), what)
    return gather(value, permutation, axis=0)


def categorical(logits: Any, num_samples: int, dtype: Any = None, seed: int | None = None,
                name: str | None = None) -> Tensor:
    """Class indices sampled from softmax(logits[i]) for every row i: shape
    [batch, num_samples], int64 unless `dtype` is int32. A -inf logit is never drawn.
    No gradient (as TensorFlow)."""
    from .ops.reduce import argmax
    from .ops.registry import to_tensors
    from .ops.shape import cast, expand_dims, zeros
    from .ops.elementwise import add
    what = "random.categorical"
    (logits,) = to_tensors(what, [logits])
    if logits._dtype.kind not in "fiu" or len(logits._shape) != 2:
        raise ValueError(f"{what}: logits must be a 2-D real tensor [batch, classes], got "
                         f"shape {logits._shape} and dtype {logits._dtype.name}")
    dtype = np.dtype(np.int64) if dtype is None else _dtype_arg(what, dtype)
    if dtype not in (np.int32, np.int64):
        raise TypeError(f"{what}: dtype must be int32 or int64, got {dtype.name}")
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)) \
            or num_samples < 0:
        raise ValueError(f"{what}: num_samples must be a non-negative int, got "
                         f"{num_samples!r:.60}")
    batch, classes = logits._shape
    if classes == 0:
        if num_samples and batch:
            raise ValueError(f"{what}: logits have no classes to sample from")
        return zeros((batch, int(num_samples)), dtype)
    # The Gumbel-max trick: argmax(logits + Gumbel noise) is a draw from softmax(logits).
    noise = _draw("gumbel", (batch, int(num_samples), classes), np.dtype(np.float64),
                  _seed(seed, what), (), what)
    scores = add(expand_dims(cast(logits, np.float64), 1), noise)
    return argmax(scores, axis=-1, output_type=dtype)


from .namespaces._names import namespace_getattr as _namespace_getattr  # noqa: E402

# A missing name says what tapec does not implement (tapec/namespaces/_names.py).
__getattr__ = _namespace_getattr(__name__, "random")
