"""Elementwise fusion: maximal elementwise regions become one `fused` node each.

    fuse_elementwise(outputs, feeds, builder) -> outputs

Regions and groups
------------------
A *fusible* node is an elementwise op (`sympy` and `arity` set, a
NumPy template, no attributes) of floating dtype whose operands share its dtype, and
which is not fed. Constants (`constant`) and 0-d `fill` nodes are *literals*: they
are inlined where they are used. Fusible nodes connected through their inputs form
a region; fed nodes, non-elementwise nodes and non-scalar fills are its inputs.

A region node is a region *output* when the graph returns it or a node outside the
region uses it. A node that several outputs of one region need is made an output
too (the classic rule for fusing trees out of a DAG), so every fused node computes
one array and no work is ever done twice; inside a group, a value used twice is
computed once into a temporary. Groups with fewer than two ops are left alone
(fusing one op gains nothing), and so are 0-d groups (nothing to gain, and an
unfused 0-d float64 graph keeps the Python-float fast path of `codegen.scalar`).

Two forms of each group
-----------------------
* The *exact* form is the group's own ops, in the same order, each printed by its
  op's NumPy template, composed into one expression (temporaries where a value is
  used twice). It computes bit for bit what the unfused statements compute.
* A *simplified* form comes from SymPy: the group becomes one expression over the
  inputs, with the arithmetic ops (add, subtract, multiply, divide, negative,
  square, pow by 2 or -1) as SymPy arithmetic and every other op as an *opaque*
  function named after the op (so SymPy never applies an identity to exp, log,
  tanh, log1p... and never rewrites `log1p(u)` as `log(1 + u)`). Literals become
  exact rationals. Cheap transforms are tried (SymPy's automatic evaluation,
  `factor_terms`, `expand` then `factor_terms`, `factor` of small integer-coefficient
  polynomials), then `sympy.cse`; the cheapest candidate under the cost model below
  replaces the exact form only when `accept` allows it. Otherwise the exact form
  is used: a rejected simplification still fuses.

Cost model (what one instruction of the printed program costs, per element it
computes: an op on a broadcast (d, n) operand costs d times one on an (n,) vector):

    add, subtract, multiply, negate                           1
    divide                                                    4
    x**n for an integer n                                     the multiplications of
                                                              binary powering (x**2: 1,
                                                              x**3: 2, x**4: 2, x**5: 3),
                                                              plus 4 if n < 0
    abs, sign, relu, maximum, minimum, square, pow(x, 2)      1
    sqrt, pow(x, 0.5), pow(x, -1)                             4
    every other function (exp, log, tanh, sin, erf, pow...)   20

Lowering orders the operands of every sum and product smallest shape first, and
divides (and negates) the small factors of a product before they meet its largest
operand: `(y * s / q) * X`, one op on X's shape, not `y * X * s / q`, three.

`accept` refuses a candidate unless (1) it costs strictly less than the exact form,
(2) it uses exactly the same inputs (dropping one would change how inf and nan
propagate: `x - x -> 0`), (3) every function call in it is a call of the original,
on the same argument (so no `cosh`, `sech` or `csch` appears: `1 - tanh(x)**2 ->
cosh(x)**-2` is refused, so is any rewrite recomputing a function where the original
reused an input such as the forward `tanh`, and so is `exp(x)*exp(y) -> exp(x + y)`),
and (4) it divides by exactly
the same factors (no new division by an input, and no cancelled one: `x**2 / x -> x`
would turn the nan at 0 into 0). A group is never simplified when SymPy's automatic
evaluation cancels something while its expression is built: an input or a function
call vanishes (`x * 0`, `(x + y) - x`), or a sum combines like terms of opposite
signs (`(x*y + z) - x*y`, `x - 2*x -> -x`, `(x + 1) - 1 -> x`). So every function
call of a simplified form has, up to rounding of finite values, the argument it has
in the exact form.

What an accepted simplification may change (the only differences from unfused code,
all from reassociating the arithmetic between function calls): the order of sums and
products (SymPy's canonical order, subexpressions shared by `cse`), distributivity
(`g*a + g*b -> g*(a + b)` by `factor_terms`; fractions over one denominator, `a/y +
b/y -> (a + b)/y`), constant folding (`0.5 * (2 * x) -> x`, `3 * (3 * x) -> 9 * x`; a
folded float32 coefficient rounds once instead of twice), a product divided once by
the product of its denominators (`a / x / y -> a / (x * y)`, which can overflow where
the original did not; `a * y**-1 -> a / y`, one rounding instead of two), integer
powers by repeated multiplication, the sign of a zero (`x + 0 -> x`), and like terms
of one sign combined (`x + x -> 2*x`, exact; `2*x + 3*x -> 5*x`). `expand` may also
cancel terms of a product of sums (`(x + 1)*(x - 1) -> x**2 - 1`), changing rounding
and overflow as distributing does.

Code generation
---------------
The `fused` op prints the program as NumPy statements (`np` only), or, for groups of
at least `NUMEXPR_MIN_OPS` instructions on arrays of at least `NUMEXPR_MIN_SIZE`
elements of that dtype, as `numexpr.evaluate` calls when numexpr can be imported and
supports every function used (checked once per expression on a tiny input, which
also checks the result keeps the dtype: numexpr upcasts float32 with float
literals, so non-integer literals are passed as 0-d float32 values). The
thresholds were measured on the 2-core machine tapec is developed on, where numexpr
(no VML) only beat NumPy reliably for float64 arrays of several million elements and
never for float32; see `NUMEXPR_MIN_SIZE`. numexpr results agree with NumPy's to
rounding, not bit for bit (numexpr expands `x**n` into multiplications, and its
functions are not NumPy's). `fused_expression(node)` gives printers the SymPy form of
a fused node; `accept(original, candidate)` is the cost model's decision on two SymPy
expressions; `last_stats` holds the counts and seconds of the last call.
"""
from __future__ import annotations

import functools
import logging
import math
import re
import time

import numpy as np

from ..codegen import blocks
from ..codegen.literals import python_literal
from ..ir.nodes import topological_order
from ..ops import sympy_rules
from ..ops.registry import REGISTRY, Op, declare
from ..ops.shape import CONSTANT, FILL

_log = logging.getLogger("tapec.simplify")

# --- settings -----------------------------------------------------------------------

