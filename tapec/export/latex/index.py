"""Index notation for results with more than two axes: sums of products of entries.

A jacobian of a matrix by a matrix has four axes; matrix notation would need a meaning
for "a matrix of matrices" that readers do not share. Such a result prints entry by
entry, as the Matrix Cookbook writes it:

    \\frac{\\partial f_{ij}}{\\partial X_{kl}} = \\delta_{jl} X_{ki} + \\delta_{il} X_{kj}

Each IR node becomes a list of `Term`s for given index letters: a coefficient, indexed
factors (leaves), Kronecker deltas, and the letters summed over. Deltas are substituted
away where one of their letters is summed, fills of one number become coefficients, and
equal terms are collected. The graph must be multilinear in its leaves (products,
transposes, sums, `delta_einsum` networks, jacobian seeds); anything else raises
`NoIndexForm`, and the caller says plainly that the result has no matrix form.
"""
from __future__ import annotations

from ...ops.sympy_rules import sympy as _sympy
from ...simplify.networks import parse
from .dispatch import OpVisitor
from .scalar import literal_value

OUTPUT_LETTERS = "ijklmn"          # the result's axes, in order
SUMMED_LETTERS = "pqrsuvw"        # letters bound by a sum


class NoIndexForm(ValueError):
    """The graph is not a sum of products that index notation can show."""


class Term:
    """coefficient * prod(factors) * prod(deltas), summed over `summed`.

    factors: [(name, letters)], deltas: [(a, b)], summed: frozenset of letters."""
    __slots__ = ("coefficient", "factors", "deltas", "summed")

    def __init__(self, coefficient, factors=(), deltas=(), summed=frozenset()):
        self.coefficient, self.factors = coefficient, tuple(factors)
        self.deltas, self.summed = tuple(deltas), frozenset(summed)

    def times(self, other):
        return Term(self.coefficient * other.coefficient, self.factors + other.factors,
                    self.deltas + other.deltas, self.summed | other.summed)


def _renamed(letters, old, new):
    return "".join(new if c == old else c for c in letters)


def simplified(term, sizes):
    """`term` with each delta substituted where one of its letters is summed, deltas of
    a letter with itself dropped (times the letter's size when summed), and sums over a
    letter no factor uses turned into the letter's size."""
    factors, deltas, summed = list(term.factors), list(term.deltas), set(term.summed)
    coefficient = term.coefficient
    changed = True
    while changed:
        changed = False
        for k, (a, b) in enumerate(deltas):
            if a == b:
                deltas.pop(k)
                changed = True
                break
            keep, gone = (a, b) if b in summed else (b, a) if a in summed else (None, None)
            if gone is None:
                continue
            deltas.pop(k)
            summed.discard(gone)
            factors = [(n, _renamed(ls, gone, keep)) for n, ls in factors]
            deltas = [(_renamed(x, gone, keep), _renamed(y, gone, keep)) for x, y in deltas]
            changed = True
            break
    used = {c for _, ls in factors for c in ls} | {c for d in deltas for c in d}
    for c in sorted(summed - used):
        coefficient *= sizes[c]
        summed.discard(c)
    deltas = [tuple(sorted(d)) for d in deltas]
    return Term(coefficient, sorted(factors), sorted(deltas), summed)


