"""Random graph-mode programs built on `fuzz_programs.programs()` (used by
test_fuzz_graph_mode.py).

Two strategies, both Python source so that a failure prints exactly what ran.

`train_steps()`: a training step over 1-3 float64 Variables (the first inputs of a
random program, the others are data fed at each call). The program is the loss; the
step takes the gradients and updates the Variables with a random mix of rules:
`assign_sub`, `assign_add`, `assign`, momentum-style slot Variables updated together
with the weight, two writes in a row, clipping, and maybe a counter incremented with
`assign_add` that the learning rate reads after writing it (divided by it, or a warmup
`if`, which is a guard). Around that core, independent choices: the Variables closed
over or passed (one by one or as a list), the learning rate a literal, a tensor or a
Python float, keyword arguments, a write inside the tape followed by a second read,
gradients from a tape, from `tf.value_and_grad` of the Variables or with a gradient
penalty from a nested tape, the loss or the updates inside their own `tf.function`,
what is returned (reads after the writes, the loss again, the counter), and an eager
write between calls. The same step runs as plain Python, inside `tf.function`, and
(when it has tapec.functions inside) as plain Python calling them, each on its own
identically initialised Variables:

    def make_step(x, m_x, counter):
        # Variables x: (2,); data y: (2,); slots m_x; counter float64
        def step(y, lr):
            with tf.GradientTape() as tape:
                loss = f(x, y)
            g_x, = tape.gradient(loss, [x], unconnected_gradients="zero")
            m_x.assign(0.9 * m_x + g_x)
            x.assign_sub(lr * m_x)
            counter.assign_add(1.0)
            return loss, f(x, y)
        return step, []

`compositions()`: the functional transformations (`tf.grad`, `tf.value_and_grad`,
`tf.jacobian`, `tf.hessian`, `tf.function`) and GradientTapes (gradient, jacobian,
Hessian-vector product) stacked on a random program's `f` with respect to one of its
inputs, up to derivatives of order 3; the other inputs are closed-over constants,
closed-over Variables or arguments of every stage, and h0 may branch on the sign of
sum(x) (a guard inside every derivative):

    def h0(x):
        return f(x, y)                     # y held fixed

    h1 = tf.grad(h0)                       # order 1: D f[.]

    def h2(x):                             # order 2: D^2 f[u1, .]
        with tf.GradientTape() as tape:
            tape.watch(x)
            s = tf.reduce_sum(h1(x) * u1)
        return tape.gradient(s, x, unconnected_gradients="zero")

Every stage's value is the derivative tensor of order k of f contracted with some
random directions u1, u2, ... and with the remaining `free` indices left open (each
of the input's shape). Derivatives of a smooth function are symmetric tensors, so
what the composition computes depends only on k, the directions and `free`: the test
computes the same number with plain nested eager tapes.
"""
import linecache
import math
from dataclasses import dataclass, replace
from functools import cached_property
from itertools import count

import numpy as np
from hypothesis import strategies as st

import tapec as tf
from fuzz_programs import programs

_ids = count()

MAX_ORDER = 3           # highest derivative a composition takes
MAX_FREE_SIZE = 729     # largest number of elements of a composition's value (27 ** 2)


def _exec(source, what, namespace):
    """Run `source` in `namespace`, registered in linecache so tracebacks show its lines."""
    filename = f"<fuzz {what} {next(_ids)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102
    return namespace


def literal(array):
    """Source of a float64 constant holding exactly `array`."""
    return f"tf.constant(np.array({np.asarray(array).tolist()!r}))"


def _size(shape):
    return int(np.prod(shape, dtype=np.int64))


# --------------------------------------------------------------------------- train steps

