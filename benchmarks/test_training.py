"""One training step (forward, softmax cross-entropy, backward, SGD momentum update), three
ways, grouped per model (pytest-benchmark groups ``train-<workload>``): the seed MLP (Dense 256
relu, Dense 128 relu, Dense 2) at batch 1 and 64, and resnet18_v1 at batch 1 (224x224 on gpu,
64x64 on cpu). The modes:

* ``imperative``: ``autograd.record()``, ``backward()``, ``Trainer.step``, net not hybridized;
* ``hybridized``: the same loop on the hybridized net;
* ``captured``: ``gluon.TrainStep`` on the hybridized net: on gpu one CUDA graph replayed a
  step (its mode must be ``captured``), on cpu the compiled program plus ``Trainer.step``
  (mode ``compiled``).

Compare the three rows of a group side by side; ``nox -s bench`` saves them as JSON with the
device, date and commit. On gpu every step ends with ``nd.waitall()``.
"""

from __future__ import annotations

import numpy as np
import pytest

from hybridgpu import gluon, nd
from hybridgpu.bench import loop_step, seed_mlp

MODES = ["imperative", "hybridized", "captured"]


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


def _one_step(mode, net, x, y):
    """One training step of ``mode`` as a function of nothing, and the TrainStep (or None)."""
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": 0.001, "momentum": 0.9})
    if mode != "imperative":
        net.hybridize()
    if mode == "captured":
        train_step = gluon.TrainStep(net, loss_fn, trainer)
        return lambda: train_step(x, y), train_step
    loop = loop_step(net, loss_fn, trainer)
    return lambda: loop(x, y), None


def make_step(workload, ctx, mode):
    """A function running one full training step of ``workload`` on ``ctx`` the ``mode`` way,
    and the ``gluon.TrainStep`` behind it (None for the Gluon loop); already run twice
    (deferred initialization, tracing or capture, optimizer state)."""
    if mode not in MODES:
        raise ValueError(f"make_step: mode {mode!r} is not one of {MODES}")
    net, x, y = WORKLOADS[workload](ctx)
    one_step, train_step = _one_step(mode, net, x, y)

    def step():
        loss = one_step()
        if ctx.is_gpu:
            nd.waitall()
        return loss

    step()
    step()
    return step, train_step


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("workload", list(WORKLOADS))
def test_training_step(benchmark, bench_ctx, workload, mode):
    step, train_step = make_step(workload, bench_ctx, mode)
    benchmark.group = f"train-{workload}"
    loss = benchmark(step)
    assert np.isfinite(loss.asnumpy()).all()
    if train_step is not None:  # still the program it was meant to time
        expected = "captured" if bench_ctx.is_gpu else "compiled"
        assert train_step.mode == expected, train_step.reason
