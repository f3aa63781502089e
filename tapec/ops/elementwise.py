"""Elementwise ops. Each is one declaration: NumPy ufunc, SymPy expression, code template.

The SymPy expression drives the derivative (see `sympy_rules`), the LaTeX and the
elementwise fusion of the simplifier; the ufunc drives eager evaluation and code.
Broadcasting follows NumPy; cotangents are summed back to each input's shape by the
reverse pass.
"""
from __future__ import annotations

import numpy as np

from . import sympy_rules
from . import scalar_forms as fast
from ..namespaces.errors import invalid_argument
from ..tensor import Tensor, _used
from .registry import (ATOM, FUNCTION_COST, POWER, PRODUCT, REGISTRY, SUM, UNARY, Op, apply,
                       declare, to_tensors)
from .shape import fill, reshape


def _same_dtype(name, tensors):
    first = tensors[0]
    for t in tensors[1:]:
        if t._dtype != first._dtype:
            raise TypeError(
                f"{name}: operands have different dtypes, {first._dtype.name} {first._shape} "
                f"and {t._dtype.name} {t._shape}; cast one with tapec.cast")
    return first._dtype


def _broadcast(name, tensors):
    first = tensors[0]._shape
    if all(t._shape == first for t in tensors):
        return first
    try:
        return np.broadcast_shapes(*(t._shape for t in tensors))
    except ValueError:
        shapes = " and ".join(str(t._shape) for t in tensors)
        raise invalid_argument(f"{name}: shapes {shapes} cannot be broadcast together") \
            from None


def _result_infer(name, kinds, result_dtype=None):
    """Shape/dtype rule: same dtypes, broadcast shapes, dtype kind among `kinds`."""
    def infer(*tensors):
        dtype = _same_dtype(name, tensors)
        if dtype.kind not in kinds:
            allowed = {"f": "floating", "c": "complex", "i": "integer", "u": "unsigned",
                       "b": "bool"}
            raise TypeError(f"{name}: dtype {dtype.name} is not supported (expects "
                            f"{' or '.join(allowed[k] for k in kinds)} tensors)")
        out = dtype if result_dtype is None else result_dtype(dtype)
        return _broadcast(name, tensors), out
    return infer


def _vjp_from_sympy(name):
    sympy_rules.REPLAYED.add(name)
    op = None

    def vjp(g, out, *inputs):
        nonlocal op
        if op is None:
            op = REGISTRY[name]
        literals = tuple(_literal_value(x) for x in inputs)
        cotangents = []
        for i in range(len(inputs)):
            if literals[i] is not None:          # a literal: no gradient flows into it
                cotangents.append(None)
                continue
            steps = sympy_rules.cotangent_steps(op, i, literals)
            if steps is None:       # a zero derivative (x * 0.0): connected, so zeros
                cotangents.append(fill(inputs[i]._shape, 0, inputs[i]._dtype))
                continue
            cotangents.append(sympy_rules.replay(steps, (g, out) + inputs))
        return tuple(cotangents)
    return vjp


def batch_elementwise(op):
    """Batching rule of an elementwise op: line the batch axis up in front of every
    argument's broadcast axes, then let NumPy broadcasting do the rest."""
    def batch(args, batched, size, **attrs):
        rank = max(len(a._shape) - flag for a, flag in zip(args, batched))
        return apply(op, *(pad_batched(a, rank) if flag else a
                           for a, flag in zip(args, batched)), **attrs)
    return batch


def pad_batched(x, rank):
    """A batched tensor (size, *s) reshaped to (size, 1, ..., 1, *s) of rank 1 + rank."""
    inner = x._shape[1:]
    if len(inner) == rank:
        return x
    return reshape(x, (x._shape[0],) + (1,) * (rank - len(inner)) + inner)


def _literal_value(t):
    """The value of a literal operand a rule may specialise on; None for a fed float
    (`Op.fed_scalars`), whose rule must not depend on its value."""
    node = t._node
    if node is not None and node.op.name == "constant" and "fed" not in node.attrs:
        return node.attrs["value"]
    return None


