"""Generated code reads like backprop written by hand: names from the user's variables,
a `# from: <op> at file:line` line above each op's statements, no dead arithmetic.

Properties, not golden text: every test also checks the values the code computes."""
import ast
import io
import os
import re
import tokenize

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tapec as tf
from tapec.codegen.emit import comment_text
from tapec.ir import sites
from tapec.ops.registry import REGISTRY

FROM = re.compile(r"^\s*# from: (\w+)(?: at (.*):(\d+))?$")


@pytest.fixture
def call_sites():
    """Tapes record call sites; the cache is emptied so the code is compiled here."""
    tf.clear_cache()
    tf.config.set_call_sites(True)
    yield
    tf.config.set_call_sites(False)
    tf.clear_cache()


def body(source):
    """The lines of the (only) function of a readable source, after its `def` line."""
    lines = source.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("def "))
    return lines[start + 1:]


def statements_with_origins(source):
    """[(statement line, (op, file, line) of the `# from:` above it)] of the function."""
    found, origin = [], None
    for line in body(source):
        match = FROM.match(line)
        if match:
            origin = match.groups()
        elif line.strip() and not line.lstrip().startswith(("return ", "#")):
            found.append((line.strip(), origin))
    return found


def mlp_gradient(simplify_mode):
    """An MLP layer's gradient, one statement per op where the mode simplifies ("fast":
    "full" would fuse tanh's derivative into the product)."""
    x = tf.constant(np.array([[0.5, -1.0]]))
    w = tf.Variable(np.array([[0.1, 0.2, 0.3], [-0.4, 0.5, -0.6]]), name="w")
    with tf.simplify_mode("off" if simplify_mode == "off" else "fast"):
        with tf.GradientTape() as tape:
            h = tf.matmul(x, w)
            t = tf.tanh(h)
            loss = tf.reduce_sum(t)
        return tape.gradient(loss, w), x, w


def test_names_come_from_the_users_variables(call_sites, simplify_mode):
    dw, x, w = mlp_gradient(simplify_mode)
    source = tf.generated_source(dw)
    parameters = ast.parse(source).body[-1].args.args
    assert "t" in [p.arg for p in parameters], source       # the forward value t = tanh(h)
    assigned = re.findall(r"^    (\w+) = ", source, flags=re.M)
    assert "b_h" in assigned and assigned[-1] == "dloss_dw", source
    t = np.tanh(x.numpy() @ w.numpy())
    np.testing.assert_allclose(dw.numpy(), x.numpy().T @ (1 - t ** 2), rtol=1e-12)


def test_every_statement_says_which_op_and_call_site(call_sites, simplify_mode):
    dw, _, _ = mlp_gradient(simplify_mode)
    pairs = statements_with_origins(tf.generated_source(dw))
    assert pairs
    for statement, origin in pairs:
        assert origin is not None, statement
        op, filename, line = origin
        assert op in REGISTRY, origin
        assert filename is not None and os.path.exists(filename), origin
        with open(filename, encoding="utf-8") as f:
            assert 1 <= int(line) <= len(f.readlines()), origin
    assert {origin[0] for _, origin in pairs} >= {"tanh", "matmul"}


def test_without_call_sites_the_comments_name_the_op():
    tf.clear_cache()
    x = tf.constant(np.array([0.3, 0.7]))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.sin(x) * x)
    g = tape.gradient(y, x)
    pairs = statements_with_origins(tf.generated_source(g))
    assert pairs and all(o is not None and o[0] in REGISTRY and o[1] is None
                         for _, o in pairs), pairs
    xv = np.array([0.3, 0.7])
    np.testing.assert_allclose(g.numpy(), np.cos(xv) * xv + np.sin(xv), rtol=1e-12)


