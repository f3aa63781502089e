"""The Python-float fast path of generated code, for graphs of 0-d float64 values.

A NumPy call on a 0-d array costs 100-250 ns of dispatch for one multiplication;
the same operation on Python floats costs 15-40 ns. So when every node a gradient
function computes is 0-d and float64 (bool for the conditions of `where`), and every
op it computes has a `scalar` template, `emit` writes the function twice and a
dispatcher in front of them:

    def gradient(*args):                     # what the engine calls (`Compiled.fn`)
        try:
            return gradient_scalar(*args)
        except (ArithmeticError, ValueError):
            return gradient_numpy(*args)

    def gradient_scalar(x0, sin1):           # Python floats and `math`
        x0 = float(x0)
        ...

    def gradient_numpy(x0, sin1):            # the ordinary NumPy version
        ...

`tapec.generated_source(g, full=True)` shows all three; without `full`, only the NumPy
function, under the dispatcher's name (emit.readable). The dispatcher is the compiled function
(`Compiled.fn`), so the engine calls it as before and wraps the float results as 0-d
arrays of the source dtype, as it wraps NumPy results.

Where IEEE arithmetic gives inf or nan, Python raises instead: ZeroDivisionError for
`x / 0.0`, ValueError for `math.sqrt(-1.0)` or `math.sin(inf)`, OverflowError for
`math.exp(1000.0)`. The dispatcher then runs the NumPy version of the same call, so
results, infinities and NaNs included, are NumPy's. Both versions are compiled
together, once, and cached as one entry.

Float32 graphs never take the fast path: Python floats compute in float64 and would
round differently. Any other dtype or shape, or an op without a template, gives the
plain NumPy function (named `gradient`, as before).

The contract is bit-identity with the NumPy version, not closeness. An op gets a
template only where the float expression is the computation NumPy performs:

  * IEEE-exact operations: add, subtract, multiply, divide, negative, abs, square
    (NumPy computes x*x), sqrt (correctly rounded in both), comparisons, logical
    ops, where, and the structural no-ops identity, stop_gradient, read_variable,
    constant and 0-d fill;
  * sign, maximum, minimum and relu as conditional expressions that reproduce
    NumPy's NaN propagation and its choice between -0.0 and 0.0 at ties (probed
    once from NumPy, because its SIMD loops return the second operand at ties);
  * sin and cos: NumPy's float64 loops call the C library's sin/cos, which is what
    `math.sin`/`math.cos` call. A probe over a thousand arguments disables them if
    this NumPy disagrees (a vectorized implementation would show within it);
  * erf: tapec evaluates it with `math.erf` in both versions.

Deliberately left without a template (NumPy's float64 loop is not the C library's
on AVX-512 machines, measured to differ in the last bit on 0.03% to 26% of arguments):
exp, log, expm1, log1p, tanh (hence sigmoid), tan, asin, acos, atan, sinh, cosh and
pow (NumPy's power ufunc uses a vectorized pow, and generated NumPy code calls the
C library's pow or the ufunc depending on whether an operand is a 0-d array, so no
single float expression matches it). softplus is never computed by gradient code
(its derivative is sigmoid), so it has none either. Graphs that compute any of these
keep the NumPy function; their forward values, fed as arguments, are fine.
"""
from __future__ import annotations

import re

import numpy as np

from .expressions import PLACEHOLDERS

# The exceptions by which Python float arithmetic reports what IEEE gives as inf/nan.
FALLBACK_ERRORS = "(ArithmeticError, ValueError)"

_FLOAT64 = np.dtype(np.float64)
_FLOAT32 = np.dtype(np.float32)
_BOOL = np.dtype(np.bool_)


def eligible(order, outputs) -> bool:
    """Whether every node is 0-d float64 (or a bool condition) and every output float64."""
    results = [o for o in outputs if o is not None]
    if not results or any(o.dtype != _FLOAT64 for o in results):
        return False
    return all(n.shape == () and (n.dtype == _FLOAT64 or n.dtype == _BOOL) for n in order)