# Update rules, simplest first (hypothesis shrinks towards the first). `{w}` is the
# Variable, `{g}` its gradient, `{lr}` the learning rate, `{m}` a slot Variable the rule
# keeps beside it (zeros at the start). Rules with two lines read a Variable after the
# first line wrote it.
RULES = {
    "assign_sub": (None, ["{w}.assign_sub({lr} * {g})"]),
    "assign_add": (None, ["{w}.assign_add(-{lr} * {g})"]),
    "assign": (None, ["{w}.assign({w} - {lr} * {g})"]),
    "momentum": ("m", ["{m}.assign(0.9 * {m} + {g})", "{w}.assign_sub({lr} * {m})"]),
    "rmsprop": ("s", ["{m}.assign(0.9 * {m} + 0.1 * {g} * {g})",
                      "{w}.assign_sub({lr} * {g} / tf.sqrt({m} + 0.001))"]),
    "accumulate": ("a", ["{m}.assign_add({g})",
                         "{w}.assign_sub({lr} * ({g} + 0.5 * {m}))"]),
    "decay": (None, ["{w}.assign_sub({lr} * {g})", "{w}.assign(0.99 * {w})"]),
    "clip": (None, ["{w}.assign(tf.clip_by_value({w} - {lr} * {g}, -2.0, 2.0))"]),
}

# What the step returns besides the loss: nothing, reads of the first Variable after
# the update (written four ways), the loss evaluated again at the new values, the
# counter's new value.
RETURNS = {
    "loss": "",
    "read_after_write": "tf.reduce_sum({w} * {w})",
    "read_value": "tf.reduce_sum({w}.read_value())",
    "identity": "tf.identity({w})",
    "convert": "tf.convert_to_tensor({w}) + 0.0",
    "loss_again": "{loss_call}",
    "counter": "counter.read_value()",
}

# The learning rate: a literal in the source, a tensor argument (a new value each call)
# or a Python float argument (the same each call: a new one would be a new trace).
LR_FORMS = ("literal", "tensor", "python")
# How the step gets its Variables: closed over, as arguments, as one list argument.
PASSING = ("closure", "arguments", "list")
# How the learning rate uses the counter (incremented first, so read after its write):
# not at all, divided by it (a float counter), halved for the first two calls (Python
# reads the counter: a guard, so at most two traces).
SCHEDULES = (None, "divide", "warmup")

# How the gradients are taken: a tape; `tf.value_and_grad` of f with respect to the
# Variables; a tape around a loss with a gradient penalty, 0.1 |d loss / d Variables|^2,
# from an inner tape (second derivatives of the Variables).
GRADIENTS = ("tape", "value_and_grad", "penalty")

LEARNING_RATE = 0.05
WARMUP_CALLS = 2


