"""Elementwise fusion (`tapec.simplify.fuse`): fused code computes what unfused code does.

Most tests build IR directly: placeholders wrapped as symbolic tensors, public ops
applied inside `with builder:`, then the same outputs are emitted twice, as they are
and after `fuse_elementwise`, compiled, and run on the same random arguments. The W3
gradient is recorded on a real tape and captured where the simplifier hands it to
fusion.
"""
import re

import numpy as np
import pytest

import tapec as tf
from tapec import simplify
from tapec.codegen.emit import compile_function, emit
from tapec.ir.nodes import Builder, topological_order
from tapec.ops.shape import CONSTANT, PLACEHOLDER
from tapec.simplify import fuse
from tapec.tensor import Tensor

sympy = pytest.importorskip("sympy")


# --- helpers -------------------------------------------------------------------------

def build(fn, *specs):
    """IR outputs, feeds and builder of `fn` applied to placeholders of (shape, dtype)."""
    builder = Builder()
    feeds, tensors = {}, []
    with builder:
        for k, (shape, dtype) in enumerate(specs):
            dtype = np.dtype(dtype)
            node = builder.node(PLACEHOLDER, (), {"slot": k, "shape": shape, "dtype": dtype.str},
                                shape, dtype)
            feeds[node] = ("tape", k)
            tensors.append(Tensor._symbolic(node))
        result = fn(*tensors)
    results = result if isinstance(result, (tuple, list)) else [result]
    return [t._node for t in results], feeds, builder


def fused_nodes(outputs, feeds):
    return [n for n in topological_order(outputs, is_leaf=lambda n: n in feeds)
            if n.op is fuse.FUSED]


def compiled(outputs, feeds):
    source, keys = emit(outputs, feeds)
    return compile_function(source, "gradient"), source, keys


def pair(fn, *specs):
    """(unfused function, fused function, fused source, fused outputs, feeds)."""
    outputs, feeds, builder = build(fn, *specs)
    plain, _, keys = compiled(outputs, feeds)
    with builder:
        new = fuse.fuse_elementwise(outputs, feeds, builder)
    fused, source, fused_keys = compiled(new, feeds)
    assert fused_keys == keys
    return plain, fused, source, new, feeds


def random_args(specs, seed=0, low=-2.0, high=2.0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(low, high, shape).astype(dtype) for shape, dtype in specs]


def assert_close(fused, plain, rtol):
    """Elementwise rtol, plus an atol of 16 ulps of the array's largest magnitude: a
    reassociated sum that cancels to ~0 differs by ulps of its terms, not of itself."""
    for a, b in zip(fused, plain):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape
        scale = float(np.max(np.abs(b[np.isfinite(b)]), initial=1.0))
        atol = 16 * np.finfo(b.dtype).eps * scale
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


