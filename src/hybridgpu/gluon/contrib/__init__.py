"""``mx.gluon.contrib``: where MXNet 1.9 keeps some layers (``contrib.nn.Identity``, ...)."""

from . import nn

__all__ = ["nn"]
