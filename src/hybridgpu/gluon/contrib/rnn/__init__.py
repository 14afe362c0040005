"""``mx.gluon.contrib.rnn``: MXNet 1.x's contrib recurrent cells that GluonNLP builds on
(``LSTMPCell`` for ELMo and the big language models, ``VariationalDropoutCell`` for AWD-LSTM).

Example:
    >>> from hybridgpu.gluon.contrib.rnn import LSTMPCell
    >>> LSTMPCell(8, 4, input_size=3)
    LSTMPCell(3 -> 32 -> 4)
"""

from .rnn_cell import LSTMPCell, VariationalDropoutCell

__all__ = ["LSTMPCell", "VariationalDropoutCell"]
