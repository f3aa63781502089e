"""User text never becomes code: hostile names in every code-generation path.

A function's `__name__`, its parameter and keyword names, Variable names, closure and
global variable names and result dict keys are user text. Each test gives them a
payload that creates a marker file if it ever runs as code (after a newline, a carriage
return, a Unicode line separator, a quote or a triple quote) and checks that the marker
does not appear, that the generated text is valid Python (or escaped LaTeX), and that
names made equal by sanitizing stay distinct parameters.
"""
import ast
import os
import pathlib
import subprocess
import sys
import types

import numpy as np
import pytest

import tapec as tf
from tapec.tracing.calls import IDENTIFIER_MAX, identifier, unique_identifiers

FORMS = ["function", "grad", "value_and_grad", "jacobian", "hessian"]


def _payload(marker) -> str:
    return f"__import__('pathlib').Path({str(marker)!r}).touch()"


def hostile_names(marker) -> dict:
    """Names that run `_payload` wherever they are pasted into code unescaped."""
    run = _payload(marker)
    return {
        "newline": f"f\n{run}\n#",
        "carriage_return": f"f\r{run}\r#",
        "crlf": f"f\r\n{run}\r\n#",
        "nul": f"f\x00\n{run}\n#",
        "form_feed": f"f\x0c\n{run}\n#",
        "double_quotes": f'f"""\n{run}\n"""',
        "single_quotes": f"f'''\n{run}\n'''",
        "quote_close": f"f'); {run}; ('",
        "backslash": f"f\\\n{run}\\",
        "line_separator": f"f\u2028{run}\u2028#",
        "paragraph_separator": f"f\u2029{run}",
        "next_line": f"f\u0085{run}\u0085#",
        "very_long": "f" * 5000 + f"\n{run}\n" + "g" * 5000,
        "unicode": "x\u00b2\ufb01\u00e9\u210c",
        "empty": "",
        "keyword": "lambda",
        "numpy": "np",
    }


@pytest.fixture
def marker(tmp_path):
    path = tmp_path / "PWNED"
    yield path
    assert not path.exists(), "user text ran as code"


def _check_source(source: str):
    """Valid Python, ASCII, and no line break other than `\\n`."""
    ast.parse(source)
    compile(source, "<check>", "exec")
    assert source.isascii()
    assert "\r" not in source and "\x00" not in source and "\x0c" not in source
    assert source.splitlines() == source.split("\n")[:-1]


def _square_sum(x):
    return tf.reduce_sum(x * x)


def _named(fn, name):
    """A copy of `fn` whose `__name__` and `__qualname__` are `name`."""
    copy = types.FunctionType(fn.__code__, fn.__globals__, "placeholder", fn.__defaults__,
                              fn.__closure__)
    copy.__name__ = copy.__qualname__ = name
    return copy


# --- the identifier sanitizer ---------------------------------------------------------------

@pytest.mark.parametrize("case", sorted(hostile_names("m")))
def test_identifier_is_ascii_short_and_idempotent(case):
    name = identifier(hostile_names("m")[case], "arg0")
    assert name.isascii() and name.isidentifier() and len(name) <= IDENTIFIER_MAX
    assert identifier(name, "arg7") == name
    assert name not in ("lambda", "np")


def test_unique_identifiers_numbers_names_that_collide():
    names = unique_identifiers(["x", "x_", "_x_", "a-b", "a_b", "x_2", "y" * 60, "y" * 61],
                               [f"arg{i}" for i in range(8)])
    assert len(set(names)) == len(names)
    assert names[:3] == ["x", "x_2", "x_3"] and names[5] == "x_2_2"
    assert all(n.isidentifier() and len(n) <= IDENTIFIER_MAX for n in names)
    assert [identifier(n, "z") for n in names] == names


# --- tapec.function, grad, value_and_grad, jacobian, hessian ------------------------------

@pytest.mark.parametrize("form", FORMS)
def test_a_hostile_function_name_never_runs(form, marker):
    x = np.array([1.0, 2.0, 3.0])
    for case, name in hostile_names(marker).items():
        compiled = getattr(tf, form)(_named(_square_sum, name))
        result = compiled(x)
        assert not marker.exists(), f"{form}: the name {case!r} ran as code"
        source = compiled.source(x)
        _check_source(source)
        expected = getattr(tf, form)(_square_sum)(x)
        for got, want in zip(tf.nest.flatten(result), tf.nest.flatten(expected)):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("form", FORMS)
