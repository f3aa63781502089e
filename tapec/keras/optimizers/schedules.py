"""Learning-rate schedules (`tf.keras.optimizers.schedules`), Keras 3's formulas.

A schedule is called with the optimizer's step (its `iterations` Variable, an int or a
tensor) and returns a float32 tensor. Every formula is written with tensor ops, so a step
function traced by `tapec.function` computes the rate from the counter at each call.
"""
from __future__ import annotations

import math
from typing import Any

from ...ops.elementwise import cos, equal, floor, less, less_equal, log, minimum, where
from ...ops.elementwise import pow as power
from ...ops.elementwise_math import ceil
from ...ops.shape import cast
from ...tensor import convert_to_tensor

__all__ = ["LearningRateSchedule", "ExponentialDecay", "InverseTimeDecay",
           "PiecewiseConstantDecay", "PolynomialDecay", "CosineDecay", "CosineDecayRestarts",
           "serialize", "deserialize"]


def _step_as(step, dtype: str):
    """The step (int, tensor or Variable) as a tensor of `dtype`."""
    step = convert_to_tensor(step)
    return step if step.dtype.name == dtype else cast(step, dtype)


def _check_decay_steps(decay_steps) -> None:
    if not decay_steps > 0:
        raise ValueError(f"Argument `decay_steps` must be > 0. Received: "
                         f"decay_steps={decay_steps}")


class LearningRateSchedule:
    """The base of learning-rate schedules: subclasses define `__call__(step)` and
    `get_config()`; `from_config(config)` calls the constructor with it."""

    def __call__(self, step):
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must "
                                  "override `__call__(self, step)`.")

    def get_config(self) -> dict:
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must "
                                  "override `get_config()` in order to be serializable.")

    @classmethod
    def from_config(cls, config: dict) -> LearningRateSchedule:
        return cls(**config)


class _DecayOverSteps(LearningRateSchedule):
    """A schedule of step / decay_steps (floored with `staircase`): the arguments and
    config Exponential and InverseTime decay share."""

    def __init__(self, initial_learning_rate: float, decay_steps: int, decay_rate: float,
                 staircase: bool, name: str) -> None:
        _check_decay_steps(decay_steps)
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.decay_rate, self.staircase, self.name = decay_rate, staircase, name

    def _progress(self, step):
        progress = _step_as(step, "float32") / float(self.decay_steps)
        return floor(progress) if self.staircase else progress

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


class ExponentialDecay(_DecayOverSteps):
    """initial_learning_rate * decay_rate ** (step / decay_steps); with `staircase` the
    exponent is floored (the rate drops every `decay_steps` steps)."""

    def __init__(self, initial_learning_rate: float, decay_steps: int, decay_rate: float,
                 staircase: bool = False, name: str = "ExponentialDecay") -> None:
        super().__init__(initial_learning_rate, decay_steps, decay_rate, staircase, name)

    def __call__(self, step):
        return float(self.initial_learning_rate) * power(float(self.decay_rate),
                                                         self._progress(step))


class InverseTimeDecay(_DecayOverSteps):
    """initial_learning_rate / (1 + decay_rate * step / decay_steps); with `staircase`
    step / decay_steps is floored."""

    def __init__(self, initial_learning_rate: float, decay_steps: int, decay_rate: float,
                 staircase: bool = False, name: str = "InverseTimeDecay") -> None:
        super().__init__(initial_learning_rate, decay_steps, decay_rate, staircase, name)

    def __call__(self, step):
        return float(self.initial_learning_rate) / (
            1.0 + float(self.decay_rate) * self._progress(step))


class PiecewiseConstantDecay(LearningRateSchedule):
    """values[0] while step <= boundaries[0], values[i] while boundaries[i-1] < step <=
    boundaries[i], values[-1] after the last boundary."""

    def __init__(self, boundaries: list, values: list, name: str = "PiecewiseConstant") -> None:
        if len(boundaries) != len(values) - 1:
            raise ValueError("The length of boundaries should be 1 less than the length of "
                             f"values. Received: boundaries={boundaries} of length "
                             f"{len(boundaries)}, and values={values} of length {len(values)}.")
        self.boundaries, self.values, self.name = list(boundaries), list(values), name

    def __call__(self, step):
        # float64 holds every int step below 2**53 exactly and compares with float bounds.
        step = _step_as(step, "float64")
        values = [convert_to_tensor(v) for v in self.values]
        rate = values[-1]
        for boundary, value in zip(reversed(self.boundaries), reversed(values[:-1])):
            rate = where(less_equal(step, float(boundary)), value, rate)
        return rate

    def get_config(self) -> dict:
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class PolynomialDecay(LearningRateSchedule):
    """(initial - end) * (1 - step / decay_steps) ** power + end, with the step held at
    `decay_steps` after it; with `cycle` the horizon grows instead to the next multiple
    of `decay_steps` (decay_steps * ceil(step / decay_steps), at least decay_steps)."""

    def __init__(self, initial_learning_rate: float, decay_steps: int,
                 end_learning_rate: float = 0.0001, power: float = 1.0, cycle: bool = False,
                 name: str = "PolynomialDecay") -> None:
        _check_decay_steps(decay_steps)
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.end_learning_rate, self.power = end_learning_rate, power
        self.cycle, self.name = cycle, name

    def __call__(self, step):
        step = _step_as(step, "float32")
        horizon = float(self.decay_steps)
        if self.cycle:
            cycles = where(equal(step, 0.0), 1.0, ceil(step / horizon))
            horizon = horizon * cycles
        else:
            step = minimum(step, horizon)
        end = float(self.end_learning_rate)
        remaining = 1.0 - step / horizon
        return (float(self.initial_learning_rate) - end) * power(remaining,
                                                                 float(self.power)) + end

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps,
                "end_learning_rate": self.end_learning_rate, "power": self.power,
                "cycle": self.cycle, "name": self.name}


