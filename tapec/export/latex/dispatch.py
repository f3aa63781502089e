"""Visitors: a method per class, found along the class's MRO (as SymPy's printers do).

`Visitor.visit(x)` calls `self._print_<Class>(x)` for the first class in
`type(x).__mro__` that has one; `OpVisitor.visit(node)` calls `self._print_<op name>(node)`
for an IR node, whose class is always `Node`, so ops play the part of classes there.
"""
from __future__ import annotations


class Visitor:
    """Dispatch by class: `_print_Sum` handles sums, `_print_Expr` anything else."""

    prefix = "_print_"

    def visit(self, x, *args):
        for cls in type(x).__mro__:
            method = getattr(self, self.prefix + cls.__name__, None)
            if method is not None:
                return method(x, *args)
        return self.unknown(x, *args)

    def unknown(self, x, *args):
        raise TypeError(f"latex: {type(self).__name__} cannot handle {type(x).__name__}")


class OpVisitor:
    """Dispatch by op: `_print_matmul(node, ...)`, else `default(node, ...)`."""

    prefix = "_print_"

    def visit(self, node, *args):
        method = getattr(self, self.prefix + node.op.name, None)
        if method is not None:
            return method(node, *args)
        return self.default(node, *args)

    def default(self, node, *args):
        raise TypeError(f"latex: {type(self).__name__} cannot print op {node.op.name!r}")
