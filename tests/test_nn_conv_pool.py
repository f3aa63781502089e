"""tf.nn convolution and pooling: values against a loop-by-loop NumPy reference of the
definitions (and TensorFlow where installed), gradients against central differences in
float64, and the derivative forms (jacobian, batch_jacobian, Hessian, tf.function)."""
import itertools

import numpy as np
import pytest

import tapec as tf
from tests.helpers import fd

RNG = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def fresh_random_data():
    """Each test draws the same data however the tests are distributed or ordered."""
    global RNG
    RNG = np.random.default_rng(7)


# --- the definitions, written as loops ----------------------------------------------------

def _same_pads(size, window, stride, dilation):
    span = (window - 1) * dilation + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + span - size, 0)
    return total // 2, total - total // 2


def _pads(x, window, strides, dilations, padding):
    if padding == "VALID":
        return [(0, 0)] * len(window)
    if padding == "SAME":
        return [_same_pads(n, k, s, d) for n, k, s, d in
                zip(x.shape[1:-1], window, strides, dilations)]
    return [tuple(p) for p in padding[1:-1]]


def reference_windows(x, window, strides, dilations, padding, fill):
    """{output position: the window's entries, shape (K, C), row-major; padding is
    `fill` (NaN marks 'not an input')}."""
    pads = _pads(x, window, strides, dilations, padding)
    xp = np.pad(x, [(0, 0)] + pads + [(0, 0)], constant_values=fill)
    spans = [(k - 1) * d + 1 for k, d in zip(window, dilations)]
    outs = [(n - span) // s + 1 for n, span, s in zip(xp.shape[1:-1], spans, strides)]
    result = {}
    for position in itertools.product(*(range(o) for o in outs)):
        rows = []
        for offset in itertools.product(*(range(k) for k in window)):
            at = tuple(p * s + k * d for p, s, k, d in zip(position, strides, offset, dilations))
            rows.append(xp[(slice(None),) + at])           # (N, C)
        result[position] = np.stack(rows, axis=1)           # (N, K, C)
    return result, outs


def reference_conv(x, w, strides, dilations, padding):
    windows, outs = reference_windows(x, w.shape[:-2], strides, dilations, padding, 0.0)
    y = np.zeros((x.shape[0], *outs, w.shape[-1]))
    flat_w = w.reshape(-1, w.shape[-2], w.shape[-1])        # (K, C, F)
    for position, win in windows.items():
        y[(slice(None),) + position] = np.einsum("nkc,kcf->nf", win, flat_w)
    return y


def reference_pool(x, window, strides, padding, kind):
    windows, outs = reference_windows(x, window, strides, (1,) * len(window), padding, np.nan)
    y = np.zeros((x.shape[0], *outs, x.shape[-1]))
    for position, win in windows.items():
        y[(slice(None),) + position] = (np.nanmax if kind == "max" else np.nanmean)(win, axis=1)
    return y


CONV_CASES = [   # (input shape, filter shape, strides, dilations, padding)
    ((2, 9, 3), (3, 3, 4), (1,), (1,), "VALID"),
    ((2, 9, 3), (4, 3, 2), (2,), (1,), "SAME"),
    ((1, 10, 2), (3, 2, 2), (1,), (3,), "SAME"),
    ((2, 7, 8, 3), (3, 2, 3, 4), (1, 1), (1, 1), "VALID"),
    ((2, 7, 8, 3), (3, 3, 3, 2), (2, 3), (1, 1), "SAME"),
    ((1, 8, 9, 2), (2, 3, 2, 3), (1, 1), (2, 1), "SAME"),
    ((1, 6, 5, 2), (3, 3, 2, 2), (2, 1), (1, 1), [[0, 0], [1, 2], [0, 1], [0, 0]]),
    ((1, 4, 5, 6, 2), (2, 3, 2, 2, 3), (1, 2, 1), (1, 1, 1), "SAME"),
]
CONV = {3: tf.nn.conv1d, 4: tf.nn.conv2d, 5: tf.nn.conv3d}


@pytest.mark.parametrize("xs, ws, strides, dilations, padding", CONV_CASES)
def test_conv_values_match_the_definition(xs, ws, strides, dilations, padding):
    x, w = RNG.normal(size=xs), RNG.normal(size=ws)
    y = CONV[len(xs)](x, w, strides, padding, dilations=dilations)
    np.testing.assert_allclose(y.numpy(), reference_conv(x, w, strides, dilations, padding),
                               rtol=1e-12, atol=1e-12)
    general = tf.nn.convolution(x, w, strides, padding, dilations=dilations)
    np.testing.assert_allclose(general.numpy(), y.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("xs, ws, strides, dilations, padding", CONV_CASES)
def test_conv_matches_tensorflow(xs, ws, strides, dilations, padding):
    tf_real = pytest.importorskip("tensorflow")
    x, w = RNG.normal(size=xs).astype(np.float32), RNG.normal(size=ws).astype(np.float32)
    # TensorFlow's convolution takes no explicit padding; its conv2d does.
    op = "conv2d" if isinstance(padding, list) else "convolution"
    expected = getattr(tf_real.nn, op)(x, w, strides, padding, dilations=dilations)
    y = getattr(tf.nn, op)(x, w, strides, padding, dilations=dilations)
    assert y.dtype == tf.float32
    np.testing.assert_allclose(y.numpy(), expected.numpy(), rtol=1e-4, atol=1e-4)


POOL_CASES = [   # (input shape, window, strides, padding)
    ((2, 9, 3), (3,), (2,), "VALID"),
    ((2, 9, 3), (2,), (2,), "SAME"),
    ((2, 7, 8, 3), (2, 2), (2, 2), "VALID"),
    ((2, 7, 8, 3), (3, 2), (2, 1), "SAME"),
    ((1, 5, 5, 2), (3, 3), (1, 1), "SAME"),
    ((1, 4, 5, 6, 2), (2, 2, 3), (2, 1, 2), "SAME"),
]
MAX_POOL = {3: tf.nn.max_pool1d, 4: tf.nn.max_pool2d, 5: tf.nn.max_pool3d}
AVG_POOL = {3: tf.nn.avg_pool1d, 4: tf.nn.avg_pool2d, 5: tf.nn.avg_pool3d}


@pytest.mark.parametrize("xs, window, strides, padding", POOL_CASES)
def test_pool_values_match_the_definition(xs, window, strides, padding):
    x = RNG.normal(size=xs)
    for kind, ops, general in [("max", MAX_POOL, tf.nn.max_pool), ("avg", AVG_POOL,
                                                                   tf.nn.avg_pool)]:
        expected = reference_pool(x, window, strides, padding, kind)
        np.testing.assert_allclose(ops[len(xs)](x, window, strides, padding).numpy(),
                                   expected, rtol=1e-12, atol=1e-12, err_msg=kind)
        np.testing.assert_allclose(general(x, window, strides, padding).numpy(), expected,
                                   rtol=1e-12, atol=1e-12, err_msg=kind)


@pytest.mark.parametrize("xs, window, strides, padding", POOL_CASES)
def test_pool_matches_tensorflow(xs, window, strides, padding):
    tf_real = pytest.importorskip("tensorflow")
    x = RNG.normal(size=xs).astype(np.float32)
    for name in ("max_pool", "avg_pool"):
        expected = getattr(tf_real.nn, name)(x, window, strides, padding).numpy()
        np.testing.assert_allclose(getattr(tf.nn, name)(x, window, strides, padding).numpy(),
                                   expected, rtol=1e-6, atol=1e-6, err_msg=name)


def test_channels_first_is_a_transpose_of_channels_last():
    x, w = RNG.normal(size=(2, 6, 7, 3)), RNG.normal(size=(3, 3, 3, 2))
    nchw = np.transpose(x, (0, 3, 1, 2))
    for y_last, y_first in [
            (tf.nn.conv2d(x, w, [1, 2, 2, 1], "SAME"),
             tf.nn.conv2d(nchw, w, [1, 1, 2, 2], "SAME", data_format="NCHW")),
            (tf.nn.max_pool2d(x, 2, 2, "VALID"),
             tf.nn.max_pool2d(nchw, 2, 2, "VALID", data_format="NCHW")),
            (tf.nn.avg_pool2d(x, 3, 2, "SAME"),
             tf.nn.avg_pool2d(nchw, 3, 2, "SAME", data_format="NCHW"))]:
        np.testing.assert_allclose(np.transpose(y_first.numpy(), (0, 2, 3, 1)),
                                   y_last.numpy(), rtol=1e-12, atol=1e-12)


# --- derivatives ------------------------------------------------------------------------------

@pytest.mark.parametrize("xs, ws, strides, dilations, padding",
                         [CONV_CASES[1], CONV_CASES[4], CONV_CASES[5], CONV_CASES[6]])
def test_conv_gradients_match_finite_differences(xs, ws, strides, dilations, padding):
    x, w = RNG.normal(size=xs), RNG.normal(size=ws)
    conv = CONV[len(xs)]

    def f(a, b):
        return conv(a, b, strides, padding, dilations=dilations)

    weight = RNG.normal(size=f(x, w).shape)
    xt, wt = tf.constant(x), tf.constant(w)
    with tf.GradientTape() as tape:
        tape.watch([xt, wt])
        y = tf.reduce_sum(f(xt, wt) * weight)
    gx, gw = tape.gradient(y, [xt, wt])
    np.testing.assert_allclose(gx.numpy(), fd.numeric_gradient(f, [x, w], 0, weight),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gw.numpy(), fd.numeric_gradient(f, [x, w], 1, weight),
                               rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("xs, window, strides, padding", POOL_CASES[1:4])
def test_pool_gradients_match_finite_differences(xs, window, strides, padding):
    x = RNG.normal(size=xs)
    for pool in (tf.nn.max_pool, tf.nn.avg_pool):
        def f(a):
            return pool(a, window, strides, padding)
        weight = RNG.normal(size=f(x).shape)
        xt = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            y = tf.reduce_sum(f(xt) * weight)
        np.testing.assert_allclose(tape.gradient(y, xt).numpy(),
                                   fd.numeric_gradient(f, [x], 0, weight),
                                   rtol=1e-6, atol=1e-7, err_msg=pool.__name__)


def test_max_pool_gives_a_tied_window_gradient_to_its_first_maximum():
    # Windows [[1, 3], [0, 3]] and [[3, 2], [1, 3]]: maxima tie; the first in row-major
    # order gets the whole gradient, as TensorFlow's MaxPoolGrad.
    x = tf.constant(np.array([[1.0, 3.0, 3.0, 2.0], [0.0, 3.0, 1.0, 3.0]]).reshape(1, 2, 4, 1))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.max_pool2d(x, 2, 2, "VALID")
    assert y.numpy().ravel().tolist() == [3.0, 3.0]
    assert tape.gradient(y, x).numpy().reshape(2, 4).tolist() == [[0, 1, 1, 0], [0, 0, 0, 0]]


def test_max_pool_tie_gradient_matches_tensorflow():
    tf_real = pytest.importorskip("tensorflow")
    x = np.round(RNG.normal(size=(2, 6, 6, 2)))            # many ties
    with tf_real.GradientTape() as tape:
        xr = tf_real.constant(x)
        tape.watch(xr)
        yr = tf_real.nn.max_pool2d(xr, 3, 1, "SAME")
    xt = tf.constant(x)
    with tf.GradientTape() as tape2:
        tape2.watch(xt)
        y = tf.nn.max_pool2d(xt, 3, 1, "SAME")
    weight = RNG.normal(size=y.shape)
    np.testing.assert_allclose(tape2.gradient(y, xt, output_gradients=weight).numpy(),
                               tape.gradient(yr, xr, output_gradients=weight).numpy())


def test_jacobian_and_batch_jacobian_of_a_conv_match_finite_differences():
    x, w = RNG.normal(size=(3, 6, 2)), RNG.normal(size=(3, 2, 2))

    def f(a, b):
        return tf.nn.max_pool1d(tf.nn.conv1d(a, b, 1, "SAME"), 2, 2, "VALID")

    xt, wt = tf.constant(x), tf.constant(w)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([xt, wt])
        y = f(xt, wt)
    jw = tape.jacobian(y, wt)
    np.testing.assert_allclose(jw.numpy(), fd.jacobian(fd.eager(f), [x, w], 1),
                               rtol=1e-6, atol=1e-7)
    bj = tape.batch_jacobian(y, xt)
    full = fd.jacobian(fd.eager(f), [x, w], 0)             # (3, 3, 2, 3, 6, 2)
    np.testing.assert_allclose(bj.numpy(), np.stack([full[i, :, :, i] for i in range(3)]),
                               rtol=1e-6, atol=1e-7)


def test_hessian_through_conv_and_pooling_matches_finite_differences():
    x, w = RNG.normal(size=(2, 5, 5, 1)), RNG.normal(size=(2, 2, 1, 2))

    def loss(b):
        h = tf.nn.conv2d(tf.constant(x), b, 1, "SAME")
        return tf.reduce_sum(tf.nn.avg_pool2d(tf.tanh(h), 2, 1, "SAME") ** 2)

    wt = tf.constant(w)
    with tf.GradientTape() as outer:
        outer.watch(wt)
        with tf.GradientTape() as inner:
            inner.watch(wt)
            value = loss(wt)
        g = inner.gradient(value, wt)
    hessian = outer.jacobian(g, wt)

    def gradient(b):
        bt = tf.constant(b)
        with tf.GradientTape() as tape:
            tape.watch(bt)
            value = loss(bt)
        return tape.gradient(value, bt).numpy()

    np.testing.assert_allclose(hessian.numpy(), fd.jacobian(gradient, [w], 0),
                               rtol=1e-6, atol=1e-6)


# --- the primitives: conv and its two derivatives, each differentiated -----------------------

COVERED_OPS = {"conv", "conv_backprop_input", "conv_backprop_filter"}

PRIMITIVE_CASES = [   # (input shape, kernel shape, strides, dilations, pads, groups)
    ((2, 7, 3), (3, 3, 2), (2,), (1,), ((1, 1),), 1),
    ((1, 6, 5, 4), (2, 3, 2, 4), (1, 2), (2, 1), ((0, 1), (1, 1)), 2),
    ((2, 5, 5, 3), (3, 3, 1, 6), (2, 2), (1, 1), ((1, 1), (1, 1)), 3),       # depthwise
    ((1, 3, 4, 3, 2), (2, 2, 1, 2, 2), (1, 2, 1), (1, 1, 1), ((0, 0), (1, 0), (0, 1)), 1),
]


def _primitive_arrays(xs, ws, strides, dilations, pads, groups):
    from tapec.ops.conv import output_size
    outs = tuple(output_size(n, k, s, d, p) for n, k, s, d, p in
                 zip(xs[1:-1], ws[:-2], strides, dilations, pads))
    attrs = {"strides": strides, "dilations": dilations, "pads": pads, "groups": groups}
    return RNG.normal(size=xs), RNG.normal(size=ws), RNG.normal(size=(xs[0], *outs, ws[-1])), \
        attrs


def reference_grouped_conv(x, w, strides, dilations, pads, groups):
    """Each group's channels convolved with its filters by the loop reference."""
    explicit = [[0, 0], *map(list, pads), [0, 0]]
    cin, fout = x.shape[-1] // groups, w.shape[-1] // groups
    return np.concatenate([
        reference_conv(x[..., g * cin:(g + 1) * cin], w[..., g * fout:(g + 1) * fout],
                       strides, dilations, explicit) for g in range(groups)], axis=-1)


@pytest.mark.parametrize("xs, ws, strides, dilations, pads, groups", PRIMITIVE_CASES)
def test_conv_primitives_are_the_definition_and_its_adjoints(xs, ws, strides, dilations,
                                                              pads, groups):
    from tapec.ops.conv import CONV, CONV_BACKPROP_FILTER, CONV_BACKPROP_INPUT
    from tapec.ops.registry import apply
    x, w, g, attrs = _primitive_arrays(xs, ws, strides, dilations, pads, groups)
    y = apply(CONV, x, w, **attrs).numpy()
    np.testing.assert_allclose(y, reference_grouped_conv(x, w, strides, dilations, pads,
                                                         groups), rtol=1e-12, atol=1e-12)
    # <conv(x, w), g> = <x, backprop_input(g, w)> = <w, backprop_filter(x, g)>.
    dx = apply(CONV_BACKPROP_INPUT, g, w, input_size=xs[1:-1], **attrs).numpy()
    dw = apply(CONV_BACKPROP_FILTER, x, g, window=ws[:-2], **attrs).numpy()
    assert dx.shape == xs and dw.shape == ws
    np.testing.assert_allclose(np.vdot(x, dx), np.vdot(y, g), rtol=1e-12)
    np.testing.assert_allclose(np.vdot(w, dw), np.vdot(y, g), rtol=1e-12)


@pytest.mark.parametrize("xs, ws, strides, dilations, pads, groups", PRIMITIVE_CASES[:3])
def test_conv_primitives_gradients_match_finite_differences(xs, ws, strides, dilations,
                                                            pads, groups):
    from tapec.ops.conv import CONV, CONV_BACKPROP_FILTER, CONV_BACKPROP_INPUT
    from tapec.ops.registry import apply
    x, w, g, attrs = _primitive_arrays(xs, ws, strides, dilations, pads, groups)
    cases = [(lambda a, b: apply(CONV, a, b, **attrs), [x, w]),
             (lambda a, b: apply(CONV_BACKPROP_INPUT, a, b, input_size=xs[1:-1], **attrs),
              [g, w]),
             (lambda a, b: apply(CONV_BACKPROP_FILTER, a, b, window=ws[:-2], **attrs),
              [x, g])]
    for f, arrays in cases:
        weight = RNG.normal(size=f(*arrays).shape)
        fd.check_gradients(lambda a, b: f(a, b) * weight, arrays, rtol=1e-6, atol=1e-7)


def test_conv_third_derivatives_stay_within_the_three_primitives():
    """d/dw of u . H(w) u for f(w) = sum(conv(x, w)^3) / 6 (a third derivative: the VJPs of
    the two backprop ops, differentiated again) against differences of u . H(w) u."""
    x, u = RNG.normal(size=(1, 5, 2)), RNG.normal(size=(3, 2, 1))

    def curvature(b):                                     # u . H(b) u, by nested tapes
        with tf.GradientTape() as outer:
            outer.watch(b)
            with tf.GradientTape() as inner:
                inner.watch(b)
                value = tf.reduce_sum(tf.nn.conv1d(x, b, 2, "SAME") ** 3) / 6
            along = tf.reduce_sum(inner.gradient(value, b) * u)
        return tf.reduce_sum(outer.gradient(along, b) * u)

    w = tf.constant(RNG.normal(size=(3, 2, 1)))
    with tf.GradientTape() as tape:
        tape.watch(w)
        c = curvature(w)
    np.testing.assert_allclose(
        tape.gradient(c, w).numpy(),
        fd.gradient(lambda b: curvature(tf.constant(b)).numpy(), [w.numpy()], 0),
        rtol=1e-6, atol=1e-7)


BATCH_CASES = [(name, arrays, {**geometry, **extra}, flags)
               for case in PRIMITIVE_CASES[:2]
               for x, w, g, geometry in [_primitive_arrays(*case)]
               for name, arrays, extra in [
                   ("conv", [x, w], {}),
                   ("conv_backprop_input", [g, w], {"input_size": case[0][1:-1]}),
                   ("conv_backprop_filter", [x, g], {"window": case[1][:-2]})]
               for flags in [(True, False), (False, True), (True, True)]]


@pytest.mark.parametrize("name, args, attrs, flags", BATCH_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(BATCH_CASES)])
def test_conv_batching_rules_match_row_by_row(name, args, attrs, flags):
    from tests.batching_check import check_batching_rule
    check_batching_rule(name, args, attrs, flags)


@pytest.mark.parametrize("call, error, words", [
    (lambda op, apply: apply(op["conv"], np.ones((1, 5, 4)), np.ones((2, 3, 2)),
                             strides=(1,), dilations=(1,), pads=((0, 0),), groups=2),
     ValueError, "groups=2 the kernel must have shape"),
    (lambda op, apply: apply(op["conv"], np.ones((1, 2, 1)), np.ones((4, 1, 1)),
                             strides=(1,), dilations=(1,), pads=((0, 1),), groups=1),
     ValueError, r"does not fit the spatial axes \(2,\)"),
    (lambda op, apply: apply(op["conv_backprop_input"], np.ones((1, 3, 1)),
                             np.ones((2, 1, 1)), input_size=(5,), strides=(1,),
                             dilations=(1,), pads=((0, 0),), groups=1),
     ValueError, r"output gradient must have shape \(batch, \*\(4,\), 1\)"),
    (lambda op, apply: apply(op["conv_backprop_filter"], np.ones((1, 5, 1), np.float32),
                             np.ones((1, 4, 1)), window=(2,), strides=(1,), dilations=(1,),
                             pads=((0, 0),), groups=1),
     TypeError, "must have one dtype"),
])
def test_conv_primitives_name_bad_arguments(call, error, words):
    from tapec.ops import REGISTRY
    from tapec.ops.registry import apply
    with pytest.raises(error, match=words):
        call(REGISTRY, apply)


def test_conv_and_pool_in_a_function_with_a_none_batch_trace_once():
    w = tf.Variable(RNG.normal(size=(3, 3, 2, 4)))

    @tf.function(input_signature=[tf.TensorSpec([None, 6, 6, 2], tf.float64)])
    def step(x):
        with tf.GradientTape() as tape:
            h = tf.nn.conv2d(x, w, 1, "SAME")
            y = tf.reduce_mean(tf.nn.max_pool2d(tf.nn.relu(h), 2, 2, "VALID") ** 2)
        return y, tape.gradient(y, w)

    for n in (4, 1, 9):
        x = RNG.normal(size=(n, 6, 6, 2))
        y, g = step(x)
        xt = tf.constant(x)
        with tf.GradientTape() as tape:
            h = tf.nn.conv2d(xt, w, 1, "SAME")
            expected = tf.reduce_mean(tf.nn.max_pool2d(tf.nn.relu(h), 2, 2, "VALID") ** 2)
        np.testing.assert_allclose(y.numpy(), expected.numpy(), rtol=1e-12)
        np.testing.assert_allclose(g.numpy(), tape.gradient(expected, w).numpy(), rtol=1e-10)
    assert step.experimental_get_tracing_count() == 1


# --- depthwise, separable and transposed convolutions -----------------------------------------

def test_depthwise_conv2d_is_each_channel_convolved_with_its_own_filters():
    x, w = RNG.normal(size=(2, 6, 5, 3)), RNG.normal(size=(3, 2, 3, 2))
    y = tf.nn.depthwise_conv2d(x, w, [1, 2, 1, 1], "SAME", dilations=None)
    expected = np.concatenate([reference_conv(x[..., c:c + 1], w[:, :, c:c + 1, :], (2, 1),
                                              (1, 1), "SAME") for c in range(3)], axis=-1)
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-12, atol=1e-12)
    pointwise = RNG.normal(size=(1, 1, 6, 4))
    separable = tf.nn.separable_conv2d(x, w, pointwise, [1, 2, 1, 1], "SAME")
    np.testing.assert_allclose(separable.numpy(), np.einsum("nhwc,cf->nhwf", expected,
                                                            pointwise[0, 0]), rtol=1e-12)


@pytest.mark.parametrize("xs, ks, output_shape, strides, padding", [
    ((2, 4, 3, 2), (3, 3, 5, 2), (2, 8, 6, 5), 2, "SAME"),
    ((1, 4, 3, 2), (3, 2, 1, 2), (1, 9, 8, 1), (2, 3), "VALID"),
    ((2, 5, 3), (4, 2, 3), (2, 10, 2), 2, "SAME"),
])
def test_conv_transpose_is_the_adjoint_of_conv(xs, ks, output_shape, strides, padding):
    """<conv_transpose(x, k), z> = <x, conv(z, k)> for every z of the output's shape."""
    x, k, z = RNG.normal(size=xs), RNG.normal(size=ks), RNG.normal(size=output_shape)
    y = tf.nn.conv_transpose(x, k, output_shape, strides, padding)
    assert y.shape == output_shape
    np.testing.assert_allclose(np.vdot(y.numpy(), z), np.vdot(
        x, tf.nn.convolution(z, k, strides, padding).numpy()), rtol=1e-12)
    named = {3: tf.nn.conv1d_transpose, 4: tf.nn.conv2d_transpose}[len(xs)]
    np.testing.assert_allclose(named(x, k, output_shape, strides, padding).numpy(),
                               y.numpy(), rtol=1e-12)


def test_depthwise_and_transposed_convolutions_match_tensorflow():
    tf_real = pytest.importorskip("tensorflow")
    x = RNG.normal(size=(2, 7, 6, 3)).astype(np.float32)
    w, k = RNG.normal(size=(3, 2, 3, 2)).astype(np.float32), \
        RNG.normal(size=(3, 3, 4, 3)).astype(np.float32)
    for ours, theirs in [
            (tf.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "VALID"),
             tf_real.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "VALID")),
            (tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME", dilations=[2, 1]),
             tf_real.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME", dilations=[2, 1])),
            (tf.nn.conv2d_transpose(x, k, (2, 14, 11, 4), 2, "SAME"),
             tf_real.nn.conv2d_transpose(x, k, (2, 14, 11, 4), 2, "SAME")),
            (tf.nn.conv2d_transpose(x, k, (2, 15, 13, 4), 2, "VALID"),
             tf_real.nn.conv2d_transpose(x, k, (2, 15, 13, 4), 2, "VALID"))]:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-4, atol=1e-4)


