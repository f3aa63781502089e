"""Weight regularizers (`tf.keras.regularizers`): penalties a layer adds to `losses`."""
from __future__ import annotations

from typing import Any

from ..ops.elementwise import abs as _abs
from ..ops.elementwise import square
from ..ops.reduce import reduce_sum

__all__ = ["Regularizer", "L1", "L2", "L1L2", "get", "serialize"]


class Regularizer:
    """The base class: `__call__(weights)` returns a scalar penalty."""

    def __call__(self, x: Any) -> Any:
        return 0.0

    def get_config(self) -> dict[str, Any]:
        return {}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Regularizer:
        return cls(**config)


class L1L2(Regularizer):
    """l1 * sum(|x|) + l2 * sum(x^2)."""

    def __init__(self, l1: float = 0.0, l2: float = 0.0) -> None:
        self.l1, self.l2 = float(l1), float(l2)

    def __call__(self, x):
        penalty = 0.0
        if self.l1:
            penalty = penalty + self.l1 * reduce_sum(_abs(x))
        if self.l2:
            penalty = penalty + self.l2 * reduce_sum(square(x))
        return penalty

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


class L1(Regularizer):
    """l1 * sum(|x|) (l1 defaults to 0.01)."""

    def __init__(self, l1: float = 0.01) -> None:
        self.l1 = float(l1)

    def __call__(self, x):
        return self.l1 * reduce_sum(_abs(x))

    def get_config(self):
        return {"l1": self.l1}


class L2(Regularizer):
    """l2 * sum(x^2) (l2 defaults to 0.01)."""

    def __init__(self, l2: float = 0.01) -> None:
        self.l2 = float(l2)

    def __call__(self, x):
        return self.l2 * reduce_sum(square(x))

    def get_config(self):
        return {"l2": self.l2}


l1, l2, l1_l2 = L1, L2, L1L2
_CLASSES = {"L1": L1, "L2": L2, "L1L2": L1L2, "l1": L1, "l2": L2, "l1_l2": L1L2}


def get(identifier: Any) -> Any:
    """A regularizer from a name ("l1", "l2", "l1_l2"), a config dict or a callable."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        cls = _CLASSES.get(identifier.get("class_name"))
        if cls is None:
            raise ValueError(f"Unknown regularizer in config: {identifier!r:.100}")
        return cls.from_config(identifier.get("config", {}))
    if isinstance(identifier, str):
        if identifier not in _CLASSES:
            raise ValueError(f"Could not interpret regularizer identifier: {identifier!r}")
        return _CLASSES[identifier]()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret regularizer identifier: {identifier!r:.60}")


def serialize(regularizer: Any) -> dict[str, Any]:
    name = type(regularizer).__name__
    if _CLASSES.get(name) is not type(regularizer):
        raise ValueError(f"Cannot serialize regularizer {regularizer!r:.60}: only L1, L2 "
                         "and L1L2 can be saved")
    return {"class_name": name, "config": regularizer.get_config()}
