"""Cases for ``ops/rnn.py``: the fused ``RNN`` op in every mode (stacked, bidirectional, with
initial states, with dropout in train mode), against a plain NumPy reference written gate by gate
here, and ``_rnn_param_concat``. The gradient cases check ``_backward_RNN`` (backpropagation
through time) against finite differences in float64."""

from __future__ import annotations

import numpy as np

from op_harness import OpCase

TESTED_ELSEWHERE = {
    "_backward_RNN": "the RNN gradient cases here (RNN's grad calls it)",
}

_GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def _split_params(params, mode, layers, dirs, input_size, hidden):
    """Per (layer, direction): (Wi, Wh, bi, bh), MXNet's flat order (all weights, then biases)."""
    rows, pos, weights = _GATES[mode] * hidden, 0, []
    for layer in range(layers):
        cols = input_size if layer == 0 else dirs * hidden
        for _ in range(dirs):
            wi = params[pos:pos + rows * cols].reshape(rows, cols)
            pos += rows * cols
            wh = params[pos:pos + rows * hidden].reshape(rows, hidden)
            pos += rows * hidden
            weights.append([wi, wh])
    for w in weights:
        w += [params[pos:pos + rows], params[pos + rows:pos + 2 * rows]]
        pos += 2 * rows
    assert pos == params.size
    return weights


def _cell(mode, x, h, c, wi, wh, bi, bh):
    """One step of one cell, textbook form; returns (h, c)."""
    gx, gh = wi @ x + bi, wh @ h + bh
    if mode == "rnn_tanh":
        return np.tanh(gx + gh), c
    if mode == "rnn_relu":
        return np.maximum(gx + gh, 0), c
    if mode == "lstm":
        i, f, g, o = np.split(gx + gh, 4)
        c = _sig(f) * c + _sig(i) * np.tanh(g)
        return _sig(o) * np.tanh(c), c
    xr, xz, xn = np.split(gx, 3)
    hr, hz, hn = np.split(gh, 3)
    r, z = _sig(xr + hr), _sig(xz + hz)
    n = np.tanh(xn + r * hn)
    return (1 - z) * n + z * h, c


def rnn_reference(data, params, state, state_cell=None, *, state_size, num_layers, mode,
                  bidirectional=False, state_outputs=False, **_):
    """The RNN op, one sample and one step at a time (no dropout)."""
    steps, batch, _ = data.shape
    dirs = 2 if bidirectional else 1
    weights = _split_params(params, mode, num_layers, dirs, data.shape[2], state_size)
    hy, cy = np.zeros_like(state), None if state_cell is None else np.zeros_like(state_cell)
    x = data
    for layer in range(num_layers):
        out = np.zeros((steps, batch, dirs * state_size), dtype=data.dtype)
        for d in range(dirs):
            k = layer * dirs + d
            for n in range(batch):
                h = state[k, n]
                c = None if state_cell is None else state_cell[k, n]
                for t in (range(steps - 1, -1, -1) if d else range(steps)):
                    h, c = _cell(mode, x[t, n], h, c, *weights[k])
                    out[t, n, d * state_size:(d + 1) * state_size] = h
                hy[k, n] = h
                if cy is not None:
                    cy[k, n] = c
        x = out
    if not state_outputs:
        return x
    return (x, hy) if cy is None else (x, hy, cy)


def _size(mode, layers, dirs, inputs, hidden):
    total = 0
    for layer in range(layers):
        cols = inputs if layer == 0 else dirs * hidden
        total += dirs * _GATES[mode] * hidden * (cols + hidden + 2)
    return total


def _case(mode, steps=3, batch=2, inputs=3, hidden=2, layers=1, bidirectional=False,
          state_outputs=True, **extra):
    dirs = 2 if bidirectional else 1
    shapes = [(steps, batch, inputs), (_size(mode, layers, dirs, inputs, hidden),),
              (layers * dirs, batch, hidden)]
    if mode == "lstm":
        shapes.append((layers * dirs, batch, hidden))
    attrs = {"state_size": hidden, "num_layers": layers, "mode": mode,
             "bidirectional": bidirectional, "state_outputs": state_outputs}
    tag = f"{mode}-L{layers}{'-bi' if bidirectional else ''}{'' if state_outputs else '-out'}"
    return OpCase("RNN", shapes=shapes, attrs=attrs, ref=rnn_reference, domain=(-1.0, 1.0),
                  id=tag, **extra)


def _dropout_case():
    """Dropout between layers in train mode: no NumPy reference (random), but the gradient
    check replays the same masks (the seed is reset for every evaluation)."""
    case = _case("lstm", layers=2, bidirectional=True, is_train=True)
    case.attrs = {**case.attrs, "p": 0.4}
    case.ref, case.id = None, "lstm-dropout"
    return case


CASES = [
    _case("rnn_tanh"),
    _case("rnn_relu", layers=2),
    _case("lstm"),
    _case("lstm", layers=2, bidirectional=True),
    _case("gru"),
    _case("gru", layers=2, bidirectional=True, state_outputs=False),
    _case("rnn_tanh", layers=3, bidirectional=True, hidden=3, inputs=2, steps=4),
    _dropout_case(),
    OpCase("_rnn_param_concat", shapes=[(6,), (4,), (2,)], attrs={"dim": 0},
           ref=lambda *xs, dim: np.concatenate(xs, dim)),
]