class IndexConverter(OpVisitor):
    """IR nodes to terms: `terms(node, letters)` with one letter (or None for an axis of
    size 1) per axis of the node. `names` maps leaf keys to display names."""

    def __init__(self, names):
        self.names = names
        self.sizes = {}
        self._fresh = iter(SUMMED_LETTERS)

    def fresh(self, size):
        try:
            letter = next(self._fresh)
        except StopIteration:
            raise NoIndexForm("more summed indices than letters") from None
        self.sizes[letter] = size
        return letter

    def terms(self, n, letters):
        for c, s in zip(letters, n.shape):
            if c is not None:
                self.sizes[c] = s
        return self.visit(n, list(letters))

    def default(self, n, letters):
        raise NoIndexForm(f"op {n.op.name!r} has no index form here")

    def _print_placeholder(self, n, letters):
        used = "".join(c for c in letters if c is not None)
        return [Term(_sympy().Integer(1), [(self.names[n.attrs["leaf"]], used)])]

    def _print_fill(self, n, letters):
        value = literal_value(n)
        return [] if value == 0 else [Term(value)]

    _print_constant = _print_fill

    def _through(self, n, letters):
        return self.terms(n.inputs[0], letters)

    _print_identity = _print_stop_gradient = _print_read_variable = _print_cast = _through

    def _print_transpose(self, n, letters):
        inner = [None] * len(letters)
        for j, p in enumerate(n.attrs["perm"]):
            inner[p] = letters[j]
        return self.terms(n.inputs[0], inner)

    def _print_reshape(self, n, letters):
        x = n.inputs[0]
        wide = [c for c, s in zip(letters, n.shape) if s != 1]
        if [s for s in x.shape if s != 1] != [s for s in n.shape if s != 1]:
            raise NoIndexForm("a reshape that merges or splits axes")
        it = iter(wide)
        return self.terms(x, [next(it) if s != 1 else None for s in x.shape])

    def _broadcast(self, x, shape, letters):
        """Letters for operand `x` broadcast against an output of `shape`."""
        lead = len(shape) - len(x.shape)
        if lead < 0:
            raise NoIndexForm("an operand larger than the result")
        return [letters[lead + k] if s != 1 else None for k, s in enumerate(x.shape)]

    def _print_broadcast_to(self, n, letters):
        x = n.inputs[0]
        return self.terms(x, self._broadcast(x, n.shape, letters))

    def _print_add(self, n, letters):
        a, b = n.inputs
        return self.terms(a, self._broadcast(a, n.shape, letters)) + \
            self.terms(b, self._broadcast(b, n.shape, letters))

    def _print_subtract(self, n, letters):
        a, b = n.inputs
        negated = [Term(-t.coefficient, t.factors, t.deltas, t.summed)
                   for t in self.terms(b, self._broadcast(b, n.shape, letters))]
        return self.terms(a, self._broadcast(a, n.shape, letters)) + negated

    def _print_negative(self, n, letters):
        return [Term(-t.coefficient, t.factors, t.deltas, t.summed)
                for t in self.terms(n.inputs[0], letters)]

    def _print_multiply(self, n, letters):
        a, b = n.inputs
        left = self.terms(a, self._broadcast(a, n.shape, letters))
        right = self.terms(b, self._broadcast(b, n.shape, letters))
        return [s.times(t) for s in left for t in right]

    def _print_reduce_sum(self, n, letters):
        """A sum over the reduced axes, each a fresh summed letter."""
        x = n.inputs[0]
        axes = {a % len(x.shape) for a in n.attrs["axis"]}
        keep = n.attrs.get("keepdims", False)
        out, inner, bound = iter(letters), [], set()
        for a, size in enumerate(x.shape):
            letter = next(out) if keep or a not in axes else None
            if a in axes:
                letter = self.fresh(size) if size != 1 else None
                bound |= {letter} - {None}
            inner.append(letter)
        return [Term(t.coefficient, t.factors, t.deltas, t.summed | bound)
                for t in self.terms(x, inner)]

    def _print_matmul(self, n, letters):
        a, b = n.inputs
        if len(a.shape) != 2 or len(b.shape) != 2:
            raise NoIndexForm("a batched or vector matmul")
        p = self.fresh(a.shape[1]) if a.shape[1] != 1 else None
        left = self.terms(a, [letters[0], p])
        right = self.terms(b, [p, letters[1]])
        return [Term(s.coefficient * t.coefficient, s.factors + t.factors,
                     s.deltas + t.deltas, s.summed | t.summed | ({p} - {None}))
                for s in left for t in right]

    def _print_delta_einsum(self, n, letters):
        terms, divisors, deltas, groups = parse(n.attrs["equation"])
        if any(divisors) or any(len(g) > 1 for g in groups):
            raise NoIndexForm("a network with grouped axes or divisions")
        mapping = {}
        for g, c, s in zip(groups, letters, n.shape):
            if len(g) == 1:
                mapping[g] = c if s != 1 else None
        sizes = {}
        for term, x in zip(terms, n.inputs):
            sizes.update(zip(term, x.shape))
        bound = set()
        for term in terms:
            for c in term:
                if c not in mapping:
                    mapping[c] = self.fresh(sizes[c])
                    bound.add(mapping[c])
        for a, b in deltas:
            for c in (a, b):
                if c not in mapping:
                    mapping[c] = self.fresh(sizes.get(a, sizes.get(b)))
                    bound.add(mapping[c])
        result = [Term(_sympy().Integer(1), (), [(mapping[a], mapping[b]) for a, b in deltas
                                                 if mapping[a] and mapping[b]], bound)]
        for term, x in zip(terms, n.inputs):
            inner = self.terms(x, [mapping[c] for c in term])
            result = [s.times(t) for s in result for t in inner]
        return result

    def _print_diag_seed(self, n, letters):
        v = n.inputs[0]
        rest = letters[1:]
        flat = [c for c, s in zip(rest, v.shape) if s != 1]
        if len(flat) != 1 or letters[0] is None:
            raise NoIndexForm("a seed over several axes")
        inner = self.terms(v, [c if s != 1 else None for c, s in zip(rest, v.shape)])
        return [t.times(Term(_sympy().Integer(1), (), [(letters[0], flat[0])]))
                for t in inner]

    def _print_eye(self, n, letters):
        a, b = letters
        return [Term(_sympy().Integer(1), (), [(a, b)] if a and b else ())]


