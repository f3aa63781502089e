"""tf.keras.optimizers: each optimizer against Keras 3's update formulas written in NumPy
(float64, to rounding), against TensorFlow's Keras (float32, where installed), and inside
tapec.function (one trace, replayed, equal to eager); the schedules against their
formulas and TensorFlow; clipping, weight decay, None gradients, configuration."""
import math
import os
import warnings

import numpy as np
import pytest

import tapec as tf

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
K = tf.keras.optimizers
SHAPES = [(3,), (2, 2)]


@pytest.fixture(scope="module")
def keras_real():
    return pytest.importorskip("tensorflow").keras


def initial_weights():
    rng = np.random.default_rng(1)
    return [rng.normal(size=s) for s in SHAPES]


def gradient_sequence(steps=5):
    rng = np.random.default_rng(2)
    return [[rng.normal(size=s) for s in SHAPES] for _ in range(steps)]


def float32(x):
    return float(np.float32(x))


# --- Keras 3's formulas in NumPy: state per variable, one update per call --------------

def sgd_update(w, g, state, t, lr, momentum=0.0, nesterov=False):
    if not momentum:
        return w - lr * g
    m = state.get("m", 0.0) * momentum - lr * g
    state["m"] = m
    return w + (momentum * m - lr * g if nesterov else m)


def adam_update(w, g, state, t, lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False):
    m = state["m"] = state.get("m", 0.0) * beta_1 + g * (1 - beta_1)
    v = state["v"] = state.get("v", 0.0) * beta_2 + g * g * (1 - beta_2)
    if amsgrad:
        v = state["v_hat"] = np.maximum(state.get("v_hat", 0.0), v)
    # Keras casts the betas of the bias correction to the variable's dtype from float32.
    beta_1_power, beta_2_power = float32(beta_1) ** t, float32(beta_2) ** t
    alpha = lr * math.sqrt(1 - beta_2_power) / (1 - beta_1_power)
    return w - alpha * m / (np.sqrt(v) + epsilon)


def rmsprop_update(w, g, state, t, lr, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False):
    v = state["v"] = rho * state.get("v", 0.0) + (1 - rho) * g * g
    denominator = v + epsilon
    if centered:
        a = state["a"] = rho * state.get("a", 0.0) + (1 - rho) * g
        denominator = v - a * a + epsilon
    increment = lr * g / np.sqrt(denominator)
    if momentum > 0:
        increment = state["mom"] = momentum * state.get("mom", 0.0) + increment
    return w - increment


def adagrad_update(w, g, state, t, lr, initial_accumulator_value=0.1, epsilon=1e-7):
    acc = state["acc"] = state.get("acc", initial_accumulator_value) + g * g
    return w - lr * g / np.sqrt(acc + epsilon)


# (class name, constructor arguments, NumPy update, its arguments)
CASES = [
    ("SGD", dict(learning_rate=0.1), sgd_update, {}),
    ("SGD", dict(learning_rate=0.1, momentum=0.9), sgd_update, dict(momentum=0.9)),
    ("SGD", dict(learning_rate=0.1, momentum=0.8, nesterov=True), sgd_update,
     dict(momentum=0.8, nesterov=True)),
    ("Adam", dict(learning_rate=0.1), adam_update, {}),
    ("Adam", dict(learning_rate=0.1, beta_1=0.8, beta_2=0.9, epsilon=0.1, amsgrad=True),
     adam_update, dict(beta_1=0.8, beta_2=0.9, epsilon=0.1, amsgrad=True)),
    ("AdamW", dict(learning_rate=0.1, weight_decay=0.3), adam_update, {}),
    ("RMSprop", dict(learning_rate=0.1, epsilon=0.1), rmsprop_update, dict(epsilon=0.1)),
    ("RMSprop", dict(learning_rate=0.1, rho=0.8, momentum=0.5, centered=True),
     rmsprop_update, dict(rho=0.8, momentum=0.5, centered=True)),
    ("Adagrad", dict(learning_rate=0.1, initial_accumulator_value=0.5, epsilon=0.1),
     adagrad_update, dict(initial_accumulator_value=0.5, epsilon=0.1)),
]
IDS = [f"{name}-{'-'.join(map(str, kw.values()))}" for name, kw, _, _ in CASES]


