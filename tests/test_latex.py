"""LaTeX export (`GradientTape.latex`): the required renderings, naming and escaping,
named definitions, and a KaTeX whitelist that every produced string must pass."""
import re

import numpy as np
import pytest

import tapec as tf
from tapec.export.latex import LINE_LIMIT, latex_name
from tapec.export.latex.width import rendered_width
from helpers import katex, symbols
from helpers.symbols import inputs_of

# --- a KaTeX-safety checker ---------------------------------------------------------------
#
# Tokenizes LaTeX and accepts only whitelisted commands, balanced groups, \left/\right
# pairs nested inside them, the aligned and cases environments, and no raw character that
# starts a comment, a math shift, a macro parameter or an unbreakable space.

ALLOWED_COMMANDS = frozenset("""
    frac left right sin cos tan sinh cosh tanh exp log sqrt sum prod max min det circ cdot
    mathbf mathrm operatorname begin end partial ldots le ge ne lt gt sim wedge backslash
    text infty arcsin arccos arctan pi sigma alpha beta gamma delta epsilon zeta eta theta
    iota kappa lambda mu nu xi rho tau upsilon phi chi psi omega Gamma Delta Theta Lambda
    Xi Pi Sigma Upsilon Phi Psi Omega in mathbb times nabla lVert rVert quad""".split())
ALLOWED_ESCAPES = frozenset(["\\\\", "\\{", "\\}", "\\_", "\\%", "\\$", "\\#", "\\&",
                             "\\ ", "\\,", "\\:", "\\;", "\\!"])
ENVIRONMENTS = frozenset(["aligned", "cases"])
_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|\s+|.", re.S)


def katex_problems(tex: str) -> list:
    """Why `tex` is not KaTeX-safe (an empty list when it is)."""
    tokens = [t for t in _TOKEN.findall(tex) if not t.isspace()]
    stack, problems, i = [], [], 0
    in_environment = lambda: any(isinstance(s, tuple) for s in stack)
    while i < len(tokens):
        tok = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        if re.fullmatch(r"\\[A-Za-z]+", tok):
            name = tok[1:]
            if name not in ALLOWED_COMMANDS:
                problems.append(f"command {tok}")
            elif name in ("begin", "end"):
                try:
                    close = tokens.index("}", i + 1)
                except ValueError:
                    return problems + [f"{tok} without an environment"]
                env = "".join(tokens[i + 2:close])
                if nxt != "{" or env not in ENVIRONMENTS:
                    problems.append(f"environment {env!r}")
                elif name == "begin":
                    stack.append(("env", env))
                elif not stack or stack.pop() != ("env", env):
                    problems.append(f"unbalanced \\end{{{env}}}")
                i = close + 1
                continue
            elif name == "left":
                if nxt not in ("(", "[", "|", "."):
                    problems.append(f"\\left{nxt}")
                stack.append("left")
            elif name == "right":
                if nxt not in (")", "]", "|", "."):
                    problems.append(f"\\right{nxt}")
                if not stack or stack.pop() != "left":
                    problems.append("\\right without \\left in the same group")
        elif tok.startswith("\\"):
            if tok not in ALLOWED_ESCAPES:
                problems.append(f"escape {tok!r}")
            elif tok == "\\\\" and not in_environment():
                problems.append("line break outside an environment")
        elif tok == "{":
            stack.append("{")
        elif tok == "}":
            if not stack or stack.pop() != "{":
                problems.append("unbalanced }")
        elif tok in "%$#~":
            problems.append(f"raw {tok}")
        elif tok == "&" and not in_environment():
            problems.append("& outside an environment")
        elif tok in "^_" and (not nxt or nxt in "}^_&"):
            problems.append(f"dangling {tok}")
        i += 1
    if stack:
        problems.append(f"unclosed {stack}")
    return problems


def checked(tex: str, inputs=None) -> str:
    """`tex` after asserting it is KaTeX-safe, that KaTeX parses it (where node and KaTeX
    are installed) and, given the `inputs` it may use, that it uses only defined symbols."""
    problems = katex_problems(tex)
    assert not problems, f"not KaTeX-safe ({problems}): {tex}"
    if katex.available():
        katex.assert_parses(tex)
    if inputs is not None:
        symbols.assert_defined(tex, inputs)
    return tex


def latex(tape, target, sources=None, names=None) -> str:
    return checked(tape.latex(target, sources, names), inputs_of(tape, names, target, sources))


def squash(tex: str) -> str:
    return re.sub(r"\s+", "", tex)