def test_hostile_keyword_names_are_safe_distinct_parameters(form, marker):
    def f(x, **rest):
        return tf.reduce_sum(x * x * sum(rest.values()))
    x = np.array([1.0, 2.0])
    # "\u210c" and "H" are one name after Python's NFKC normalization, "x\u00b2" is no
    # identifier, "a-b" and "a_b" are one after sanitizing: each must stay its own.
    keys = list(hostile_names(marker).values()) + ["\u210c", "H", "x\u00b2", "a-b", "a_b"]
    kwargs = {key: np.full(2, 0.5 + k) for k, key in enumerate(keys)}
    compiled = getattr(tf, form)(f)
    result = compiled(x, **kwargs)
    source = compiled.source(x, **kwargs)
    _check_source(source)
    header = next(line for line in source.splitlines() if line.startswith("def function("))
    params = header[len("def function("):-2].split(", ")
    assert len(params) == len(set(params)) >= len(keys)     # a hessian needs no x
    expected = getattr(tf, form)(lambda x: f(x, **kwargs))(x)
    for got, want in zip(tf.nest.flatten(result), tf.nest.flatten(expected)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want))


def _collisions():
    """(function, positional args, keyword args, argnums): parameter names that are equal
    after sanitizing, or equal to the name of another parameter's nested leaf."""
    def trailing(x, x_):
        return tf.reduce_sum(x * x_ * x_)

    def keyword_only(x, *, x_):
        return tf.reduce_sum(x * x * x_)

    def underscores(_a, a, a_):
        return tf.reduce_sum(_a * a * a_ * a)

    def nested(x, x_0):
        return tf.reduce_sum(x[0] * x[1] * x_0 * x_0)

    def nested_dict(x, x_1):
        return tf.reduce_sum(x["p"] * x["q"] * x_1 * x_1)

    def positional_overflow(arg1, *args):
        return tf.reduce_sum(arg1 * args[0] * args[0])

    def keyword_mangled(x, **kw):
        return tf.reduce_sum(x * x * kw["a-b"] * kw["a_b"])

    one, two = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    return {
        "x_and_x_": (trailing, (one, two), {}, 0),
        "keyword_only": (keyword_only, (one,), {"x_": two}, 0),
        "underscores": (underscores, (one, two, one + 1), {}, 1),
        "nested_leaf_name": (nested, ([one, two], two), {}, 1),
        "nested_dict_leaf": (nested_dict, ({"p": one, "q": two}, two), {}, 1),
        "varargs_named_arg1": (positional_overflow, (one, two), {}, 1),
        "keyword_a-b_and_a_b": (keyword_mangled, (one,), {"a-b": two, "a_b": one + 2}, 0),
    }


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("case", sorted(_collisions()))
def test_parameters_equal_after_sanitizing_stay_distinct(form, case):
    fn, args, kwargs, argnums = _collisions()[case]
    compiled = tf.function(fn) if form == "function" else \
        getattr(tf, form)(fn, argnums=argnums)
    result = compiled(*args, **kwargs)
    source = compiled.source(*args, **kwargs)
    _check_source(source)

    def reference(arg):
        call = list(args)
        call[argnums] = arg
        return fn(*call, **kwargs)
    reference_form = tf.function(reference) if form == "function" else \
        getattr(tf, form)(reference)
    expected = reference_form(args[argnums])
    for got, want in zip(tf.nest.flatten(result), tf.nest.flatten(expected)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want))


# --- tape gradients ---------------------------------------------------------------------------

def test_tape_gradients_with_hostile_names(marker):
    names = hostile_names(marker)
    x = tf.constant(np.array([0.5, -1.0]))
    variables = [tf.Variable(np.array([1.0 + k, 2.0]), name=name)
                 for k, name in enumerate(names.values())]

    @tf.custom_gradient
    def double(t):
        return 2.0 * t, lambda g: 2.0 * g
    double.__name__ = names["newline"]

    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(double(x) * sum(tf.tanh(v * x) for v in variables))
    grads = tape.gradient(loss, [x] + variables)
    for g in grads:
        _check_source(tf.generated_source(g))
    assert not marker.exists()