def numpy_reference(update, arguments, lr, weight_decay, steps):
    weights, states = initial_weights(), [{} for _ in SHAPES]
    for t, grads in enumerate(gradient_sequence(steps), start=1):
        if weight_decay:
            weights = [w - w * float32(weight_decay) * lr for w in weights]
        weights = [update(w, g, s, t, lr, **arguments)
                   for w, g, s in zip(weights, grads, states)]
    return weights


def run_tapec(name, kwargs, dtype, steps, traced=False):
    variables = [tf.Variable(w.astype(dtype)) for w in initial_weights()]
    optimizer = getattr(K, name)(**kwargs)

    def step(grads):
        optimizer.apply_gradients(zip(grads, variables))

    step = tf.function(step) if traced else step
    for grads in gradient_sequence(steps):
        step([tf.constant(g.astype(dtype)) for g in grads])
    return [v.numpy() for v in variables], optimizer, step


@pytest.mark.parametrize("name,kwargs,update,arguments", CASES, ids=IDS)
def test_updates_follow_keras_formulas(name, kwargs, update, arguments):
    got, optimizer, _ = run_tapec(name, kwargs, np.float64, steps=4)
    weight_decay = kwargs.get("weight_decay", 0.004 if name == "AdamW" else None)
    lr = float32(kwargs["learning_rate"])      # Keras keeps it in a float32 Variable
    want = numpy_reference(update, arguments, lr, weight_decay, steps=4)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    assert optimizer.iterations.numpy() == 4 and optimizer.iterations.dtype == tf.int64


def run_tensorflow(keras_real, name, kwargs, steps):
    tf_real = pytest.importorskip("tensorflow")
    variables = [tf_real.Variable(w.astype(np.float32)) for w in initial_weights()]
    if "schedule" in kwargs:
        schedule_name, args, schedule_kwargs = kwargs.pop("schedule")
        kwargs["learning_rate"] = getattr(keras_real.optimizers.schedules, schedule_name)(
            *args, **schedule_kwargs)
    reference = getattr(keras_real.optimizers, name)(**kwargs)
    for grads in gradient_sequence(steps):
        reference.apply_gradients(zip([tf_real.constant(g.astype(np.float32)) for g in grads],
                                      variables))
    return [v.numpy() for v in variables], reference


@pytest.mark.parametrize("name,kwargs,update,arguments", CASES, ids=IDS)
def test_updates_match_tensorflow(keras_real, name, kwargs, update, arguments):
    got, optimizer, _ = run_tapec(name, kwargs, np.float32, steps=5)
    want, reference = run_tensorflow(keras_real, name, dict(kwargs), steps=5)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)
    assert [v.name.split("/")[-1].split(":")[0] for v in optimizer.variables][:2] == \
        [v.name for v in reference.variables][:2]
    assert len(optimizer.variables) == len(reference.variables)
    assert optimizer.get_config().keys() == reference.get_config().keys()


WITH_BASE_OPTIONS = [
    ("Adam", dict(learning_rate=0.1, weight_decay=0.2, global_clipnorm=1.0)),
    ("SGD", dict(learning_rate=0.2, momentum=0.5, clipnorm=0.7, loss_scale_factor=2.0)),
    ("RMSprop", dict(learning_rate=0.05, clipvalue=0.5, weight_decay=0.1)),
    ("AdamW", dict(schedule=("CosineDecay", (0.05, 4), dict(warmup_target=0.2,
                                                              warmup_steps=2))),),
    ("Adagrad", dict(schedule=("PiecewiseConstantDecay", ([1, 3], [0.3, 0.2, 0.1]), {}))),
    ("Adam", dict(learning_rate=0.1, use_ema=True, ema_momentum=0.8)),
    ("Adam", dict(learning_rate=0.1, gradient_accumulation_steps=2)),
    ("SGD", dict(learning_rate=0.1, momentum=0.5, gradient_accumulation_steps=3,
                 clipnorm=0.5, weight_decay=0.1)),
    ("SGD", dict(learning_rate=0.1, momentum=0.5, use_ema=True, ema_momentum=0.5,
                 ema_overwrite_frequency=2)),
]


