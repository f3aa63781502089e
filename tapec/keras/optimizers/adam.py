"""Adam and AdamW (`tf.keras.optimizers.Adam`, `AdamW`), Keras 3's update.

With t = iterations + 1 and slots m, v starting at 0:
    m += (g - m) * (1 - beta_1)
    v += (g**2 - v) * (1 - beta_2)
    alpha = lr * sqrt(1 - beta_2**t) / (1 - beta_1**t)
    var -= alpha * m / (sqrt(v) + epsilon)
Epsilon is added to sqrt(v) after the bias correction moved into alpha (Keras's "epsilon
hat"), so it is not the epsilon of the Adam paper's formula. With `amsgrad`, v is replaced
by v_hat = max(v_hat, v) in the last line. AdamW is Adam with the base optimizer's
decoupled weight decay (var -= var * weight_decay * lr before the update) on by default.
"""
from __future__ import annotations

from typing import Any

from ...ops.elementwise import maximum, sqrt, square
from ...ops.elementwise import pow as power
from ...ops.shape import cast
from .base import Optimizer

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam: moment estimates with bias correction; `amsgrad` keeps the running maximum
    of the second moment."""

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, amsgrad: bool = False, **kwargs: Any) -> None:
        super().__init__(learning_rate, **kwargs)
        self.beta_1, self.beta_2 = beta_1, beta_2
        self.epsilon, self.amsgrad = epsilon, bool(amsgrad)

    def build(self, var_list) -> None:
        if self.built:
            return
        super().build(var_list)
        self._momentums, self._velocities, self._velocity_hats = [], [], []
        for variable in self._trainable_variables:
            self._momentums.append(self.add_variable_from_reference(variable, "momentum"))
            self._velocities.append(self.add_variable_from_reference(variable, "velocity"))
            if self.amsgrad:
                self._velocity_hats.append(
                    self.add_variable_from_reference(variable, "velocity_hat"))

    def update_step(self, gradient, variable, learning_rate) -> None:
        dtype = variable.dtype
        lr = cast(learning_rate, dtype)
        step = cast(self.iterations + 1, dtype)
        beta_1_power = power(cast(self.beta_1, dtype), step)
        beta_2_power = power(cast(self.beta_2, dtype), step)
        index = self._get_variable_index(variable)
        m, v = self._momentums[index], self._velocities[index]
        alpha = lr * sqrt(1 - beta_2_power) / (1 - beta_1_power)
        m.assign_add((gradient - m) * (1 - self.beta_1))
        v.assign_add((square(gradient) - v) * (1 - self.beta_2))
        if self.amsgrad:
            v_hat = self._velocity_hats[index]
            v_hat.assign(maximum(v_hat, v))
            v = v_hat
        variable.assign_sub((m * alpha) / (sqrt(v) + self.epsilon))

    def get_config(self) -> dict:
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon, "amsgrad": self.amsgrad}


class AdamW(Adam):
    """Adam with decoupled weight decay (0.004 by default, as Keras 3)."""

    def __init__(self, learning_rate: Any = 0.001, weight_decay: float = 0.004,
                 beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-7,
                 amsgrad: bool = False, **kwargs: Any) -> None:
        if weight_decay is None:
            raise ValueError("Argument `weight_decay` must be a float. Received: "
                             "weight_decay=None")
        super().__init__(learning_rate, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon,
                         amsgrad=amsgrad, weight_decay=weight_decay, **kwargs)
