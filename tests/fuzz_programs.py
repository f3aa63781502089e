"""Random straight-line programs over tapec's differentiable ops (used by test_fuzz.py).

`programs()` is a hypothesis strategy of `Program`s: 1-3 float64 inputs with
broadcasting-compatible shapes (0-d and size-1 dimensions included), then 3-12 steps,
each applying one op to earlier values. A program is Python source, so what a failure
prints is exactly what ran:

    def program(x, y):
        # float64 inputs, shapes x: (3, 1), y: (2,)
        v0 = tf.maximum(x, y + 0.25)
        v1 = tf.reduce_logsumexp(v0, axis=0, keepdims=True)
        v2 = tf.einsum('ij,jk->ik', tf.reshape(v1, (2, 1)), tf.reshape(x, (1, 3)))
        v3 = tf.where(np.array([[True], [False]]), v2, 0.5)  # unused
        v4 = v2[np.array([1, 0, 1])]
        return v4


    def f(x, y):
        return tf.reduce_sum(program(x, y))

Every op is differentiable on its domain by construction (logs and square roots of
`1 + x*x`, exp of tanh, divisions by `1 + x*x`, ...). Ops with kinks (abs, relu, sign,
maximum/minimum, clip, reduce_max/min, norm) record how close a point is to the kink;
`Program.margin(arrays)` is the smallest such distance, so a test can keep finite
differences away from them. Static shapes and magnitude bounds are tracked per value:
a step that would exceed `MAX_SIZE` elements, rank `MAX_RANK` or magnitude
`BOUND_LIMIT` is replaced by a tanh, which keeps finite differences accurate.
"""
import linecache
import math
from dataclasses import dataclass, replace
from functools import cached_property
from itertools import count

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tapec as tf

INPUT_LOW, INPUT_HIGH = -1.5, 1.5     # inputs are drawn uniformly from this range
BOUND_LIMIT = 50.0                    # largest |value| any step may produce
MAX_SIZE = 64                         # largest number of elements of a value
MAX_RANK = 4
OFFSETS = (0.25, -0.5, 0.75, -0.125)  # maximum(a, b + c): c is never 0
SCALES = (2.0, -0.5, 1.5, -3.0)

# Parameter names; the later ones are also names tapec gives its own generated arguments
# (x0 a leaf, seed0 an output gradient, tanh0 a forward value) and temporaries (t0).
INPUT_NAMES = (("x", "y", "z"), ("x0", "x1", "x2"), ("x1", "x0", "seed0"),
               ("tanh0", "multiply0", "grad_fn0"), ("t0", "t1", "t2"), ("t1", "t0_shift", "t2"))

_ids = count()


@dataclass(frozen=True)
class Value:
    """Static facts about a program value: its shape and a bound on its magnitude."""
    shape: tuple
    bound: float


@dataclass(frozen=True)
class Step:
    """One assignment `vK = code.format(*names of args)`.

    `kink` says where the op is not differentiable: ("abs",) at arg 0 == 0,
    ("diff", c) at arg0 == arg1 + c, ("clip", lo, hi), ("top2", kind, axes) at ties of a
    max/min reduction, ("norm", axis) at a zero vector.

    `alt` is another code of the same shape and bound that differs only in a constant
    (a literal, a mask, index values, a written shape): `Program.sibling` uses it."""
    kind: str
    args: tuple
    code: str
    shape: tuple
    bound: float
    kink: tuple = ()
    alt: str | None = None


def _size(shape):
    return int(np.prod(shape, dtype=np.int64))


def _bshape(*shapes):
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        return None


def _array(values):
    """Source of a small NumPy array literal (ints or bools)."""
    return f"np.array({np.asarray(values).tolist()!r})"


