"""Inception V3 ("Rethinking the Inception Architecture for Computer Vision", Szegedy et al.
2015), with MXNet 1.x's block and parameter names (``inception30_A1_conv0_weight``).

The classifier follows an 8x8 average pooling, so inputs must be at least 299x299, as in MXNet.

Example:
    >>> import hybridgpu as mx
    >>> with mx.name.NameManager():
    ...     net = inception_v3(classes=10)
    >>> list(net.collect_params())[-3:]
    ['inception30_E2_batchnorm8_running_var', 'inception30_dense0_weight', \
'inception30_dense0_bias']
"""

from __future__ import annotations

from ... import nn
from ...hybrid_block import HybridBlock
from ._common import check_pretrained

__all__ = ["Inception3", "inception_v3"]

_SETTINGS = ("channels", "kernel_size", "strides", "padding")


def _basic_conv(**kwargs):
    """Convolution (no bias) -> BatchNorm (epsilon 1e-3) -> ReLU."""
    out = nn.HybridSequential(prefix="")
    out.add(nn.Conv2D(use_bias=False, **kwargs))
    out.add(nn.BatchNorm(epsilon=0.001))
    out.add(nn.Activation("relu"))
    return out


def _branch(pool, *convs):
    """An optional pooling (``'avg'``: 3x3/1 padded, ``'max'``: 3x3/2) then basic
    convolutions, each given as ``(channels, kernel_size, strides, padding)`` (None: default)."""
    out = nn.HybridSequential(prefix="")
    if pool == "avg":
        out.add(nn.AvgPool2D(pool_size=3, strides=1, padding=1))
    elif pool == "max":
        out.add(nn.MaxPool2D(pool_size=3, strides=2))
    for setting in convs:
        out.add(_basic_conv(**{k: v for k, v in zip(_SETTINGS, setting) if v is not None}))
    return out


def _concurrent(prefix, *branches):
    out = nn.HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        for make in branches:
            out.add(make())
    return out


def _block_a(pool_features, prefix):
    return _concurrent(prefix,
                       lambda: _branch(None, (64, 1, None, None)),
                       lambda: _branch(None, (48, 1, None, None), (64, 5, None, 2)),
                       lambda: _branch(None, (64, 1, None, None), (96, 3, None, 1),
                                       (96, 3, None, 1)),
                       lambda: _branch("avg", (pool_features, 1, None, None)))


def _block_b(prefix):
    return _concurrent(prefix,
                       lambda: _branch(None, (384, 3, 2, None)),
                       lambda: _branch(None, (64, 1, None, None), (96, 3, None, 1),
                                       (96, 3, 2, None)),
                       lambda: _branch("max"))


def _block_c(channels_7x7, prefix):
    c7 = channels_7x7
    return _concurrent(prefix,
                       lambda: _branch(None, (192, 1, None, None)),
                       lambda: _branch(None, (c7, 1, None, None), (c7, (1, 7), None, (0, 3)),
                                       (192, (7, 1), None, (3, 0))),
                       lambda: _branch(None, (c7, 1, None, None), (c7, (7, 1), None, (3, 0)),
                                       (c7, (1, 7), None, (0, 3)), (c7, (7, 1), None, (3, 0)),
                                       (192, (1, 7), None, (0, 3))),
                       lambda: _branch("avg", (192, 1, None, None)))


def _block_d(prefix):
    return _concurrent(prefix,
                       lambda: _branch(None, (192, 1, None, None), (320, 3, 2, None)),
                       lambda: _branch(None, (192, 1, None, None), (192, (1, 7), None, (0, 3)),
                                       (192, (7, 1), None, (3, 0)), (192, 3, 2, None)),
                       lambda: _branch("max"))


def _split_3x3(first):
    """``first`` then the 1x3 and 3x1 convolutions side by side (Inception-E's split)."""
    out = nn.HybridSequential(prefix="")
    out.add(first)
    split = nn.HybridConcurrent(axis=1, prefix="")
    split.add(_branch(None, (384, (1, 3), None, (0, 1))))
    split.add(_branch(None, (384, (3, 1), None, (1, 0))))
    out.add(split)
    return out


def _block_e(prefix):
    return _concurrent(prefix,
                       lambda: _branch(None, (320, 1, None, None)),
                       lambda: _split_3x3(_branch(None, (384, 1, None, None))),
                       lambda: _split_3x3(_branch(None, (448, 1, None, None),
                                                  (384, 3, None, 1))),
                       lambda: _branch("avg", (192, 1, None, None)))


class Inception3(HybridBlock):
    """Inception V3: a convolutional stem, Inception blocks A (x3), B, C (x4), D, E (x2),
    8x8 average pooling, dropout and the classifier."""

    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(_basic_conv(channels=32, kernel_size=3, strides=2),
                              _basic_conv(channels=32, kernel_size=3),
                              _basic_conv(channels=64, kernel_size=3, padding=1),
                              nn.MaxPool2D(pool_size=3, strides=2),
                              _basic_conv(channels=80, kernel_size=1),
                              _basic_conv(channels=192, kernel_size=3),
                              nn.MaxPool2D(pool_size=3, strides=2))
            self.features.add(_block_a(32, "A1_"), _block_a(64, "A2_"), _block_a(64, "A3_"),
                              _block_b("B_"))
            self.features.add(_block_c(128, "C1_"), _block_c(160, "C2_"),
                              _block_c(160, "C3_"), _block_c(192, "C4_"))
            self.features.add(_block_d("D_"), _block_e("E1_"), _block_e("E2_"),
                              nn.AvgPool2D(pool_size=8), nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def inception_v3(pretrained=False, ctx=None, root=None, **kwargs):
    """Inception V3 (``get_model('inceptionv3')``); keywords (``classes``, ``prefix``) go to
    ``Inception3``. ``pretrained=True`` raises: load a local file with
    ``net.load_parameters(path)``."""
    check_pretrained("inceptionv3", pretrained, root)
    return Inception3(**kwargs)
