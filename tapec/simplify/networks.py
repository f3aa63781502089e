"""`delta_einsum`: a product of factors, summed over some indices and placed on diagonals.

    delta_einsum(X, u, X, e, equation="ni,na,nj,nc->(ia)(jc)")

is the tensor T[(i,a), (j,c)] = sum over n of X[n,i] u[n,a] X[n,j] e[n,c]. The equation
is an einsum's, with four additions that let a jacobian keep its Kronecker structure:

* an output axis may group letters, `(ia)`: its index is the C-order flat index of
  (i, a), as a reshape of the two axes would give;
* a letter may appear on several output axes, `(ia)na`: the result is zero off that
  diagonal (a Kronecker delta, T[(i,a), n, c] = X[n,i] u[n,a] if a == c else 0);
* `()` is an axis of size 1, and a term written `/na` divides instead of multiplying;
* pairs of letters after a `;` are Kronecker deltas, `"cd;ac,bd->(ab)cd"` (the seed
  diag(v): v[c,d] δ(a,c) δ(b,d)). Where every factor is finite each delta is substituted
  away (its two letters become one); otherwise it is multiplied in as an identity
  matrix, as the graph did with its seed, so a zero times inf is nan in the same places.

The simplifier (kronecker.py) builds these nodes from a jacobian's identity seed instead
of materializing it, and code generation evaluates one the cheap way: the factors are
split into two groups that share only summed (and batch) indices, each group is
multiplied out over its own indices, and one matrix product contracts them (BLAS); the
diagonal placement writes into zeros only at the end. A factor that is a fill of ones
(the seed's own values) is not multiplied: x * 1 is x. The values equal those of the
graph it replaces up to the order of sums and products (as BLAS reorders a matmul).
"""
from __future__ import annotations

import itertools
import math
import re
import string

import numpy as np

from ..ops.literals import xp_dtype
from ..ops.registry import Op, declare

_TERM = re.compile(r"\(([A-Za-z]*)\)|([A-Za-z])")


def parse(equation):
    """(terms, divisors, deltas, groups): input letter strings, which are divisors, the
    Kronecker deltas (pairs of letters), output groups."""
    inputs, _, output = equation.partition("->")
    inputs, _, deltas = inputs.partition(";")
    terms = inputs.split(",")
    divisors = tuple(t.startswith("/") for t in terms)
    terms = tuple(t.lstrip("/") for t in terms)
    deltas = tuple(deltas.split(",")) if deltas else ()
    groups = tuple(m.group(1) if m.group(1) is not None else m.group(2)
                   for m in _TERM.finditer(output))
    return terms, divisors, deltas, groups


def unparse(terms, divisors, deltas, groups) -> str:
    inputs = ",".join(("/" if d else "") + t for t, d in zip(terms, divisors))
    if deltas:
        inputs += ";" + ",".join(deltas)
    return inputs + "->" + "".join(g if len(g) == 1 else f"({g})" for g in groups)


def letter_sizes(terms, shapes, deltas=()) -> dict:
    sizes = {c: s for term, shape in zip(terms, shapes) for c, s in zip(term, shape)}
    for _ in deltas:                  # a letter known only through its delta partner
        for a, b in deltas:
            if a in sizes or b in sizes:
                sizes.setdefault(a, sizes.get(b))
                sizes.setdefault(b, sizes.get(a))
    return sizes


def _infer(*tensors, equation):
    terms, divisors, deltas, groups = parse(equation)
    shapes = [t._shape for t in tensors]
    if len(terms) != len(tensors) or any(len(t) != len(s) for t, s in zip(terms, shapes)):
        raise ValueError(f"delta_einsum: {equation!r} does not fit shapes {shapes}")
    sizes = letter_sizes(terms, shapes, deltas)
    for term, shape in zip(terms, shapes):
        if any(sizes[c] != s for c, s in zip(term, shape)):
            raise ValueError(f"delta_einsum: {equation!r}: an index has two sizes in {shapes}")
    if any(c not in sizes for g in groups for c in g):
        raise ValueError(f"delta_einsum: {equation!r}: an output index is in no factor")
    shape = tuple(math.prod(sizes[c] for c in g) for g in groups)
    return shape, tensors[0]._dtype