MIN_OPS = 2                   # a group of one op is not fused
MAX_SYMPY_OPS = 60            # larger expressions (counted as trees) keep the exact form
FACTOR_MAX_OPS = 30           # `sympy.factor` is only tried on small polynomials
MAX_EXPANDED_TERMS = 64       # `sympy.expand` only where it gives at most this many terms
TIME_BUDGET_SECONDS = 1.0     # SymPy time per `fuse_elementwise` call, all groups together

# numexpr is used from this many elements on (per dtype; absent: never) for programs of
# at least NUMEXPR_MIN_OPS instructions. Measured on the 2-core AMD EPYC (AVX-512) VM this
# was written on, NumPy 2.4 vs numexpr 2.14 (2 threads, no VML), the fused code of
# 4-, 8- and 16-op arithmetic programs printed both ways, best of 15 runs, speedup of
# numexpr over NumPy (ranges over three sessions; numexpr's times vary up to 2x run to
# run on this VM, NumPy's by 5%):
#   float64: 100k-300k 0.44-0.50x, 1M 0.5-1.3x, 2M 0.64-0.86x, 3M 0.7-1.7x, 5M 1.0-1.2x,
#            10M 1.2-2.4x;
#   float32: 0.22-0.25x at 100k, 0.41-0.46x at 1M, 0.76-0.84x at 3M and 10M (NumPy's
#            float32 loops are twice as fast as its float64 ones; numexpr's are not);
#   one exp/log/tanh/sin/log1p/expm1/atan per program, 1M elements: float32 0.1-0.5x,
#            float64 0.5-2.3x: NumPy's SIMD loops beat numexpr's C-library calls, so
#            programs calling them stay NumPy (see NUMEXPR_FUNCTIONS).
# Hence numexpr for float64 from 4M elements on, and never for float32, here. NumPy temp
# elision (in-place reuse of temporaries above 256 KiB) is what the NumPy side gets from
# fusion; numexpr adds blocking and threads, which pay only on more cores or larger data.
NUMEXPR_MIN_SIZE = {"float64": 4_000_000}
NUMEXPR_MIN_OPS = 4

# Statistics of the last call: groups seen, fused, simplified, seconds in SymPy.
last_stats: dict = {}


# --- the fused op -------------------------------------------------------------------

def _infer(**attrs):
    return tuple(attrs["shape"]), np.dtype(attrs["dtype"])


def _numpy_lines(out, args, node):
    """Statements computing the fused program into `out` from the argument names."""
    attrs = node.attrs
    program = (attrs["code"], attrs["result"])
    shapes = [i.shape for i in node.inputs]
    lines = None
    if _use_numexpr(program, node.shape, node.dtype):
        lines = _print_numexpr(program, args, out, node.dtype)
    if lines is None:
        lines = _blocked_lines(program, args, out, shapes, node)
    if lines is None:
        lines = _print(program, _NumpyStyle(args), out)
    return _finish(lines, program, out, shapes, node.shape, node.dtype)


def _blocked_lines(program, args, out, shapes, node):
    """A nested kernel evaluated block by block (codegen/blocks.py), or None when the
    node is too small or nothing to slice spans its first axis."""
    used = sorted(_used_inputs(program))
    sliced = blocks.eligible(node.shape, [shapes[k] for k in used])
    if sliced is None or len(program[0]) < 2:
        return None
    if program_cost(program, shapes) < blocks.MIN_COST_PER_ELEMENT * math.prod(node.shape):
        return None     # memory-bound (a few adds and products per element): a whole-array
        #                 pass writes its result in place, blocks would copy it once more
    params = [f"a{k}" for k in range(len(args))]
    kernel = _print(program, _NumpyStyle(params), "r")
    operands = ", ".join(args[k] for k in used) + ("," if len(used) == 1 else "")
    return [f"def {out}_kernel({', '.join(params[k] for k in used)}):",
            *(f"    {line}" for line in kernel),
            "    return r",
            f"{out} = tapec_blocked({out}_kernel, ({operands}), {sliced}, "
            f"{tuple(node.shape)}, np.{np.dtype(node.dtype).name})"]


FUSED = declare(Op(
    name="fused", impl=None, infer=_infer, numpy_lines=_numpy_lines,
    differentiable=False, fusion=True))


def fused_expression(node, inputs=None):
    """The SymPy expression a `fused` node computes, for printers (LaTeX, exporters).

    `inputs` are SymPy expressions for the node's inputs (default symbols a0, a1, ...).
    Each call is the op's own SymPy expression (`tanh(a0)`, `log(a0 + 1)` for log1p),
    or, for an op without one, an undefined function named after the op. SymPy
    evaluates the arithmetic, so the result may be ordered differently from the code.
    """
    sp = sympy_rules.sympy()
    if inputs is None:
        inputs = sp.symbols(f"a0:{len(node.inputs)}") if node.inputs else ()
    code, result = node.attrs["code"], node.attrs["result"]
    values = []

    def get(o):
        if o[0] == "in":
            return inputs[o[1]]
        if o[0] == "v":
            return values[o[1]]
        value = eval(o[1], {"np": np, "__builtins__": {}})    # our own literal text
        return sympy_rules.to_sympy_number(value.item() if hasattr(value, "item") else value)

    for opcode, operands, info in code:
        args = [get(o) for o in operands]
        if opcode == "call":
            op = REGISTRY.get(info[0])
            fn = op.sympy if op is not None else None
            values.append(fn(*args) if fn is not None else sp.Function(info[0])(*args))
        elif opcode == "neg":
            values.append(-args[0])
        else:
            a, b = args
            values.append({"add": a + b, "sub": a - b, "mul": a * b}.get(opcode) if
                          opcode != "div" else a / b)
    return get(result)


# --- programs -----------------------------------------------------------------------
#
# A program is (code, result): `code` a tuple of instructions (opcode, operands, info),
# opcode one of add/sub/mul/div/neg/call, `info` (name, numpy template, numexpr
# template or None, weight) for a call; an operand is ("in", i) for input i, ("v", j)
# for instruction j or ("lit", text) for a Python literal. Everything is a tuple of
# strings and ints: hashable, so fused nodes hash-cons.

