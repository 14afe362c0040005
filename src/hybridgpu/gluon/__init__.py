"""``mx.gluon``: Blocks, Parameters, layers (``nn``), hybridization, losses, the Trainer,
data loading, and the model zoo.

Example:
    >>> import hybridgpu as mx
    >>> p = mx.gluon.Parameter("w", shape=(2,))
    >>> p.name
    'w'
"""

# MXNet's gluon.block module holds all three Block classes; code written for it (GluonCV says
# `from mxnet.gluon.block import HybridBlock`) finds them there too (issue 21)
from . import block as _block
from . import contrib, data, loss, model_zoo, nn, parameter, rnn, train_step, trainer, utils
from .block import Block
from .hybrid_block import HybridBlock
from .parameter import Constant, DeferredInitializationError, Parameter, ParameterDict
from .symbol_block import SymbolBlock
from .train_step import TrainStep
from .trainer import Trainer

_block.HybridBlock, _block.SymbolBlock = HybridBlock, SymbolBlock

__all__ = ["Block", "HybridBlock", "SymbolBlock", "Parameter", "Constant", "ParameterDict",
           "DeferredInitializationError", "Trainer", "TrainStep", "parameter", "nn", "contrib",
           "model_zoo", "loss", "trainer", "train_step", "data", "utils", "rnn"]
