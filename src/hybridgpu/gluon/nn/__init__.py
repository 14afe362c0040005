"""``mx.gluon.nn``: MXNet 1.x's layers (Dense, Conv2D, BatchNorm, ...) with MXNet's parameter
names, so weights saved by MXNet load."""

from ..block import Block  # noqa: E402  (MXNet's gluon.nn re-exports these)
from ..hybrid_block import HybridBlock  # noqa: E402
from ..symbol_block import SymbolBlock  # noqa: E402
from .activations import *  # noqa: F403
from .activations import __all__ as _activations_all
from .basic_layers import *  # noqa: F403
from .basic_layers import __all__ as _basic_all
from .conv_layers import *  # noqa: F403
from .conv_layers import __all__ as _conv_all

__all__ = ["Block", "HybridBlock", "SymbolBlock", *_basic_all, *_activations_all, *_conv_all]