WEIGHTS = {"add": 1, "sub": 1, "mul": 1, "neg": 1, "div": 4}
CALL_WEIGHTS = {"negative": 1, "abs": 1, "sign": 1, "relu": 1, "maximum": 1, "minimum": 1,
                "square": 1, "add": 1, "subtract": 1, "multiply": 1, "divide": 4, "sqrt": 4}
FUNCTION_WEIGHT = 20          # transcendental functions, erf, general powers
FORBIDDEN_NEW_FUNCTIONS = ("cosh", "sech", "csch")

# Elementwise ops whose template is exactly an arithmetic opcode.
_ARITHMETIC_TEMPLATES = {"add": ("add", "{0} + {1}"), "subtract": ("sub", "{0} - {1}"),
                         "multiply": ("mul", "{0} * {1}"), "divide": ("div", "{0} / {1}"),
                         "negative": ("neg", "-{0}")}

# numexpr spellings of the ops (None or absent: numexpr lacks it, the group uses NumPy).
# Functions NumPy computes with faster SIMD loops are left out on purpose (see above).
NUMEXPR_TEMPLATES = {"abs": "abs({0})", "sign": "sign({0})", "square": "{0}**2",
                     "sqrt": "sqrt({0})", "relu": "maximum({0}, 0)",
                     "maximum": "maximum({0}, {1})", "minimum": "minimum({0}, {1})"}


class _Code:
    """An instruction list with hash-consing: equal instructions are emitted once."""

    def __init__(self):
        self.instructions = []
        self._index = {}

    def emit(self, opcode, operands, info=None):
        key = (opcode, tuple(operands), info)
        j = self._index.get(key)
        if j is None:
            j = self._index[key] = len(self.instructions)
            self.instructions.append(key)
        return ("v", j)

    def program(self, result):
        """The live instructions, renumbered, and the result operand."""
        return _compact(tuple(self.instructions), result)


def _compact(code, result):
    live = set()
    stack = [result]
    while stack:
        operand = stack.pop()
        if operand[0] == "v" and operand[1] not in live:
            live.add(operand[1])
            stack.extend(code[operand[1]][1])
    renumber = {}
    kept = []
    for j, (opcode, operands, info) in enumerate(code):
        if j in live:
            operands = tuple(("v", renumber[o[1]]) if o[0] == "v" else o for o in operands)
            renumber[j] = len(kept)
            kept.append((opcode, operands, info))
    if result[0] == "v":
        result = ("v", renumber[result[1]])
    return tuple(kept), result


def program_cost(program, shapes=None) -> int:
    """The cost-model weight of a program: each instruction's weight times the number of
    elements it computes (its operands' broadcast size, given the input `shapes`; 1 for
    every instruction when `shapes` is None)."""
    code, _ = program
    sizes = _instruction_sizes(code, shapes) if shapes is not None else [1] * len(code)
    return sum((info[3] if opcode == "call" else WEIGHTS[opcode]) * size
               for (opcode, _, info), size in zip(code, sizes))


def _instruction_sizes(code, shapes) -> list:
    """Elements each instruction computes, from the shapes of the program's inputs."""
    return [math.prod(shape) for shape in _extend_shapes(code, shapes, [])]


def _operand_shape(operand, input_shapes, instruction_shapes) -> tuple:
    """An operand's shape; an input past the end of `input_shapes` counts as 0-d."""
    kind, ref = operand
    if kind == "in":
        return input_shapes[ref] if ref < len(input_shapes) else ()
    return instruction_shapes[ref] if kind == "v" else ()


def _extend_shapes(code, input_shapes, instruction_shapes) -> list:
    """`instruction_shapes` extended with the broadcast shape of each instruction of
    `code` past the ones it already has (operands only refer to earlier instructions)."""
    for _, operands, _ in code[len(instruction_shapes):]:
        instruction_shapes.append(np.broadcast_shapes(
            *(_operand_shape(o, input_shapes, instruction_shapes) for o in operands)))
    return instruction_shapes


def _call_weight(name, literal_args=()) -> int:
    if name == "pow" and len(literal_args) == 2 and literal_args[1] is not None:
        exponent = literal_args[1]
        return {2: 1, 1: 0, 0.5: 4, -1: 4}.get(exponent, FUNCTION_WEIGHT)
    return CALL_WEIGHTS.get(name.lower(), FUNCTION_WEIGHT)


# --- regions and groups -------------------------------------------------------------

def _is_literal(node, feeds) -> bool:
    return node not in feeds and (node.op is CONSTANT or (node.op is FILL and node.shape == ()))


def _fusible(node, feeds) -> bool:
    op = node.op
    if node in feeds or op.sympy is None or op.arity is None:
        return False
    if op.numpy is None or op.numpy_lines is not None or node.attrs or op.stateful:
        return False
    if node.dtype.kind != "f" or len(node.inputs) != op.arity:
        return False
    return all(i.dtype == node.dtype for i in node.inputs)


def fuse_elementwise(outputs, feeds, builder) -> list:
    """`outputs` with every elementwise group of two or more ops replaced by a `fused` node.

    `feeds` (node -> argument key) are leaves: never rewritten, never fused into.
    New nodes are made with `builder`. Returns the new outputs (None stays None).
    """
    started = time.perf_counter()
    stats = {"groups": 0, "fused": 0, "simplified": 0, "sympy seconds": 0.0}
    order = topological_order([o for o in outputs if o is not None],
                              is_leaf=lambda n: n in feeds)
    fusible = {n for n in order if _fusible(n, feeds)}
    users = {}
    for n in order:
        if n in feeds:
            continue
        for i in n.inputs:
            users.setdefault(i, []).append(n)
    returned = {o for o in outputs if o is not None}

    # Reverse topological order: a node joins its users' group when they all share one.
    group_of = {}
    for n in reversed(order):
        if n not in fusible:
            continue
        owners = {group_of.get(u) for u in users.get(n, ())}
        if n in returned or len(owners) != 1 or None in owners:
            group_of[n] = n
        else:
            group_of[n] = owners.pop()
    members = {}
    for n in order:
        if n in group_of:
            members.setdefault(group_of[n], []).append(n)

    deadline = started + TIME_BUDGET_SECONDS
    replaced = {}
    for root, nodes in members.items():
        if len(nodes) < MIN_OPS or root.shape == ():
            continue
        stats["groups"] += 1
        replaced[root] = _fuse_group(root, nodes, feeds, deadline, stats)

    memo = {}
    for n in order:
        if n in feeds or not n.inputs:
            memo[n] = n
        elif n in replaced:
            inputs, attrs = replaced[n]
            memo[n] = builder.node(FUSED, tuple(memo[i] for i in inputs), attrs,
                                   n.shape, n.dtype)
            stats["fused"] += 1
        elif group_of.get(n, n) in replaced:
            continue                     # computed inside its group's fused node
        else:
            inputs = tuple(memo[i] for i in n.inputs)
            memo[n] = n if inputs == n.inputs else \
                builder.node(n.op, inputs, n.attrs, n.shape, n.dtype)
    stats["seconds"] = time.perf_counter() - started
    last_stats.clear()
    last_stats.update(stats)
    return [None if o is None else memo[o] for o in outputs]


