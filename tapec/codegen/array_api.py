"""The array-API form of generated code: the same program, written against a namespace.

Beside the NumPy form (emit.py, tapec's fast path: numexpr, blocked kernels, the
Python-float and native tiers), a program can be written for any namespace of the
array-API standard, 2023.12 (NumPy, Dask, JAX, CuPy, PyTorch through array-api-compat,
array-api-strict):

    def gradient(xp, device, x0, tanh1):
        multiply_1 = tanh1 * tanh1
        subtract_1 = xp.asarray(1.0, dtype=xp.float64, device=device) - multiply_1
        ...

`xp` is the namespace and `device` the device of the arguments (constants and fills
are made there: `xp.asarray(..., device=device)`, `xp.full(..., device=device)`; no
module holds an array). A scalar constant that is an operand of an operator beside an
array of its dtype is written as the Python literal the standard allows there
(`1.0 - multiply_1`): no 0-d array is made on every call. The code calls only the standard (`standard.py` lists it)
and the helpers of `xp_helpers.py`, which it carries: where the standard has a gap
(einsum, scatter-add without in-place writes, a diagonal matrix) the source defines a
`tapec_xp_...` function at module level, so the text runs without tapec. Nothing in it
branches on a value (no `float(x)`, no `if` on an array), so it traces under `jax.jit`
and stays lazy on Dask.

Each op prints from its `array_api` facet (`array_api_lines` for statements), declared
beside its NumPy template; an op without one uses its NumPy template with `np.` read
as `xp.`, if that text calls only the standard (`standard.check`). An op with neither
makes emission raise `NoArrayApiForm` ("op 'X' has no array-API form: ..."): a
program is never written with a NumPy call in it.

The API:

* `ARRAY_API`: the form, for `emit.statements(..., form=ARRAY_API)` (tapec.export
  writes modules through it); `helpers(lines)`: the helper definitions those lines need.
  The lines read two names they do not define, `xp` and `device`: the function around
  them binds both (`emit` makes them its first two parameters), and a `Namer` never
  gives them to a value or parameter (names.GENERATED_GLOBALS);
* `emit(outputs, feeds, ...)`: the whole source, `(source, argument keys)`, as
  `emit.emit`; `compile_source(source)`: an `ArrayApiFunction`;
* `ArrayApiFunction(xp, *args, device=None)`: runs the program in `xp`; NumPy arrays and
  Python numbers among the arguments are first moved into `xp` on `device` (by default
  the device of the first argument that has one);
* `Compiled.array_api()` (compiled.py): a compiled program's `ArrayApiFunction`,
  emitted on the first request and kept with the entry;
* `namespace_of(*arrays)`, `device_of(*arrays)`: the namespace and device of arrays
  (array-api-compat where installed; NumPy's otherwise).
"""
from __future__ import annotations

import itertools
import linecache
import re
import weakref
from dataclasses import dataclass

import numpy as np

from .._version import __version__
from ..ir.nodes import Node
from . import standard, xp_helpers
from ..ops.literals import xp_literal
from .emit import CodegenError, function_lines, one_line, signature, statements


class NoArrayApiForm(CodegenError):
    """An op of the program has no spelling in the array-API standard."""


_NUMPY_NAME = re.compile(r"(?<![\w.])np\.")
_ARGUMENTS = tuple(f"a{k}" for k in range(64))


def _fallback(node, args):
    """The op's NumPy template read with `xp` for `np`, if that is the standard."""
    op = node.op
    if op.numpy is None or op.numpy_lines is not None:
        raise NoArrayApiForm(f"op {op.name!r} has no array-API form")
    arguments = _ARGUMENTS[:len(args)]
    problem = standard.check(_NUMPY_NAME.sub("xp.", op.numpy(list(arguments), node)),
                             arguments)
    if problem is not None:
        raise NoArrayApiForm(f"op {op.name!r} has no array-API form: its NumPy template "
                             f"is not the standard ({problem})")
    return _NUMPY_NAME.sub("xp.", op.numpy(args, node))


def _declined(node, printed):
    """`printed`, unless a facet declined this node (None: too large, say)."""
    if printed is None:
        raise NoArrayApiForm(f"op {node.op.name!r} has no array-API form for {node!r} "
                             "(see the limits in docs/array_api.md)")
    return printed


class _Constant(str):
    """A constant's text, `xp.asarray(1.0, dtype=xp.float64, device=device)`, that also
    knows its Python literal (`1.0`) and dtype, for `_operands`."""
    literal: str
    dtype: np.dtype


class _ArrayApiForm:
    """How nodes print in the array-API form (emit.statements' `form`)."""

    def constant(self, node):
        text = _Constant(self.expression(node, []))
        text.literal, text.dtype = xp_literal(node.attrs["value"], node.dtype), node.dtype
        return text

    @staticmethod
    def placeholder(node):
        raise CodegenError("the program needs a value nothing feeds "
                           f"({node!r}); this is a bug in tapec")

    @staticmethod
    def multiline(node):
        return node.op.array_api_lines is not None

    @staticmethod
    def lines(node, name, args):
        return _declined(node, node.op.array_api_lines(name, args, node))

    @staticmethod
    def expression(node, args):
        template = node.op.array_api
        if len(args) == 2 and (type(args[0]) is _Constant) != (type(args[1]) is _Constant):
            args = _operands(node, args)
        return _declined(node, _fallback(node, args) if template is None
                         else template(args, node))

    @staticmethod
    def shape(node):
        return None         # the array-API form is written a statement per value


