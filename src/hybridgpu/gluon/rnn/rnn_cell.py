"""MXNet 1.x's recurrent cells: the bases ``RecurrentCell`` and ``HybridRecurrentCell`` (one time
step per call, ``begin_state``, ``unroll`` over a sequence) and the three cells ``RNNCell``,
``LSTMCell`` and ``GRUCell``, with MXNet's parameter names (``lstm0_i2h_weight``) and graph node
names (``lstm0_t0_i2h``), so their weights load into the fused layers' math and back.

A cell computes ``output, new_states = cell(x_t, states)`` for one step of shape (N, C);
``unroll(length, inputs, layout=...)`` runs it over a whole sequence (one array or a list of
steps) and returns the outputs as a list of steps or one merged array (``merge_outputs``).

Example:
    >>> import hybridgpu as mx
    >>> with mx.name.NameManager():
    ...     cell = LSTMCell(4, input_size=3)
    >>> cell.initialize()
    >>> cell
    LSTMCell(3 -> 16)
    >>> out, states = cell(mx.nd.ones((2, 3)), cell.begin_state(batch_size=2))
    >>> out.shape, [s.shape for s in states], sorted(cell.collect_params())[0]
    ((2, 4), [(2, 4), (2, 4)], 'lstm0_h2h_bias')
    >>> outs, states = cell.unroll(5, mx.nd.ones((2, 5, 3)), merge_outputs=True)
    >>> outs.shape
    (2, 5, 4)
"""

from __future__ import annotations

from ... import ndarray as nd
from ...base import MXNetError
from ..block import Block
from ..hybrid_block import HybridBlock
from .sequence import (
    begin_state_for,
    format_sequence,
    last_valid,
    mask_padding,
    reverse_sequences,
)

__all__ = ["RecurrentCell", "HybridRecurrentCell", "RNNCell", "LSTMCell", "GRUCell"]


def _activate(F, x, activation, **kwargs):
    """``activation`` (a name such as 'tanh', or a callable / activation block) on ``x``."""
    named = {"tanh": F.tanh, "relu": F.relu, "sigmoid": F.sigmoid, "softsign": F.softsign}
    if isinstance(activation, str):
        if activation in named:
            return named[activation](x, **kwargs)
        return F.Activation(x, act_type=activation, **kwargs)
    alpha = getattr(activation, "_alpha", None)
    if type(activation).__name__ == "LeakyReLU" and alpha is not None:
        return F.LeakyReLU(x, act_type="leaky", slope=alpha, **kwargs)
    return activation(x, **kwargs)


class RecurrentCell(Block):
    """Base class of recurrent cells: ``state_info``, ``begin_state``, ``unroll``, ``reset``.
    Subclasses define ``state_info(batch_size)`` and the step (``forward`` or, hybridizable,
    ``hybrid_forward(F, inputs, states, **params)``)."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._modified = False
        self.reset()

    def reset(self):
        """Reset the step counters before a new sequence (``unroll`` does it)."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._children.values():
            cell.reset()

    def state_info(self, batch_size=0):
        """One dict per state: ``shape`` and ``__layout__``."""
        raise NotImplementedError(f"{type(self).__name__} must implement state_info")

    def begin_state(self, batch_size=0, func=nd.zeros, **kwargs):
        """Initial states made by ``func`` (``nd.zeros``, ``sym.var``, ...), named
        ``<prefix>begin_state_<k>``; ``kwargs`` (``ctx``, ``dtype``, ...) go to ``func``."""
        if self._modified:
            raise MXNetError(f"{type(self).__name__} {self.name!r} is wrapped by a modifier "
                             "cell (ZoneoutCell, ResidualCell, ...): call the modifier cell's "
                             "begin_state instead")
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            info = dict(info or {})
            info.update(kwargs)
            states.append(func(name=f"{self.prefix}begin_state_{self._init_counter}", **info))
        return states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        """Run the cell over ``length`` steps of ``inputs``: ``(outputs, states)``.

        ``inputs``: one array in ``layout`` or a list of (N, C) steps; ``begin_state``:
        default zeros; ``merge_outputs``: True gives one array in ``layout``, False a list,
        None whichever is at hand; ``valid_length`` (N,): steps past each length are zeroed
        and the states are the last valid ones.
        """
        self.reset()
        inputs, axis, F, batch = format_sequence(length, inputs, layout, False)
        states = begin_state_for(self, F, begin_state, inputs, batch)
        outputs, every_state = [], []
        for t in range(length):
            output, states = self(inputs[t], states)
            outputs.append(output)
            if valid_length is not None:
                every_state.append(states)
        if valid_length is not None:
            states = [last_valid(F, steps, valid_length) for steps in zip(*every_state)]
            outputs = mask_padding(F, outputs, length, valid_length, axis, True)
        outputs, _, _, _ = format_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def forward(self, inputs, states):
        """One step: ``(output, new_states)``."""
        self._counter += 1
        return super().forward(inputs, states)


