"""MXNet 1.x's fused recurrent layers ``RNN`` (relu or tanh), ``LSTM`` and ``GRU``: stacked,
optionally bidirectional, with dropout between layers, over 'TNC' or 'NTC' sequences.

Each layer keeps one weight and bias pair per (layer, direction) with MXNet's names
(``lstm0_l0_i2h_weight``, ``lstm0_r1_h2h_bias``; ``save_parameters`` writes MXNet's keys
``_unfused.0.i2h_weight``, ``_unfused.0.r_cell.h2h_bias``) and runs them through the one fused
``RNN`` op, joined by ``_rnn_param_concat`` as MXNet does, so exported graphs and weights match.

Called without states, a layer starts from zeros and returns only the output; called with a list
of states, it returns ``(output, new_states)``. Made with ``use_sequence_length=True``, a layer
takes ``layer(x, states, sequence_length)`` (one valid length per sequence): padded steps give
zeros and the final states are those of each sequence's last valid step.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.gluon import rnn
    >>> with mx.name.NameManager():
    ...     layer = rnn.LSTM(5, num_layers=2, input_size=3)
    >>> layer.initialize()
    >>> layer
    LSTM(3 -> 5, TNC, num_layers=2)
    >>> layer(mx.nd.ones((4, 2, 3))).shape  # (T, N, C) -> (T, N, hidden)
    (4, 2, 5)
    >>> out, (h, c) = layer(mx.nd.ones((4, 2, 3)), layer.begin_state(batch_size=2))
    >>> h.shape, sorted(layer.collect_params())[0]
    ((2, 2, 5), 'lstm0_l0_h2h_bias')
"""

from __future__ import annotations

import re
from collections import OrderedDict

from ... import ndarray as nd
from ...base import MXNetError
from ...ndarray import NDArray
from ...ops.rnn import GATES
from ...symbol import Symbol
from ..hybrid_block import HybridBlock
from .sequence import symbolic_zeros

__all__ = ["RNN", "LSTM", "GRU"]

_KEY = re.compile(r"(l|r)(\d+)_(i2h|h2h)_(weight|bias)\Z")


def _known_last_dim(x):
    """The size of the last axis of an NDArray or a Symbol of known shape, else 0."""
    try:
        return int(x.shape[-1])
    except (MXNetError, AttributeError, TypeError, IndexError):
        return 0


