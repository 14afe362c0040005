"""The fused recurrent op ``RNN`` (modes ``rnn_relu``, ``rnn_tanh``, ``lstm``, ``gru``; stacked
layers, bidirectional, dropout between layers), its hidden backward op ``_backward_RNN``, and
``_rnn_param_concat`` (the Concat that Gluon's RNN layers write to JSON).

Layout (MXNet's, which is cuDNN's): ``data`` is (T, N, I); ``state`` and ``state_cell`` are
(layers * directions, N, H); ``parameters`` is one flat vector holding first every weight, then
every bias: for each layer, for each direction (left to right first), ``i2h`` then ``h2h``. A
weight is (gates * H, inputs) with the gates in MXNet's order: LSTM ``i, f, g, o``, GRU
``r, z, n``. GRU applies the reset gate after the hidden product, as cuDNN does:
``n = tanh(Wx + bx + r * (Wh h + bh))``. With ``use_sequence_length`` a fifth input
``sequence_length`` (N,) gives each sequence's valid length, with cuDNN's results: padded steps
output zeros and leave the states alone, and the backward direction starts at each sequence's
own last step (MXNet's CPU kernel ignores the lengths, and the LSTM state clip too).

Outputs: ``output`` (T, N, directions * H), then (with ``state_outputs``) ``state_output`` and
for LSTM ``statecell_output``; one hidden output (``reserve``) keeps the dropout masks so the
backward pass sees the same ones. ``_backward_RNN`` runs the forward pass again, keeping the
gate activations, then backpropagates through time; ``tests/op_cases/rnn.py`` checks it
against finite differences in float64.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> rnn = ops.get("RNN")
    >>> attrs = rnn.parse_attrs({"state_size": 4, "num_layers": 1, "mode": "lstm"})
    >>> rnn.infer_shape(attrs, [(5, 2, 3), None, None, None])[0]
    [(5, 2, 3), (144,), (1, 2, 4), (1, 2, 4)]
    >>> x, p, s = np.ones((5, 2, 3)), np.zeros(144), np.zeros((1, 2, 4))
    >>> out = rnn.compute(np, x, p, s, s, **attrs, rng=None, is_train=False)
    >>> out[0].shape, float(out[0].sum())
    ((5, 2, 4), 0.0)
"""

from __future__ import annotations

from ..base import MXNetError
from .attrs import Bool, Enum, Float, Int
from .join import _concat_compute, _concat_grad, _concat_rule
from .opdef import OpDef, register
from .rules import check_float

__all__ = ["GATES", "param_size"]

#: gates per mode: how many (H, ...) blocks each weight stacks
GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


# -- the flat parameter vector ----------------------------------------------------------------

def _geometry(attrs):
    """``(layers, directions, hidden, gates)`` from checked attributes."""
    layers, hidden = attrs["num_layers"], attrs["state_size"]
    if layers < 1 or hidden < 1:
        raise MXNetError(f"RNN: num_layers ({layers}) and state_size ({hidden}) must be "
                         "positive")
    if attrs.get("projection_size"):
        raise MXNetError("RNN: projection_size (LSTM projection) is not supported; leave it "
                         "None")
    return layers, 2 if attrs["bidirectional"] else 1, hidden, GATES[attrs["mode"]]


def param_size(mode, num_layers, input_size, state_size, bidirectional=False):
    """Length of the flat ``parameters`` vector of an ``RNN`` op.

    Example:
        >>> param_size("lstm", 1, 3, 4)
        144
        >>> param_size("gru", 2, 5, 3, bidirectional=True)
        378
    """
    dirs, gates = 2 if bidirectional else 1, GATES[mode]
    total = 0
    for layer in range(num_layers):
        inputs = input_size if layer == 0 else dirs * state_size
        total += dirs * gates * state_size * (inputs + state_size + 2)
    return total


def _unpack(params, attrs, input_size):
    """Views ``[(i2h_weight, h2h_weight, i2h_bias, h2h_bias)]`` into ``params``, one per
    (layer, direction) in MXNet's order."""
    layers, dirs, hidden, gates = _geometry(attrs)
    rows = gates * hidden
    weights, offset = [], 0
    for layer in range(layers):
        inputs = input_size if layer == 0 else dirs * hidden
        for _ in range(dirs):
            wi = params[offset:offset + rows * inputs].reshape(rows, inputs)
            offset += rows * inputs
            wh = params[offset:offset + rows * hidden].reshape(rows, hidden)
            offset += rows * hidden
            weights.append([wi, wh])
    for entry in weights:
        entry.append(params[offset:offset + rows])
        entry.append(params[offset + rows:offset + 2 * rows])
        offset += 2 * rows
    return [tuple(w) for w in weights]