# Expressions over x, y (same shape). Domains: inputs lie in [0.1, 2] where noted.
EXPRESSIONS = {
    "poly": lambda x, y: x * x * x + 3 * x * y - y / 2,
    "common factor": lambda x, y: x * tf.sin(y) + x * tf.cos(y) + x * y,
    "t + t": lambda x, y: (x * y + x * y) * tf.exp(y),
    "negations": lambda x, y: -(-(x * y)) - (-x) * tf.tanh(y),
    "tanh grad": lambda x, y: y * (1 - tf.tanh(x) ** 2),
    "sigmoid": lambda x, y: tf.sigmoid(x * y) * (1 - tf.sigmoid(x * y)) + x,
    "log1p expm1": lambda x, y: tf.math.log1p(x * x) * tf.math.expm1(y) - x,
    "erf": lambda x, y: tf.math.erf(x * y) + tf.math.erf(x * y) * y,
    "pow literal": lambda x, y: x ** 3 + y ** 2 + tf.pow(x, 0.5) * y ** -1,
    "pow general": lambda x, y: tf.pow(x, y) * x + y,
    "division": lambda x, y: x / y / (x + y) + 1 / (2 * y) * 2,
    "constant fold": lambda x, y: 0.5 * (2 * x) + 3 * (3 * y) + 0.1 * x * y,
    "min max relu": lambda x, y: tf.maximum(x, y) - tf.minimum(x * 2, y) + tf.nn.relu(x - y),
    "abs sign sqrt": lambda x, y: tf.abs(x - y) * tf.sign(y) + tf.sqrt(x * x + y * y),
    "trig": lambda x, y: tf.sin(x) * tf.cos(x) + tf.atan(x * y) + tf.tan(y / 4),
    "hyperbolic": lambda x, y: tf.sinh(x) * tf.cosh(y) - tf.asin(x / 4) + tf.acos(y / 4),
    "softplus": lambda x, y: tf.nn.softplus(x * y) + tf.exp(-x * x),
    "log sqrt": lambda x, y: tf.math.log(x) * tf.sqrt(y) + tf.math.log(x) / y,
    "square": lambda x, y: tf.square(x + y) - tf.square(x) - 2 * x * y,
    "cancel x - x": lambda x, y: (x + y) - x + y * tf.exp(x),
    "times zero": lambda x, y: x * 0.0 + y * tf.exp(x),
    "w3 forward": lambda x, y: (tf.sin(x) * tf.exp(-x ** 2) + tf.math.log1p(x ** 2) * tf.tanh(x)
                                + tf.sqrt(1 + x ** 2)) * y,
}
POSITIVE = {"log sqrt", "pow literal", "pow general"}


# --- values --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-12), (np.float32, 1e-6)])
@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
def test_fused_values_match_unfused(name, dtype, rtol):
    specs = [((257,), dtype), ((257,), dtype)]
    plain, fused, source, new, feeds = pair(EXPRESSIONS[name], *specs)
    nodes = fused_nodes(new, feeds)
    assert nodes, f"{name}: nothing fused\n{source}"
    low = 0.1 if name in POSITIVE else -2.0
    for seed in range(3):
        args = random_args(specs, seed, low=low)
        with np.errstate(all="ignore"):
            expected, got = plain(*args), fused(*args)
        assert_close(got, expected, rtol)
        if all(n.attrs["exact"] for n in nodes):
            # The exact form is the same ops in the same order: bit for bit equal.
            for a, b in zip(got, expected):
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
def test_float32_stays_float32(name):
    specs = [((64,), np.float32), ((64,), np.float32)]
    plain, fused, source, new, feeds = pair(EXPRESSIONS[name], *specs)
    # A float64 scalar in a float32 expression would promote it; Python literals are weak.
    assert "float64" not in source
    with np.errstate(all="ignore"):
        (value,) = fused(*random_args(specs, low=0.1))
    assert np.asarray(value).dtype == np.float32


def test_exact_form_is_bit_identical_when_simplification_is_rejected():
    # 1 - tanh(x)**2 reusing the forward tanh (an input) is already the cheapest form.
    specs = [((1000,), np.float64), ((1000,), np.float64)]
    plain, fused, source, new, feeds = pair(lambda t, g: g * (1 - t * t) * 0.5, *specs)
    (node,) = fused_nodes(new, feeds)
    assert node.attrs["exact"]
    args = random_args(specs)
    np.testing.assert_array_equal(fused(*args)[0], plain(*args)[0])


def test_a_cheaper_form_is_accepted_and_stays_close():
    specs = [((1000,), np.float64)] * 3
    plain, fused, source, new, feeds = pair(lambda g, a, b: g * a + g * b + g * (a * b),
                                            *specs)
    (node,) = fused_nodes(new, feeds)
    assert not node.attrs["exact"], source
    assert fuse.program_cost((node.attrs["code"], node.attrs["result"])) < 5
    args = random_args(specs)
    assert_close(fused(*args), plain(*args), 1e-12)


# --- structure -----------------------------------------------------------------------