@pytest.mark.parametrize("name,kwargs", WITH_BASE_OPTIONS,
                         ids=[n + "-" + "-".join(kw) for n, kw in WITH_BASE_OPTIONS])
def test_clipping_decay_and_schedules_match_tensorflow(keras_real, name, kwargs):
    """The base's steps (unscale, clip, decay, schedule at `iterations`) in Keras's order."""
    ours = dict(kwargs)
    if "schedule" in ours:
        schedule_name, args, schedule_kwargs = ours.pop("schedule")
        ours["learning_rate"] = getattr(K.schedules, schedule_name)(*args, **schedule_kwargs)
    got, optimizer, _ = run_tapec(name, ours, np.float32, steps=5)
    want, reference = run_tensorflow(keras_real, name, dict(kwargs), steps=5)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)
    assert len(optimizer.variables) == len(reference.variables)
    for ours_state, their_state in zip(optimizer.variables, reference.variables):
        np.testing.assert_allclose(ours_state.numpy(), their_state.numpy(), rtol=2e-5,
                                   atol=2e-6)


TRACED = [(name, kwargs) for name, kwargs, _, _ in CASES[2::2]] + WITH_BASE_OPTIONS[:2] \
    + WITH_BASE_OPTIONS[-2:]


@pytest.mark.parametrize("name,kwargs", TRACED,
                         ids=[n + "-" + "-".join(map(str, kw.values())) for n, kw in TRACED])
def test_a_traced_step_matches_eager(name, kwargs):
    eager, _, _ = run_tapec(name, kwargs, np.float32, steps=6)
    traced, optimizer, step = run_tapec(name, kwargs, np.float32, steps=6, traced=True)
    for a, b in zip(traced, eager):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert step.experimental_get_tracing_count() == 1
    assert optimizer.iterations.numpy() == 6 // kwargs.get("gradient_accumulation_steps", 1)


# --- schedules ------------------------------------------------------------------

def exponential(step, lr, decay_steps, rate, staircase=False):
    p = step / decay_steps
    return lr * rate ** (math.floor(p) if staircase else p)


def inverse_time(step, lr, decay_steps, rate, staircase=False):
    p = step / decay_steps
    return lr / (1 + rate * (math.floor(p) if staircase else p))


def cosine(step, lr, decay_steps, alpha=0.0, warmup_target=None, warmup_steps=0):
    if warmup_target is not None:
        if step < warmup_steps:
            return lr + (warmup_target - lr) * step / warmup_steps
        step, lr = step - warmup_steps, warmup_target
    fraction = min(step, decay_steps) / decay_steps
    return lr * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * fraction)) + alpha)


def polynomial(step, lr, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False):
    if cycle:
        decay_steps *= max(1, math.ceil(step / decay_steps))
    else:
        step = min(step, decay_steps)
    return (lr - end_learning_rate) * (1 - step / decay_steps) ** power + end_learning_rate


def restarts(step, lr, first_decay_steps, t_mul=2.0, m_mul=1.0, alpha=0.0):
    start, period, i = 0, first_decay_steps, 0
    while step >= start + period:               # walk the periods one by one
        start, period, i = start + period, period * t_mul, i + 1
    cosine = 0.5 * m_mul ** i * (1 + math.cos(math.pi * (step - start) / period))
    return lr * ((1 - alpha) * cosine + alpha)


def piecewise(step, boundaries, values):
    return next((v for b, v in zip(boundaries, values) if step <= b), values[-1])


