"""``mx.gluon.contrib``: where MXNet 1.9 keeps some layers (``contrib.nn.Identity``, ...)."""

from . import nn, rnn

__all__ = ["nn", "rnn"]
