"""ONNX converters of the fused recurrent op ``RNN`` (modes ``lstm``, ``gru``, ``rnn_tanh``,
``rnn_relu``) and of the ops Gluon's recurrent layers put around it (``_rnn_param_concat``,
``SwapAxis``, and the zero states a symbolic call builds).

Each layer of the stack becomes one ONNX ``LSTM``, ``GRU`` or ``RNN`` node (``direction``
forward or bidirectional); the next layer reads its output with the direction axis folded into
the features, as MXNet's layer does. MXNet's one flat ``parameters`` vector becomes ONNX's
``W`` (D, G*H, I), ``R`` (D, G*H, H) and ``B`` (D, 2*G*H) per layer, with the gates reordered:
MXNet's LSTM gates are ``i, f, g, o`` and ONNX's ``i, o, f, c``; MXNet's GRU gates ``r, z, n``
and ONNX's ``z, r, h``, run with ``linear_before_reset=1`` (the reset gate multiplies the hidden
product, as in MXNet and cuDNN). When ``parameters`` is computed from the model's parameters
(the usual ``Reshape``/``_rnn_param_concat`` chain), W, R and B are written as initializers;
otherwise they are gathered from the flat tensor in the graph. Dropout between layers is off
(inference). ``use_sequence_length`` maps to ONNX's ``sequence_lens``.

Example:
    >>> w, r, b = gate_indices("gru", num_layers=1, bidirectional=False, input_size=1,
    ...                        state_size=1)[0]
    >>> w.tolist(), r.tolist(), b.tolist()  # flat: W_r W_z W_n, R_r R_z R_n, bW..., bR...
    ([[[1], [0], [2]]], [[[4], [3], [5]]], [[7, 6, 8, 10, 9, 11]])
"""

from __future__ import annotations

import numpy as np

from ..base import MXNetError
from ..ops.rnn import GATES
from .converters import converts

__all__ = ["gate_indices"]

#: ONNX's gate k is MXNet's gate ``ONNX_GATE_ORDER[mode][k]``
ONNX_GATE_ORDER = {"lstm": (0, 3, 1, 2), "gru": (1, 0, 2), "rnn_tanh": (0,), "rnn_relu": (0,)}

_ONNX_OP = {"lstm": "LSTM", "gru": "GRU", "rnn_tanh": "RNN", "rnn_relu": "RNN"}

_INT32 = 6  # ONNX TensorProto.INT32


# -- MXNet's flat parameters as ONNX's W, R, B ------------------------------------------------

def _block(offset, rows, cols, order, hidden):
    """Indices of a (rows, cols) row-major block at ``offset``, its gate blocks in ONNX order."""
    index = offset + np.arange(rows * cols, dtype=np.int64).reshape(len(order), hidden, cols)
    return index[list(order)].reshape(rows, cols)


def gate_indices(mode, num_layers, bidirectional, input_size, state_size):
    """Per layer, ``(W, R, B)`` int64 index arrays into MXNet's flat ``parameters`` vector,
    shaped as ONNX's ``W`` (D, G*H, I), ``R`` (D, G*H, H) and ``B`` (D, 2*G*H), gates in
    ONNX's order (``flat[W]`` is the ONNX tensor).

    Example:
        >>> [w.shape for w, _, _ in gate_indices("lstm", 2, True, 3, 4)]
        [(2, 16, 3), (2, 16, 8)]
    """
    dirs, hidden, order = 2 if bidirectional else 1, state_size, ONNX_GATE_ORDER[mode]
    rows = GATES[mode] * hidden
    offset, weights = 0, []
    for layer in range(num_layers):
        inputs = input_size if layer == 0 else dirs * hidden
        w, r = [], []
        for _ in range(dirs):
            w.append(_block(offset, rows, inputs, order, hidden))
            offset += rows * inputs
            r.append(_block(offset, rows, hidden, order, hidden))
            offset += rows * hidden
        weights.append((np.stack(w), np.stack(r)))
    layers = []
    for w, r in weights:
        b = []
        for _ in range(dirs):
            b.append(np.concatenate([_block(offset, rows, 1, order, hidden).ravel(),
                                     _block(offset + rows, rows, 1, order, hidden).ravel()]))
            offset += 2 * rows
        layers.append((w, r, np.stack(b)))
    return layers


def _constant(ctx, entry):
    """The value of ``entry`` when it is computed from parameters only (through reshapes and
    concatenations), else None."""
    node = entry.node
    if node.is_variable:
        value = ctx.params.get(node.name)
        return None if value is None else np.asarray(value)
    name = node.op.name
    if name in ("Reshape", "reshape", "Flatten", "_copy", "identity"):
        value = _constant(ctx, node.inputs[0])
        return None if value is None else value.reshape(ctx.shape_of(entry))
    if name in ("_rnn_param_concat", "Concat"):
        values = [_constant(ctx, e) for e in node.inputs]
        if any(v is None for v in values):
            return None
        return np.concatenate(values, axis=int(node.attrs.get("dim", 1)))
    return None


def _layer_weights(ctx, node, flat_name, geometry):
    """Per layer the ONNX names of W, R and B: initializers when the parameters are constant,
    else ``Gather`` nodes over the flat tensor."""
    mode, layers, dirs, input_size, hidden = geometry
    indices = gate_indices(mode, layers, dirs == 2, input_size, hidden)
    flat = _constant(ctx, node.inputs[1])
    names = []
    for layer, arrays in enumerate(indices):
        layer_names = []
        for kind, index in zip("WRB", arrays):
            hint = f"{node.name}_l{layer}_{kind}"
            if flat is not None:
                layer_names.append(ctx.const(flat.reshape(-1)[index], hint))
                continue
            gathered = ctx.temp(hint)
            ctx.add("Gather", [flat_name, ctx.const(index, f"{hint}_indices")], [gathered],
                    axis=0)
            layer_names.append(gathered)
        names.append(layer_names)
    return names


