"""The miss path of long programs: the compact form of generated code, and the
simplifier's shortcuts (rules skipped where they cannot fire, settled subgraphs).

Each shortcut must leave results bit for bit as they were: the compact form is compared
with the statement-per-value form of the same graph, and the rule shortcuts with the
unfiltered rules."""
from __future__ import annotations

import numpy as np
import pytest

import tapec as tf
from tapec.codegen import emit as emit_module
from tapec.codegen import expressions
from tapec.codegen.expressions import ATOM, LOOSEST, PLACEHOLDERS, POWER, PRODUCT, SUM, UNARY
from tapec.simplify import PHASES, passes


def _gradient_bits(step, x, compact):
    """The gradient `step` computes at x (bytes), and its source, in the compact form or
    in the statement-per-value form."""
    saved = emit_module.COMPACT_FROM
    emit_module.COMPACT_FROM = 0 if compact else 10 ** 9
    try:
        tf.clear_cache()
        g = step(x)
        return np.asarray(g.numpy()).tobytes(), tf.generated_source(g)
    finally:
        emit_module.COMPACT_FROM = saved
        tf.clear_cache()


def _chain(body, n):
    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x
            for _ in range(n):
                y = body(y)
        return tape.gradient(y, x)
    return step


BODIES = {
    "w8": lambda y: tf.sin(y) * 0.5 + y * 0.3,
    "quotients": lambda y: (y - tf.cos(y) * 0.25) / (y * y + 1.5) - -y,
    "negations": lambda y: -(y * 0.75) - (0.5 - y) * (y - 0.5),
    "square and sign": lambda y: tf.square(y) * 0.1 + tf.sign(y) * 0.2 + tf.abs(y) * 0.3,
    "where": lambda y: tf.where(y > 0.5, y * 0.9, tf.sqrt(y * y + 0.01)),
    "max and relu": lambda y: tf.maximum(y * 0.6, -y) + tf.nn.relu(y - 0.2) * 0.1,
    "powers": lambda y: (y * y + 1.0) ** 0.5 * 0.5 + tf.exp(-y * y) * 0.25,
}


@pytest.mark.parametrize("name", sorted(BODIES))
@pytest.mark.parametrize("value", [0.7, -1.3, 0.0, 1e300])
def test_compact_form_computes_what_one_statement_per_value_does(name, value):
    step = _chain(BODIES[name], 40)
    x = tf.constant(value, dtype=tf.float64)
    with np.errstate(all="ignore"):
        compact, compact_source = _gradient_bits(step, x, compact=True)
        plain, plain_source = _gradient_bits(step, x, compact=False)
    assert compact == plain
    assert compact_source.count("\n") < plain_source.count("\n")


@pytest.mark.parametrize("name", ["w8", "quotients", "where", "powers"])
def test_compact_form_of_arrays_and_float32(name):
    rng = np.random.default_rng(3)
    for dtype in (np.float64, np.float32):
        x = tf.constant(rng.uniform(0.1, 2.0, size=(7,)).astype(dtype))
        step = _chain(BODIES[name], 25)
        with np.errstate(all="ignore"):
            compact, source = _gradient_bits(step, x, compact=True)
            plain, _ = _gradient_bits(step, x, compact=False)
        assert compact == plain
        assert "def gradient_scalar(" not in source


def test_long_program_is_compact_and_compiles():
    """The W8 loop: one statement per iteration (the running cotangent), the Python-float
    arguments converted by the dispatcher, and no line past the inlining bound."""
    n = 1500
    x = tf.constant(0.7, dtype=tf.float64)
    g = _chain(BODIES["w8"], n)(x)
    source = tf.generated_source(g, full=True)
    scalar_body = source.split("def gradient_scalar(", 1)[1].split("\n\n\n", 1)[0]
    statements = [line for line in scalar_body.splitlines()[1:] if line.strip()]
    assert len(statements) <= n + 2
    assert "map(float, args)" in source and "= float(" not in scalar_body
    body_lines = [line for line in source.splitlines() if not line.startswith("def ")]
    assert max(map(len, body_lines)) <= emit_module.INLINE_LENGTH + 40


def test_single_use_chain_is_cut_into_statements():
    """A chain of values each read once (sin of sin of ...) is not one expression: it is
    cut every INLINE_LENGTH characters, so deep chains neither hit the parser's nesting
    limits nor make one enormous line."""
    x = tf.constant(np.linspace(0.1, 0.9, 5))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(1200):
            y = tf.sin(y)
    # The emitter's own form: unfused (once SymPy is imported, "full" fuses the chain
    # into kernels, which print their own way).
    with tf.simplify_mode("off"):
        g = tape.gradient(y, x)
    expected = np.ones(5)
    values = [np.linspace(0.1, 0.9, 5)]
    for _ in range(1200):
        values.append(np.sin(values[-1]))
    for v in reversed(values[:-1]):
        expected = expected * np.cos(v)
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-12)
    lines = tf.generated_source(g).splitlines()
    assert max(len(line) for line in lines if not line.startswith("def ")) <= \
        emit_module.INLINE_LENGTH + 40