SCHEDULES = [
    ("ExponentialDecay", (0.1, 3, 0.5), {}, exponential),
    ("ExponentialDecay", (0.1, 3, 0.5), dict(staircase=True), exponential),
    ("InverseTimeDecay", (0.2, 4, 0.5), {}, inverse_time),
    ("InverseTimeDecay", (0.2, 4, 0.5), dict(staircase=True), inverse_time),
    ("CosineDecay", (0.1, 10), dict(alpha=0.1), cosine),
    ("CosineDecay", (0.1, 10), dict(alpha=0.2, warmup_target=0.5, warmup_steps=4), cosine),
    ("CosineDecay", (0.1, 10), dict(warmup_steps=4), cosine),     # no target: no warmup
    ("PiecewiseConstantDecay", ([3, 7], [1.0, 0.5, 0.1]), {}, piecewise),
    ("CosineDecayRestarts", (0.1, 3), dict(alpha=0.1), restarts),
    ("CosineDecayRestarts", (0.1, 4), dict(t_mul=1.0, m_mul=0.5), restarts),
    ("PolynomialDecay", (0.1, 6), {}, polynomial),
    ("PolynomialDecay", (0.1, 4), dict(end_learning_rate=0.01, power=2.0, cycle=True),
     polynomial),
]
SCHEDULE_IDS = [f"{n}-{'-'.join(map(str, kw))}" for n, _, kw, _ in SCHEDULES]
STEPS = [0, 1, 3, 4, 7, 8, 12, 30]


@pytest.mark.parametrize("name,args,kwargs,formula", SCHEDULES, ids=SCHEDULE_IDS)
def test_schedules_follow_their_formulas(name, args, kwargs, formula):
    schedule = getattr(K.schedules, name)(*args, **kwargs)
    for step in STEPS:
        got = schedule(step)
        assert got.dtype == tf.float32
        np.testing.assert_allclose(got.numpy(), formula(step, *args, **kwargs), rtol=1e-6)
    again = type(schedule).from_config(schedule.get_config())
    assert float(again(5).numpy()) == float(schedule(5).numpy())


@pytest.mark.parametrize("name,args,kwargs,formula", SCHEDULES, ids=SCHEDULE_IDS)
def test_schedules_match_tensorflow(keras_real, name, args, kwargs, formula):
    ours = getattr(K.schedules, name)(*args, **kwargs)
    theirs = getattr(keras_real.optimizers.schedules, name)(*args, **kwargs)
    for step in STEPS:
        np.testing.assert_allclose(ours(step).numpy(), theirs(step).numpy(), rtol=1e-6)
    assert ours.get_config() == theirs.get_config()
    assert K.schedules.serialize(ours) == keras_real.optimizers.schedules.serialize(theirs)


def test_schedule_arguments_are_checked():
    with pytest.raises(ValueError, match="decay_steps"):
        K.schedules.ExponentialDecay(0.1, 0, 0.5)
    with pytest.raises(ValueError, match="1 less than"):
        K.schedules.PiecewiseConstantDecay([10, 20], [1.0, 0.5])
    with pytest.raises(NotImplementedError, match="__call__"):
        K.schedules.LearningRateSchedule()(1)


@pytest.mark.parametrize("schedule", [
    K.schedules.ExponentialDecay(0.5, 2, 0.5, staircase=True),
    K.schedules.PiecewiseConstantDecay([3, 6], [0.3, 0.2, 0.1]),
    K.schedules.CosineDecay(0.1, 8, warmup_target=0.4, warmup_steps=3)],
    ids=["exponential", "piecewise", "cosine-warmup"])
def test_a_traced_step_follows_the_schedule_at_every_call(schedule):
    """The rate comes from the iteration Variable at each replay, not from the trace:
    with a constant gradient c, step t moves the weights by schedule(t) * c."""
    c = np.array([1.0, -2.0], np.float32)
    w = tf.Variable(np.zeros(2, np.float32))
    optimizer = K.SGD(schedule)

    @tf.function
    def train_step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * c)
        optimizer.apply_gradients([(tape.gradient(loss, w), w)])

    history = []
    for _ in range(12):
        train_step()
        history.append(w.numpy())
    rates = [float(schedule(t).numpy()) for t in range(12)]
    want = -np.cumsum(rates)[:, None] * c
    np.testing.assert_allclose(np.array(history), want, rtol=1e-5, atol=1e-7)
    assert train_step.experimental_get_tracing_count() == 1
    assert optimizer.iterations.numpy() == 12