@dataclass(frozen=True)
class TrainStep:
    """A training step over `program`: its first `n_variables` inputs are Variables, the
    others data fed at each call.

    `rules[i]` updates Variable i (a RULES key); `counter` is None, "float64" or
    "int64" (a Variable the step increments with assign_add); `schedule`, `lr_form`,
    `passing`, `returns`: entries of SCHEDULES, LR_FORMS, PASSING, RETURNS.
    `keywords`: data and learning rate are passed by keyword. `tape_write`: inside the
    tape, after the loss, the first Variable is scaled and the loss gets a second term
    at the new value (a read after a write, both recorded). `loss_function`: the loss is
    a `tf.function` of f, called on the Variables under the tape (with `loss_closure`,
    a `tf.function` of the data only, closing over the Variables). `gradients`: a
    GRADIENTS entry. `update_function`: the updates are made by a `tf.function` taking the
    Variables, gradients and rate as arguments (writes inside a function called inside
    another trace, or replayed); it returns None, or with `update_result` the sum of
    the first Variable's new value (unused). `external`: between calls the first Variable is
    assigned eagerly."""
    program: object
    n_variables: int
    rules: tuple
    counter: str | None = None
    schedule: str | None = None
    lr_form: str = "literal"
    passing: str = "closure"
    returns: str = "loss"
    keywords: bool = False
    tape_write: bool = False
    loss_function: bool = False
    loss_closure: bool = False
    gradients: str = "tape"
    update_function: bool = False
    update_result: bool = False
    external: bool = False

    # ---------------------------------------------------------------- names

    @property
    def variable_names(self):
        return list(self.program.input_names[:self.n_variables])

    @property
    def data_names(self):
        return list(self.program.input_names[self.n_variables:self.program.n_inputs])

    @property
    def slot_names(self):
        """(slot name, variable index) for the rules that keep a slot Variable."""
        return [(f"{RULES[rule][0]}_{w}", i)
                for i, (w, rule) in enumerate(zip(self.variable_names, self.rules))
                if RULES[rule][0]]

    @property
    def all_variable_names(self):
        """Every Variable, in the order `make_variables` builds them."""
        return self.variable_names + [n for n, _ in self.slot_names] + \
            (["counter"] if self.counter else [])

    @property
    def step_parameters(self):
        names = {"closure": [], "arguments": self.all_variable_names,
                 "list": ["variables"]}[self.passing]
        return names + self.data_names + (["lr"] if self.lr_form != "literal" else [])

    @property
    def plain(self):
        """The same step with no tapec.function inside it (tape gradients, f called
        directly): the eager reference."""
        return replace(self, loss_function=False, loss_closure=False,
                       gradients="tape" if self.gradients == "value_and_grad"
                       else self.gradients, update_function=False, update_result=False)

    @property
    def max_traces(self):
        """Traces a tf.function of the step may make: one per branch of the warmup."""
        return 2 if self.schedule == "warmup" else 1

    # ---------------------------------------------------------------- source

    def _lr(self):
        lr = "lr" if self.lr_form != "literal" else repr(LEARNING_RATE)
        if self.schedule == "divide":
            return f"{lr} / counter"
        if self.schedule == "warmup":
            return f"warm * {lr}"
        return lr

    def _update_lines(self, lr=None):
        lr = lr or self._lr()
        slots = {i: n for n, i in self.slot_names}
        lines = []
        for i, (w, rule) in enumerate(zip(self.variable_names, self.rules)):
            for line in RULES[rule][1]:
                lines.append(line.format(w=w, g=f"g_{w}", lr=lr, m=slots.get(i)))
        return lines

    def _gradient_lines(self):
        ws = self.variable_names
        grads = ", ".join(f"g_{w}" for w in ws) + ","
        if self.gradients == "value_and_grad":
            call = ", ".join(self.program.input_names[:self.program.n_inputs])
            return [f"loss, ({grads}) = value_and_grad_f({call})"]
        loss = self._loss_call()
        if self.gradients == "penalty":
            inner = ", ".join(f"h_{w}" for w in ws) + ","
            norms = " + ".join(f"tf.reduce_sum(h_{w} * h_{w})" for w in ws)
            lines = ["with tf.GradientTape() as tape:",
                     "    with tf.GradientTape() as inner_tape:", f"        loss = {loss}",
                     f"    {inner} = inner_tape.gradient(loss, [{', '.join(ws)}], "
                     'unconnected_gradients="zero")',
                     f"    loss = loss + 0.1 * ({norms})"]
        else:
            lines = ["with tf.GradientTape() as tape:", f"    loss = {loss}"]
        if self.tape_write:
            lines += [f"    {ws[0]}.assign(0.9 * {ws[0]})", f"    loss = loss + 0.5 * {loss}"]
        lines.append(f"{grads} = tape.gradient(loss, [{', '.join(ws)}], "
                     'unconnected_gradients="zero")')
        return lines

    def _loss_fn(self):
        return "loss_fn" if self.loss_function else "f"

    def _loss_call(self):
        """How the step calls the loss: `f(inputs)`, or `loss_fn` of them (of the data
        only, with `loss_closure`)."""
        names = self.data_names if self.loss_closure else \
            self.program.input_names[:self.program.n_inputs]
        return f"{self._loss_fn()}({', '.join(names)})"

    def _return_line(self):
        extra = RETURNS[self.returns]
        if not extra or (self.returns == "counter" and not self.counter):
            return "return loss"
        return "return loss, " + extra.format(w=self.variable_names[0],
                                              loss_call=self._loss_call())

    def _note(self):
        ws = self.variable_names
        shapes = ", ".join(f"{n}: {s}" for n, s in zip(ws, self.program.input_shapes))
        data = ", ".join(f"{n}: {s}" for n, s in zip(self.data_names,
                                                     self.program.input_shapes[len(ws):]))
        slots = ", ".join(n for n, _ in self.slot_names)
        return f"# Variables {shapes}" + (f"; data {data}" if data else "") + \
            (f"; slots {slots}" if slots else "") + \
            (f"; counter {self.counter}" if self.counter else "")

    def _step_body(self):
        one = "1.0" if self.counter == "float64" else "1"
        body = []
        if self.passing == "list":
            body.append(f"{', '.join(self.all_variable_names)}, = variables")
        if self.counter and self.schedule:
            body.append(f"counter.assign_add({one})")
        if self.schedule == "warmup":
            body.append(f"warm = 0.5 if counter <= {WARMUP_CALLS} else 1.0")
        body += self._gradient_lines()
        if self.update_function:
            body.append(f"apply_updates({', '.join(self._update_parameters())}, "
                        f"rate={self._lr()})")
        else:
            body += self._update_lines()
        if self.counter and not self.schedule:
            body.append(f"counter.assign_add({one})")
        body.append(self._return_line())
        return body

    def _update_parameters(self):
        """The inner update function's parameters, but the rate: the Variables it
        writes and reads, and the gradients."""
        slots = [n for n, _ in self.slot_names]
        return self.variable_names + slots + [f"g_{w}" for w in self.variable_names]

    @cached_property
    def step_source(self):
        outer = ", ".join(self.all_variable_names) if self.passing == "closure" else ""
        lines = [f"def make_step({outer}):", f"    {self._note()}"]
        functions = []
        if self.loss_closure:
            data = ", ".join(self.data_names)
            inputs = ", ".join(self.program.input_names[:self.program.n_inputs])
            lines.append(f"    loss_fn = tf.function(lambda {data}: f({inputs}))")
            functions.append("loss_fn")
        elif self.loss_function:
            lines.append("    loss_fn = tf.function(f)")
            functions.append("loss_fn")
        if self.gradients == "value_and_grad":
            argnums = tuple(range(self.n_variables))
            lines.append(f"    value_and_grad_f = tf.value_and_grad(f, argnums={argnums!r})")
            functions.append("value_and_grad_f")
        if self.update_function:
            lines.append(f"    def updates({', '.join(self._update_parameters())}, rate):")
            lines += [f"        {line}" for line in self._update_lines("rate")]
            if self.update_result:
                lines.append(f"        return tf.reduce_sum({self.variable_names[0]})")
            lines.append("    apply_updates = tf.function(updates)")
            functions.append("apply_updates")
        lines.append(f"    def step({', '.join(self.step_parameters)}):")
        lines += [f"        {line}" for line in self._step_body()]
        lines += [f"    return step, [{', '.join(functions)}]", ""]
        return "\n".join(lines)

    @property
    def source(self):
        return self.program.source + "\n\n" + self.step_source

    def __repr__(self):
        return "\n" + self.source

    def _repr_pretty_(self, printer, cycle):
        printer.text(repr(self))

    @cached_property
    def namespace(self):
        return _exec(self.source, "train step", {"tf": tf, "np": np})

    # ---------------------------------------------------------------- running

    def initial_values(self, seed):
        """NumPy initial values of every Variable (`all_variable_names` order)."""
        arrays = self.program.inputs(seed)[:self.n_variables]
        slots = [np.zeros(self.program.input_shapes[i]) for _, i in self.slot_names]
        counter = [np.array(0.0 if self.counter == "float64" else 0)] if self.counter else []
        return arrays + slots + counter

    def make_variables(self, initial):
        """Fresh Variables holding `initial`: weights trainable, slots and counter not."""
        n = self.n_variables
        return [tf.Variable(a.copy(), trainable=k < n,
                            dtype=tf.int64 if a.dtype.kind == "i" else tf.float64)
                for k, a in enumerate(initial)]

    def feeds(self, seed, calls):
        """The data arrays and learning rates of each call (a list of (data, lr))."""
        n = self.n_variables
        return [(self.program.inputs((seed + 1 + k) % 2 ** 32)[n:],
                 LEARNING_RATE if self.lr_form == "python" else
                 LEARNING_RATE / (1.0 + 0.5 * k)) for k in range(calls)]

    def bind(self, variables):
        """(the step function, the tapec.functions inside it) of fresh `make_step`."""
        return self.namespace["make_step"](*(variables if self.passing == "closure" else []))

    def call(self, fn, variables, data, lr):
        """fn(...) with the step's arguments for this call."""
        args = {"closure": [], "arguments": list(variables),
                "list": [list(variables)]}[self.passing]
        values = [tf.constant(a) for a in data]
        if self.lr_form == "tensor":
            values.append(tf.constant(np.float64(lr)))
        elif self.lr_form == "python":
            values.append(float(lr))
        if self.keywords:
            names = self.data_names + (["lr"] if self.lr_form != "literal" else [])
            return fn(*args, **dict(zip(names, values)))
        return fn(*args, *values)

    def between_calls(self, variables):
        """What the driver does eagerly after each call (`external`)."""
        if self.external:
            variables[0].assign(0.5 * variables[0] + 0.125)

    # ---------------------------------------------------------------- reproducer

    def _call_source(self, fn, variables, data, lr):
        args = {"closure": [], "arguments": [f"*{variables}"],
                "list": [variables]}[self.passing]
        values = [literal(a) for a in data]
        if self.lr_form == "tensor":
            values.append(f"tf.constant({lr!r}, dtype=tf.float64)")
        elif self.lr_form == "python":
            values.append(repr(float(lr)))
        if self.keywords:
            names = self.data_names + (["lr"] if self.lr_form != "literal" else [])
            values = [f"{n}={v}" for n, v in zip(names, values)]
        return f"{fn}({', '.join(args + values)})"

    def reproducer(self, initial, feeds):
        """A standalone script: the program, the step (and its plain reference when it
        differs), and the calls that failed: eagerly, in tf.function and (when the step
        has tapec.functions inside) the step called as plain Python."""
        lines = ["import numpy as np", "import tapec as tf", "", "", self.source, ""]
        reference = self.plain if self.plain != self else None
        if reference is not None:
            lines += ["# the eager reference: the same step without tapec.function inside",
                      reference.step_source.replace("def make_step", "def make_plain_step"),
                      ""]
        lines += ["def variables():", "    return ["]
        for k, a in enumerate(initial):
            dtype = "tf.int64" if a.dtype.kind == "i" else "tf.float64"
            lines.append(f"        tf.Variable(np.array({a.tolist()!r}), "
                         f"trainable={k < self.n_variables}, dtype={dtype}),")
        lines += ["    ]", "", ""]
        closure = self.passing == "closure"
        runs = ["eager", "traced"] + (["mixed"] if reference is not None else [])
        for name in runs:
            make = "make_plain_step" if name == "eager" and reference else "make_step"
            lines += [f"{name}_variables = variables()",
                      f"{name}, {name}_inner = {make}("
                      f"{f'*{name}_variables' if closure else ''})"]
        lines.append("traced = tf.function(traced)")
        for data, lr in feeds:
            for name in runs:
                lines.append(f"print({name!r}, "
                             f"{self._call_source(name, f'{name}_variables', data, lr)})")
                if self.external:
                    lines.append(f"{name}_variables[0].assign(0.5 * {name}_variables[0] "
                                 "+ 0.125)")
        for name in runs:
            lines.append(f"print({name!r}, [v.numpy() for v in {name}_variables])")
        lines.append("print('traces:', traced.trace_count, "
                     "[f.trace_count for f in traced_inner + " +
                     ("mixed_inner" if reference else "[]") + "])")
        return "\n".join(lines)


