"""Imperative dispatch cost (issue: ``a + b`` on two (1, 512) float32 NDArrays within 3x of the
same NumPy expression). Compare the two rows of the ``dispatch-add`` group side by side."""

from __future__ import annotations

import numpy as np
import pytest

import hybridgpu as mx


@pytest.fixture(scope="module")
def operands():
    rng = np.random.RandomState(0)
    a = rng.rand(1, 512).astype(np.float32)
    b = rng.rand(1, 512).astype(np.float32)
    return a, b


@pytest.mark.benchmark(group="dispatch-add")
def test_numpy_add(benchmark, operands):
    a, b = operands
    benchmark(lambda: a + b)


@pytest.mark.benchmark(group="dispatch-add")
def test_nd_add(benchmark, operands):
    a, b = (mx.nd.array(x) for x in operands)
    benchmark(lambda: a + b)


@pytest.mark.benchmark(group="dispatch-scalar")
def test_numpy_add_scalar(benchmark, operands):
    a, _ = operands
    benchmark(lambda: a + 1.0)


@pytest.mark.benchmark(group="dispatch-scalar")
def test_nd_add_scalar(benchmark, operands):
    a = mx.nd.array(operands[0])
    benchmark(lambda: a + 1.0)


@pytest.mark.benchmark(group="dispatch-relu")
def test_numpy_relu(benchmark, operands):
    a, _ = operands
    benchmark(lambda: np.maximum(a, 0))


@pytest.mark.benchmark(group="dispatch-relu")
def test_nd_relu(benchmark, operands):
    a = mx.nd.array(operands[0])
    benchmark(lambda: mx.nd.relu(a))