def _fuse_group(root, nodes, feeds, deadline, stats):
    """(inputs, attrs) of the fused node computing `root` from its group `nodes`."""
    member = set(nodes)
    inputs, operand = [], {}
    for n in nodes:
        for i in n.inputs:
            if i in member or i in operand:
                continue
            if _is_literal(i, feeds):
                operand[i] = ("lit", i.op.numpy([], i))
            else:
                operand[i] = ("in", len(inputs))
                inputs.append(i)
    code = _Code()
    for n in nodes:
        operand[n] = _exact_instruction(code, n, [operand[i] for i in n.inputs])
    program = code.program(operand[root])
    exact, text = True, ""
    if time.perf_counter() < deadline and _tree_ops(root, member) <= MAX_SYMPY_OPS:
        t0 = time.perf_counter()
        try:
            simplified = _simplify_group(root, nodes, inputs, feeds, program, deadline)
        except _Unsupported:
            simplified = None
        except Exception:        # a SymPy failure must never cost the gradient: exact form
            _log.debug("fusion: SymPy failed on a group of %d ops", len(nodes), exc_info=True)
            stats["sympy errors"] = stats.get("sympy errors", 0) + 1
            simplified = None
        stats["sympy seconds"] += time.perf_counter() - t0
        if simplified is not None:
            program, text = simplified
            exact = False
            stats["simplified"] += 1
    attrs = {"shape": root.shape, "dtype": root.dtype.str, "code": program[0],
             "result": program[1], "exact": exact, "expr": text}
    return tuple(inputs), attrs


def _tree_ops(root, member) -> int:
    """Ops of the group's expression written as a tree (shared values counted per use)."""
    size = {}
    for n in topological_order([root], is_leaf=lambda n: n not in member):
        if n in member:
            size[n] = 1 + sum(size.get(i, 0) for i in n.inputs)
    return size[root]


# --- the exact form -----------------------------------------------------------------

def _template(op, node, arity) -> str:
    """The op's NumPy template as a format string, rendered from the op itself."""
    marks = [f"\x00{k}\x00" for k in range(arity)]
    text = op.numpy(marks, node).replace("{", "{{").replace("}", "}}")
    for k, mark in enumerate(marks):
        text = text.replace(mark, "{" + str(k) + "}")
    return text


def _exact_instruction(code, node, operands):
    op = node.op
    template = _template(op, node, len(operands))
    arithmetic = _ARITHMETIC_TEMPLATES.get(op.name)
    if arithmetic is not None and arithmetic[1] == template:
        return code.emit(arithmetic[0], operands)
    literal_args = tuple(_literal_value(i) for i in node.inputs)
    info = (op.name, template, _numexpr_template(op.name), _call_weight(op.name, literal_args))
    return code.emit("call", operands, info)


def _literal_value(node):
    if node.op is CONSTANT or (node.op is FILL and node.shape == ()):
        return node.attrs["value"]
    return None


def _numexpr_template(name):
    """numexpr's spelling of op `name`, or None (the program then prints for NumPy)."""
    if name in NUMEXPR_TEMPLATES:
        return NUMEXPR_TEMPLATES[name]
    if NUMEXPR_FUNCTIONS and name in _NUMEXPR_FUNCTION_NAMES:
        return _NUMEXPR_FUNCTION_NAMES[name] + "({0})"
    return None


# Functions numexpr spells like NumPy. Measured slower than NumPy's SIMD loops here, so
# off; set NUMEXPR_FUNCTIONS = True (before fusing) on machines where numexpr wins.
NUMEXPR_FUNCTIONS = False
_NUMEXPR_FUNCTION_NAMES = {"exp": "exp", "log": "log", "sin": "sin", "cos": "cos",
                           "tan": "tan", "tanh": "tanh", "sinh": "sinh", "cosh": "cosh",
                           "expm1": "expm1", "log1p": "log1p", "asin": "arcsin",
                           "acos": "arccos", "atan": "arctan"}


# --- the SymPy form -----------------------------------------------------------------

class _Unsupported(Exception):
    """The expression holds something the printer cannot write; keep the exact form."""


@functools.lru_cache(maxsize=None)
def _is_arithmetic(op) -> bool:
    """Whether the op's SymPy expression is plain arithmetic (+, -, *, / and integer powers)."""
    sp = sympy_rules.sympy()
    arity = op.arity
    symbols = sp.symbols(f"q0:{arity}")
    try:
        expr = op.sympy(*symbols)
    except Exception:            # a declaration SymPy cannot evaluate: treat it as opaque
        return False
    for e in sp.preorder_traversal(expr):
        if e.is_Symbol or e.is_Rational or e.is_Add or e.is_Mul:
            continue
        if e.is_Pow and e.exp.is_Integer:
            continue
        return False
    return True


class _Group:
    """SymPy expressions of a group's nodes, with what `accept` compares them against."""

    def __init__(self, inputs, dtype=np.float64):
        sp = sympy_rules.sympy()
        self.symbols = [sp.Symbol(f"a{k}") for k in range(len(inputs))]
        self.shapes = [tuple(i.shape) for i in inputs]
        self.dtype = np.dtype(dtype)
        self.texts = {}          # literal value -> its text in the exact form ("0.1")
        self.functions = {}      # SymPy function name -> call info
        self.applications = set()
        self.divisors = set()

    def function(self, info):
        """An opaque SymPy function standing for one op (one per distinct template)."""
        sp = sympy_rules.sympy()
        name = info[0]
        k = 0
        while name in self.functions and self.functions[name] != info:
            k += 1
            name = f"{info[0]}_{k}"
        self.functions[name] = info
        return sp.Function(name)

    def apply(self, info, args):
        application = self.function(info)(*args)
        self.applications.add(application)
        return application