def elementwise(name, ufunc, sympy_fn, template, arity, kinds="fc", latex=None,
                result_dtype=None, differentiable=True, vjp=None, scalar=None, c=None,
                cost=FUNCTION_COST, precedence=None, numexpr=None, numexpr_precedence=None,
                domain=None, fed_scalars=False, array_api=None):
    """Declare an elementwise op from its ufunc and SymPy expression.

    The VJP is derived from `sympy_fn` unless `vjp` is given (for the few ops whose
    SymPy derivative is a distribution, such as sign). `scalar`, a format string
    like `template` or a `scalar(args, node)` function, is the Python-float form for
    the fast path of 0-d float64 graphs (see `codegen.scalar`); it must compute
    bit for bit what the ufunc computes; `c`, likewise, is its C form for that path's
    native tier (`codegen.native`). `cost`, `precedence`, `numexpr` and
    `numexpr_precedence` are the facets fusion prints and costs the op by (see `Op`):
    a call costs FUNCTION_COST unless it says otherwise. `domain`, one tuple of
    intervals per input, is where tests draw its arguments (default (-1.5, 1.5)).
    `fed_scalars`: see `Op.fed_scalars`. `array_api`, a format string like `template`,
    is its spelling in the array-API form (codegen/array_api.py) where `template`, read
    with `xp` for `np`, is not the standard."""
    if vjp is None and differentiable and sympy_fn is not None:
        vjp = _vjp_from_sympy(name)
    op = declare(Op(
        name=name,
        impl=ufunc,
        infer=_result_infer(name, kinds, result_dtype),
        vjp=vjp,
        numpy=lambda args, node: template.format(*args),
        array_api=None if array_api is None else lambda args, node: array_api.format(*args),
        scalar=(lambda args, node: scalar.format(*args)) if isinstance(scalar, str)
        else scalar,
        c=fast.c_format(c) if isinstance(c, str) else c,
        latex=latex,
        differentiable=differentiable,
        arity=arity, sympy=sympy_fn, template=template,
        cost=cost, precedence=precedence, numexpr=numexpr, numexpr_precedence=numexpr_precedence,
        domain=domain, fed_scalars=fed_scalars,
    ))
    op.batch = batch_elementwise(op)
    return op


# Test domains (`Op.domain`): away from a kink or a pole at 0, positive, and |x| < 1.
AWAY_FROM_ZERO = ((-2.0, -0.1), (0.1, 2.0))
POSITIVE = ((0.2, 2.0),)
INSIDE_UNIT = ((-0.9, 0.9),)


def _sp():
    return sympy_rules.sympy()


FLOAT = "fc"
NUMERIC = "fciu"

NEGATIVE = elementwise("negative", np.negative, lambda x: -x, "-{0}", 1, NUMERIC,
                       scalar="-{0}", c="-{0}", cost=1, precedence=UNARY, latex="-{0}")
ABS = elementwise("abs", np.abs, lambda x: _sp().Abs(x), "np.abs({0})", 1, NUMERIC,
                  scalar="abs({0})", c="fabs({0})", cost=1, precedence=ATOM, numexpr="abs({0})",
                  latex=r"\left|{0}\right|", domain=(AWAY_FROM_ZERO,))
# sign' is zero almost everywhere (SymPy says 2*DiracDelta); TensorFlow's gradient is zeros.
SIGN = elementwise("sign", np.sign, lambda x: _sp().sign(x), "np.sign({0})", 1, NUMERIC,
                   vjp=lambda g, out, x: (fill(x._shape, 0, x._dtype),),
                   scalar=fast.sign, c=fast.in_c(fast.sign), cost=1, precedence=ATOM, numexpr="sign({0})",
                   latex=r"\operatorname{{sign}}\left({0}\right)", domain=(AWAY_FROM_ZERO,))
SQUARE = elementwise("square", np.square, lambda x: x ** 2, "np.square({0})", 1, NUMERIC,
                    scalar="{0} * {0}", c="{0} * {0}", cost=1, precedence=ATOM,
                    numexpr="{0}**2", numexpr_precedence=POWER, latex="{0}^{{2}}")


def _sqrt_vjp(g, out, x):
    """g / (2 sqrt x), and 0 where g is 0 even at x = 0, as TensorFlow's SqrtGrad (so the
    zero gradient of a norm at 0 times 0 is 0, not nan). Only the 0/0 point is changed:
    the derivative with respect to g stays 1/(2 sqrt x) elsewhere, for Hessians."""
    both_zero = equal(add(out, abs(g)), 0)       # out = sqrt(x) is never negative
    return (divide(multiply(g, 0.5), where(both_zero, 1, out)),)


