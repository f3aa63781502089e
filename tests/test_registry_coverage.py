"""Every op in the registry is tested: gradients by finite differences, batching rules.

Each family's test module lists the ops its finite-difference tests check in
COVERED_OPS; this test fails when an op is declared without such a test.
"""
import importlib
import zlib

import numpy as np
import pytest

from helpers.fd import check_gradients
from tapec.ops import REGISTRY
from tapec.ops.registry import apply

FAMILY_MODULES = ["test_op_gradients", "test_elementwise_ops", "test_reductions",
                  "test_shape_ops", "test_linalg", "test_nn_ops", "test_simplify",
                  "test_numpy_structure", "test_decompositions"]
FAMILY_MODULES += ["test_elementwise_math", "test_nn_conv_pool"]

# Ops with a VJP whose correctness is established elsewhere: variable reads, the plumbing
# the reverse pass inserts itself (checked through every broadcasting and indexing case),
# stop_gradient (no gradient by definition) and custom_gradient (the user's own rule).
NOT_FINITE_DIFFERENCED = {"read_variable", "custom_gradient", "sum_to", "scatter",
                          "stop_gradient"}


def _covered():
    names = set()
    for module in FAMILY_MODULES:
        names |= set(getattr(importlib.import_module(module), "COVERED_OPS", ()))
    return names


def test_every_differentiable_op_has_a_finite_difference_test():
    differentiable = {name for name, op in REGISTRY.items()
                      if op.vjp is not None and name not in NOT_FINITE_DIFFERENCED}
    missing = differentiable - _covered()
    assert not missing, f"ops without a finite-difference gradient test: {sorted(missing)}"


def test_every_op_can_be_printed_as_numpy():
    silent = {name for name, op in REGISTRY.items()
              if op.numpy is None and op.numpy_lines is None}
    assert silent <= {"placeholder", "read_variable", "custom_gradient"}, sorted(silent)


# --- every elementwise op, from its declaration -----------------------------------------

ELEMENTWISE = sorted(name for name, op in REGISTRY.items()
                     if op.arity in (1, 2) and op.vjp is not None and op.template)
DEFAULT_DOMAIN = ((-1.5, 1.5),)


def _draw(rng, intervals, shape):
    """Values from a union of intervals: one interval per element, then uniform in it."""
    which = rng.integers(len(intervals), size=shape)
    low = np.array([a for a, _ in intervals])[which]
    high = np.array([b for _, b in intervals])[which]
    return rng.uniform(low, high)


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_every_elementwise_op_differentiates_on_its_declared_domain(name):
    # A new elementwise op is tested by declaring it: values drawn from `Op.domain`
    # (broadcast operands for binary ops), gradients against central differences.
    op = REGISTRY[name]
    domains = op.domain or (DEFAULT_DOMAIN,) * op.arity
    assert len(domains) == op.arity, f"{name}: one domain per input"
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    arrays = [_draw(rng, d, s) for d, s in zip(domains, [(3, 4), (4,)][:op.arity])]
    check_gradients(lambda *tensors: apply(op, *tensors), arrays)