class _RNNLayer(HybridBlock):
    """The fused recurrent layer shared by ``RNN``, ``LSTM`` and ``GRU``."""

    def __init__(self, hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                 i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                 h2h_bias_initializer, mode, lstm_state_clip_min=None, lstm_state_clip_max=None,
                 lstm_state_clip_nan=False, dtype="float32", use_sequence_length=False,
                 **kwargs):
        super().__init__(**kwargs)
        if layout not in ("TNC", "NTC"):
            raise MXNetError(f"{type(self).__name__}: invalid layout {layout!r}; must be 'TNC' "
                             "or 'NTC'")
        if hidden_size < 1 or num_layers < 1:
            raise MXNetError(f"{type(self).__name__}: hidden_size ({hidden_size}) and "
                             f"num_layers ({num_layers}) must be positive")
        if not 0 <= dropout <= 1:
            raise MXNetError(f"{type(self).__name__}: dropout must be in [0, 1], got {dropout}")
        self._hidden_size, self._num_layers, self._layout = hidden_size, num_layers, layout
        self._mode, self._dropout, self._input_size = mode, dropout, input_size
        self._dir = 2 if bidirectional else 1
        self._gates = GATES[mode]
        self._clip = (lstm_state_clip_min, lstm_state_clip_max, lstm_state_clip_nan)
        self._dtype = dtype
        self._use_sequence_length = use_sequence_length
        # with and without states the Python returns different structures: each keeps its
        # own compiled traces and traced programs
        self._traces_by_skip = {True: (self._traces, self._programs), False: (OrderedDict(), [])}
        self._skip_states = True
        rows, inputs = self._gates * hidden_size, input_size
        inits = {"i2h_weight": i2h_weight_initializer, "h2h_weight": h2h_weight_initializer,
                 "i2h_bias": i2h_bias_initializer, "h2h_bias": h2h_bias_initializer}
        for layer in range(num_layers):
            for d in "lr"[:self._dir]:
                shapes = {"i2h_weight": (rows, inputs), "h2h_weight": (rows, hidden_size),
                          "i2h_bias": (rows,), "h2h_bias": (rows,)}
                for kind, shape in shapes.items():
                    name = f"{d}{layer}_{kind}"
                    setattr(self, name, self.params.get(
                        name, shape=shape, init=inits[kind], dtype=dtype,
                        allow_deferred_init=True))
            inputs = hidden_size * self._dir

    def __repr__(self):
        rows, inputs = self.l0_i2h_weight.shape
        text = f"{type(self).__name__}({inputs or None} -> {rows // self._gates}, {self._layout}"
        if self._num_layers != 1:
            text += f", num_layers={self._num_layers}"
        if self._dropout != 0:
            text += f", dropout={self._dropout}"
        if self._dir == 2:
            text += ", bidirectional"
        return text + ")"

    def _collect_params_with_prefix(self, prefix=""):
        """MXNet's ``save_parameters`` keys: ``_unfused.<layer>.<kind>`` (one direction) or
        ``_unfused.<layer>.<l|r>_cell.<kind>`` (bidirectional)."""
        if prefix:
            prefix += "."
        out = {}
        for key, param in self._reg_params.items():
            d, layer, gate, kind = _KEY.match(key).groups()
            cell = f"{d}_cell." if self._dir == 2 else ""
            out[f"{prefix}_unfused.{layer}.{cell}{gate}_{kind}"] = param
        return out

    def _clear_cache(self):
        super()._clear_cache()
        for traces, programs in self.__dict__.get("_traces_by_skip", {}).values():
            traces.clear()
            programs.clear()

    def cast(self, dtype):
        super().cast(dtype)
        self._dtype = dtype

    # -- states -------------------------------------------------------------------------
    def state_info(self, batch_size=0):
        """Shape, layout and dtype of each state: ``(num_layers * directions, N, hidden)``."""
        info = {"shape": (self._num_layers * self._dir, batch_size, self._hidden_size),
                "__layout__": "LNC", "dtype": self._dtype}
        return [dict(info) for _ in range(2 if self._mode == "lstm" else 1)]

    def begin_state(self, batch_size=0, func=nd.zeros, **kwargs):
        """Initial states made by ``func`` (``nd.zeros``, ``nd.ones``, ``sym.var``, ...), each
        named ``<prefix>h0_<i>``; ``kwargs`` (``ctx``, ``dtype``, ...) go to ``func``.

        Example:
            >>> [s.shape for s in LSTM(4, num_layers=2).begin_state(batch_size=3)]
            [(2, 3, 4), (2, 3, 4)]
        """
        states = []
        for i, info in enumerate(self.state_info(batch_size)):
            info.update(kwargs)
            states.append(func(name=f"{self.prefix}h0_{i}", **info))
        return states

    # -- forward ------------------------------------------------------------------------
    def _complete_input_size(self, inputs):
        """Deferred ``input_size``: the first layer's ``i2h`` weights take it from the input."""
        size = _known_last_dim(inputs)
        for d in "lr"[:self._dir]:
            param = getattr(self, f"{d}0_i2h_weight")
            if size and param.shape[1] == 0:
                param.shape = (param.shape[0], size)

    def infer_shape(self, inputs, *args):
        """Complete the deferred ``input_size`` from ``inputs`` (and the other shapes)."""
        self._complete_input_size(inputs)
        super().infer_shape(inputs, *args)

    def __call__(self, inputs, states=None, sequence_length=None):
        if (sequence_length is not None) != self._use_sequence_length:
            raise MXNetError(f"{type(self).__name__} {self.name!r}: sequence_length is given "
                             "if and only if the layer was made with use_sequence_length=True "
                             f"(it was made with {self._use_sequence_length})")
        skip = states is None
        self._complete_input_size(inputs)
        if skip:
            if isinstance(inputs, Symbol):
                batch_axis = self._layout.find("N")
                states = [symbolic_zeros(inputs, batch_axis, info["shape"])
                          for info in self.state_info(0)]
            else:
                batch = inputs.shape[self._layout.find("N")]
                states = self.begin_state(batch, ctx=inputs.context, dtype=inputs.dtype)
        if isinstance(states, (NDArray, Symbol)):
            states = [states]
        self._skip_states = skip
        self._traces, self._programs = self._traces_by_skip[skip]  # traced apart
        if sequence_length is None:
            return super().__call__(inputs, list(states))
        return super().__call__(inputs, list(states), sequence_length)

    def hybrid_forward(self, F, inputs, states, sequence_length=None, **params):
        if F is nd:
            batch = inputs.shape[self._layout.find("N")]
            for state, info in zip(states, self.state_info(batch)):
                if tuple(state.shape) != info["shape"]:
                    raise MXNetError(f"{type(self).__name__} {self.name!r}: invalid recurrent "
                                     f"state shape: expected {info['shape']}, got "
                                     f"{tuple(state.shape)}")
        n_states = 2 if self._mode == "lstm" else 1
        if len(states) != n_states:
            raise MXNetError(f"{type(self).__name__} {self.name!r}: expected {n_states} "
                             f"state(s), got {len(states)}")
        if self._layout == "NTC":
            inputs = F.swapaxes(inputs, dim1=0, dim2=1)
        flat = [F.reshape(params[f"{d}{layer}_{gate}_{kind}"], shape=(-1,))
                for kind in ("weight", "bias") for layer in range(self._num_layers)
                for d in "lr"[:self._dir] for gate in ("i2h", "h2h")]
        packed = F._internal._rnn_param_concat(*flat, dim=0)
        clip_min, clip_max, clip_nan = self._clip
        lengths = {} if sequence_length is None else {"sequence_length": sequence_length}
        out = F.RNN(inputs, packed, *states, **lengths, state_size=self._hidden_size,
                    num_layers=self._num_layers, bidirectional=self._dir == 2, p=self._dropout,
                    state_outputs=True, mode=self._mode, projection_size=None,
                    lstm_state_clip_min=clip_min, lstm_state_clip_max=clip_max,
                    lstm_state_clip_nan=clip_nan,
                    use_sequence_length=sequence_length is not None)
        outputs, new_states = out[0], [out[i] for i in range(1, 1 + n_states)]
        if self._layout == "NTC":
            outputs = F.swapaxes(outputs, dim1=0, dim2=1)
        return outputs if self._skip_states else (outputs, new_states)

    def _shape_hint(self):
        inputs = self.l0_i2h_weight.shape[1]
        return (f"it expects {self._layout} sequences with {inputs or 'any number of'} "
                f"features on the last axis")


