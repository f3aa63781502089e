"""Differential fuzzing: random programs (fuzz_programs.py) through tapec and through JAX.

The same program source runs twice: with `tf` bound to tapec, and with `tf` bound to
`JAX_TF`, a small TensorFlow-like namespace over `jax.numpy` / `jax.nn` written here (and
`np` bound to a namespace whose `sin`, `exp`, `tanh`, `mean` are JAX's, so NumPy calls
trace). Each program runs in float64 and float32 on inputs that may hold singular points
(0, -0, +-inf, nan, values whose exp underflows or overflows in float32, ties), and

    value      tapec eager value             vs  JAX value
    tape       tape.gradient of f            vs  jax.grad
    grad       tf.grad(f, all argnums)       vs  jax.grad
    function   tf.function(program)          vs  JAX value
    fn_tape    tf.function(tape gradient)    vs  jax.grad
    jacobian   tape.jacobian(program)        vs  jax.jacrev
    hvp        nested tapes (Hessian . u)    vs  jax.jvp of jax.grad

each compiled form called on inputs A, then on inputs B (same shapes). A disagreement is
classified: "nan-mismatch" (the nan / inf pattern differs), "wrong" (a finite value
differs), "stale" (the call on B returned what the call on A returned), "crash" (tapec
raised), or "documented difference" (JAX's documented behaviour differs from TensorFlow's,
which tapec follows; `DOCUMENTED` gives the reason). In float32 a result that matches
JAX in float64 on the same inputs also passes (tapec rounded better than JAX did).

`python tests/fuzz_against_jax.py --programs 2000` runs a campaign (docs/fuzzing.md).
"""
import argparse
import json
import math
import os
import pickle
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field, replace
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as seeded
from hypothesis import strategies as st

import tapec as tf
from fuzz_programs import Program, programs

jax.config.update("jax_enable_x64", True)

DTYPES = ("float64", "float32")
TOLERANCES = {"float64": (1e-7, 1e-9), "float32": (2e-3, 2e-4)}   # rtol, atol (scaled)
FAILURES = ("nan-mismatch", "wrong", "stale", "crash")

# --------------------------------------------------------------------------- JAX as `tf`


def _matmul(a, b, transpose_a=False, transpose_b=False):
    a = jnp.swapaxes(a, -1, -2) if transpose_a else a
    b = jnp.swapaxes(b, -1, -2) if transpose_b else b
    return a @ b


def _norm(x, axis=None):
    return jnp.linalg.norm(jnp.ravel(x)) if axis is None else jnp.linalg.norm(x, axis=axis)


def _gather(x, indices, axis=0):
    return x[(slice(None),) * (axis % x.ndim) + (indices,)]


JAX_TF = SimpleNamespace(
    add=jnp.add, subtract=jnp.subtract, multiply=jnp.multiply, divide=jnp.divide,
    maximum=jnp.maximum, minimum=jnp.minimum, pow=jnp.power, square=jnp.square,
    sin=jnp.sin, cos=jnp.cos, tan=jnp.tan, tanh=jnp.tanh, sinh=jnp.sinh, cosh=jnp.cosh,
    atan=jnp.arctan, asin=jnp.arcsin, acos=jnp.arccos, exp=jnp.exp, sqrt=jnp.sqrt,
    abs=jnp.abs, sign=jnp.sign, sigmoid=jax.nn.sigmoid, clip_by_value=jnp.clip,
    where=jnp.where, reduce_sum=jnp.sum, reduce_mean=jnp.mean, reduce_max=jnp.max,
    reduce_min=jnp.min, reduce_prod=jnp.prod, reduce_logsumexp=jax.nn.logsumexp,
    norm=_norm, einsum=jnp.einsum, matmul=_matmul, reshape=jnp.reshape,
    transpose=jnp.transpose, expand_dims=jnp.expand_dims, squeeze=jnp.squeeze,
    broadcast_to=jnp.broadcast_to, tile=jnp.tile, gather=_gather,
    concat=lambda values, axis: jnp.concatenate(values, axis=axis),
    stack=lambda values, axis: jnp.stack(values, axis=axis),
    split=lambda x, pieces, axis: jnp.split(x, pieces, axis=axis),
    nn=SimpleNamespace(softplus=jax.nn.softplus, relu=jax.nn.relu, softmax=jax.nn.softmax,
                       log_softmax=jax.nn.log_softmax),
    math=SimpleNamespace(log=jnp.log, log1p=jnp.log1p, expm1=jnp.expm1,
                         erf=jax.scipy.special.erf),
    linalg=SimpleNamespace(matvec=lambda a, b: a @ b),
)
JAX_NP = SimpleNamespace(array=np.array, sin=jnp.sin, exp=jnp.exp, tanh=jnp.tanh,
                         mean=jnp.mean)


