"""IR -> readable NumPy source, compiled under a unique, inspectable filename.

One statement per node, written by `statements`, the one emitter loop: compiled
functions (`emit`) and exported modules (tapec.export) both print through it, each
with its own `Namer` (names.py), so values read `h = np.tanh(matmul_1)` or
`tanh_2 = np.tanh(matmul_1)`, and a `# from: <op> at file:line` line (`provenance`)
stands above the statements of each recorded op. Fed
values (forward values the tape holds, seeds) are the function's arguments, so the
compiled function holds no array; Python literals are inlined. The source is registered in `linecache`, so tracebacks and `inspect` show
the generated lines.

A long program (more than COMPACT_FROM computed values: an unrolled loop) is written
in the compact form, because Python's compile() time grows with a function's statements
and local names: a value read once is written inside the expression that reads it
(`add_2 = add_1 * scalar1 + add_1 * scalar0 * math.cos(add397)`), parenthesized only
where Python's precedence needs it (expressions.py). Values and evaluation order within
each operation are those of the statement-per-value form, so results are the same bits.

When every value is 0-d float64 and every op has a `scalar` template, the source
holds three functions: `gradient` (a dispatcher, the one returned and called),
`gradient_scalar` (Python floats and `math`) and `gradient_numpy` (the NumPy body,
run for a call where float arithmetic raises). See `scalar` for the rules.
"""
from __future__ import annotations

import contextlib
import functools
import gc
import itertools
import linecache
import math
import os
import re
import weakref

import numpy as np

from .._version import __version__
from . import blocks, expressions, native, scalar
from ..ir import sites
from ..ir.nodes import topological_order
from ..ops.shape import CONSTANT, PLACEHOLDER
from .names import Namer, identifier


class CodegenError(RuntimeError):
    """Raised when a graph contains something the NumPy printer cannot emit."""


def statements(order, names: dict, namer: Namer, special=None, form=None,
               uses=None) -> list:
    """The one emitter loop: a statement (or a template's lines) per computed node.

    `order` is topological; nodes already in `names` (parameters, values a caller named)
    are not computed. Constants are inlined as literals; every other node gets its name
    from `namer` (`tanh_2`, or one the namer was given) and is written with its op's NumPy
    template (or the templates of `form`, NUMPY by default). `special(node, args)` may
    return the lines of a node itself (export writes guards as errors), or None for the
    template. `names` is filled in as it goes: after the call it holds the name or literal
    of every node of `order`, except values written inline.

    With `uses` ({node: how many times it is read}), the compact form of long programs:
    an elementwise value read once, by an elementwise op, is written inside its reader's
    expression (parenthesized where Python's precedence needs it) instead of a statement
    of its own, up to INLINE_LENGTH characters."""
    form = NUMPY if form is None else form
    body, pending = [], {}      # pending: value -> (its expression, its precedence)
    forms = {}                  # (op, dtype) -> how its attribute-free nodes bind

    last = [None]           # the origin of the statements under the last `# from:` line

    def say_where(node):
        """A `# from: <op> at file:line` line above each run of statements that compute
        or differentiate one recorded op (not in the compact form: it is not read)."""
        origin = node.origin
        if uses is None and origin is not None and origin != last[0]:
            body.append(provenance(origin))
            last[0] = origin

    def write(node, expression):
        name = names[node] = namer.value(node)
        say_where(node)
        body.append(f"{name} = {expression}")

    def argument(i, slot):
        """The text standing for input `i` in a slot that takes bare expressions binding
        at least as tightly as `slot` (None: a slot that takes names only)."""
        if i not in pending:
            return names[i]
        text, precedence = pending.pop(i)
        if slot is None:
            write(i, text)
            return names[i]
        return text if precedence >= slot else f"({text})"

    for node in order:
        if node in names:
            continue
        if node.op is CONSTANT:
            names[node] = form.constant(node)
            continue
        if node.op is PLACEHOLDER:
            form.placeholder(node)
        binding = _binding(node, form, forms) if uses is not None else None
        if binding is None:
            args = [argument(i, None) for i in node.inputs]
            lines = special(node, args) if special is not None else None
            if lines is not None:
                body.extend(lines)
            elif form.multiline(node):
                name = names[node] = namer.value(node)
                say_where(node)
                body.extend(form.lines(node, name, args))
            else:
                write(node, form.expression(node, args))
            continue
        precedence, slots = binding
        expression = form.expression(node, [argument(i, slot) if i in pending else names[i]
                                            for i, slot in zip(node.inputs, slots)])
        if uses.get(node) == 1 and len(expression) <= INLINE_LENGTH:
            pending[node] = (expression, precedence)
        else:
            write(node, expression)
    if pending:             # every value read once is read by a later node of `order`
        raise CodegenError(f"values left unwritten: {list(pending)}; this is a bug in tapec")
    return body


