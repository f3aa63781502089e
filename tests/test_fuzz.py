"""Random programs (tests/fuzz_programs.py) through every way tapec differentiates them.

For each generated program (`program` returns the last value, `f` its sum):
  (a) the tape's gradient of f equals central finite differences (float64);
  (b) simplify "off", "fast" and "full" give the same gradient;
  (c) a cache hit (the same program recorded again on new values) equals a fresh
      compilation of the same recording; and a sibling program that differs only in
      constants (literals, masks, index values) run after it equals its own fresh
      compilation;
  (d) `tape.jacobian` of `program` equals the stacked gradients of its elements;
  (e) the module written by `tf.export` gives tapec's value and gradient, and with
      jacobian=True / hessian=True tapec's jacobian and `tf.hessian`;
  (f) `tf.function` and `tf.value_and_grad` agree with the eager tape;
  (g) second derivatives: nested tapes (a Hessian-vector product) equal finite
      differences of the compiled gradient, and `tf.hessian` contracted with the same
      vector.

A failure shrinks to a minimal program; the message holds a standalone reproducer (the
program's source and its inputs). The suite runs 25 programs per check, the same ones
every time (derandomized); `TAPEC_FUZZ_EXAMPLES=2000 python -m pytest tests/test_fuzz.py`
is the long run, with random programs (docs/fuzzing.md).
"""
import importlib.util
import math
import os
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from itertools import count

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, reject, settings
from hypothesis import strategies as st

import tapec as tf
from fuzz_programs import programs
from helpers import fd
from tapec.export import latex

LONG_RUN = "TAPEC_FUZZ_EXAMPLES" in os.environ
FUZZ = settings(max_examples=int(os.environ.get("TAPEC_FUZZ_EXAMPLES", "25")), deadline=None,
                suppress_health_check=list(HealthCheck), derandomize=not LONG_RUN,
                print_blob=True)
SEEDS = st.integers(0, 2 ** 32 - 1)

FD_STEP = 1e-4          # the 5-point central stencil spans +-2 steps
KINK_MARGIN = 0.02      # finite differences stay this far from any kink
_modules = count()


@contextmanager
def reported(check, program, arrays, before=None):
    """Turn any failure into an AssertionError that carries a standalone reproducer
    (`before`: a program run first, whose compilation the cache held)."""
    try:
        yield
    except Exception as error:
        first = "" if before is None else \
            f"After running this program on the same inputs:\n{before.source}\n"
        raise AssertionError(f"{check}: {type(error).__name__}: {error}\n\n{first}"
                             f"Reproducer:\n{program.reproducer(arrays)}") from error


def assert_close(actual, expected, rtol, atol, what):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=what)


def scale(*arrays):
    """The largest magnitude among the arrays (at least 1): absolute tolerances grow with it."""
    return max([1.0] + [float(np.max(np.abs(a))) for a in arrays if np.size(a)])


def tape_gradients(program, arrays, unconnected="zero"):
    """(value of f, gradients of f w.r.t. every input) from one recording."""
    xs = [tf.constant(a) for a in arrays]
    with tf.GradientTape() as tape:
        tape.watch(xs)
        y = program.f(*xs)
    grads = tape.gradient(y, xs, unconnected_gradients=unconnected)
    return y.numpy(), [None if g is None else g.numpy() for g in grads]


def finite_differences(fn, arrays):
    """d fn / d arrays[k] for every k by the 5-point central stencil (error O(h^4));
    `fn` maps a list of float64 arrays to a float."""
    return [fd.gradient(lambda *moved: fn(list(moved)), arrays, k, FD_STEP, points=5)
            for k in range(len(arrays))]


def eager_value(program):
    """f as a function of a list of arrays, evaluated eagerly (no tape, no compiled code)."""
    return lambda arrays: float(program.f(*(tf.constant(a) for a in arrays)).numpy())


def inputs_away_from_kinks(program, seed):
    """Inputs at least KINK_MARGIN from every kink (a few seeds tried, else rejected)."""
    for attempt in range(8):
        arrays = program.inputs((seed + attempt) % 2 ** 32)
        if program.margin(arrays) >= KINK_MARGIN:
            return arrays
    reject()


@FUZZ
@given(program=programs(), seed=SEEDS)
def test_gradient_matches_finite_differences(program, seed):
    arrays = inputs_away_from_kinks(program, seed)
    with reported("(a) tape gradient vs finite differences", program, arrays):
        value, grads = tape_gradients(program, arrays, unconnected="none")
        assert math.isfinite(value)
        expected = finite_differences(eager_value(program), arrays)
        for k, (g, e) in enumerate(zip(grads, expected)):
            if g is None:
                name = program.names[k]
                assert not np.any(np.abs(e) > 1e-7), f"input {name}: gradient None, FD {e}"
                continue
            assert_close(g, e, 1e-5, 1e-7, f"gradient of {program.names[k]}")