# -- one step of one cell ---------------------------------------------------------------------

def _sigmoid(xp, x):
    return 0.5 * (xp.tanh(0.5 * x) + 1.0)  # no overflow warning for large |x|


def _step(xp, mode, px, h, c, wh, bh, clip):
    """One time step: ``px`` is the input's product (N, gates*H) with its bias. Returns
    ``(h, c, cache)``; ``cache`` is what ``_step_back`` needs."""
    hh = h @ wh.T + bh
    if mode == "rnn_tanh":
        h_new = xp.tanh(px + hh)
        return h_new, None, (h, h_new)
    if mode == "rnn_relu":
        h_new = xp.maximum(px + hh, 0)
        return h_new, None, (h, h_new)
    hidden = h.shape[1]
    if mode == "lstm":
        a = px + hh
        i, f, o = (_sigmoid(xp, a[:, k * hidden:(k + 1) * hidden]) for k in (0, 1, 3))
        g = xp.tanh(a[:, 2 * hidden:3 * hidden])
        c_new = f * c + i * g
        kept = None
        if clip is not None:
            kept = (c_new >= clip[0]) & (c_new <= clip[1])
            c_new = xp.clip(c_new, clip[0], clip[1])
        tc = xp.tanh(c_new)
        return o * tc, c_new, (h, c, i, f, g, o, tc, kept)
    r = _sigmoid(xp, px[:, :hidden] + hh[:, :hidden])
    z = _sigmoid(xp, px[:, hidden:2 * hidden] + hh[:, hidden:2 * hidden])
    hn = hh[:, 2 * hidden:]
    n = xp.tanh(px[:, 2 * hidden:] + r * hn)
    return (1 - z) * n + z * h, None, (h, r, z, n, hn)


def _step_back(xp, mode, dh, dc, cache, wh):
    """Gradients of one step: ``(d input product, d hidden product, dh_prev, dc_prev)``."""
    if mode in ("rnn_tanh", "rnn_relu"):
        h_prev, h_new = cache
        da = dh * (1 - h_new * h_new) if mode == "rnn_tanh" else dh * (h_new > 0)
        return da, da, da @ wh, None
    if mode == "lstm":
        h_prev, c_prev, i, f, g, o, tc, kept = cache
        do = dh * tc
        dc = dc + dh * o * (1 - tc * tc)
        if kept is not None:
            dc = dc * kept
        da = xp.concatenate([dc * g * i * (1 - i), dc * c_prev * f * (1 - f),
                             dc * i * (1 - g * g), do * o * (1 - o)], axis=1)
        return da, da, da @ wh, dc * f
    h_prev, r, z, n, hn = cache
    dn = dh * (1 - z) * (1 - n * n)
    dr = dn * hn * r * (1 - r)
    dz = dh * (h_prev - n) * z * (1 - z)
    dpx = xp.concatenate([dr, dz, dn], axis=1)
    dhh = xp.concatenate([dr, dz, dn * r], axis=1)
    return dpx, dhh, dhh @ wh + dh * z, None


# -- one direction of one layer ---------------------------------------------------------------

def _times(steps, reverse):
    return range(steps - 1, -1, -1) if reverse else range(steps)


class _Lengths:
    """Valid lengths per sequence (``use_sequence_length``): ``active`` (T, N, 1) is 1 on the
    steps inside each sequence; ``reverse`` flips each sequence within its length (its own
    inverse), which is how the backward direction reads a padded batch."""

    def __init__(self, xp, lengths, steps, dtype):
        t = xp.arange(steps)[:, None]
        lens = xp.clip(lengths.astype("int64"), 0, steps)[None, :]
        self.active = (t < lens)[:, :, None].astype(dtype)
        self._flip = xp.where(t < lens, lens - 1 - t, t)
        self._cols = xp.arange(lengths.shape[0])[None, :]

    def reverse(self, a):
        return a[self._flip, self._cols]