def _reduced(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


# --------------------------------------------------------------------------- kinks


def _top2_gap(a, kind, axes):
    axes = tuple(range(a.ndim)) if axes is None else axes
    rest = [i for i in range(a.ndim) if i not in axes]
    rows = np.transpose(a, rest + list(axes)).reshape(-1, _size([a.shape[i] for i in axes]))
    if rows.shape[1] < 2:
        return math.inf
    rows = np.sort(rows, axis=1)
    gap = rows[:, -1] - rows[:, -2] if kind == "max" else rows[:, 1] - rows[:, 0]
    return float(np.min(gap))


def kink_margin(kink, args):
    """Distance of the op's arguments (NumPy arrays) from the op's kink."""
    if not kink:
        return math.inf
    name = kink[0]
    if name == "abs":
        return float(np.min(np.abs(args[0])))
    if name == "diff":
        return float(np.min(np.abs(args[0] - (args[1] + kink[1]))))
    if name == "clip":
        return float(min(np.min(np.abs(args[0] - kink[1])), np.min(np.abs(args[0] - kink[2]))))
    if name == "top2":
        return _top2_gap(args[0], kink[1], kink[2])
    if name == "norm":
        return float(np.min(np.sqrt(np.sum(args[0] * args[0], axis=kink[1]))))
    raise ValueError(kink)


# --------------------------------------------------------------------------- drawing helpers


def _recent(draw, candidates, label):
    """One of `candidates` (value indices); shrinks towards the most recent one."""
    k = draw(st.integers(0, len(candidates) - 1), label=label)
    return candidates[len(candidates) - 1 - k]


def _partner(draw, values, ok):
    candidates = [i for i, v in enumerate(values) if ok(v)]
    return _recent(draw, candidates, "partner") if candidates else None


def _axis_spec(draw, rank):
    """(axis as written, reduced axes as nonnegative ints)."""
    if rank == 0:
        return None, ()
    form = draw(st.sampled_from(["all", "int", "tuple"]), label="axis form")
    if form == "all":
        return None, tuple(range(rank))
    if form == "int":
        axis = draw(st.integers(-rank, rank - 1), label="axis")
        return axis, (axis % rank,)
    axes = draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True),
                label="axes")
    return tuple(axes), tuple(sorted(axes))


def _kw(axis=None, keepdims=False):
    text = "" if axis is None else f", axis={axis!r}"
    return text + (", keepdims=True" if keepdims else "")


# --------------------------------------------------------------------------- op drawers
# Each drawer gets (draw, values, a): the values so far and the index of the first
# argument; it returns a Step (kind filled in later) or None when the op does not apply.


def unary(code, bound, kink=()):
    def build(draw, values, a):
        v = values[a]
        return Step("", (a,), code, v.shape, float(bound(v.bound)), kink)
    return build


def scaled(code, choices, bound):
    def build(draw, values, a):
        c = draw(st.sampled_from(choices), label="constant")
        v = values[a]
        return Step("", (a,), code.replace("C", repr(c)), v.shape, bound(v.bound, abs(c)),
                    alt=code.replace("C", repr(-c)))
    return build


def binary(code, bound, kink=None):
    """`code` uses {0}, {1} and optionally C (an offset); `kink(c)` builds the kink."""
    def build(draw, values, a):
        b = _partner(draw, values, lambda v: _bshape(values[a].shape, v.shape) is not None)
        c = draw(st.sampled_from(OFFSETS), label="offset") if "C" in code else 0.0
        shape = _bshape(values[a].shape, values[b].shape)
        return Step("", (a, b), code.replace("C", repr(c)), shape,
                    float(bound(values[a].bound, values[b].bound, abs(c))),
                    kink(c) if kink else (), alt=code.replace("C", repr(-c)) if c else None)
    return build


def reduction(fn, bound, kink=None):
    """`bound(b, n)`: the result's bound from the input's and the reduced count (None: the
    op does not apply); `kink(axes)` builds the kink."""
    def build(draw, values, a):
        v = values[a]
        axis, axes = _axis_spec(draw, len(v.shape))
        keepdims = draw(st.booleans(), label="keepdims")
        n = _size([v.shape[i] for i in axes])
        b = bound(v.bound, n)
        if b is None:
            return None
        return Step("", (a,), f"{fn}({{0}}{_kw(axis, keepdims)})",
                    _reduced(v.shape, axes, keepdims), float(b), kink(axes) if kink else ())
    return build