def _binding(node, form, forms):
    """(how `node`'s expression binds, the slot each argument has in it: see
    expressions.parse), or None where it takes names only (not an elementwise op, or
    its template writes lines). Computed once per op and dtype for nodes without
    attributes (a template's text depends on nothing else), per node otherwise."""
    if node.op.arity is None:
        return None
    key = (node.op, node.dtype) if not node.attrs else None
    found = forms.get(key, False) if key is not None else False
    if found is False:
        shape = form.shape(node)
        found = None if shape is None else expressions.parse(shape, len(node.inputs))
        if key is not None:
            forms[key] = found
    return found


# Programs computing more values than this are written in the compact form (`statements`
# with `uses`): Python's compile() time grows with a function's statements and local
# names, and parenthesized groups cost its parser more than bare operators.
COMPACT_FROM = 1000
INLINE_LENGTH = 100


def _uses(order, names, outputs) -> dict:
    """{node: how often computed code reads it}; an output counts twice (it is named)."""
    uses = {}
    get = uses.get
    for node in order:
        if node not in names:
            for i in node.inputs:
                uses[i] = get(i, 0) + 1
    for o in outputs:
        if o is not None:
            uses[o] = get(o, 0) + 2
    return uses


class _NumpyForm:
    """How nodes print in the NumPy body: their ops' NumPy templates."""

    @staticmethod
    def constant(node):
        return node.op.numpy([], node)

    @staticmethod
    def placeholder(node):
        raise CodegenError("the gradient needs a value the tape does not hold "
                           f"({node!r}); this is a bug in tapec")

    @staticmethod
    def multiline(node):
        if node.op.numpy_lines is not None:
            return True
        if node.op.numpy is None:
            raise CodegenError(f"op {node.op.name!r} has no NumPy template")
        return False

    @staticmethod
    def lines(node, name, args):
        return node.op.numpy_lines(name, args, node)

    @staticmethod
    def expression(node, args):
        return node.op.numpy(args, node)

    @staticmethod
    def shape(node):
        """The expression with placeholders for its arguments (see `expressions`)."""
        if node.op.numpy_lines is not None or node.op.numpy is None:
            return None
        return node.op.numpy(expressions.PLACEHOLDERS[:len(node.inputs)], node)


NUMPY = _NumpyForm()


def _parameters(fed, given: dict, namer: Namer) -> dict:
    """{fed node: parameter name}: `given` ones as they are, else a prefix saying what the
    value is (x for a leaf, scalar for a fed Python float, the op name for a forward
    value, seed, grad_fn) numbered in parameter order."""
    for key, _ in fed:
        if key in given:
            namer.take(given[key])          # never reused, whatever the order
    names = {}
    for key, node in fed:
        name = given.get(key)
        if name is None and isinstance(node.label, str):    # the user's variable
            name = namer.claim(identifier(node.label))
        if name is None:
            if key[0] == "seed":
                prefix = "seed"
            elif key[0] == "random":        # the generators of random inputs
                prefix = "rng"
            elif node.op is PLACEHOLDER:
                prefix = "grad_fn" if node.dtype == object else \
                    "scalar" if "literal" in node.attrs else "x"
            else:
                prefix = node.op.name
            name = namer.parameter(prefix)
        names[node] = name
        namer.given(node, name)
    return names


