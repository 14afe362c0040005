"""Sorting ops: ``topk``, ``sort``, ``argsort``, and ``_backward_topk`` (the scatter their value
gradients are made of).

Ties keep their original order, ascending and descending alike (a stable sort); this is
MXNet's order whenever the sorted axis has at most 16 elements. For longer axes MXNet's CPU
order of equal elements comes from ``std::sort`` and is unspecified (its GPU order differs
again), so there we keep the stable order. NaN sorts last ascending and first descending (MXNet
gives an arbitrary order for NaN). Indices come in the ``dtype`` attribute (float32 unless
asked); a dtype that cannot hold every index of the axis exactly is an error, as MXNet's docs
promise. As in MXNet, ``sort`` and ``topk(ret_typ='value')`` have a hidden second output (the
int64 indices) that their gradients use.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> topk = ops.get("topk")
    >>> topk.compute(np, np.array([[3.0, 1.0, 3.0, 2.0]]),
    ...              **topk.parse_attrs({"k": 2, "ret_typ": "both"}))
    (array([[3., 3.]]), array([[0., 2.]], dtype=float32))
"""

from __future__ import annotations

import math

import numpy as np

from ..base import MXNetError
from .attrs import Bool, Enum, Int
from .opdef import OpDef, register

__all__ = ["stable_argsort"]

_INDEX_DTYPES = ("float16", "float32", "float64", "int32", "int64", "uint8")
# The largest index each index dtype holds exactly.
_EXACT = {"float16": 2 ** 11, "float32": 2 ** 24, "float64": 2 ** 53, "int32": 2 ** 31 - 1,
          "int64": 2 ** 63 - 1, "uint8": 255}


def _layout(op, shape, axis):
    """(axis the sort runs along, the shape sorted): axis None sorts the flattened array."""
    if axis is None:
        return 0, (math.prod(shape),)
    ndim = len(shape)
    if not -ndim <= axis < ndim:
        raise MXNetError(f"{op}: axis {axis} is out of range for an input of shape "
                         f"{tuple(shape)} (expected an axis in [{-ndim}, {ndim - 1}] or None)")
    return axis % ndim, tuple(shape)


def _check_index_dtype(op, dtype, n):
    if n - 1 > _EXACT[dtype]:
        raise MXNetError(f"{op}: dtype {dtype!r} cannot hold indices up to {n - 1} exactly; "
                         f"use 'int32', 'int64' or 'float64'")


def _argsort(xp, x, axis):
    if xp.__name__ == "numpy":
        return xp.argsort(x, axis=axis, kind="stable")
    return xp.argsort(x, axis=axis)  # CuPy's sort is always stable (and takes no kind=)


def stable_argsort(xp, x, axis, ascend):
    """int64 indices sorting ``x`` along ``axis``; equal elements keep their order."""
    if ascend:
        return _argsort(xp, x, axis).astype(np.int64, copy=False)
    # Sort the reversed array ascending, then reverse: descending with stable ties.
    flipped = _argsort(xp, xp.flip(x, axis=axis), axis)
    return (x.shape[axis] - 1) - xp.flip(flipped, axis=axis).astype(np.int64, copy=False)


def _put_along_axis(xp, shape, axis, idx, values, dtype):
    """Zeros of ``shape`` with ``values`` put at ``idx`` along ``axis`` (no repeats)."""
    n = shape[axis]
    pre, post = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    rows = xp.arange(pre, dtype=np.int64).reshape(-1, 1, 1)
    cols = xp.arange(post, dtype=np.int64).reshape(1, 1, -1)
    positions = (rows * n + idx.reshape(pre, -1, post)) * post + cols
    out = xp.zeros(math.prod(shape), dtype=dtype)
    values = xp.broadcast_to(xp.asarray(values, dtype=dtype), idx.shape)
    out[positions.reshape(-1)] = values.reshape(-1)
    return out.reshape(shape)


# -- topk -----------------------------------------------------------------------------------

def _num_k(k, n):
    if k > n:
        raise MXNetError(f"topk: k={k} is larger than the {n} elements along the axis")
    return n if k < 1 else k


def _topk_outputs(attrs):
    return 2 if attrs["ret_typ"] in ("value", "both") else 1


def _topk_compute(xp, data, axis=-1, k=1, ret_typ="indices", is_ascend=False,
                  dtype="float32"):
    ax, shape = _layout("topk", data.shape, axis)
    x = data.reshape(shape)
    n = shape[ax]
    kk = _num_k(k, n)
    if ret_typ in ("indices", "both"):
        _check_index_dtype("topk", dtype, n)
    order = stable_argsort(xp, x, ax, is_ascend)[(slice(None),) * ax + (slice(0, kk),)]
    if ret_typ == "mask":
        return _put_along_axis(xp, shape, ax, order, 1, data.dtype).reshape(data.shape)
    if ret_typ == "indices":
        return order.astype(dtype)
    values = xp.take_along_axis(x, order, axis=ax)
    return values, order if ret_typ == "value" else order.astype(dtype)


def _topk_shape(attrs, in_shapes):
    shape = in_shapes[0]
    if shape is None:
        return in_shapes, [None] * _topk_outputs(attrs)
    ax, flat = _layout("topk", shape, attrs["axis"])
    if attrs["ret_typ"] == "mask":
        return in_shapes, [shape]
    n = flat[ax]
    kk = _num_k(attrs["k"], n) if n else attrs["k"]
    if attrs["ret_typ"] in ("indices", "both") and n:
        _check_index_dtype("topk", attrs["dtype"], n)
    out = flat[:ax] + (kk,) + flat[ax + 1:]
    return in_shapes, [out] * _topk_outputs(attrs)