# -- the RNN op -------------------------------------------------------------------------------

def _check_supported(node):
    a = node.attrs
    if a.get("lstm_state_clip_min") is not None or a.get("lstm_state_clip_max") is not None:
        raise MXNetError(f"ONNX export: RNN {node.name!r}: lstm_state_clip_min/max (a clip of "
                         f"the cell state) has no ONNX equivalent (ONNX's clip bounds the "
                         f"gates' inputs)")
    if a.get("projection_size"):
        raise MXNetError(f"ONNX export: RNN {node.name!r}: projection_size is not supported")


def _state_rows(ctx, node, state, layer, dirs, layers):
    """Layer ``layer``'s rows (D, N, H) of a (L*D, N, H) initial state."""
    if layers == 1:
        return state
    hint = f"{node.name}_l{layer}"
    rows = ctx.temp(f"{hint}_initial_state")
    ctx.add("Slice", [state, ctx.const(np.array([layer * dirs], np.int64), f"{hint}_starts"),
                      ctx.const(np.array([(layer + 1) * dirs], np.int64), f"{hint}_ends"),
                      ctx.const(np.array([0], np.int64), f"{hint}_axes")], [rows])
    return rows


def _merge_directions(ctx, node, y, dirs, out):
    """ONNX's Y (T, D, N, H) as MXNet's output (T, N, D*H), named ``out``."""
    if dirs == 1:
        ctx.add("Squeeze", [y, ctx.const(np.array([1], np.int64), f"{y}_axes")], [out])
        return
    moved = ctx.temp(f"{y}_tndh")
    ctx.add("Transpose", [y], [moved], perm=[0, 2, 1, 3])
    ctx.add("Reshape", [moved, ctx.const(np.array([0, 0, -1], np.int64), f"{y}_shape")], [out])


def _op_attrs(mode, dirs, hidden):
    attrs = {"hidden_size": hidden, "direction": "bidirectional" if dirs == 2 else "forward"}
    if mode == "gru":
        attrs["linear_before_reset"] = 1
    elif mode in ("rnn_tanh", "rnn_relu"):
        attrs["activations"] = ["Tanh" if mode == "rnn_tanh" else "Relu"] * dirs
    return attrs


def _state_outputs(ctx, per_layer, outs):
    """Join the layers' final states (D, N, H) into MXNet's (L*D, N, H) outputs."""
    for k, names in enumerate(per_layer):
        if len(names) > 1:
            ctx.add("Concat", names, [outs[k]], axis=0)


@converts("RNN")
def _rnn(ctx, node, ins, outs):
    _check_supported(node)
    a = node.attrs
    mode, layers, hidden = a["mode"], int(a["num_layers"]), int(a["state_size"])
    dirs, lstm = 2 if a["bidirectional"] else 1, a["mode"] == "lstm"
    input_size = ctx.shape_of(node.inputs[0])[2]
    weights = _layer_weights(ctx, node, ins[1], (mode, layers, dirs, input_size, hidden))
    states = ins[2:4] if lstm else ins[2:3]
    lengths = ""
    if a.get("use_sequence_length"):
        lengths = ctx.temp(f"{node.name}_sequence_lens")
        ctx.add("Cast", [ins[-1]], [lengths], to=_INT32)
    n_states = len(states)
    finals = [[] for _ in range(n_states)]
    x = ins[0]
    for layer in range(layers):
        last = layer == layers - 1
        y = ctx.temp(f"{node.name}_l{layer}_y")
        state_outs = [outs[1 + k] if layers == 1 else ctx.temp(f"{node.name}_l{layer}_s{k}")
                      for k in range(n_states)]
        initial = [_state_rows(ctx, node, s, layer, dirs, layers) for s in states]
        ctx.add(_ONNX_OP[mode], [x, *weights[layer], lengths, *initial], [y, *state_outs],
                **_op_attrs(mode, dirs, hidden))
        for k, name in enumerate(state_outs):
            finals[k].append(name)
        x = outs[0] if last else ctx.temp(f"{node.name}_l{layer}_out")
        _merge_directions(ctx, node, y, dirs, x)
    _state_outputs(ctx, finals, outs[1:])


@converts("_rnn_param_concat")
def _param_concat(ctx, node, ins, outs):
    ctx.add("Concat", ins, outs, axis=int(node.attrs.get("dim", 1)))


@converts("SwapAxis")
def _swap_axis(ctx, node, ins, outs):
    perm = list(range(len(ctx.shape_of(node.inputs[0]))))
    d1, d2 = int(node.attrs.get("dim1", 0)), int(node.attrs.get("dim2", 0))
    perm[d1], perm[d2] = perm[d2], perm[d1]
    ctx.add("Transpose", ins, outs, perm=perm)


# -- the zero states of a symbolic call -------------------------------------------------------

@converts("zeros_like", "ones_like", "_zeros", "_ones", "_full")
def _filled(ctx, node, ins, outs):
    """Shapes are fixed at export: a filled tensor is a constant of the inferred shape."""
    name = node.op.name
    value = 0.0 if "zeros" in name else 1.0 if "ones" in name else float(node.attrs["value"])
    array = np.full(ctx.shape_of((node, 0)), value, ctx.dtype_of((node, 0)))
    ctx.add("Identity", [ctx.const(array, f"{node.name}_value")], outs)


@converts("broadcast_axis")
def _broadcast_axis(ctx, node, ins, outs):
    shape = ctx.const(np.array(ctx.shape_of((node, 0)), np.int64), f"{node.name}_shape")
    ctx.add("Expand", [ins[0], shape], outs)
