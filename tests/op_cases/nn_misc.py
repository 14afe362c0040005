"""Cases for ``ops/nn_misc.py``: Dropout, Embedding, the softmax family, SoftmaxOutput,
softmax_cross_entropy and the sequence ops (SequenceMask, SequenceLast, SequenceReverse).

Dropout is random, so its cases have ``ref=None`` (the harness still checks dtypes, shapes and
the gradient ``out_grad * mask`` under a fixed seed); ``tests/test_norm_dropout.py`` checks its
statistics. SoftmaxOutput's gradient is not the derivative of its output (MXNet's cross-entropy
shortcut), so its cases have ``grad=False`` and the gradient is tested in
``tests/test_norm_dropout.py`` against the formula checked with MXNet 1.9.1.
"""

from __future__ import annotations

import numpy as np

from op_harness import OpCase

TESTED_ELSEWHERE = {
    "SoftmaxOutput": "tests/test_norm_dropout.py::test_softmax_output_gradient_* (its gradient "
                     "is MXNet's cross-entropy shortcut, not a derivative)",
}


# -- Dropout --------------------------------------------------------------------------------

def _dropout_cases():
    return [
        OpCase("Dropout", shapes=[(4, 5)], attrs={"p": 0.3}, is_train=True, id="train"),
        OpCase("Dropout", shapes=[(3, 4, 5)], attrs={"p": 0.5, "axes": (1,)}, is_train=True,
               id="shared-axis1"),
        OpCase("Dropout", shapes=[(3, 4, 5)], attrs={"p": 0.2, "axes": (0, 2)}, is_train=True,
               id="shared-axes02"),
        OpCase("Dropout", shapes=[(4, 5)], attrs={"p": 0.4, "mode": "always"}, id="always"),
        OpCase("Dropout", shapes=[(4, 5)], attrs={"p": 0.3}, ref=lambda x, **_: x,
               id="predict-identity"),
        OpCase("Dropout", shapes=[(4, 5)], attrs={"p": 0.0}, is_train=True,
               ref=lambda x, **_: x, id="p0-identity"),
    ]


# -- Embedding ------------------------------------------------------------------------------

def _emb_inputs(index_shape, input_dim, output_dim, index_dtype=None):
    """Indices in range plus out-of-range and fractional ones (MXNet truncates and clips)."""

    def make(rng, dtype):
        idx = rng.randint(0, input_dim, size=index_shape).astype(index_dtype or dtype)
        flat = idx.reshape(-1)
        if index_dtype is None:
            flat[:3] = [-2, input_dim + 3, input_dim - 1.5]
        return [idx, rng.standard_normal((input_dim, output_dim)).astype(dtype)]

    return make


def _emb_ref(data, weight, input_dim, output_dim, **_):
    rows = np.clip(np.trunc(data).astype(np.int64), 0, input_dim - 1)
    return weight[rows]


def _emb_backward_inputs(index_shape, input_dim, output_dim):
    def make(rng, dtype):
        idx = rng.randint(0, input_dim, size=index_shape).astype(dtype)
        idx.reshape(-1)[:2] = [input_dim + 2, -1]
        return [rng.standard_normal((*index_shape, output_dim)).astype(dtype), idx]

    return make


def _emb_backward_ref(ograd, data, input_dim, output_dim, **_):
    rows = np.clip(np.trunc(data).astype(np.int64), 0, input_dim - 1).reshape(-1)
    out = np.zeros((input_dim, output_dim), ograd.dtype)
    for r, g in zip(rows, ograd.reshape(-1, output_dim)):
        out[r] += g
    return out


def _embedding_cases():
    dims = {"input_dim": 6, "output_dim": 3}
    return [
        OpCase("Embedding", make=_emb_inputs((2, 4), 6, 3), attrs=dims, ref=_emb_ref,
               id="clip"),
        OpCase("Embedding", make=_emb_inputs((5,), 4, 2, "int32"),
               attrs={"input_dim": 4, "output_dim": 2}, ref=_emb_ref, id="int-indices"),
        OpCase("_backward_Embedding", make=_emb_backward_inputs((3, 4), 5, 2),
               attrs={"input_dim": 5, "output_dim": 2}, ref=_emb_backward_ref),
    ]


# -- softmax family -------------------------------------------------------------------------

def _np_softmax(z, axis):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _softmax_ref(x, length=None, axis=-1, temperature=None, dtype=None, use_length=False):
    z = x.astype(dtype or x.dtype) / (temperature or 1.0)
    if not use_length:
        return _np_softmax(z, axis)
    ax = axis % x.ndim
    steps = np.arange(x.shape[ax]).reshape([-1 if i == ax else 1 for i in range(x.ndim)])
    mask = steps < np.expand_dims(length, ax)
    e = np.where(mask, np.exp(z - z.max(axis=ax, keepdims=True)), 0)
    total = e.sum(axis=ax, keepdims=True)
    return e / np.where(total == 0, 1, total)