def _topk_type(attrs, in_types):
    data, ret = in_types[0], attrs["ret_typ"]
    out = {"value": [data, "int64"], "both": [data, attrs["dtype"]],
           "indices": [attrs["dtype"]], "mask": [data]}[ret]
    return list(in_types), out


def _topk_grad(F, ins, outs, gouts, axis=-1, k=1, ret_typ="indices", is_ascend=False,
               dtype="float32"):
    """The value gradient goes back to the positions the values came from; indices and
    masks carry no gradient."""
    if ret_typ not in ("value", "both"):
        return [None]
    return [F._backward_topk(gouts[0], outs[1], ins[0], axis=axis)]


register(OpDef(
    "topk", inputs=("data",),
    attrs={"axis": Int(default=-1, optional=True, doc="axis to search (None: the flattened array)"),
           "k": Int(default=1, doc="how many elements (k < 1: all of them, sorted)"),
           "ret_typ": Enum(("both", "indices", "mask", "value"), default="indices",
                           doc="what to return: values, indices, both, or a 0/1 mask"),
           "is_ascend": Bool(default=False, doc="the k smallest instead of the k largest"),
           "dtype": Enum(_INDEX_DTYPES, default="float32", doc="dtype of the indices")},
    compute=_topk_compute, infer_shape=_topk_shape, infer_type=_topk_type, grad=_topk_grad,
    num_outputs=_topk_outputs,
    num_visible_outputs=lambda attrs: 2 if attrs["ret_typ"] == "both" else 1,
    doc="The k largest (or smallest) elements along an axis: their values, indices (in "
        "``dtype``), both ([values, indices]) or a mask in the data's dtype. Only the values "
        "have a gradient.",
    example="nd.topk(nd.array([[3.0, 1.0, 2.0]]), k=2, ret_typ='value')  # [[3. 2.]]"))


# -- sort, argsort --------------------------------------------------------------------------

def _sort_compute(xp, data, axis=-1, is_ascend=True):
    ax, shape = _layout("sort", data.shape, axis)
    x = data.reshape(shape)
    order = stable_argsort(xp, x, ax, is_ascend)
    return xp.take_along_axis(x, order, axis=ax), order


def _sorted_shape(op):
    def rule(attrs, in_shapes):
        shape = in_shapes[0]
        n_out = 2 if op == "sort" else 1
        if shape is None:
            return in_shapes, [None] * n_out
        ax, flat = _layout(op, shape, attrs["axis"])
        if op == "argsort" and flat[ax]:
            _check_index_dtype(op, attrs["dtype"], flat[ax])
        return in_shapes, [flat] * n_out

    return rule


register(OpDef(
    "sort", inputs=("data",),
    attrs={"axis": Int(default=-1, optional=True, doc="axis to sort (None: the flattened array)"),
           "is_ascend": Bool(default=True, doc="ascending (True) or descending order")},
    compute=_sort_compute, infer_shape=_sorted_shape("sort"),
    infer_type=lambda attrs, t: (list(t), [t[0], "int64"]),
    grad=lambda F, ins, outs, gouts, axis=-1, is_ascend=True: [
        F._backward_topk(gouts[0], outs[1], ins[0], axis=axis)],
    num_outputs=2, num_visible_outputs=1,
    doc="The data sorted along an axis (equal elements keep their order).",
    example="nd.sort(nd.array([[3.0, 1.0, 2.0]]))  # [[1. 2. 3.]]"))


def _argsort_compute(xp, data, axis=-1, is_ascend=True, dtype="float32"):
    ax, shape = _layout("argsort", data.shape, axis)
    _check_index_dtype("argsort", dtype, shape[ax])
    return stable_argsort(xp, data.reshape(shape), ax, is_ascend).astype(dtype)


register(OpDef(
    "argsort", inputs=("data",),
    attrs={"axis": Int(default=-1, optional=True, doc="axis to sort (None: the flattened array)"),
           "is_ascend": Bool(default=True, doc="ascending (True) or descending order"),
           "dtype": Enum(_INDEX_DTYPES, default="float32", doc="dtype of the indices")},
    compute=_argsort_compute, infer_shape=_sorted_shape("argsort"),
    infer_type=lambda attrs, t: (list(t), [attrs["dtype"]]),
    doc="Indices that sort the data along an axis (equal elements keep their order). Not "
        "differentiable.",
    example="nd.argsort(nd.array([[3.0, 1.0, 2.0]]))  # [[1. 2. 0.]]"))


# -- _backward_topk -------------------------------------------------------------------------

def _backward_topk_compute(xp, g, indices, data, axis=-1):
    ax, shape = _layout("topk", data.shape, axis)
    idx = indices.astype(np.int64, copy=False).reshape(
        shape[:ax] + (-1,) + shape[ax + 1:])
    out = _put_along_axis(xp, shape, ax, idx, g.reshape(idx.shape), g.dtype)
    return out.reshape(data.shape)


register(OpDef(
    "_backward_topk", inputs=("ograd", "indices", "data"),
    attrs={"axis": Int(default=-1, optional=True,
                       doc="axis the values were taken along (None: flattened)")},
    compute=_backward_topk_compute, infer_shape=lambda attrs, s: (s, [s[2]]),
    infer_type=lambda attrs, t: (list(t), [t[0]]), nondiff_inputs=("indices", "data"),
    doc="Gradient of topk/sort values: ``ograd`` put back at the indices along the axis, "
        "zeros elsewhere."))