@FUZZ
@given(program=programs(), seed=SEEDS)
def test_simplify_modes_agree(program, seed):
    arrays = program.inputs(seed)
    with reported("(b) simplify off / fast / full", program, arrays):
        results = {}
        for mode in ("off", "fast", "full"):
            with tf.simplify_mode(mode):
                results[mode] = tape_gradients(program, arrays)
        value, off = results["off"]
        for mode in ("fast", "full"):
            assert results[mode][0] == value, f"value under {mode}"
            for k, (g, e) in enumerate(zip(results[mode][1], off)):
                assert_close(g, e, 1e-10, 1e-13 * scale(e),
                             f"gradient of {program.names[k]}, {mode} vs off")


@FUZZ
@given(program=programs(), seed=SEEDS)
def test_cache_hit_matches_fresh_compilation(program, seed):
    first, second = program.inputs(seed), program.inputs((seed + 1) % 2 ** 32)
    with reported("(c) cache hit vs fresh compilation", program, second):
        tape_gradients(program, first)                 # compiles (or hits an earlier entry)
        misses = tf.cache_info().misses
        _, hit = tape_gradients(program, second)
        assert tf.cache_info().misses == misses, "new values of the same shapes recompiled"
        tf.clear_cache()
        _, fresh = tape_gradients(program, second)
        assert tf.cache_info().misses > 0
        for k, (g, e) in enumerate(zip(hit, fresh)):
            assert_close(g, e, 1e-12, 0.0, f"gradient of {program.names[k]}, cache hit vs fresh")


@FUZZ
@given(program=programs(), seed=SEEDS)
def test_programs_differing_in_constants_compile_apart(program, seed):
    """A cache key that missed a constant (a literal, a mask, index values, a written
    shape) would hand the sibling the program's compiled code."""
    sibling = program.sibling()
    assume(sibling is not None)
    arrays = program.inputs(seed)
    with reported("(c) program then sibling vs fresh compilation of the sibling", sibling,
                  arrays, before=program):
        def both(p):
            xs = [tf.constant(a) for a in arrays]
            with tf.GradientTape(persistent=True) as tape:
                tape.watch(xs)
                y = p.program(*xs)
                total = tf.reduce_sum(y)
            grads = tape.gradient(total, xs, unconnected_gradients="zero")
            jacobians = tape.jacobian(y, xs, unconnected_gradients="zero")
            return [g.numpy() for g in grads + jacobians]

        both(program)
        warm = both(sibling)
        tf.clear_cache()
        fresh = both(sibling)
        for k, (w, e) in enumerate(zip(warm, fresh)):
            what = "gradient" if k < len(arrays) else "jacobian"
            assert_close(w, e, 1e-12, 0.0, f"{what} {k % len(arrays)}: after the program "
                                           f"vs fresh")


@FUZZ
@given(program=programs(), seed=SEEDS)
def test_jacobian_matches_stacked_gradients(program, seed):
    arrays = program.inputs(seed)
    with reported("(d) jacobian vs stacked gradients", program, arrays):
        xs = [tf.constant(a) for a in arrays]
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(xs)
            y = program.program(*xs)
        jacobians = tape.jacobian(y, xs)
        shape = tuple(y.shape)
        rows = [[] for _ in xs]
        for i in np.ndindex(*shape):
            seed_ = np.zeros(shape)
            seed_[i] = 1.0
            grads = tape.gradient(y, xs, output_gradients=tf.constant(seed_))
            for k, g in enumerate(grads):
                rows[k].append(np.zeros(arrays[k].shape) if g is None else g.numpy())
        for k, (jac, x) in enumerate(zip(jacobians, arrays)):
            stacked = np.stack(rows[k]).reshape(shape + x.shape)
            if jac is None:
                assert not stacked.any(), \
                    f"jacobian of {program.names[k]} None, gradients {stacked}"
                continue
            assert_close(jac.numpy(), stacked, 1e-10, 1e-13 * scale(stacked),
                         f"jacobian of {program.names[k]}")


def directional_gradient(program, directions):
    """arrays -> sum_k <d f / d x_k, u_k>, from compiled gradients."""
    def fn(arrays):
        _, grads = tape_gradients(program, arrays)
        return float(sum(np.sum(g * u) for g, u in zip(grads, directions)))
    return fn