# --- the evaluation plan ---------------------------------------------------------------

def _size(letters, sizes) -> int:
    return math.prod(sizes[c] for c in letters)


def _count(term, sizes) -> int:
    return math.prod(sizes[c] for c in term)


def _ordered(letters, order) -> str:
    return "".join(c for c in order if c in letters)


class _Printer:
    """Statements over named arrays, with fresh names for temporaries."""

    def __init__(self, out):
        self.out, self.lines, self.count = out, [], 0

    def let(self, expression) -> str:
        self.count += 1
        name = f"{self.out}_{self.count}"
        self.lines.append(f"{name} = {expression}")
        return name


def _aligned(name, term, letters):
    """`name` (indexed by `term`, no repeats) permuted and padded to broadcast over the
    axes `letters`."""
    if not term:
        return f"({name})"                                      # a scalar broadcasts
    order = _ordered(term, letters)
    if order != term:
        name = f"np.einsum('{term}->{order}', {name})"            # a view
    if order != letters:
        index = ", ".join(":" if c in term else "None" for c in letters)
        name = f"{name}[{index}]"
    return name


def _product(p, members, letters, sizes):
    """The elementwise product of `members` ((name, term, divisor, unit)) over the axes
    `letters`: numerators first, then each division."""
    # smallest first, so scalars and vectors meet each other before the largest factor
    numerators = sorted((m for m in members if not m[2]), key=lambda m: _count(m[1], sizes))
    expression = " * ".join(_aligned(n, t, letters) for n, t, _, _ in numerators) \
        or "1.0"
    for name, term, _, _ in (m for m in members if m[2]):
        expression = f"({expression}) / {_aligned(name, term, letters)}"
    return p.let(expression)


def _split_cost(left, right, summed, output, sizes):
    """Cost of contracting the two groups by one (batched) matrix product, or None."""
    l_letters = set("".join(m[1] for m in left))
    r_letters = set("".join(m[1] for m in right))
    shared = l_letters & r_letters
    batch, contracted = shared & output, shared & summed
    l_free, r_free = (l_letters & output) - batch, (r_letters & output) - batch
    if not contracted:
        return None
    gemm = _size(batch, sizes) * _size(contracted, sizes) * _size(l_free, sizes) * \
        _size(r_free, sizes)
    products = len(left) * _size(l_letters, sizes) + len(right) * _size(r_letters, sizes)
    return gemm + products


def plan_lines(out, args, equation, shapes, dtype, units=()):
    """Statements computing `out` (of `dtype`) from the factor names `args`; `units[k]`
    marks factor k as a fill of ones (not multiplied)."""
    terms, divisors, deltas, groups = parse(equation)
    sizes = letter_sizes(terms, shapes, deltas)
    units = tuple(units) or (False,) * len(terms)
    p = _Printer(out)
    if deltas:
        return _with_deltas(p, args, terms, divisors, deltas, groups, sizes, dtype, units)
    members = []
    for name, term, divisor, unit in zip(args, terms, divisors, units):
        dedup = "".join(dict.fromkeys(term))
        if dedup != term:                              # a repeated letter: its diagonal
            name = f"np.einsum('{term}->{dedup}', {name})"
        members.append((name, dedup, divisor, unit))
    output = "".join(dict.fromkeys("".join(groups)))
    every = "".join(dict.fromkeys("".join(t for _, t, _, _ in members)))
    summed = set(every) - set(output)
    # A factor of ones is left out where the other factors carry its letters (x * 1 is x)
    carried = set("".join(m[1] for m in members if not m[3]))
    work = [m for m in members if not m[3] or not set(m[1]) <= carried]
    best = None
    if summed:
        for r in range(1, len(work)):
            for left in itertools.combinations(range(len(work)), r):
                if 0 not in left:
                    continue                           # each split once
                lm = [work[k] for k in left]
                rm = [work[k] for k in range(len(work)) if k not in left]
                cost = _split_cost(lm, rm, summed, set(output), sizes)
                if cost is not None and (best is None or cost < best[0]):
                    best = (cost, lm, rm)
    if best is not None:
        result = _contract(p, best[1], best[2], summed, output, sizes)
    elif summed:
        operands = ", ".join(n if not d else f"1 / {n}" for n, _, d, _ in work)
        eq = ",".join(t for _, t, _, _ in work) + "->" + output
        result = p.let(f"np.einsum('{eq}', {operands}, optimize=True)")
    else:
        result = _product(p, work, output, sizes)
    _place(p, result, output, groups, sizes)
    if p.count:                  # temporaries go now, not when the generated function ends
        p.lines.append("del " + ", ".join(f"{out}_{k}" for k in range(1, p.count + 1)))
    return p.lines


