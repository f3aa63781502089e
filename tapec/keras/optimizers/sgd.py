"""Stochastic gradient descent (`tf.keras.optimizers.SGD`), Keras 3's update.

Without momentum: var -= lr * g. With momentum m (a slot starting at 0):
    m = momentum * m - lr * g
    var += m                                  (classic)
    var += momentum * m - lr * g              (nesterov=True, using the new m)
"""
from __future__ import annotations

from typing import Any

from ...ops.shape import cast
from .base import Optimizer

__all__ = ["SGD"]


class SGD(Optimizer):
    """Gradient descent with optional (Nesterov) momentum; `momentum` in [0, 1]."""

    def __init__(self, learning_rate: Any = 0.01, momentum: float = 0.0,
                 nesterov: bool = False, **kwargs: Any) -> None:
        super().__init__(learning_rate, **kwargs)
        if not isinstance(momentum, (int, float)) or not 0 <= momentum <= 1:
            raise ValueError("`momentum` must be a float between [0, 1].")
        self.momentum, self.nesterov = float(momentum), bool(nesterov)

    def build(self, var_list) -> None:
        if self.built:
            return
        super().build(var_list)
        self._momentums = ([self.add_variable_from_reference(v, "momentum")
                            for v in self._trainable_variables] if self.momentum else [])

    def update_step(self, gradient, variable, learning_rate) -> None:
        lr = cast(learning_rate, variable.dtype)
        if not self.momentum:
            variable.assign_sub(gradient * lr)
            return
        m = self._momentums[self._get_variable_index(variable)]
        m.assign(-gradient * lr + m * self.momentum)
        if self.nesterov:
            variable.assign_add(-gradient * lr + m * self.momentum)
        else:
            variable.assign_add(m)

    def get_config(self) -> dict:
        return {**super().get_config(), "momentum": self.momentum, "nesterov": self.nesterov}