@st.composite
def train_steps(draw):
    """Training steps over programs with 1-3 inputs, of which 1..all are Variables."""
    program = draw(programs(), label="program")
    n = draw(st.integers(1, program.n_inputs), label="variables")
    rules = tuple(draw(st.sampled_from(list(RULES)), label="rule") for _ in range(n))
    counter = draw(st.sampled_from([None, "float64", "int64"]), label="counter")
    schedules = [None] + (["divide"] if counter == "float64" else []) + \
        (["warmup"] if counter else [])
    gradients = draw(st.sampled_from(GRADIENTS), label="gradients")
    tape = gradients != "value_and_grad"
    passing = draw(st.sampled_from(PASSING), label="passing")
    loss_function = tape and draw(st.booleans(), label="loss function")
    update_function = draw(st.booleans(), label="update function")
    return TrainStep(
        program, n, rules, counter,
        schedule=draw(st.sampled_from(schedules), label="schedule"),
        lr_form=draw(st.sampled_from(LR_FORMS), label="lr form"),
        passing=passing,
        returns=draw(st.sampled_from(list(RETURNS)), label="returns"),
        keywords=draw(st.booleans(), label="keywords"),
        tape_write=tape and draw(st.booleans(), label="tape write"),
        loss_function=loss_function,
        loss_closure=loss_function and passing == "closure" and
        draw(st.booleans(), label="loss closure"),
        gradients=gradients,
        update_function=update_function,
        update_result=update_function and draw(st.booleans(), label="update result"),
        external=draw(st.booleans(), label="external"))