def _log_softmax_ref(x, axis=-1, temperature=None, **_):
    return np.log(_np_softmax(x / (temperature or 1.0), axis))


def _softmin_ref(x, axis=-1, temperature=None, **_):
    return _np_softmax(-x / (temperature or 1.0), axis)


def _with_lengths(shape, lengths):
    def make(rng, dtype):
        return [rng.uniform(-2, 2, shape).astype(dtype), np.array(lengths, dtype=np.int32)]

    return make


def _softmax_cases():
    return [
        OpCase("softmax", shapes=[(3, 5)], ref=_softmax_ref),
        OpCase("softmax", shapes=[(2, 3, 4)], attrs={"axis": 0}, ref=_softmax_ref, id="axis0"),
        OpCase("softmax", shapes=[(3, 4)], attrs={"temperature": 2.5}, ref=_softmax_ref,
               id="temperature"),
        OpCase("softmax", shapes=[(3, 4)], attrs={"dtype": "float64"}, ref=_softmax_ref,
               id="dtype"),
        OpCase("softmax", make=_with_lengths((3, 5), [2, 5, 0]), attrs={"use_length": True},
               ref=_softmax_ref, id="length"),
        OpCase("softmax", make=_with_lengths((2, 4, 3), [[2, 4, 1], [1, 3, 3]]),
               attrs={"use_length": True, "axis": 1, "temperature": 0.5}, ref=_softmax_ref,
               id="length-axis1"),
        OpCase("log_softmax", shapes=[(3, 5)], ref=_log_softmax_ref),
        OpCase("log_softmax", shapes=[(2, 3, 4)], attrs={"axis": 1, "temperature": 0.7},
               ref=_log_softmax_ref, id="axis1-temperature"),
        OpCase("softmin", shapes=[(3, 5)], ref=_softmin_ref),
        OpCase("softmin", shapes=[(4, 3, 2)], attrs={"axis": 0, "temperature": 2.0},
               ref=_softmin_ref, id="axis0-temperature"),
        OpCase("SoftmaxActivation", shapes=[(3, 5)], ref=lambda x, **_: _np_softmax(x, -1)),
        OpCase("SoftmaxActivation", shapes=[(2, 3, 4)], ref=lambda x, **_: _np_softmax(x, -1),
               id="instance-3d"),
        OpCase("SoftmaxActivation", shapes=[(2, 3, 2, 2)], attrs={"mode": "channel"},
               ref=lambda x, **_: _np_softmax(x, 1), id="channel"),
    ]


# -- SoftmaxOutput --------------------------------------------------------------------------

def _so_inputs(shape, label_shape, classes):
    def make(rng, dtype):
        return [rng.uniform(-2, 2, shape).astype(dtype),
                rng.randint(0, classes, size=label_shape).astype(dtype)]

    return make


def _so_ref(axis, flat=False):
    def ref(x, label, **_):
        if flat:
            return _np_softmax(x.reshape(x.shape[0], -1), 1).reshape(x.shape)
        return _np_softmax(x, axis)

    return ref


def _softmax_output_cases():
    return [
        OpCase("SoftmaxOutput", make=_so_inputs((4, 5), (4,), 5), ref=_so_ref(1), grad=False),
        OpCase("SoftmaxOutput", make=_so_inputs((2, 3, 4), (2, 4), 3),
               attrs={"multi_output": True}, ref=_so_ref(1), grad=False, id="multi"),
        OpCase("SoftmaxOutput", make=_so_inputs((2, 3, 2, 2), (2, 2, 2), 3),
               attrs={"multi_output": True, "grad_scale": 2.0}, ref=_so_ref(1), grad=False,
               id="multi-4d"),
        OpCase("SoftmaxOutput", make=_so_inputs((2, 3, 4), (2, 3), 4),
               attrs={"preserve_shape": True}, ref=_so_ref(-1), grad=False, id="preserve"),
        OpCase("SoftmaxOutput", make=_so_inputs((2, 3, 2), (2,), 6), ref=_so_ref(1, flat=True),
               grad=False, id="flatten"),
    ]


# -- softmax_cross_entropy ------------------------------------------------------------------

def _sce_ref(x, label):
    logp = np.log(_np_softmax(x.astype(np.float64), 1))
    picked = np.mod(np.trunc(label).astype(np.int64), x.shape[1])
    return np.array([-logp[np.arange(len(label)), picked].sum()], dtype=x.dtype)