def test_depthwise_and_transposed_gradients_match_finite_differences():
    x, w = RNG.normal(size=(1, 5, 4, 2)), RNG.normal(size=(2, 2, 2, 2))
    fd.check_gradients(lambda a, b: tf.nn.depthwise_conv2d(a, b, [1, 1, 1, 1], "SAME") ** 2,
                       [x, w])
    k = RNG.normal(size=(3, 2, 3, 2))
    fd.check_gradients(lambda a, b: tf.nn.conv2d_transpose(a, b, (1, 10, 8, 3), 2) ** 2,
                       [x, k])


# --- errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("call, error, words", [
    (lambda: tf.nn.conv2d(np.ones((2, 5, 3)), np.ones((2, 2, 3, 1)), 1, "VALID"),
     ValueError, "conv2d: input must have rank 4"),
    (lambda: tf.nn.conv2d(np.ones((1, 5, 5, 3)), np.ones((2, 2, 2, 1)), 1, "VALID"),
     ValueError, "in_channels = 3"),
    (lambda: tf.nn.conv2d(np.ones((1, 2, 5, 1)), np.ones((3, 3, 1, 1)), 1, "VALID"),
     ValueError, "does not fit spatial axis 0 of size 2"),
    (lambda: tf.nn.conv1d(np.ones((1, 5, 1)), np.ones((2, 1, 1)), 1, "causal"),
     ValueError, "padding must be one of"),
    (lambda: tf.nn.conv2d(np.ones((1, 5, 5, 1)), np.ones((2, 2, 1, 1)), [1, 2, 2, 2],
                          "SAME"), ValueError, "batch and channel"),
    (lambda: tf.nn.conv2d(np.ones((1, 5, 5, 1)), np.ones((2, 2, 1, 1)), 0, "SAME"),
     ValueError, "strides must be positive"),
    (lambda: tf.nn.conv2d(tf.ones((1, 5, 5, 1)), tf.ones((2, 2, 1, 1), tf.float64), 1,
                          "SAME"), TypeError, "one dtype"),
    (lambda: tf.nn.conv2d(tf.ones((1, 5, 5, 1), tf.int32), tf.ones((2, 2, 1, 1), tf.int32),
                          1, "SAME"), TypeError, "floating"),
    (lambda: tf.nn.max_pool2d(np.ones((1, 5, 5, 1)), 2, 2, "FULL"), ValueError,
     "padding must be one of"),
    (lambda: tf.nn.avg_pool(np.ones((5, 5)), 2, 2, "SAME"), ValueError, "rank 3, 4 or 5"),
    (lambda: tf.nn.max_pool2d(np.ones((1, 5, 5, 1)), 2, 2, "SAME", data_format="NHCW"),
     ValueError, "data_format"),
    (lambda: tf.nn.depthwise_conv2d(np.ones((1, 5, 5, 3)), np.ones((2, 2, 2, 1)), 1,
                                    "SAME"), ValueError, "in_channels = 3"),
    (lambda: tf.nn.depthwise_conv2d(np.ones((1, 5, 5, 1)), np.ones((2, 2, 1, 1)), 2,
                                    "SAME", dilations=2), ValueError, "need strides of 1"),
    (lambda: tf.nn.conv2d_transpose(np.ones((1, 4, 4, 2)), np.ones((3, 3, 1, 2)),
                                    (1, 9, 9, 1), 2, "SAME"),
     ValueError, r"convolves back to \(5, 5\), not to the input's \(4, 4\)"),
    (lambda: tf.nn.conv2d_transpose(np.ones((1, 4, 4, 2)), np.ones((3, 3, 1, 2)),
                                    (1, 8, 8, 3), 2, "SAME"), ValueError, "output channels"),
    (lambda: tf.nn.conv2d_transpose(np.ones((1, 4, 4, 2)), np.ones((3, 3, 1, 3)),
                                    (1, 8, 8, 1), 2, "SAME"), ValueError, "in_channels = 2"),
])
def test_bad_arguments_are_named(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_a_numpy_kernel_takes_the_input_tensors_dtype():
    x = tf.ones((1, 3, 3, 1))                                        # float32
    y = tf.nn.conv2d(x, np.ones((2, 2, 1, 1)), 1, "VALID")           # a float64 array
    assert y.dtype == tf.float32 and y.numpy().ravel().tolist() == [4.0] * 4


def test_max_pool_keeps_integer_dtypes():
    x = np.arange(16, dtype=np.int32).reshape(1, 4, 4, 1)
    y = tf.nn.max_pool2d(x, 3, 2, "SAME")
    assert y.dtype == tf.int32
    assert y.numpy().ravel().tolist() == [10, 11, 14, 15]
