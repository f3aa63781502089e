"""Every op's batching rule equals applying the op row by row (rules run eagerly too)."""
import numpy as np
import pytest

from batching_check import check_batching_rule
from tapec.ops import REGISTRY

RNG = np.random.default_rng(7)


def _arr(*shape):
    return RNG.uniform(0.5, 1.5, size=shape)


# (op name, argument arrays, attrs, which arguments carry the batch axis)
CASES = [
    ("add", [_arr(2, 3), _arr(3)], {}, (True, False)),
    ("add", [_arr(3), _arr(2, 3)], {}, (True, False)),
    ("multiply", [_arr(4, 1), _arr(1, 5)], {}, (True, True)),
    ("divide", [_arr(), _arr(2, 2)], {}, (True, False)),
    ("pow", [_arr(2), _arr(2)], {}, (False, True)),
    ("tanh", [_arr(2, 3)], {}, (True,)),
    ("sqrt", [_arr(4)], {}, (True,)),
    ("reduce_sum", [_arr(2, 3, 4)], {"axis": (1,), "keepdims": False}, (True,)),
    ("reduce_sum", [_arr(2, 3, 4)], {"axis": (0, 2), "keepdims": True}, (True,)),
    ("reduce_sum", [_arr(2, 3)], {"axis": (0, 1), "keepdims": False}, (True,)),
    ("reshape", [_arr(2, 3)], {"shape": (3, 2)}, (True,)),
    ("transpose", [_arr(2, 3, 4)], {"perm": (2, 0, 1)}, (True,)),
    ("broadcast_to", [_arr(3)], {"shape": (2, 3)}, (True,)),
    ("broadcast_to", [_arr(2, 1)], {"shape": (4, 2, 5)}, (True,)),
    ("sum_to", [_arr(4, 2, 3)], {"shape": (2, 1)}, (True,)),
    ("sum_to", [_arr(2, 3)], {"shape": ()}, (True,)),
    ("matmul", [_arr(2, 3), _arr(3, 4)], {}, (True, False)),
    ("matmul", [_arr(2, 3), _arr(5, 3, 4)], {}, (True, False)),
    ("matmul", [_arr(5, 2, 3), _arr(3, 4)], {}, (False, True)),
    ("matmul", [_arr(2, 3), _arr(3, 4)], {}, (True, True)),
    ("getitem", [_arr(4, 5)], {"index": (("slice", 1, None, -1), ("int", 2))}, (True,)),
    ("getitem", [_arr(4, 5)], {"index": (("ellipsis",), ("newaxis",))}, (True,)),
    ("scatter", [_arr(2)], {"index": (("slice", None, None, 2),), "shape": (4,)}, (True,)),
    ("identity", [_arr(2)], {}, (True,)),
    ("stop_gradient", [_arr(2)], {}, (True,)),
    ("cast", [_arr(2)], {"dtype": "<f4"}, (True,)),
]


@pytest.mark.parametrize("name,args,attrs,flags", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_batching_rule_matches_row_by_row(name, args, attrs, flags):
    check_batching_rule(name, args, attrs, flags)


# Test modules of other op families list their cases in BATCH_CASES.
FAMILY_MODULES = ["test_reductions", "test_linalg", "test_shape_ops", "test_nn_ops",
                  "test_elementwise_ops", "test_custom_gradient", "test_numpy_structure",
                  "test_decompositions", "test_statistics_sorting", "test_nn_conv_pool"]


def _family_cases():
    import importlib
    names = set()
    for module in FAMILY_MODULES:
        try:
            names |= {c[0] for c in importlib.import_module(module).BATCH_CASES}
        except ModuleNotFoundError:
            continue
    return names


def test_every_batchable_op_is_covered():
    batchable = {name for name, op in REGISTRY.items() if op.batch is not None}
    elementwise = {name for name, op in REGISTRY.items() if op.arity is not None}
    covered = {c[0] for c in CASES} | _family_cases()
    missing = batchable - covered - elementwise
    assert not missing, f"batching rules without a test case: {sorted(missing)}"
