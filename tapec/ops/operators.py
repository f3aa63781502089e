"""Python's operators on tensors and variables (`x + y`, `x @ w`, `x[i]`, `x < 0`, ...):
each is the op of the same name. Installed onto the class both share when the ops
package is imported, so `tensor.py` does not import the ops that import it."""
from __future__ import annotations

from ..tensor import _Operators
from . import elementwise as ew
from .elementwise_math import floormod
from .indexing import getitem
from .linalg import matmul
from .shape import cast

# operator -> op(self, other); the reflected form swaps the operands
_BINARY = {"add": ew.add, "sub": ew.subtract, "mul": ew.multiply, "truediv": ew.divide,
           "pow": ew.pow, "matmul": matmul, "mod": floormod}
_COMPARISONS = {"lt": ew.less, "le": ew.less_equal, "gt": ew.greater,
                "ge": ew.greater_equal}


def _forward(op):
    # The public function itself: bound as a method it gets (self, other), with no
    # wrapper frame on every operator of an eager loop.
    return op


def _reflected(op):
    return lambda self, other: op(other, self)


def _eq(self, other):
    return False if other is None else ew.equal(self, other)


def _ne(self, other):
    return True if other is None else ew.not_equal(self, other)


def install(cls=_Operators):
    for name, op in _BINARY.items():
        setattr(cls, f"__{name}__", _forward(op))
        setattr(cls, f"__r{name}__", _reflected(op))
    for name, op in _COMPARISONS.items():
        setattr(cls, f"__{name}__", _forward(op))
    cls.__eq__, cls.__ne__ = _eq, _ne
    cls.__neg__ = lambda self: ew.negative(self)
    cls.__pos__ = lambda self: self
    cls.__abs__ = lambda self: ew.abs(self)
    cls.__getitem__ = lambda self, index: getitem(self, index)
    cls.astype = lambda self, dtype: cast(self, dtype)


install()