def emit(outputs, feeds: dict, fn_name: str = "gradient", title: str = "",
         arg_names: dict | None = None, order=None, output_names=None):
    """NumPy source of a function computing `outputs` from the fed nodes.

    `feeds` maps a node to its argument key, ("tape", k) or ("seed", i); `arg_names`
    may give a key a parameter name (already a safe identifier), `output_names` an
    output its name (`dloss_dw`, an identifier). Returns the
    source and the argument keys in parameter order. The function named `fn_name`
    takes the fed values in that order and returns one value (or None) per output;
    on the fast path of 0-d float64 graphs the values are Python floats.
    """
    order, fed, names, namer = signature(outputs, feeds, arg_names, order)
    for node, name in zip(outputs, output_names or ()):
        if node is not None and node.inputs and node not in names and not namer.named(node):
            namer.assign(node, name)
    fed_names = dict(names)
    uses = _uses(order, names, outputs) if len(order) - len(names) > COMPACT_FROM else None
    body = statements(order, names, namer, uses=uses)
    params = ", ".join(names[n] for _, n in fed)
    numpy_fn = function_lines(fn_name, params, body, outputs, names)
    fast = _float_body(order, fed_names, namer, uses) \
        if scalar.eligible(order, outputs) else None
    if fast is None and scalar.numpy_scalars(order, outputs, body):
        functions = [scalar.unwrapping(fn_name, [n for _, n in fed], names),
                     function_lines(f"{fn_name}_numpy", params, body, outputs, names)]
    elif fast is None:
        functions = [numpy_fn]
    else:
        scalar_body, scalar_names, convert = fast
        functions = [scalar.dispatcher(fn_name, convert),
                     function_lines(f"{fn_name}_scalar", params, scalar_body, outputs,
                                    scalar_names),
                     *_native_version(fn_name, order, feeds, fed, outputs),
                     function_lines(f"{fn_name}_numpy", params, body, outputs, names)]
    # One search of the joined text per module, not a generator over every line.
    code = "\n".join(line for function in functions for line in function)
    imports = [f"import {module}" for module in ("math", "numexpr") if f"{module}." in code]
    title = one_line(title)
    lines = [f"# Generated by tapec {__version__}" + (f": {title}" if title else ""),
             *imports, "import numpy as np"]
    for function in functions:
        lines += ["", "", *function]
    return "\n".join(lines) + "\n", [key for key, _ in fed]


def signature(outputs, feeds: dict, arg_names: dict | None = None, order=None):
    """(the nodes in topological order, the fed (key, node) pairs in parameter order,
    {fed node: its parameter name}, the namer that gave them) of a function computing
    `outputs` from `feeds`: what every form of a program starts from."""
    if order is None:       # else the caller's: the same walk (simplify_program's)
        order = topological_order([o for o in outputs if o is not None], leaves=feeds)
    # One parameter per feed key (two reads of one Variable share it), in key order.
    first_of_key = {}
    for n in order:
        if n in feeds:
            first_of_key.setdefault(feeds[n], n)
    fed = sorted(first_of_key.items(), key=lambda item: item[0])
    namer = Namer()
    names = _parameters(fed, arg_names or {}, namer)
    for n in order:
        if n in feeds and n not in names:
            names[n] = names[first_of_key[feeds[n]]]
    return order, fed, names, namer