def _run_direction(xp, mode, x, weights, h, c, reverse, clip, active=None):
    """Run one direction over ``x`` (T, N, I): ``(outputs (T, N, H), h, c, caches)``. With
    ``active``, padded steps output zeros and carry the states through unchanged."""
    wi, wh, bi, bh = weights
    steps, batch = x.shape[:2]
    px = (x.reshape(steps * batch, -1) @ wi.T + bi).reshape(steps, batch, -1)
    ys = xp.empty((steps, batch, wh.shape[1]), dtype=x.dtype)
    caches = [None] * steps
    for t in _times(steps, reverse):
        h_new, c_new, caches[t] = _step(xp, mode, px[t], h, c, wh, bh, clip)
        if active is None:
            h, c = h_new, c_new
            ys[t] = h
            continue
        a = active[t]
        ys[t] = h_new * a
        h = h_new * a + h * (1 - a)
        c = None if c is None else c_new * a + c * (1 - a)
    return ys, h, c, caches


def _back_direction(xp, mode, x, weights, dys, dh, dc, caches, reverse, active=None):
    """Backpropagate one direction: ``(dx, [dwi, dwh, dbi, dbh], dh0, dc0)``."""
    wi, wh, _, _ = weights
    steps, batch = x.shape[:2]
    dpx = xp.empty((steps, batch, wi.shape[0]), dtype=x.dtype)
    dwh, dbh = xp.zeros_like(wh), xp.zeros(wh.shape[0], dtype=x.dtype)
    for t in _times(steps, not reverse):
        g, g_c = dh + dys[t], dc
        if active is not None:  # padded steps pass dh and dc straight to the previous step
            a = active[t]
            g, g_c = g * a, None if dc is None else dc * a
        dpx[t], dhh, dh_prev, dc_prev = _step_back(xp, mode, g, g_c, caches[t], wh)
        dwh += dhh.T @ caches[t][0]
        dbh += dhh.sum(axis=0)
        if active is not None:
            dh_prev = dh_prev + dh * (1 - a)
            dc_prev = None if dc is None else dc_prev + dc * (1 - a)
        dh, dc = dh_prev, dc_prev
    flat = dpx.reshape(steps * batch, -1)
    dx = (flat @ wi).reshape(x.shape)
    return dx, [flat.T @ x.reshape(steps * batch, -1), dwh, flat.sum(axis=0), dbh], dh, dc


# -- the whole stack --------------------------------------------------------------------------

def _clip(attrs):
    low, high = attrs["lstm_state_clip_min"], attrs["lstm_state_clip_max"]
    if (low is None) != (high is None):
        raise MXNetError("RNN: lstm_state_clip_min and lstm_state_clip_max must be given "
                         f"together, got min={low}, max={high}")
    if low is None or attrs["mode"] != "lstm":
        return None
    if low > high:
        raise MXNetError(f"RNN: lstm_state_clip_min ({low}) is larger than "
                         f"lstm_state_clip_max ({high})")
    return low, high


def _check_arrays(data, params, state, cell, attrs):
    layers, dirs, hidden, _ = _geometry(attrs)
    check_float("RNN", data, params, state)
    if data.ndim != 3:
        raise MXNetError(f"RNN: data must be (seq_len, batch, input_size), got shape "
                         f"{tuple(data.shape)}")
    want = param_size(attrs["mode"], layers, data.shape[2], hidden, dirs == 2)
    if tuple(params.shape) != (want,):
        raise MXNetError(f"RNN: parameters has shape {tuple(params.shape)}, expected ({want},) "
                         f"for mode={attrs['mode']!r}, num_layers={layers}, input size "
                         f"{data.shape[2]}, state_size={hidden}, bidirectional={dirs == 2}")
    shape = (layers * dirs, data.shape[1], hidden)
    for name, arr in (("state", state), ("state_cell", cell)):
        if arr is not None and tuple(arr.shape) != shape:
            raise MXNetError(f"RNN: {name} has shape {tuple(arr.shape)}, expected {shape} "
                             "(num_layers * directions, batch, state_size)")


def _check_lengths(data, lengths):
    if lengths is not None and tuple(lengths.shape) != (data.shape[1],):
        raise MXNetError(f"RNN: sequence_length has shape {tuple(lengths.shape)}, expected "
                         f"({data.shape[1]},): one length per sequence of the batch")