def assert_renders(tex: str, *accepted: str):
    assert squash(tex) in {squash(a) for a in accepted}, tex


def rows(tex: str) -> list:
    """The (left, right) rows of an aligned block."""
    body = tex.removeprefix("\\begin{aligned}").removesuffix("\\end{aligned}")
    return [tuple(part.strip() for part in row.split("&=", 1)) for row in body.split("\\\\")]


@pytest.mark.parametrize("tex", [r"\input{/etc/passwd}", r"{x", r"x}", r"\left( x",
                                 r"x % comment", r"\def\x{1}", r"a & b", r"x^",
                                 r"\left( {x \right) }", r"\begin{verbatim}\end{verbatim}"])
def test_katex_checker_rejects(tex):
    assert katex_problems(tex)


def test_katex_checker_accepts():
    assert not katex_problems(r"\begin{aligned} t_{1} &= \frac{1}{2} \left(x + y\right) "
                              r"\\ f &= \mathrm{a\_b\{\}} \end{aligned}")


# --- fixtures: the documented examples ------------------------------------------------------

def quadratic_form(A_named_by=None):
    """f = x^T A x with x (3, 1) watched on an outer and an inner tape; A a Variable or a
    constant. Returns (outer, inner, f, g = df/dx, x, names)."""
    rng = np.random.default_rng(0)
    if A_named_by is None:
        A = tf.Variable(rng.normal(size=(3, 3)), name="A")
        names = None
    else:
        A = tf.constant(rng.normal(size=(3, 3)))
        names = A_named_by(A)
    x = tf.constant(rng.normal(size=(3, 1)))
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with tf.GradientTape(persistent=True) as inner:
            inner.watch(x)
            f = tf.transpose(x) @ A @ x
        g = inner.gradient(f, x)
    return outer, inner, f, g, x, names


QUADRATIC_NAMINGS = {
    "variable": None,
    "ref dict": lambda A: {A.ref(): "A"},
    "pairs": lambda A: [(A, "A")],
}


def tanh_layer():
    rng = np.random.default_rng(1)
    W = tf.Variable(rng.normal(size=(2, 3)), name="W")
    b = tf.Variable(rng.normal(size=(2, 1)), name="b")
    x = tf.constant(rng.normal(size=(3, 1)))
    with tf.GradientTape(persistent=True) as tape:
        f = tf.reduce_sum(tf.tanh(W @ x + b))
    return tape, f, W, b, x


def scalar_tape(fn, value=1.5):
    x = tf.constant(value, dtype=tf.float64)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = fn(x)
    return tape, y, x


SIN_EXP = (r"e^{x} \sin{\left(x \right)} + e^{x} \cos{\left(x \right)}",
           r"e^{x} \cos{\left(x \right)} + e^{x} \sin{\left(x \right)}")


# --- required renderings -------------------------------------------------------------------

@pytest.mark.parametrize("naming", QUADRATIC_NAMINGS)
def test_gradient_of_quadratic_form(naming):
    _, inner, f, _, x, names = quadratic_form(QUADRATIC_NAMINGS[naming])
    assert_renders(latex(inner, f, x, names), r"A x + A^{T} x", r"A^{T} x + A x",
                   r"\left(A + A^{T}\right) x", r"\left(A^{T} + A\right) x")


@pytest.mark.parametrize("naming", QUADRATIC_NAMINGS)
def test_hessian_of_quadratic_form(naming):
    outer, _, _, g, x, names = quadratic_form(QUADRATIC_NAMINGS[naming])
    hessian = r"\frac{\partial^{2} f}{\partial x \, \partial x^{T}} = "
    shape = r" \in \mathbb{R}^{3 \times 3}"
    assert_renders(latex(outer, g, x, names), hessian + r"A + A^{T}" + shape,
                   hessian + r"A^{T} + A" + shape)


def test_tanh_layer_gradient():
    tape, f, W, _, x = tanh_layer()
    tex = latex(tape, f, W, {x.ref(): "x"})
    assert_renders(tex, r"\left(1 - \tanh\left(W x + b\right)^{\circ 2}\right) x^{T}")


@pytest.mark.parametrize("fn, expected", [
    (lambda x: x ** 4, [r"4 x^{3}"]),
    (lambda x: tf.sin(x) * tf.exp(x), SIN_EXP),
    (lambda x: x * x, [r"2 x"]),
    (lambda x: x / (1 + x), [r"\frac{1}{\left(x + 1\right)^{2}}"]),
    (lambda x: tf.tanh(x), [r"1 - \tanh^{2}{\left(x \right)}"]),
])
def test_scalar_derivatives(fn, expected):
    tape, y, x = scalar_tape(fn)
    assert_renders(latex(tape, y, x), *expected)