def _simplify_group(root, nodes, inputs, feeds, exact_program, deadline):
    """(program, text) of the cheapest accepted SymPy form, or None."""
    sp = sympy_rules.sympy()
    group = _Group(inputs, root.dtype)
    expr = {i: s for i, s in zip(inputs, group.symbols)}
    for n in nodes:
        args = []
        for i in n.inputs:
            if i in expr:
                args.append(expr[i])
                continue
            value = _literal_value(i)
            if value is None or not np.isfinite(value):
                return None      # a non-finite literal would make SymPy absorb terms (nan)
            expr[i] = sympy_rules.to_sympy_number(value)
            group.texts.setdefault(value, i.op.numpy([], i))
            args.append(expr[i])
        e = _sympy_of(n, args, group)
        if _cancels(args, e, n.op.name) or \
                e.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
            return None          # SymPy cancelled something (x - x, x * 0): keep the exact form
        if n.op.name == "divide":
            group.divisors |= _divisor_bases(args[1])
        elif n.op.name == "pow" and args[1] == -1:
            group.divisors |= _divisor_bases(args[0])
        expr[n] = e
    original = _Profile(cost=program_cost(exact_program, group.shapes),
                        symbols=frozenset(group.symbols[k] for k in _used_inputs(exact_program)),
                        applications=frozenset(group.applications),
                        divisors=frozenset(group.divisors))
    best = None
    for candidate in _candidates(expr[root], deadline):
        lowered = _acceptable(original, candidate, group)
        if lowered is not None and (best is None or program_cost(lowered, group.shapes) <
                                    program_cost(best[0], group.shapes)):
            best = (lowered, candidate)
    if best is None:
        return None
    return best[0], str(best[1])


def _cancels(args, e, op_name) -> bool:
    """Whether SymPy's automatic evaluation of one node cancelled part of its operands:
    an input or a function call vanished (`(x + y) - x`, `x * 0`, `f(x) * y / f(x)`),
    or a sum combined like terms of opposite signs (`x - 2*x -> -x`, `(x + 1) - 1 -> x`:
    inf - inf would become inf, and x + 1 would lose its rounding). Like terms of one
    sign (`x + x -> 2*x`) are not cancelling."""
    sp = sympy_rules.sympy()

    def atoms(x):
        return x.free_symbols | x.atoms(sp.Function)
    if not set().union(*map(atoms, args)) <= atoms(e):
        return True
    if op_name in ("add", "subtract"):
        second = -args[1] if op_name == "subtract" else args[1]
        signs = {}
        for term in sp.Add.make_args(args[0]) + sp.Add.make_args(second):
            coefficient, base = term.as_coeff_Mul()
            signs.setdefault(base, set()).add(bool(coefficient > 0))
        return any(len(s) > 1 for s in signs.values())
    return False


def _sympy_of(node, args, group):
    op = node.op
    if op.name == "pow" and len(args) == 2 and args[1] in (2, -1, 1):
        return args[0] ** args[1]        # x**2 is x*x and x**-1 is 1/x in NumPy too
    if op.name != "pow" and _is_arithmetic(op):
        return op.sympy(*args)
    literal_args = tuple(_literal_value(i) for i in node.inputs)
    info = (op.name, _template(op, node, len(args)),
            _numexpr_template(op.name),
            _call_weight(op.name, literal_args))
    return group.apply(info, args)


def _candidates(e, deadline):
    """Cheap rewrites of `e`: SymPy's automatic form first, then bounded transforms."""
    sp = sympy_rules.sympy()
    yield e
    transforms = [sp.factor_terms]
    if _expanded_terms(e) <= MAX_EXPANDED_TERMS:
        transforms.append(lambda x: sp.factor_terms(sp.expand(x)))
    if sp.count_ops(e) <= FACTOR_MAX_OPS:
        transforms.append(_factor_polynomial)
    seen = {e}
    for transform in transforms:
        if time.perf_counter() >= deadline:
            return
        try:
            candidate = transform(e)
        except Exception:        # SymPy gave up on this one (PolynomialError...): skip it
            continue
        if candidate not in seen:
            seen.add(candidate)
            yield candidate


def _expanded_terms(e) -> int:
    """An upper bound on the terms `sympy.expand` gives (it multiplies out products of
    sums: 20 binomials would give a million terms), so it is only tried when small."""
    cache = {}

    def bound(x):
        if x in cache:
            return cache[x]
        if x.is_Add:
            n = sum(bound(a) for a in x.args)
        elif x.is_Mul:
            n = 1
            for a in x.args:
                n *= bound(a)
        elif x.is_Pow and x.exp.is_Integer and x.exp > 0:
            n = bound(x.base) ** int(x.exp)
        else:
            n = max([1] + [bound(a) for a in x.args])     # inside a function: its own
        cache[x] = n = min(n, 10 ** 9)
        return n
    return bound(e)


def _factor_polynomial(e):
    """`sympy.factor` of `e` if it is a polynomial with integer coefficients in its inputs
    and function calls (each call standing as one variable); else `e`. (On a rational
    function, factor would combine fractions over a common denominator: not cheap
    arithmetic, and not tried.)"""
    sp = sympy_rules.sympy()
    stand_ins = {c: sp.Dummy() for c in e.atoms(sp.Function)}
    p = e.xreplace(stand_ins)
    if not p.is_polynomial(*p.free_symbols) or \
            not all(n.is_Integer for n in p.atoms(sp.Number)):
        return e
    return sp.factor(p).xreplace({v: k for k, v in stand_ins.items()})


class _Profile:
    """What a candidate is compared against: cost, inputs, function calls and divisors."""

    def __init__(self, cost, symbols, applications, divisors):
        self.cost, self.symbols = cost, symbols
        self.applications, self.divisors = applications, divisors


def _used_inputs(program):
    code, result = program
    used = {o[1] for _, operands, _ in code for o in operands if o[0] == "in"}
    if result[0] == "in":
        used.add(result[1])
    return used


def _function_name(f) -> str:
    return getattr(f.func, "__name__", str(f.func))