def test_single_ops_are_not_fused():
    for fn in (lambda x: tf.sin(x), lambda x: x * 2.0, lambda x: tf.reduce_sum(x * 2.0),
               lambda x: tf.reduce_sum(tf.exp(x)) * tf.reduce_sum(tf.sin(x))):
        outputs, feeds, builder = build(fn, ((10,), np.float64))
        with builder:
            new = fuse.fuse_elementwise(outputs, feeds, builder)
        assert not fused_nodes(new, feeds)
        assert new == outputs


def test_zero_d_groups_are_left_for_the_scalar_fast_path():
    outputs, feeds, builder = build(lambda x: tf.exp(x) * x + 1.0, ((), np.float64))
    with builder:
        new = fuse.fuse_elementwise(outputs, feeds, builder)
    assert new == outputs


def test_fed_nodes_are_never_absorbed():
    builder = Builder()
    with builder:
        x = builder.node(PLACEHOLDER, (), {"slot": 0, "shape": (8,), "dtype": "<f8"}, (8,),
                         np.dtype(np.float64))
        t = Tensor._symbolic(x)
        inner = tf.exp(t * 2.0)              # an op whose value the tape holds: fed
        out = tf.sin(inner) * inner + t
    feeds = {x: ("tape", 0), inner._node: ("tape", 1)}
    outputs = [out._node]
    with builder:
        new = fuse.fuse_elementwise(outputs, feeds, builder)
    (node,) = fused_nodes(new, feeds)
    assert inner._node in node.inputs and x in node.inputs
    # Nothing below the fed node was recomputed: its own inputs are not used.
    computed = topological_order(new, is_leaf=lambda n: n in feeds)
    assert inner._node.inputs[0] not in computed
    source, _ = emit(new, feeds)
    assert "np.exp" not in source
    fn = compile_function(source, "gradient")
    xs = np.linspace(-1, 1, 8)
    np.testing.assert_array_equal(fn(xs, np.exp(xs * 2.0))[0],
                                  np.sin(np.exp(xs * 2.0)) * np.exp(xs * 2.0) + xs)


def test_a_value_two_outputs_need_is_computed_once():
    def fn(x, y):
        shared = tf.exp(x * y) * y
        return shared + x, shared * tf.sin(x), tf.reduce_sum(shared)
    specs = [((50,), np.float64), ((50,), np.float64)]
    plain, fused, source, new, feeds = pair(fn, *specs)
    assert source.count("np.exp") == 1, source
    args = random_args(specs)
    assert_close(fused(*args), plain(*args), 1e-12)


def test_broadcasting_of_mixed_shapes():
    specs = [((3, 1), np.float64), ((4,), np.float64), ((), np.float64), ((2, 1, 1), np.float64)]
    plain, fused, source, new, feeds = pair(
        lambda a, b, c, d: tf.exp(a * b) * c + tf.tanh(d) * a - b * c, *specs)
    (node,) = fused_nodes(new, feeds)
    assert node.shape == (2, 3, 4)
    args = random_args(specs)
    got, expected = fused(*args), plain(*args)
    assert np.asarray(got[0]).shape == (2, 3, 4)
    assert_close(got, expected, 1e-12)


def _instruction_shapes(node):
    """The broadcast shape of every instruction of a fused node's program."""
    shapes = []
    for _, operands, _ in node.attrs["code"]:
        shapes.append(np.broadcast_shapes(*(
            node.inputs[o[1]].shape if o[0] == "in" else shapes[o[1]] if o[0] == "v" else ()
            for o in operands)))
    return shapes


@pytest.mark.parametrize("fn", [
    lambda y, s, q, X: y * X * s / q,              # the logistic Hessian's weights
    lambda y, s, q, X: (X * y + s * q * X) * s,    # factored: X * (s * (y + s * q))
    lambda y, s, q, X: -(y * tf.exp(s) * X) / (1.0 + q * q),
    lambda y, s, q, X: y * s + X + q * s,          # the two small terms are added first
])
def test_small_factors_combine_before_meeting_a_large_operand(fn):
    specs = [((300,), np.float64)] * 3 + [((40, 300), np.float64)]
    plain, fused, source, new, feeds = pair(fn, *specs)
    (node,) = fused_nodes(new, feeds)
    assert not node.attrs["exact"], source
    on_large = [shape for shape in _instruction_shapes(node) if shape == (40, 300)]
    assert len(on_large) == 1, source     # one op broadcasts onto X; the rest is on (300,)
    args = random_args(specs)
    assert_close(fused(*args), plain(*args), 1e-12)