def test_a_tape_inside_a_hostile_function(marker):
    w = tf.Variable(np.array([1.0, -2.0]), name=hostile_names(marker)["double_quotes"])

    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.sin(w * x))
        return tape.gradient(loss, w)
    compiled = tf.function(_named(step, hostile_names(marker)["newline"]))
    x = np.array([0.3, 0.4])
    np.testing.assert_allclose(np.asarray(compiled(x)), x * np.cos(w.numpy() * x))
    _check_source(compiled.source(x))


# --- exported modules -------------------------------------------------------------------------

def _run_module(path, calls, cwd):
    """Import the exported module in a fresh interpreter (in `cwd`) and call functions."""
    code = (f"import sys; sys.path.insert(0, {str(path.parent)!r}); "
            f"import numpy as np; import {path.stem} as m; " + "; ".join(calls))
    done = subprocess.run([sys.executable, "-I", "-c", code], cwd=cwd, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("case", sorted(hostile_names("m")))
def test_export_with_hostile_names_everywhere(case, tmp_path, marker):
    name = hostile_names(marker)[case]
    weight = tf.Variable(np.array([0.5, -1.5]), name=name)
    captured = tf.constant(np.array([2.0, 3.0]))
    glob = np.array([1.0, 4.0])

    def template(x, y):
        return tf.reduce_sum(tf.tanh(x * WEIGHT) * CAPTURED * GLOB + y * y)
    # Global names are user text too: give WEIGHT, CAPTURED and GLOB hostile names.
    hostile = {"WEIGHT": name + "w", "CAPTURED": name + "c", "GLOB": name + "g"}
    code = template.__code__.replace(
        co_names=tuple(hostile.get(n, n) for n in template.__code__.co_names))
    scope = {"tf": tf, name + "w": weight, name + "c": captured, name + "g": glob}
    fn = types.FunctionType(code, scope, "template")
    fn.__name__ = name
    x, y = np.array([0.1, 0.2]), np.array([1.0, -1.0])
    path = tmp_path / "hostile_module.py"
    source = tf.export(fn, (x, y), path, argnums=(0, 1), jacobian=True, hessian=True)
    _check_source(source)
    tree = ast.parse(source)
    functions = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
    assert len(functions) == len(set(functions))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            params = [a.arg for a in node.args.args]
            assert len(params) == len(set(params))
    value = fn(x, y).numpy()
    out = _run_module(path, [f"print(repr(float(m.{functions[-1].replace('hessian_', '')}"
                             "(np.array([0.1, 0.2]), np.array([1.0, -1.0])))))"], tmp_path)
    np.testing.assert_allclose(float(out), value)
    assert not marker.exists()


def test_export_of_a_hostile_closure_and_result_keys(tmp_path, marker):
    names = hostile_names(marker)
    table = tf.constant(np.array([1.0, 2.0]))

    def make():
        def f(x):
            return {names["double_quotes"]: x * table}
        return f
    f = make()
    f.__code__ = f.__code__.replace(co_freevars=tuple(
        names["single_quotes"] if v == "table" else v for v in f.__code__.co_freevars))
    path = tmp_path / "closure_module.py"
    source = tf.export(f, (np.array([1.0, 1.0]),), path, jacobian=True,
                       name=names["line_separator"])
    _check_source(source)
    jacobian = next(node.name for node in ast.parse(source).body
                    if isinstance(node, ast.FunctionDef) and node.name.startswith("jacobian_"))
    out = _run_module(path, [f"(r,) = m.{jacobian}(np.array([1.0, 1.0])).values()",
                             "print(r.tolist())"], tmp_path)
    assert out.strip() == "[[1.0, 0.0], [0.0, 2.0]]"
    assert not marker.exists()


def test_export_parameters_equal_after_sanitizing(tmp_path):
    def f(x, x_, _x):
        return tf.reduce_sum(x * x_ * _x * x)
    args = (np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array([0.5, 0.25]))
    source = tf.export(f, args, tmp_path / "collide.py", argnums=(0, 1, 2))
    _check_source(source)
    assert "def grad_f(x, x_2, x_3):" in source
    out = _run_module(tmp_path / "collide.py",
                      ["print(m.value_and_grad_f(np.array([1.0, 2.0]), np.array([3.0, 4.0]), "
                       "np.array([0.5, 0.25]))[0])"], tmp_path)
    assert float(out) == pytest.approx(float(f(*args).numpy()))


def test_export_never_prints_a_repr_from_user_objects(tmp_path, marker):
    """A Python-number argument is printed into the module (`_fixed`), and so is each
    argument's shape (`_checked`): a subclass whose `__repr__` returns code must not
    reach the file."""
    run = _payload(marker)

    class Number(float):
        def __repr__(self):
            return f"0.5) or {run} or (0"
        __str__ = __repr__

    class Dim(int):
        def __repr__(self):
            return f"0) or {run} or (2"

    class Array(np.ndarray):
        @property
        def shape(self):
            return tuple(Dim(d) for d in np.ndarray.shape.__get__(self))

    def f(x, k):
        return tf.reduce_sum(x * x * k)
    path = tmp_path / "exported_numbers.py"
    source = tf.export(f, (np.ones(2).view(Array), Number(0.5)), path)
    _check_source(source)
    assert "or (0" not in source and "or (2" not in source
    out = _run_module(path, ["print(m.f(np.ones(2), 0.5), m.grad_f(np.ones(2), 0.5))"],
                      tmp_path)
    assert out.split()[0] == "1.0"


# --- LaTeX ----------------------------------------------------------------------------------

def _check_latex(text):
    assert all(ch.isprintable() for ch in text)
    # Every backslash starts a command tapec wrote, never one from the names.
    assert "\\input" not in text and "\\def" not in text and "\\write" not in text


def test_latex_escapes_hostile_names(marker):
    names = list(hostile_names(marker).values()) + ["a}\\input{/etc/passwd", "\\def\\x{1}",
                                                    "\\write18{touch x}"]
    for name in names:
        w = tf.Variable(np.ones((2, 2)), name=name)
        x = tf.constant(np.array([1.0, 2.0]))
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.tanh(tf.linalg.matvec(w, x)))
            s = tf.sin(x[0])
        for text in (tape.latex(y), tape.latex(y, [x, w]),
                     tape.latex(y, [x, w], names=[(x, name + "x"), (y, name)]),
                     tape.latex(s, x, names={x.ref(): name})):
            _check_latex(text)