def _divisor_bases(d) -> set:
    """The non-constant factors of a divisor, as bases (x**2 -> x)."""
    sp = sympy_rules.sympy()
    return {f.as_base_exp()[0] for f in sp.Mul.make_args(d) if not f.is_number}


def _divisors_of(expr) -> set:
    sp = sympy_rules.sympy()
    found = set()
    for p in expr.atoms(sp.Pow):
        if p.exp.is_number and p.exp.is_negative:
            found |= _divisor_bases(p.base)
    return found


def _acceptable(original, candidate, group):
    """The lowered program of `candidate` if `accept` allows it, else None."""
    sp = sympy_rules.sympy()
    if candidate.free_symbols != original.symbols:
        return None                  # an input dropped: inf/nan would propagate differently
    applications = candidate.atoms(sp.Function)
    if not applications <= original.applications:
        return None                  # a function called on a new argument, or a new function
    names = {_function_name(f) for f in original.applications}
    if any(_function_name(f) in FORBIDDEN_NEW_FUNCTIONS and _function_name(f) not in names
           for f in applications):
        return None                  # cosh, sech, csch: never introduced (1 - tanh**2 ...)
    if _divisors_of(candidate) != original.divisors:
        return None                  # a new division by an input, or a cancelled one
    try:
        program = _lower_cse([candidate], group)
    except _Unsupported:
        return None
    if program_cost(program, group.shapes) >= original.cost:
        return None                  # never costlier, and equal cost keeps the exact form
    return program


def accept(original, candidate) -> bool:
    """Whether the cost model lets SymPy expression `candidate` replace `original`.

    Both are SymPy expressions (real SymPy functions such as `tanh` are costed by name);
    `original` is costed as `sympy.cse` and the printer would write it. See the module
    docstring for the rules; for example `accept(1 - tanh(x)**2, cosh(x)**-2)` is False.
    """
    group = _Group([])
    program = _lower_cse([original], group)
    sp = sympy_rules.sympy()
    profile = _Profile(cost=program_cost(program, group.shapes), symbols=frozenset(original.free_symbols),
                       applications=frozenset(original.atoms(sp.Function)),
                       divisors=frozenset(_divisors_of(original)))
    return _acceptable(profile, candidate, group) is not None


# --- lowering SymPy to a program ----------------------------------------------------

def _lower_cse(exprs, group):
    """The program printing `exprs[0]` after `sympy.cse` (reciprocals are not shared)."""
    sp = sympy_rules.sympy()
    # Canonical order: the same expression prints the same way in every process (the
    # default "none" order follows set iteration, which varies with the hash seed).
    replacements, reduced = sp.cse(exprs, symbols=sp.numbered_symbols("_c"))
    substitute, env = {}, {}
    code = _Code()
    symbols = dict(zip(group.symbols, (("in", k) for k in range(len(group.symbols)))))
    for s in sorted(exprs[0].free_symbols, key=str):
        symbols.setdefault(s, ("in", len(symbols)))
    lower = _Lowering(code, symbols, group, env)
    for name, value in replacements:
        value = value.xreplace(substitute)
        # `1/y` shared as a temporary would turn every a/y into a*(1/y): inline it.
        if value.is_Pow and value.exp.is_number and value.exp.is_negative or value.is_Atom:
            substitute[name] = value
            continue
        env[name] = lower(value)
    return code.program(lower(reduced[0].xreplace(substitute)))


