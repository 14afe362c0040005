"""Imperative vs hybridized per model (pytest-benchmark groups), beside the hand-written
NumPy/CuPy floor: the same workloads as ``python -m hybridgpu bench``. Compare rows of one group
side by side (``nox -s bench`` saves them as JSON with device, date and commit)."""

from __future__ import annotations

import pytest

from hybridgpu import nd
from hybridgpu.bench import WORKLOADS

MODES = ["floor", "imperative", "hybridized"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("workload", list(WORKLOADS))
def test_model(benchmark, bench_ctx, workload, mode):
    net, x, floor = WORKLOADS[workload](bench_ctx)
    if mode == "floor" and floor is None:
        pytest.skip(f"{workload} has no hand-written floor")
    if mode == "hybridized":
        net.hybridize()

    def fn():
        return floor() if mode == "floor" else net(x)

    benchmark.group = workload
    if bench_ctx.is_gpu:
        def run():
            out = fn()
            nd.waitall()
            return out
        benchmark(run)
    else:
        benchmark(fn)