class HybridRecurrentCell(RecurrentCell, HybridBlock):
    """A recurrent cell whose step is ``hybrid_forward(F, inputs, states, **params)``."""

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement hybrid_forward")


class _GatedCell(HybridRecurrentCell):
    """The weights every cell has: ``i2h_weight`` (gates*H, input_size), ``h2h_weight``
    (gates*H, H) and their biases."""

    _gates = 1

    def __init__(self, hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                 i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params):
        super().__init__(prefix=prefix, params=params)
        if hidden_size < 1:
            raise MXNetError(f"{type(self).__name__}: hidden_size must be positive, got "
                             f"{hidden_size}")
        self._hidden_size, self._input_size = hidden_size, input_size
        rows = self._gates * hidden_size
        self.i2h_weight = self.params.get("i2h_weight", shape=(rows, input_size),
                                          init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(rows, hidden_size),
                                          init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(rows,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(rows,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _mapping(self):
        rows, inputs = self.i2h_weight.shape
        return f"{inputs or None} -> {rows}"

    def __repr__(self):
        return f"{type(self).__name__}({self._mapping()})"

    def _products(self, F, inputs, h, i2h_weight, h2h_weight, i2h_bias, h2h_bias, prefix):
        rows = self._gates * self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=rows,
                               name=prefix + "i2h")
        h2h = F.FullyConnected(data=h, weight=h2h_weight, bias=h2h_bias, num_hidden=rows,
                               name=prefix + "h2h")
        return i2h, h2h


class RNNCell(_GatedCell):
    """Elman cell: ``h' = activation(W_i2h x + b_i2h + W_h2h h + b_h2h)``; one state (N, H).

    Example:
        >>> cell = RNNCell(3, activation="relu", input_size=2)
        >>> cell.initialize()
        >>> cell(nd.ones((4, 2)), [nd.zeros((4, 3))])[0].shape
        (4, 3)
    """

    def __init__(self, hidden_size, activation="tanh", i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", input_size=0, prefix=None, params=None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)
        self._activation = activation

    def _alias(self):
        return "rnn"

    def __repr__(self):
        return f"{type(self).__name__}({self._mapping()}, {self._activation})"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = f"t{self._counter}_"
        i2h, h2h = self._products(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias,
                                  h2h_bias, prefix)
        total = F.elemwise_add(i2h, h2h, name=prefix + "plus0")
        output = _activate(F, total, self._activation, name=prefix + "out")
        return output, [output]


class LSTMCell(_GatedCell):
    """LSTM cell, gates ``i, f, g, o`` (MXNet's order); states ``[h, c]``, each (N, H).

    Example:
        >>> cell = LSTMCell(3, input_size=2)
        >>> cell.initialize()
        >>> [s.shape for s in cell(nd.ones((4, 2)), cell.begin_state(4))[1]]
        [(4, 3), (4, 3)]
    """

    _gates = 4

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 prefix=None, params=None, activation="tanh", recurrent_activation="sigmoid"):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)
        self._activation = activation
        self._recurrent_activation = recurrent_activation

    def _alias(self):
        return "lstm"

    def state_info(self, batch_size=0):
        info = {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}
        return [dict(info), dict(info)]

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = f"t{self._counter}_"
        i2h, h2h = self._products(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias,
                                  h2h_bias, prefix)
        gates = F.elemwise_add(i2h, h2h, name=prefix + "plus0")
        parts = F.SliceChannel(gates, num_outputs=4, name=prefix + "slice")
        gate = self._recurrent_activation
        in_gate = _activate(F, parts[0], gate, name=prefix + "i")
        forget_gate = _activate(F, parts[1], gate, name=prefix + "f")
        in_transform = _activate(F, parts[2], self._activation, name=prefix + "c")
        out_gate = _activate(F, parts[3], gate, name=prefix + "o")
        next_c = F.elemwise_add(F.elemwise_mul(forget_gate, states[1], name=prefix + "mul0"),
                                F.elemwise_mul(in_gate, in_transform, name=prefix + "mul1"),
                                name=prefix + "state")
        next_h = F.elemwise_mul(out_gate, _activate(F, next_c, self._activation,
                                                    name=prefix + "activation0"),
                                name=prefix + "out")
        return next_h, [next_h, next_c]


class GRUCell(_GatedCell):
    """GRU cell, gates ``r, z, n`` with the reset gate on the hidden product (MXNet's and
    cuDNN's form); one state (N, H).

    Example:
        >>> cell = GRUCell(3, input_size=2)
        >>> cell.initialize()
        >>> cell.unroll(4, nd.ones((4, 5, 2)), layout="TNC", merge_outputs=True)[0].shape
        (4, 5, 3)
    """

    _gates = 3

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 prefix=None, params=None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)

    def _alias(self):
        return "gru"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = f"t{self._counter}_"
        prev_h = states[0]
        i2h, h2h = self._products(F, inputs, prev_h, i2h_weight, h2h_weight, i2h_bias,
                                  h2h_bias, prefix)
        i2h_r, i2h_z, i2h_n = F.SliceChannel(i2h, num_outputs=3, name=prefix + "i2h_slice")
        h2h_r, h2h_z, h2h_n = F.SliceChannel(h2h, num_outputs=3, name=prefix + "h2h_slice")
        reset = F.Activation(F.elemwise_add(i2h_r, h2h_r, name=prefix + "plus0"),
                             act_type="sigmoid", name=prefix + "r_act")
        update = F.Activation(F.elemwise_add(i2h_z, h2h_z, name=prefix + "plus1"),
                              act_type="sigmoid", name=prefix + "z_act")
        candidate = F.Activation(
            F.elemwise_add(i2h_n, F.elemwise_mul(reset, h2h_n, name=prefix + "mul0"),
                           name=prefix + "plus2"), act_type="tanh", name=prefix + "h_act")
        ones = F.ones_like(update, name=prefix + "ones_like0")
        next_h = F.elemwise_add(F.elemwise_mul(ones - update, candidate, name=prefix + "mul1"),
                                F.elemwise_mul(update, prev_h, name=prefix + "mul20"),
                                name=prefix + "out")
        return next_h, [next_h]


# MXNet's module keeps the containers and modifiers here too, and code built on it (GluonNLP)
# imports them and these helpers from ``gluon.rnn.rnn_cell``: the same names, here.
_format_sequence = format_sequence
_get_begin_state = begin_state_for
_mask_sequence_variable_length = mask_padding
_reverse_sequences = reverse_sequences

from .cell_wrappers import (  # noqa: E402  (cell_wrappers builds on the classes above)
    BidirectionalCell,
    DropoutCell,
    HybridSequentialRNNCell,
    ModifierCell,
    ResidualCell,
    SequentialRNNCell,
    ZoneoutCell,
)

__all__ += ["SequentialRNNCell", "HybridSequentialRNNCell", "DropoutCell", "ModifierCell",
            "ZoneoutCell", "ResidualCell", "BidirectionalCell"]
