"""RMSprop (`tf.keras.optimizers.RMSprop`), Keras 3's update.

With slots velocity (and average_gradient when centered, momentum when momentum > 0):
    velocity = rho * velocity + (1 - rho) * g**2
    average_gradient = rho * average_gradient + (1 - rho) * g            (centered)
    denominator = velocity - average_gradient**2 + epsilon   (centered; else velocity + eps)
    increment = lr * g / sqrt(denominator)
    var -= increment, or with momentum: mom = momentum * mom + increment; var -= mom
Epsilon is inside the square root (unlike Adam's).
"""
from __future__ import annotations

from typing import Any

from ...ops.elementwise import sqrt, square
from ...ops.shape import cast
from .base import Optimizer

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """Divide the gradient by a running root-mean-square of recent gradients."""

    def __init__(self, learning_rate: Any = 0.001, rho: float = 0.9, momentum: float = 0.0,
                 epsilon: float = 1e-7, centered: bool = False, **kwargs: Any) -> None:
        super().__init__(learning_rate, **kwargs)
        self.rho, self.momentum = rho, momentum
        self.epsilon, self.centered = epsilon, bool(centered)

    def build(self, var_list) -> None:
        if self.built:
            return
        super().build(var_list)
        self._velocities, self._momentums, self._average_gradients = [], [], []
        for variable in self._trainable_variables:
            self._velocities.append(self.add_variable_from_reference(variable, "velocity"))
            if self.momentum > 0:
                self._momentums.append(self.add_variable_from_reference(variable, "momentum"))
            if self.centered:
                self._average_gradients.append(
                    self.add_variable_from_reference(variable, "average_gradient"))

    def update_step(self, gradient, variable, learning_rate) -> None:
        lr = cast(learning_rate, variable.dtype)
        index = self._get_variable_index(variable)
        rho = self.rho
        velocity = self._velocities[index]
        velocity.assign(rho * velocity + (1 - rho) * square(gradient))
        if self.centered:
            average_gradient = self._average_gradients[index]
            average_gradient.assign(rho * average_gradient + (1 - rho) * gradient)
            denominator = velocity - square(average_gradient) + self.epsilon
        else:
            denominator = velocity + self.epsilon
        increment = lr * gradient / sqrt(denominator)
        if self.momentum > 0:
            momentum = self._momentums[index]
            momentum.assign(self.momentum * momentum + increment)
            variable.assign_sub(momentum)
        else:
            variable.assign_sub(increment)

    def get_config(self) -> dict:
        return {**super().get_config(), "rho": self.rho, "momentum": self.momentum,
                "epsilon": self.epsilon, "centered": self.centered}
