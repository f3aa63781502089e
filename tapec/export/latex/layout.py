"""Layout: matrix expressions to lines of LaTeX, with named definitions.

Subexpressions used more than once, and pieces of lines wider than `LINE_LIMIT`
letters as rendered (`width.rendered_width`, not the LaTeX source's length), become
definitions `t_{1}, t_{2}, ...`, numbered in the order they are
printed. Printing is a `_print_<Class>` visitor over the `matrix` IR; a precedence table
keeps parentheses minimal: a child printed inside a parent needs at least the precedence
the parent asks for, else it is wrapped in \\left( \\right).
"""
from __future__ import annotations

import re

from ...ops.sympy_rules import sympy as _sympy
from .dispatch import Visitor
from .matrix import Call, Expr, Frac, Num, Prod, Sym, is_scalar, trivial
from .names import temporary_names
from .width import rendered_width

LINE_LIMIT = 40            # wider lines (rendered, in letters) are broken into definitions
MIN_DEFINITION = 6         # a shared subexpression narrower than this stays inline
MAX_DEFINITIONS = 60       # bounds the line-breaking loop on huge graphs

SUM, HAD, PROD, POST, ATOM = 10, 30, 40, 90, 100


def _chain(e):
    """Whether `e` is a matrix product of three or more arrays, such as the upstream
    gradient `\\mathbf{1} \\mathbf{1}^{T} V^{T}` of a sum: used twice, a reader names
    it (G) however narrow it prints."""
    return isinstance(e, Prod) and e.layout[0] == "m" and \
        sum(1 for f in e.factors if not is_scalar(f)) >= 3