def test_setting_the_learning_rate_reaches_a_traced_step():
    w = tf.Variable(np.zeros(2, np.float32))
    optimizer = K.SGD(0.5)
    step = tf.function(lambda g: optimizer.apply_gradients([(g, w)]))
    step(tf.ones(2))
    optimizer.learning_rate = 0.25
    step(tf.ones(2))
    np.testing.assert_allclose(w.numpy(), [-0.75, -0.75])
    assert step.experimental_get_tracing_count() == 1
    assert isinstance(optimizer.learning_rate, tf.Variable)
    scheduled = K.SGD(K.schedules.ExponentialDecay(0.1, 10, 0.5))
    with pytest.raises(TypeError, match="not settable"):
        scheduled.learning_rate = 0.3


# --- clipping, weight decay, None gradients ---------------------------------------------

GRADS = [np.array([3.0, 4.0], np.float32), np.array([12.0], np.float32)]


def one_sgd_step(**kwargs):
    variables = [tf.Variable(np.zeros(2, np.float32), name="kernel"),
                 tf.Variable(np.zeros(1, np.float32), name="bias")]
    optimizer = K.SGD(1.0, **kwargs)
    optimizer.apply_gradients(zip([tf.constant(g) for g in GRADS], variables))
    return [-v.numpy() for v in variables]      # the applied gradients


@pytest.mark.parametrize("kwargs,want", [
    (dict(clipnorm=1.0), [[0.6, 0.8], [1.0]]),                 # each tensor to norm 1
    (dict(global_clipnorm=6.5), [[1.5, 2.0], [6.0]]),          # all norms 13 -> 6.5
    (dict(clipvalue=3.5), [[3.0, 3.5], [3.5]]),
    (dict(clipnorm=100.0), [[3.0, 4.0], [12.0]]),              # under the bound: unchanged
    (dict(loss_scale_factor=4.0), [[0.75, 1.0], [3.0]]),
])
def test_gradient_clipping_and_unscaling(kwargs, want):
    for got, w in zip(one_sgd_step(**kwargs), want):
        np.testing.assert_allclose(got, w, rtol=1e-6)


def test_clipping_arguments_are_checked():
    with pytest.raises(ValueError, match="Only one of"):
        K.SGD(clipnorm=1.0, global_clipnorm=1.0)
    with pytest.raises(ValueError, match="clipnorm"):
        K.Adam(clipnorm=-1.0)


def test_weight_decay_is_applied_before_the_update_and_can_exclude_names():
    kernel = tf.Variable(np.array([1.0, 2.0], np.float32), name="kernel")
    bias = tf.Variable(np.array([3.0], np.float32), name="bias")
    optimizer = K.SGD(0.1, weight_decay=0.5)
    optimizer.exclude_from_weight_decay(var_names=["bias"])
    optimizer.apply_gradients([(tf.constant([1.0, 1.0]), kernel), (tf.constant([1.0]), bias)])
    np.testing.assert_allclose(kernel.numpy(), np.array([1.0, 2.0]) * (1 - 0.05) - 0.1,
                               rtol=1e-6)
    np.testing.assert_allclose(bias.numpy(), [2.9], rtol=1e-6)
    with pytest.raises(ValueError, match="before the optimizer is built"):
        optimizer.exclude_from_weight_decay(var_names=["kernel"])
    with pytest.raises(ValueError, match="weight_decay"):
        K.AdamW(weight_decay=None)
    assert K.AdamW().weight_decay == 0.004


def test_none_gradients_are_skipped_with_a_warning():
    a, b = tf.Variable([1.0], name="a"), tf.Variable([2.0], name="b")
    optimizer = K.SGD(0.5, momentum=0.5)
    with pytest.warns(UserWarning, match=r"Gradients do not exist for variables \['a:0'\]"):
        optimizer.apply_gradients([(None, a), (tf.constant([1.0]), b)])
    assert a.numpy() == 1.0 and b.numpy() == 1.5 and optimizer.iterations.numpy() == 1
    with pytest.raises(ValueError, match="No gradients provided"):
        optimizer.apply_gradients([(None, a), (None, b)])


