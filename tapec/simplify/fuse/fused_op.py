"""The `fused` op: one node computing a program over its inputs.

Its attributes are the result's `shape` and `dtype`, the program (`code`, `result`; see
`program.py`), whether it is the `exact` form, and `expr`, the SymPy text of a simplified
form. Code generation prints the program for numexpr where that pays
(`numexpr_printer.py`), as a kernel evaluated block by block where the node is large and
compute-bound (`codegen/blocks.py`; its ufuncs write into scratch blocks and the output,
`kernel_printer.py`), else as whole-array NumPy statements (`numpy_printer.py`).
`fused_expression(node)` gives printers its SymPy form.
"""
from __future__ import annotations

import math

import numpy as np

from ...codegen import blocks
from ...codegen.array_api import elementwise_template
from ...ops import sympy_rules
from ...ops.literals import xp_dtype
from ...ops.registry import ATOM, REGISTRY, Op, declare
from .kernel_printer import print_kernel
from .numexpr_printer import print_numexpr, use_numexpr
from .numpy_printer import NumpyStyle, finish, print_program
from .program import ARITHMETIC, program_cost, used_inputs
from . import trig


def _infer(**attrs):
    return tuple(attrs["shape"]), np.dtype(attrs["dtype"])


def _numpy_lines(out, args, node):
    """Statements computing the fused program into `out` from the argument names."""
    attrs = node.attrs
    program = (attrs["code"], attrs["result"])
    shapes = [i.shape for i in node.inputs]
    lines = None
    if use_numexpr(program, node.shape, node.dtype):
        lines = print_numexpr(program, args, out, node.dtype)
    if lines is None:
        lines = _blocked_lines(program, args, out, shapes, node)
    if lines is None:
        lines = print_program(program, NumpyStyle(args), out)
    return finish(lines, program, out, shapes, node.shape, node.dtype)


def _blocked_lines(program, args, out, shapes, node):
    """A nested kernel evaluated block by block (codegen/blocks.py), or None when the
    node is too small or nothing to slice spans its first axis."""
    used = sorted(used_inputs(program))
    sliced = blocks.eligible(node.shape, [shapes[k] for k in used])
    if sliced is None or len(program[0]) < 2:
        return None
    if program_cost(program, shapes) < blocks.MIN_COST_PER_ELEMENT * math.prod(node.shape):
        return None     # memory-bound (a few adds and products per element): a whole-array
        #                 pass writes its result in place, blocks would copy it once more
    params = [f"a{k}" for k in range(len(args))]
    # The kernel writes each block's result into its block of the output, `out`, through
    # scratch blocks its thread reuses (kernel_printer.py).
    kernel, slots = print_kernel(program, params, shapes, node.shape, node.dtype)
    operands = ", ".join(args[k] for k in used) + ("," if len(used) == 1 else "")
    return [f"def {out}_kernel({', '.join([*(params[k] for k in used), 'out', 'scratch'])}):",
            *(f"    {line}" for line in kernel),
            "    return r",
            f"{out} = tapec_blocked({out}_kernel, ({operands}), {sliced}, "
            f"{tuple(node.shape)}, np.{np.dtype(node.dtype).name}, scratch={slots})"]


class ArrayApiStyle:
    """How operands and calls print in the array-API form (codegen/array_api.py): a call
    with its op's `array_api` spelling (its NumPy template where that is the standard);
    a literal as a 0-d array of the node's dtype on the arguments' device, since the
    standard's functions take arrays (operators take Python numbers, functions do not)."""

    def __init__(self, args, dtype):
        self.args, self.dtype = args, xp_dtype(dtype)

    def operand(self, o):
        if o[0] == "in":
            return self.args[o[1]], ATOM
        text = o[1].replace("np.", "xp.")
        return f"xp.asarray({text}, dtype={self.dtype}, device=device)", ATOM

    @staticmethod
    def spelling(call):
        template = trig.ARRAY_API.get(call.name)
        if template is not None:
            return template, None
        return elementwise_template(REGISTRY[call.name]), call.precedence

    @staticmethod
    def copy(text):
        return f"xp.asarray({text}, copy=True)"


def _array_api_lines(out, args, node):
    """The fused program as whole-array statements of the array-API standard."""
    program = (node.attrs["code"], node.attrs["result"])
    # literals take the dtype of the floats computed (a region may end in a comparison)
    dtype = node.dtype if node.dtype.kind != "b" else \
        next((i.dtype for i in node.inputs if i.dtype.kind in "fc"), node.dtype)
    lines = print_program(program, ArrayApiStyle(args, dtype), out)
    used = [node.inputs[k].shape for k in sorted(used_inputs(program))]
    if used and np.broadcast_shapes(*used) == tuple(node.shape) or \
            not used and tuple(node.shape) == ():
        return lines
    return lines + [f"{out} = xp.broadcast_to(xp.asarray({out}, dtype={xp_dtype(node.dtype)}, "
                    f"device=device), {tuple(node.shape)})"]


FUSED = declare(Op(
    name="fused", impl=None, infer=_infer, numpy_lines=_numpy_lines,
    array_api_lines=_array_api_lines,
    differentiable=False, fusion=True,
    latex=r"\operatorname{{fused}}\left({0}, \ldots\right)"))


def fused_expression(node, inputs=None):
    """The SymPy expression a `fused` node computes, for printers (LaTeX, exporters).

    `inputs` are SymPy expressions for the node's inputs (default symbols a0, a1, ...).
    Each instruction is its op's own SymPy expression (`tanh(a0)`, `log(a0 + 1)` for
    log1p), or, for a call of an op without one, an undefined function named after the
    op. SymPy evaluates the arithmetic, so the result may be ordered differently from
    the code.
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

    for opcode, operands, call in code:
        args = [get(o) for o in operands]
        if opcode != "call":
            values.append(ARITHMETIC[opcode].sympy(*args))
            continue
        value = trig.sympy_form(call, args)
        if value is None:
            op = REGISTRY.get(call.name)
            fn = op.sympy if op is not None else None
            value = fn(*args) if fn is not None else sp.Function(call.name)(*args)
        values.append(value)
    return get(result)
