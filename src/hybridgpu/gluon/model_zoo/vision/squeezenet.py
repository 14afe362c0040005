"""SqueezeNet 1.0 and 1.1 ("SqueezeNet: AlexNet-level accuracy with 50x fewer parameters",
Iandola et al. 2016), with MXNet 1.x's parameter names (``squeezenet0_conv0_weight``).

The classifier ends with a 13x13 average pooling, so inputs must be at least 213x213 (1.0) or
209x209 (1.1), as in MXNet.

Example:
    >>> import hybridgpu as mx
    >>> with mx.name.NameManager():
    ...     net = squeezenet1_1(classes=10)
    >>> list(net.collect_params())[:2]
    ['squeezenet0_conv0_weight', 'squeezenet0_conv0_bias']
"""

from __future__ import annotations

from ....base import MXNetError
from ... import nn
from ...hybrid_block import HybridBlock
from ._common import check_pretrained

__all__ = ["SqueezeNet", "get_squeezenet", "squeezenet1_0", "squeezenet1_1"]


def _fire_conv(channels, kernel_size, padding=0):
    out = nn.HybridSequential(prefix="")
    out.add(nn.Conv2D(channels, kernel_size, padding=padding))
    out.add(nn.Activation("relu"))
    return out


def _fire(squeeze, expand1x1, expand3x3):
    """A Fire module: 1x1 squeeze, then 1x1 and 3x3 expansions concatenated on channels."""
    out = nn.HybridSequential(prefix="")
    out.add(_fire_conv(squeeze, 1))
    paths = nn.HybridConcurrent(axis=1, prefix="")
    paths.add(_fire_conv(expand1x1, 1))
    paths.add(_fire_conv(expand3x3, 3, 1))
    out.add(paths)
    return out


def _pool():
    return nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True)


class SqueezeNet(HybridBlock):
    """SqueezeNet ``version`` '1.0' or '1.1' (1.1: 3x3 stem, earlier pooling, ~2.4x less
    computation)."""

    def __init__(self, version, classes=1000, **kwargs):
        super().__init__(**kwargs)
        if version not in ("1.0", "1.1"):
            raise MXNetError(f"Unsupported SqueezeNet version {version}: 1.0 or 1.1 expected")
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            if version == "1.0":
                self.features.add(nn.Conv2D(96, kernel_size=7, strides=2),
                                  nn.Activation("relu"), _pool(),
                                  _fire(16, 64, 64), _fire(16, 64, 64), _fire(32, 128, 128),
                                  _pool(),
                                  _fire(32, 128, 128), _fire(48, 192, 192),
                                  _fire(48, 192, 192), _fire(64, 256, 256),
                                  _pool(),
                                  _fire(64, 256, 256))
            else:
                self.features.add(nn.Conv2D(64, kernel_size=3, strides=2),
                                  nn.Activation("relu"), _pool(),
                                  _fire(16, 64, 64), _fire(16, 64, 64),
                                  _pool(),
                                  _fire(32, 128, 128), _fire(32, 128, 128),
                                  _pool(),
                                  _fire(48, 192, 192), _fire(48, 192, 192),
                                  _fire(64, 256, 256), _fire(64, 256, 256))
            self.features.add(nn.Dropout(0.5))
            self.output = nn.HybridSequential(prefix="")
            self.output.add(nn.Conv2D(classes, kernel_size=1), nn.Activation("relu"),
                            nn.AvgPool2D(13), nn.Flatten())

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def get_squeezenet(version, pretrained=False, ctx=None, root=None, **kwargs):
    """SqueezeNet ``version`` ('1.0' or '1.1'); keywords (``classes``, ``prefix``) go to
    ``SqueezeNet``. ``pretrained=True`` raises: load a local file with
    ``net.load_parameters(path)``."""
    check_pretrained(f"squeezenet{version}", pretrained, root)
    return SqueezeNet(version, **kwargs)


def squeezenet1_0(**kwargs):
    """SqueezeNet 1.0 (``get_model('squeezenet1.0')``)."""
    return get_squeezenet("1.0", **kwargs)


def squeezenet1_1(**kwargs):
    """SqueezeNet 1.1 (``get_model('squeezenet1.1')``)."""
    return get_squeezenet("1.1", **kwargs)