def test_bad_variables_and_gradients_raise():
    w = tf.Variable([1.0, 2.0])
    optimizer = K.Adam()
    optimizer.build([w])
    with pytest.raises(ValueError, match="Unknown variable"):
        optimizer.apply_gradients([(tf.constant([1.0]), tf.Variable([1.0]))])
    with pytest.raises(ValueError, match=r"shape \(3,\), the variable \(2,\)"):
        optimizer.apply_gradients([(tf.constant([1.0, 2.0, 3.0]), w)])
    with pytest.raises(TypeError, match="int32"):
        K.SGD().apply_gradients([(tf.constant([1]), tf.Variable([1]))])
    with pytest.raises(ValueError, match="built"):
        K.SGD().apply([tf.constant([1.0])])
    with pytest.raises(ValueError, match="not recognized"):
        K.Adam(lr=0.1)
    with pytest.raises(ValueError, match="momentum"):
        K.SGD(momentum=1.5)
    with pytest.raises(ValueError, match="gradient_accumulation_steps"):
        K.Adam(gradient_accumulation_steps=1)
    with pytest.raises(ValueError, match="ema_momentum"):
        K.Adam(use_ema=True, ema_momentum=1.5)
    with pytest.raises(ValueError, match="learning_rate"):
        K.Adam(learning_rate="fast")


def test_apply_with_built_variables_and_float64_gradients_cast():
    w = tf.Variable(np.array([1.0], np.float32))
    optimizer = K.SGD(0.5)
    optimizer.build([w])
    optimizer.apply([tf.constant(np.array([1.0]))])      # float64 gradient, float32 variable
    assert w.dtype == tf.float32 and w.numpy() == 0.5
    assert optimizer.apply([], []) is None and optimizer.iterations.numpy() == 1


def test_constraints_apply_after_the_update():
    w = tf.Variable([1.0, -1.0], constraint=lambda v: tf.clip_by_value(v, 0.0, 10.0))
    K.SGD(1.0).apply_gradients([(tf.constant([2.0, 2.0]), w)])
    np.testing.assert_allclose(w.numpy(), [0.0, 0.0])


def test_minimize_with_a_callable_or_a_tape():
    w = tf.Variable([1.0, 2.0])
    optimizer = K.SGD(0.25)
    assert optimizer.minimize(lambda: tf.reduce_sum(w * w), [w]) is optimizer.iterations
    np.testing.assert_allclose(w.numpy(), [0.5, 1.0])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * w)
    optimizer.minimize(loss, [w], tape=tape)
    np.testing.assert_allclose(w.numpy(), [0.25, 0.5])
    with pytest.raises(ValueError, match="tape"):
        optimizer.minimize(loss, [w])


# --- variables and configuration ----------------------------------------------------

def test_variables_are_iterations_learning_rate_then_slots():
    w = tf.Variable([1.0, 2.0], name="kernel")
    optimizer = K.RMSprop(momentum=0.5, centered=True, name="rms")
    optimizer.build([w])
    names = [v.name for v in optimizer.variables]
    assert names == ["rms/iteration:0", "rms/learning_rate:0", "rms/kernel_velocity:0",
                     "rms/kernel_momentum:0", "rms/kernel_average_gradient:0"]
    assert not any(v.trainable for v in optimizer.variables)
    adagrad = K.Adagrad(initial_accumulator_value=0.3)
    adagrad.build([w])
    np.testing.assert_allclose(adagrad.variables[-1].numpy(), [0.3, 0.3], rtol=1e-6)


def test_get_serialize_and_config_round_trip():
    assert isinstance(K.get("adam"), K.Adam) and isinstance(K.get("RMSProp"), K.RMSprop)
    assert isinstance(K.get("AdamW"), K.AdamW) and K.get(None) is None
    sgd = K.SGD(0.2, momentum=0.5)
    assert K.get(sgd) is sgd
    with pytest.raises(ValueError, match="Could not interpret optimizer identifier"):
        K.get("nope")
    scheduled = K.Adam(K.schedules.ExponentialDecay(0.1, 10, 0.5), amsgrad=True)
    again = K.get(K.serialize(scheduled))
    assert isinstance(again, K.Adam) and again.amsgrad
    assert isinstance(again._learning_rate, K.schedules.ExponentialDecay)
    config = K.SGD.from_config(sgd.get_config()).get_config()
    assert config["learning_rate"] == pytest.approx(0.2) and config["momentum"] == 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert K.SGD.from_config(K.SGD(name="x").get_config()).name == "x"