def test_scalar_derivative_at_a_seed_uses_the_value_of_the_derivative_only():
    """x*x differentiated with the implicit seed of ones: 2x, not 1 x + x 1."""
    tape, y, x = scalar_tape(lambda x: x * x)
    assert squash(latex(tape, y, x)) == "2x"
    assert squash(latex(tape, y, [x, x])) == squash(
        r"\begin{aligned} \frac{\partial f}{\partial x} &= 2 x \\ "
        r"\frac{\partial f}{\partial x} &= 2 x \end{aligned}")


# --- value mode ------------------------------------------------------------------------------

def test_value_of_quadratic_form():
    _, inner, f, _, _, _ = quadratic_form()
    assert_renders(latex(inner, f), r"x^{T} A x")


def test_value_of_tanh_layer():
    tape, f, _, _, x = tanh_layer()
    assert_renders(latex(tape, f, names=[(x, "x")]),
                   r"\mathbf{1}^{T} \tanh\left(W x + b\right)")


@pytest.mark.parametrize("fn, expected", [
    (lambda x: x ** 4, r"x^{4}"),
    (lambda x: tf.sin(x) * tf.exp(x), r"e^{x} \sin{\left(x \right)}"),
    (lambda x: 3.0 * x + 0.5, r"3 x + \frac{1}{2}"),
])
def test_value_of_scalar_expressions(fn, expected):
    tape, y, _ = scalar_tape(fn)
    assert_renders(latex(tape, y), expected)


def test_value_of_a_variable_is_its_name():
    v = tf.Variable(1.0, name="theta")
    with tf.GradientTape() as tape:
        pass
    assert latex(tape, v) == r"\theta"


def test_target_name_appears_on_the_left():
    tape, f, W, b, x = tanh_layer()
    tex = latex(tape, f, [W, b], {f.ref(): "loss", x.ref(): "x"})
    assert [left for left, _ in rows(tex)][-2:] == [
        r"\frac{\partial \mathrm{loss}}{\partial W}", r"\frac{\partial \mathrm{loss}}{\partial b}"]


# --- matrix notation ---------------------------------------------------------------------------

def test_jacobian_of_a_vector_is_a_matrix():
    rng = np.random.default_rng(2)
    W = tf.Variable(rng.normal(size=(2, 3)), name="W")
    x = tf.constant(rng.normal(size=(3, 1)))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.tanh(W @ x)
    assert_renders(latex(tape, y, x),
                   r"\frac{\partial f}{\partial x} = \operatorname{diag}\left(1 - "
                   r"\tanh\left(W x\right)^{\circ 2}\right) W \in \mathbb{R}^{2 \times 3}")


def test_sums_are_products_with_ones_and_vectors_are_columns():
    rng = np.random.default_rng(3)
    X = tf.constant(rng.normal(size=(4, 3)))
    v = tf.constant(rng.normal(size=(3,)))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([X, v])
        rows_sum = tf.reduce_sum(X, axis=1)
        cols_sum = tf.reduce_sum(X, axis=0, keepdims=True)
        total = tf.reduce_sum(X)
        scaled = 2.0 * tf.matmul(X, v)
    names = [(X, "X"), (v, "v")]
    assert_renders(latex(tape, rows_sum, names=names), r"X \mathbf{1}")
    assert_renders(latex(tape, cols_sum, names=names), r"\mathbf{1}^{T} X")
    assert_renders(latex(tape, total, names=names), r"\mathbf{1}^{T} X \mathbf{1}")
    assert_renders(latex(tape, scaled, names=names), r"2 X v")
    assert_renders(latex(tape, total, X, names), r"\mathbf{1} \mathbf{1}^{T}")


def test_hadamard_outer_products_and_broadcasting():
    rng = np.random.default_rng(4)
    u = tf.constant(rng.normal(size=(3, 1)))
    v = tf.constant(rng.normal(size=(3, 1)))
    M = tf.constant(rng.normal(size=(3, 2)))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([u, v])
        hadamard = u * v
        outer = u * tf.transpose(v)
        scaled_rows = u * M
        powered = tf.square(u) + tf.exp(v) / 2.0
    names = [(u, "u"), (v, "v"), (M, "M")]
    assert_renders(latex(tape, hadamard, names=names), r"u \circ v")
    assert_renders(latex(tape, outer, names=names), r"u v^{T}")
    assert_renders(latex(tape, scaled_rows, names=names), r"\operatorname{diag}\left(u\right) M")
    assert_renders(latex(tape, powered, names=names),
                   r"u^{\circ 2} + \frac{1}{2} \exp\left(v\right)")