def _function(name, ufunc, sympy_fn, latex_head, **kwargs):
    """A unary op that is a NumPy ufunc applied to x: its NumPy and numexpr spellings are
    the ufunc's name, its LaTeX `latex_head` applied to the argument."""
    call = ufunc.__name__ + "({0})"
    return elementwise(name, ufunc, sympy_fn, "np." + call, 1, precedence=ATOM, numexpr=call,
                       array_api=f"xp.{name}({{0}})",
                       latex=latex_head + r"\left({0}\right)", **kwargs)


SQRT = elementwise("sqrt", np.sqrt, lambda x: _sp().sqrt(x), "np.sqrt({0})", 1,
                   vjp=_sqrt_vjp, scalar="math.sqrt({0})", c="sqrt({0})",
                   cost=4, precedence=ATOM, numexpr="sqrt({0})",
                   latex=r"\sqrt{{{0}}}", domain=(POSITIVE,))
EXP = _function("exp", np.exp, lambda x: _sp().exp(x), r"\exp")
LOG = _function("log", np.log, lambda x: _sp().log(x), r"\log", domain=(POSITIVE,))
SIN = _function("sin", np.sin, lambda x: _sp().sin(x), r"\sin", scalar=fast.libm("sin", np.sin),
                c=fast.libm("sin", np.sin, c=True))
COS = _function("cos", np.cos, lambda x: _sp().cos(x), r"\cos", scalar=fast.libm("cos", np.cos),
                c=fast.libm("cos", np.cos, c=True))
TANH = _function("tanh", np.tanh, lambda x: _sp().tanh(x), r"\tanh")


def _erf_impl(x):
    import math as _math
    return np.vectorize(_math.erf, otypes=[x.dtype])(x)


EXPM1 = _function("expm1", np.expm1, lambda x: _sp().exp(x) - 1, r"\operatorname{{expm1}}")
LOG1P = _function("log1p", np.log1p, lambda x: _sp().log(1 + x), r"\operatorname{{log1p}}",
                  domain=(((-0.5, 2.0),),))
TAN = _function("tan", np.tan, lambda x: _sp().tan(x), r"\tan", domain=(((-1.2, 1.2),),))
ASIN = _function("asin", np.arcsin, lambda x: _sp().asin(x), r"\arcsin", domain=(INSIDE_UNIT,))
ACOS = _function("acos", np.arccos, lambda x: _sp().acos(x), r"\arccos", domain=(INSIDE_UNIT,))
ATAN = _function("atan", np.arctan, lambda x: _sp().atan(x), r"\arctan")
SINH = _function("sinh", np.sinh, lambda x: _sp().sinh(x), r"\sinh")
COSH = _function("cosh", np.cosh, lambda x: _sp().cosh(x), r"\cosh")
# NumPy has no erf ufunc: the standard library's math.erf, vectorized, is exact (and slow).
ERF = elementwise("erf", _erf_impl, lambda x: _sp().erf(x),
                  "np.vectorize(math.erf, otypes=[{0}.dtype])({0})", 1,
                  scalar="math.erf({0})", latex=r"\operatorname{{erf}}\left({0}\right)",
                  array_api="tapec_xp_erf(xp, {0})")


def _sigmoid_impl(x):
    """exp(min(x, 0)) / (1 + exp(-|x|)): 1/(1+e) for x >= 0 and e/(1+e) for x < 0 with
    e = exp(-|x|) <= 1, so nothing overflows or cancels. (The former (1 + tanh(x/2))/2
    cancelled for x << 0: float32 sigmoid(-20) was 0, not 2.06e-9.) Bit for bit the
    template's expression; large arrays are computed in place (fewer temporaries)."""
    if x.size < 4096:
        return np.exp(np.minimum(x, 0)) / (1 + np.exp(-np.abs(x)))
    denominator = np.abs(x)
    np.negative(denominator, out=denominator)
    np.exp(denominator, out=denominator)
    denominator += 1
    numerator = np.minimum(x, 0)
    np.exp(numerator, out=numerator)
    numerator /= denominator
    return numerator


# sigmoid' = out * (1 - out), TensorFlow's SigmoidGrad (0 where out rounds to 1, as there).
SIGMOID = elementwise("sigmoid", _sigmoid_impl, lambda x: 1 / (1 + _sp().exp(-x)),
                      "np.exp(np.minimum({0}, 0)) / (1 + np.exp(-np.abs({0})))", 1,
                      vjp=lambda g, out, x: (g * (out * (1 - out)),), precedence=PRODUCT,
                      array_api="xp.exp(xp.minimum({0}, xp.zeros_like({0}))) / "
                                "(1 + xp.exp(-xp.abs({0})))",
                      latex=r"\sigma\left({0}\right)")
