"""The Keras 3 `Optimizer` base: what every optimizer shares.

One call of `apply(grads, variables)` does, in Keras 3's order: build the slot Variables
on first use, drop None gradients (with Keras's warning), unscale by `loss_scale_factor`,
clip (`clipnorm` per tensor, `global_clipnorm` over all, or `clipvalue`), decay the
weights (`var -= var * weight_decay * lr`), run each optimizer's `update_step` (the last
three only every n-th call, on the mean gradient, with `gradient_accumulation_steps`),
update the weights' moving averages (`use_ema`), apply Variable constraints, and add 1
to the call counter.

All state lives in Variables (the iteration counter, a float learning rate, the slots) and
every update is `assign*`, so one train step traced by `tapec.function` replays the whole
update: the learning rate and a schedule are computed from the Variables at each call,
never frozen at trace time. Subclasses create their slots in `build` with
`add_variable_from_reference` and implement `update_step(gradient, variable, lr)`.
"""
from __future__ import annotations

import numbers
import re
import threading
import warnings
from typing import Any, Iterable

import numpy as np

from ...namespaces.module import name_scope
from ...ops.elementwise import clip_by_value, equal, logical_not, where
from ...ops.math_extra import clip_by_global_norm, clip_by_norm
from ...ops.shape import cast, zeros_like
from ...tape import GradientTape
from ...tensor import Tensor, Variable, convert_to_tensor
from . import schedules

__all__ = ["Optimizer"]

# Keras 3 warns that these Keras 2 arguments are ignored rather than refusing them.
_IGNORED_LEGACY_ARGUMENTS = ("decay",)

_name_counts: dict[str, int] = {}
_name_lock = threading.Lock()


def _unique_name(base: str) -> str:
    """`base` for the first object of that name, then `base_1`, `base_2`, ... (Keras)."""
    with _name_lock:
        count = _name_counts.get(base, 0)
        _name_counts[base] = count + 1
    return base if count == 0 else f"{base}_{count}"