# The same namespace with TensorFlow's derivative conventions where JAX documents others:
# abs' derivative at 0, maximum/minimum at ties and nan, clip at its bounds, and
# reduce_max/min of a slice holding nan. A finding that disappears against this
# reference is a documented difference, however the ops combine in the program.

@jax.custom_jvp
def _tf_abs(x):
    return jnp.abs(x)


_tf_abs.defjvp(lambda primals, tangents: (jnp.abs(primals[0]),
                                          jnp.sign(primals[0]) * tangents[0]))


def _tf_selecting(select, pick_first):
    """maximum/minimum whose gradient goes to the first argument where `pick_first`
    (x >= y for maximum: TensorFlow's greater_equal mask; False at nan), else to y."""
    @jax.custom_jvp
    def choose(x, y):
        return select(x, y)

    @choose.defjvp
    def _(primals, tangents):
        x, y = primals
        dx, dy = tangents
        return choose(x, y), jnp.where(pick_first(x, y), dx, dy)
    return choose


@jax.custom_jvp
def _tf_clip(x, lo, hi):
    return jnp.clip(x, lo, hi)


@_tf_clip.defjvp
def _(primals, tangents):
    x, lo, hi = primals
    outside = (x < lo) | (x > hi)     # TensorFlow passes the gradient at the bounds
    return _tf_clip(x, lo, hi), jnp.where(outside, jnp.zeros_like(tangents[0]), tangents[0])


def _tf_extremum(reduce):
    """reduce_max/min whose gradient is TensorFlow's g * [x == out] / count (nan for a
    slice whose extremum is nan: nothing equals it)."""
    def extremum(x, axis=None, keepdims=False):
        @jax.custom_jvp
        def f(x):
            return reduce(x, axis=axis, keepdims=keepdims)

        @f.defjvp
        def _(primals, tangents):
            (x,), (dx,) = primals, tangents
            kept = reduce(x, axis=axis, keepdims=True)
            hits = (x == kept).astype(x.dtype)
            count = jnp.sum(hits, axis=axis, keepdims=keepdims)
            return f(x), jnp.sum(dx * hits, axis=axis, keepdims=keepdims) / count
        return f(x)
    return extremum


TF_CONVENTIONS = SimpleNamespace(**{
    **vars(JAX_TF), "abs": _tf_abs, "maximum": _tf_selecting(jnp.maximum, jnp.greater_equal),
    "minimum": _tf_selecting(jnp.minimum, jnp.less_equal), "clip_by_value": _tf_clip,
    "reduce_max": _tf_extremum(jnp.max), "reduce_min": _tf_extremum(jnp.min)})


def jax_functions(program, conventions=False):
    """(program, f) of JAX arrays, compiled from the program's own source (`conventions`:
    with TensorFlow's derivative conventions, builtin abs included)."""
    namespace = {"tf": TF_CONVENTIONS if conventions else JAX_TF, "np": JAX_NP}
    if conventions:
        namespace["abs"] = _tf_abs
    exec(compile(program.source, "<fuzz program, JAX>", "exec"), namespace)  # noqa: S102
    return namespace["program"], namespace["f"]