# softplus = log(1 + e^x) = logaddexp(0, x); its derivative is sigmoid, without overflow.
SOFTPLUS = elementwise("softplus", lambda x: np.logaddexp(0, x),
                       lambda x: _sp().log(1 + _sp().exp(x)), "np.logaddexp(0, {0})", 1,
                       vjp=lambda g, out, x: (g * sigmoid(x),), precedence=ATOM,
                       array_api="xp.logaddexp(xp.zeros_like({0}), {0})",
                       latex=r"\operatorname{{softplus}}\left({0}\right)")
# relu' is 1 where x > 0 and 0 elsewhere (0 at the kink, as TensorFlow).
RELU = elementwise("relu", lambda x: np.maximum(x, 0), lambda x: _sp().Max(x, 0),
                   "np.maximum({0}, 0)", 1, kinds="fiu",
                   vjp=lambda g, out, x: (where(greater(x, 0), g, 0),), scalar=fast.relu, c=fast.in_c(fast.relu),
                   cost=1, precedence=ATOM, numexpr="maximum({0}, 0)",
                   array_api="xp.maximum({0}, xp.zeros_like({0}))",
                   latex=r"\operatorname{{relu}}\left({0}\right)", domain=(AWAY_FROM_ZERO,))
# floor and round are piecewise constant: no gradient (None), as TensorFlow.
FLOOR = elementwise("floor", np.floor, None, "np.floor({0})", 1, differentiable=False,
                    latex=r"\operatorname{{floor}}\left({0}\right)")
ROUND = elementwise("round", np.round, None, "np.round({0})", 1, differentiable=False,
                    latex=r"\operatorname{{round}}\left({0}\right)")

ADD = elementwise("add", np.add, lambda x, y: x + y, "{0} + {1}", 2, NUMERIC,
                  scalar="{0} + {1}", c="{0} + {1}", cost=1, precedence=SUM, latex="{0} + {1}",
                  fed_scalars=True)
SUBTRACT = elementwise("subtract", np.subtract, lambda x, y: x - y, "{0} - {1}", 2, NUMERIC,
                       scalar="{0} - {1}", c="{0} - {1}", cost=1, precedence=SUM, latex="{0} - {1}",
                       fed_scalars=True)
MULTIPLY = elementwise("multiply", np.multiply, lambda x, y: x * y, "{0} * {1}", 2, NUMERIC,
                       scalar="{0} * {1}", c="{0} * {1}", cost=1, precedence=PRODUCT,
                       latex=r"{0} \circ {1}", fed_scalars=True)


def _divide_vjp(g, out, x, y):
    """g / y and g * (-out / y), TensorFlow's (-x / y) / y: SymPy's -x / y**2 overflows
    y**2 (float32 1e30 / 1e20 gave d/dy = -0, not -1e-10) or underflows it (1e-30 /
    1e-30 gave -inf, not -1e30). A literal numerator keeps SymPy's rule (2 / y -> -2g/y**2,
    which simplifies with the rest); a literal denominator has no cotangent of its own."""
    if _literal_value(x) is not None:
        return _DIVIDE_SYMPY_VJP(g, out, x, y)
    if _literal_value(y) is not None:
        return g / y, None
    return g / y, g * (-out / y)


DIVIDE = elementwise("divide", np.true_divide, lambda x, y: x / y, "{0} / {1}", 2, NUMERIC,
                     result_dtype=lambda d: d if d.kind in "fc" else
                     np.dtype(np.float64 if d.itemsize >= 4 else np.float32),
                     scalar="{0} / {1}", c="{0} / {1}", vjp=lambda g, out, x, y: _divide_vjp(g, out, x, y),
                     cost=4, precedence=PRODUCT, latex=r"\frac{{{0}}}{{{1}}}",
                     domain=(((-1.5, 1.5),), AWAY_FROM_ZERO), fed_scalars=True)
_DIVIDE_SYMPY_VJP = _vjp_from_sympy("divide")