def collected(terms, sizes):
    """Simplified terms with equal ones added up (and zeros dropped)."""
    order, totals = [], {}
    for t in terms:
        t = simplified(t, sizes)
        key = (t.factors, t.deltas, t.summed)
        if key not in totals:
            order.append(key)
            totals[key] = t
        else:
            old = totals[key]
            totals[key] = Term(old.coefficient + t.coefficient, *key)
    return [totals[k] for k in order if totals[k].coefficient != 0]


def indexed_name(name, letters):
    """`name` with the index `letters`: X_{ij}; a name with a subscript of its own is
    parenthesized, (W_{1})_{ij}."""
    if not letters:
        return name
    base = rf"\left({name}\right)" if any(ch in name for ch in "_^ ") else name
    return f"{base}_{{{letters}}}"


def term_tex(term):
    """The LaTeX of one term, without its sign: coefficient, sum, deltas, factors."""
    parts = []
    magnitude = abs(term.coefficient)
    if magnitude != 1 or (not term.factors and not term.deltas):
        parts.append(_sympy().latex(magnitude))
    if term.summed:
        parts.append(r"\sum_{" + "".join(sorted(term.summed)) + "}")
    parts += [rf"\delta_{{{a}{b}}}" for a, b in term.deltas]
    parts += [indexed_name(n, ls) for n, ls in term.factors]
    return " ".join(parts)


def terms_tex(terms):
    """A sum of terms: `0` when there are none."""
    if not terms:
        return "0"
    text = ""
    for k, t in enumerate(terms):
        negative = t.coefficient < 0
        body = term_tex(t)
        if k == 0:
            text = ("-" if negative else "") + body
        else:
            text += (" - " if negative else " + ") + body
    return text


def index_form(root, names, letters):
    """The entries of `root` for the index `letters` (one per axis; None for size 1) as
    LaTeX, or raise NoIndexForm."""
    converter = IndexConverter(names)
    found = converter.terms(root, letters)
    return terms_tex(collected(found, converter.sizes))