class Layout(Visitor):
    """Expressions to (definitions [(name, LaTeX)], [LaTeX per root])."""

    def __init__(self, names):
        self.names = names
        self.defined = {}          # id(expr) -> (expr, name)
        self._cache = {}

    def lines(self, roots):
        """Define, name and print: the definitions in printing order, then the roots."""
        self._define_shared(roots)
        self._break_long_lines(roots)
        order = self._definition_order(roots)
        temporaries = temporary_names(self.names)
        for e in order:
            self.defined[id(e)] = (e, next(temporaries))
        self._cache.clear()
        self._warm(list(roots) + order)
        definitions = [(self.defined[id(e)][1], self.tex(e, top=True)[0]) for e in order]
        # A root another output uses is defined too, and prints as its name.
        return definitions, [self.tex(r, top=len(roots) == 1)[0] for r in roots]

    # --- which pieces become definitions -----------------------------------------------------
    def _references(self, roots):
        counts, seen = {}, set()
        stack = list(roots)
        while stack:
            e = stack.pop()
            counts[id(e)] = counts.get(id(e), 0) + 1
            if id(e) in seen:
                continue
            seen.add(id(e))
            stack.extend(e.children())
        return counts

    def _post_order(self, roots, stop_at_defined=False):
        order, seen = [], set()
        for root in roots:
            stack = [(root, False)]
            while stack:
                e, expanded = stack.pop()
                if expanded:
                    order.append(e)
                    continue
                if id(e) in seen:
                    continue
                seen.add(id(e))
                stack.append((e, True))
                if not (stop_at_defined and id(e) in self.defined and e is not root):
                    stack.extend((c, False) for c in reversed(e.children()))
        return order

    def _define(self, e):
        self.defined[id(e)] = (e, "t_{99}")       # renamed in printing order at the end
        self._cache.clear()

    def _warm(self, roots):
        """Print every piece bottom-up, so printing a root never recurses deeply."""
        for e in self._post_order(roots):
            self.tex(e)

    def _define_shared(self, roots):
        counts = self._references(roots)
        for e in self._post_order(roots):
            if e.shared and counts.get(id(e), 0) > 1:
                self._warm([e])
                if rendered_width(self.tex(e, top=True)[0]) >= MIN_DEFINITION or \
                        _chain(e):
                    self._define(e)

    def _break_long_lines(self, roots):
        for _ in range(MAX_DEFINITIONS):
            heads = list(roots) + [e for e, _ in self.defined.values()]
            self._warm(heads)
            long = [h for h in heads if rendered_width(self.tex(h, top=True)[0]) > LINE_LIMIT]
            if not long:
                return
            # The largest piece that fits on a line of its own, else the largest piece.
            best = None
            for head in long:
                for e in self._post_order([head], stop_at_defined=True):
                    if e is head or id(e) in self.defined or trivial(e):
                        continue
                    size = rendered_width(self.tex(e, top=True)[0])
                    if size >= MIN_DEFINITION:
                        rank = (size <= LINE_LIMIT, size)
                        if best is None or rank > best[0]:
                            best = (rank, e)
            if best is None:
                return
            self._define(best[1])

    def _definition_order(self, roots):
        order = []
        for e in self._post_order(roots):
            if id(e) in self.defined and not (len(roots) == 1 and e is roots[0]):
                order.append(e)
        for e in order:
            self.defined.pop(id(e))
        return order

    # --- printing ------------------------------------------------------------------------------
    def text(self, e):
        """The LaTeX of `e` on its own, printed bottom-up."""
        self._warm([e])
        return self.tex(e, top=True)[0]

    def wrap(self, e, precedence):
        """LaTeX of `e`, in parentheses unless it binds at least as tightly as `precedence`."""
        text, own = self.tex(e)
        return text if own >= precedence else rf"\left({text}\right)"

    def tex(self, e, top=False):
        """(LaTeX, precedence) of `e`; a defined expression prints as its name unless
        it is the definition being printed (`top`)."""
        if not top and id(e) in self.defined:
            return self.defined[id(e)][1], ATOM
        key = (id(e), top)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self.visit(e)
        return found

    def _print_Sym(self, e):
        return (e.text + "^{T}", POST) if e.transposed else (e.text, ATOM)

    def _print_Num(self, e):
        return _sympy().latex(e.value), (SUM if e.value.is_real and e.value < 0 else ATOM)

    def _print_Ones(self, e):
        return (r"\mathbf{1}^{T}", POST) if e.layout[0] == "r" else (r"\mathbf{1}", ATOM)

    def _print_Eye(self, e):
        return "I", ATOM

    def _print_Sum(self, e):
        parts = []
        for k, (sign, t) in enumerate(e.terms):
            text = self.wrap(t, SUM + 1)
            if k == 0:
                parts.append(text if sign > 0 else "-" + text)
            else:
                parts.append(("+ " if sign > 0 else "- ") + text)
        return " ".join(parts), SUM

    def _print_Neg(self, e):
        return "-" + self.wrap(e.x, HAD), SUM

    def _print_Prod(self, e):
        merged = self._one_fraction(e)
        if merged is not None:
            return merged, ATOM
        parts, after_number = [], False
        for f in sorted(e.factors, key=lambda f: 0 if isinstance(f, Num) else
                        1 if is_scalar(f) else 2):
            text = self.wrap(f, PROD)
            # 2 \cdot 3 and \frac{1}{2} \cdot \frac{x}{y}: juxtaposed they would read as
            # 23 or as a mixed number.
            if parts and (text[:1].isdigit() or text.startswith(r"\frac")) and \
                    (after_number or text[:1].isdigit()):
                parts.append(r"\cdot")
            parts.append(text)
            after_number = isinstance(f, Num) and id(f) not in self.defined
        return " ".join(parts), PROD

    def _one_fraction(self, e):
        """A number and one fraction, times at most one factor, as one fraction:
        \\frac{1}{5} \\cdot \\frac{y}{t} is \\frac{y}{5 t}, \\frac{1}{d} x is \\frac{x}{d}."""
        numbers = [f for f in e.factors if isinstance(f, Num) and id(f) not in self.defined]
        fractions = [f for f in e.factors if isinstance(f, Frac) and id(f) not in self.defined]
        others = [f for f in e.factors if not any(f is g for g in numbers + fractions)]
        if len(numbers) > 1 or len(fractions) != 1 or len(others) > 1:
            return None
        c = numbers[0].value if numbers else _sympy().Integer(1)
        if not c.is_Rational or (others and not is_scalar(fractions[0])) or \
                (not others and c.q == 1):
            return None
        f = fractions[0]
        top = [] if c.p == 1 else [str(c.p)]
        if not (isinstance(f.num, Num) and f.num.value == 1):
            top.append(self.wrap(f.num, PROD) if top or others else self.tex(f.num)[0])
        top += [self.wrap(o, PROD) for o in others]
        bottom = [] if c.q == 1 else [str(c.q)]
        bottom.append(self.wrap(f.den, PROD) if bottom else self.tex(f.den)[0])
        return rf"\frac{{{' '.join(top) or '1'}}}{{{' '.join(bottom)}}}"

    def _print_Had(self, e):
        return r" \circ ".join(self.wrap(f, PROD + 1) for f in e.factors), HAD

    def _print_Frac(self, e):
        """num / den; a number leading a product above or below (one shared, so kept
        whole by `frac`) joins one coefficient: \\frac{3}{y}, not \\frac{1}{\\frac{1}{3} y}."""
        c, top = self._leading_number(e.num)
        d, bottom = self._leading_number(e.den)
        ratio = c / d
        if top is None and bottom is None or not (ratio.is_Rational and ratio > 0):
            return rf"\frac{{{self.tex(e.num)[0]}}}{{{self.tex(e.den)[0]}}}", ATOM
        return rf"\frac{{{self._scaled(ratio.p, e.num, top)}}}" \
            rf"{{{self._scaled(ratio.q, e.den, bottom)}}}", ATOM

    def _leading_number(self, e):
        """(c, the other factors) of a product c x ... printed inline whose first factor is
        the rational number c; (1, None) for anything else."""
        if isinstance(e, Prod) and id(e) not in self.defined and len(e.factors) > 1:
            first = e.factors[0]
            if isinstance(first, Num) and id(first) not in self.defined and \
                    first.value.is_Rational:
                return first.value, e.factors[1:]
        return _sympy().Integer(1), None

    def _scaled(self, k, e, factors):
        """k times `e` (or its `factors`, when its number was taken out), as printed in a
        fraction."""
        if factors is None:
            if k == 1:
                return self.tex(e)[0]
            if isinstance(e, Num) and e.value == 1:
                return str(k)
            factors = [e]
        return " ".join(([] if k == 1 else [str(k)]) + [self.wrap(f, PROD) for f in factors])

    def _print_Pow(self, e):
        base = self.wrap(e.base, ATOM)
        if e.kind == "T":
            return base + "^{T}", POST
        if e.kind == "inverse":
            if isinstance(e.base, Sym) and e.base.transposed and id(e.base) not in self.defined:
                return e.base.text + "^{-T}", POST          # (X^T)^{-1} = X^{-T}
            return base + "^{-1}", POST
        exponent = self.tex(e.exponent)[0] if isinstance(e.exponent, Expr) else e.exponent
        circ = r"\circ " if e.kind == "power" else ""
        return f"{base}^{{{circ}{exponent}}}", POST

    def _print_Diag(self, e):
        return rf"\operatorname{{diag}}\left({self.tex(e.v)[0]}\right)", ATOM

    def _print_Call(self, e):
        return getattr(self, "_call_" + e.style)(e)

    def _call_sqrt(self, e):
        return rf"\sqrt{{{self.tex(e.args[0])[0]}}}", ATOM

    def _call_norm(self, e):
        return rf"\left\lVert {self.tex(e.args[0])[0]} \right\rVert", ATOM

    def _call_abs(self, e):
        return rf"\left|{self.tex(e.args[0])[0]}\right|", ATOM

    def _call_relation(self, e):
        """A comparison as a value: the Iverson bracket [a < b]."""
        return rf"\left[{self._relation(e)}\right]", ATOM

    def _relation(self, e):
        return f" {e.head} ".join(self.wrap(a, SUM) for a in e.args)

    def _call_paren(self, e):
        inner = ", ".join(self.tex(a)[0] for a in e.args)
        return rf"{e.head}\left({inner}\right)", ATOM

    def _call_template(self, e):
        """An op's LaTeX template; arguments get parentheses unless the template puts
        them in parentheses or in a cell of `cases` (where a condition is shown bare)."""
        cases = e.head.startswith(r"\begin{{cases}}")
        texts = []
        for k, a in enumerate(e.args):
            field = "{" + str(k) + "}"
            if cases and isinstance(a, Call) and a.style == "relation" and \
                    id(a) not in self.defined:
                texts.append(self._relation(a))
            elif cases or "(" + field in e.head:
                texts.append(self.tex(a)[0])
            elif field + "^" in e.head or field + "[" in e.head:
                texts.append(self.wrap(a, ATOM))        # a base: x^{T}^{-1} is an error
            else:
                texts.append(self.wrap(a, POST))
        if cases:
            return e.head.format(*texts), ATOM
        postfix = re.fullmatch(r"\{0\}(\^\{\{[^{}]*\}\}|\[[^{}]*\])", e.head)
        if e.head.lstrip().startswith(("-", "+")):
            return e.head.format(*texts), SUM     # a leading sign binds as loosely as a sum
        return e.head.format(*texts), (POST if postfix else PROD)
