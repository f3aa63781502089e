"""The finite-difference oracle of the test suite: central differences in float64.

Two stencils, selected by `points`:

    3: (f(x + h) - f(x - h)) / 2h                                  error O(h^2)
    5: (f(x - 2h) - 8 f(x - h) + 8 f(x + h) - f(x + 2h)) / 12h     error O(h^4)

The core functions work on NumPy: `f` takes float64 arrays (one per argument) and
returns a number or an array, and one element of one argument moves at a time.

    jacobian(f, arrays, k)      d f(*arrays) / d arrays[k], shape f.shape + arrays[k].shape
    gradient(f, arrays, k)      the same for a scalar f, shape arrays[k].shape
    directional(f, x, v)        d/dt f(x + t v) at t = 0

`eager(fn, weight)` turns a function of tapec tensors into such an `f`, evaluated
eagerly (no tape, no compiled code); `numeric_gradient` and `check_gradients` are the
tape-facing forms most gradient tests use.
"""
import numpy as np

import tapec as tf

EPS = 1e-6          # the step of the 3-point stencil in every op-family test


def _stencil(sample, eps, points):
    """The central difference of `sample(delta)`, the function at delta * eps."""
    if points == 3:
        return (sample(1) - sample(-1)) / (2 * eps)
    if points == 5:
        return (sample(-2) - 8 * sample(-1) + 8 * sample(1) - sample(2)) / (12 * eps)
    raise ValueError(f"points must be 3 or 5, got {points!r}")


def jacobian(f, arrays, k, eps=EPS, points=3):
    """d f(*arrays) / d arrays[k] by central differences: shape out.shape + arrays[k].shape
    (out is f's value, a number or an array)."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    rows = {}
    for i in np.ndindex(*arrays[k].shape):
        def sample(delta, i=i):
            moved = [a.copy() for a in arrays]
            moved[k][i] += delta * eps
            return np.asarray(f(*moved), dtype=np.float64)
        rows[i] = _stencil(sample, eps, points)
    out_shape = next(iter(rows.values())).shape if rows else np.shape(f(*arrays))
    jac = np.zeros(out_shape + arrays[k].shape)
    for i, row in rows.items():
        jac[(Ellipsis,) + i] = row
    return jac


def gradient(f, arrays, k, eps=EPS, points=3):
    """d f(*arrays) / d arrays[k] for a scalar-valued f: an array of arrays[k]'s shape."""
    return jacobian(f, arrays, k, eps, points)


def directional(f, x, v, eps=EPS, points=5):
    """d/dt f(x + t v) at t = 0 (f takes one array and returns a number or an array)."""
    return _stencil(lambda delta: f(x + delta * eps * v), eps, points)


def eager(fn, weight=None):
    """`fn`, a function of tapec tensors, as a function of float64 arrays evaluated
    eagerly: its value as an array, or sum(value * weight) as a float when `weight` is
    given (the scalar whose gradient a tape computes with that weight)."""
    def f(*arrays):
        out = np.asarray(fn(*[tf.constant(a) for a in arrays]).numpy(), dtype=np.float64)
        return out if weight is None else float(np.sum(out * weight))
    return f


def numeric_gradient(fn, arrays, index, weight=None, eps=EPS):
    """d sum(fn(*arrays) * weight) / d arrays[index] (weight: ones by default), `fn` on
    tapec tensors, evaluated eagerly."""
    return gradient(eager(fn, 1.0 if weight is None else weight), arrays, index, eps)


def check_gradients(f, arrays, rtol=1e-6, atol=1e-8):
    """The tape's gradient of sum(f(*xs)) w.r.t. every input equals finite differences."""
    xs = [tf.constant(np.asarray(a, dtype=np.float64)) for a in arrays]
    with tf.GradientTape() as tape:
        tape.watch(xs)
        y = tf.reduce_sum(f(*xs))
    grads = tape.gradient(y, xs)
    for k, (x, g) in enumerate(zip(xs, grads)):
        expected = numeric_gradient(f, arrays, k)
        if g is None:
            assert not expected.any(), f"input {k}: gradient None, expected {expected}"
            continue
        assert g.shape == x.shape and g.dtype == tf.float64
        np.testing.assert_allclose(g.numpy(), expected, rtol=rtol, atol=atol,
                                   err_msg=f"gradient of input {k}")
