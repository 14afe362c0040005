"""Train a small convolutional network to tell four kinds of strokes apart, MXNet-1.x-Gluon
style.

The images are synthetic and drawn here (no download): 1x16x16 pictures of one stroke, either
horizontal, vertical, diagonal (``\\``) or anti-diagonal (``/``), of random position, length
and brightness, on a noisy background. The network is two convolutions (the second followed by
``BatchNorm``), max-pooling and one ``Dense`` layer. The script is written exactly as for
MXNet 1.x, with ``import hybridgpu as mx`` in place of ``import mxnet as mx``; ``--devices N``
trains data-parallel on N contexts (``cpu(0)``, ``cpu(1)``, ... or ``gpu(0)``, ``gpu(1)``, ...)
with ``gluon.utils.split_and_load``, one Trainer summing the gradients.

It reaches at least ``TARGET_ACCURACY`` (90%) test accuracy in the default 4 epochs, in a few
seconds on two CPU cores, imperatively or with ``--hybridize``::

    PYTHONPATH=src python3 examples/train_cnn.py [--hybridize] [--epochs 4] [--ctx cpu|gpu]
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
TARGET_ACCURACY = 0.90
#: The four classes, in label order.
CLASSES = ("horizontal", "vertical", "diagonal", "anti-diagonal")
SIZE = 16


def _stroke(kind, rng):
    """A 16x16 float image holding one stroke of class ``kind`` (an index into CLASSES)."""
    image = np.zeros((SIZE, SIZE), dtype=np.float32)
    length = rng.randint(6, SIZE - 2)
    start, offset = rng.randint(0, SIZE - length + 1), rng.randint(1, SIZE - 1)
    steps = np.arange(start, start + length)
    if kind == 0:
        image[offset, steps] = 1.0
    elif kind == 1:
        image[steps, offset] = 1.0
    else:
        shift = rng.randint(-(SIZE - length) // 2, (SIZE - length) // 2 + 1)
        cols = np.clip(steps + shift, 0, SIZE - 1)
        image[steps, cols if kind == 2 else SIZE - 1 - cols] = 1.0
    return image * rng.uniform(0.6, 1.0)


def make_strokes(num, noise=0.25, seed=0):
    """``num`` images ``(float32 (num, 1, 16, 16), labels float32 (num,))``."""
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, len(CLASSES), size=num)
    images = np.stack([_stroke(k, rng) for k in labels])[:, None]
    images += rng.normal(0.0, noise, size=images.shape).astype(np.float32)
    return images.astype(np.float32), labels.astype(np.float32)


def build_net():
    """conv 3x3 (8) relu, pool, conv 3x3 (16), BatchNorm, relu, pool, Dense 4."""
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(8, 3, padding=1, activation="relu"),
                nn.MaxPool2D(2),
                nn.Conv2D(16, 3, padding=1),
                nn.BatchNorm(),
                nn.Activation("relu"),
                nn.MaxPool2D(2),
                nn.Flatten(),
                nn.Dense(len(CLASSES)))
    return net


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.1, help="SGD's learning rate")
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--num-train", type=int, default=640)
    parser.add_argument("--num-test", type=int, default=400)
    parser.add_argument("--hybridize", action="store_true", help="compile the network")
    parser.add_argument("--ctx", choices=["cpu", "gpu"], default="cpu")
    parser.add_argument("--devices", type=int, default=1, help="data-parallel contexts")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--quiet", action="store_true", help="no line per epoch")
    return parser.parse_args(argv)


def evaluate(net, loader, ctx_list):
    """Accuracy of ``net`` over ``loader`` (predict mode: BatchNorm uses moving statistics)."""
    metric = mx.metric.Accuracy()
    for data, label in loader:
        datas = gluon.utils.split_and_load(data, ctx_list)
        labels = gluon.utils.split_and_load(label, ctx_list)
        metric.update(labels, [net(x) for x in datas])
    return metric.get()[1]


def train_epoch(net, loader, loss_fn, trainer, ctx_list):
    """One pass over ``loader``: ``(mean loss per sample, training accuracy)``."""
    metric = mx.metric.Accuracy()
    total, count = 0.0, 0
    for data, label in loader:
        datas = gluon.utils.split_and_load(data, ctx_list)
        labels = gluon.utils.split_and_load(label, ctx_list)
        with autograd.record():
            outputs = [net(x) for x in datas]
            losses = [loss_fn(out, y) for out, y in zip(outputs, labels)]
        autograd.backward(losses)
        trainer.step(data.shape[0])
        metric.update(labels, outputs)
        total += sum(loss.sum().asscalar() for loss in losses)
        count += data.shape[0]
    return total / count, metric.get()[1]


def main(argv=None, history=None):
    """Train, print one line per epoch, and return the final test accuracy. ``history``, a
    list, receives each epoch's mean training loss."""
    args = parse_args(argv)
    mx.random.seed(args.seed)
    np.random.seed(args.seed)  # DataLoader(shuffle=True) draws from NumPy's generator
    device = mx.gpu if args.ctx == "gpu" else mx.cpu
    ctx_list = [device(i) for i in range(args.devices)]

    train_set = gluon.data.ArrayDataset(*make_strokes(args.num_train, seed=args.seed))
    test_set = gluon.data.ArrayDataset(*make_strokes(args.num_test, seed=args.seed + 1))
    train_loader = gluon.data.DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                                         last_batch="discard")
    test_loader = gluon.data.DataLoader(test_set, batch_size=100)

    net = build_net()
    net.initialize(mx.init.Xavier(magnitude=2.24), ctx=ctx_list)
    if args.hybridize:
        net.hybridize()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": args.lr, "momentum": args.momentum})

    accuracy = 0.0
    for epoch in range(args.epochs):
        start = time.time()
        loss, train_acc = train_epoch(net, train_loader, loss_fn, trainer, ctx_list)
        accuracy = evaluate(net, test_loader, ctx_list)
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