@FUZZ
@given(program=programs(), seed=SEEDS)
def test_second_derivatives_match_finite_differences(program, seed):
    arrays = inputs_away_from_kinks(program, seed)
    directions = program.inputs((seed + 12345) % 2 ** 32)
    with reported("(g) nested tapes (Hessian-vector product) vs finite differences",
                  program, arrays):
        xs = [tf.constant(a) for a in arrays]
        with tf.GradientTape() as outer:
            outer.watch(xs)
            with tf.GradientTape() as inner:
                inner.watch(xs)
                y = program.f(*xs)
            grads = inner.gradient(y, xs, unconnected_gradients="zero")
            total = sum(tf.reduce_sum(g * u) for g, u in zip(grads, directions))
        hvp = outer.gradient(total, xs, unconnected_gradients="zero")
        hessian = tf.hessian(program.f, tuple(range(len(xs))))(*arrays)
        for k, row in enumerate(hessian):           # tf.hessian contracted with u
            contracted = sum(np.tensordot(block.numpy(), u, axes=u.ndim)
                             for block, u in zip(row, directions))
            assert_close(contracted, hvp[k].numpy(), 1e-9, 1e-12 * scale(contracted),
                         f"tf.hessian . u vs nested tapes, {program.names[k]}")
        expected = finite_differences(directional_gradient(program, directions), arrays)
        for k, e in enumerate(expected):
            assert_close(hvp[k].numpy(), e, 1e-5, 1e-6,
                         f"Hessian-vector product, {program.names[k]}")


@contextmanager
def formulas_unsimplified():
    """Exports here skip the SymPy simplification of the docstring's formulas.

    It may spend up to `latex.SIMPLIFY_SECONDS` per export on text these checks do not
    read. `_bounded` answering None at once is its documented "took too long" outcome:
    the formulas are printed unsimplified; the code is the same.
    """
    original = getattr(latex, "_bounded", None)
    if original is None:                        # renamed: export as it is
        yield
        return
    latex._bounded = lambda fn, arg, seconds: None
    try:
        yield
    finally:
        latex._bounded = original


