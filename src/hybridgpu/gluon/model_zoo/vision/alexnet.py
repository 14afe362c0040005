"""AlexNet ("One weird trick for parallelizing convolutional neural networks", Krizhevsky
2014: the single-tower variant), with MXNet 1.x's parameter names (``alexnet0_conv0_weight``).

Example:
    >>> import hybridgpu as mx
    >>> net = alexnet(classes=10)
    >>> net.initialize()
    >>> net(mx.nd.ones((1, 3, 63, 63))).shape  # 63x63 is the smallest input it takes
    (1, 10)
"""

from __future__ import annotations

from ... import nn
from ...hybrid_block import HybridBlock
from ._common import check_pretrained

__all__ = ["AlexNet", "alexnet"]


class AlexNet(HybridBlock):
    """Five convolutions (ReLU) with three 3x3/2 max poolings, two 4096-wide Dense layers
    with dropout, and the classifier."""

    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                self.features.add(
                    nn.Conv2D(64, kernel_size=11, strides=4, padding=2, activation="relu"),
                    nn.MaxPool2D(pool_size=3, strides=2),
                    nn.Conv2D(192, kernel_size=5, padding=2, activation="relu"),
                    nn.MaxPool2D(pool_size=3, strides=2),
                    nn.Conv2D(384, kernel_size=3, padding=1, activation="relu"),
                    nn.Conv2D(256, kernel_size=3, padding=1, activation="relu"),
                    nn.Conv2D(256, kernel_size=3, padding=1, activation="relu"),
                    nn.MaxPool2D(pool_size=3, strides=2),
                    nn.Flatten(),
                    nn.Dense(4096, activation="relu"),
                    nn.Dropout(0.5),
                    nn.Dense(4096, activation="relu"),
                    nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def alexnet(pretrained=False, ctx=None, root=None, **kwargs):
    """AlexNet; keywords (``classes``, ``prefix``) go to ``AlexNet``. ``pretrained=True``
    raises: load a local file with ``net.load_parameters(path)``."""
    check_pretrained("alexnet", pretrained, root)
    return AlexNet(**kwargs)