def _with_deltas(p, args, terms, divisors, deltas, groups, sizes, dtype, units):
    """Each delta substituted away (its two letters made one), where every factor is
    finite. Otherwise the deltas are multiplied in as identity matrices, as the graph
    did with its seed: a zero off the diagonal times inf or nan is nan there too."""
    parent = {}

    def find(c):
        while parent.get(c, c) != c:
            c = parent[c]
        return c
    for a, b in deltas:
        if find(a) != find(b):
            parent[find(b)] = find(a)
    tied_terms = tuple("".join(find(c) for c in t) for t in terms)
    tied_groups = tuple("".join(find(c) for c in g) for g in groups)
    fast = plan_lines(p.out, args, unparse(tied_terms, divisors, (), tied_groups),
                      [tuple(sizes[c] for c in t) for t in terms], dtype, units)
    checks = " and ".join(f"np.isfinite({a}).all()" for a, t, unit in zip(args, terms, units)
                          if t and not unit) or "True"
    eyes = ", ".join(f"np.eye({sizes[a]}, dtype=np.{np.dtype(dtype).name})" for a, b in deltas)
    operands = ", ".join(a if not d else f"1 / {a}" for a, d in zip(args, divisors))
    output = "".join(dict.fromkeys("".join(groups)))
    slow = _Printer(p.out)
    result = slow.let(f"np.einsum('{','.join(terms + deltas)}->{output}', {operands}, {eyes}, "
                      "optimize=True)")
    _place(slow, result, output, groups, sizes)
    slow.lines.append(f"del {result}")
    return ([f"if {checks}:"] + [f"    {line}" for line in fast] + ["else:"]
            + [f"    {line}" for line in slow.lines])


def _contract(p, left, right, summed, output, sizes):
    l_letters = "".join(dict.fromkeys("".join(m[1] for m in left)))
    r_letters = "".join(dict.fromkeys("".join(m[1] for m in right)))
    shared = set(l_letters) & set(r_letters)
    batch = _ordered(shared & set(output), output)
    contracted = "".join(sorted(shared & set(summed)))
    l_free = _ordered(set(l_letters) & set(output) - set(batch), output)
    r_free = _ordered(set(r_letters) & set(output) - set(batch), output)
    if batch + r_free + l_free == output:     # the product comes out in order: no copy
        left, right, l_letters, r_letters, l_free, r_free = \
            right, left, r_letters, l_letters, r_free, l_free

    def side(members, letters, free):
        inner = "".join(c for c in letters if c in summed and c not in shared)
        axes = batch + contracted + free + inner
        name = _product(p, members, axes, sizes)
        if inner:
            name = p.let(f"np.sum({name}, axis={tuple(range(len(axes) - len(inner), len(axes)))})")
        shape = (_size(batch, sizes), _size(contracted, sizes), _size(free, sizes))
        return p.let(f"np.reshape({name}, {shape})")

    lm, rm = side(left, l_letters, l_free), side(right, r_letters, r_free)
    product = p.let(f"np.matmul(np.swapaxes({lm}, 1, 2), {rm})")
    got = batch + l_free + r_free
    product = p.let(f"np.reshape({product}, {tuple(sizes[c] for c in got)})")
    if got != output:
        product = p.let(f"np.einsum('{got}->{output}', {product})")
    return product


