"""Left-hand sides: what a printed derivative is.

A gradient of a one-element target is `\\frac{\\partial f}{\\partial x}`; a jacobian is
the same fraction with its shape noted after the right-hand side
(`\\in \\mathbb{R}^{3 \\times 3}`: target axes, then source axes); a Hessian (the jacobian
of a gradient by the same source) is `\\frac{\\partial^{2} f}{\\partial x \\, \\partial
x^{T}}`. In index notation the sides carry the indices:
`\\frac{\\partial f_{ij}}{\\partial X_{kl}}`.
"""
from __future__ import annotations

from .index import OUTPUT_LETTERS, indexed_name


def wide(shape):
    """The sizes of the axes larger than 1."""
    return [s for s in shape if s != 1]


def index_letters(shape):
    """One index letter per axis larger than 1, None for the others."""
    letters = iter(OUTPUT_LETTERS)
    return [next(letters, "z") if s != 1 else None for s in shape]


class Side:
    """The left-hand side of d f / d x for a target of `target_shape` (() for a gradient)
    and a source of `source_shape`; `hessian`: f is itself a gradient by x."""

    def __init__(self, f, x, target_shape, source_shape, hessian=False):
        self.f, self.x, self.hessian = f, x, hessian
        self.target_shape, self.source_shape = tuple(target_shape), tuple(source_shape)

    def stated(self) -> bool:
        """Whether the left-hand side is printed even for a lone formula: for jacobians
        and Hessians, whose shape the reader cannot guess."""
        return self.hessian or bool(wide(self.target_shape))

    def matrix(self) -> str:
        if not self.hessian:
            return rf"\frac{{\partial {self.f}}}{{\partial {self.x}}}"
        if not wide(self.source_shape):
            return rf"\frac{{\partial^{{2}} {self.f}}}{{\partial {self.x}^{{2}}}}"
        return rf"\frac{{\partial^{{2}} {self.f}}}{{\partial {self.x} \, \partial " \
               rf"{indexed_name(self.x, '')}^{{T}}}}"

    def shape_note(self) -> str:
        dims = wide(self.target_shape) + wide(self.source_shape)
        if not self.stated() or not dims:
            return ""
        return r" \in \mathbb{R}^{" + r" \times ".join(map(str, dims)) + "}"

    def indexed(self):
        """(left-hand side, index letters per axis of the derivative) in index notation."""
        letters = index_letters(self.target_shape + self.source_shape)
        split = len(self.target_shape)
        f_letters = "".join(c for c in letters[:split] if c)
        x_letters = "".join(c for c in letters[split:] if c)
        if self.hessian:             # the target is the gradient: its axes are the source's
            left = rf"\frac{{\partial^{{2}} {self.f}}}{{\partial " \
                   rf"{indexed_name(self.x, f_letters)} \, \partial " \
                   rf"{indexed_name(self.x, x_letters)}}}"
        else:
            left = rf"\frac{{\partial {indexed_name(self.f, f_letters)}}}{{\partial " \
                   rf"{indexed_name(self.x, x_letters)}}}"
        return left, letters
