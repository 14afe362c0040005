"""Sequence plumbing shared by the cells' ``unroll``: one array <-> a list of time steps in a
layout ('NTC', 'TNC'), the default begin state, and the ``valid_length`` helpers (masking the
padding, the last valid state, reversing each sequence within its length).

Example:
    >>> import hybridgpu as mx
    >>> steps, axis, F, batch = format_sequence(3, mx.nd.zeros((2, 3, 4)), "NTC", False)
    >>> len(steps), steps[0].shape, axis, batch
    (3, (2, 4), 1, 2)
    >>> format_sequence(3, steps, "NTC", True)[0].shape
    (2, 3, 4)
"""

from __future__ import annotations

from ... import ndarray as nd
from ... import symbol as sym
from ...base import MXNetError
from ...ndarray import NDArray
from ...symbol import Symbol

__all__ = ["format_sequence", "begin_state_for", "mask_padding", "last_valid",
           "reverse_sequences", "is_tensor"]


def is_tensor(value):
    """True for one NDArray or Symbol (a merged sequence), False for a list of steps."""
    return isinstance(value, (NDArray, Symbol))


def _as_list(value):
    """A list of single arrays from a list, one NDArray, or a (grouped) Symbol."""
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, Symbol):
        return [value[i] for i in range(len(value))]
    return [value]


def _module_of(value):
    return sym if isinstance(value, Symbol) else nd


def format_sequence(length, inputs, layout, merge, in_layout=None):
    """``(inputs, time axis, F, batch size)``: ``inputs`` (one array in ``in_layout``, default
    ``layout``, or a list of (N, C) steps) as a list of steps (``merge=False``), one array in
    ``layout`` (``merge=True``), or as it is (``merge=None``); batch size 0 for Symbols."""
    if inputs is None:
        raise MXNetError("unroll: inputs=None is not supported; create the input arrays or "
                         "variables first")
    if layout not in ("NTC", "TNC"):
        raise MXNetError(f"unroll: layout must be 'NTC' or 'TNC', got {layout!r}")
    axis, batch_axis = layout.find("T"), layout.find("N")
    in_axis = in_layout.find("T") if in_layout is not None else axis
    batch = 0
    if is_tensor(inputs):
        F = _module_of(inputs)
        if F is nd:
            batch = inputs.shape[batch_axis]
            if length is not None and length != inputs.shape[in_axis]:
                raise MXNetError(f"unroll: length={length} but the input has "
                                 f"{inputs.shape[in_axis]} steps on axis {in_axis} (shape "
                                 f"{inputs.shape}, layout {layout!r})")
        if merge is False:
            count = length if F is sym else inputs.shape[in_axis]
            inputs = _as_list(F.split(inputs, axis=in_axis, num_outputs=count,
                                      squeeze_axis=True))
    else:
        inputs = list(inputs)
        if length is not None and len(inputs) != length:
            raise MXNetError(f"unroll: length={length} but {len(inputs)} input steps were "
                             "given")
        F = _module_of(inputs[0])
        if F is nd:
            batch = inputs[0].shape[0]
        if merge is True:
            inputs = F.stack(*inputs, axis=axis)
            in_axis = axis
    if is_tensor(inputs) and axis != in_axis:
        inputs = F.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis, F, batch


def begin_state_for(cell, F, begin_state, inputs, batch_size):
    """``begin_state`` or, when None, the cell's zero states on the inputs' context."""
    if begin_state is not None:
        return begin_state
    if F is nd:
        first = inputs if is_tensor(inputs) else inputs[0]
        with first.context:
            return cell.begin_state(func=nd.zeros, batch_size=batch_size)
    first = inputs if is_tensor(inputs) else inputs[0]
    return [symbolic_zeros(first, 0, info["shape"]) for info in cell.state_info(batch_size)]


def symbolic_zeros(like, like_batch_axis, shape):
    """Zeros of ``shape`` (its batch dimension 0) as a Symbol whose batch size is read from
    axis ``like_batch_axis`` of ``like`` when the graph runs: a ``zeros`` of unknown batch
    size cannot be evaluated here, so the states follow the data.

    Example:
        >>> import hybridgpu as mx
        >>> z = symbolic_zeros(mx.sym.var("x"), 1, (2, 0, 3))
        >>> z.eval(x=mx.nd.ones((5, 4, 7)))[0].shape
        (2, 4, 3)
    """
    batch_at = list(shape).index(0)
    column = sym.zeros_like(sym.sum(like, axis=like_batch_axis, exclude=True))  # (N,)
    column = sym.reshape(column, shape=tuple(-1 if i == batch_at else 1
                                             for i in range(len(shape))))
    axes = tuple(i for i in range(len(shape)) if i != batch_at)
    if not axes:
        return column
    return sym.broadcast_axis(column, axis=axes, size=tuple(shape[i] for i in axes))


def mask_padding(F, data, length, valid_length, time_axis, merge):
    """Zero every step at or past each sequence's ``valid_length``; a list of steps or one
    array as ``merge`` says."""
    if not is_tensor(data):
        data = F.stack(*data, axis=time_axis)
    out = F.SequenceMask(data, sequence_length=valid_length, use_sequence_length=True,
                         axis=time_axis)
    if not merge:
        out = _as_list(F.split(out, num_outputs=length, axis=time_axis, squeeze_axis=True))
    return out


def last_valid(F, steps, valid_length):
    """The element of each sequence at step ``valid_length - 1`` from a list of steps."""
    return F.SequenceLast(F.stack(*steps, axis=0), sequence_length=valid_length,
                          use_sequence_length=True, axis=0)


def reverse_sequences(steps, length, valid_length=None):
    """The list of steps reversed in time, each sequence within its ``valid_length``."""
    if valid_length is None:
        return list(reversed(steps))
    F = _module_of(steps[0])
    flipped = F.SequenceReverse(F.stack(*steps, axis=0), sequence_length=valid_length,
                                use_sequence_length=True)
    return _as_list(F.split(flipped, axis=0, num_outputs=length, squeeze_axis=True))