def _snake_case(name: str) -> str:
    """"RMSprop" -> "rm_sprop", "AdamW" -> "adam_w": Keras's default object names."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def _slot_prefix(variable) -> str:
    """The variable's own name, without TensorFlow's ":0" and with scopes joined by "_"."""
    return str(getattr(variable, "name", "variable")).split(":")[0].replace("/", "_")


def _is_float_scalar_tensor(value) -> bool:
    return (isinstance(value, (Tensor, Variable)) and value.dtype.is_floating
            and tuple(value.shape) == ())


def _check_positive_or_none(what: str, value) -> None:
    if value is not None and (not isinstance(value, numbers.Real) or value < 0):
        raise ValueError(f"Optimizer: `{what}` must be a non-negative number or None, "
                         f"got {value!r}")


class Optimizer:
    """Keras 3's optimizer base (`tf.keras.optimizers.Optimizer`).

    `learning_rate` is a float, a `LearningRateSchedule` (called with `iterations`
    before each update), or a callable of no arguments. At most one of `clipnorm`,
    `clipvalue`, `global_clipnorm` may be set. With `use_ema`, a moving average of each
    variable is kept (`finalize_variable_values` copies it into the variables); with
    `gradient_accumulation_steps` = n, every n-th call updates with the mean of the last n
    gradients.
    """

    def __init__(self, learning_rate: Any, weight_decay: float | None = None,
                 clipnorm: float | None = None, clipvalue: float | None = None,
                 global_clipnorm: float | None = None, use_ema: bool = False,
                 ema_momentum: float = 0.99, ema_overwrite_frequency: int | None = None,
                 loss_scale_factor: float | None = None,
                 gradient_accumulation_steps: int | None = None, name: str | None = None,
                 **kwargs: Any) -> None:
        for legacy in _IGNORED_LEGACY_ARGUMENTS:
            if kwargs.pop(legacy, None) is not None:
                warnings.warn(f"Argument `{legacy}` is no longer supported and will be "
                              "ignored.", stacklevel=3)
        if kwargs:
            raise ValueError(f"Argument(s) not recognized: {kwargs}")
        if use_ema and not 0 <= ema_momentum <= 1:
            raise ValueError("`ema_momentum` must be in the range [0, 1]. Received: "
                             f"ema_momentum={ema_momentum}")
        if use_ema and ema_overwrite_frequency is not None and (
                not isinstance(ema_overwrite_frequency, int) or ema_overwrite_frequency < 1):
            raise ValueError("`ema_overwrite_frequency` must be an integer >= 1 or None. "
                             f"Received: ema_overwrite_frequency={ema_overwrite_frequency}")
        if gradient_accumulation_steps and not (
                isinstance(gradient_accumulation_steps, int) and gradient_accumulation_steps >= 2):
            raise ValueError("`gradient_accumulation_steps` must be an integer >= 2. Received: "
                             f"gradient_accumulation_steps={gradient_accumulation_steps}")
        if sum(c is not None for c in (clipnorm, clipvalue, global_clipnorm)) > 1:
            raise ValueError("Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can "
                             f"be set. Received: clipnorm={clipnorm}, clipvalue={clipvalue}, "
                             f"global_clipnorm={global_clipnorm}")
        for what, value in (("clipnorm", clipnorm), ("clipvalue", clipvalue),
                            ("global_clipnorm", global_clipnorm),
                            ("weight_decay", weight_decay)):
            _check_positive_or_none(what, value)
        if loss_scale_factor is not None and (not isinstance(loss_scale_factor, numbers.Real)
                                              or loss_scale_factor <= 0):
            raise ValueError(f"Optimizer: `loss_scale_factor` must be a positive number or "
                             f"None, got {loss_scale_factor!r}")
        self.name = _unique_name(_snake_case(type(self).__name__)) if name is None else name
        self.weight_decay = weight_decay
        self.clipnorm, self.clipvalue = clipnorm, clipvalue
        self.global_clipnorm = global_clipnorm
        self.use_ema, self.ema_momentum = use_ema, ema_momentum
        self.ema_overwrite_frequency = ema_overwrite_frequency
        self.loss_scale_factor = loss_scale_factor
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.built = False
        self._variables: list[Variable] = []
        self._trainable_variables: list = []
        self._index_by_id: dict[int, int] = {}
        self._exclude_ids: set[int] = set()
        self._excluded_variables: list = []     # keeps the excluded ids valid
        self._exclude_pattern: str | None = None
        self._iterations = self.add_variable((), initializer=0, dtype="int64",
                                             name="iteration")
        self._learning_rate = self._learning_rate_from(learning_rate)

    # -- learning rate ---------------------------------------------------------------

    def _learning_rate_from(self, learning_rate):
        """A schedule or callable as given; a number goes in a float32 Variable, so that
        setting it later reaches functions already traced (they read the Variable)."""
        if isinstance(learning_rate, schedules.LearningRateSchedule) or callable(learning_rate):
            return learning_rate
        if _is_float_scalar_tensor(learning_rate):
            learning_rate = float(learning_rate.numpy())
        if isinstance(learning_rate, (bool, np.bool_)) or not isinstance(
                learning_rate, numbers.Real):
            raise ValueError("Argument `learning_rate` should be a float, an instance of "
                             "LearningRateSchedule, or a callable (of no arguments) returning "
                             f"the learning rate. Received instead: {learning_rate!r:.80}")
        return self.add_variable((), initializer=float(learning_rate), dtype="float32",
                                 name="learning_rate")

    @property
    def learning_rate(self):
        """The learning rate now: the float32 Variable, or the schedule's value at
        `iterations` (a tensor), or the callable's result."""
        return self._current_learning_rate()

    @learning_rate.setter
    def learning_rate(self, value) -> None:
        if isinstance(self._learning_rate, Variable) and not isinstance(
                value, schedules.LearningRateSchedule) and not callable(value):
            # A tensor is assigned as a tensor: inside tf.function, float() would be a guard.
            self._learning_rate.assign(cast(value, "float32") if _is_float_scalar_tensor(value)
                                       else float(value))
        elif isinstance(value, schedules.LearningRateSchedule) or callable(value):
            # As in TensorFlow, a function traced before keeps the learning rate it traced.
            self._learning_rate = value
        else:
            raise TypeError("This optimizer was created with a `LearningRateSchedule` object "
                            "as its `learning_rate` constructor argument, hence its learning "
                            "rate is not settable. If you need the learning rate to be "
                            "settable, you should instantiate the optimizer with a float "
                            "`learning_rate` argument.")

    def _current_learning_rate(self):
        if isinstance(self._learning_rate, Variable):
            return self._learning_rate
        if isinstance(self._learning_rate, schedules.LearningRateSchedule):
            return self._learning_rate(self._iterations)
        return self._learning_rate()

    @property
    def iterations(self):
        """The number of updates applied so far (an int64 Variable); with
        `gradient_accumulation_steps`, the number of real updates (calls // steps)."""
        steps = self.gradient_accumulation_steps
        if steps:
            # calls // steps; tapec has no integer floordiv, and float64 division of a
            # multiple of `steps` is exact below 2**53.
            whole = cast(self._iterations - self._iterations % steps, "float64")
            return cast(whole / steps, "int64")
        return self._iterations

    @property
    def variables(self) -> list:
        """Every Variable the optimizer holds, in creation order: `iterations`, the
        learning rate (when a number), then each trainable variable's slots."""
        return list(self._variables)

    # -- building --------------------------------------------------------------------

    def add_variable(self, shape, initializer: Any = "zeros", dtype: Any = None,
                     name: str | None = None) -> Variable:
        """A non-trainable Variable of the optimizer, filled with `initializer` ("zeros",
        "ones" or a number), named under the optimizer's name."""
        fill = {"zeros": 0, "ones": 1}.get(initializer, initializer)
        if not isinstance(fill, numbers.Number):
            raise ValueError(f"{type(self).__name__}.add_variable: initializer must be "
                             f"'zeros', 'ones' or a number, got {initializer!r:.60}")
        dtype = "float32" if dtype is None else getattr(dtype, "name", dtype)  # DType or str
        value = np.full(tuple(shape), fill, dtype=np.dtype(dtype))
        with name_scope(self.name):
            variable = Variable(value, trainable=False, name=name)
        self._variables.append(variable)
        return variable

    def add_variable_from_reference(self, reference_variable, name: str,
                                    initializer: Any = "zeros") -> Variable:
        """A slot Variable with the shape and dtype of `reference_variable`."""
        return self.add_variable(reference_variable.shape, initializer=initializer,
                                 dtype=reference_variable.dtype.name,
                                 name=f"{_slot_prefix(reference_variable)}_{name}")

    def build(self, var_list: Iterable) -> None:
        """Record the trainable variables this optimizer updates (subclasses then create
        their slots). Called by the first `apply` when not called before."""
        if self.built:
            return
        var_list = list(var_list)
        for variable in var_list:
            if not isinstance(variable, Variable):
                raise TypeError(f"{type(self).__name__}.build: expected tapec Variables, got "
                                f"{type(variable).__name__}")
            if not variable.dtype.is_floating:
                raise TypeError(f"{type(self).__name__}: cannot update {variable.name!r} of "
                                f"dtype {variable.dtype.name}; optimizers update floating "
                                "variables only")
        self._trainable_variables = var_list
        self._index_by_id = {id(v): i for i, v in enumerate(var_list)}
        self.built = True
        if self.use_ema:
            self._averages = [self.add_variable_from_reference(v, "average") for v in var_list]
        if self.gradient_accumulation_steps:
            self._accumulators = [self.add_variable_from_reference(v, "gradient_accumulator")
                                  for v in var_list]

    def _get_variable_index(self, variable) -> int:
        """The position of `variable` in the list the optimizer was built with."""
        index = self._index_by_id.get(id(variable))
        if index is None:
            raise ValueError(f"Unknown variable: {variable!r}. This optimizer can only be "
                             "called for the variables it was originally built with. When "
                             "working with a new set of variables, you should recreate a new "
                             "optimizer instance.")
        return index

    def exclude_from_weight_decay(self, var_list: Iterable | None = None,
                                  var_names: Iterable[str] | None = None) -> None:
        """No weight decay for these Variables, nor for those whose name contains one of
        `var_names`. Only before the optimizer is built (as Keras)."""
        if self.built:
            raise ValueError("`exclude_from_weight_decay()` can only be configured before "
                             "the optimizer is built.")
        if var_list:
            self._exclude_ids = {id(v) for v in var_list}
            self._excluded_variables = list(var_list)
        if var_names:
            self._exclude_pattern = "|".join(re.escape(str(n)) for n in var_names)

    def _use_weight_decay(self, variable) -> bool:
        if id(variable) in self._exclude_ids:
            return False
        return not (self._exclude_pattern is not None
                    and re.search(self._exclude_pattern, variable.name) is not None)

    # -- applying --------------------------------------------------------------------

    def apply_gradients(self, grads_and_vars: Iterable) -> Variable:
        """Apply `(gradient, variable)` pairs; returns `iterations`."""
        pairs = list(grads_and_vars)
        if not pairs:
            raise ValueError(f"{type(self).__name__}.apply_gradients: no (gradient, "
                             "variable) pairs were given")
        grads, trainable_variables = zip(*pairs)
        self.apply(list(grads), list(trainable_variables))
        return self._iterations

    def apply(self, grads, trainable_variables=None) -> None:
        """Update `trainable_variables` (default: those the optimizer was built with) with
        `grads`, one gradient per variable; an empty `grads` does nothing."""
        grads = list(grads)
        if not grads:
            return
        if trainable_variables is None:
            if not self.built:
                raise ValueError("When passing `grads` without `variables`, the optimizer "
                                 "must already be built on a list of variables. Call "
                                 "`optimizer.build(trainable_variables)` first.")
            trainable_variables = self._trainable_variables
        trainable_variables = list(trainable_variables)
        if len(grads) != len(trainable_variables):
            raise ValueError(f"{type(self).__name__}.apply: {len(grads)} gradients for "
                             f"{len(trainable_variables)} variables; give one per variable")
        if not self.built:
            self.build(trainable_variables)
        for variable in trainable_variables:
            self._get_variable_index(variable)
        grads, trainable_variables = self._filter_empty_gradients(grads, trainable_variables)
        grads = [self._as_gradient(g, v) for g, v in zip(grads, trainable_variables)]
        if self.loss_scale_factor is not None:
            grads = [g / self.loss_scale_factor for g in grads]
        learning_rate = self._current_learning_rate()
        if self.gradient_accumulation_steps:
            self._accumulate_or_update(grads, trainable_variables, learning_rate)
        else:
            self._update(grads, trainable_variables, learning_rate)
        if self.use_ema:
            self._update_moving_averages()
        for variable in trainable_variables:
            if variable.constraint is not None:
                variable.assign(variable.constraint(variable))
        self._iterations.assign_add(1)

    def _update(self, grads, trainable_variables, learning_rate) -> None:
        grads = self._clip_gradients(grads)
        self._apply_weight_decay(trainable_variables, learning_rate)
        for gradient, variable in zip(grads, trainable_variables):
            self.update_step(gradient, variable, learning_rate)

    def _accumulate_or_update(self, grads, trainable_variables, learning_rate) -> None:
        """Every `gradient_accumulation_steps`-th call updates with the mean of the
        gradients since the last update; the other calls only add to the accumulators.
        Both branches are computed and the Variables keep the chosen one (`where`), so one
        traced step serves every call."""
        steps = self.gradient_accumulation_steps
        due = equal((self._iterations + 1) % steps, 0)
        accumulators = [self._accumulators[self._get_variable_index(v)]
                        for v in trainable_variables]
        kept = {id(v) for v in (self._iterations, self._learning_rate,
                                *getattr(self, "_averages", ()), *self._accumulators)}
        changed = list(trainable_variables) + [v for v in self._variables if id(v) not in kept]
        before = [convert_to_tensor(v) for v in changed]
        self._update([(g + a) / steps for g, a in zip(grads, accumulators)],
                     trainable_variables, learning_rate)
        for variable, old in zip(changed, before):
            variable.assign(where(due, variable, old))
        for accumulator, gradient in zip(accumulators, grads):
            accumulator.assign(where(due, zeros_like(accumulator), accumulator + gradient))

    def _update_moving_averages(self) -> None:
        """average = m*average + (1 - m)*var over every built variable, m = ema_momentum
        except at the first update (m = 0: the average starts at the weights); every
        `ema_overwrite_frequency` updates the weights take their averages."""
        first = equal(self._iterations, 0)
        for variable, average in zip(self._trainable_variables, self._averages):
            momentum = cast(logical_not(first), variable.dtype) * self.ema_momentum
            average.assign(momentum * average + (1 - momentum) * variable)
        if self.ema_overwrite_frequency:
            due = equal((self._iterations + 1) % self.ema_overwrite_frequency, 0)
            for variable, average in zip(self._trainable_variables, self._averages):
                variable.assign(where(due, average, variable))

    def finalize_variable_values(self, var_list) -> None:
        """With `use_ema`, give the variables their moving averages (what `fit` does at
        the end of training); otherwise nothing."""
        if not self.use_ema:
            return
        var_list = list(var_list)
        if len(var_list) != len(self._averages):
            raise ValueError(f"The length of model variables ({len(var_list)}) to override "
                             "does not match the length of model variables stored in the "
                             f"optimizer ({len(self._averages)}). Please check if the "
                             "optimizer was called on your model.")
        for variable, average in zip(var_list, self._averages):
            variable.assign(average)

    def update_step(self, gradient, variable, learning_rate) -> None:
        """Update one variable from its gradient (each optimizer's formula)."""
        raise NotImplementedError(f"{type(self).__name__} must implement "
                                  "`update_step(gradient, variable, learning_rate)`")

    def minimize(self, loss, var_list, tape: GradientTape | None = None) -> Variable:
        """Differentiate `loss` and apply the gradients to `var_list` (tf.keras 2's
        method; Keras 3 has none). `loss` is a callable of no arguments, or a tensor
        recorded on `tape`; `var_list` a list of Variables or a callable returning one.
        Returns `iterations`."""
        if tape is None:
            if not callable(loss):
                raise ValueError(f"{type(self).__name__}.minimize: `tape` is required when "
                                 "a tensor `loss` is passed (or pass a callable `loss`)")
            tape = GradientTape()
        if callable(loss):
            with tape:
                if not callable(var_list):
                    tape.watch(list(var_list))
                loss = loss()
        if callable(var_list):
            var_list = var_list()
        var_list = list(var_list)
        grads = tape.gradient(loss, var_list)
        return self.apply_gradients(zip(grads, var_list))

    def _filter_empty_gradients(self, grads, variables):
        kept = [(g, v) for g, v in zip(grads, variables) if g is not None]
        if not kept:
            raise ValueError("No gradients provided for any variable.")
        if len(kept) < len(grads):
            missing = [v.name for g, v in zip(grads, variables) if g is None]
            warnings.warn(f"Gradients do not exist for variables {missing} when minimizing "
                          "the loss. If using `model.compile()`, did you forget to provide a "
                          "`loss` argument?", stacklevel=4)
        return [g for g, _ in kept], [v for _, v in kept]

    def _as_gradient(self, gradient, variable):
        """The gradient as a tensor of the variable's dtype and shape."""
        gradient = convert_to_tensor(gradient)
        if tuple(gradient.shape) != tuple(variable.shape):
            raise ValueError(f"{type(self).__name__}: the gradient for {variable.name!r} has "
                             f"shape {tuple(gradient.shape)}, the variable "
                             f"{tuple(variable.shape)}")
        if not gradient.dtype.is_floating:
            raise TypeError(f"{type(self).__name__}: the gradient for {variable.name!r} has "
                            f"dtype {gradient.dtype.name}; a floating gradient is required")
        return gradient if gradient.dtype == variable.dtype else cast(gradient, variable.dtype)

    def _clip_gradients(self, grads: list) -> list:
        if self.clipnorm:
            return [clip_by_norm(g, self.clipnorm) for g in grads]
        if self.global_clipnorm:
            return list(clip_by_global_norm(grads, self.global_clipnorm)[0])
        if self.clipvalue:
            return [clip_by_value(g, -self.clipvalue, self.clipvalue) for g in grads]
        return grads

    def _apply_weight_decay(self, variables, learning_rate) -> None:
        """Decoupled weight decay, before the update: var -= var * weight_decay * lr."""
        if self.weight_decay is None:
            return
        for variable in variables:
            if self._use_weight_decay(variable):
                lr = cast(learning_rate, variable.dtype)
                decay = cast(self.weight_decay, variable.dtype)
                variable.assign(variable - variable * decay * lr)

    # Keras 3's assign methods, for the update_step of an optimizer written by the user.
    def assign(self, variable, value) -> None:
        """variable = value."""
        variable.assign(value)

    def assign_add(self, variable, value) -> None:
        """variable += value."""
        variable.assign_add(value)

    def assign_sub(self, variable, value) -> None:
        """variable -= value."""
        variable.assign_sub(value)

    # -- state and configuration -----------------------------------------------------

    def save_own_variables(self, store: dict) -> None:
        """Write every Variable's value into `store` under "0", "1", ... (Keras 3)."""
        for i, variable in enumerate(self._variables):
            store[str(i)] = variable.numpy()

    def load_own_variables(self, store: dict) -> None:
        """Assign the values `save_own_variables` wrote. As Keras 3, a store that does
        not hold one value per Variable (an optimizer not built yet) is skipped with a
        warning."""
        if len(store) != len(self._variables):
            warnings.warn(f"Skipping variable loading for optimizer '{self.name}', because "
                          f"it has {len(self._variables)} variables whereas the saved "
                          f"optimizer has {len(store)} variables (build it on the model's "
                          "variables first).", stacklevel=2)
            return
        for i, variable in enumerate(self._variables):
            value = np.asarray(store[str(i)])
            if value.shape != tuple(variable.shape):
                raise ValueError(f"{type(self).__name__}.load_own_variables: value {i} has "
                                 f"shape {value.shape}, {variable.name!r} {tuple(variable.shape)}")
            variable.assign(value.astype(variable.dtype.name))

    def get_config(self) -> dict:
        """The constructor arguments (Keras 3's keys); the learning rate is a float (the
        Variable's float32 value) or a serialized schedule."""
        if isinstance(self._learning_rate, Variable):
            learning_rate: Any = float(self._learning_rate.numpy())
        elif isinstance(self._learning_rate, schedules.LearningRateSchedule):
            learning_rate = schedules.serialize(self._learning_rate)
        else:
            learning_rate = self._learning_rate
        return {"name": self.name, "learning_rate": learning_rate,
                "weight_decay": self.weight_decay, "clipnorm": self.clipnorm,
                "global_clipnorm": self.global_clipnorm, "clipvalue": self.clipvalue,
                "use_ema": self.use_ema, "ema_momentum": self.ema_momentum,
                "ema_overwrite_frequency": self.ema_overwrite_frequency,
                "loss_scale_factor": self.loss_scale_factor,
                "gradient_accumulation_steps": self.gradient_accumulation_steps}

    @classmethod
    def from_config(cls, config: dict) -> Optimizer:
        """An optimizer from `get_config()`'s dictionary."""
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = schedules.deserialize(config["learning_rate"])
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r}>"