def test_result_is_broadcast_to_the_node_shape():
    # A hand-made fused node whose program reads only a (3,) input but is (2, 3).
    outputs, feeds, builder = build(lambda a: a, ((3,), np.float64))
    (x,) = outputs
    code = (("mul", (("in", 0), ("lit", "2")), None), ("add", (("v", 0), ("lit", "1")), None))
    attrs = {"shape": (2, 3), "dtype": "<f8", "code": code, "result": ("v", 1), "exact": True,
             "expr": ""}
    node = builder.node(fuse.FUSED, (x,), attrs, (2, 3), np.dtype(np.float64))
    lines = fuse.FUSED.numpy_lines("t0", ["x0"], node)
    assert lines[-1] == "t0 = np.broadcast_to(t0, (2, 3))"
    source, _ = emit([node], feeds)
    value = compile_function(source, "gradient")(np.arange(3.0))[0]
    np.testing.assert_array_equal(value, np.broadcast_to(np.arange(3.0) * 2 + 1, (2, 3)))


def test_templates_that_repeat_an_argument_get_a_temporary():
    specs = [((20,), np.float64)]
    plain, fused, source, new, feeds = pair(lambda x: tf.math.erf(x * 3.0) * x + x, *specs)
    # erf's template reads its argument twice ({0}.dtype): x * 3.0 is computed once.
    assert source.count("* 3.0") == 1, source
    args = random_args(specs)
    np.testing.assert_array_equal(fused(*args)[0], plain(*args)[0])


def test_fused_nodes_hash_cons():
    outputs, feeds, builder = build(lambda x: (tf.exp(x) * x + 1.0, tf.exp(x) * x + 1.0),
                                    ((5,), np.float64))
    with builder:
        a, b = fuse.fuse_elementwise(outputs, feeds, builder)
    assert a is b and a.op is fuse.FUSED


def test_fused_expression_for_printers():
    outputs, feeds, builder = build(lambda t, g: g * (1 - tf.tanh(t) ** 2) + tf.math.log1p(g) / 2,
                                    ((4,), np.float64), ((4,), np.float64))
    with builder:
        (node,) = fuse.fuse_elementwise(outputs, feeds, builder)
    a0, a1 = sympy.symbols("a0 a1")
    expected = a1 * (1 - sympy.tanh(a0) ** 2) + sympy.log(a1 + 1) / 2
    assert sympy.simplify(fuse.fused_expression(node) - expected) == 0


def test_large_expressions_keep_the_exact_form():
    def fn(x):
        acc = x
        for k in range(40):
            acc = acc * x + float(k)         # 80 ops: over MAX_SYMPY_OPS
        return acc
    specs = [((100,), np.float64)]
    plain, fused, source, new, feeds = pair(fn, *specs)
    (node,) = fused_nodes(new, feeds)
    assert node.attrs["exact"]
    args = random_args(specs, low=-0.5, high=0.5)
    np.testing.assert_array_equal(fused(*args)[0], plain(*args)[0])


@pytest.mark.parametrize("fn", [
    lambda x, y: (x + y) - x + tf.exp(y),                    # an input vanishes
    lambda x, y: x * 0.0 + y * tf.exp(x) * y,                # x * 0
    lambda x, y: (x * y + tf.exp(y)) - x * y + y * y * x,    # a whole term cancels
    lambda x, y: (tf.exp(x) + x) - tf.exp(x) + y * y * x,    # a function call vanishes
    lambda x, y: x ** 2 / x + y * y * x + y * y,             # a division cancels
], ids=["input", "times zero", "term", "call", "division"])
def test_cancellations_keep_the_exact_form(fn):
    specs = [((100,), np.float64), ((100,), np.float64)]
    plain, fused, source, new, feeds = pair(fn, *specs)
    assert all(n.attrs["exact"] for n in fused_nodes(new, feeds)), source
    args = random_args(specs)
    args[0][:3] = [np.inf, 0.0, np.nan]
    with np.errstate(all="ignore"):
        for a, b in zip(fused(*args), plain(*args)):
            np.testing.assert_array_equal(a, b)


