"""Cases for ``ops/rnn.py``: the fused ``RNN`` op in every mode (stacked, bidirectional, with
initial states, with dropout in train mode), against a plain NumPy reference written gate by gate
here, and ``_rnn_param_concat``. The gradient cases check ``_backward_RNN`` (backpropagation
through time) against finite differences in float64."""

from __future__ import annotations

import numpy as np

from op_harness import OpCase

#: ``use_sequence_length`` cases of modes without ``state_cell``: ``nd.RNN`` binds a 4th
#: positional input to ``state_cell``, so ``tests/test_gluon_rnn.py`` runs these through the
#: harness's checks that pass inputs by name.
LENGTH_CASES = []  # filled below


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


def rnn_reference_lengths(data, params, state, state_cell=None, sequence_length=None, *,
                          state_outputs=False, **attrs):
    """The RNN op with ``use_sequence_length``: each sequence run alone on its valid steps;
    the padded steps of the output are zeros."""
    out = np.zeros((data.shape[0], data.shape[1], 0), dtype=data.dtype)
    outs, hys, cys = [], [], []
    for n, length in enumerate(sequence_length.astype(int)):
        cell = None if state_cell is None else state_cell[:, n:n + 1]
        got = rnn_reference(data[:length, n:n + 1], params, state[:, n:n + 1], cell,
                            state_outputs=True, **attrs)
        padded = np.zeros((data.shape[0], 1, got[0].shape[2]), dtype=data.dtype)
        padded[:length] = got[0]
        outs.append(padded)
        hys.append(got[1])
        cys.append(got[2] if cell is not None else None)
    out = np.concatenate(outs, axis=1)
    if not state_outputs:
        return out
    result = (out, np.concatenate(hys, axis=1))
    return result + ((np.concatenate(cys, axis=1),) if state_cell is not None else ())


def _lengths_case(mode, lengths, **kwargs):
    """``use_sequence_length``: sequence_length is a float vector of lengths (MXNet takes any
    dtype); inputs are drawn as for ``_case``, the lengths appended."""
    case = _case(mode, batch=len(lengths), steps=max(lengths) + 1, **kwargs)
    shapes = case.shapes

    def make(rng, dtype):
        arrays = [rng.uniform(-1.0, 1.0, size=s).astype(dtype) for s in shapes]
        return arrays + [np.array(lengths, dtype=dtype)]

    case.shapes, case.make = [], make
    case.attrs = {**case.attrs, "use_sequence_length": True}
    case.ref, case.id = rnn_reference_lengths, case.id + "-lengths"
    return case


def _backward_reference(data, parameters, state, out_grad, state_grad, reserve, **attrs):
    """``_backward_RNN`` by central differences of the reference (float64), no dropout."""
    inputs = [a.astype(np.float64) for a in (data, parameters, state)]
    heads = (out_grad.astype(np.float64), state_grad.astype(np.float64))

    def objective(values):
        out, hy = rnn_reference(*values, **{**attrs, "state_outputs": True})
        return float((out * heads[0]).sum() + (hy * heads[1]).sum())

    grads = []
    for k, array in enumerate(inputs):
        grad = np.zeros_like(array)
        for idx in np.ndindex(array.shape):
            moved = [a.copy() for a in inputs]
            moved[k][idx] += 1e-6
            up = objective(moved)
            moved[k][idx] -= 2e-6
            grad[idx] = (up - objective(moved)) / 2e-6
        grads.append(grad.astype(data.dtype))
    return tuple(grads)


def _backward_case():
    """The hidden backward op on its own: a bidirectional GRU's gradients against finite
    differences of the reference."""
    shapes = [(3, 2, 2), (_size("gru", 1, 2, 2, 2),), (2, 2, 2), (3, 2, 4), (2, 2, 2)]

    def make(rng, dtype):
        return [rng.uniform(-1, 1, size=s).astype(dtype) for s in shapes] + [
            np.zeros(1, dtype=dtype)]

    return OpCase("_backward_RNN", make=make, attrs={"state_size": 2, "num_layers": 1,
                                                     "mode": "gru", "bidirectional": True},
                  ref=_backward_reference, grad=False, dtypes=("float32",), rtol=1e-4,
                  atol=1e-5, id="gru-bi")


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
    _lengths_case("lstm", [3, 1, 4], layers=2, bidirectional=True),
    _backward_case(),
    OpCase("_rnn_param_concat", shapes=[(6,), (4,), (2,)], attrs={"dim": 0},
           ref=lambda *xs, dim: np.concatenate(xs, dim)),
]

LENGTH_CASES += [
    _lengths_case("gru", [2, 4], bidirectional=True),
    _lengths_case("rnn_tanh", [1, 3, 2], layers=2),
]
