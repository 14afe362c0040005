"""The optimizer update of a Trainer step, fused (one multi-tensor kernel launch per optimizer
family and dtype) vs per-parameter (one small launch per elementwise operation of each
parameter's rule), grouped per optimizer and model (pytest-benchmark groups
``update-<optimizer>-<model>``), plus the whole training step of the seed MLP
(``train-step-sgd-mlp-batch64``).

Each row records ``fused_launches_per_step`` in its ``extra_info``: one on gpu in the fused
mode, zero otherwise (on cpu both modes run the per-parameter rule: the cpu path is not fused,
see docs/training.md). On the virtual GPU the times mean nothing; the launch count does.
"""

from __future__ import annotations

import numpy as np
import pytest

from hybridgpu import autograd, gluon, nd
from hybridgpu import optimizer as opt_mod
from hybridgpu.bench import seed_mlp
from hybridgpu.optimizer import fused

MODES = ["per-parameter", "fused"]
OPTIMIZERS = {"sgd": {"learning_rate": 0.001, "momentum": 0.9, "wd": 1e-4},
              "adam": {"learning_rate": 0.001}}


def _resnet18(ctx):
    from hybridgpu.gluon.model_zoo import vision

    net = vision.resnet18_v1()
    net.initialize(ctx=ctx)
    net(nd.zeros((1, 3, 32, 32), ctx=ctx))
    return net


def _mlp(ctx):
    net = seed_mlp()
    net.initialize(ctx=ctx)
    net(nd.zeros((1, 512), ctx=ctx))
    return net


MODELS = {"resnet18_v1": _resnet18, "mlp": _mlp}


def make_update(model, optimizer, ctx, mode):
    """A function applying one optimizer update to every trainable parameter of ``model``
    (the update a ``Trainer.step`` runs after the gradients are summed), as the Trainer's
    updater is called; already run once (states created, kernels compiled)."""
    params = [p for p in MODELS[model](ctx).collect_params().values() if p.grad_req != "null"]
    rng = np.random.RandomState(0)
    weights = [p.data(ctx) for p in params]
    grads = [nd.array(rng.randn(*w.shape) * 1e-3, ctx=ctx, dtype=w.dtype) for w in weights]
    opt = opt_mod.create(optimizer, **OPTIMIZERS[optimizer])
    opt.fused_updates = mode == "fused"
    updater = opt_mod.get_updater(opt)
    indices = list(range(len(weights)))

    def update():
        updater(indices, grads, weights)
        if ctx.is_gpu:
            nd.waitall()

    update()
    return update


def _launches_of(run):
    fused.reset_launch_counts()
    run()
    return sum(fused.launch_counts().values())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("optimizer", list(OPTIMIZERS))
def test_optimizer_update(benchmark, bench_ctx, optimizer, model, mode):
    update = make_update(model, optimizer, bench_ctx, mode)
    launches = _launches_of(update)
    assert launches == (1 if bench_ctx.is_gpu and mode == "fused" else 0)
    benchmark.group = f"update-{optimizer}-{model}"
    benchmark.extra_info["fused_launches_per_step"] = launches
    benchmark(update)


@pytest.mark.parametrize("mode", MODES)
def test_training_step(benchmark, bench_ctx, mode):
    rng = np.random.RandomState(0)
    net = seed_mlp()
    net.initialize(ctx=bench_ctx)
    net.hybridize()
    x = nd.array(rng.randn(64, 512).astype(np.float32), ctx=bench_ctx)
    y = nd.array(rng.randint(0, 2, size=64).astype(np.float32), ctx=bench_ctx)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    opt = opt_mod.create("sgd", **OPTIMIZERS["sgd"])
    opt.fused_updates = mode == "fused"
    trainer = gluon.Trainer(net.collect_params(), opt)

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(64)
        if bench_ctx.is_gpu:
            nd.waitall()
        return loss

    step()
    launches = _launches_of(step)
    assert launches == (1 if bench_ctx.is_gpu and mode == "fused" else 0)
    benchmark.group = "train-step-sgd-mlp-batch64"
    benchmark.extra_info["fused_launches_per_step"] = launches
    loss = benchmark(step)
    assert np.isfinite(loss.asnumpy()).all()