@pytest.mark.parametrize("shape, binding, slots", [
    ("\x000\x00 + \x001\x00", SUM, (SUM, SUM + 1)),
    ("\x000\x00 - \x001\x00", SUM, (SUM, SUM + 1)),
    ("\x000\x00 / \x001\x00", PRODUCT, (PRODUCT, PRODUCT + 1)),
    ("\x000\x00 ** \x001\x00", POWER, (POWER + 1, POWER + 1)),
    ("-\x000\x00", UNARY, (UNARY + 1,)),
    ("np.where(\x000\x00, \x001\x00, \x002\x00)", ATOM, (LOOSEST,) * 3),
    ("math.cos(\x000\x00)", ATOM, (LOOSEST,)),
    ("np.reshape(\x000\x00, (3,))", LOOSEST, (LOOSEST + 1,)),
    ("\x001\x00 if \x000\x00 else \x002\x00", LOOSEST, (LOOSEST + 1,) * 3),
    ("\x000\x00 * \x000\x00", PRODUCT, (None,)),
])
def test_template_shapes(shape, binding, slots):
    assert expressions.parse(shape, len(slots)) == (binding, slots)


def test_slots_keep_pythons_grouping():
    """Whatever a slot takes bare, Python parses back into the same tree."""
    import ast
    forms = {"+": SUM, "-": SUM, "*": PRODUCT, "/": PRODUCT, "**": POWER}
    children = {"a + b": SUM, "a - b": SUM, "a * b": PRODUCT, "a / b": PRODUCT,
                "a ** b": POWER, "-a": UNARY, "f(a)": ATOM}
    for operator in forms:
        shape = f"{PLACEHOLDERS[0]} {operator} {PLACEHOLDERS[1]}"
        _, slots = expressions.parse(shape, 2)
        for child, binding in children.items():
            for k in (0, 1):
                grouped = [f"({child})", "z"] if k == 0 else ["z", f"({child})"]
                bare = [child, "z"] if k == 0 else ["z", child]
                text = f"{bare[0]} {operator} {bare[1]}"
                same = ast.dump(ast.parse(text)) == \
                    ast.dump(ast.parse(f"{grouped[0]} {operator} {grouped[1]}"))
                if binding >= slots[k]:
                    assert same, (operator, child, k)


def _programs():
    """Gradients, jacobians and Hessians whose simplification fires many rules."""
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(4,)))
    A = tf.constant(rng.normal(size=(4, 4)))
    W = tf.constant(rng.normal(size=(3, 4)))
    X = tf.constant(rng.normal(size=(6, 4)))
    results = []
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.reduce_sum(x * tf.linalg.matvec(A, x))
        g = inner.gradient(y, x)
    results.append(outer.jacobian(g, x))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.tanh(tf.linalg.matvec(W, x))
    results.append(tape.jacobian(y, x))
    with tf.GradientTape() as tape:
        tape.watch(X)
        y = tf.tanh(tf.matmul(X, tf.transpose(W)))
    results.append(tape.batch_jacobian(y, X))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(-(x * 1.0) * -1.0 + tf.broadcast_to(x[:1], (4,)) * 2.0 - 0.0)
    results.append(tape.gradient(y, x))
    return [np.asarray(r.numpy()).tobytes() for r in results]


def test_rule_marks_hold(monkeypatch):
    """A rule marked `reads` fires only where an input is one of those ops, and one
    marked `needs` only where one of those ops is in the graph: checked by trying every
    rule everywhere and asserting on each firing."""
    fired = []

    def all_rules(self, node):
        rules = passes.dispatch(self.rules).get(node.op.name, ())
        return [_checked(rule, node, self.builder) for rule in rules]

    def _checked(rule, node, builder):
        def check(n):
            result = rule(n)
            if result is not None:
                fired.append(rule.__name__)
                inputs = {i.op.name for i in n.inputs}
                reads = getattr(rule, "reads", None)
                needs = getattr(rule, "needs", None)
                assert reads is None or not reads.isdisjoint(inputs), rule.__name__
                assert needs is None or not needs.isdisjoint(builder.op_names), rule.__name__
            return result
        check.__name__ = rule.__name__
        return check

    with tf.simplify_mode("full"):
        tf.clear_cache()
        expected = _programs()
        tf.clear_cache()
        monkeypatch.setattr(passes._Dispatch, "at", all_rules)
        assert _programs() == expected
        tf.clear_cache()
    assert fired


