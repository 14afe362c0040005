"""Reductions over axes: ``sum, mean, max, min, prod, norm, argmax, argmin`` with MXNet's
``axis``/``keepdims``/``exclude`` (a reduction over every axis gives shape ``(1,)``), and
``_reduce_sum_like``, the broadcast-gradient helper.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> s = ops.get("sum")
    >>> s.compute(np, np.ones((2, 3)), **s.parse_attrs({"axis": 1}))
    array([3., 3.])
"""

from __future__ import annotations

from .attrs import Axis, Bool
from .opdef import OpDef, register
from .rules import broadcast_shapes, reduce_axes

__all__ = []


def _reduced_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    out = tuple(d for i, d in enumerate(shape) if i not in axes)
    return out or (1,)


def _reduce_rule(attrs, in_shapes):
    (shape,) = in_shapes
    if shape is None:
        return in_shapes, [None]
    axes = reduce_axes(attrs["axis"], len(shape), attrs["exclude"])
    return in_shapes, [_reduced_shape(shape, axes, attrs["keepdims"])]


_REDUCE_ATTRS = {
    "axis": Axis(default=None, doc="axis or axes to reduce; None or () for all"),
    "keepdims": Bool(default=False, doc="keep reduced axes with size 1"),
    "exclude": Bool(default=False, doc="reduce over every axis except those given"),
}


def _sum_compute(xp, x, axis=None, keepdims=False, exclude=False):
    axes = reduce_axes(axis, x.ndim, exclude, "sum")
    out = xp.sum(x, axis=axes, keepdims=keepdims, dtype=x.dtype)
    return out.reshape(_reduced_shape(x.shape, axes, keepdims))


def _sum_grad(F, ins, outs, gouts, axis=None, keepdims=False, exclude=False):
    (x,), g = ins, gouts[0]
    axes = reduce_axes(axis, x.ndim if hasattr(x, "ndim") else len(x.shape), exclude)
    kept = F.reshape(g, shape=_reduced_shape(x.shape, axes, True))
    return [F.broadcast_like(kept, x)]


register(OpDef(
    "sum", aliases=("sum_axis",), inputs=("data",), attrs=_REDUCE_ATTRS,
    compute=_sum_compute, infer_shape=_reduce_rule, grad=_sum_grad,
    doc="Sum of array elements over the given axes."))


def _reduce_sum_like_compute(xp, x, like):
    """Sum ``x`` down to ``like.shape`` (undo a broadcast)."""
    if x.shape == like.shape:
        return x
    lead = x.ndim - like.ndim
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(like.shape) if d == 1 and x.shape[lead + i] != 1)
    return xp.sum(x, axis=axes, dtype=x.dtype).reshape(like.shape)


def _reduce_sum_like_shape(attrs, in_shapes):
    x, like = in_shapes
    if x is not None and like is not None and broadcast_shapes(x, like) != x:
        raise ValueError(f"cannot reduce shape {x} to {like}")
    return in_shapes, [like]


register(OpDef(
    "_reduce_sum_like", inputs=("data", "like"), compute=_reduce_sum_like_compute,
    infer_shape=_reduce_sum_like_shape, nondiff_inputs=("like",),
    grad=lambda F, ins, outs, gouts: [F.broadcast_like(gouts[0], ins[0]), None],
    doc="Sum ``data`` over the axes along which ``like`` was broadcast to it (gradient "
        "helper of broadcast ops)."))
