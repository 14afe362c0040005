"""Every op in the registry, tested from the case tables in ``tests/op_cases``: NumPy reference
(float32 and float64), shape and dtype inference, gradient by finite differences, gpu vs cpu."""

from __future__ import annotations

import pytest

import hybridgpu as mx
from hybridgpu import ops

from op_harness import (
    check_forward,
    check_gpu_matches_cpu,
    check_grad,
    check_infer_shape,
    collect_cases,
    nd_function,
    untested_ops,
)

CASES = collect_cases()
FORWARD = [pytest.param(c, d, id=f"{c.name}-{d}") for c in CASES for d in c.dtypes]
GRADS = [pytest.param(c, id=c.name) for c in CASES if c.grad and c.opdef.differentiable]


@pytest.mark.parametrize(("case", "dtype"), FORWARD)
def test_forward_matches_numpy(case, dtype):
    check_forward(case, dtype)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES])
def test_inferred_shape_equals_computed(case):
    check_infer_shape(case)


@pytest.mark.parametrize("case", GRADS)
def test_gradient_matches_finite_differences(case):
    check_grad(case)


@pytest.mark.gpu
@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES])
def test_gpu_matches_cpu(case, gpu_available):
    check_gpu_matches_cpu(case)


def test_every_op_has_a_case():
    covered = {c.opdef.name for c in CASES} | set(untested_ops())
    missing = sorted(op.name for op in ops.all_ops() if op.name not in covered)
    assert not missing, f"ops without a test case: {missing}"


def test_every_differentiable_op_has_a_gradient_case():
    covered = {c.opdef.name for c in CASES if c.grad} | set(untested_ops())
    missing = sorted(op.name for op in ops.all_ops()
                     if op.differentiable and op.name not in covered)
    assert not missing, f"differentiable ops without a gradient check: {missing}"


@pytest.mark.parametrize("op", ops.all_ops(), ids=lambda op: op.name)
def test_every_op_name_is_in_nd(op):
    for name in (op.name, *op.aliases):
        fn = nd_function(name)
        assert fn.opdef is op, name
        assert fn.__doc__ and op.name in fn.__doc__


def test_nd_functions_exist_for_seed_names():
    for name in ("relu", "sum", "broadcast_add", "elemwise_add"):
        assert callable(getattr(mx.nd, name))