# --------------------------------------------------------------------------- compositions


@dataclass(frozen=True)
class State:
    """What a stage's function computes: the order-`order` derivative of f contracted
    with the directions numbered `directions` (1-based, in the order they were used),
    with `free` indices left open."""
    free: int = 0
    directions: tuple = ()

    @property
    def order(self):
        return self.free + len(self.directions)


def _add_free(k):
    return lambda s, n: State(s.free + k, s.directions)


def _contract(s, n):
    return State(s.free - 1, s.directions + (n,))


def _hvp(s, n):
    return State(1, s.directions + (n,))


def _same(s, n):
    return s


# name: (applies to a state, the state after it, whether it uses a new direction).
# Simplest first: hypothesis shrinks towards the first that applies.
TRANSFORMS = {
    "grad": (lambda s: s.free == 0, _add_free(1), False),
    "function": (lambda s: True, _same, False),
    "tape_gradient": (lambda s: s.free == 0, _add_free(1), False),
    "contract": (lambda s: s.free >= 1, _contract, True),
    "tape_hvp": (lambda s: s.free == 1, _hvp, True),
    "jacobian": (lambda s: True, _add_free(1), False),
    "tape_jacobian": (lambda s: True, _add_free(1), False),
    "hessian": (lambda s: s.free == 0, _add_free(2), False),
    "value_and_grad": (lambda s: s.free == 0, _add_free(1), False),
    "value_and_grad_value": (lambda s: s.free == 0, _same, False),
    "function_value_and_grad": (lambda s: s.free == 0, _add_free(1), False),
    "grad_tuple": (lambda s: s.free == 0, _add_free(1), False),
}