def test_no_sympy_time_left_still_fuses_exactly(monkeypatch):
    monkeypatch.setattr(fuse.settings, "TIME_BUDGET_SECONDS", 0.0)
    specs = [((100,), np.float64)] * 3
    plain, fused, source, new, feeds = pair(lambda g, a, b: g * a + g * b + g * (a * b),
                                            *specs)
    (node,) = fused_nodes(new, feeds)
    assert node.attrs["exact"]
    args = random_args(specs)
    np.testing.assert_array_equal(fused(*args)[0], plain(*args)[0])


def test_none_outputs_stay_none():
    outputs, feeds, builder = build(lambda x: tf.exp(x) * x + 1.0, ((4,), np.float64))
    with builder:
        new = fuse.fuse_elementwise([None, outputs[0], None], feeds, builder)
    assert new[0] is None and new[2] is None and new[1].op is fuse.FUSED


def test_sympy_time_is_bounded():
    def fn(x, y):
        acc = x + y
        for k in range(2, 18):               # 16 binomials: expand would give 65536 terms
            acc = acc * (x + float(k) * y)
        return acc
    specs = [((10,), np.float64), ((10,), np.float64)]
    plain, fused, source, new, feeds = pair(fn, *specs)
    args = random_args(specs, low=-0.3, high=0.3)
    assert_close(fused(*args), plain(*args), 1e-12)


# --- the cost model ------------------------------------------------------------------

def test_accept_refuses_cosh_for_one_minus_tanh_squared():
    x, t = sympy.symbols("x t")
    assert not fuse.accept(1 - sympy.tanh(x) ** 2, sympy.cosh(x) ** -2)
    assert not fuse.accept(1 - sympy.tanh(x) ** 2, sympy.sech(x) ** 2)
    # Where the original reuses the forward tanh (an input t), recomputing it is refused.
    assert not fuse.accept(1 - t ** 2, sympy.cosh(x) ** -2)
    assert not fuse.accept(1 - t ** 2, 1 - sympy.tanh(x) ** 2)


def test_accept_rules():
    g, a, b, x, y = sympy.symbols("g a b x y")
    E = sympy.Function("exp")
    assert fuse.accept(g * a + g * b + g * a * b, g * (a + b + a * b))   # 5 ops -> 3
    assert not fuse.accept(g * (a + b), g * a + g * b)                   # costlier
    assert not fuse.accept(sympy.Add(x, x, evaluate=False), 2 * x)       # equal cost
    assert not fuse.accept(x * y / y + x, 2 * x)                         # y dropped
    assert not fuse.accept(x ** 2 / x + y, x + y)                        # division cancelled
    assert not fuse.accept(a * b + a * b * x, a * b * x / (1 / (x + 1)) / x)  # new divisor
    assert fuse.accept(a / y + b / y + x / y, (a + b + x) / y)           # same divisor
    assert not fuse.accept(E(x) * E(y) + x, E(x + y) + x)                # new argument
    assert fuse.accept(E(x) * a + E(x) * b, E(x) * (a + b))


def test_program_cost_follows_the_documented_weights():
    x, y = sympy.symbols("x y")
    group = fuse._Group([])

    def cost(e):
        return fuse.program_cost(fuse._lower_cse([e], group))
    assert cost(x + y) == 1 and cost(x * y) == 1 and cost(x - y) == 1 and cost(-x) == 1
    assert cost(x / y) == 4
    assert cost(x ** 2) == 1 and cost(x ** 3) == 2 and cost(x ** 4) == 2 and cost(x ** 5) == 3
    assert cost(x ** -2) == 5
    assert cost(sympy.tanh(x)) == 20 and cost(sympy.exp(x) + sympy.Abs(x)) == 22
    assert cost(sympy.exp(x) * y + sympy.exp(x)) == 22            # cse: exp(x) once


