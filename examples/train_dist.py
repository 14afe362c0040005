"""Train the spirals MLP of ``train_mlp.py`` on several processes with ``kvstore='dist_sync'``.

Each worker reads its own shard of the training set (every K-th sample) and computes gradients
on its part of every batch; the Trainer's kvstore sums them over all workers (MPI all-reduce)
and every worker applies the same update, so the weights stay identical everywhere. As in
MXNet, ``trainer.step`` takes the global batch size (per-worker batch x workers) to train like
one process on the whole batch. Launch with MPI (``pip install 'hybridgpu[mpi]'``)::

    mpiexec -n 2 python examples/train_dist.py [--epochs 20] [--hybridize]

On several machines, give mpiexec a host file (``mpiexec -n 8 -f hosts python ...`` with
mpich, ``--hostfile`` with Open MPI, which also wants ``--allow-run-as-root`` as root).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import hybridgpu as mx
from hybridgpu import autograd, gluon

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from train_mlp import TARGET_ACCURACY, build_net, evaluate, make_spirals  # noqa: E402


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=50, help="per worker")
    parser.add_argument("--lr", type=float, default=0.01, help="Adam's learning rate")
    parser.add_argument("--hybridize", action="store_true")
    parser.add_argument("--seed", type=int, default=42)
    return parser.parse_args(argv)


def main(argv=None):
    """Train; rank 0 prints one line per epoch; returns the final test accuracy."""
    args = parse_args(argv)
    kv = mx.kv.create("dist_sync")
    rank, workers = kv.rank, kv.num_workers
    mx.random.seed(args.seed + rank)  # different inits: the Trainer gives all rank 0's
    np.random.seed(args.seed + rank)
    x, y = make_spirals(1000, seed=args.seed)
    shard = gluon.data.ArrayDataset(x[rank::workers], y[rank::workers])
    loader = gluon.data.DataLoader(shard, batch_size=args.batch_size, shuffle=True,
                                   last_batch="discard")
    test = gluon.data.DataLoader(gluon.data.ArrayDataset(*make_spirals(500, seed=args.seed + 1)),
                                 batch_size=500)
    net = build_net()
    net.initialize(mx.init.Xavier())
    if args.hybridize:
        net.hybridize()
    net(mx.nd.array(x[:1]))  # complete deferred shapes so the Trainer can broadcast them
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": args.lr},
                            kvstore=kv)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    accuracy = 0.0
    for epoch in range(args.epochs):
        for data, label in loader:
            with autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(data.shape[0] * workers)
        accuracy = evaluate(net, test, mx.cpu())
        if rank == 0:
            print(f"[Epoch {epoch}] test-acc={accuracy:.3f} ({workers} workers)", flush=True)
    return accuracy


if __name__ == "__main__":
    final = main(sys.argv[1:])
    sys.exit(0 if final >= TARGET_ACCURACY else 1)