def _contraction(expr, u, free, rank):
    """Source contracting the last free index of `expr` (free >= 1 of them, each of
    rank `rank`) with the direction `u`: a scalar when it was the only one."""
    if rank == 0:
        return f"{expr} * {u}"
    if free == 1:
        return f"tf.reduce_sum({expr} * {u})"
    return f"tf.reduce_sum({expr} * {u}, axis={tuple(range(-rank, 0))!r})"


def _stage_lines(kind, k, p, params, state, n, rank):
    """Source lines defining `h{k}` from `h{k-1}`: parameters `params`, of which the
    first, `p`, is differentiated; `state` before the stage; `u{n}` its new direction
    if it takes one."""
    prev, name = f"h{k - 1}", f"h{k}"
    simple = {"grad": "tf.grad", "function": "tf.function", "jacobian": "tf.jacobian",
              "hessian": "tf.hessian"}
    if kind in simple:
        return [f"{name} = {simple[kind]}({prev})"]
    if kind in ("value_and_grad", "value_and_grad_value", "function_value_and_grad"):
        part = "value" if kind == "value_and_grad_value" else "gradient"
        vg = f"tf.value_and_grad({prev})"
        if kind == "function_value_and_grad":
            vg = f"tf.function({vg})"
        return [f"{name}_vg = {vg}", f"def {name}({params}):",
                f"    value, gradient = {name}_vg({params})", f"    return {part}"]
    if kind == "grad_tuple":
        # every argument differentiated (the held ones too, when they are arguments)
        argnums = tuple(range(len(params.split(", "))))
        return [f"{name}_all = tf.grad({prev}, argnums={argnums!r})",
                f"def {name}({params}):", f"    return {name}_all({params})[0]"]
    if kind == "contract":
        return [f"def {name}({params}):",
                f"    return {_contraction(f'{prev}({params})', f'u{n}', state.free, rank)}"]
    target = _contraction(f"{prev}({params})", f"u{n}", 1, rank) if kind == "tape_hvp" \
        else f"{prev}({params})"
    method = "jacobian" if kind == "tape_jacobian" else "gradient"
    return [f"def {name}({params}):", "    with tf.GradientTape() as tape:",
            f"        tape.watch({p})", f"        s = {target}",
            f"    return tape.{method}(s, {p}, unconnected_gradients=\"zero\")"]


