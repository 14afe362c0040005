"""Imperative vs hybridized per workload (pytest-benchmark groups), beside the same math
written by hand: the workloads and batches of ``python -m hybridgpu bench``. Compare rows of
one group side by side (``nox -s bench`` saves them as JSON with device, date and commit)."""

from __future__ import annotations

import pytest

from hybridgpu import nd
from hybridgpu.bench import MODELS, workloads_for

MODES = ["by_hand", "imperative", "hybridized"]
ROWS = [MODELS[model][2].format(batch=batch) for model, batch in workloads_for()]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("model", "batch"), workloads_for(), ids=ROWS)
def test_model(benchmark, bench_ctx, model, batch, mode):
    work = MODELS[model][0](bench_ctx, batch or 1)
    if mode == "by_hand" and work.by_hand is None:
        pytest.skip(f"{model} has no hand-written version")
    fn = {"by_hand": lambda: work.by_hand, "imperative": lambda: work.imperative,
          "hybridized": work.hybridized}[mode]()
    fn()  # warm up: trace, compile, capture

    def run():
        out = fn()
        if bench_ctx.is_gpu:
            nd.waitall()
        return out

    benchmark.group = MODELS[model][2].format(batch=batch)
    benchmark(run)
