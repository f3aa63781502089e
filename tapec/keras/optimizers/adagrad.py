"""Adagrad (`tf.keras.optimizers.Adagrad`), Keras 3's update.

With an accumulator slot starting at `initial_accumulator_value`:
    accumulator += g**2
    var -= lr * g / sqrt(accumulator + epsilon)
Epsilon is inside the square root.
"""
from __future__ import annotations

from typing import Any

from ...ops.elementwise import sqrt, square
from ...ops.shape import cast
from .base import Optimizer

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Per-coordinate learning rates shrinking with the sum of squared gradients."""

    def __init__(self, learning_rate: Any = 0.001, initial_accumulator_value: float = 0.1,
                 epsilon: float = 1e-7, **kwargs: Any) -> None:
        super().__init__(learning_rate, **kwargs)
        self.initial_accumulator_value, self.epsilon = initial_accumulator_value, epsilon

    def build(self, var_list) -> None:
        if self.built:
            return
        super().build(var_list)
        self._accumulators = [
            self.add_variable_from_reference(v, "accumulator",
                                             initializer=self.initial_accumulator_value)
            for v in self._trainable_variables]

    def update_step(self, gradient, variable, learning_rate) -> None:
        lr = cast(learning_rate, variable.dtype)
        accumulator = self._accumulators[self._get_variable_index(variable)]
        accumulator.assign_add(square(gradient))
        variable.assign_sub(lr * gradient / sqrt(accumulator + self.epsilon))

    def get_config(self) -> dict:
        return {**super().get_config(),
                "initial_accumulator_value": self.initial_accumulator_value,
                "epsilon": self.epsilon}