def _sce_inputs(batch, classes, labels=None):
    def make(rng, dtype):
        label = rng.randint(0, classes, batch) if labels is None else np.array(labels)
        return [rng.uniform(-2, 2, (batch, classes)).astype(dtype), label.astype(dtype)]

    return make


def _sce_cases():
    return [
        OpCase("softmax_cross_entropy", make=_sce_inputs(4, 5), ref=_sce_ref),
        OpCase("softmax_cross_entropy", make=_sce_inputs(3, 4, [6, -1, 2.5]), ref=_sce_ref,
               grad=False, id="wrapped-labels"),
    ]


# -- SequenceMask ---------------------------------------------------------------------------

def _seq_inputs(shape, lengths, length_dtype=None):
    def make(rng, dtype):
        return [rng.uniform(-2, 2, shape).astype(dtype),
                np.array(lengths, dtype=length_dtype or dtype)]

    return make


def _seq_ref(x, sequence_length=None, use_sequence_length=False, value=0.0, axis=0):
    if not use_sequence_length:
        return x
    out = x.copy()
    for b, n in enumerate(np.trunc(sequence_length).astype(int)):
        index = [slice(None)] * x.ndim
        index[1 - axis] = b
        index[axis] = slice(max(n, 0), None)
        out[tuple(index)] = value
    return out


def _sequence_mask_cases():
    return [
        OpCase("SequenceMask", shapes=[(3, 2, 4)], ref=_seq_ref, id="identity"),
        OpCase("SequenceMask", make=_seq_inputs((3, 2, 4), [1, 3]),
               attrs={"use_sequence_length": True}, ref=_seq_ref, id="axis0"),
        OpCase("SequenceMask", make=_seq_inputs((2, 4, 3), [2, 0]),
               attrs={"use_sequence_length": True, "axis": 1, "value": -1.5}, ref=_seq_ref,
               id="axis1-value"),
        OpCase("SequenceMask", make=_seq_inputs((4, 3), [1.7, 4, 2.2]),
               attrs={"use_sequence_length": True, "value": 7.0}, ref=_seq_ref,
               id="fractional-2d"),
        OpCase("SequenceMask", make=_seq_inputs((3, 2, 2), [2, 1], "int32"),
               attrs={"use_sequence_length": True}, ref=_seq_ref, id="int-lengths"),
    ]


def _seq_last_ref(x, sequence_length=None, use_sequence_length=False, axis=0):
    steps = x.shape[axis]
    if not use_sequence_length:
        return np.take(x, steps - 1, axis=axis)
    last = np.clip(np.trunc(sequence_length).astype(int) - 1, 0, steps - 1)
    moved = np.moveaxis(x, axis, 0)  # (T, batch, ...)
    return np.stack([moved[t, b] for b, t in enumerate(last)])


def _seq_reverse_ref(x, sequence_length=None, use_sequence_length=False, axis=0):
    if not use_sequence_length:
        return x[::-1].copy()
    out = x.copy()
    for b, n in enumerate(np.clip(np.trunc(sequence_length).astype(int), 0, x.shape[0])):
        out[:n, b] = x[:n, b][::-1]
    return out


def _sequence_last_reverse_cases():
    on = {"use_sequence_length": True}
    return [
        OpCase("SequenceLast", shapes=[(3, 2, 4)], ref=_seq_last_ref, id="no-length"),
        OpCase("SequenceLast", shapes=[(2, 3, 4)], attrs={"axis": 1}, ref=_seq_last_ref,
               id="no-length-axis1"),
        OpCase("SequenceLast", make=_seq_inputs((4, 3, 2), [1, 4, 2.7]), attrs=on,
               ref=_seq_last_ref, id="axis0"),
        OpCase("SequenceLast", make=_seq_inputs((3, 4), [2, 1, 4]), attrs={**on, "axis": 1},
               ref=_seq_last_ref, id="axis1-2d"),
        OpCase("SequenceLast", make=_seq_inputs((3, 3, 2), [0, 5, 2], "int32"), attrs=on,
               ref=_seq_last_ref, id="clipped-lengths"),
        OpCase("SequenceReverse", shapes=[(4, 2, 3)], ref=_seq_reverse_ref, id="no-length"),
        OpCase("SequenceReverse", make=_seq_inputs((4, 3, 2), [0, 3, 4.5]), attrs=on,
               ref=_seq_reverse_ref, id="lengths"),
        OpCase("SequenceReverse", make=_seq_inputs((3, 2), [2, 7], "int32"), attrs=on,
               ref=_seq_reverse_ref, id="2d-clipped"),
    ]


CASES = (_dropout_cases() + _embedding_cases() + _softmax_cases() + _softmax_output_cases()
         + _sce_cases() + _sequence_mask_cases() + _sequence_last_reverse_cases())
