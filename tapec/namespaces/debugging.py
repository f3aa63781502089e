"""`tapec.debugging`: TensorFlow's run-time checks (`tf.debugging`) and `tf.print`.

A failed check raises `tf.errors.InvalidArgumentError` (also a ValueError), with
TensorFlow's wording; a check TensorFlow makes on static shapes (`assert_rank`,
`assert_shapes`) raises ValueError, as TensorFlow does in eager mode.

Inside a `tapec.function` a check holds at every call, not only when traced: the
condition is computed with tensor ops and read as a Python bool, which the trace
turns into a guard (docs/functions.md). A call whose condition differs from the
traced one traces again, and that run raises. `tf.print` inside a trace is part of
the program: every call prints its own values (see `print_`).
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

from .. import context, nest
from ..ops import elementwise as ew
from ..ops.reduce import reduce_min
from ..ops.shape import cast
from ..tensor import Tensor, Variable, convert_to_tensor
from .errors import invalid_argument

__all__ = ["assert_equal", "assert_near", "assert_less", "assert_less_equal",
           "assert_greater", "assert_greater_equal", "assert_positive", "assert_negative",
           "assert_non_negative", "assert_non_positive", "assert_rank", "assert_shapes",
           "check_numerics", "assert_all_finite", "print_"]

_SUMMARIZE = 3


def _tensor(value, what) -> Tensor:
    return convert_to_tensor(value)


def _holds(condition: Tensor) -> bool:
    """Whether every element of the boolean `condition` is true, read the way Python
    reads a tensor (a guard inside a trace, so later calls check again)."""
    if 0 in condition._shape:
        return True
    return bool(ew.equal(reduce_min(cast(condition, np.int32)), 1))


def _first(value: np.ndarray, summarize) -> np.ndarray:
    n = value.size if summarize is None or summarize < 0 else summarize
    return value.reshape(-1)[:n]


def _binary(name, symbol, compare, x, y, message, summarize):
    x, y = _tensor(x, name), _tensor(y, name)
    if x._dtype != y._dtype:
        raise invalid_argument(f"{name}: x and y must have the same dtype, got "
                               f"{x._dtype.name} and {y._dtype.name}")
    try:
        np.broadcast_shapes(x._shape, y._shape)
    except ValueError:
        raise invalid_argument(f"{name}: Incompatible shapes: {list(x._shape)} vs. "
                               f"{list(y._shape)}") from None
    if _holds(compare(x, y)):
        return None
    xv, yv = x._eager_value(name), y._eager_value(name)
    held = compare(x, y)._eager_value(name)
    bad = np.argwhere(~np.broadcast_to(held, held.shape))
    n = summarize if summarize is not None and summarize >= 0 else _SUMMARIZE
    shape = held.shape
    lines = [message] if message else []
    lines.append(f"Condition x {symbol} y did not hold.")
    if shape:
        xs, ys = np.broadcast_to(xv, shape), np.broadcast_to(yv, shape)
        shown = bad[:n]
        lines += [f"Indices of first {len(shown)} different values:", str(shown),
                  "Corresponding x values:", str(xs[tuple(shown.T)]),
                  "Corresponding y values:", str(ys[tuple(shown.T)])]
    lines += [f"First {min(n, xv.size)} elements of x:", str(_first(xv, n)),
              f"First {min(n, yv.size)} elements of y:", str(_first(yv, n))]
    raise invalid_argument("\n".join(lines))


def assert_equal(x: Any, y: Any, message: str | None = None, summarize: int | None = None,
                 name: str | None = None) -> None:
    """Raise InvalidArgumentError unless x == y elementwise (broadcasting)."""
    return _binary("assert_equal", "==", ew.equal, x, y, message, summarize)


def assert_less(x: Any, y: Any, message: str | None = None, summarize: int | None = None,
                name: str | None = None) -> None:
    """Raise InvalidArgumentError unless x < y elementwise."""
    return _binary("assert_less", "<", ew.less, x, y, message, summarize)


def assert_less_equal(x: Any, y: Any, message: str | None = None,
                      summarize: int | None = None, name: str | None = None) -> None:
    """Raise InvalidArgumentError unless x <= y elementwise."""
    return _binary("assert_less_equal", "<=", ew.less_equal, x, y, message, summarize)


def assert_greater(x: Any, y: Any, message: str | None = None, summarize: int | None = None,
                   name: str | None = None) -> None:
    """Raise InvalidArgumentError unless x > y elementwise."""
    return _binary("assert_greater", ">", ew.greater, x, y, message, summarize)


def assert_greater_equal(x: Any, y: Any, message: str | None = None,
                         summarize: int | None = None, name: str | None = None) -> None:
    """Raise InvalidArgumentError unless x >= y elementwise."""
    return _binary("assert_greater_equal", ">=", ew.greater_equal, x, y, message, summarize)


def _against_zero(name, symbol, compare, x, message, summarize):
    x = _tensor(x, name)
    if _holds(compare(x, 0)):
        return None
    text = str([str(v) for v in _first(x._eager_value(name), summarize)])
    raise invalid_argument(f"{message or ''}\nCondition x {symbol} 0 did not hold "
                           f"element-wise:\nx (shape={x._shape} dtype={x._dtype.name}) = "
                           f"\n{text}")


def assert_positive(x: Any, message: str | None = None, summarize: int | None = None,
                    name: str | None = None) -> None:
    """Raise InvalidArgumentError unless every element of x is > 0."""
    return _against_zero("assert_positive", ">", ew.greater, x, message, summarize)


def assert_negative(x: Any, message: str | None = None, summarize: int | None = None,
                    name: str | None = None) -> None:
    """Raise InvalidArgumentError unless every element of x is < 0."""
    return _against_zero("assert_negative", "<", ew.less, x, message, summarize)


def assert_non_negative(x: Any, message: str | None = None, summarize: int | None = None,
                        name: str | None = None) -> None:
    """Raise InvalidArgumentError unless every element of x is >= 0."""
    return _against_zero("assert_non_negative", ">=", ew.greater_equal, x, message,
                         summarize)


def assert_non_positive(x: Any, message: str | None = None, summarize: int | None = None,
                        name: str | None = None) -> None:
    """Raise InvalidArgumentError unless every element of x is <= 0."""
    return _against_zero("assert_non_positive", "<=", ew.less_equal, x, message, summarize)


def assert_near(x: Any, y: Any, rtol: Any = None, atol: Any = None, message: str | None = None,
                summarize: int | None = None, name: str | None = None) -> None:
    """Raise InvalidArgumentError unless |x - y| <= atol + rtol * |y| elementwise; both
    tolerances default to 10 * eps of the dtype, as TensorFlow."""
    x, y = _tensor(x, "assert_near"), _tensor(y, "assert_near")
    if x._dtype != y._dtype or x._dtype.kind not in "fc":
        raise invalid_argument(f"assert_near: x and y must have the same floating dtype, "
                               f"got {x._dtype.name} and {y._dtype.name}")
    eps = float(np.finfo(x._dtype).eps)
    rtol = 10 * eps if rtol is None else rtol
    atol = 10 * eps if atol is None else atol
    tolerance = ew.add(ew.multiply(ew.abs(y), rtol), atol)
    if _holds(ew.less_equal(ew.abs(ew.subtract(x, y)), tolerance)):
        return None
    raise invalid_argument(
        f"{message or ''}\nx and y not equal to tolerance rtol = {rtol}, atol = {atol}\n"
        f"x (shape={x._shape} dtype={x._dtype.name}) = \n"
        f"{_first(x._eager_value('assert_near'), summarize)}\n"
        f"y (shape={y._shape} dtype={y._dtype.name}) = \n"
        f"{_first(y._eager_value('assert_near'), summarize)}")


def assert_rank(x: Any, rank: Any, message: str | None = None, name: str | None = None) -> None:
    """Raise ValueError unless x has rank `rank` (a static check, as TensorFlow's)."""
    x = _tensor(x, "assert_rank")
    if isinstance(rank, (Tensor, Variable)):
        rank = rank.numpy()
    if isinstance(rank, (bool, np.bool_)) or np.ndim(rank) != 0 or \
            np.asarray(rank).dtype.kind not in "iu":
        raise ValueError(f"assert_rank: rank must be a scalar integer, got {rank!r:.60}")
    if len(x._shape) != int(rank):
        prefix = f"{message}.  " if message else ""
        raise ValueError(f"{prefix}Tensor must have rank {int(rank)}.  Received rank "
                         f"{len(x._shape)}, shape {tuple(x._shape)}")


def _shape_pairs(shapes):
    if isinstance(shapes, dict):
        return [(getattr(k, "deref", lambda: k)(), v) for k, v in shapes.items()]
    pairs = list(shapes)
    if not all(isinstance(p, (tuple, list)) and len(p) == 2 for p in pairs):
        raise ValueError("assert_shapes: shapes must be a dict or a list of "
                         "(tensor, shape) pairs")
    return pairs


def assert_shapes(shapes: Any, data: Any = None, summarize: int | None = None,
                  message: str | None = None, name: str | None = None) -> None:
    """Raise ValueError unless each tensor has its shape: a list of (tensor, shape) pairs
    (or a dict keyed by `tensor.ref()`); a shape lists ints, symbol strings that must
    take one size across all tensors, "." (any size), and may start with "*" (any
    number of leading dimensions). `()` or `[]` means a scalar."""
    sizes = {}          # symbol -> (size, description of where it was fixed)
    prefix = f"{message}.  " if message else ""
    for tensor, spec in _shape_pairs(shapes):
        x = _tensor(tensor, "assert_shapes")
        described = f"Tensor shape={tuple(x._shape)} dtype={x._dtype.name}"
        spec = [spec] if isinstance(spec, (int, str)) else list(spec)
        actual = list(x._shape)
        if spec and spec[0] == "*":
            spec = spec[1:]
            actual = actual[len(actual) - len(spec):] if len(spec) <= len(actual) else None
        if actual is None or len(actual) != len(spec):
            raise ValueError(f"{prefix}Specified explicitly.  {described} must have rank "
                             f"{len(spec)}.  Received rank {len(x._shape)}, shape "
                             f"{tuple(x._shape)}")
        offset = len(x._shape) - len(actual)
        for axis, (want, got) in enumerate(zip(spec, actual)):
            axis += offset
            if want == ".":
                continue
            if isinstance(want, str):
                known = sizes.setdefault(want, (got, f"Specified by t{described[1:]} "
                                                      f"dimension {axis}"))
                where, want = known[1], known[0]
            elif isinstance(want, (int, np.integer)) and not isinstance(want, bool):
                where = "Specified explicitly"
            else:
                raise ValueError(f"assert_shapes: a dimension must be an int or a string, "
                                 f"got {want!r:.60}")
            if int(want) != got:
                raise ValueError(f"{prefix}{where}.  {described} dimension {axis} must have "
                                 f"size {want}.  Received size {got}, shape "
                                 f"{tuple(x._shape)}")


def check_numerics(tensor: Any, message: str, name: str | None = None) -> Tensor:
    """`tensor` itself if it has no NaN or infinity; InvalidArgumentError otherwise (as
    TensorFlow: "<message> : Tensor had NaN values"). Floating dtypes only."""
    x = _tensor(tensor, "check_numerics")
    if x._dtype.kind != "f":
        raise invalid_argument(f"check_numerics: the tensor must have a floating dtype, got "
                               f"{x._dtype.name}")
    # |x| < inf is false exactly for inf and nan, and no simplification folds it
    if _holds(ew.less(ew.abs(x), np.inf)):
        return x
    value = x._eager_value("check_numerics")
    nan, inf = bool(np.isnan(value).any()), bool(np.isinf(value).any())
    found = "Inf and NaN" if nan and inf else "NaN" if nan else "Inf"
    raise invalid_argument(f"{message} : Tensor had {found} values")


def assert_all_finite(x: Any, message: str, name: str | None = None) -> Tensor:
    """`x` itself if every element is finite (TensorFlow's `tf.debugging.assert_all_finite`,
    which is `check_numerics`)."""
    return check_numerics(x, message, name)


# --- tf.print -------------------------------------------------------------------------------

class _Printed:
    """A tensor inside a printed structure: its repr is TensorFlow's text for it."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def _scalar_text(value, kind) -> str:
    if kind == "b":
        return "1" if value else "0"
    if kind == "f":
        # TensorFlow's float text: the shortest of 6 or 9 digits (15 or 17 for float64)
        # that reads back as the value
        short, long_ = (6, 9) if value.dtype.itemsize <= 4 else (15, 17)
        text = f"{value:.{short}g}"
        return text if value.dtype.type(text) == value or np.isnan(value) else \
            f"{value:.{long_}g}"
    return str(value)


def _array_text(value: np.ndarray, summarize: int, depth: int = 0) -> str:
    if value.ndim == 0:
        return _scalar_text(value[()], value.dtype.kind)
    n = len(value)
    if value.size == 0:          # TensorFlow's text for an empty tensor
        return "[]" if n == 0 else "[" + "\n" * (value.ndim - 1) + " ...]"
    elided = summarize >= 0 and n > 2 * summarize
    indices = list(range(summarize)) + [None] + list(range(n - summarize, n)) if elided \
        else list(range(n))
    if value.ndim == 1:
        return "[" + " ".join("..." if i is None else _array_text(value[i], summarize)
                              for i in indices) + "]"
    separator = "\n" * (value.ndim - 1) + " " * (depth + 1)
    return "[" + separator.join("..." if i is None else
                                _array_text(value[i], summarize, depth + 1)
                                for i in indices) + "]"


def _text(item, summarize) -> str:
    if isinstance(item, (Tensor, Variable)):
        value = item._value if isinstance(item, Variable) else item._eager_value("print")
        return _array_text(value, summarize)
    if nest.is_nested(item):
        return str(_sorted_dicts(nest.map_structure(
            lambda leaf: _Printed(_text(leaf, summarize)) if isinstance(
                leaf, (Tensor, Variable)) else leaf, item)))
    return str(item)


def _sorted_dicts(structure):
    """`structure` with every dict's entries in sorted key order, as tf.print shows
    them."""
    if isinstance(structure, dict):
        return {key: _sorted_dicts(structure[key]) for key in sorted(structure)}
    if isinstance(structure, tuple) and hasattr(structure, "_fields"):
        return type(structure)(*map(_sorted_dicts, structure))
    if isinstance(structure, (list, tuple)):
        return type(structure)(map(_sorted_dicts, structure))
    return structure


def print_(*inputs: Any, output_stream: Any = None, summarize: int = 3, sep: str = " ",
           end: str = "\n", name: str | None = None) -> None:
    """TensorFlow's `tf.print`: the inputs' text, `sep`-separated and `end`-terminated, on
    `output_stream` (default sys.stderr; sys.stdout, or "file://<path>" to append to a
    file). Tensors print as TensorFlow prints them, at most `summarize` entries at each
    end of every axis (-1: all); inputs may nest tensors in lists, tuples and dicts.

    Inside a `tapec.function` the print is part of the program, as in TensorFlow's
    graph mode: nothing is printed while tracing, and every call prints that call's
    values (after the call, in the order of the function's prints), the text eager
    `print_` would print for them."""
    if output_stream is None:
        destination = "stderr"
    elif isinstance(output_stream, str) and output_stream.startswith("file://"):
        destination = output_stream
    elif output_stream is sys.stdout or output_stream is sys.stderr:
        destination = "stdout" if output_stream is sys.stdout else "stderr"
    else:
        raise ValueError(f"Unsupported output stream, logging level, or file.{output_stream}. "
                         "Supported streams are sys.stdout, sys.stderr. File needs to be "
                         "in the form of 'file://<filepath>'.")
    _Print(list(inputs), destination, 3 if summarize is None else int(summarize), sep,
           end).emit()


class _Slot:
    """Where a print's k-th tensor goes in its inputs."""

    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k

    def __eq__(self, other):
        return isinstance(other, _Slot) and other.k == self.k

    def __hash__(self):
        return hash(self.k)


class _Print:
    """One print: its inputs (tensors, or the slots of a traced print's tensors), where
    it writes (stdout, stderr, or file://<path>) and how."""

    def __init__(self, inputs, destination, summarize, sep, end):
        self.inputs, self.destination = inputs, destination
        self.summarize, self.sep, self.end = summarize, sep, end

    def emit(self):
        """Print now; while a function is traced, make this print part of its program."""
        tracer = context.tracing_tape()
        if tracer is None:
            self._write()
            return
        tensors = []

        def to_slot(leaf):
            if isinstance(leaf, Variable):
                leaf = leaf.read_value()        # the value at this point of the program
            if not isinstance(leaf, Tensor):
                return leaf
            tensors.append(leaf)
            return _Slot(len(tensors) - 1)
        template = nest.map_structure(to_slot, self.inputs)
        tracer.record_print(_Print(template, self.destination, self.summarize, self.sep,
                                   self.end), tensors)

    def __call__(self, tensors):
        """Print (or, inside another trace, record) this traced print for one call's
        `tensors`."""
        inputs = nest.map_structure(lambda leaf: tensors[leaf.k] if isinstance(leaf, _Slot)
                                    else leaf, self.inputs)
        _Print(inputs, self.destination, self.summarize, self.sep, self.end).emit()

    def __eq__(self, other):        # traces at other sizes make equal prints
        if not isinstance(other, _Print):
            return NotImplemented
        try:
            return bool((self.destination, self.summarize, self.sep, self.end) == (
                other.destination, other.summarize, other.sep, other.end) and
                nest.flatten(self.inputs) == nest.flatten(other.inputs))
        except (TypeError, ValueError):           # an array among the inputs
            return False

    __hash__ = None

    def _write(self):
        text = self.sep.join(_text(item, self.summarize) for item in self.inputs) + self.end
        if self.destination.startswith("file://"):
            with open(self.destination[len("file://"):], "a") as file:
                file.write(text)
        else:
            (sys.stdout if self.destination == "stdout" else sys.stderr).write(text)


from ._names import namespace_getattr as _namespace_getattr  # noqa: E402

# A missing name says what tapec does not implement (tapec/namespaces/_names.py).
__getattr__ = _namespace_getattr(__name__, "debugging")
