"""An MLP trained with ``Trainer(..., kvstore=KIND)``: run under ``mpiexec -n K`` with
kvstore ``dist_sync`` (each rank takes its slice of the batch) or alone with ``device`` (the
whole batch). Each rank initializes with its own seed, so only the kvstore's broadcast makes
the workers agree. Writes ``<out>/rank<r>.params``.

    mpiexec -n 2 python train_mlp.py dist_sync OUT [--hang-rank R] [--train-step]

``--train-step`` runs each step through ``gluon.TrainStep`` (one compiled program, then
``trainer.step``, which all-reduces over the workers).
"""

import argparse
import os
import sys
import time
import traceback

import numpy as np

import hybridgpu as mx
from hybridgpu import autograd, gluon, nd

BATCH, STEPS = 16, 5


def data():
    rng = np.random.RandomState(0)
    return rng.randn(BATCH, 5).astype(np.float32), rng.randint(0, 3, BATCH).astype(np.float32)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kvstore")
    parser.add_argument("out")
    parser.add_argument("--hang-rank", type=int, default=-1)
    parser.add_argument("--train-step", action="store_true")
    args = parser.parse_args()
    trainer_kv = mx.kv.create(args.kvstore) if args.kvstore.startswith("dist") else "device"
    rank = trainer_kv.rank if not isinstance(trainer_kv, str) else 0
    workers = trainer_kv.num_workers if not isinstance(trainer_kv, str) else 1
    mx.random.seed(rank + 1)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(8, activation="relu"), gluon.nn.Dense(3))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x, y = data()
    part = slice(rank * BATCH // workers, (rank + 1) * BATCH // workers)
    x, y = nd.array(x[part]), nd.array(y[part])
    net(x)  # complete the deferred shapes before the Trainer broadcasts
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": 0.1, "momentum": 0.9}, kvstore=trainer_kv)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    train_step = gluon.TrainStep(net, loss_fn, trainer, batch_size=BATCH)
    for step in range(STEPS):
        if rank == args.hang_rank and step == 2:
            time.sleep(120)  # a worker that stops answering
        if args.train_step:
            train_step(x, y)
            assert train_step.mode == "compiled", train_step.reason
            continue
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(BATCH)  # the global batch: gradients are summed over workers
    net.save_parameters(os.path.join(args.out, f"rank{rank}.params"))
    return 0


def _record(out):
    """Write this process's traceback to ``<out>/error.<pid>.txt`` too: mpiexec may stop
    forwarding a rank's stderr once another rank failed, and the test reads both."""
    with open(os.path.join(out, f"error.{os.getpid()}.txt"), "w") as f:
        f.write(traceback.format_exc())


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:
        _record(sys.argv[2])
        raise