def tensorflow_reference(program):
    """Like `jax_reference`, computed by TensorFlow itself (eager, tapes), or None when it
    is not installed: the arbiter where JAX and TensorFlow disagree, since tapec follows
    TensorFlow."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")     # no C++ banners on stderr
    try:
        import tensorflow as real_tf
    except ImportError:
        return None
    real_tf.get_logger().setLevel("ERROR")      # its pfor jacobians warn about retracing
    np_like = SimpleNamespace(array=np.array, sin=real_tf.sin, exp=real_tf.exp,
                              tanh=real_tf.tanh, mean=real_tf.reduce_mean)
    namespace = {"tf": real_tf, "np": np_like}
    exec(compile(program.source, "<fuzz program, TensorFlow>", "exec"), namespace)  # noqa: S102
    tprogram, tf_f = namespace["program"], namespace["f"]

    def results(arrays, directions):
        xs = [real_tf.constant(a) for a in arrays]
        with real_tf.GradientTape(persistent=True) as outer:
            outer.watch(xs)
            with real_tf.GradientTape(persistent=True) as inner:
                inner.watch(xs)
                value, total = tprogram(*xs), tf_f(*xs)
            grads = inner.gradient(total, xs, unconnected_gradients="zero")
            dot = sum(real_tf.reduce_sum(g * real_tf.constant(u))
                      for g, u in zip(grads, directions))
        hvp = outer.gradient(dot, xs, unconnected_gradients="zero")
        jacobian = inner.jacobian(value, xs, unconnected_gradients="zero")
        return checked_quantities(value, grads, jacobian, hvp)
    return results


EXACT_JACOBIAN = "tapec's vectorized jacobian is exact where reverse mode's one-hot rows " \
                 "multiply 0 by an inf the entry does not depend on (TensorFlow and " \
                 "jax.jacrev: nan; jax.jacfwd agrees with tapec); docs/semantics.md"


def exact_where_rows_multiply_nan(program, arrays, got, reverse, dtype):
    """tapec's jacobian is finite only where jax.jacrev's is nan, and equals jax.jacfwd's
    there (forward mode has no one-hot cotangent to multiply by inf)."""
    jprogram, _ = jax_functions(program)
    forward = jax.jit(jax.jacfwd(jprogram, tuple(range(program.n_inputs))))(
        *[jnp.asarray(a) for a in arrays])
    for mine, rev, fwd in zip(got, reverse, forward):
        mine, rev, fwd = (np.asarray(a, np.float64) for a in (mine, rev, fwd))
        artifact = np.isnan(rev) & ~np.isnan(mine)
        if mismatch(np.where(artifact, 0, mine), np.where(artifact, 0, rev), dtype) or \
                mismatch(mine[artifact], fwd[artifact], dtype):
            return False
    return True


# --------------------------------------------------------------------------- inputs

# (value, weight); "tie" copies another element of the same input or an earlier input
SPECIALS = ((0.0, 3), (-0.0, 1), (math.inf, 1), (-math.inf, 1), (math.nan, 0.5),
            (-200.0, 2), (-1000.0, 1), (100.0, 1), ("tie", 3))


def singular_inputs(program, seed, p=0.3):
    """float64 inputs: uniform in [-1.5, 1.5] as `Program.inputs`, each element replaced by
    a special value with probability `p` (a third of the seeds draw no specials)."""
    arrays = program.inputs(seed)
    rng = np.random.default_rng([seed, 7])
    if seed % 3 == 0:
        return arrays
    weights = np.array([w for _, w in SPECIALS], dtype=float)
    pool = []
    for a in arrays:
        flat = a.reshape(-1)
        for i in range(flat.size):
            if rng.random() < p:
                special = SPECIALS[rng.choice(len(SPECIALS), p=weights / weights.sum())][0]
                if special == "tie":
                    special = pool[rng.integers(len(pool))] if pool else 0.5
                flat[i] = special
            pool.append(flat[i])
    return arrays


# --------------------------------------------------------------------------- comparing


def mismatch(actual, expected, dtype):
    """None when `actual` matches `expected`, else ("nan-mismatch" | "wrong", detail)."""
    if actual is None:
        actual = np.zeros_like(expected)                 # tapec None = JAX zeros
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape:
        return "wrong", f"shape {actual.shape} != {expected.shape}"
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    fa, fe = np.isfinite(a), np.isfinite(e)
    pattern = (np.isnan(a) != np.isnan(e)) | (fa != fe) | (~fa & ~fe & ~np.isnan(a) & (a != e))
    if pattern.any():
        i = tuple(int(k) for k in np.argwhere(pattern)[0])
        return "nan-mismatch", f"at {i}: tapec {a[i]!r}, JAX {e[i]!r}"
    rtol, atol = TOLERANCES[dtype]
    both = fa & fe
    scale = max(1.0, float(np.max(np.abs(e[both]), initial=0.0)))
    bad = both & (np.abs(a - e) > rtol * np.abs(e) + atol * scale)
    if bad.any():
        i = tuple(int(k) for k in np.argwhere(bad)[0])
        return "wrong", f"at {i}: tapec {a[i]!r}, JAX {e[i]!r}"
    return None


def _cast(value, dtype):
    if isinstance(value, (list, tuple)):
        return [_cast(v, dtype) for v in value]
    return np.asarray(value).astype(dtype)


def compare(actual, expected, exact, dtype):
    """Lists of arrays; in float32 `exact` (JAX in float64 on the same inputs) also counts."""
    for k, (a, e) in enumerate(zip(actual, expected)):
        found = mismatch(a, e, dtype)
        if found and dtype == "float32" and exact is not None:
            if mismatch(a, _cast(exact[k], np.float32), dtype) is None:
                continue
        if found:
            return found[0], f"output {k}: {found[1]}"
    return None


# --------------------------------------------------------------------------- reference


def _listed(grads):
    return [np.asarray(g) for g in grads]


def checked_quantities(value, grads, jacobian, hvp) -> dict:
    """check -> the reference's arrays: the value for `value` and `function`, the
    gradient for the three gradient checks."""
    value, grads = [np.asarray(value)], _listed(grads)
    return {"value": value, "function": value, "tape": grads, "grad": grads,
            "fn_tape": grads, "jacobian": _listed(jacobian), "hvp": _listed(hvp)}


def jax_reference(program, conventions=False):
    """arrays, directions -> every checked quantity, computed by JAX in one jitted
    function (compiled once per dtype; eager JAX compiles every op for every new shape).

    With TensorFlow's `conventions`, op by op instead: XLA's simplifier folds `0 * x` to
    0 inside a jitted function, which hides the nan these conventions produce (a nan
    maximum's gradient)."""
    jprogram, jf = jax_functions(program, conventions)
    argnums = tuple(range(program.n_inputs))

    def everything(xs, us):
        grads = jax.grad(jf, argnums)(*xs)
        _, hvp = jax.jvp(lambda *v: jax.grad(jf, argnums)(*v), tuple(xs), tuple(us))
        return jprogram(*xs), grads, jax.jacrev(jprogram, argnums)(*xs), hvp

    compiled = jax.jit(everything)

    def results(arrays, directions):
        xs = [jnp.asarray(a) for a in arrays]
        us = [jnp.asarray(u) for u in directions]
        if conventions:
            with jax.disable_jit():
                value, grads, jacobian, hvp = everything(xs, us)
        else:
            value, grads, jacobian, hvp = compiled(xs, us)
        return checked_quantities(value, grads, jacobian, hvp)
    return results


# --------------------------------------------------------------------------- tapec


def _numpy(values):
    return [None if v is None else np.asarray(v.numpy()) for v in values]


def _as_list(result):
    return list(result) if isinstance(result, (list, tuple)) else [result]


def tape_gradient(f):
    def gradient(*xs):
        with tf.GradientTape() as tape:
            tape.watch(list(xs))
            y = f(*xs)
        return tape.gradient(y, list(xs), unconnected_gradients="zero")
    return gradient


def tapec_hvp(f, arrays, directions):
    xs = [tf.constant(a) for a in arrays]
    with tf.GradientTape() as outer:
        outer.watch(xs)
        with tf.GradientTape() as inner:
            inner.watch(xs)
            y = f(*xs)
        grads = inner.gradient(y, xs, unconnected_gradients="zero")
        total = sum(tf.reduce_sum(g * tf.constant(u)) for g, u in zip(grads, directions))
    return _numpy(outer.gradient(total, xs, unconnected_gradients="zero"))


def tapec_jacobian(program, arrays):
    xs = [tf.constant(a) for a in arrays]
    with tf.GradientTape() as tape:
        tape.watch(xs)
        y = program(*xs)
    return _numpy(tape.jacobian(y, xs, unconnected_gradients="zero"))


def tapec_runners(program):
    """check -> a function of arrays; compiled forms are built once, so the second call
    (inputs B) replays what the first call (inputs A) compiled."""
    prog, f = program.program, program.f
    argnums = tuple(range(program.n_inputs))
    grad_fn, traced = tf.grad(f, argnums), tf.function(prog)
    traced_tape = tf.function(tape_gradient(f))

    def consts(arrays):
        return [tf.constant(a) for a in arrays]
    return {
        "value": lambda arrays: _numpy([prog(*consts(arrays))]),
        "tape": lambda arrays: _numpy(tape_gradient(f)(*consts(arrays))),
        "grad": lambda arrays: _numpy(_as_list(grad_fn(*arrays))),
        "function": lambda arrays: _numpy([traced(*arrays)]),
        "fn_tape": lambda arrays: _numpy(traced_tape(*consts(arrays))),
        "jacobian": lambda arrays: tapec_jacobian(prog, arrays),
    }


# --------------------------------------------------------------------------- one program


@dataclass
class Finding:
    check: str
    dtype: str
    kind: str                 # a class from FAILURES, or "documented difference"
    detail: str
    program: Program
    arrays: list
    tapec: object = None
    jax: object = None
    culprit: str = ""         # the op (Step.kind) the finding was isolated to
    reason: str = ""          # for documented differences
    extra: dict = field(default_factory=dict)


def _quiet():
    warnings.simplefilter("ignore")
    return np.errstate(all="ignore")


def run_dtype(program, first, second, directions, dtype, checks=None):
    """Findings for one dtype: every check on inputs A (`first`), the compiled ones again
    on inputs B (`second`)."""
    cast = [a.astype(dtype) for a in first], [a.astype(dtype) for a in second]
    u = [d.astype(dtype) for d in directions]
    reference = jax_reference(program)
    want = {which: reference(arrays, u) for which, arrays in zip("AB", cast)}

    def exact(which):               # JAX in float64 on the float32 inputs, when needed
        if dtype == "float64":
            return None
        if which + "64" not in want:
            arrays = cast["AB".index(which)]
            want[which + "64"] = reference([a.astype(np.float64) for a in arrays],
                                           [d.astype(np.float64) for d in u])
        return want[which + "64"]
    runners = tapec_runners(program)
    runners["hvp"] = lambda arrays: tapec_hvp(program.f, arrays, u)
    findings = []
    conventional = {}

    def under_tf_conventions(which, check, got):
        """tapec agrees with JAX given TensorFlow's derivative conventions."""
        if not conventional:
            conventional["reference"] = jax_reference(program, conventions=True)
        if which not in conventional:
            conventional[which] = conventional["reference"](cast["AB".index(which)], u)
        return compare(got, conventional[which][check], None, dtype) is None

    def as_tensorflow(which, check, got):
        """tapec agrees with TensorFlow itself (when installed and it runs the program)."""
        if "tf" not in conventional:
            conventional["tf"] = tensorflow_reference(program)
        if conventional["tf"] is None:
            return False
        if "tf" + which not in conventional:
            try:
                conventional["tf" + which] = conventional["tf"](cast["AB".index(which)], u)
            except Exception:                     # noqa: BLE001 - TensorFlow rejected it
                conventional["tf" + which] = None
        expected = conventional["tf" + which]
        return expected is not None and compare(got, expected[check], None, dtype) is None
    for check, run in runners.items():
        if checks and check not in checks:
            continue
        got = {}
        for which, arrays in zip("AB", cast):
            if which == "B" and check in ("value", "jacobian", "hvp"):
                continue                          # not compiled once and replayed
            try:
                got[which] = run(arrays)
            except Exception as error:            # noqa: BLE001 - a crash is a finding
                text = "".join(traceback.format_exception_only(error)).strip()
                findings.append(Finding(check, dtype, "crash", text, program, arrays))
                break
            found = compare(got[which], want[which][check], None, dtype)
            if found is not None and dtype == "float32":
                found = compare(got[which], want[which][check], exact(which)[check], dtype)
            if found is None:
                continue
            kind, detail = found
            if check != "value" and check != "function" and \
                    under_tf_conventions(which, check, got[which]):
                findings.append(Finding(check, dtype, "documented difference", detail, program,
                                        arrays, got[which], want[which][check],
                                        reason=CONVENTIONS))
                break
            if check == "jacobian" and kind == "nan-mismatch" and \
                    exact_where_rows_multiply_nan(program, cast["AB".index(which)],
                                                  got[which], want[which][check], dtype):
                findings.append(Finding(check, dtype, "documented difference", detail, program,
                                        arrays, got[which], want[which][check],
                                        reason=EXACT_JACOBIAN))
                break
            if as_tensorflow(which, check, got[which]):
                findings.append(Finding(check, dtype, "matches TensorFlow", detail, program,
                                        arrays, got[which], want[which][check],
                                        reason="JAX's result differs from TensorFlow's; "
                                               "tapec's is TensorFlow's"))
                break
            if which == "B" and compare(got["B"], got["A"], None, dtype) is None and \
                    compare(want["A"][check], want["B"][check], None, dtype) is not None:
                kind, detail = "stale", f"the call on B returned A's result; {detail}"
            findings.append(Finding(check, dtype, kind, detail, program, arrays,
                                    got[which], want[which][check]))
            break
    return findings


def run_program(program, seed, dtypes=DTYPES, checks=None):
    first = singular_inputs(program, seed)
    second = singular_inputs(program, seed + 1)
    directions = [np.random.default_rng([seed, 3]).normal(size=a.shape) for a in first]
    findings = []
    with _quiet(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for dtype in dtypes:
            findings += run_dtype(program, first, second, directions, dtype, checks)
    return findings


# --------------------------------------------------------------------------- attribution

# Step.kind -> (test on the step's argument values, reason[, the checks it covers]):
# where JAX documents a behaviour that differs from TensorFlow's (which tapec follows),
# or where no library's answer is the reference (a product's Hessian at degenerate
# points).
def _tie(args, c):
    b = args[1] + c if len(args) > 1 else args[0]
    return bool(np.any(args[0] == b))


def _nan(args):
    return any(bool(np.any(np.isnan(a))) for a in args)


_ABS = (lambda args, step: bool(np.any(args[0] == 0)),
        "at 0: JAX's abs derivative is 1 (its FAQ); TensorFlow's (tapec's) is sign(0) = 0")
_TIE = "JAX splits the gradient of a tie equally; TensorFlow (tapec) gives it to the first " \
       "argument, and where an argument is nan to the other (greater_equal is False)"
_NAN_REDUCE = "a slice holding nan: TensorFlow's gradient (tapec's) is nan (no element equals " \
              "the nan result: 0/0); JAX's is 0"
CONVENTIONS = "JAX's derivative conventions (abs at 0, ties of maximum/minimum, clip at its " \
              "bounds, nan maxima) differ from TensorFlow's; tapec matches JAX given TensorFlow's"
_PROD_HESSIAN = "the product's second derivative where its input holds two zeros, or a " \
                "zero and an inf or nan: TensorFlow's cumprod gradient misses terms there " \
                "(0 where the exact sum has inf or nan), and the exact sum of products " \
                "with inf and 0 has no order-free IEEE value: tapec, TensorFlow and JAX " \
                "each give nan or inf at other entries (docs/singular_points.md)"


def _degenerate_product(x):
    x = np.asarray(x, np.float64)
    zeros = np.count_nonzero(x == 0)
    return zeros >= 2 or (zeros >= 1 and not np.all(np.isfinite(x)))


DOCUMENTED = {
    "maximum": (lambda args, step: _tie(args, _offset(step)) or _nan(args), _TIE),
    "minimum": (lambda args, step: _tie(args, _offset(step)) or _nan(args), _TIE),
    "clip": (lambda args, step: bool(np.any((args[0] == step.kink[1]) |
                                            (args[0] == step.kink[2]))),
             "at a bound: jnp.clip (maximum then minimum) halves the gradient; "
             "TensorFlow's clip_by_value (tapec) passes it whole"),
    "abs": _ABS,
    "builtin_abs": _ABS,
    "reduce_max": (lambda args, step: _nan(args), _NAN_REDUCE),
    "reduce_min": (lambda args, step: _nan(args), _NAN_REDUCE),
    # second derivatives only (first derivatives are TensorFlow's exclusive products)
    "reduce_prod": (lambda args, step: _degenerate_product(args[0]), _PROD_HESSIAN, ("hvp",)),
}


def _offset(step):
    return float(step.code.rsplit("+", 1)[1].rstrip(")")) if "+" in step.code else 0.0


def _isolated(program, k, values):
    """Step k alone: a one-step program whose inputs are that step's argument values."""
    step = program.steps[k]
    unique = list(dict.fromkeys(step.args))
    args = tuple(unique.index(a) for a in step.args)
    shapes = tuple(tuple(values[a].shape) for a in unique)
    alone = Program(shapes, (replace(step, args=args),), ("x", "y", "z"))
    return alone, [np.array(values[a], dtype=np.float64) for a in unique]


def _used_steps(program):
    return [k for k in range(len(program.steps)) if program._used()[program.n_inputs + k]]


def _reproduces(candidate, arrays, finding):
    """The same check and dtype fail on `candidate` (inputs A twice: no staleness)."""
    second = arrays if finding.kind != "stale" else \
        [np.random.default_rng(1).uniform(-1.5, 1.5, size=a.shape) for a in arrays]
    directions = [np.random.default_rng(5).normal(size=a.shape) for a in arrays]
    with _quiet(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            found = run_dtype(candidate, arrays, second, directions, finding.dtype,
                              (finding.check,))
        except Exception:                          # noqa: BLE001 - JAX rejected it
            return None
    same = [f for f in found if f.kind == finding.kind]
    return same[0] if same else None


def attribute(finding, first):
    """Isolate the finding to one op: the first used step whose prefix program fails the
    same check, then that step alone on its argument values; mark documented differences."""
    program = finding.program
    with _quiet(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            values = program.evaluate([a.astype(finding.dtype) for a in first])
        except Exception:                              # noqa: BLE001
            values = None
    for k in _used_steps(program):
        prefix = replace(program, steps=program.steps[:k + 1])
        again = _reproduces(prefix, first, finding)
        if again is None:
            continue
        best = replace(again, program=prefix, arrays=first)
        if values is not None:
            alone, args = _isolated(program, k, values)
            isolated = _reproduces(alone, args, finding)
            if isolated is not None:
                best = replace(isolated, arrays=args)
        best.culprit = program.steps[k].kind
        rule = DOCUMENTED.get(best.culprit)
        if rule and values is not None and (len(rule) < 3 or best.check in rule[2]) and \
                rule[0]([values[a] for a in program.steps[k].args], program.steps[k]):
            best.kind, best.reason = "documented difference", rule[1]
        return best
    finding.culprit = "?"
    return finding


# Step kind -> which argument a sine or cosine is taken of.
PERIODIC = {"sin": 0, "cos": 0, "np_sin": 0, "expm1": 0, "divide_sin": 1}
# Beyond these magnitudes one ulp of the argument moves a sine by more than the
# tolerance: 2^26 in float64 (ulp 1.5e-8), 2^12 in float32 (ulp 4.9e-4).
PERIODIC_LIMIT = {"float64": 2.0 ** 26, "float32": 2.0 ** 12}
ILL_CONDITIONED = "a sine or cosine of an argument so large that one ulp of it changes " \
                  "the result beyond the tolerance: libraries legitimately differ"


def ill_conditioned(finding) -> bool:
    """The program takes a sine or cosine of a huge finite value on the inputs it failed
    on (sin(cosh(200)) = sin(3.6e86)): neither answer is wrong."""
    program = finding.program
    if not getattr(program, "steps", ()):
        return False
    with _quiet(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            values = program.evaluate([np.asarray(a, finding.dtype) for a in finding.arrays])
        except Exception:                              # noqa: BLE001
            return False
    limit = PERIODIC_LIMIT[finding.dtype]
    for k in _used_steps(program):
        step = program.steps[k]
        if step.kind in PERIODIC:
            argument = np.asarray(values[step.args[PERIODIC[step.kind]]], np.float64)
            finite = argument[np.isfinite(argument)]
            if finite.size and np.max(np.abs(finite)) >= limit:
                return True
    return False


# --------------------------------------------------------------------------- campaign


def _text(value):
    if value is None:
        return None
    return [None if v is None else np.asarray(v).tolist() for v in value]


def report(finding):
    """A standalone reproducer with both answers."""
    arrays = [np.asarray(a, dtype=finding.dtype) for a in finding.arrays]
    lines = [f"# {finding.kind} in {finding.check} ({finding.dtype}), op "
             f"{finding.culprit}: {finding.detail}"]
    if finding.reason:
        lines.append(f"# documented difference: {finding.reason}")
    lines += ["import numpy as np", "from numpy import inf, nan", "", finding.program.source]
    for name, a in zip(finding.program.names, arrays):
        lines.append(f"{name} = np.array({a.tolist()!r}, dtype=np.{finding.dtype})")
    lines += [f"# tapec: {_text(finding.tapec)}", f"# JAX:   {_text(finding.jax)}"]
    return "\n".join(lines)


ATTRIBUTIONS = 12          # findings isolated per (class, check, dtype); the rest counted


class Tally:
    """Counts per class, and per distinct cause the smallest reproducer."""

    def __init__(self, attribute_findings=True, out=None, failing=None):
        self.out, self.failing_path = out, failing       # written every 50 programs
        self.counts, self.groups, self.failing, self.programs = {}, {}, [], 0
        self.attributed, self.attribute_findings = {}, attribute_findings
        self.started = time.time()

    def add(self, program, input_seed):
        self.programs += 1
        try:
            findings = run_program(program, input_seed)
        except Exception as error:                # noqa: BLE001 - JAX's side failed
            findings = [Finding("harness", "-", "harness", repr(error), program, [])]
        if findings:                          # a fresh Program pickles (no namespace)
            self.failing.append((Program(program.input_shapes, program.steps,
                                         program.input_names), input_seed))
        for finding in findings:
            if finding.kind in ("wrong", "nan-mismatch") and ill_conditioned(finding):
                finding.kind, finding.reason = "ill-conditioned", ILL_CONDITIONED
            coarse = (finding.kind, finding.check, finding.dtype)
            if self.attribute_findings and finding.kind != "harness" and \
                    self.attributed.get(coarse, 0) < ATTRIBUTIONS:
                self.attributed[coarse] = self.attributed.get(coarse, 0) + 1
                # the inputs it failed on: A or B (each drawn with singular points)
                finding = attribute(finding, [np.asarray(a, np.float64)
                                              for a in finding.arrays])
            elif finding.kind != "harness":
                finding.culprit = "(not isolated)"
            self.counts[finding.kind] = self.counts.get(finding.kind, 0) + 1
            key = (finding.kind, finding.check, finding.dtype, finding.culprit)
            size = (len(finding.program.steps), sum(np.size(a) for a in finding.arrays))
            old = self.groups.get(key)
            text = report(finding) if old is None or size < old[0] else old[1]
            self.groups[key] = (min(size, old[0]) if old else size, text,
                                (old[2] if old else 0) + 1)
        if self.programs % 50 == 0:
            self.save()
        if self.programs % 100 == 0:
            print(f"{self.programs} programs, {time.time() - self.started:.0f} s, "
                  f"{self.counts}", file=sys.stderr, flush=True)

    def save(self):
        if self.out:
            with open(self.out, "w") as stream:
                json.dump(self.summary(), stream, indent=1)
        if self.failing_path:
            with open(self.failing_path, "wb") as stream:
                pickle.dump(self.failing, stream)

    def summary(self):
        return {"programs": self.programs, "seconds": round(time.time() - self.started, 1),
                "counts": self.counts,
                "groups": [{"kind": k[0], "check": k[1], "dtype": k[2], "op": k[3],
                            "count": v[2], "reproducer": v[1]}
                           for k, v in sorted(self.groups.items())]}


class SourceProgram:
    """A program given as source (a reproducer): what `run_dtype` needs of a Program."""

    def __init__(self, source, n_inputs):
        self.source, self.n_inputs, self.steps = source, n_inputs, ()
        self.namespace = {"tf": tf, "np": np}
        exec(compile(source, "<reproducer>", "exec"), self.namespace)  # noqa: S102
        self.program, self.f = self.namespace["program"], self.namespace["f"]


def recheck_reproducer(group):
    """The group's reproducer run again (its check and dtype): a Finding, or None."""
    lines = group["reproducer"].splitlines()
    inputs = [k for k, line in enumerate(lines) if " = np.array(" in line and
              line.endswith(f"dtype=np.{group['dtype']})")]
    source = "\n".join(line for line in lines[:inputs[0]] if not line.startswith("#"))
    env = {"np": np, "inf": np.inf, "nan": np.nan}
    arrays = [np.asarray(eval(lines[k].split(" = ", 1)[1], env), dtype=np.float64)  # noqa: S307
              for k in inputs]
    program = SourceProgram(source, len(arrays))
    second = arrays if group["kind"] != "stale" else \
        [np.random.default_rng(1).uniform(-1.5, 1.5, size=a.shape) for a in arrays]
    directions = [np.random.default_rng(5).normal(size=a.shape) for a in arrays]
    with _quiet(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = run_dtype(program, arrays, second, directions, group["dtype"],
                          (group["check"],))
    return found[0] if found else None


def campaign(n, seed, tally):
    """`n` random programs (hypothesis, seeded) through `run_program` into `tally`."""

    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(program=programs(), input_seed=st.integers(0, 2 ** 31))
    def one(program, input_seed):
        tally.add(program, input_seed)

    seeded(seed)(one)()
    return tally


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261125)
    parser.add_argument("--out", default=None, help="write the summary (JSON) here")
    parser.add_argument("--failing", default=None,
                        help="pickle the failing (program, input seed) pairs here")
    parser.add_argument("--recheck", default=None,
                        help="run the pairs pickled by --failing again instead")
    parser.add_argument("--recheck-json", default=None,
                        help="run the reproducers of a summary written by --out again")
    parser.add_argument("--no-attribution", action="store_true")
    options = parser.parse_args(argv)
    if options.recheck_json:
        with open(options.recheck_json) as stream:
            groups = json.load(stream)["groups"]
        for group in groups:
            if group["kind"] not in FAILURES:
                continue
            found = recheck_reproducer(group)
            print(f"{group['kind']} / {group['check']} / {group['dtype']} / {group['op']}: "
                  + ("fixed" if found is None else f"still {found.kind}: {found.detail}"))
        return
    tally = Tally(not options.no_attribution, options.out, options.failing)
    if options.recheck:
        with open(options.recheck, "rb") as stream:
            for program, input_seed in pickle.load(stream):
                tally.add(program, input_seed)
    else:
        campaign(options.programs, options.seed, tally)
    tally.save()
    summary = tally.summary()
    print(f"{summary['programs']} programs in {summary['seconds']} s: {summary['counts']}")
    for group in summary["groups"]:
        print(f"\n== {group['kind']} / {group['check']} / {group['dtype']} / op "
              f"{group['op']}: {group['count']}\n{group['reproducer']}")


if __name__ == "__main__":
    main()