def _pow_vjp(g, out, x, y):
    """TensorFlow's rule, d/dx = y * x**(y - 1) and d/dy = out * log(x) masked to 0 where
    x <= 0, except that d/dx is 0 at x = 0 with y == 0 (x**0 is constant; TensorFlow
    gives nan there). Only that point is masked, so d/dx keeps its derivative in y
    (d2/dxdy = 1/x at y == 0) everywhere else. SymPy's y * x**y / x would be nan at x = 0
    and x = +-inf. A literal exponent (or a positive finite literal base) keeps SymPy's
    rule: x**2 gives 2*x."""
    base, exponent = _literal_value(x), _literal_value(y)
    if exponent is not None and exponent != 0 or \
            base is not None and np.isfinite(base) and base > 0:
        return _POW_SYMPY_VJP(g, out, x, y)
    if base is not None:
        dx = None
    elif exponent is not None:         # x ** 0.0
        dx = fill(x._shape, 0, x._dtype)
    else:
        dx = g * where(logical_and(equal(y, 0), equal(x, 0)), 0, y * pow(x, y - 1))
    if exponent is not None:
        return dx, None
    positive = greater(x, 0)
    log_x = where(positive, log(where(positive, x, 1)), 0)
    return dx, g * (out * log_x)


POW = elementwise("pow", np.power, lambda x, y: x ** y, "{0} ** {1}", 2, NUMERIC,
                  vjp=lambda g, out, x, y: _pow_vjp(g, out, x, y), precedence=POWER,
                  # by a literal exponent: x**2 is one multiply, x**0.5 a sqrt, x**-1 a division
                  cost=lambda x, y: {2: 1, 1: 0, 0.5: 4, -1: 4}.get(y, FUNCTION_COST),
                  latex="{0}^{{{1}}}", domain=(POSITIVE, ((-1.5, 1.5),)))
_POW_SYMPY_VJP = _vjp_from_sympy("pow")
def _selection(name, ufunc, sympy_name, keeps_first, scalar, latex_head):
    """maximum / minimum: the gradient goes to x where `keeps_first(x, y)` holds (ties
    included, as TensorFlow's Maximum/Minimum), to y elsewhere."""
    return elementwise(name, ufunc, lambda x, y: getattr(_sp(), sympy_name)(x, y),
                       f"np.{name}({{0}}, {{1}})", 2, "fiu",
                       vjp=lambda g, out, x, y: (where(keeps_first(x, y), g, 0),
                                                 where(keeps_first(x, y), 0, g)),
                       scalar=scalar, c=fast.in_c(scalar), cost=1, precedence=ATOM,
                       numexpr=f"{name}({{0}}, {{1}})",
                       latex=latex_head + r"\left({0}, {1}\right)")


MAXIMUM = _selection("maximum", np.maximum, "Max", lambda x, y: greater_equal(x, y),
                     fast.maximum, r"\max")
MINIMUM = _selection("minimum", np.minimum, "Min", lambda x, y: less_equal(x, y),
                     fast.minimum, r"\min")

_BOOL = lambda d: np.dtype(np.bool_)  # noqa: E731
LESS = elementwise("less", np.less, None, "{0} < {1}", 2, "fiub", result_dtype=_BOOL,
                   differentiable=False, scalar="{0} < {1}", c="{0} < {1}", latex="{0} < {1}")
LESS_EQUAL = elementwise("less_equal", np.less_equal, None, "{0} <= {1}", 2, "fiub",
                         result_dtype=_BOOL, differentiable=False, scalar="{0} <= {1}", c="{0} <= {1}",
                         latex=r"{0} \le {1}")
GREATER = elementwise("greater", np.greater, None, "{0} > {1}", 2, "fiub",
                      result_dtype=_BOOL, differentiable=False, scalar="{0} > {1}", c="{0} > {1}",
                      latex="{0} > {1}")
GREATER_EQUAL = elementwise("greater_equal", np.greater_equal, None, "{0} >= {1}", 2, "fiub",
                            result_dtype=_BOOL, differentiable=False, scalar="{0} >= {1}", c="{0} >= {1}",
                            latex=r"{0} \ge {1}")
EQUAL = elementwise("equal", np.equal, None, "{0} == {1}", 2, "fciub", result_dtype=_BOOL,
                    differentiable=False, scalar="{0} == {1}", c="{0} == {1}", latex="{0} = {1}")
NOT_EQUAL = elementwise("not_equal", np.not_equal, None, "{0} != {1}", 2, "fciub",
                        result_dtype=_BOOL, differentiable=False, scalar="{0} != {1}", c="{0} != {1}",
                        latex=r"{0} \ne {1}")
LOGICAL_AND = elementwise("logical_and", np.logical_and, None, "np.logical_and({0}, {1})", 2,
                          "b", differentiable=False, scalar="({0} and {1})", c="({0} && {1})",
                          latex=r"\operatorname{{logical\_and}}\left({0}, {1}\right)")
