"""One training step (forward under ``autograd.record()``, softmax cross-entropy, backward,
``Trainer.step`` with SGD momentum), imperative vs hybridized, grouped per model
(pytest-benchmark groups ``train-<workload>``): the seed MLP (Dense 256 relu, Dense 128 relu,
Dense 2) at batch 1 and 64, and resnet18_v1 at batch 1 (224x224 on gpu, 64x64 on cpu).

Compare the two rows of a group side by side; ``nox -s bench`` saves them as JSON with the
device, date and commit. On gpu every step ends with ``nd.waitall()``.
"""

from __future__ import annotations

import numpy as np
import pytest

from hybridgpu import autograd, gluon, nd
from hybridgpu.bench import seed_mlp

MODES = ["imperative", "hybridized"]


def _mlp(batch):
    def make(ctx):
        rng = np.random.RandomState(0)
        net = seed_mlp()
        net.initialize(ctx=ctx)
        x = nd.array(rng.randn(batch, 512).astype(np.float32), ctx=ctx)
        y = nd.array(rng.randint(0, 2, size=batch).astype(np.float32), ctx=ctx)
        return net, x, y

    return make


def _resnet18(ctx):
    from hybridgpu.gluon.model_zoo import vision

    rng = np.random.RandomState(0)
    size = 224 if ctx.is_gpu else 64
    net = vision.resnet18_v1()
    net.initialize(ctx=ctx)
    x = nd.array(rng.rand(1, 3, size, size).astype(np.float32), ctx=ctx)
    y = nd.array([rng.randint(0, 1000)], dtype="float32", ctx=ctx)
    return net, x, y


WORKLOADS = {"mlp-batch1": _mlp(1), "mlp-batch64": _mlp(64), "resnet18_v1-batch1": _resnet18}


def make_step(workload, ctx, hybridize):
    """A function running one full training step of ``workload`` on ``ctx``; already run
    twice (deferred initialization, tracing, optimizer state)."""
    net, x, y = WORKLOADS[workload](ctx)
    if hybridize:
        net.hybridize()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": 0.001, "momentum": 0.9})
    batch = x.shape[0]

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(batch)
        if ctx.is_gpu:
            nd.waitall()
        return loss

    step()
    step()
    return step


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("workload", list(WORKLOADS))
def test_training_step(benchmark, bench_ctx, workload, mode):
    step = make_step(workload, bench_ctx, hybridize=mode == "hybridized")
    benchmark.group = f"train-{workload}"
    loss = benchmark(step)
    assert np.isfinite(loss.asnumpy()).all()