# --- numexpr -------------------------------------------------------------------------

def arithmetic(x, y):
    return (x * y + 0.5) * (x - y) / (y * y + 1.0) + 3.0 * x


@pytest.mark.skipif(fuse.settings.numexpr_module() is None, reason="numexpr not installed")
def test_numexpr_only_from_the_threshold_on():
    small = fuse.settings.NUMEXPR_MIN_SIZE["float64"] - 1
    for n, expect in ((small, False), (small + 1, True)):
        specs = [((n,), np.float64), ((n,), np.float64)]
        plain, fused, source, new, feeds = pair(arithmetic, *specs)
        assert ("numexpr.evaluate" in source) == expect, source
        if expect:
            args = random_args(specs)
            assert_close(fused(*args), plain(*args), 1e-12)


@pytest.mark.skipif(fuse.settings.numexpr_module() is None, reason="numexpr not installed")
@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-12), (np.float32, 1e-6)])
def test_numexpr_path_matches_numpy(monkeypatch, dtype, rtol):
    monkeypatch.setitem(fuse.settings.NUMEXPR_MIN_SIZE, np.dtype(dtype).name, 100)
    specs = [((300,), dtype), ((300,), dtype), ((1,), dtype)]

    def fn(x, y, z):
        shared = x * y - z
        return shared * shared + tf.sqrt(tf.abs(shared)) * 0.1 - arithmetic(x, y) * z
    plain, fused, source, new, feeds = pair(fn, *specs)
    assert "numexpr.evaluate" in source, source
    assert "float64" not in source if dtype == np.float32 else True
    args = random_args(specs)
    got, expected = fused(*args), plain(*args)
    assert np.asarray(got[0]).dtype == dtype
    assert_close(got, expected, rtol)


@pytest.mark.skipif(fuse.settings.numexpr_module() is None, reason="numexpr not installed")
def test_numexpr_falls_back_to_numpy(monkeypatch):
    monkeypatch.setitem(fuse.settings.NUMEXPR_MIN_SIZE, "float64", 10)
    monkeypatch.setitem(fuse.settings.NUMEXPR_MIN_SIZE, "float32", 10)
    specs = [((50,), np.float64), ((50,), np.float64)]
    # erf: numexpr has no such function.
    _, _, source, _, _ = pair(lambda x, y: tf.math.erf(x * y) * x + y * y - x, *specs)
    assert "numexpr" not in source and "math.erf" in source
    # maximum: numexpr computes it in float64 only, so a float32 program stays NumPy.
    specs32 = [((50,), np.float32), ((50,), np.float32)]
    _, fused, source, _, _ = pair(lambda x, y: tf.maximum(x * y, y) * x + y * y - x, *specs32)
    assert "numexpr" not in source
    assert fused(*random_args(specs32))[0].dtype == np.float32
    # exp: NumPy's SIMD loop is faster than numexpr's (NUMEXPR_FUNCTIONS is off).
    _, _, source, _, _ = pair(lambda x, y: tf.exp(x * y) * x + y * y - x, *specs)
    assert "numexpr" not in source and "np.exp" in source
    # Fewer than NUMEXPR_MIN_OPS instructions: not worth a numexpr call.
    _, _, source, _, _ = pair(lambda x, y: x * y + x, *specs)
    assert "numexpr" not in source
    # numexpr missing: NumPy.
    monkeypatch.setattr(fuse.settings, "numexpr_module", lambda: None)
    _, fused, source, _, _ = pair(arithmetic, *specs)
    assert "numexpr" not in source


# --- the W3 gradient, recorded on a tape ---------------------------------------------

def _capture_fusion_input(monkeypatch, record):
    """Run `record()` (which calls tape.gradient) with fusion replaced by a spy that keeps
    the graph the simplifier hands to fusion, and lets it through unfused."""
    seen = {}

    def spy(outputs, feeds, builder):
        seen.update(outputs=list(outputs), feeds=dict(feeds), builder=builder)
        return outputs
    monkeypatch.setattr(fuse, "fuse_elementwise", spy)
    tf.clear_cache()
    with tf.simplify_mode("full"):
        result = record()
    monkeypatch.undo()
    tf.clear_cache()
    return result, seen