class _Lowering:
    """SymPy expression -> instructions, in the order the module docstring describes."""

    def __init__(self, code, symbols, group, env):
        self.code, self.symbols, self.group, self.env = code, symbols, group, env
        self._shapes = []            # broadcast shape of each instruction's result

    def shape(self, operand) -> tuple:
        """The broadcast shape an operand has (inputs of unknown shape count as 0-d)."""
        if operand[0] == "v":
            _extend_shapes(self.code.instructions, self.group.shapes, self._shapes)
        return _operand_shape(operand, self.group.shapes, self._shapes)

    def size(self, operand) -> int:
        return math.prod(self.shape(operand))

    def by_size(self, operands) -> list:
        """Operands, smallest first (stable): sums and products of the small ones are
        formed before they meet a large one, so each broadcasting op runs once on the
        large shape: `(y * s / q) * X`, not `y * X * s / q` on X's shape at every step."""
        return sorted(operands, key=self.size)

    def __call__(self, e):
        if e in self.env:
            return self.env[e]
        if e.is_Symbol:
            if e not in self.symbols:
                raise _Unsupported(e)
            return self.symbols[e]
        if e.is_Number:
            return self.number(e)
        if e.is_Add:
            return self.add(e)
        if e.is_Mul:
            return self.mul(e)
        if e.is_Pow:
            base, exponent = e.as_base_exp()
            if not exponent.is_Integer:
                raise _Unsupported(e)
            if exponent > 0:
                return self.power(self(base), int(exponent))
            return self.code.emit("div", (("lit", "1"), self.power(self(base), -int(exponent))))
        sp = sympy_rules.sympy()
        if isinstance(e, sp.Function):
            return self.call(e)
        raise _Unsupported(e)

    def literal(self, value) -> tuple:
        """A Python literal for an int or an exact float: the text the exact form gave
        that value if it had it, else the shortest text that gives the value in the
        group's dtype (NumPy's weak scalars then give it that dtype), else exact."""
        if isinstance(value, int) and abs(value) >= 2 ** 53:
            raise _Unsupported(value)
        text = self.group.texts.get(value)
        if text is None and isinstance(value, int):
            text = str(value)
        if text is None:
            typed = np.asarray(value, dtype=self.group.dtype)
            text = python_literal(typed) if float(typed) == value else repr(float(value))
        return ("lit", f"({text})" if text.startswith("-") else text)

    def number(self, n):
        if n.is_Integer:
            return self.literal(int(n))
        if n.is_Rational:
            p, q = int(n.p), int(n.q)
            if q & (q - 1) == 0 and abs(p) < 2 ** 53:
                return self.literal(p / q)
            return self.code.emit("div", (self.literal(p), self.literal(q)))
        raise _Unsupported(n)

    def add(self, e):
        # (operand, subtracted) per term, smallest shape first
        terms = sorted([(self(-t), True) if t.could_extract_minus_sign() else (self(t), False)
                        for t in e.args], key=lambda term: self.size(term[0]))
        if all(negative for _, negative in terms):
            acc = self.code.emit("neg", (terms[0][0],))
            rest = terms[1:]
        else:
            first = [negative for _, negative in terms].index(False)
            acc = terms[first][0]
            rest = terms[:first] + terms[first + 1:]
        for operand, negative in rest:
            acc = self.code.emit("sub" if negative else "add", (acc, operand))
        return acc

    def mul(self, e):
        coefficient, factors = e.as_coeff_mul()
        numerator, denominator = [], []
        for f in factors:
            base, exponent = f.as_base_exp()
            if exponent.is_Integer and exponent < 0:
                denominator.append(self(base ** -exponent))
            else:
                numerator.append(self(f))
        if not coefficient.is_Rational:
            raise _Unsupported(e)
        negative = coefficient < 0
        p, q = abs(int(coefficient.p)), int(coefficient.q)
        sign = -1 if negative else 1
        if q & (q - 1) == 0 and p < 2 ** 53:
            if p != 1 or q != 1:
                numerator.insert(0, self.literal(sign * p / q if q != 1 else sign * p))
                negative = False
        else:
            if p != 1 or negative:
                numerator.insert(0, self.literal(sign * p))
                negative = False
            denominator.insert(0, self.literal(q))
        numerator, denominator = self.by_size(numerator), self.by_size(denominator)
        largest = max(map(self.size, numerator + denominator), default=1)
        small = [f for f in numerator if self.size(f) < largest]
        if small and len(small) < len(numerator) and \
                all(self.size(f) < largest for f in denominator):
            # divide and negate the small factors, then broadcast: (-a * b / c) * X, not
            # -(a * b * X / c), which would run the division and negation on X's shape
            result = self.product(small)
            if denominator:
                result = self.code.emit("div", (result, self.product(denominator)))
            if negative:
                result = self.code.emit("neg", (result,))
            return self.product([result] + numerator[len(small):])
        else:
            result = self.product(numerator) if numerator else ("lit", "1")
            if denominator:
                result = self.code.emit("div", (result, self.product(denominator)))
        if negative:
            result = self.code.emit("neg", (result,))
        return result

    def product(self, operands):
        result = operands[0]
        for o in operands[1:]:
            result = self.code.emit("mul", (result, o))
        return result

    def power(self, base, n):
        """base**n by binary powering: the multiplications the cost model counts."""
        if n == 1:
            return base
        half = self.power(base, n // 2)
        square = self.code.emit("mul", (half, half))
        return self.code.emit("mul", (square, base)) if n % 2 else square

    def call(self, e):
        name = _function_name(e)
        info = self.group.functions.get(name)
        if info is None:             # a real SymPy function (tests of `accept`): cost by name
            arity = len(e.args)
            lowered = name.lower()
            info = (lowered, f"np.{lowered}(" + ", ".join(f"{{{k}}}" for k in range(arity))
                    + ")", None, _call_weight(lowered))
        return self.code.emit("call", tuple(self(a) for a in e.args), info)


# --- printing -----------------------------------------------------------------------

_ATOM = 100
_LEVEL = {"add": 50, "sub": 50, "mul": 60, "div": 60, "neg": 70}
_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
_PLACEHOLDER = re.compile(r"\{(\d+)\}")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z_0-9.]*$")


@functools.lru_cache(maxsize=None)
def _template_shape(template):
    """(precedence of the result, per argument: needs parentheses, used more than once)."""
    call = re.match(r"^[A-Za-z_][\w.]*\(", template)
    precedence = 0
    if call and template.endswith(")"):
        depth = 0
        for k, ch in enumerate(template[call.end() - 1:], call.end() - 1):
            depth += (ch == "(") - (ch == ")")
            if depth == 0:
                precedence = _ATOM if k == len(template) - 1 else 0
                break
    args = {}
    for m in _PLACEHOLDER.finditer(template):
        k = int(m.group(1))
        before, after = template[:m.start()], template[m.end():]
        delimited = (before.endswith("(") or before.endswith(", ") or before.endswith("[")) \
            and (after[:1] in (")", ",", "]"))
        parens, count = args.get(k, (False, 0))
        args[k] = (parens or not delimited, count + 1)
    return precedence, args


class _NumpyStyle:
    """How operands and calls print in NumPy code."""

    def __init__(self, args):
        self.args = args

    def operand(self, o):
        if o[0] == "in":
            return self.args[o[1]], _ATOM
        return o[1], (_ATOM if _IDENTIFIER.match(o[1]) or o[1].startswith("(") or
                      o[1].startswith("np.") or o[1][:1].isdigit() else 0)

    def template(self, info):
        return info[1]


def _uses(code, result):
    """Per instruction: how many times it is used, and whether it must be a named value."""
    count = [0] * len(code)
    named = [False] * len(code)
    for opcode, operands, info in code:
        repeated = {}
        if opcode == "call":
            _, repeated = _template_shape(info[1])
        for k, o in enumerate(operands):
            if o[0] == "v":
                count[o[1]] += 1
                if repeated.get(k, (False, 1))[1] > 1:
                    named[o[1]] = True
    if result[0] == "v":
        count[result[1]] += 1
    return [n or c > 1 for n, c in zip(named, count)]


def _render(instruction, texts, style):
    """(text, precedence) of one instruction given its operands' texts."""
    opcode, operands, info = instruction
    parts = [texts(o) for o in operands]
    if opcode == "neg":
        text, p = parts[0]
        return "-" + (f"({text})" if p <= _LEVEL["neg"] else text), _LEVEL["neg"]
    if opcode != "call":
        level = _LEVEL[opcode]
        (left, lp), (right, rp) = parts
        left = f"({left})" if lp < level else left
        right = f"({right})" if rp <= level else right
        return f"{left} {_SYMBOL[opcode]} {right}", level
    template = style.template(info)
    precedence, args = _template_shape(template)
    rendered = []
    for k, (text, p) in enumerate(parts):
        needs = args.get(k, (False, 1))[0]
        rendered.append(f"({text})" if needs and p < _ATOM else text)
    return template.format(*rendered), precedence