class RNN(_RNNLayer):
    """Elman RNN, ``h_t = act(W_i2h x_t + b_i2h + W_h2h h_(t-1) + b_h2h)`` with ``act`` relu
    (the default) or tanh; one state ``(num_layers * directions, N, hidden_size)``.

    Example:
        >>> layer = RNN(4, activation="tanh", layout="NTC", input_size=2)
        >>> layer.initialize()
        >>> layer(nd.ones((3, 5, 2))).shape
        (3, 5, 4)
    """

    def __init__(self, hidden_size, num_layers=1, activation="relu", layout="TNC", dropout=0,
                 bidirectional=False, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 dtype="float32", **kwargs):
        if activation not in ("relu", "tanh"):
            raise MXNetError(f"RNN: activation must be 'relu' or 'tanh', got {activation!r}")
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "rnn_" + activation, dtype=dtype, **kwargs)


class LSTM(_RNNLayer):
    """Long short-term memory, gates ``i, f, g, o`` (MXNet's order); two states, ``h`` and the
    cell ``c``. ``state_clip_min``/``state_clip_max`` clip the cell state (as cuDNN does;
    MXNet's CPU kernel ignores them). ``projection_size`` is not supported.

    Example:
        >>> layer = LSTM(4, bidirectional=True)
        >>> layer.initialize()
        >>> layer(nd.ones((3, 5, 2))).shape
        (3, 5, 8)
    """

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False,
                 input_size=0, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 projection_size=None, h2r_weight_initializer=None, state_clip_min=None,
                 state_clip_max=None, state_clip_nan=False, dtype="float32", **kwargs):
        if projection_size:
            raise MXNetError("LSTM: projection_size is not supported by hybridgpu; leave it "
                             "None")
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "lstm", state_clip_min, state_clip_max,
                         state_clip_nan, dtype=dtype, **kwargs)


class GRU(_RNNLayer):
    """Gated recurrent unit, gates ``r, z, n`` (MXNet's and cuDNN's form: the reset gate
    multiplies the hidden product); one state.

    Example:
        >>> layer = GRU(4, num_layers=2, input_size=2)
        >>> layer.initialize()
        >>> layer(nd.ones((3, 5, 2))).shape
        (3, 5, 4)
    """

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False,
                 input_size=0, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", dtype="float32",
                 **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "gru", dtype=dtype, **kwargs)
