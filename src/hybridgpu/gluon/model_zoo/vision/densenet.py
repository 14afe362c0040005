"""DenseNet 121/161/169/201 ("Densely Connected Convolutional Networks", Huang et al. 2016),
with MXNet 1.x's parameter names (``densenet0_stage1_conv0_weight``).

The classifier follows a 7x7 average pooling, so inputs must be at least 221x221, as in MXNet.

Example:
    >>> import hybridgpu as mx
    >>> with mx.name.NameManager():
    ...     net = densenet121(classes=10)
    >>> list(net.collect_params())[5]
    'densenet0_stage1_batchnorm0_gamma'
"""

from __future__ import annotations

from ....base import MXNetError
from ... import nn
from ...hybrid_block import HybridBlock
from ._common import check_pretrained

__all__ = ["DenseNet", "get_densenet", "densenet121", "densenet161", "densenet169",
           "densenet201"]


def _dense_layer(growth_rate, bn_size, dropout):
    """BN-ReLU-1x1 conv (``bn_size * growth_rate``) then BN-ReLU-3x3 conv (``growth_rate``),
    concatenated to its input."""
    new_features = nn.HybridSequential(prefix="")
    new_features.add(nn.BatchNorm(), nn.Activation("relu"),
                     nn.Conv2D(bn_size * growth_rate, kernel_size=1, use_bias=False),
                     nn.BatchNorm(), nn.Activation("relu"),
                     nn.Conv2D(growth_rate, kernel_size=3, padding=1, use_bias=False))
    if dropout:
        new_features.add(nn.Dropout(dropout))
    out = nn.HybridConcurrent(axis=1, prefix="")
    out.add(nn.Identity())
    out.add(new_features)
    return out


def _dense_block(num_layers, bn_size, growth_rate, dropout, stage_index):
    out = nn.HybridSequential(prefix=f"stage{stage_index}_")
    with out.name_scope():
        for _ in range(num_layers):
            out.add(_dense_layer(growth_rate, bn_size, dropout))
    return out


def _transition(num_output_features):
    out = nn.HybridSequential(prefix="")
    out.add(nn.BatchNorm(), nn.Activation("relu"),
            nn.Conv2D(num_output_features, kernel_size=1, use_bias=False),
            nn.AvgPool2D(pool_size=2, strides=2))
    return out


class DenseNet(HybridBlock):
    """DenseNet: a 7x7 stem of ``num_init_features``, dense blocks of ``block_config``
    layers growing the width by ``growth_rate`` each, with halving transitions between them."""

    def __init__(self, num_init_features, growth_rate, block_config, bn_size=4, dropout=0,
                 classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.Conv2D(num_init_features, kernel_size=7, strides=2,
                                        padding=3, use_bias=False),
                              nn.BatchNorm(), nn.Activation("relu"),
                              nn.MaxPool2D(pool_size=3, strides=2, padding=1))
            num_features = num_init_features
            for i, num_layers in enumerate(block_config):
                self.features.add(_dense_block(num_layers, bn_size, growth_rate, dropout, i + 1))
                num_features += num_layers * growth_rate
                if i != len(block_config) - 1:
                    num_features //= 2
                    self.features.add(_transition(num_features))
            self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.AvgPool2D(pool_size=7),
                              nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


#: depth -> (stem width, growth rate, layers per dense block)
densenet_spec = {121: (64, 32, [6, 12, 24, 16]),
                 161: (96, 48, [6, 12, 36, 24]),
                 169: (64, 32, [6, 12, 32, 32]),
                 201: (64, 32, [6, 12, 48, 32])}


def get_densenet(num_layers, pretrained=False, ctx=None, root=None, **kwargs):
    """DenseNet with ``num_layers`` (121, 161, 169 or 201); keywords (``classes``,
    ``bn_size``, ``dropout``, ``prefix``) go to ``DenseNet``. ``pretrained=True`` raises: load
    a local file with ``net.load_parameters(path)``."""
    if num_layers not in densenet_spec:
        raise MXNetError(f"Invalid number of layers: {num_layers}. Options are "
                         f"{sorted(densenet_spec)}")
    check_pretrained(f"densenet{num_layers}", pretrained, root)
    num_init_features, growth_rate, block_config = densenet_spec[num_layers]
    return DenseNet(num_init_features, growth_rate, block_config, **kwargs)


def densenet121(**kwargs):
    """DenseNet-121."""
    return get_densenet(121, **kwargs)


def densenet161(**kwargs):
    """DenseNet-161."""
    return get_densenet(161, **kwargs)


def densenet169(**kwargs):
    """DenseNet-169."""
    return get_densenet(169, **kwargs)


def densenet201(**kwargs):
    """DenseNet-201."""
    return get_densenet(201, **kwargs)