def test_parentheses_follow_precedence():
    rng = np.random.default_rng(5)
    A = tf.constant(rng.normal(size=(3, 3)))
    x = tf.constant(rng.normal(size=(3, 1)))
    y = tf.constant(rng.normal(size=(3, 1)))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, y])
        a = A @ (x + y)
        b = (A @ x) * y
        c = -(x - y)
        d = A @ x + y
    names = [(A, "A"), (x, "x"), (y, "y")]
    assert_renders(latex(tape, a, names=names), r"A \left(x + y\right)")
    assert_renders(latex(tape, b, names=names), r"\left(A x\right) \circ y")
    assert_renders(latex(tape, c, names=names), r"-\left(x - y\right)")
    assert_renders(latex(tape, d, names=names), r"A x + y")


def test_unconnected_source_is_zero():
    tape, f, W, _, x = tanh_layer()
    other = tf.Variable(np.ones((2, 2)), name="V")
    tex = latex(tape, f, [W, other], {x.ref(): "x"})
    assert rows(tex)[-1] == (r"\frac{\partial f}{\partial V}", "0")


# --- the printed matrix formulas compute the derivatives -----------------------------------
#
# The matrix printer rewrites a lot (transposes pushed to the leaves, broadcasts as
# outer products and diagonals, sums as products with ones): evaluating the expression it
# printed, with NumPy, must give what tapec computes.

def _evaluate(e, env):
    from tapec.export import latex as ltx

    def matrix(value, layout):
        rows, cols = ltx._rows_cols(layout)
        return np.asarray(value, dtype=float).reshape(rows, cols)

    def ev(e):
        if e.layout[0] == "t":
            raise NotImplementedError("more than two axes")
        rows, cols = ltx._rows_cols(e.layout)
        if isinstance(e, ltx._Sym):
            if e.transposed:
                return matrix(env[e.text], ltx._transposed_layout(e.layout)).T
            return matrix(env[e.text], e.layout)
        if isinstance(e, (ltx._Num, ltx._Ones)):
            return np.full((rows, cols), 1.0 if isinstance(e, ltx._Ones) else float(e.value))
        if isinstance(e, ltx._Eye):
            return np.eye(rows)
        if isinstance(e, ltx._Sum):
            return sum(sign * ev(t) for sign, t in e.terms)
        if isinstance(e, ltx._Neg):
            return -ev(e.x)
        if isinstance(e, ltx._Prod):
            result = ev(e.factors[0])
            for f in e.factors[1:]:
                v = ev(f)
                result = result * v if (1, 1) in (result.shape, v.shape) else result @ v
            return result
        if isinstance(e, ltx._Had):
            return np.prod([ev(f) for f in e.factors], axis=0)
        if isinstance(e, ltx._Frac):
            return ev(e.num) / ev(e.den)
        if isinstance(e, ltx._Pow):
            base = ev(e.base)
            if e.kind == "T":
                return base.T
            if e.kind == "inverse":
                return np.linalg.inv(base)
            exponent = ev(e.exponent) if isinstance(e.exponent, ltx._Expr) else \
                float(e.exponent)
            return base ** exponent
        if isinstance(e, ltx._Diag):
            return np.diag(ev(e.v).ravel())
        if isinstance(e, ltx._Call):
            args = [ev(a) for a in e.args]
            functions = {"sqrt": np.sqrt, "abs": np.abs, r"\tanh": np.tanh, r"\exp": np.exp,
                         r"\log": np.log, r"\sin": np.sin, r"\cos": np.cos,
                         r"\sigma": lambda v: 1 / (1 + np.exp(-v)), r"\max": np.maximum,
                         r"\min": np.minimum, r"\operatorname{sign}": np.sign,
                         r"\log \sum \exp {0}": lambda v: np.log(np.exp(v).sum()),
                         r"\max {0}": np.max,
                         r"\operatorname{softmax}": lambda v: np.exp(v) / np.exp(v).sum(),
                         r"\operatorname{softmax}_{\text{row}}":
                             lambda v: np.exp(v) / np.exp(v).sum(axis=1, keepdims=True),
                         r"\operatorname{logsumexp}_{\text{row}}":
                             lambda v: np.log(np.exp(v).sum(axis=1, keepdims=True)),
                         r"\operatorname{tr}": np.trace,
                         "norm": np.linalg.norm,
                         r"\operatorname{logical\_and}": np.logical_and,
                         r"\operatorname{logical\_or}": np.logical_or,
                         r"\operatorname{logical\_not}": np.logical_not}
            relations = {"<": np.less, ">": np.greater, r"\le": np.less_equal,
                         r"\ge": np.greater_equal, "=": np.equal}
            if e.style == "relation":
                return relations[e.head](*args).astype(float)
            if e.style == "template" and "cases" in e.head:
                return np.where(args[0] != 0, args[1], args[2])
            key = e.style if e.head is None else e.head
            if key in functions:
                return np.broadcast_to(functions[key](*args), (rows, cols))
        raise NotImplementedError(f"{type(e).__name__} {getattr(e, 'head', '')}")

    return ev(e)


