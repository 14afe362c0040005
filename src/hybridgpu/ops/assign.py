"""Slice assignment: ``_slice_assign(lhs, rhs)`` (alias ``_crop_assign``) and
``_slice_assign_scalar(data)`` (alias ``_crop_assign_scalar``).

Both are functional, as MXNet defines them: the result is a copy of the first input with the
slice ``begin:end:step`` (per leading axis, Python slicing: ``None`` entries, negative indices
and steps) replaced by ``rhs`` (whose shape must be the slice's) or by the number ``scalar``
(cast to the input's dtype, truncating toward zero for integers). ``NDArray.slice_assign``
calls them with ``out=self`` to write in place.

Gradients, as ops (MXNet registers none): the first input gets the output gradient with the
slice zeroed (``_slice_assign_scalar(g, scalar=0)``), ``rhs`` gets the slice of it
(``slice(g)``).

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> op = ops.get("_slice_assign_scalar")
    >>> op.compute(np, np.zeros((2, 3)), **op.parse_attrs({"scalar": 7, "begin": (None, 1),
    ...                                                      "end": (None, 3)}))
    array([[0., 7., 7.],
           [0., 7., 7.]])
"""

from __future__ import annotations

import numpy as np

from ..base import MXNetError
from .attrs import Float
from .index import IndexTuple
from .opdef import OpDef, register

__all__ = []

_SLICE_ATTRS = {
    "begin": IndexTuple(doc="start per axis (None: from the start; negative counts from the "
                            "end)"),
    "end": IndexTuple(doc="stop per axis (None: to the end; negative counts from the end)"),
    "step": IndexTuple(default=(), doc="step per axis (None or empty: 1; may be negative)"),
}


def _slice_key(op, shape, begin, end, step):
    """The tuple of Python slices ``begin:end:step`` selects, with MXNet's checks."""
    if len(begin) != len(end):
        raise MXNetError(f"{op}: begin {begin} and end {end} must have the same length")
    if len(begin) > len(shape):
        raise MXNetError(f"{op}: begin {begin} has {len(begin)} entries but the input of "
                         f"shape {tuple(shape)} has only {len(shape)} dims")
    if step and len(step) != len(begin):
        raise MXNetError(f"{op}: step {step} must be empty or as long as begin {begin}")
    step = step or (None,) * len(begin)
    if 0 in step:
        raise MXNetError(f"{op}: step cannot be 0, got step {step}")
    return tuple(slice(b, e, s) for b, e, s in zip(begin, end, step))


def _sliced_shape(shape, key):
    return tuple(len(range(d)[k]) for d, k in zip(shape, key)) + tuple(shape[len(key):])


def _assign_compute(xp, lhs, rhs, begin, end, step=()):
    key = _slice_key("_slice_assign", lhs.shape, begin, end, step)
    want = _sliced_shape(lhs.shape, key)
    if tuple(rhs.shape) != want:
        raise MXNetError(f"_slice_assign: rhs has shape {tuple(rhs.shape)}, the slice "
                         f"begin={begin}, end={end}, step={step} of lhs {tuple(lhs.shape)} "
                         f"has shape {want}")
    if rhs.dtype != lhs.dtype:
        raise MXNetError(f"_slice_assign: rhs has dtype {rhs.dtype.name}, lhs "
                         f"{lhs.dtype.name}; cast rhs first")
    out = lhs.copy()
    out[key] = rhs
    return out


def _assign_shape(attrs, in_shapes):
    lhs, rhs = in_shapes
    if lhs is None:
        return list(in_shapes), [None]
    key = _slice_key("_slice_assign", lhs, attrs["begin"], attrs["end"], attrs["step"])
    want = _sliced_shape(lhs, key)
    if rhs is not None and tuple(rhs) != want:
        raise MXNetError(f"_slice_assign: rhs has shape {tuple(rhs)}, the slice of lhs "
                         f"{tuple(lhs)} has shape {want}")
    return [lhs, want], [lhs]


def _assign_grad(F, ins, outs, gouts, begin, end, step=()):
    g = gouts[0]
    return [F._slice_assign_scalar(g, scalar=0.0, begin=begin, end=end, step=step),
            F.slice(g, begin=begin, end=end, step=step)]


register(OpDef(
    "_slice_assign", aliases=("_crop_assign",), inputs=("lhs", "rhs"), attrs=_SLICE_ATTRS,
    compute=_assign_compute, infer_shape=_assign_shape, grad=_assign_grad,
    doc="A copy of lhs with the slice begin:end:step replaced by rhs.",
    example="nd._internal._slice_assign(nd.zeros((3, 4)), nd.ones((1, 2)), begin=(1, 1), "
            "end=(2, 3))  # ones at [1, 1:3]"))


def _assign_scalar_compute(xp, data, scalar=0.0, begin=(), end=(), step=()):
    key = _slice_key("_slice_assign_scalar", data.shape, begin, end, step)
    out = data.copy()
    out[key] = xp.asarray(scalar, dtype=np.float64).astype(data.dtype)
    return out


def _assign_scalar_shape(attrs, in_shapes):
    if in_shapes[0] is not None:
        _slice_key("_slice_assign_scalar", in_shapes[0], attrs["begin"], attrs["end"],
                   attrs["step"])
    return list(in_shapes), [in_shapes[0]]


def _assign_scalar_grad(F, ins, outs, gouts, scalar=0.0, begin=(), end=(), step=()):
    return [F._slice_assign_scalar(gouts[0], scalar=0.0, begin=begin, end=end, step=step)]


register(OpDef(
    "_slice_assign_scalar", aliases=("_crop_assign_scalar",),
    attrs={"scalar": Float(default=0.0, doc="the value written into the slice"),
           **_SLICE_ATTRS},
    compute=_assign_scalar_compute, infer_shape=_assign_scalar_shape, grad=_assign_scalar_grad,
    doc="A copy of data with the slice begin:end:step set to scalar.",
    example="nd._internal._slice_assign_scalar(nd.zeros((2, 3)), scalar=7, begin=(None, 1), "
            "end=(None, 3))  # 7 in columns 1 and 2"))