def _describe(state, shape):
    dirs = ", ".join(f"u{n}" for n in state.directions)
    dots = ", ".join(["."] * state.free)
    args = ", ".join(a for a in (dirs, dots) if a)
    d = "f" if state.order == 0 else ("D f" if state.order == 1 else f"D^{state.order} f")
    return f"order {state.order}: {d}[{args}], shape {shape * state.free}"


# How a composition holds the inputs it does not differentiate: closed-over constants,
# closed-over Variables, or arguments of every stage. Variables and arguments get new
# values at the second call (a trace must read them, not keep them).
HOLDING = ("closure", "variables", "arguments")
BRANCH_MARGIN = 0.02        # |sum(x)| at least this for finite differences across a branch


@dataclass(frozen=True)
class Composition:
    """Stages of transformations on `f` of `program`, differentiated with respect to
    input `wrt`; the other inputs are held as `holding` says (a HOLDING entry).
    `branch`: h0 is `f` where sum(x) > 0 and `0.5 * f` elsewhere, a Python `if` on a
    traced value (a guard in every trace, propagated through nested derivatives)."""
    program: object
    wrt: int
    stages: tuple
    holding: str = "closure"
    branch: bool = False

    @property
    def parameter(self):
        return self.program.input_names[self.wrt]

    @property
    def shape(self):
        return self.program.input_shapes[self.wrt]

    @property
    def fixed_names(self):
        names = self.program.input_names[:self.program.n_inputs]
        return [n for i, n in enumerate(names) if i != self.wrt]

    @property
    def changes_fixed(self):
        """Whether the fixed inputs may change between calls."""
        return self.holding != "closure" and bool(self.fixed_names)

    @cached_property
    def states(self):
        """The state after each stage (h0's first)."""
        states, n = [State()], 0
        for kind in self.stages:
            applies, after, new = TRANSFORMS[kind]
            n += new
            states.append(after(states[-1], n))
        return states

    @property
    def result(self):
        return self.states[-1]

    @property
    def n_directions(self):
        return len(self.result.directions)

    @property
    def function_stages(self):
        """The names of the stages' `tf.function`s."""
        names = {"function": "h{}", "function_value_and_grad": "h{}_vg"}
        return [names[kind].format(k) for k, kind in enumerate(self.stages, start=1)
                if kind in names]

    def _h0_lines(self, params):
        p = self.parameter
        call = f"f({', '.join(self.program.input_names[:self.program.n_inputs])})"
        held = {"closure": "held fixed", "variables": "Variables",
                "arguments": "arguments"}[self.holding]
        note = f"  # {', '.join(self.fixed_names)}: {held}" if self.fixed_names else ""
        lines = [f"def h0({params}):{note}"]
        if self.branch:
            lines += [f"    if tf.reduce_sum({p}) > 0.0:", f"        return {call}",
                      f"    return 0.5 * {call}"]
        else:
            lines.append(f"    return {call}")
        return lines + [""]

    @cached_property
    def composition_source(self):
        p, rank = self.parameter, len(self.shape)
        params = ", ".join([p] + (self.fixed_names if self.holding == "arguments" else []))
        lines = self._h0_lines(params)
        n = 0
        for k, kind in enumerate(self.stages, start=1):
            n += TRANSFORMS[kind][2]
            lines.append(f"# h{k}: {_describe(self.states[k], self.shape)}")
            lines += _stage_lines(kind, k, p, params, self.states[k - 1], n, rank)
            lines.append("")
        lines += [f"result = h{len(self.stages)}", ""]
        return "\n".join(lines)

    @property
    def source(self):
        return self.program.source + "\n\n" + self.composition_source

    def __repr__(self):
        return "\n" + self.source

    def _repr_pretty_(self, printer, cycle):
        printer.text(repr(self))

    # ---------------------------------------------------------------- running

    def namespace(self, fixed, directions):
        """A fresh namespace (fresh Functions: nothing traced yet) holding the
        directions and, closed over, the fixed inputs (constants or Variables)."""
        env = {"tf": tf, "np": np}
        if self.holding != "arguments":
            make = tf.Variable if self.holding == "variables" else tf.constant
            env.update({n: make(a.copy()) for n, a in zip(self.fixed_names, fixed)})
        env.update({f"u{k}": tf.constant(u) for k, u in enumerate(directions, start=1)})
        return _exec(self.source, "composition", env)

    def call(self, env, x, fixed):
        """result(x) with the fixed inputs holding `fixed` (assigned to the Variables,
        or passed)."""
        if self.holding == "variables":
            for n, a in zip(self.fixed_names, fixed):
                env[n].assign(a)
        extra = [tf.constant(a) for a in fixed] if self.holding == "arguments" else []
        return env["result"](tf.constant(x), *extra)

    def scalar_function(self, fixed):
        """x -> h0(x) with the other inputs at `fixed`, for reference computations."""
        f = self.program.f

        def h(x):
            args = list(tf.constant(a) for a in fixed)
            args.insert(self.wrt, x)
            if self.branch and float(tf.reduce_sum(x)) <= 0.0:
                return 0.5 * f(*args)
            return f(*args)
        return h

    def branch_margin(self, x):
        return abs(float(np.sum(x))) if self.branch else math.inf

    def reproducer(self, points, directions):
        """A standalone script; `points` are (x, fixed inputs) pairs, called in turn."""
        lines = ["import numpy as np", "import tapec as tf", ""]
        fixed = points[0][1]
        if self.holding == "closure":
            lines += [f"{n} = {literal(a)}" for n, a in zip(self.fixed_names, fixed)]
        elif self.holding == "variables":
            lines += [f"{n} = tf.Variable({literal(a)})" for n, a in zip(self.fixed_names,
                                                                           fixed)]
        lines += [f"u{k} = {literal(u)}" for k, u in enumerate(directions, start=1)]
        lines += ["", "", self.source]
        for x, fixed in points:
            if self.holding == "variables":
                lines += [f"{n}.assign({literal(a)})" for n, a in zip(self.fixed_names, fixed)]
            extra = [literal(a) for a in fixed] if self.holding == "arguments" else []
            lines.append(f"print(result({', '.join([literal(x)] + extra)}))")
        return "\n".join(lines)