def assert_printed_formulas_compute(monkeypatch, tape, target, sources, expected,
                                    names=None):
    """Print, then evaluate the printed matrix expressions against `expected`."""
    from tapec.export import latex as ltx
    captured = []
    original = ltx._Layout.lines

    def spy(self, roots):
        captured.append((self.names, roots))
        return original(self, roots)
    monkeypatch.setattr(ltx._Layout, "lines", spy)
    latex(tape, target, sources, names)
    assert captured, "expected matrix notation"
    printed_names, roots = captured[-1]
    values = {}
    for key, text in printed_names.items():
        if key in tape._variables:
            values[text] = tape._variables[key]._value
        elif key in tape._tensors:
            values[text] = tape._tensors[key]._value
    for obj, text in (names or []):
        values[latex_name(text)] = obj._value
    for root, want in zip(roots, expected):
        rows_, cols = ltx._rows_cols(root.layout)
        np.testing.assert_allclose(_evaluate(root, values),
                                   np.asarray(want).reshape(rows_, cols), atol=1e-10)


def _cases():
    rng = np.random.default_rng(8)
    M = tf.constant(rng.uniform(0.5, 1.5, size=(3, 3)))
    R = tf.constant(rng.uniform(0.5, 1.5, size=(2, 3)))
    v = tf.constant(rng.uniform(0.5, 1.5, size=(3,)))
    col = tf.constant(rng.uniform(0.5, 1.5, size=(3, 1)))
    return {
        "quadratic": (lambda x: tf.transpose(x) @ M @ x, col),
        "tanh layer": (lambda x: tf.tanh(R @ x + 0.3), col),
        "softmax": (lambda x: tf.nn.softmax(x), v),
        "log softmax": (lambda x: tf.nn.log_softmax(x), v),
        "normalize": (lambda x: x / tf.reduce_sum(x), col),
        "rows divided": (lambda x: M / x, col),
        "columns scaled": (lambda x: R * tf.transpose(x), col),
        "outer": (lambda x: x * tf.transpose(x), col),
        "clip": (lambda x: tf.clip_by_value(x, 0.8, 1.2), col),
        "powers": (lambda x: x ** 2.5 + tf.sqrt(x) + tf.abs(x), col),
        "matrix": (lambda x: tf.reduce_sum(tf.tanh(x @ M) * x, axis=0), M),
        "inverse": (lambda x: tf.linalg.inv(x) @ col, M),
        "solve": (lambda x: tf.linalg.solve(x, col), M),
        "row vector": (lambda x: tf.exp(tf.transpose(x)) @ M @ x, col),
        "vector matmul": (lambda x: tf.matmul(x, M) * 2.0, v),
    }


@pytest.mark.parametrize("case", list(_cases()))
def test_printed_formulas_compute_values_gradients_and_jacobians(case, monkeypatch):
    fn, x = _cases()[case]
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = fn(x)
        total = tf.reduce_sum(y)
    assert_printed_formulas_compute(monkeypatch, tape, y, None, [y.numpy()])
    assert_printed_formulas_compute(monkeypatch, tape, total, x,
                                    [tape.gradient(total, x).numpy()])
    if 1 < np.prod(y.shape) and len([s for s in y.shape + x.shape if s != 1]) <= 2:
        assert_printed_formulas_compute(monkeypatch, tape, y, x,
                                        [tape.jacobian(y, x).numpy()])