ARRAY_API = _ArrayApiForm()


def _operands(node, args) -> list:
    """`args` with a constant written as its Python literal where the standard allows one:
    an operand of an arithmetic or comparison operator whose other operand is an array of
    the constant's dtype. The standard gives the literal the array's dtype, so the value
    is the same, and NumPy (the fast path) skips making a 0-d array on every call."""
    k = 0 if type(args[0]) is _Constant else 1
    constant, other = args[k], node.inputs[1 - k]
    if not (constant.dtype == other.dtype and standard.is_operator(
            _template_text(node))):
        return args
    args = list(args)
    args[k] = constant.literal
    return args


def _template_text(node) -> str:
    """The node's array-API text over the arguments `a0`, `a1` (for `standard`)."""
    template = node.op.array_api
    return _fallback(node, ["a0", "a1"]) if template is None else template(["a0", "a1"], node)


def elementwise_template(op) -> str:
    """The array-API spelling of the elementwise `op` as a format string over its
    arguments (`xp.exp({0})`), for printers of fused programs."""
    node = Node(op, (), {}, (), np.dtype(np.float64))
    return ARRAY_API.expression(node, [f"{{{k}}}" for k in range(op.arity)])


def helpers(lines) -> list:
    """The definitions of the `tapec_xp_...` helpers `lines` call (and those they call)."""
    return xp_helpers.sources(set(_HELPER.findall("\n".join(lines))))


_HELPER = re.compile(r"\btapec_xp_\w+")


def emit(outputs, feeds: dict, fn_name: str = "gradient", title: str = "",
         arg_names: dict | None = None, order=None):
    """Array-API source of a function `fn_name(xp, device, *fed values)` computing
    `outputs`; the arguments as `emit.emit` takes them. Returns (source, argument keys in
    parameter order). Raises NoArrayApiForm naming the first op without a form."""
    order, fed, names, namer = signature(outputs, feeds, arg_names, order)
    body = statements(order, names, namer, form=ARRAY_API)
    params = ", ".join(["xp", "device", *(names[n] for _, n in fed)])
    function = function_lines(fn_name, params, body, outputs, names)
    title = one_line(title)
    lines = [f"# Generated by tapec {__version__} for any array-API namespace"
             + (f": {title}" if title else "")]
    for block in helpers(body):
        lines += ["", "", *block]
    lines += ["", "", *function]
    return "\n".join(lines) + "\n", [key for key, _ in fed]


@dataclass(frozen=True)
class ArrayApiFunction:
    """A program compiled in its array-API form: `fn(xp, device, *args)` and its source."""
    fn: object
    source: str
    arg_keys: tuple

    def __call__(self, xp, *args, device=None):
        """The program's outputs computed by `xp` from `args` (in `arg_keys` order)."""
        if device is None:
            device = device_of(*args)
        if xp is not np:
            args = [_moved(xp, a, device) if _is_numpy(a) else a for a in args]
        return self.fn(xp, device, *args)


def _moved(xp, value, device):
    # A Python number takes NumPy's dtype first (float64), as on the NumPy path, not the
    # namespace's default (PyTorch's is float32); a read-only array (tapec's values are)
    # is copied, since PyTorch cannot share it.
    value = np.asarray(value)
    return xp.asarray(value, device=device, copy=True if not value.flags.writeable else None)


def _is_numpy(value) -> bool:
    return isinstance(value, (np.ndarray, np.generic, float, int, bool))


_serial = itertools.count()


def compile_source(source: str, fn_name: str = "gradient",
                   arg_keys: tuple = ()) -> ArrayApiFunction:
    """Compile array-API source: its globals are its own (helpers included), nothing
    bound by tapec. Registered in `linecache` while the function lives, as NumPy code is."""
    filename = f"<tapec-generated-array-api-{next(_serial)}>"
    namespace = {"__name__": "tapec_generated"}
    code = compile(source, filename, "exec")
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    try:
        exec(code, namespace)
    except BaseException:
        linecache.cache.pop(filename, None)
        raise
    fn = namespace[fn_name]
    weakref.finalize(fn, linecache.cache.pop, filename, None).atexit = False
    return ArrayApiFunction(fn, source, tuple(arg_keys))


def namespace_of(*arrays):
    """The array-API namespace of `arrays` (array-api-compat's, which wraps NumPy,
    PyTorch, Dask and CuPy), NumPy's where none has one or array-api-compat is absent."""
    arrays = [a for a in arrays if not _is_numpy(a)]
    if not arrays:
        return np
    try:
        import array_api_compat
    except ImportError:
        found = {a.__array_namespace__() for a in arrays
                 if hasattr(a, "__array_namespace__")}
        if len(found) != 1:
            raise TypeError("arrays of several or no array-API namespaces: install "
                            "array-api-compat (pip install tapec[array-api])") from None
        return found.pop()
    return array_api_compat.array_namespace(*arrays)


def device_of(*arrays):
    """The device of the first of `arrays` that is not NumPy's (NumPy values are moved
    to it), else None: the namespace's default device."""
    for a in arrays:
        if _is_numpy(a) or not hasattr(a, "shape"):
            continue
        try:
            import array_api_compat
        except ImportError:
            return getattr(a, "device", None)
        return array_api_compat.device(a)
    return None