class NoFloatForm(Exception):
    """A node of the graph has no Python-float form: the function stays NumPy only."""


class _FloatForm:
    """How nodes print in the Python-float body (emit.statements' `form`): their ops'
    `scalar` templates; a node without one (or one its template declines) raises
    NoFloatForm."""

    @staticmethod
    def _template(node, args):
        text = None if node.op.scalar is None else node.op.scalar(args, node)
        if text is None:
            raise NoFloatForm(node.op.name)
        return text

    def constant(self, node):
        return self._template(node, [])

    @staticmethod
    def placeholder(node):
        raise NoFloatForm(node.op.name)

    @staticmethod
    def multiline(node):
        return False

    def expression(self, node, args):
        return self._template(node, args)

    def shape(self, node):
        return self._template(node, PLACEHOLDERS[:len(node.inputs)])


FLOATS = _FloatForm()


def conversions(fed: dict) -> list:
    """Fed values arrive as 0-d arrays: converted once, on entry, in parameter order."""
    return [f"{name} = {'float' if n.dtype == _FLOAT64 else 'bool'}({name})"
            for n, name in fed.items()]


def all_float(fed: dict) -> bool:
    """Whether every fed value is float64 (the dispatcher may then convert them all)."""
    return all(n.dtype == _FLOAT64 for n in fed)


def dispatcher(fn_name: str, convert: bool = False) -> list:
    """The function the engine calls: the float version, NumPy's where floats raise.

    It passes `*args` through: spelling out the parameters would copy them twice, which
    costs as much as a tenth of the float body of a graph with thousands of arguments.
    With `convert` (long programs, every argument float64) it converts the arguments
    itself, so the float body has no statement per parameter to compile."""
    arguments = "*map(float, args)" if convert else "*args"
    return [f"def {fn_name}(*args):",
            '    """0-d float64: Python floats, or NumPy where floats raise (inf/nan)."""',
            "    try:",
            f"        return {fn_name}_scalar({arguments})",
            f"    except {FALLBACK_ERRORS}:   # 1/0, sqrt(-1), sin(inf), ...",
            f"        return {fn_name}_numpy(*args)"]


# Python operators that NumPy's scalar math computes with C library functions (power,
# floor division, remainder), where the array loops may use their own; and `out=`.
_NOT_SCALAR_MATH = re.compile(r"\*\*|//|%|out=")


def numpy_scalars(order, outputs, body) -> bool:
    """Whether the NumPy function of a 0-d float32 graph may compute on NumPy scalars
    instead of 0-d arrays. A ufunc call on a 0-d array costs 500-800 ns of dispatch; on
    a NumPy scalar, an operator costs about 100 ns. Float32 has no Python-float path
    (above), so this is its fast path. The values stay NumPy's: every `np.` call on a
    scalar runs the same loop as on a 0-d array, and the operators left in `body` (+, -,
    *, / and negation) are single IEEE operations in the dtype either way."""
    results = [o for o in outputs if o is not None]
    if not results or any(o.dtype != _FLOAT32 for o in results):
        return False
    if not all(n.shape == () and (n.dtype == _FLOAT32 or n.dtype == _BOOL) for n in order):
        return False
    return not any(_NOT_SCALAR_MATH.search(line) for line in body)


def unwrapping(fn_name: str, fed_nodes: list, names: dict) -> list:
    """The dispatcher of a `numpy_scalars` program: it calls `<fn_name>_numpy` with its
    0-d array arguments as NumPy scalars (`x0[()]`; the engine and traces pass arrays)."""
    params = ", ".join(names[n] for n in fed_nodes)
    arguments = ", ".join(f"{names[n]}[()]" for n in fed_nodes)
    return [f"def {fn_name}({params}):",
            '    """0-d float32: the NumPy body computes on NumPy scalars."""',
            f"    return {fn_name}_numpy({arguments})"]
