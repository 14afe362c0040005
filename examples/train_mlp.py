"""Train a multilayer perceptron on two interleaved spirals, MXNet-1.x-Gluon style.

The data set is synthetic and made here (no download): points on two spiral arms that wind
one and a half turns around each other, with Gaussian noise; the label is the arm. A straight
line cannot separate them, a small MLP can. The script is written exactly as for MXNet 1.x,
with ``import hybridgpu as mx`` in place of ``import mxnet as mx``: ``DataLoader``,
``SoftmaxCrossEntropyLoss``, ``Trainer('adam')``, ``autograd.record()``, ``loss.backward()``,
``trainer.step(batch_size)`` and ``mx.metric.Accuracy``.

It reaches at least ``TARGET_ACCURACY`` (95%) test accuracy in the default 20 epochs, in a
few seconds on two CPU cores, imperatively or with ``--hybridize``. ``--train-step`` (which
implies ``--hybridize``) runs each step through ``gluon.TrainStep`` instead of the loop: one
compiled program for forward, loss and backward, and on a gpu one CUDA graph with the
optimizer update::

    PYTHONPATH=src python3 examples/train_mlp.py [--hybridize] [--train-step] [--epochs 20]
                                                 [--ctx cpu|gpu] [--dtype float16]

``--dtype float16`` trains the MXNet 1.x mixed-precision way: ``net.cast('float16')`` and the
optimizer's ``multi_precision=True`` (float32 master weights); with ``--train-step`` on a gpu
the whole step, update included, is one CUDA graph.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import hybridgpu as mx
from hybridgpu import autograd, gluon
from hybridgpu.gluon import nn

#: The test accuracy this script reaches with its defaults.
TARGET_ACCURACY = 0.95


def make_spirals(num, noise=0.05, seed=0):
    """``num`` points of two interleaved spirals: ``(x float32 (num, 2), y float32 (num,))``."""
    rng = np.random.RandomState(seed)
    label = rng.randint(0, 2, size=num)
    turn = np.sqrt(rng.uniform(0.0, 1.0, size=num))  # more points far out, where arms are long
    angle = turn * 3 * np.pi + np.pi * label
    x = np.stack([turn * np.cos(angle), turn * np.sin(angle)], axis=1)
    x += rng.normal(0.0, noise, size=x.shape)
    return x.astype(np.float32), label.astype(np.float32)


def build_net():
    """Two hidden layers of 64 ReLUs and 2 outputs (the class scores)."""
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(64, activation="relu"),
                nn.Dense(64, activation="relu"),
                nn.Dense(2))
    return net


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=50)
    parser.add_argument("--lr", type=float, default=0.01, help="Adam's learning rate")
    parser.add_argument("--num-train", type=int, default=1000)
    parser.add_argument("--num-test", type=int, default=500)
    parser.add_argument("--hybridize", action="store_true", help="compile the network")
    parser.add_argument("--train-step", action="store_true",
                        help="whole steps through gluon.TrainStep (implies --hybridize)")
    parser.add_argument("--dtype", choices=["float32", "float16"], default="float32",
                        help="float16: net.cast('float16') with the optimizer's "
                             "multi_precision (float32 master weights)")
    parser.add_argument("--ctx", choices=["cpu", "gpu"], default="cpu")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--quiet", action="store_true", help="no line per epoch")
    return parser.parse_args(argv)


def evaluate(net, loader, ctx):
    """Accuracy of ``net`` over ``loader`` (predict mode: no recording)."""
    metric = mx.metric.Accuracy()
    dtype = net[0].weight.dtype
    for data, label in loader:
        metric.update(label.as_in_context(ctx), net(data.as_in_context(ctx).astype(dtype)))
    return metric.get()[1]


def train_epoch(net, loader, loss_fn, trainer, ctx, step=None):
    """One pass over ``loader``: ``(mean loss per sample, training accuracy)``; through
    ``step`` (a ``gluon.TrainStep`` returning the outputs too) when given."""
    metric = mx.metric.Accuracy()
    total, count = 0.0, 0
    dtype = net[0].weight.dtype
    for data, label in loader:
        data, label = data.as_in_context(ctx).astype(dtype), label.as_in_context(ctx)
        if step is not None:
            loss, output = step(data, label)
        else:
            with autograd.record():
                output = net(data)
                loss = loss_fn(output, label)
            loss.backward()
            trainer.step(data.shape[0])
        metric.update(label, output)
        total += loss.sum().asscalar()
        count += data.shape[0]
    return total / count, metric.get()[1]


def main(argv=None, history=None):
    """Train, print one line per epoch, and return the final test accuracy. ``history``, a
    list, receives each epoch's mean training loss."""
    args = parse_args(argv)
    mx.random.seed(args.seed)
    np.random.seed(args.seed)  # DataLoader(shuffle=True) draws from NumPy's generator
    ctx = mx.gpu(0) if args.ctx == "gpu" else mx.cpu(0)

    train_set = gluon.data.ArrayDataset(*make_spirals(args.num_train, seed=args.seed))
    test_set = gluon.data.ArrayDataset(*make_spirals(args.num_test, seed=args.seed + 1))
    train_loader = gluon.data.DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    test_loader = gluon.data.DataLoader(test_set, batch_size=args.num_test)

    net = build_net()
    net.initialize(mx.init.Xavier(), ctx=ctx)
    if args.dtype == "float16":
        net(mx.nd.zeros((1, 2), ctx=ctx))  # finish the deferred shapes, then cast
        net.cast("float16")
    if args.hybridize or args.train_step:
        net.hybridize()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "adam",
                            {"learning_rate": args.lr,
                             "multi_precision": args.dtype == "float16"})
    step = gluon.TrainStep(net, loss_fn, trainer, return_outputs=True) if args.train_step \
        else None

    accuracy = 0.0
    for epoch in range(args.epochs):
        start = time.time()
        loss, train_acc = train_epoch(net, train_loader, loss_fn, trainer, ctx, step)
        accuracy = evaluate(net, test_loader, ctx)
        if history is not None:
            history.append(loss)
        if not args.quiet:
            print(f"[Epoch {epoch}] loss={loss:.4f} train-acc={train_acc:.3f} "
                  f"test-acc={accuracy:.3f} time={time.time() - start:.2f}s")
    return accuracy


if __name__ == "__main__":
    final = main(sys.argv[1:])
    print(f"final test accuracy {final:.3f} (target {TARGET_ACCURACY})")
    sys.exit(0 if final >= TARGET_ACCURACY else 1)