LOGICAL_OR = elementwise("logical_or", np.logical_or, None, "np.logical_or({0}, {1})", 2,
                         "b", differentiable=False, scalar="({0} or {1})", c="({0} || {1})",
                         latex=r"\operatorname{{logical\_or}}\left({0}, {1}\right)")
LOGICAL_NOT = elementwise("logical_not", np.logical_not, None, "np.logical_not({0})", 1, "b",
                          differentiable=False, scalar="not {0}", c="(!{0})",
                          latex=r"\operatorname{{logical\_not}}\left({0}\right)")


def _where_infer(condition, x, y):
    if condition._dtype.kind != "b":
        raise TypeError(f"where: condition must be a bool tensor, got dtype "
                        f"{condition._dtype.name}")
    return _broadcast("where", (condition, x, y)), _same_dtype("where", (x, y))


WHERE = declare(Op(
    name="where", impl=np.where, infer=_where_infer,
    vjp=lambda g, out, c, x, y: (None, where(c, g, 0), where(c, 0, g)),
    numpy=lambda args, node: f"np.where({args[0]}, {args[1]}, {args[2]})",
    scalar=lambda args, node: f"{args[1]} if {args[0]} else {args[2]}",
    c=fast.c_format("({0} ? {1} : {2})"),
    latex=r"\begin{{cases}} {1} & {0} \\ {2} & \text{{otherwise}} \end{{cases}}",
    arity=3))
WHERE.batch = batch_elementwise(WHERE)


def where(condition, x=None, y=None, name=None):
    """Elements of `x` where `condition` holds, else of `y` (broadcasting all three).

    With `x` and `y` omitted, the int64 coordinates of the true elements, as TensorFlow."""
    (condition,) = to_tensors("where", [condition])
    if x is None and y is None:
        # The coordinates' count is the output's shape: a trace guards on the condition.
        value = _used(condition, condition._eager_value("where"))
        return Tensor._eager(_frozen(np.argwhere(value)))
    if x is None or y is None:
        raise ValueError("where: pass both x and y, or neither")
    x, y = to_tensors("where", [x, y])
    return apply(WHERE, condition, x, y)


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """`t` limited to [min, max]; the gradient passes where min <= t <= max."""
    return minimum(maximum(t, clip_value_min), clip_value_max)


def _frozen(array):
    array.flags.writeable = False
    return array


# Public functions, under TensorFlow's names and signatures: f(x, name=None) and
# f(x, y, name=None).
def _public(op):
    if op.arity == 1:
        def function(x, name=None):
            return apply(op, x)
    else:
        def function(x, y, name=None):
            return apply(op, x, y)
    function.__name__ = function.__qualname__ = op.name
    function.__doc__ = f"Elementwise {op.name} (NumPy broadcasting), recorded on watching tapes."
    return function


(negative, abs, sign, square, sqrt, exp, log, sin, cos, tanh, expm1, log1p, tan, asin,  # noqa
 acos, atan, sinh, cosh, erf, sigmoid, softplus, relu, floor, round, logical_not) = map(
    _public, (NEGATIVE, ABS, SIGN, SQUARE, SQRT, EXP, LOG, SIN, COS, TANH, EXPM1, LOG1P, TAN,
              ASIN, ACOS, ATAN, SINH, COSH, ERF, SIGMOID, SOFTPLUS, RELU, FLOOR, ROUND,
              LOGICAL_NOT))
add, subtract, multiply, divide, pow, maximum, minimum, logical_and, logical_or = map(  # noqa
    _public, (ADD, SUBTRACT, MULTIPLY, DIVIDE, POW, MAXIMUM, MINIMUM, LOGICAL_AND, LOGICAL_OR))
less, less_equal, greater, greater_equal, equal, not_equal = map(
    _public, (LESS, LESS_EQUAL, GREATER, GREATER_EQUAL, EQUAL, NOT_EQUAL))

__all__ = ["negative", "abs", "sign", "square", "sqrt", "exp", "log", "sin", "cos", "tanh",
           "expm1", "log1p", "tan", "asin", "acos", "atan", "sinh", "cosh", "erf", "sigmoid",
           "softplus", "relu", "floor", "round", "add", "subtract", "multiply", "divide", "pow",
           "maximum", "minimum", "where", "clip_by_value", "less", "less_equal", "greater",
           "greater_equal", "equal", "not_equal", "logical_and", "logical_or", "logical_not"]
