"""VGG ("Very Deep Convolutional Networks for Large-Scale Image Recognition", Simonyan and
Zisserman 2014), 11 to 19 layers, with or without BatchNorm, with MXNet 1.x's parameter names
(``vgg0_conv0_weight``, ``vgg0_dense0_weight``).

Example:
    >>> import hybridgpu as mx
    >>> net = vgg11(classes=10)
    >>> net.initialize()
    >>> net(mx.nd.ones((1, 3, 32, 32))).shape
    (1, 10)
"""

from __future__ import annotations

from .... import initializer
from ....base import MXNetError
from ... import nn
from ...hybrid_block import HybridBlock
from ._common import check_pretrained

__all__ = ["VGG", "get_vgg", "vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg13_bn",
           "vgg16_bn", "vgg19_bn"]


class VGG(HybridBlock):
    """VGG: ``layers`` 3x3 convolutions per stage, ``filters`` each stage's width, 2x2 max
    pooling after each stage, then two 4096-wide Dense layers with dropout and the classifier.
    ``batch_norm=True`` adds BatchNorm after every convolution."""

    def __init__(self, layers, filters, classes=1000, batch_norm=False, **kwargs):
        super().__init__(**kwargs)
        if len(layers) != len(filters):
            raise MXNetError(f"VGG: layers and filters must have the same length, got "
                             f"layers={list(layers)} and filters={list(filters)}")
        with self.name_scope():
            self.features = self._make_features(layers, filters, batch_norm)
            for _ in range(2):
                self.features.add(nn.Dense(4096, activation="relu", weight_initializer="normal",
                                           bias_initializer="zeros"))
                self.features.add(nn.Dropout(rate=0.5))
            self.output = nn.Dense(classes, weight_initializer="normal",
                                   bias_initializer="zeros")

    @staticmethod
    def _make_features(layers, filters, batch_norm):
        features = nn.HybridSequential(prefix="")
        for num, width in zip(layers, filters):
            for _ in range(num):
                features.add(nn.Conv2D(width, kernel_size=3, padding=1,
                                       weight_initializer=initializer.Xavier(
                                           rnd_type="gaussian", factor_type="out", magnitude=2),
                                       bias_initializer="zeros"))
                if batch_norm:
                    features.add(nn.BatchNorm())
                features.add(nn.Activation("relu"))
            features.add(nn.MaxPool2D(strides=2))
        return features

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


#: depth -> (convolutions per stage, widths)
vgg_spec = {11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
            13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
            16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
            19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512])}


def get_vgg(num_layers, pretrained=False, ctx=None, root=None, **kwargs):
    """VGG with ``num_layers`` (11, 13, 16 or 19); keywords (``classes``, ``batch_norm``,
    ``prefix``) go to ``VGG``. ``pretrained=True`` raises: load a local file with
    ``net.load_parameters(path)``."""
    if num_layers not in vgg_spec:
        raise MXNetError(f"Invalid number of layers: {num_layers}. Options are "
                         f"{sorted(vgg_spec)}")
    batch_norm = "_bn" if kwargs.get("batch_norm") else ""
    check_pretrained(f"vgg{num_layers}{batch_norm}", pretrained, root)
    layers, filters = vgg_spec[num_layers]
    return VGG(layers, filters, **kwargs)


def vgg11(**kwargs):
    """VGG-11."""
    return get_vgg(11, **kwargs)


def vgg13(**kwargs):
    """VGG-13."""
    return get_vgg(13, **kwargs)


def vgg16(**kwargs):
    """VGG-16."""
    return get_vgg(16, **kwargs)


def vgg19(**kwargs):
    """VGG-19."""
    return get_vgg(19, **kwargs)


def vgg11_bn(**kwargs):
    """VGG-11 with BatchNorm."""
    return get_vgg(11, batch_norm=True, **kwargs)


def vgg13_bn(**kwargs):
    """VGG-13 with BatchNorm."""
    return get_vgg(13, batch_norm=True, **kwargs)


def vgg16_bn(**kwargs):
    """VGG-16 with BatchNorm."""
    return get_vgg(16, batch_norm=True, **kwargs)


def vgg19_bn(**kwargs):
    """VGG-19 with BatchNorm."""
    return get_vgg(19, batch_norm=True, **kwargs)