def test_printed_formulas_compute_a_network_and_a_hessian(monkeypatch):
    rng = np.random.default_rng(9)
    x = tf.constant(rng.normal(size=(3, 1)))
    W1, b1 = tf.Variable(rng.normal(size=(4, 3)), name="W1"), tf.Variable(
        rng.normal(size=(4, 1)), name="b1")
    W2, b2 = tf.Variable(rng.normal(size=(1, 4)), name="W2"), tf.Variable(
        rng.normal(size=(1, 1)), name="b2")
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        loss = tf.reduce_sum(tf.square(tf.sigmoid(W2 @ tf.tanh(W1 @ x + b1) + b2) - 1.0))
    sources = [W1, b1, W2, b2, x]
    assert_printed_formulas_compute(monkeypatch, tape, loss, sources,
                                    [g.numpy() for g in tape.gradient(loss, sources)])
    X = tf.constant(rng.normal(size=(5, 3)))
    labels = tf.constant(rng.uniform(size=(5, 1)))
    w = tf.Variable(rng.normal(size=(3, 1)), name="w")
    with tf.GradientTape(persistent=True) as outer:
        with tf.GradientTape() as inner:
            p = tf.sigmoid(X @ w)
            mean_loss = tf.reduce_mean(-(labels * tf.math.log(p) +
                                         (1 - labels) * tf.math.log(1 - p)))
        gradient = inner.gradient(mean_loss, w)
    assert_printed_formulas_compute(monkeypatch, outer, gradient, w,
                                    [outer.jacobian(gradient, w).numpy()],
                                    names=[(X, "X"), (labels, "y")])


# --- named definitions ---------------------------------------------------------------------

def test_shared_subexpression_becomes_a_definition():
    tape, f, W, b, x = tanh_layer()
    tex = latex(tape, f, [W, b], {x.ref(): "x"})
    assert tex.startswith(r"\begin{aligned}") and tex.endswith(r"\end{aligned}")
    assert [tuple(map(squash, r)) for r in rows(tex)] == [
        (r"t_{1}", squash(r"1 - \tanh\left(W x + b\right)^{\circ 2}")),
        (squash(r"\frac{\partial f}{\partial W}"), r"t_{1}x^{T}"),
        (squash(r"\frac{\partial f}{\partial b}"), r"t_{1}")]


def long_expression(x):
    return (tf.tanh(tf.sin(x) * tf.exp(x) + tf.cos(x) * tf.sin(x * x)) ** 3.0 +
            tf.exp(tf.sin(tf.cos(x * 3.0))) / (1.0 + x * x))


@pytest.mark.parametrize("shape", [(3, 1), ()])
def test_long_expressions_are_broken_into_definitions(shape):
    x = tf.constant(np.full(shape, 0.3))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = long_expression(x) + long_expression(2.0 * x)
    for tex in (latex(tape, y), latex(tape, y, x)):
        table = rows(tex)
        assert len(table) >= 2 and table[0][0] == "t_{1}", tex
        names = [left for left, _ in table[:-1]]
        assert names == [f"t_{{{k}}}" for k in range(1, len(names) + 1)]
    if shape:      # matrix notation keeps every line narrow (as rendered)
        assert max(rendered_width(right) for _, right in rows(latex(tape, y))) <= LINE_LIMIT


def test_short_expressions_stay_inline():
    tape, f, W, _, x = tanh_layer()
    assert "aligned" not in latex(tape, f, W, [(x, "x")])


# --- names and escaping ----------------------------------------------------------------------

@pytest.mark.parametrize("raw, expected", [
    ("x", "x"), ("W1", "W_{1}"), ("x_12", "x_{12}"), ("theta", r"\theta"),
    ("sigma_2", r"\sigma_{2}"), ("loss", r"\mathrm{loss}"),
    ("a_b", r"\mathrm{a\_b}"), ("x_1%$", r"\mathrm{x\_1\%\$}"),
    ("a}\\input{/etc/passwd", r"\mathrm{a\}{\backslash}input\{/etc/passwd}"),
    ("#&~^ <>", r"\mathrm{\#\&{\sim}{\wedge}\ {\lt}{\gt}}"),
    ("\\section", r"\mathrm{{\backslash}section}"),
    ("\x00é", r"\mathrm{??}"),
])
def test_latex_name_escapes(raw, expected):
    assert checked(latex_name(raw)) == expected