def test_only_the_whole_right_hand_side_takes_the_name(call_sites):
    x = tf.constant(np.array([0.2, 0.4]))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        loss = tf.reduce_sum(tf.tanh(x))     # noqa: F841  (the line whose target names the sum)
    g = tape.recorded.graph
    named = {g[i].op.name: sites.assigned(g.sites[i]) for i in g.ids if i in g.sites}
    assert named["reduce_sum"] == "loss" and named["tanh"] is None
    assert sites.argument(g.sites[x._id]) == "x"          # tape.watch(x)


def test_no_fill_diagonal_in_jacobians_and_hessians(call_sites):
    a = np.array([[2.0, 1.0, 0.0], [0.5, 3.0, 1.0], [0.0, -1.0, 4.0]])
    x = tf.constant(np.array([0.5, -1.0, 2.0]))
    A = tf.constant(a)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            f = tf.reduce_sum(x * tf.linalg.matvec(A, x))        # x^T A x
        g = inner.gradient(f, x)
    hessian = outer.jacobian(g, x)
    np.testing.assert_allclose(hessian.numpy(), a + a.T, rtol=1e-12)
    assert "fill_diagonal" not in tf.generated_source(hessian)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.tanh(x)
    jacobian = tape.jacobian(y, x)
    source = tf.generated_source(jacobian)
    assert "fill_diagonal" not in source and "np.eye(3" in source, source
    np.testing.assert_array_equal(jacobian.numpy(), np.diag(1 - np.tanh(x.numpy()) ** 2))


def test_log_det_gradient_has_no_division_by_the_determinant(call_sites, simplify_mode):
    X = tf.constant(np.array([[3.0, 1.0], [0.5, 2.0]]))
    with tf.GradientTape() as tape:
        tape.watch(X)
        d = tf.linalg.det(X)
        log_det = tf.math.log(d)
    g = tape.gradient(log_det, X)
    source = tf.generated_source(g)
    if simplify_mode != "off":          # "off" prints the chain rule as recorded
        assert not re.search(r"/ d\b", source) and not re.search(r"\* d\b", source), source
    np.testing.assert_allclose(g.numpy(), np.linalg.inv(X.numpy()).T, rtol=1e-12)


def test_log_det_gradient_survives_an_underflowing_determinant(simplify_mode):
    # det(0.01 I_200) = 1e-400 is 0 in float64: (1 / det) * det would be nan.
    X = tf.constant(0.01 * np.eye(200))
    with tf.GradientTape() as tape:
        tape.watch(X)
        y = tf.math.log(tf.linalg.det(X))
    g = tape.gradient(y, X)
    if simplify_mode == "off":
        assert np.isnan(g.numpy()).all()    # as recorded: inf * 0
    else:
        np.testing.assert_allclose(g.numpy(), 100.0 * np.eye(200), rtol=1e-12)


def test_scalar_programs_show_one_body():
    x = tf.constant(3.0, dtype=tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    g = tape.gradient(y, x)
    source = tf.generated_source(g)
    assert source.count("\ndef ") == 1 and "math." not in source, source
    assert "def gradient_scalar(" in tf.generated_source(g, full=True)
    namespace = {}
    exec(compile(source, "<readable>", "exec"), namespace)      # noqa: S102
    assert namespace["gradient"](np.float64(3.0))[0] == 6.0 == float(g.numpy())


HOSTILE = ["a\nimport os", "x'\"", "w,(y)", "naïve\u2028b", "tab\there", "semi;colon"]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_variable_names_become_identifiers(call_sites, name):
    v = tf.Variable(np.array([1.0, 2.0]), name=name)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.exp(v) * v)
    g = tape.gradient(y, v)
    source = tf.generated_source(g)
    compile(source, "<hostile>", "exec")
    for identifier in re.findall(r"\b\w+\b", source, flags=re.ASCII):
        assert identifier.isascii()
    assert "import os" not in source
    vv = np.array([1.0, 2.0])
    np.testing.assert_allclose(g.numpy(), np.exp(vv) * (vv + 1), rtol=1e-12)


@pytest.mark.parametrize("filename", ["we ird,(name).py", "new\nline.py", "quo'te\".py",
                                      "ünï\u2028cöde.py"])