@st.composite
def compositions(draw, max_stages=5, with_function=False):
    """1..`max_stages` stages on a random program; the result has order 1..MAX_ORDER
    and at most MAX_FREE_SIZE elements. `with_function`: at least one stage is a
    `tf.function` (one is inserted where none was drawn)."""
    program = draw(programs(), label="program")
    wrt = draw(st.integers(0, program.n_inputs - 1), label="wrt")
    n = _size(program.input_shapes[wrt])
    state, stages, used = State(), [], 0
    for _ in range(draw(st.integers(1, max_stages), label="stages")):
        options = []
        for kind, (applies, after, new) in TRANSFORMS.items():
            nxt = after(state, used + new) if applies(state) else None
            if nxt is not None and nxt.order <= MAX_ORDER and n ** nxt.free <= MAX_FREE_SIZE:
                options.append(kind)
        kind = draw(st.sampled_from(options), label="transform")
        used += TRANSFORMS[kind][2]
        state = TRANSFORMS[kind][1](state, used)
        stages.append(kind)
    if state.order == 0:
        stages.append("grad")
    if with_function and not {"function", "function_value_and_grad"} & set(stages):
        stages.insert(draw(st.integers(0, len(stages)), label="function at"), "function")
    holding = draw(st.sampled_from(HOLDING), label="holding") if program.n_inputs > 1 \
        else "closure"
    branch = draw(st.booleans(), label="branch")
    return Composition(program, wrt, tuple(stages), holding, branch)