HOSTILE = ["a}\\input{/etc/passwd", "x_1%$", "\\def\\x{}", "}}}{{{", "$\\alpha$", "a&b\\\\c"]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_variable_names_in_matrix_formulas(name):
    v = tf.Variable(np.arange(3.0).reshape(3, 1), name=name)
    u = tf.Variable(2.0, name="x_1%$", dtype=tf.float64)
    with tf.GradientTape(persistent=True) as tape:
        z = u * tf.reduce_sum(tf.tanh(v) * v)
    for tex in (latex(tape, z), latex(tape, z, [v, u]), latex(tape, z, v, [(z, name)])):
        assert "\\input" not in tex and "\\def" not in tex
        assert r"\mathrm{x\_1\%\$}" in tex


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_variable_names_in_scalar_formulas(name):
    v = tf.Variable(0.5, name=name, dtype=tf.float64)
    with tf.GradientTape(persistent=True) as tape:
        z = tf.sin(v) * tf.exp(v)
    for tex in (latex(tape, z), latex(tape, z, v)):
        assert "\\input" not in tex and "\\def" not in tex
        assert latex_name(name) in tex


def test_default_names():
    rng = np.random.default_rng(6)
    p = tf.constant(rng.normal(size=(3, 1)))
    q = tf.constant(rng.normal(size=(3, 1)))
    M = tf.constant(rng.normal(size=(2, 3)))
    c = tf.constant(rng.normal(size=(2, 1)))
    unnamed = tf.Variable(rng.normal(size=(2, 2)))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([p, q])
        y = tf.reduce_sum(unnamed @ (M @ (p * q) + c))
    assert_renders(latex(tape, y),
                   r"\mathbf{1}^{T} A \left(B \left(x \circ y\right) + c_{1}\right)")
    # sources are named first, in the order given
    lefts = [left for left, _ in rows(latex(tape, y, [q, p])) if left.startswith("\\frac")]
    assert lefts == [r"\frac{\partial f}{\partial x}", r"\frac{\partial f}{\partial y}"]


def test_user_names_win_over_defaults_and_defaults_avoid_them():
    rng = np.random.default_rng(7)
    p = tf.constant(rng.normal(size=(3, 1)))
    q = tf.constant(rng.normal(size=(3, 1)))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([p, q])
        y = p + q
    assert_renders(latex(tape, y, names=[(q, "x")]), r"y + x")


def test_names_must_be_tensors_or_variables():
    tape, y, x = scalar_tape(lambda x: x * x)
    with pytest.raises(TypeError, match="names|Tensor"):
        tape.latex(y, x, {"x": "x"})
    with pytest.raises(TypeError, match="Tensor or a Variable"):
        tape.latex(y, x, [(3.0, "x")])


# --- the tape is inspected, not used --------------------------------------------------------

