"""``LSTMPCell`` (an LSTM whose hidden state is projected down, Sak et al. 2014) and
``VariationalDropoutCell`` (one dropout mask per sequence, Gal and Ghahramani 2016), with
MXNet 1.x's parameter names, state layout and numbers.

Example:
    >>> import hybridgpu as mx
    >>> cell = LSTMPCell(6, 2, input_size=3)
    >>> cell.initialize()
    >>> out, (r, c) = cell(mx.nd.ones((4, 3)), cell.begin_state(4))
    >>> out.shape, r.shape, c.shape
    ((4, 2), (4, 2), (4, 6))
"""

from __future__ import annotations

from ....base import MXNetError
from ...rnn.cell_wrappers import (
    BidirectionalCell,
    HybridSequentialRNNCell,
    ModifierCell,
    SequentialRNNCell,
)
from ...rnn.rnn_cell import HybridRecurrentCell

__all__ = ["LSTMPCell", "VariationalDropoutCell"]


class VariationalDropoutCell(ModifierCell):
    """Drops inputs, the first state (h) and outputs of ``base_cell`` with one mask per
    sequence (drawn at the first step after ``reset``), in training only."""

    def __init__(self, base_cell, drop_inputs=0.0, drop_states=0.0, drop_outputs=0.0):
        if drop_states and isinstance(base_cell, BidirectionalCell):
            raise MXNetError("BidirectionalCell doesn't support variational state dropout. "
                             "Please add VariationalDropoutCell to the cells underneath "
                             "instead.")
        if drop_states and isinstance(base_cell, (SequentialRNNCell, HybridSequentialRNNCell)) \
                and any(isinstance(c, BidirectionalCell) for c in base_cell._children.values()):
            raise MXNetError("Bidirectional SequentialRNNCell doesn't support variational "
                             "state dropout. Please add VariationalDropoutCell to the cells "
                             "underneath instead.")
        super().__init__(base_cell)
        self.drop_inputs, self.drop_states, self.drop_outputs = (drop_inputs, drop_states,
                                                                 drop_outputs)
        self.drop_inputs_mask = self.drop_states_mask = self.drop_outputs_mask = None

    def _alias(self):
        return "vardrop"

    def reset(self):
        super().reset()
        self.drop_inputs_mask = self.drop_states_mask = self.drop_outputs_mask = None

    def hybrid_forward(self, F, inputs, states):
        if self.drop_states and self.drop_states_mask is None:
            self.drop_states_mask = F.Dropout(F.ones_like(states[0]), p=self.drop_states)
        if self.drop_inputs and self.drop_inputs_mask is None:
            self.drop_inputs_mask = F.Dropout(F.ones_like(inputs), p=self.drop_inputs)
        if self.drop_states:
            states = [states[0] * self.drop_states_mask, *states[1:]]
        if self.drop_inputs:
            inputs = inputs * self.drop_inputs_mask
        output, next_states = self.base_cell(inputs, states)
        if self.drop_outputs:
            if self.drop_outputs_mask is None:
                self.drop_outputs_mask = F.Dropout(F.ones_like(output), p=self.drop_outputs)
            output = output * self.drop_outputs_mask
        return output, next_states

    def __repr__(self):
        return (f"{type(self).__name__}(p_out = {self.drop_outputs}, "
                f"p_state = {self.drop_states})")


class LSTMPCell(HybridRecurrentCell):
    """LSTM cell (gates ``i, f, g, o``) whose output ``r = W_h2r h`` has ``projection_size``
    units; states ``[r (N, P), c (N, H)]``; ``h2h_weight`` is (4H, P)."""

    def __init__(self, hidden_size, projection_size, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, h2r_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        for what, size in (("hidden_size", hidden_size), ("projection_size", projection_size)):
            if size < 1:
                raise MXNetError(f"LSTMPCell: {what} must be positive, got {size}")
        self._hidden_size, self._input_size = hidden_size, input_size
        self._projection_size = projection_size
        rows = 4 * hidden_size
        get = self.params.get
        self.i2h_weight = get("i2h_weight", shape=(rows, input_size),
                              init=i2h_weight_initializer, allow_deferred_init=True)
        self.h2h_weight = get("h2h_weight", shape=(rows, projection_size),
                              init=h2h_weight_initializer, allow_deferred_init=True)
        self.h2r_weight = get("h2r_weight", shape=(projection_size, hidden_size),
                              init=h2r_weight_initializer, allow_deferred_init=True)
        self.i2h_bias = get("i2h_bias", shape=(rows,), init=i2h_bias_initializer,
                            allow_deferred_init=True)
        self.h2h_bias = get("h2h_bias", shape=(rows,), init=h2h_bias_initializer,
                            allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._projection_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self):
        return "lstmp"

    def __repr__(self):
        rows, inputs = self.i2h_weight.shape
        return f"{type(self).__name__}({inputs or None} -> {rows} -> {self.h2r_weight.shape[0]})"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, h2r_weight, i2h_bias,
                       h2h_bias):
        prefix, rows = f"t{self._counter}_", 4 * self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=rows,
                               name=prefix + "i2h")
        h2h = F.FullyConnected(data=states[0], weight=h2h_weight, bias=h2h_bias,
                               num_hidden=rows, name=prefix + "h2h")
        parts = F.SliceChannel(i2h + h2h, num_outputs=4, name=prefix + "slice")
        in_gate = F.Activation(parts[0], act_type="sigmoid", name=prefix + "i")
        forget_gate = F.Activation(parts[1], act_type="sigmoid", name=prefix + "f")
        in_transform = F.Activation(parts[2], act_type="tanh", name=prefix + "c")
        out_gate = F.Activation(parts[3], act_type="sigmoid", name=prefix + "o")
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * in_transform,
                                name=prefix + "state")
        hidden = F.elemwise_mul(out_gate, F.Activation(next_c, act_type="tanh"),
                                name=prefix + "hidden")
        next_r = F.FullyConnected(data=hidden, num_hidden=self._projection_size,
                                  weight=h2r_weight, no_bias=True, name=prefix + "out")
        return next_r, [next_r, next_c]
