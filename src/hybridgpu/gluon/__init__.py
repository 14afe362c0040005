"""``mx.gluon``: Blocks, Parameters, layers (``nn``), and hybridization.

Example:
    >>> import hybridgpu as mx
    >>> p = mx.gluon.Parameter("w", shape=(2,))
    >>> p.name
    'w'
"""

from . import parameter
from .block import Block
from .hybrid_block import HybridBlock
from .parameter import Constant, DeferredInitializationError, Parameter, ParameterDict

__all__ = ["Block", "HybridBlock", "Parameter", "Constant", "ParameterDict",
           "DeferredInitializationError", "parameter"]