def _float_body(order, fed: dict, namer: Namer, uses):
    """(statements, names, whether the dispatcher converts the arguments) of the
    Python-float function (codegen/scalar.py), or None where a node has no float form.
    Values keep the names the NumPy body gave them."""
    names = dict(fed)
    try:
        body = statements(order, names, namer, form=scalar.FLOATS, uses=uses)
    except scalar.NoFloatForm:
        return None
    convert = uses is not None and scalar.all_float(fed)
    return ([] if convert else scalar.conversions(fed)) + body, names, convert


def _native_version(fn_name, order, feeds, fed, outputs) -> list:
    """The C version of the Python-float function, as a module constant
    `<fn_name>_native = (parameter count, output slots, C source)` that
    `compile_function` hands to the native tier; no lines when there is none."""
    index = {key: k for k, (key, _) in enumerate(fed)}
    parameter = {n: index[feeds[n]] for n in order if n in feeds}
    c_source = native.c_program(order, parameter, outputs)
    if c_source is None:
        return []
    spec = f"({len(fed)}, {native.output_slots(outputs)!r}, "
    return [[f"# {fn_name}_scalar in C, for the native tier (tapec/codegen/native.py)",
             f"{fn_name}_native = {spec}'''",
             *c_source.splitlines(), "''')"]]


def provenance(origin) -> str:
    """The comment saying which recorded op the statements below it compute or
    differentiate: `# from: tanh at train.py:12` (`# from: tanh` where the call site is
    not recorded, see config.set_call_sites)."""
    op_name, site = origin
    if site is None:
        return f"# from: {comment_text(op_name)}"
    return f"# from: {comment_text(op_name)} at {_location(site)}"


@functools.lru_cache(maxsize=4096)
def _location(site) -> str:
    """`file:line`, the file relative to the working directory when it is under it."""
    filename, line = sites.describe(site)
    try:
        relative = os.path.relpath(filename)
    except ValueError:          # another drive (Windows)
        relative = filename
    if not relative.startswith(os.pardir) and os.path.isabs(filename):
        filename = relative
    return f"{comment_text(filename)}:{line}"


def comment_text(text: str) -> str:
    """User text (a file name) made safe inside a comment of generated code: letters,
    digits, spaces and `_./\\:+-@~<>` as they are, every other character as its escape
    (`\\n`, `\\x2c`, `\\u2028`). No newline can end the comment, and no bracket, comma
    or quote is left for a line wrapper that breaks code after commas to act on."""
    return "".join(c if c.isalnum() or c in _COMMENT_SAFE else _escape(c) for c in str(text))


_COMMENT_SAFE = frozenset(" _./\\:+-@~<>")


def _escape(c: str) -> str:
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else \
        f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


_CODING = re.compile(r"coding([:=])")


def one_line(text: str) -> str:
    """`text` made safe for the comment on a generated module's first line: every
    character that is not printable (newline, CR, NUL, form feed, U+0085, U+2028...,
    any of which could end the comment and start code) is written as its escape, and
    `coding:` gets a space so the line cannot declare the file's encoding (PEP 263)."""
    text = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in str(text))
    return _CODING.sub(r"coding \1", text)


def function_lines(fn_name, params, body, outputs, names) -> list:
    """`def fn_name(params):` with `body`, returning the outputs' names as a tuple."""
    results = ", ".join("None" if o is None else names[o] for o in outputs)
    return [f"def {fn_name}({params}):", *("    " + line for line in body),
            f"    return ({results}{',' if len(outputs) == 1 else ''})"]


_serial = itertools.count()