def _print(program, style, out):
    """NumPy statements: temporaries `{out}_{j}` for shared values, then `{out} = ...`."""
    code, result = program
    named = _uses(code, result)
    texts = {}

    def text_of(o):
        return texts[o[1]] if o[0] == "v" else style.operand(o)

    lines = []
    for j, instruction in enumerate(code):
        text, p = _render(instruction, text_of, style)
        if named[j] and ("v", j) != result:
            lines.append(f"{out}_{j} = {text}")
            texts[j] = (f"{out}_{j}", _ATOM)
        else:
            texts[j] = (text, p)
    final, _ = text_of(result)
    if result[0] != "v":                 # a bare input: copy, as an op would have
        final = f"np.array({final}, copy=True)"
    lines.append(f"{out} = {final}")
    return lines


def _finish(lines, program, out, shapes, shape, dtype):
    """Broadcast the result to the node's shape where the program alone may not."""
    used = [shapes[k] for k in sorted(_used_inputs(program))]
    if used and np.broadcast_shapes(*used) == tuple(shape):
        return lines
    if not used and tuple(shape) == ():
        return lines
    if used:
        lines.append(f"{out} = np.broadcast_to({out}, {tuple(shape)})")
    else:
        lines.append(f"{out} = np.full({tuple(shape)}, {out}, dtype=np.{np.dtype(dtype).name})")
    return lines


# --- numexpr ------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _numexpr_module():
    """numexpr if it can be imported (it is optional), else None."""
    try:
        import numexpr
    except Exception:            # not installed, or broken: NumPy it is
        return None
    return numexpr


def _use_numexpr(program, shape, dtype) -> bool:
    minimum = NUMEXPR_MIN_SIZE.get(np.dtype(dtype).name)
    code, _ = program
    if minimum is None or len(code) < NUMEXPR_MIN_OPS or _numexpr_module() is None:
        return False
    if int(np.prod(shape, dtype=np.int64)) < minimum:
        return False
    return all(opcode != "call" or info[2] is not None for opcode, _, info in code)


_INTEGER = re.compile(r"^\(?-?\d+(\.0)?\)?$")
_FLOAT = re.compile(r"^\(?-?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?\)?$")
NUMEXPR_INLINE_COST = 3       # a shared value this cheap is recomputed, not materialized


class _NumexprStyle:
    """How operands and calls print inside a numexpr expression string."""

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)
        self.literals = {}           # literal text -> local name

    def operand(self, o):
        if o[0] == "in":
            return f"v{o[1]}", _ATOM
        text = o[1]
        if _INTEGER.match(text) and float(text.strip("()")) != 0 and \
                abs(float(text.strip("()"))) < 2 ** 24:
            # numexpr keeps float32 with an int literal (not -0.0: its sign matters).
            return text.replace(".0", ""), _ATOM
        if self.dtype == np.float64 and _FLOAT.match(text):
            return text, _ATOM       # a float literal is a double in numexpr
        name = self.literals.setdefault(text, f"k{len(self.literals)}")
        return name, _ATOM

    def literal_value(self, text):
        """Python source of a literal's value, typed so numexpr keeps the dtype (it
        would compute `float32 * 0.5` in float64)."""
        if self.dtype == np.float32 and not text.startswith("np.float32("):
            return f"np.float32({text})"
        return text

    def template(self, info):
        return info[2]


def _print_numexpr(program, args, out, dtype):
    """`numexpr.evaluate` statements, or None when numexpr cannot compute this exactly
    in this dtype (an unsupported function, a result of another dtype). A value used
    twice is recomputed where that costs at most NUMEXPR_INLINE_COST (numexpr is
    memory-bound: a few flops are cheaper than one more pass over an array), else it
    gets its own `numexpr.evaluate`."""
    code, result = program
    named = _uses(code, result)
    style = _NumexprStyle(dtype)
    texts, lines, temps, inline_cost = {}, [], {}, {}

    def text_of(o):
        if o[0] == "v":
            return (f"w{o[1]}", _ATOM) if o[1] in temps else texts[o[1]]
        return style.operand(o)

    for j, instruction in enumerate(code):
        opcode, operands, info = instruction
        text, p = _render(instruction, text_of, style)
        inline_cost[j] = (info[3] if opcode == "call" else WEIGHTS[opcode]) + sum(
            inline_cost[o[1]] for o in operands if o[0] == "v" and o[1] not in temps)
        if named[j] and ("v", j) != result and inline_cost[j] > NUMEXPR_INLINE_COST:
            temps[j] = f"{out}_{j}"
            statement = _evaluate(text, style, args, temps, dtype)
            if statement is None:
                return None
            lines.append(f"{out}_{j} = {statement}")
        else:
            texts[j] = (text, p)
    if result[0] != "v":
        return None
    statement = _evaluate(texts[result[1]][0], style, args, temps, dtype)
    if statement is None:
        return None
    lines.append(f"{out} = {statement}")
    return lines


def _evaluate(expression, style, args, temps, dtype):
    names = sorted(set(re.findall(r"\b[vkw]\d+\b", expression)), key=lambda s: (s[0], int(s[1:])))
    by_text = {v: k for k, v in style.literals.items()}
    pairs = []
    for name in names:
        if name[0] == "v":
            pairs.append((name, args[int(name[1:])]))
        elif name[0] == "w":
            pairs.append((name, temps[int(name[1:])]))
        else:
            pairs.append((name, style.literal_value(by_text[name])))
    if not _numexpr_computes(expression, tuple((n, v) for n, v in pairs if n[0] == "k"),
                             tuple(n for n, _ in pairs if n[0] != "k"), np.dtype(dtype).str):
        return None
    local = ", ".join(f"{name!r}: {value}" for name, value in pairs)
    return f"numexpr.evaluate({expression!r}, local_dict={{{local}}})"


@functools.lru_cache(maxsize=1024)
def _numexpr_computes(expression, literals, arrays, dtype) -> bool:
    """Whether numexpr evaluates `expression` here and keeps `dtype` (tried on tiny input)."""
    numexpr = _numexpr_module()
    local = {name: np.full(2, 0.5, dtype=dtype) for name in arrays}
    try:
        for name, source in literals:
            local[name] = eval(source, {"np": np})   # our own literal text: np.float32(0.5)
        with np.errstate(all="ignore"):
            value = numexpr.evaluate(expression, local_dict=local)
    except Exception:            # a function numexpr lacks, a type it cannot take
        return False
    return value.dtype == np.dtype(dtype)
