"""Helpers that array-API code carries, where the standard has a gap.

Each helper is an ordinary function of this module, written against the namespace it is
given (`xp`, its first parameter) and the standard only; `sources` copies the text of
the ones a program calls into its source (array_api.py), so generated code defines them
itself and runs without tapec. They read only shapes (static under `jax.jit`, known to
Dask), never values, and write nothing in place.
"""
from __future__ import annotations

import inspect
import re
import sys


def sources(names) -> list:
    """The source lines of the helpers called `names`, and of those they call, each
    helper once, in name order."""
    wanted, stack = set(), list(names)
    while stack:
        name = stack.pop()
        if name in wanted:
            continue
        wanted.add(name)
        stack.extend(_CALLS.findall(_source(name)))
    return [_source(name).splitlines() for name in sorted(wanted)]


_CALLS = re.compile(r"\btapec_xp_\w+")
_SOURCES = {}


def _source(name) -> str:
    found = _SOURCES.get(name)
    if found is None:
        function = getattr(sys.modules[__name__], name, None)
        if function is None or not name.startswith("tapec_xp_"):
            raise KeyError(f"no array-API helper {name!r}")
        found = _SOURCES[name] = inspect.getsource(function).rstrip()
    return found


# --- the helpers: each reads `xp` and shapes only ------------------------------------------

def tapec_xp_einsum(xp, device, equation, *operands):
    """`einsum` in the standard: repeated letters of one operand become its diagonal
    (a mask and a sum), letters no one else needs are summed, then operands are
    contracted two at a time with `matmul` over their shared letters, and the result is
    put in the output's order. Explicit equations (`ij,jk->ik`) only, as tapec writes."""
    inputs, output = equation.replace(" ", "").split("->")
    terms = inputs.split(",")
    pending = []
    for term, x in zip(terms, operands):
        while len(set(term)) < len(term):           # a repeated letter: its diagonal
            letter = next(c for c in term if term.count(c) > 1)
            i = term.index(letter)
            j = term.index(letter, i + 1)
            n = x.shape[i]
            shape = [1] * len(term)
            shape[i] = shape[j] = n
            eye = xp.reshape(xp.eye(n, dtype=x.dtype, device=device), tuple(shape))
            x = xp.sum(x * eye, axis=j)
            term = term[:j] + term[j + 1:]
        pending.append((term, x))

    def needed(k, letters):
        others = "".join(t for m, (t, _) in enumerate(pending) if m != k) + output
        return [c for c in letters if c in others]

    for k, (term, x) in enumerate(pending):      # letters only this operand has
        lone = [i for i, c in enumerate(term) if c not in needed(k, term)]
        if lone:
            x = xp.sum(x, axis=tuple(lone))
            pending[k] = ("".join(c for i, c in enumerate(term) if i not in lone), x)
    term, x = pending.pop(0)
    while pending:
        other, y = pending.pop(0)
        later = "".join(t for t, _ in pending) + output
        batch = [c for c in term if c in other and c in later]
        summed = [c for c in term if c in other and c not in later]
        left = [c for c in term if c not in other]
        right = [c for c in other if c not in term]
        size = dict(zip(term, x.shape)) | dict(zip(other, y.shape))

        def product(letters):
            result = 1
            for c in letters:
                result *= size[c]
            return result
        a = xp.reshape(xp.permute_dims(x, tuple(term.index(c) for c in batch + left + summed)),
                       tuple(size[c] for c in batch) + (product(left), product(summed)))
        b = xp.reshape(xp.permute_dims(y, tuple(other.index(c) for c in batch + summed + right)),
                       tuple(size[c] for c in batch) + (product(summed), product(right)))
        x = xp.reshape(a @ b, tuple(size[c] for c in batch + left + right))
        term = "".join(batch + left + right)
    return xp.permute_dims(x, tuple(term.index(c) for c in output))


def tapec_xp_scatter_add(xp, updates, indices, size, axis, device):
    """Zeros of `size` along `axis` to which `updates` are added at `indices` (repeats
    add up), without writing in place: a one-hot matrix of the indices times the
    updates, so memory and time grow as indices x size."""
    pre, post = updates.shape[:axis], updates.shape[axis + indices.ndim:]
    count = 1
    for n in indices.shape:
        count *= n
    outer = 1
    for n in pre:
        outer *= n
    inner = 1
    for n in post:
        inner *= n
    one_hot = xp.astype(xp.reshape(indices, (count, 1)) ==
                        xp.arange(size, dtype=indices.dtype, device=device), updates.dtype)
    flat = xp.permute_dims(xp.reshape(updates, (outer, count, inner)), (0, 2, 1))
    summed = xp.permute_dims(flat @ one_hot, (0, 2, 1))
    return xp.reshape(summed, tuple(pre) + (size,) + tuple(post))



def tapec_xp_cumprod(xp, x):
    """Cumulative products along the last axis (the 2023.12 standard has
    `cumulative_sum` only): one product per position, left to right, as NumPy."""
    n = x.shape[-1]
    if n == 0:
        return x
    products = [x[..., 0:1]]
    for k in range(1, n):
        products.append(products[-1] * x[..., k:k + 1])
    return xp.concat(products, axis=-1)


def tapec_xp_pad(xp, x, pads, device):
    """`x` with `pads[k] = (before, after)` zeros around it along each axis k."""
    for axis, (before, after) in enumerate(pads):
        parts = []
        for size in (before, None, after):
            if size is None:
                parts.append(x)
            elif size:
                shape = x.shape[:axis] + (size,) + x.shape[axis + 1:]
                parts.append(xp.zeros(shape, dtype=x.dtype, device=device))
        if len(parts) > 1:
            x = xp.concat(parts, axis=axis)
    return x


def tapec_xp_erf(xp, x):
    """erf (the standard has none) from its series of positive terms,
    erf(t) = 2/sqrt(pi) exp(-t^2) sum over n of t (2 t^2)^n / (1 3 5 ... (2n + 1)),
    which cancels nowhere. |x| is clipped at 6, where erf rounds to 1 and 160 terms
    reach the series' last bit; a nan stays nan."""
    t = xp.clip(x, min=-6.0, max=6.0)
    ratio = 2.0 * (t * t)
    term = t
    total = t
    for n in range(1, 160):
        term = term * ratio / (2 * n + 1)
        total = total + term
    return total * 1.1283791670955126 * xp.exp(-(t * t))


# The helpers' names: generated code reads them as globals, so no value or parameter of
# it may take one (names.GENERATED_GLOBALS).
NAMES = frozenset(name for name in dir() if name.startswith("tapec_xp_"))