def _softmax(fn, bound):
    def build(draw, values, a):
        v = values[a]
        if not v.shape:
            return None
        axis = draw(st.integers(-len(v.shape), len(v.shape) - 1), label="axis")
        other = (axis + 1) % len(v.shape)
        n = max(v.shape[axis], v.shape[other])
        return Step("", (a,), f"{fn}({{0}}, axis={axis})", v.shape, bound(v.bound, n),
                    alt=f"{fn}({{0}}, axis={other})")
    return build


def _divisors(n):
    return [k for k in range(1, n + 1) if n % k == 0]


def _matmul(draw, values, a):
    b = _partner(draw, values, lambda v: True)
    va, vb = values[a], values[b]
    n, m = _size(va.shape), _size(vb.shape)
    form = draw(st.sampled_from(["@", "matmul", "matvec", "vecmat", "dot", "einsum",
                                 "direct"]), label="matmul form")
    if form == "direct":
        sa, sb = va.shape, vb.shape
        if len(sa) >= 2 and len(sb) >= 2 and sa[-1] == sb[-2]:
            batch = _bshape(sa[:-2], sb[:-2])
            if batch is not None:
                return Step("", (a, b), "tf.matmul({0}, {1})", batch + (sa[-2], sb[-1]),
                            va.bound * vb.bound * sa[-1])
        form = "@"
    if form == "dot" and n != m:
        form = "@"
    if form == "matvec" and n % m:
        form = "@"
    if form == "vecmat" and m % n:
        form = "@"
    k = {"dot": n, "matvec": m, "vecmat": n}.get(form)
    if k is None:
        common = [d for d in _divisors(n) if m % d == 0]
        k = draw(st.sampled_from(common), label="inner")
    p, q = n // k, m // k
    bound = va.bound * vb.bound * k

    def reshape(i, shape):
        return f"tf.reshape({{{i}}}, {shape!r})"

    if form == "dot":
        code, shape = f"{reshape(0, (k,))} @ {reshape(1, (k,))}", ()
    elif form == "matvec":
        code, shape = f"tf.linalg.matvec({reshape(0, (p, k))}, {reshape(1, (k,))})", (p,)
    elif form == "vecmat":
        code, shape = f"{reshape(0, (k,))} @ {reshape(1, (k, q))}", (q,)
    elif form == "einsum":
        code = f"tf.einsum('ij,jk->ik', {reshape(0, (p, k))}, {reshape(1, (k, q))})"
        shape = (p, q)
    elif form == "matmul":
        ta = draw(st.booleans(), label="transpose_a")
        tb = draw(st.booleans(), label="transpose_b")
        left = reshape(0, (k, p) if ta else (p, k))
        right = reshape(1, (q, k) if tb else (k, q))
        flags = (", transpose_a=True" if ta else "") + (", transpose_b=True" if tb else "")
        code, shape = f"tf.matmul({left}, {right}{flags})", (p, q)
    else:
        code, shape = f"{reshape(0, (p, k))} @ {reshape(1, (k, q))}", (p, q)
    return Step("", (a, b), code, shape, bound)


def _factor(n):
    primes, d = [], 2
    while n > 1:
        while n % d == 0:
            primes.append(d)
            n //= d
        d += 1
    return primes


def _reshape(draw, values, a):
    v = values[a]
    n = _size(v.shape)
    rank = draw(st.integers(0 if n == 1 else 1, 3), label="rank")
    dims = [1] * rank
    for p in _factor(n):
        dims[draw(st.integers(0, rank - 1), label="slot")] *= p
    shape = tuple(dims)
    written = list(dims)
    if rank and draw(st.booleans(), label="use -1"):
        written[draw(st.integers(0, rank - 1), label="-1 at")] = -1
    return Step("", (a,), f"tf.reshape({{0}}, {tuple(written)!r})", shape, v.bound,
                alt=f"tf.reshape({{0}}, {shape!r})" if -1 in written else None)


def _transpose(draw, values, a):
    v = values[a]
    rank = len(v.shape)
    if rank < 2:
        return None
    if draw(st.booleans(), label="default perm"):
        return Step("", (a,), "tf.transpose({0})", v.shape[::-1], v.bound)
    perm = tuple(draw(st.permutations(range(rank)), label="perm"))
    return Step("", (a,), f"tf.transpose({{0}}, {list(perm)!r})",
                tuple(v.shape[i] for i in perm), v.bound)