def test_configs_match_tensorflow(keras_real):
    for name in ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"]:
        ours = getattr(K, name)(name="opt").get_config()
        theirs = getattr(keras_real.optimizers, name)(name="opt").get_config()
        assert ours == theirs


def test_saved_state_restores_the_trajectory():
    """An optimizer restored from `save_own_variables` continues exactly as the original."""
    def fresh():
        return tf.Variable(np.array([1.0, -1.0], np.float32), name="w"), K.Adam(0.1)

    grads = [tf.constant([0.5, -0.2]), tf.constant([0.1, 0.4]), tf.constant([-0.3, 0.2])]
    w, optimizer = fresh()
    optimizer.apply_gradients([(grads[0], w)])
    store = {}
    optimizer.save_own_variables(store)
    saved_w = w.numpy()
    optimizer.apply_gradients([(grads[1], w)])
    w2, restored = fresh()
    with pytest.warns(UserWarning, match="Skipping variable loading"):
        restored.load_own_variables(store)            # not built: skipped, as Keras
    restored.build([w2])
    restored.load_own_variables(store)
    w2.assign(saved_w)
    restored.apply_gradients([(grads[1], w2)])
    np.testing.assert_array_equal(w2.numpy(), w.numpy())
    assert restored.iterations.numpy() == 2


def test_custom_optimizer_with_keras_assign_methods_and_excluded_variables():
    class SignDescent(K.Optimizer):
        def update_step(self, gradient, variable, learning_rate):
            self.assign_sub(variable, tf.cast(learning_rate, variable.dtype)
                            * tf.math.sign(gradient))

    a, b = tf.Variable([1.0, 2.0]), tf.Variable([3.0])
    optimizer = SignDescent(learning_rate=tf.constant(0.5), weight_decay=0.1)
    optimizer.exclude_from_weight_decay(var_list=[b])
    optimizer.apply_gradients([(tf.constant([3.0, -2.0]), a), (tf.constant([1.0]), b)])
    np.testing.assert_allclose(a.numpy(), np.array([1.0, 2.0]) * 0.95 - [0.5, -0.5],
                               rtol=1e-6)
    np.testing.assert_allclose(b.numpy(), [2.5])
    with pytest.raises(NotImplementedError, match="update_step"):
        K.Optimizer(0.1).apply_gradients([(tf.constant([1.0]), tf.Variable([1.0]))])


def test_minimize_in_a_traced_step_with_a_callable_learning_rate():
    """A callable rate that reads a Variable follows it at every replay."""
    w, scale = tf.Variable([1.0, 2.0]), tf.Variable(0.1)
    optimizer = K.SGD(lambda: scale * 2.0)

    @tf.function
    def step():
        optimizer.minimize(lambda: tf.reduce_sum(w * w), [w])

    step()
    scale.assign(0.05)
    step()
    np.testing.assert_allclose(w.numpy(), np.array([1.0, 2.0]) * (1 - 0.4) * (1 - 0.2),
                               rtol=1e-6)
    assert step.experimental_get_tracing_count() == 1


def test_finalize_copies_the_moving_averages_into_the_weights():
    w = tf.Variable([1.0, 2.0])
    optimizer = K.SGD(0.5, use_ema=True, ema_momentum=0.5)
    for _ in range(3):
        optimizer.apply_gradients([(tf.constant([1.0, -1.0]), w)])
    # weights 0.5, 0, -0.5 (first coordinate); the average starts at the first of them
    np.testing.assert_allclose(w.numpy(), [-0.5, 3.5])
    optimizer.finalize_variable_values([w])
    np.testing.assert_allclose(w.numpy(), [0.5 * (0.5 * 0.5 + 0.5 * 0.0) + 0.5 * -0.5,
                                           0.5 * (0.5 * 2.5 + 0.5 * 3.0) + 0.5 * 3.5])
    with pytest.raises(ValueError, match="does not match"):
        optimizer.finalize_variable_values([w, w])
    K.SGD(0.5).finalize_variable_values([w])        # no EMA: nothing to do
