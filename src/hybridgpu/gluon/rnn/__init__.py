"""``mx.gluon.rnn``: MXNet 1.x's recurrent layers (``RNN``, ``LSTM``, ``GRU``: the fused
``RNN`` op) and cells (``RNNCell``, ``LSTMCell``, ``GRUCell`` and the containers and modifiers
around them, stepped one time step at a time or ``unroll``-ed), with MXNet's parameter names.

Example:
    >>> import hybridgpu as mx
    >>> layer = mx.gluon.rnn.GRU(3, input_size=2)
    >>> layer.initialize()
    >>> layer(mx.nd.ones((4, 1, 2))).shape
    (4, 1, 3)
"""

from .rnn_cell import (
    BidirectionalCell,
    DropoutCell,
    GRUCell,
    HybridRecurrentCell,
    HybridSequentialRNNCell,
    LSTMCell,
    ModifierCell,
    RecurrentCell,
    ResidualCell,
    RNNCell,
    SequentialRNNCell,
    ZoneoutCell,
)
from .rnn_layer import GRU, LSTM, RNN

__all__ = ["RNN", "LSTM", "GRU", "RecurrentCell", "HybridRecurrentCell", "RNNCell", "LSTMCell",
           "GRUCell", "SequentialRNNCell", "HybridSequentialRNNCell", "BidirectionalCell",
           "DropoutCell", "ModifierCell", "ZoneoutCell", "ResidualCell"]