def _expand_dims(draw, values, a):
    v = values[a]
    rank = len(v.shape)
    axis = draw(st.integers(-rank - 1, rank), label="axis")
    shape = list(v.shape)
    shape.insert(axis % (rank + 1), 1)
    return Step("", (a,), f"tf.expand_dims({{0}}, {axis})", tuple(shape), v.bound)


def _squeeze(draw, values, a):
    v = values[a]
    ones = [i for i, d in enumerate(v.shape) if d == 1]
    if not ones:
        return None
    if draw(st.booleans(), label="squeeze all"):
        return Step("", (a,), "tf.squeeze({0})", tuple(d for d in v.shape if d != 1), v.bound)
    i = draw(st.sampled_from(ones), label="axis")
    axis = i - len(v.shape) if draw(st.booleans(), label="negative") else i
    return Step("", (a,), f"tf.squeeze({{0}}, axis={axis})", v.shape[:i] + v.shape[i + 1:],
                v.bound)


def _broadcast_to(draw, values, a):
    v = values[a]
    lead = draw(st.lists(st.integers(1, 3), max_size=2), label="lead")
    shape = tuple(lead) + tuple(draw(st.integers(1, 3), label="grow") if d == 1 else d
                                for d in v.shape)
    return Step("", (a,), f"tf.broadcast_to({{0}}, {shape!r})", shape, v.bound)


def _tile(draw, values, a):
    v = values[a]
    if not v.shape:
        return None
    reps = draw(st.lists(st.integers(1, 2), min_size=len(v.shape), max_size=len(v.shape)),
                label="multiples")
    shape = tuple(d * r for d, r in zip(v.shape, reps))
    return Step("", (a,), f"tf.tile({{0}}, {reps!r})", shape, v.bound)


def _concat(draw, values, a):
    v = values[a]
    rank = len(v.shape)
    if not rank:
        return None
    axis = draw(st.integers(-rank, rank - 1), label="axis")
    i = axis % rank

    def fits(w):
        return len(w.shape) == rank and all(d == e for j, (d, e) in
                                            enumerate(zip(v.shape, w.shape)) if j != i)
    b = _partner(draw, values, fits)
    shape = v.shape[:i] + (v.shape[i] + values[b].shape[i],) + v.shape[i + 1:]
    return Step("", (a, b), f"tf.concat([{{0}}, {{1}}], axis={axis})", shape,
                max(v.bound, values[b].bound))


def _stack(draw, values, a):
    v = values[a]
    b = _partner(draw, values, lambda w: w.shape == v.shape)
    rank = len(v.shape)
    axis = draw(st.integers(-rank - 1, rank), label="axis")
    shape = list(v.shape)
    shape.insert(axis % (rank + 1), 2)
    return Step("", (a, b), f"tf.stack([{{0}}, {{1}}], axis={axis})", tuple(shape),
                max(v.bound, values[b].bound))