def _dropout_mask(xp, y, p, rng, is_train):
    if not is_train:
        return xp.ones_like(y)
    keep = rng.uniform(0.0, 1.0, size=y.shape) >= p
    return (keep * (1.0 / (1.0 - p) if p < 1 else 0.0)).astype(y.dtype)


def _forward(xp, data, params, state, cell, lengths, attrs, masks=None, rng=None,
             is_train=False):
    """``(output, hy, cy, masks, caches)``; draws new dropout masks unless ``masks`` given.
    With ``lengths`` (a ``_Lengths``), padded steps give zeros and leave the states alone."""
    _check_arrays(data, params, state, cell, attrs)
    layers, dirs, _, _ = _geometry(attrs)
    mode, clip, p = attrs["mode"], _clip(attrs), attrs["p"]
    weights = _unpack(params, attrs, data.shape[2])
    active = None if lengths is None else lengths.active
    hy = xp.empty_like(state)
    cy = xp.empty_like(cell) if cell is not None else None
    x, caches, drawn = data, [], []
    for layer in range(layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            flip = d == 1 and lengths is not None  # reverse each sequence within its length
            xin = lengths.reverse(x) if flip else x
            y, hy[k], c, cache = _run_direction(xp, mode, xin, weights[k], state[k],
                                                None if cell is None else cell[k],
                                                d == 1 and not flip, clip, active)
            if cy is not None:
                cy[k] = c
            outs.append(lengths.reverse(y) if flip else y)
            caches.append((xin, cache))
        y = outs[0] if dirs == 1 else xp.concatenate(outs, axis=2)
        if layer < layers - 1 and p > 0:
            mask = masks[layer] if masks is not None else _dropout_mask(xp, y, p, rng, is_train)
            drawn.append(mask)
            y = y * mask
        x = y
    return x, hy, cy, drawn, caches


def _reserve_shape(attrs, steps, batch, width):
    """Shape of the hidden output that keeps the dropout masks ((1,) when there are none)."""
    if attrs["p"] > 0 and attrs["num_layers"] > 1:
        return (attrs["num_layers"] - 1, steps, batch, width)
    return (1,)


def _named_inputs(names, arrays):
    """``{input name: array}`` (absent optional inputs map to None)."""
    got = dict(zip(names, arrays))
    return lambda name: got.get(name)


def _lengths_of(xp, data, lengths):
    _check_lengths(data, lengths)
    return None if lengths is None else _Lengths(xp, lengths, data.shape[0], data.dtype)


def _rnn_compute(xp, *arrays, rng=None, is_train=False, **attrs):
    arg = _named_inputs(_rnn_inputs(attrs), arrays)
    data = arg("data")
    out, hy, cy, masks, _ = _forward(xp, data, arg("parameters"), arg("state"),
                                     arg("state_cell"), _lengths_of(xp, data, arg(
                                         "sequence_length")), attrs, rng=rng,
                                     is_train=is_train)
    reserve = xp.stack(masks) if masks else xp.zeros((1,), dtype=data.dtype)
    return (out, hy) + ((cy,) if cy is not None else ()) + (reserve,)


def _back_layer(xp, attrs, layer, dy, arg, caches, weights, lengths, grads):
    """Backpropagate layer ``layer`` (every direction) given ``dy``; writes into ``grads``
    (``[dparams views, dstate, dcell]``) and returns the gradient of the layer's input."""
    dweights, dstate, dcell = grads
    dirs, hidden = 2 if attrs["bidirectional"] else 1, attrs["state_size"]
    active = None if lengths is None else lengths.active
    dcy = arg("statecell_grad")
    dx = None
    for d in range(dirs):
        k = layer * dirs + d
        x, cache = caches[k]
        flip = d == 1 and lengths is not None
        dy_d = dy[:, :, d * hidden:(d + 1) * hidden]
        dxd, dws, dstate[k], dc = _back_direction(
            xp, attrs["mode"], x, weights[k], lengths.reverse(dy_d) if flip else dy_d,
            arg("state_grad")[k], None if dcy is None else dcy[k], cache, d == 1 and not flip,
            active)
        for target, grad in zip(dweights[k], dws):
            target[...] = grad
        if dcell is not None:
            dcell[k] = dc
        dxd = lengths.reverse(dxd) if flip else dxd
        dx = dxd if dx is None else dx + dxd
    return dx


def _backward_compute(xp, *arrays, **attrs):
    arg = _named_inputs(_backward_inputs(attrs), arrays)
    data, params, state, cell = arg("data"), arg("parameters"), arg("state"), arg("state_cell")
    reserve = arg("reserve")
    lengths = _lengths_of(xp, data, arg("sequence_length"))
    kept = [reserve[i] for i in range(reserve.shape[0])] if reserve.ndim == 4 else None
    _, _, _, masks, caches = _forward(xp, data, params, state, cell, lengths, attrs,
                                      masks=kept)
    dparams = xp.zeros_like(params)
    grads = [_unpack(dparams, attrs, data.shape[2]), xp.empty_like(state),
             None if cell is None else xp.empty_like(cell)]
    weights = _unpack(params, attrs, data.shape[2])
    dy = arg("out_grad")
    for layer in range(attrs["num_layers"] - 1, -1, -1):
        if layer < attrs["num_layers"] - 1 and masks:
            dy = dy * masks[layer]
        dy = _back_layer(xp, attrs, layer, dy, arg, caches, weights, lengths, grads)
    return (dy, dparams, grads[1]) + ((grads[2],) if cell is not None else ())


# -- shapes, types, gradient ------------------------------------------------------------------

def _rnn_inputs(attrs):
    names = ["data", "parameters", "state"]
    if attrs["mode"] == "lstm":
        names.append("state_cell")
    if attrs["use_sequence_length"]:
        names.append("sequence_length")
    return tuple(names)


def _rnn_shape(attrs, in_shapes):
    layers, dirs, hidden, _ = _geometry(attrs)
    data, state = in_shapes[0], in_shapes[2]
    ins = list(in_shapes)
    batch = (data[1] if data is not None and len(data) == 3 else 0) or (
        state[1] if state is not None and len(state) == 3 else 0)
    if data is not None and len(data) != 3:
        raise MXNetError(f"data must be (seq_len, batch, input_size), got shape {data}")
    if data is not None and data[2]:
        ins[1] = (param_size(attrs["mode"], layers, data[2], hidden, dirs == 2),)
        if in_shapes[1] is not None and tuple(in_shapes[1]) not in ((0,), ins[1]):
            raise MXNetError(f"parameters has shape {in_shapes[1]}, expected {ins[1]} for "
                             f"input size {data[2]}")
    n_states = 2 if attrs["mode"] == "lstm" else 1
    state_shape = (layers * dirs, batch, hidden)
    for i in range(2, 2 + n_states):
        given = in_shapes[i]
        # a batch of 0 is unknown (MXNet's symbolic begin_state: _zeros of (L*D, 0, H))
        if given is not None and (len(given) != 3 or given[0] != state_shape[0]
                                  or given[2] != hidden
                                  or (batch and given[1] and given[1] != batch)):
            raise MXNetError(f"{_rnn_inputs(attrs)[i]} has shape {given}, expected "
                             f"{state_shape} (num_layers * directions, batch, state_size)")
        ins[i] = state_shape
    if attrs["use_sequence_length"]:
        ins[-1] = (batch,)
    if data is None:
        return ins, [None] * (2 + n_states)
    out = (data[0], batch, dirs * hidden)
    reserve = _reserve_shape(attrs, data[0], batch, dirs * hidden)
    return ins, [out] + [state_shape] * n_states + [reserve]


def _rnn_type(attrs, in_types):
    n = 4 if attrs["mode"] == "lstm" else 3  # float inputs; as many outputs
    dtype = next((t for t in in_types[:n] if t is not None), None)
    return [dtype] * n + list(in_types[n:]), [dtype] * n


def _rnn_grad(F, ins, outs, gouts, **attrs):
    n_states = 2 if attrs["mode"] == "lstm" else 1
    heads = [F.zeros_like(o) if g is None else g
             for o, g in zip(outs[:1 + n_states], gouts[:1 + n_states])]
    values = [*ins, *heads, outs[-1]]
    grads = F._backward_RNN(**dict(zip(_backward_inputs(attrs), values)), **attrs)
    return list(grads) + [None] * (len(ins) - 2 - n_states)  # no sequence_length gradient


_RNN_ATTRS = {
    "state_size": Int(doc="hidden units per layer (H)"),
    "num_layers": Int(doc="number of stacked layers"),
    "bidirectional": Bool(default=False, doc="run each layer in both directions"),
    "mode": Enum(tuple(GATES), doc="the recurrence: rnn_relu, rnn_tanh, lstm or gru"),
    "p": Float(default=0.0, doc="dropout rate on the outputs of every layer but the last "
                                "(train mode)"),
    "state_outputs": Bool(default=False, doc="also output the final states"),
    "projection_size": Int(default=None, doc="LSTM projection; not supported (None)"),
    "lstm_state_clip_min": Float(default=None, doc="clip the LSTM cell state from below"),
    "lstm_state_clip_max": Float(default=None, doc="clip the LSTM cell state from above"),
    "lstm_state_clip_nan": Bool(default=False, doc="accepted; clipping never makes NaN here"),
    "use_sequence_length": Bool(default=False, doc="take sequence_length (N,): steps past "
                                                    "each length give zeros, keep the states"),
}


def _visible(attrs):
    if not attrs["state_outputs"]:
        return 1
    return 3 if attrs["mode"] == "lstm" else 2


def _output_names(attrs):
    states = ("state_output", "statecell_output")[:2 if attrs["mode"] == "lstm" else 1]
    return ("output", *states, "reserve")


register(OpDef(
    "RNN", inputs=("data", "parameters", "state", "state_cell", "sequence_length"),
    input_filter=_rnn_inputs, attrs=_RNN_ATTRS, compute=_rnn_compute, infer_shape=_rnn_shape,
    infer_type=_rnn_type, grad=_rnn_grad,
    num_outputs=lambda a: 4 if a["mode"] == "lstm" else 3, num_visible_outputs=_visible,
    output_names=_output_names, nondiff_inputs=("sequence_length",), random=True,
    mode_dependent=True,
    doc="Stacked (optionally bidirectional) vanilla RNN, LSTM or GRU over a (T, N, I) "
        "sequence, with every weight and bias in one flat parameters vector (MXNet's layout).",
    example="nd.RNN(x, params, h0, state_size=4, num_layers=1, mode='gru').shape  "
            "# (T, N, 4)"))


def _backward_inputs(attrs):
    lstm = attrs["mode"] == "lstm"
    heads = ("out_grad", "state_grad", "statecell_grad") if lstm else ("out_grad", "state_grad")
    return (*_rnn_inputs(attrs), *heads, "reserve")


def _backward_shape(attrs, in_shapes):
    n_fwd, n_grads = len(_rnn_inputs(attrs)), 4 if attrs["mode"] == "lstm" else 3
    fwd_ins, _ = _rnn_shape(attrs, list(in_shapes[:n_fwd]))
    return fwd_ins + list(in_shapes[n_fwd:]), fwd_ins[:n_grads]


register(OpDef(
    "_backward_RNN",
    # the inputs every mode has first, so positional calls of a GRU or RNN bind right
    inputs=("data", "parameters", "state", "out_grad", "state_grad", "reserve", "state_cell",
            "statecell_grad", "sequence_length"),
    nondiff_inputs=("sequence_length",),
    input_filter=_backward_inputs, attrs=_RNN_ATTRS, compute=_backward_compute,
    infer_shape=_backward_shape,
    num_outputs=lambda a: 4 if a["mode"] == "lstm" else 3,
    doc="Gradients (data, parameters, state[, state_cell]) of RNN by backpropagation through "
        "time, from the output and final-state gradients and the forward's dropout masks.",
    example="dx, dparams, dstate = nd._backward_RNN(x, params, h0, dy, dhy, reserve, ...)"))


# -- _rnn_param_concat ------------------------------------------------------------------------

def _param_concat_compute(xp, *arrays, dim=1, num_args=None):
    return _concat_compute(xp, *arrays, dim=dim, num_args=num_args)


register(OpDef(
    "_rnn_param_concat", variadic=True,
    attrs={"dim": Int(default=1, doc="the axis to join along")},
    compute=_param_concat_compute, infer_shape=_concat_rule, grad=_concat_grad,
    doc="Concat as Gluon's RNN layers write it to JSON: the flattened weights and biases "
        "joined into RNN's one parameters vector.",
    example="nd._internal._rnn_param_concat(nd.zeros(3), nd.zeros(2), dim=0).shape  # (5,)"))