def test_hostile_file_names_stay_inside_the_comment(call_sites, tmp_path, filename):
    path = tmp_path / filename
    path.write_text("import tapec as tf\n\n"
                    "def run(x):\n"
                    "    with tf.GradientTape() as tape:\n"
                    "        tape.watch(x)\n"
                    "        y = tf.reduce_sum(tf.sin(x))\n"
                    "    return tape.gradient(y, x)\n", encoding="utf-8")
    namespace = {}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)  # noqa: S102
    g = namespace["run"](tf.constant(np.array([0.1, 0.2])))
    source = tf.generated_source(g)
    compile(source, "<hostile file>", "exec")
    comments = [line for line in body(source) if line.lstrip().startswith("# from:")]
    assert comments and all(":6" in c for c in comments), source
    for comment in comments:
        assert not re.search(r"[,()'\"\n\u2028]", comment), comment
    np.testing.assert_allclose(g.numpy(), np.cos([0.1, 0.2]), rtol=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_comment_text_is_one_comment_token(text):
    comment = "# from: op at " + comment_text(text)
    tokens = list(tokenize.generate_tokens(io.StringIO(comment + "\n").readline))
    assert tokens[0].type == tokenize.COMMENT and tokens[0].string == comment
    assert not re.search(r"[,()\[\]{}'\"]", comment)


def test_exported_modules_say_where_statements_come_from(tmp_path):
    def loss(x, w):
        h = tf.tanh(x @ w)
        return tf.reduce_sum(h * h)

    x, w = np.array([[0.5, -0.2]]), np.array([[0.3], [0.1]])
    source = tf.export(loss, (x, w), str(tmp_path / "m.py"), argnums=1)
    assert "h = xp.tanh(" in source and "b_h = " in source, source
    assert re.search(r"# from: tanh at .*test_readable_source\.py:\d+", source), source


def test_a_stem_name_claimed_twice_gets_a_name_outside_it():
    # Two results of a multi-line template both asked for `df_dx`: every `df_dx_<k>` is
    # the first one's helper name, so the second must leave the stem (this looped).
    from tapec.codegen.names import Namer
    namer = Namer()
    first, second = namer.claim("df_dx", stem=True), namer.claim("df_dx", stem=True)
    assert first == "df_dx" and second != first and not second.startswith("df_dx_")


def test_fused_kernels_keep_their_op_and_name(call_sites):
    pytest.importorskip("sympy")
    import sympy  # noqa: F401  (imported, fusion is not deferred to a later call)
    x = tf.constant(np.array([[0.5, -1.0]]))
    w = tf.Variable(np.array([[0.1, 0.2], [-0.4, 0.5]]), name="w")
    with tf.simplify_mode("full"):
        with tf.GradientTape() as tape:
            h = tf.matmul(x, w)
            loss = tf.reduce_sum(tf.tanh(h) ** 2)
        g = tape.gradient(loss, w)
    source = tf.generated_source(g)
    pairs = statements_with_origins(source)
    assert pairs and all(origin is not None for _, origin in pairs), source
    assert "fused" not in source and "dloss_dw" in source, source
    t = np.tanh(x.numpy() @ w.numpy())
    np.testing.assert_allclose(g.numpy(), x.numpy().T @ (2 * t * (1 - t ** 2)), rtol=1e-12)


def test_a_base_claimed_again_and_again_resumes_its_search(monkeypatch):
    # A loop's `y = ...` names thousands of values `y`: each claim searched from `y_2`,
    # which made emitting a 2,000-iteration loop quadratic (1.0 s of its 1.4 s).
    from tapec.codegen.names import Namer
    namer = Namer()
    calls = []
    free = namer.free
    monkeypatch.setattr(namer, "free", lambda name, stem=False: calls.append(name) or
                        free(name, stem))
    names = [namer.claim("y") for _ in range(3000)]
    assert names[:3] == ["y", "y_2", "y_3"] and len(set(names)) == 3000
    assert len(calls) <= 2 * 3000