def exported(fn, arrays, **options):
    """tf.export(fn, arrays) written to a temporary file and imported with importlib."""
    with tempfile.TemporaryDirectory() as folder, formulas_unsimplified():
        path = os.path.join(folder, "fuzz_export.py")
        tf.export(fn, arrays, path, **options)
        spec = importlib.util.spec_from_file_location(f"fuzz_export_{next(_modules)}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


@FUZZ
@given(program=programs(), seed=SEEDS)
def test_export_matches_tapec(program, seed):
    arrays = program.inputs(seed)
    with reported("(e) exported module vs tapec", program, arrays):
        module = exported(program.f, arrays, argnums=tuple(range(program.n_inputs)))
        value, grads = tape_gradients(program, arrays)
        exported_value, exported_grads = module.value_and_grad_f(*arrays)
        assert_close(module.f(*arrays), value, 1e-12, 0.0, "f")
        assert_close(exported_value, value, 1e-12, 0.0, "value_and_grad_f value")
        for name, result in (("grad_f", module.grad_f(*arrays)),
                             ("value_and_grad_f", exported_grads)):
            assert len(result) == len(grads)
            for k, (g, e) in enumerate(zip(result, grads)):
                assert_close(g, e, 1e-12, 1e-14 * scale(e), f"{name} of {program.names[k]}")


@FUZZ
@given(program=programs(), seed=SEEDS)
def test_exported_jacobian_and_hessian_match_tapec(program, seed):
    arrays = program.inputs(seed)
    with reported("(e) exported jacobian / hessian vs tapec", program, arrays):
        argnums = tuple(range(program.n_inputs))
        jac_module = exported(program.program, arrays, argnums=argnums, jacobian=True)
        hess_module = exported(program.f, arrays, argnums=argnums, hessian=True)
        xs = [tf.constant(a) for a in arrays]
        with tf.GradientTape() as tape:
            tape.watch(xs)
            y = program.program(*xs)
        jacobians = tape.jacobian(y, xs, unconnected_gradients="zero")
        assert_close(jac_module.program(*arrays), y.numpy(), 1e-12, 0.0, "program")
        for k, (j, e) in enumerate(zip(jac_module.jacobian_program(*arrays), jacobians)):
            assert_close(j, e.numpy(), 1e-10, 1e-13 * scale(e.numpy()),
                         f"jacobian_program of {program.names[k]}")
        hessian = tf.hessian(program.f, argnums)(*arrays)
        for k, (row, expected_row) in enumerate(zip(hess_module.hessian_f(*arrays), hessian)):
            for m, (h, e) in enumerate(zip(row, expected_row)):
                assert_close(h, e.numpy(), 1e-10, 1e-13 * scale(e.numpy()),
                             f"hessian_f block ({program.names[k]}, {program.names[m]})")


@FUZZ
@given(program=programs(), seed=SEEDS)
def test_recorded_functions_match_tape(program, seed):
    arrays = program.inputs(seed)
    with reported("(f) tf.function / tf.value_and_grad vs tape", program, arrays):
        eager = program.program(*(tf.constant(a) for a in arrays)).numpy()
        traced = tf.function(program.program)
        for values in (arrays, program.inputs((seed + 1) % 2 ** 32)):   # trace, then replay
            expected = program.program(*(tf.constant(a) for a in values)).numpy()
            assert_close(traced(*values).numpy(), expected, 1e-12, 0.0, "tf.function value")
        value, grads = tape_gradients(program, arrays)
        vg_value, vg_grads = tf.value_and_grad(program.f, tuple(range(len(arrays))))(*arrays)
        assert_close(vg_value.numpy(), value, 1e-12, 0.0, "value_and_grad value")
        assert_close(np.sum(eager), value, 1e-12, 1e-12 * scale(eager), "sum of program")
        for k, (g, e) in enumerate(zip(vg_grads, grads)):
            assert_close(g.numpy(), e, 1e-10, 1e-13 * scale(e),
                         f"value_and_grad of {program.names[k]}")


# ---------------------------------------------------------------------- bugs found by fuzzing
# The generator names inputs x, y, z: with x0, x1, ... every program holding a NumPy
# constant hit the bug below under tf.function, hiding everything else.

def test_function_parameter_named_like_a_generated_argument():
    def program(x0):
        return x0 * np.array([2.0])

    assert tf.function(program)(np.array([0.5])).numpy().tolist() == [1.0]


def test_parameter_named_like_a_generated_temporary():
    def program(t0):
        a = t0 * 2.0
        return a * t0

    assert float(tf.function(program)(np.array(3.0))) == 18.0
    assert float(tf.grad(program)(np.array(3.0))) == 12.0
    value, grad = tf.value_and_grad(program)(np.array(3.0))
    assert (float(value), float(grad)) == (18.0, 12.0)


def test_parameters_named_like_builtins_and_template_helpers():
    # `float` is what the scalar fast path converts with; `t0_shift` is the helper name
    # the logsumexp template derives from a temporary t0
    def program(float, t0_shift):
        return tf.reduce_logsumexp(float * t0_shift)

    x, v = np.array(3.0), np.array([1.0, 2.0])
    weights = np.exp(x * v) / np.sum(np.exp(x * v))
    np.testing.assert_allclose(float(tf.function(program)(x, v)),
                               np.log(np.sum(np.exp(x * v))), rtol=1e-15)
    dx, dv = tf.grad(program, argnums=(0, 1))(x, v)
    np.testing.assert_allclose(float(dx), np.sum(weights * v), rtol=1e-14)
    np.testing.assert_allclose(dv.numpy(), weights * x, rtol=1e-14)


def test_parameters_named_like_generated_values_and_their_helpers():
    # Values are named after their op (`multiply_1`); the logsumexp template derives
    # `<its name>_shift`: neither may overwrite a parameter of that name.
    def program(multiply_1, logsumexp_1_shift):
        return tf.reduce_logsumexp(multiply_1 * logsumexp_1_shift) * multiply_1

    x, v = np.array(3.0), np.array([1.0, 2.0])
    expected = np.log(np.sum(np.exp(x * v))) * x
    np.testing.assert_allclose(float(tf.function(program)(x, v)), expected, rtol=1e-15)
    weights = np.exp(x * v) / np.sum(np.exp(x * v))
    dv = tf.grad(program, argnums=1)(x, v)
    np.testing.assert_allclose(dv.numpy(), weights * x * x, rtol=1e-14)


LINGERING_SIMPLIFICATION = r"""
import os, tempfile, threading, time
import numpy as np
import tapec as tf


def f(x):
    t = tf.tanh(x + 0.75)
    return tf.pow(1.0 + t * t, tf.tanh(t))


tf.export(f, (np.array(1.0),), os.path.join(tempfile.mkdtemp(), "m.py"))

print(sum(t.name == "tapec-latex-simplify" for t in threading.enumerate()))
"""


def test_export_leaves_no_simplification_running(simplify_mode):
    if simplify_mode == "off":
        pytest.skip("export ignores the simplify mode: once is enough")
    # in a child process: a lingering thread would slow down this one
    done = subprocess.run([sys.executable, "-c", LINGERING_SIMPLIFICATION],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "0", "a simplification thread is still running"


def test_value_names_skip_parameters_and_their_extensions():
    from tapec.codegen.names import Namer
    namer = Namer()
    for parameter in ("tanh_1", "fused_2_shift", "fused_4_1", "x", "fused_5"):
        namer.take(parameter)
    # A multi-line template derives `<name>_<suffix>` names: a stem must not be the start
    # of a parameter's name, and no later name may extend a stem.
    names = [namer.numbered("fused", stem=True) for _ in range(3)]
    assert names == ["fused_1", "fused_3", "fused_6"]
    assert [namer.numbered("tanh") for _ in range(2)] == ["tanh_2", "tanh_3"]
    assert namer.claim("fused_1_0") != "fused_1_0"
