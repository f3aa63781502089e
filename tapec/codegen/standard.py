"""The names of the array-API standard (2023.12) that generated code may call, and the
check that an array-API template calls nothing else.

https://data-apis.org/array-api/2023.12/API_specification/ is the source of these
lists. `check(text)` parses one template's text (arguments written as placeholders)
and names the first thing outside the standard it finds: a function or constant the
namespace `xp` lacks, a NumPy or `math` call, an array method (arrays of the standard
have attributes, not NumPy's methods), or a keyword argument such as NumPy's `initial=`.
"""
from __future__ import annotations

import ast
import functools

ELEMENTWISE = frozenset("""
abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_left_shift
bitwise_invert bitwise_or bitwise_right_shift bitwise_xor ceil clip conj copysign cos cosh
divide equal exp expm1 floor floor_divide greater greater_equal hypot imag isfinite isinf
isnan less less_equal log log1p log2 log10 logaddexp logical_and logical_not logical_or
logical_xor maximum minimum multiply negative not_equal positive pow real remainder round
sign signbit sin sinh square sqrt subtract tan tanh trunc
""".split())

NAMESPACE = ELEMENTWISE | frozenset("""
arange asarray empty empty_like eye from_dlpack full full_like linspace meshgrid ones
ones_like tril triu zeros zeros_like
astype can_cast finfo iinfo isdtype result_type
bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64 complex64 complex128
e inf nan newaxis pi
take
matmul matrix_transpose tensordot vecdot
broadcast_arrays broadcast_to concat expand_dims flip moveaxis permute_dims repeat reshape
roll squeeze stack tile unstack
argmax argmin nonzero searchsorted where
unique_all unique_counts unique_inverse unique_values
argsort sort
cumulative_sum max mean min prod std sum var
all any
linalg
""".split())

LINALG = frozenset("""
cholesky cross det diagonal eigh eigvalsh inv matmul matrix_norm matrix_power matrix_rank
matrix_transpose outer pinv qr slogdet solve svd svdvals tensordot trace vecdot vector_norm
""".split())

ARRAY_ATTRIBUTES = frozenset("dtype device mT ndim shape size T".split())

# Keyword arguments of the standard's functions that templates use.
KEYWORDS = frozenset("""
axis axes keepdims dtype device copy stable descending correction offset k upper
full_matrices rtol side include_initial fill_value
""".split())

# Names a template may read besides its arguments: the namespace, the device of the
# arguments, the helpers tapec writes into generated source (`tapec_xp_...`), and
# Python's `slice` for index expressions.
READABLE = frozenset({"xp", "device", "slice", "tuple", "range", "len"})


@functools.lru_cache(maxsize=4096)
def check(text: str, arguments: tuple = ()):
    """The first call or name of `text` outside the standard, described; None when the
    text calls only the standard, the helpers and `arguments` (its argument names)."""
    try:
        tree = ast.parse(text, mode="exec")
    except SyntaxError as exc:
        return f"it does not parse ({exc.msg})"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            found = _attribute(node)
            if found is not None:
                return found
        elif isinstance(node, ast.Name) and node.id not in READABLE and \
                node.id not in arguments and not node.id.startswith("tapec_xp_") and \
                not isinstance(node.ctx, ast.Store):
            return f"it reads {node.id!r}"
        elif isinstance(node, ast.keyword) and node.arg not in KEYWORDS:
            return f"it passes the keyword {node.arg}="
    return None


def _attribute(node):
    owner = node.value
    if isinstance(owner, ast.Name) and owner.id == "xp":
        return None if node.attr in NAMESPACE else f"xp.{node.attr} is not in the standard"
    if isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name) and \
            owner.value.id == "xp" and owner.attr == "linalg":
        return None if node.attr in LINALG else \
            f"xp.linalg.{node.attr} is not in the standard"
    if isinstance(owner, ast.Name) and owner.id in ("np", "math", "numexpr"):
        return f"it calls {owner.id}.{node.attr}"
    return None if node.attr in ARRAY_ATTRIBUTES else \
        f".{node.attr} is not an attribute of the standard's arrays"


# Operators whose operands the standard lets be Python scalars ("Mixing arrays with Python
# scalars"): every one but `@`.
_SCALAR_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
                     ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift, ast.Lt,
                     ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)


@functools.lru_cache(maxsize=1024)
def is_operator(text: str) -> bool:
    """Whether `text` is `a0 <op> a1` for an operator of the standard that takes a Python
    scalar as either operand (`a0 + a1`, `a0 < a1`; not `a0 @ a1` nor a call)."""
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        return False
    if isinstance(tree, ast.BinOp):
        op, operands = tree.op, (tree.left, tree.right)
    elif isinstance(tree, ast.Compare) and len(tree.ops) == 1:
        op, operands = tree.ops[0], (tree.left, tree.comparators[0])
    else:
        return False
    return isinstance(op, _SCALAR_OPERATORS) and [
        getattr(o, "id", None) for o in operands] == ["a0", "a1"]