def test_every_rule_mark_names_real_ops():
    from tapec.ops.registry import REGISTRY
    for _, rules in PHASES:
        for rule in rules:
            for mark in ("reads", "needs"):
                assert set(getattr(rule, mark, ())) <= set(REGISTRY), (rule.__name__, mark)


def test_a_traced_gradient_leaves_no_cycles():
    """A tape gradient inside a traced function joins the trace as a splice; the splice
    must not hold its tape strongly, or every trace's recording (records, tensors, nodes:
    about 18 objects an op) becomes a reference cycle that only a full collection frees."""
    import gc

    x = tf.constant(0.7, dtype=tf.float64)
    gc.collect()
    gc.disable()
    try:
        tf.clear_cache()
        g = float(tf.function(_chain(BODIES["w8"], 200))(x).numpy())
        tf.clear_cache()
        left = gc.collect()
    finally:
        gc.enable()
    assert g == float(_chain(BODIES["w8"], 200)(x).numpy())
    assert left < 200, left


def test_a_program_is_emitted_in_the_order_of_a_fresh_walk(monkeypatch):
    """compile_program hands emit the simplified program's order with the guards' walk in
    front, instead of emit walking guards + outputs again: the same order, node for node."""
    from tapec.ir.nodes import topological_order
    from tapec.tracing import program as program_module
    orders = []

    def checked_emit(outputs, feeds, *args, order=None, **kwargs):
        fresh = topological_order([o for o in outputs if o is not None], leaves=feeds)
        orders.append((order, fresh))
        return emit_module.emit(outputs, feeds, *args, order=order, **kwargs)

    monkeypatch.setattr(program_module, "emit", checked_emit)

    @tf.function
    def f(x, y):
        z = tf.sin(x) * y
        if tf.reduce_sum(z) > 0:          # a guard
            z = z * 2.0 + tf.cos(y)
        with tf.GradientTape() as tape:
            tape.watch(x)
            w = tf.reduce_sum(tf.tanh(z * x))
        return w, tape.gradient(w, x)

    tf.clear_cache()
    x = tf.constant(np.linspace(0.1, 0.9, 4))
    f(x, tf.constant(1.5, dtype=tf.float64))
    f(x, tf.constant(-1.5, dtype=tf.float64))          # the guard differs: traced again
    assert len(orders) == 2
    for given, fresh in orders:
        assert given == fresh


def test_a_trace_frees_its_recording_before_collections_resume(monkeypatch):
    """The collector is off while a function traces; when it is back, the recording (every
    record, tensor and value of the trace) must already be freed, or the first young
    collection walks all of it just before it is released."""
    import contextlib
    import importlib
    import weakref

    function_module = importlib.import_module("tapec.function")   # tapec.function is the API
    tapes, alive_at_exit = [], []
    record = function_module.Function._record

    def recorded(self, call, splicing=True):
        tape, traced, result = record(self, call, splicing)
        tapes.append(weakref.ref(tape))
        return tape, traced, result

    @contextlib.contextmanager
    def watched():
        with emit_module.no_collections():
            yield
            alive_at_exit.append([t() is not None for t in tapes])

    monkeypatch.setattr(function_module.Function, "_record", recorded)
    monkeypatch.setattr(function_module, "no_collections", watched)
    x = tf.constant(0.7, dtype=tf.float64)
    tf.clear_cache()
    g = tf.function(_chain(BODIES["w8"], 30))(x)
    assert float(g.numpy()) == float(_chain(BODIES["w8"], 30)(x).numpy())
    # the trace's window, and the miss path's around it (trace and first run)
    assert alive_at_exit == [[False], [False]]


def test_a_compiled_program_lets_its_builder_go():
    """Once its program is final, a traced function keeps the program's roots and the
    compiled entry, not the hash-consing table that holds every node the trace and the
    simplifier made; calls under a tape (which interpret the roots) still work."""
    f = tf.function(_chain(BODIES["w8"], 50))
    x = tf.constant(0.7, dtype=tf.float64)
    tf.clear_cache()
    g = f(x)
    (programs,) = f._traces.values()
    assert programs[0].builder is None
    assert float(g.numpy()) == float(_chain(BODIES["w8"], 50)(x).numpy())
    with tf.GradientTape() as tape:            # the program interpreted, op by op
        tape.watch(x)
        h = f(x)
    expected = _chain(BODIES["w8"], 50)
    with tf.GradientTape() as reference:
        reference.watch(x)
        e = expected(x)
    assert float(h.numpy()) == float(e.numpy())
    np.testing.assert_allclose(tape.gradient(h, x).numpy(), reference.gradient(e, x).numpy(),
                               rtol=1e-12)
    y = tf.constant(0.3, dtype=tf.float64)
    assert float(f(y).numpy()) == float(expected(y).numpy())     # a replay