# --- the command line ------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["newline", "carriage_return", "double_quotes",
                                  "line_separator"])
def test_cli_with_a_hostile_function_name(case, tmp_path, marker, simplify_mode):
    if simplify_mode == "off":
        pytest.skip("the commands run in a subprocess: the simplify setting does not reach it")
    name = hostile_names(marker)[case]
    (tmp_path / "model.py").write_text(
        "import numpy as np\n\n"
        "def quad(x, x_):\n    return np.sum(x * x_ * x)\n\n"
        f"quad.__name__ = quad.__qualname__ = {name!r}\n", encoding="utf-8")
    run = [sys.executable, "-m", "tapec"]
    env = {**os.environ, "PYTHONPATH": str(pathlib.Path(tf.__file__).parents[1])}
    done = subprocess.run([*run, "export", "model.py:quad", "--arg", "x=float64[3]",
                           "--arg", "x_=float64[3]", "-o", "out.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    _check_source((tmp_path / "out.py").read_text(encoding="utf-8"))
    _run_module(tmp_path / "out.py", ["print(1)"], tmp_path)
    done = subprocess.run([*run, "latex", "model.py:quad", "--arg", "x=float64[3]",
                           "--arg", "x_=float64[3]"], cwd=tmp_path, capture_output=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode("utf-8")
    # "<label> = <value>", "", "derivative:", "<derivative>": no line break from the name.
    assert out.count("\n") == 4 and "\r" not in out and "\u2028" not in out
    assert all(ch.isprintable() for ch in out.replace("\n", ""))
