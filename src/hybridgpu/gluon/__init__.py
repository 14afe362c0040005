"""``mx.gluon``: Blocks, Parameters, layers (``nn``), and hybridization.

Example:
    >>> import hybridgpu as mx
    >>> p = mx.gluon.Parameter("w", shape=(2,))
    >>> p.name
    'w'
"""

from . import (
           nn,  # noqa: E402, I001  (layers build on the classes above)
           parameter,
)
from .block import Block
from .hybrid_block import HybridBlock
from .parameter import Constant, DeferredInitializationError, Parameter, ParameterDict
from .symbol_block import SymbolBlock
from .trainer import Trainer

__all__ = ["Block", "HybridBlock", "SymbolBlock", "Parameter", "Constant", "ParameterDict",
           "DeferredInitializationError", "Trainer", "parameter", "nn", "contrib", "model_zoo",
           "loss", "trainer"]