class CosineDecay(LearningRateSchedule):
    """Cosine decay from the rate r0 to alpha * r0 over `decay_steps` steps:
    r0 * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) + alpha).

    With `warmup_target`, the rate first rises linearly from `initial_learning_rate` to
    `warmup_target` over `warmup_steps` steps, and the decay then starts from
    r0 = warmup_target (Keras ignores `warmup_steps` when `warmup_target` is None).
    """

    def __init__(self, initial_learning_rate: float, decay_steps: int, alpha: float = 0.0,
                 name: str = "CosineDecay", warmup_target: float | None = None,
                 warmup_steps: int = 0) -> None:
        _check_decay_steps(decay_steps)
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.alpha, self.name = alpha, name
        self.warmup_target, self.warmup_steps = warmup_target, warmup_steps

    def _decay(self, step, start_rate: float):
        fraction = minimum(step, float(self.decay_steps)) / float(self.decay_steps)
        cosine = 0.5 * (1.0 + cos(math.pi * fraction))
        return start_rate * ((1.0 - self.alpha) * cosine + self.alpha)

    def __call__(self, step):
        step = _step_as(step, "float32")
        if self.warmup_target is None:
            return self._decay(step, float(self.initial_learning_rate))
        decayed = self._decay(step - float(self.warmup_steps), float(self.warmup_target))
        if not self.warmup_steps:
            return decayed
        rise = float(self.warmup_target) - float(self.initial_learning_rate)
        warming = rise * (step / float(self.warmup_steps)) + float(self.initial_learning_rate)
        return where(less(step, float(self.warmup_steps)), warming, decayed)

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "alpha": self.alpha, "name": self.name,
                "warmup_target": self.warmup_target, "warmup_steps": self.warmup_steps}


class CosineDecayRestarts(LearningRateSchedule):
    """Cosine decay with warm restarts (SGDR): period i lasts first_decay_steps * t_mul**i
    steps and starts from initial_learning_rate * m_mul**i; within a period the rate
    follows CosineDecay's curve (down to alpha times the period's start)."""

    def __init__(self, initial_learning_rate: float, first_decay_steps: int,
                 t_mul: float = 2.0, m_mul: float = 1.0, alpha: float = 0.0,
                 name: str = "SGDRDecay") -> None:
        _check_decay_steps(first_decay_steps)
        self.initial_learning_rate, self.first_decay_steps = initial_learning_rate, \
            first_decay_steps
        self.t_mul, self.m_mul, self.alpha, self.name = t_mul, m_mul, alpha, name

    def __call__(self, step):
        fraction = _step_as(step, "float32") / float(self.first_decay_steps)
        t_mul = float(self.t_mul)
        if t_mul == 1.0:
            restarts = floor(fraction)
            fraction = fraction - restarts
        else:
            # Periods 1, t, t**2, ... (in first_decay_steps) end at (t**i - 1) / (t - 1).
            restarts = floor(log(1.0 - fraction * (1.0 - t_mul)) / math.log(t_mul))
            before = (1.0 - power(t_mul, restarts)) / (1.0 - t_mul)
            fraction = (fraction - before) / power(t_mul, restarts)
        cosine = 0.5 * power(float(self.m_mul), restarts) * (1.0 + cos(math.pi * fraction))
        return float(self.initial_learning_rate) * ((1.0 - self.alpha) * cosine + self.alpha)

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate,
                "first_decay_steps": self.first_decay_steps, "t_mul": self.t_mul,
                "m_mul": self.m_mul, "alpha": self.alpha, "name": self.name}


_SCHEDULES = {cls.__name__: cls for cls in (ExponentialDecay, InverseTimeDecay,
                                            PiecewiseConstantDecay, PolynomialDecay,
                                            CosineDecay, CosineDecayRestarts)}


def serialize(learning_rate_schedule: LearningRateSchedule) -> dict:
    """Keras's serialized form: {"module", "class_name", "config", "registered_name"}."""
    return {"module": "keras.optimizers.schedules",
            "class_name": type(learning_rate_schedule).__name__,
            "config": learning_rate_schedule.get_config(), "registered_name": None}


def deserialize(config: dict, custom_objects: dict | None = None) -> Any:
    """A schedule from `serialize()`'s dictionary (`class_name` and `config`)."""
    known = {**_SCHEDULES, **(custom_objects or {})}
    name = config.get("class_name") if isinstance(config, dict) else None
    if name not in known:
        raise ValueError(f"Could not interpret learning rate schedule: {config!r:.200}; "
                         f"known schedules: {sorted(_SCHEDULES)}")
    return known[name].from_config(config.get("config", {}))