def _fed_values(feeds, keys, leaves):
    """Values of the fed nodes, computed from the placeholders (slot -> array) by each
    op's eager implementation: what the tape held when it recorded them."""
    memo = {}

    def value(node):
        if node not in memo:
            if node.op is PLACEHOLDER:
                memo[node] = leaves[node.attrs["slot"]]
            elif node.op is CONSTANT:
                memo[node] = np.asarray(node.attrs["value"], dtype=node.dtype)
            else:
                memo[node] = np.asarray(node.op.impl(*map(value, node.inputs), **node.attrs))
        return memo[node]
    by_key = {k: n for n, k in feeds.items()}
    return [value(by_key[k]) for k in keys]


@pytest.mark.parametrize("phases", ["with algebra", "fusion only"])
def test_w3_gradient_fused_vs_unfused(monkeypatch, phases):
    xv = np.random.default_rng(3).standard_normal(100_000)
    if phases == "fusion only":
        monkeypatch.setattr(simplify, "PHASES", [])

    def record():
        x = tf.constant(xv)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.sin(x) * tf.exp(-x ** 2) + tf.math.log1p(x ** 2) * tf.tanh(x)
                              + tf.sqrt(1 + x ** 2))
        return tape.gradient(y, x)
    gradient, seen = _capture_fusion_input(monkeypatch, record)
    outputs, feeds, builder = seen["outputs"], seen["feeds"], seen["builder"]
    plain, _, keys = compiled(outputs, feeds)
    with builder:
        new = fuse.fuse_elementwise(outputs, feeds, builder)
    fused, source, fused_keys = compiled(new, feeds)
    # The fused kernel may read fed values the unfused code does not: the tape's sin(x),
    # for cos(x) = sin(x) / tan(x) (fuse/trig.py).
    assert set(keys) <= set(fused_keys) and fused_nodes(new, feeds)
    (slot,) = {n.attrs["slot"] for n in feeds if n.op is PLACEHOLDER}     # x, the one leaf
    expected = plain(*_fed_values(feeds, keys, {slot: xv}))
    got = fused(*_fed_values(feeds, fused_keys, {slot: xv}))
    assert_close(got, expected, 1e-12)
    assert_close(got, [gradient.numpy()], 1e-12)
    # d/dx of the W3 sum, written out by hand.
    s = np.sqrt(1 + xv ** 2)
    by_hand = (np.cos(xv) * np.exp(-xv ** 2) - 2 * xv * np.sin(xv) * np.exp(-xv ** 2)
               + 2 * xv / (1 + xv ** 2) * np.tanh(xv) + np.log1p(xv ** 2) / np.cosh(xv) ** 2
               + xv / s)
    np.testing.assert_allclose(got[0], by_hand, rtol=1e-9, atol=1e-12)
    # Speed is measured by `tapec bench` (W3), never asserted by a test.


def test_engine_uses_fusion_in_full_mode():
    xv = np.linspace(-1, 1, 1000)
    x = tf.constant(xv)
    results = {}
    for mode in ("off", "full"):
        tf.clear_cache()
        with tf.simplify_mode(mode):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = tf.reduce_sum(tf.tanh(x) * tf.exp(x) + x * x * x)
            g = tape.gradient(y, x)
        results[mode] = (g.numpy(), tf.generated_source(g))
    tf.clear_cache()
    assert_close([results["full"][0]], [results["off"][0]], 1e-12)
    def statements(source):
        return [line for line in source.splitlines() if re.match(r"\s+\w+ = ", line)]
    # The elementwise tail of the gradient is one fused statement in full mode.
    assert len(statements(results["full"][1])) < len(statements(results["off"][1]))
    assert any(line.count(" * ") >= 2 for line in statements(results["full"][1]))