def test_latex_does_not_use_up_a_non_persistent_tape():
    x = tf.constant(2.0, dtype=tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x ** 3
    assert_renders(latex(tape, y, x), r"3 x^{2}")
    assert float(tape.gradient(y, x)) == pytest.approx(12.0)
    with pytest.raises(RuntimeError, match="already"):
        tape.latex(y, x)


def test_latex_inside_the_recording_block():
    x = tf.constant(2.0, dtype=tf.float64)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.exp(x)
        assert_renders(latex(tape, y, x), r"e^{x}")
        z = y * x
    assert float(tape.gradient(z, x)) == pytest.approx(3 * np.exp(2.0))


def test_formulas_do_not_depend_on_the_compile_setting(simplify_mode):
    _, inner, f, _, x, _ = quadratic_form()
    with tf.simplify_mode("off"):
        off = inner.latex(f, x)
    with tf.simplify_mode("full"):
        full = inner.latex(f, x)
    assert off == full


# --- scalar formulas read back by SymPy ------------------------------------------------------

def parse_latex_or_skip(tex):
    """sympy's LaTeX parser, or skip: it needs antlr4 4.11 (the only backend that reads
    sympy's own `\\sin{\\left(x \\right)}`), which may be absent or another version."""
    pytest.importorskip("antlr4")
    from sympy.parsing.latex import parse_latex
    try:
        return parse_latex(tex)
    except ImportError as error:        # antlr4 installed, but not the version sympy needs
        pytest.skip(f"sympy cannot parse LaTeX here: {error}")


@pytest.mark.parametrize("fn, derivative", [
    (lambda x: x ** 4, lambda x, sp: 4 * x ** 3),
    (lambda x: tf.sin(x) * tf.exp(x), lambda x, sp: sp.exp(x) * (sp.sin(x) + sp.cos(x))),
    (lambda x: x * x, lambda x, sp: 2 * x),
    (lambda x: x / (1 + x), lambda x, sp: 1 / (x + 1) ** 2),
    (lambda x: tf.tanh(x) * 3.0, lambda x, sp: 3 - 3 * sp.tanh(x) ** 2),
])
def test_scalar_formulas_round_trip_through_sympy(fn, derivative):
    import sympy

    tape, y, x = scalar_tape(fn)
    parsed = parse_latex_or_skip(latex(tape, y, x)).subs(sympy.Symbol("e"), sympy.E)
    expected = derivative(sympy.Symbol("x"), sympy)
    assert sympy.simplify(parsed - expected) == 0, (parsed, expected)


def test_an_overrunning_simplification_is_stopped():
    # the worker is interrupted at its budget: nothing keeps running after the call
    from tapec.export import latex as latex_module
    import threading

    def forever(_):
        while True:
            pass

    assert latex_module._bounded(forever, None, 0.2) is None
    assert not any(t.name == "tapec-latex-simplify" for t in threading.enumerate())
    assert latex_module._bounded(lambda x: x + 1, 1, 5.0) == 2


# --- every op declares its notation --------------------------------------------------------
#
# The printers read an op's `latex` template (a str.format string over its arguments), so
# every op in the registry must have one that renders.

def _registry():
    from tapec.ops import REGISTRY
    import tapec.simplify  # noqa: F401  (declares the simplifier's fused op)
    return list(REGISTRY.values())


# Declared outside tapec/ops, in files whose owners have yet to add the template.
def _arity(op, template):
    """How many arguments to format `template` with: the op's arity, else as many as the
    template names (ops such as concat take any number)."""
    from tapec.export.latex.templates import fields
    named = [int(f) for f in fields(template) if f.isdigit()]
    return op.arity if op.arity is not None else max(named, default=-1) + 1


@pytest.mark.parametrize("op", _registry(), ids=lambda op: op.name)
def test_every_op_has_a_latex_template_that_renders(op):
    from tapec.export.latex.templates import fields, formats
    assert op.latex, f"op {op.name!r} has no latex template: add latex=... to its declaration"
    arity = _arity(op, op.latex)
    assert all(f.isdigit() for f in fields(op.latex)), \
        f"{op.name}: a template names its arguments by position only: {op.latex!r}"
    assert formats(op.latex, arity), f"{op.name}: {op.latex!r} with {arity} arguments"
    tex = op.latex.format(*(f"a_{{{k}}}" for k in range(arity)))
    depth = 0
    for ch in tex.replace(r"\{", "").replace(r"\}", ""):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0, f"{op.name}: unbalanced braces in {tex!r}"
    assert depth == 0, f"{op.name}: unbalanced braces in {tex!r}"
    assert katex_problems(tex) == [], (op.name, tex)


def test_function_heads_and_relations_come_from_the_templates():
    from tapec.export.latex.templates import call_head, relation_symbol
    from tapec.ops import REGISTRY
    assert call_head(REGISTRY["tanh"].latex, 1) == r"\tanh"
    assert call_head(REGISTRY["maximum"].latex, 2) == r"\max"
    assert call_head(REGISTRY["expm1"].latex, 1) == r"\operatorname{expm1}"
    assert call_head(REGISTRY["where"].latex, 3) is None
    assert relation_symbol(REGISTRY["less_equal"].latex, 2) == r"\le"
    assert relation_symbol(REGISTRY["add"].latex, 2) is None


def test_an_equal_but_unrelated_array_is_not_taken_for_a_named_one():
    # inputs are matched to names by provenance (the same array, or a transposing view of
    # it), not by value: a copy of A's values stays a leaf of its own
    rng = np.random.default_rng(5)
    A = tf.constant(rng.normal(size=(3, 3)))
    B = tf.constant(A.numpy().copy())
    x = tf.constant(rng.normal(size=(3, 1)))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        f = tf.reduce_sum(B @ x)
    assert "W" not in latex(tape, f, x, [(A, "W"), (x, "x")])
    assert "W" not in latex(tape, f, names=[(A, "W"), (x, "x")])


def test_printers_dispatch_by_class_along_the_mro():
    from tapec.export.latex.dispatch import Visitor
    from tapec.export.latex.matrix import Expr, Num, Sym

    class Kinds(Visitor):
        def _print_Sym(self, e):
            return "symbol"

        def _print_Expr(self, e):
            return "expression"

    assert Kinds().visit(Sym("x", ("s",))) == "symbol"
    assert Kinds().visit(Num(1)) == "expression"
    with pytest.raises(TypeError):
        Kinds().visit(object())
    assert issubclass(Num, Expr)