def _split(draw, values, a):
    v = values[a]
    axes = [i for i, d in enumerate(v.shape) if d > 1]
    if not axes:
        return None
    i = draw(st.sampled_from(axes), label="axis")
    d = v.shape[i]
    pieces = draw(st.sampled_from([1, d] if d % 2 else [2, d]), label="pieces")
    j = draw(st.integers(-pieces, pieces - 1), label="piece")
    shape = v.shape[:i] + (d // pieces,) + v.shape[i + 1:]
    return Step("", (a,), f"tf.split({{0}}, {pieces}, axis={i})[{j}]", shape, v.bound,
                alt=f"tf.split({{0}}, {pieces}, axis={i})[{(j + 1) % pieces}]")


def _dot_t(draw, values, a):
    v = values[a]
    if len(v.shape) < 2:
        return None
    return Step("", (a,), "{0}.T", v.shape[::-1], v.bound)


def _render_item(item):
    if item is Ellipsis:
        return "..."
    if item is None:
        return "None"
    if isinstance(item, slice):
        text = ("" if item.start is None else str(item.start)) + ":" + \
               ("" if item.stop is None else str(item.stop))
        return text + ("" if item.step is None else f":{item.step}")
    return str(int(item))


def render_index(index):
    if not isinstance(index, tuple):
        return _render_item(index)
    if not index:
        return "()"
    parts = [_render_item(i) for i in index]
    return parts[0] + "," if len(parts) == 1 else ", ".join(parts)


def _basic_index(draw, values, a):
    v = values[a]
    index = draw(hnp.basic_indices(v.shape, allow_newaxis=True, allow_ellipsis=True),
                 label="index")
    shape = np.empty(v.shape)[index].shape
    if not _size(shape):
        return None
    return Step("", (a,), f"{{0}}[{render_index(index)}]", tuple(shape), v.bound)


def _int_index(draw, values, a):
    v = values[a]
    rank = len(v.shape)
    if not rank:
        return None
    form = draw(st.sampled_from(["x[i]", "gather", "x[:, i]", "x[i2d]"]), label="form")
    if form == "x[:, i]" and rank < 2:
        form = "x[i]"
    axis = {"x[i]": 0, "x[i2d]": 0, "x[:, i]": 1}.get(form)
    if form == "gather":
        axis = draw(st.integers(0, rank - 1), label="axis")
    d = v.shape[axis]
    n = 4 if form == "x[i2d]" else draw(st.integers(1, 4), label="n")
    idx = np.array(draw(st.lists(st.integers(-d, d - 1), min_size=n, max_size=n),
                        label="indices"))
    if form == "x[i2d]":
        idx = idx.reshape(2, 2)
    shape = np.take(np.empty(v.shape), idx, axis).shape     # x[:, i] is take on axis 1

    def code(idx):
        if form == "gather":
            return f"tf.gather({{0}}, {_array(idx)}, axis={axis})"
        return f"{{0}}[:, {_array(idx)}]" if form == "x[:, i]" else f"{{0}}[{_array(idx)}]"
    other = (idx + 1) % d
    return Step("", (a,), code(idx), tuple(shape), v.bound,
                alt=code(other) if (other != idx % d).any() else None)


def _mask_bits(draw, shape, label):
    bits = draw(st.lists(st.booleans(), min_size=_size(shape), max_size=_size(shape)),
                label=label)
    return np.array(bits, dtype=bool).reshape(shape)


def _bool_mask(draw, values, a):
    v = values[a]
    if not v.shape:
        return None
    k = draw(st.integers(1, len(v.shape)), label="mask rank")
    mask = _mask_bits(draw, v.shape[:k], "mask")
    if not mask.any():
        return None
    shape = np.empty(v.shape)[mask].shape
    other = np.roll(mask.ravel(), 1).reshape(mask.shape)     # as many True: same shape
    return Step("", (a,), f"{{0}}[{_array(mask)}]", tuple(shape), v.bound,
                alt=f"{{0}}[{_array(other)}]" if (other != mask).any() else None)


def _where(draw, values, a):
    v = values[a]
    if draw(st.booleans(), label="constant branch"):
        b, shape, other = None, v.shape, 0.5
    else:
        b = _partner(draw, values, lambda w: _bshape(v.shape, w.shape) is not None)
        shape = _bshape(v.shape, values[b].shape)
        other = values[b].bound
    # the mask broadcasts: some dimensions 1, maybe fewer leading ones
    drop = draw(st.integers(0, len(shape)), label="mask drops")
    mshape = tuple(1 if draw(st.booleans(), label="mask 1") else d for d in shape[drop:])
    mask = _mask_bits(draw, mshape, "mask")
    shape = _bshape(shape, mshape)
    if b is None:
        return Step("", (a,), f"tf.where({_array(mask)}, {{0}}, 0.5)", shape,
                    max(v.bound, other), alt=f"tf.where({_array(~mask)}, {{0}}, 0.5)")
    return Step("", (a, b), f"tf.where({_array(mask)}, {{0}}, {{1}})", shape,
                max(v.bound, other), alt=f"tf.where({_array(~mask)}, {{0}}, {{1}})")


def _clip(draw, values, a):
    v = values[a]
    lo = draw(st.sampled_from([-1.0, -0.25, 0.5]), label="lo")
    hi = lo + draw(st.sampled_from([0.5, 1.25]), label="width")
    return Step("", (a,), f"tf.clip_by_value({{0}}, {lo!r}, {hi!r})", v.shape,
                max(abs(lo), abs(hi)) + 0.25, ("clip", lo, hi),
                alt=f"tf.clip_by_value({{0}}, {lo - 0.25!r}, {hi + 0.25!r})")


def _norm(draw, values, a):
    v = values[a]
    rank = len(v.shape)
    axis = None if not rank or draw(st.booleans(), label="all") else \
        draw(st.integers(-rank, rank - 1), label="axis")
    axes = tuple(range(rank)) if axis is None else (axis % rank,)
    n = _size([v.shape[i] for i in axes])
    shape = _reduced(v.shape, axes, False)
    return Step("", (a,), f"tf.norm({{0}}{_kw(axis)})", shape, v.bound * math.sqrt(n),
                ("norm", axis))


def _prod_bound(b, n):
    return b ** n if n <= 4 else None


def _log1p_sq(b):
    return math.log1p(b * b)


# Ordered roughly from simplest to most involved: hypothesis shrinks towards the first.
DRAWERS = {
    "add": binary("{0} + {1}", lambda a, b, c: a + b),
    "multiply": binary("{0} * {1}", lambda a, b, c: a * b),
    "subtract": binary("tf.subtract({0}, {1})", lambda a, b, c: a + b),
    "sin": unary("tf.sin({0})", lambda b: min(b, 1.0)),
    "cos": unary("tf.cos({0})", lambda b: 1.0),
    "tanh": unary("tf.tanh({0})", lambda b: 1.0),
    "negative": unary("-{0}", lambda b: b),
    "scale": scaled("C * {0}", SCALES, lambda b, c: b * c),
    "shift": scaled("{0} + C", OFFSETS, lambda b, c: b + c),
    "square": unary("tf.square({0})", lambda b: b * b),
    "cube": unary("{0} ** 3", lambda b: b ** 3),
    "sigmoid": unary("tf.sigmoid({0})", lambda b: 1.0),
    "softplus": unary("tf.nn.softplus({0})", lambda b: b + math.log(2)),
    "log_sigmoid": unary("tf.math.log(tf.sigmoid({0}))", lambda b: b + math.log(2)),
    "exp_tanh": unary("tf.exp(tf.tanh({0}))", lambda b: math.e),
    "exp_neg_sq": unary("tf.exp(-{0} * {0})", lambda b: 1.0),
    "expm1": unary("tf.math.expm1(tf.sin({0}))", lambda b: math.e - 1),
    "log": unary("tf.math.log(1.0 + {0} * {0})", _log1p_sq),
    "log1p": unary("tf.math.log1p(tf.square({0}))", _log1p_sq),
    "sqrt": unary("tf.sqrt({0} * {0} + 0.5)", lambda b: math.sqrt(b * b + 0.5)),
    "atan": unary("tf.atan({0})", lambda b: math.pi / 2),
    "asin": unary("tf.asin(0.9 * tf.tanh({0}))", lambda b: math.pi / 2),
    "acos": unary("tf.acos(0.9 * tf.tanh({0}))", lambda b: math.pi),
    "tan": unary("tf.tan(tf.tanh({0}))", lambda b: math.tan(1.0)),
    "sinh": unary("tf.sinh({0})", lambda b: math.sinh(min(b, 700.0))),
    "cosh": unary("tf.cosh({0})", lambda b: math.cosh(min(b, 700.0))),
    "erf": unary("tf.math.erf({0})", lambda b: 1.0),
    "reciprocal": unary("1.0 / (1.0 + {0} * {0})", lambda b: 1.0),
    "np_sin": unary("np.sin({0})", lambda b: min(b, 1.0)),
    "np_exp_tanh": unary("np.exp(np.tanh({0}))", lambda b: math.e),
    "abs": unary("tf.abs({0})", lambda b: b, ("abs",)),
    "builtin_abs": unary("abs({0})", lambda b: b, ("abs",)),
    "relu": unary("tf.nn.relu({0})", lambda b: b, ("abs",)),
    "sign": binary("tf.sign({0}) * {1}", lambda a, b, c: b, lambda c: ("abs",)),
    "divide": binary("{0} / (1.0 + {1} * {1})", lambda a, b, c: a),
    "divide_sin": binary("tf.divide({0}, 1.5 + tf.sin({1}))", lambda a, b, c: 2 * a),
    "pow": binary("tf.pow(1.0 + {0} * {0}, tf.tanh({1}))", lambda a, b, c: 1 + a * a),
    "hypot": binary("tf.sqrt({0} * {0} + {1} * {1} + 0.1)",
                    lambda a, b, c: math.sqrt(a * a + b * b + 0.1)),
    "squared_difference": binary("tf.square({0} - {1})", lambda a, b, c: (a + b) ** 2),
    "maximum": binary("tf.maximum({0}, {1} + C)", lambda a, b, c: max(a, b + c),
                      lambda c: ("diff", c)),
    "minimum": binary("tf.minimum({0}, {1} + C)", lambda a, b, c: max(a, b + c),
                      lambda c: ("diff", c)),
    "clip": _clip,
    "where": _where,
    "reduce_sum": reduction("tf.reduce_sum", lambda b, n: b * n),
    "reduce_mean": reduction("tf.reduce_mean", lambda b, n: b),
    "reduce_logsumexp": reduction("tf.reduce_logsumexp", lambda b, n: b + math.log(n)),
    "reduce_max": reduction("tf.reduce_max", lambda b, n: b,
                            lambda axes: ("top2", "max", axes)),
    "reduce_min": reduction("tf.reduce_min", lambda b, n: b,
                            lambda axes: ("top2", "min", axes)),
    "reduce_prod": reduction("tf.reduce_prod", _prod_bound),
    "np_mean": reduction("np.mean", lambda b, n: b),
    "norm": _norm,
    "softmax": _softmax("tf.nn.softmax", lambda b, n: 1.0),
    "log_softmax": _softmax("tf.nn.log_softmax", lambda b, n: 2 * b + math.log(n)),
    "matmul": _matmul,
    "reshape": _reshape,
    "transpose": _transpose,
    "expand_dims": _expand_dims,
    "squeeze": _squeeze,
    "broadcast_to": _broadcast_to,
    "tile": _tile,
    "concat": _concat,
    "stack": _stack,
    "split": _split,
    "dot_T": _dot_t,
    "basic_index": _basic_index,
    "int_index": _int_index,
    "bool_mask": _bool_mask,
}


def _fits(step):
    return (len(step.shape) <= MAX_RANK and 1 <= _size(step.shape) <= MAX_SIZE
            and step.bound <= BOUND_LIMIT)


# --------------------------------------------------------------------------- programs


@dataclass(frozen=True)
class Program:
    """Input shapes and steps; `source` is the code that runs. `input_names` are the
    parameter names (names like x0 or t0 are also what tapec calls its own generated
    arguments and temporaries: a compiled function must keep them apart)."""
    input_shapes: tuple
    steps: tuple
    input_names: tuple = ("x", "y", "z")

    @property
    def n_inputs(self):
        return len(self.input_shapes)

    @property
    def names(self):
        return list(self.input_names[:self.n_inputs]) + \
            [f"v{i}" for i in range(len(self.steps))]

    @property
    def output_shape(self):
        return self.steps[-1].shape

    def expressions(self):
        names = self.names
        return [step.code.format(*(names[i] for i in step.args)) for step in self.steps]

    @cached_property
    def source(self):
        names = self.names
        params = ", ".join(names[:self.n_inputs])
        shapes = ", ".join(f"{n}: {s}" for n, s in zip(names, self.input_shapes))
        lines = [f"def program({params}):", f"    # float64 inputs, shapes {shapes}"]
        used = self._used()
        for k, (step, expr) in enumerate(zip(self.steps, self.expressions())):
            note = "" if used[self.n_inputs + k] else "  # unused"
            lines.append(f"    {names[self.n_inputs + k]} = {expr}{note}")
        lines += [f"    return {names[-1]}", "", "",
                  f"def f({params}):", f"    return tf.reduce_sum(program({params}))", ""]
        return "\n".join(lines)

    def sibling(self):
        """The same program with every step that has an `alt` written with it: the same
        ops, shapes and wiring, different constants. None when no step has one."""
        if not any(step.alt for step in self.steps):
            return None
        return replace(self, steps=tuple(replace(step, code=step.alt) if step.alt else step
                                         for step in self.steps))

    def _used(self):
        used = [False] * (self.n_inputs + len(self.steps))
        used[-1] = True
        for k in range(len(self.steps) - 1, -1, -1):
            if used[self.n_inputs + k]:
                for i in self.steps[k].args:
                    used[i] = True
        return used

    def __repr__(self):
        return "\n" + self.source

    def _repr_pretty_(self, printer, cycle):
        """How hypothesis prints a falsifying example: the program's source."""
        printer.text(repr(self))

    @cached_property
    def namespace(self):
        filename = f"<fuzz program {next(_ids)}>"
        linecache.cache[filename] = (len(self.source), None,
                                     self.source.splitlines(True), filename)
        namespace = {"tf": tf, "np": np}
        exec(compile(self.source, filename, "exec"), namespace)  # noqa: S102
        return namespace

    @property
    def program(self):
        """The function of tensors returning the last value."""
        return self.namespace["program"]

    @property
    def f(self):
        """reduce_sum of `program`: a scalar function of tensors."""
        return self.namespace["f"]

    def inputs(self, seed):
        rng = np.random.default_rng(seed)
        return [rng.uniform(INPUT_LOW, INPUT_HIGH, size=s) for s in self.input_shapes]

    def evaluate(self, arrays):
        """Every value of the program (inputs first) as NumPy arrays, computed eagerly."""
        env = {"tf": tf, "np": np}
        names = self.names
        for name, a in zip(names, arrays):
            env[name] = tf.constant(a)
        for name, expr in zip(names[self.n_inputs:], self.expressions()):
            env[name] = eval(expr, env)
        return [np.asarray(env[n].numpy()) for n in names]

    def margin(self, arrays, values=None):
        """The smallest distance of any kinked op's arguments from its kink."""
        values = self.evaluate(arrays) if values is None else values
        margins = [kink_margin(s.kink, [values[i] for i in s.args])
                   for s in self.steps if s.kink]
        return min(margins, default=math.inf)

    def reproducer(self, arrays):
        """A standalone script: the program and the inputs it failed on."""
        lines = ["import numpy as np", "import tapec as tf", "", "", self.source, ""]
        for name, a in zip(self.names, arrays):
            lines.append(f"{name} = tf.constant(np.array({np.asarray(a).tolist()!r}))")
        return "\n".join(lines)


@st.composite
def programs(draw, min_steps=3, max_steps=12, max_inputs=3):
    """Programs of `min_steps`..`max_steps` steps over 1..`max_inputs` float64 inputs."""
    n_inputs = draw(st.integers(1, max_inputs), label="inputs")
    shapes = draw(hnp.mutually_broadcastable_shapes(
        num_shapes=n_inputs, min_dims=0, max_dims=3, min_side=1, max_side=3),
        label="shapes").input_shapes
    values = [Value(tuple(s), INPUT_HIGH) for s in shapes]
    steps = []
    kinds = list(DRAWERS)
    for _ in range(draw(st.integers(min_steps, max_steps), label="steps")):
        # half the steps continue from the latest value (long live chains), the others
        # start from any earlier one (fan-out, unused values)
        a = len(values) - 1
        if draw(st.booleans(), label="branch"):
            a = _recent(draw, list(range(len(values))), "argument")
        kind = draw(st.sampled_from(kinds), label="op")
        step = DRAWERS[kind](draw, values, a)
        if step is None or not _fits(step):
            # the op does not apply to `a` (often a 0-d value): try the most recent
            # value it applies to, then give up for a tanh
            for b in range(len(values) - 1, -1, -1):
                step = DRAWERS[kind](draw, values, b) if b != a else None
                if step is not None and _fits(step):
                    break
        if step is None or not _fits(step):
            step = Step("tanh", (a,), "tf.tanh({0})", values[a].shape, 1.0)
        else:
            step = replace(step, kind=kind)
        steps.append(step)
        values.append(Value(step.shape, step.bound))
    names = draw(st.sampled_from(INPUT_NAMES), label="input names")
    return Program(tuple(tuple(s) for s in shapes), tuple(steps), names)