def _place(p, result, output, groups, sizes):
    """`result` (axes `output`) laid out as `groups`: a reshape, or zeros with `result`
    written on the diagonal where a letter names several axes."""
    slots = "".join(groups)
    shape = tuple(_size(g, sizes) for g in groups)
    if slots == output:
        p.lines.append(f"{p.out} = np.reshape({result}, {shape})")
        return
    full = tuple(sizes[c] for c in slots)
    index = []
    for c in slots:
        k = output.index(c)
        pad = tuple(sizes[c] if j == k else 1 for j in range(len(output)))
        index.append(f"np.arange({sizes[c]}).reshape({pad})")
    p.lines.append(f"{p.out} = np.zeros({full}, dtype={result}.dtype)")
    p.lines.append(f"{p.out}[{', '.join(index)}] = {result}")
    p.lines.append(f"{p.out} = np.reshape({p.out}, {shape})")


def _is_unit(node) -> bool:
    return node.op.name == "fill" and node.attrs["value"] == 1


def _lines(out, args, node):
    return plan_lines(out, args, node.attrs["equation"], [i.shape for i in node.inputs],
                      node.dtype, [_is_unit(i) for i in node.inputs])


def _impl(*arrays, equation):
    """Eager evaluation: the same statements code generation prints."""
    names = [f"a{k}" for k in range(len(arrays))]
    scope = {"np": np, **dict(zip(names, arrays))}
    dtype = np.result_type(*arrays)
    exec("\n".join(plan_lines("r", names, equation, [a.shape for a in arrays], dtype)), scope)
    return scope["r"]


def _array_api_lines(out, args, node):
    """The array-API form: one einsum (codegen/xp_helpers.py) of the factors (divisors
    as reciprocals) and the deltas as identity matrices, then the placement on the
    output's diagonals as a second einsum with identities (no branch on the values,
    no writes into zeros). A zero off a diagonal times inf or nan is nan there, as the
    NumPy form's path for non-finite factors."""
    terms, divisors, deltas, groups = parse(node.attrs["equation"])
    sizes = letter_sizes(terms, [i.shape for i in node.inputs], deltas)
    dtype = xp_dtype(node.dtype)

    def eye(n):
        return f"xp.eye({n}, dtype={dtype}, device=device)"
    operands = [f"(1 / {a})" if d else a for a, d in zip(args, divisors)]
    operands += [eye(sizes[a]) for a, _ in deltas]
    output = "".join(dict.fromkeys("".join(groups)))
    lines = [f"{out} = tapec_xp_einsum(xp, device, '{','.join(terms + deltas)}->{output}', "
             f"{', '.join(operands)})"]
    slots = "".join(groups)
    if slots != output:             # a letter on several axes: the others are its copies
        free = iter(c for c in string.ascii_letters if c not in slots)
        placed, ties = [], []
        for c in slots:
            if c in placed:
                copy = next(free)
                ties.append((c, copy))
                c = copy
            placed.append(c)
        equation = ",".join([output] + [a + b for a, b in ties]) + "->" + "".join(placed)
        lines.append(f"{out} = tapec_xp_einsum(xp, device, '{equation}', {out}, "
                     + ", ".join(eye(sizes[a]) for a, _ in ties) + ")")
    shape = tuple(_size(g, sizes) for g in groups)
    lines.append(f"{out} = xp.reshape({out}, {shape})")
    return lines


DELTA_EINSUM = declare(Op(
    name="delta_einsum", short="network", impl=_impl, infer=_infer, numpy_lines=_lines,
    array_api_lines=_array_api_lines,
    differentiable=False,
    latex=r"\operatorname{{einsum}}\left({0}, \ldots\right)"))