@contextlib.contextmanager
def no_collections():
    """No cyclic garbage collection while a program is built: building allocates
    hundreds of thousands of nodes and tensors that all stay alive until it ends, and
    the collector's full passes over them made a 48,000-op compile a fifth slower."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _split_fallback(source: str, fn_name: str):
    """(what to compile now, the NumPy fallback of a float fast path or None).

    The fallback runs only when Python floats raise (inf, nan), which most programs
    never meet, and compiling it is half the compile time of a long scalar program.
    The deferred text keeps its line numbers: it is compiled after as many blank lines
    as precede it, so tracebacks point into the registered source."""
    header = f"\ndef {fn_name}_numpy("
    start = source.find(header)
    if start < 0:
        return source, None
    start += 1
    blank_lines = source.count("\n", 0, start)
    return source[:start], "\n" * blank_lines + source[start:]


def readable(source: str) -> str:
    """The source as people read it: one body. A program of 0-d float64 values is
    compiled as a dispatcher, a Python-float copy, its C version and the NumPy body
    (scalar.py), the same statements in three spellings, and one of 0-d float32 values
    as a dispatcher that passes NumPy scalars to the NumPy body; this is its header and
    the NumPy body under the dispatcher's name, with a line saying so. Any other source
    is returned as it is."""
    for fn_name in ("gradient", "function"):
        source_fn, numpy_fn = _split_fallback(source, fn_name)
        if numpy_fn is not None:
            break
    else:
        return source
    header = source_fn[:source_fn.index(f"\ndef {fn_name}(")].rstrip("\n").splitlines()
    numpy_fn = numpy_fn.lstrip("\n").replace(f"def {fn_name}_numpy(", f"def {fn_name}(", 1)
    note = SCALAR_NOTE if f"def {fn_name}_scalar(" in source_fn else NUMPY_SCALAR_NOTE
    return "\n".join([*header, note, "", "", numpy_fn.rstrip("\n")]) + "\n"


SCALAR_NOTE = ("# Runs on Python floats (and compiled C) where its values are 0-d float64: "
               "the same statements")
NUMPY_SCALAR_NOTE = "# Runs on NumPy scalars where its values are 0-d float32"


def _compiled_on_first_call(text, filename, name, namespace):
    """A stand-in for the function `name` defined by `text`, which compiles `text` into
    `namespace` (replacing itself there) when first called."""
    def first_call(*args):
        exec(compile(text, filename, "exec"), namespace)
        return namespace[name](*args)
    first_call.__name__ = name
    return first_call


def compile_function(source: str, fn_name: str):
    """Compile generated source; its globals are NumPy, the standard `math` and, where the
    source uses them, numexpr (run on tapec's thread count) and `tapec_blocked`
    (blocks.py): all bound by tapec, never taken from user code.

    The source is registered in `linecache` under a unique name for as long as the
    returned function lives, so tracebacks and `inspect.getsource` show it; when the
    function is garbage collected (it has left the compile cache and nothing else holds
    it), the entry goes too, so a process compiling ever new shapes does not keep every
    source it ever compiled."""
    filename = f"<tapec-generated-{next(_serial)}>"
    namespace = {"np": np, "math": math, "__name__": "tapec_generated"}
    if "tapec_blocked(" in source:
        namespace["tapec_blocked"] = blocks.tapec_blocked
    eager, deferred = _split_fallback(source, fn_name)
    code = compile(eager, filename, "exec")
    if deferred is not None:
        namespace[f"{fn_name}_numpy"] = _compiled_on_first_call(
            deferred, filename, f"{fn_name}_numpy", namespace)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    try:
        exec(code, namespace)
        # Taken out of its own globals (generated code never calls it by name), so the
        # function is not in a reference cycle and is freed, and its source released,
        # as soon as the last reference goes rather than at the next full collection.
        fn = namespace.pop(fn_name)
        release = weakref.finalize(fn, linecache.cache.pop, filename, None)
        native_version = namespace.pop(f"{fn_name}_native", None)
        if native_version is not None:
            float_version = f"{fn_name}_scalar"
            namespace[float_version] = native.Tiered(namespace[float_version],
                                                     *native_version)
    except BaseException:
        linecache.cache.pop(filename, None)
        raise
    release.atexit = False          # nothing to release at exit
    if "numexpr" in namespace:      # the source's own `import numexpr`, on tapec's threads
        namespace["numexpr"] = blocks.NumexprThreads(namespace["numexpr"])
    return fn
