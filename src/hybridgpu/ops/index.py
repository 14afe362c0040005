"""Indexing ops: ``slice`` (alias ``crop``), ``slice_axis``, ``slice_like``, ``take``, ``pick``
(alias ``choose_element_0index``), ``one_hot``, ``gather_nd``, ``scatter_nd``, ``batch_take``,
``ravel_multi_index``, ``unravel_index``, and the hidden backward ops their gradients are made
of (``_backward_slice``, ``_backward_take``, ...).

MXNet's index conventions, kept here: index inputs may be float arrays (MXNet's default dtype)
and are truncated toward zero (``1.7 -> 1``, ``-0.5 -> 0``) before ``mode`` applies: ``clip``
clamps to ``[0, n-1]``, ``wrap`` takes the index modulo ``n``, ``raise`` rejects anything outside
``[0, n)`` (negative indices too). ``one_hot`` gives all ``off_value`` for an index outside
``[0, depth)``. ``slice`` follows Python slicing (``None`` entries, negative steps, clamping);
``slice_axis`` is stricter, as in MXNet: ``0 <= begin < end <= size`` after wrapping negatives.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> take = ops.get("take")
    >>> take.compute(np, np.arange(6.0).reshape(3, 2), np.array([2.0, 0.0]),
    ...              **take.parse_attrs({}))
    array([[4., 5.],
           [0., 1.]])
"""

from __future__ import annotations

import math

import numpy as np

from ..base import MXNetError
from .attrs import Attr, AttrError, Bool, DType, Enum, Float, Int, Shape
from .opdef import OpDef, register
from .reduce import reduced_shape

__all__ = ["IndexTuple", "int_index", "bound_index", "scatter_add_flat"]


# -- shared helpers -------------------------------------------------------------------------

class IndexTuple(Attr):
    """A tuple of ints or ``None`` (slice ``begin``/``end``/``step``): ``(0, None)``."""

    kind = "tuple of int or None"

    def _check(self, value):
        if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
            return (int(value),)
        if isinstance(value, (tuple, list)):
            return tuple(None if v is None else Int()._check(v) for v in value)
        raise AttrError(f"expected a tuple of ints or None like (0, None), got {value!r}")

    def format(self, value):
        return "None" if value is None else str(tuple(value))


def _axis(op, axis, shape, what="axis"):
    ndim = len(shape)
    if not -ndim <= axis < ndim:
        raise MXNetError(f"{op}: {what} {axis} is out of range for an input of shape "
                         f"{tuple(shape)} (expected an axis in [{-ndim}, {ndim - 1}])")
    return axis % ndim


def int_index(indices):
    """Indices as int64; float indices are truncated toward zero, as MXNet's C cast does."""
    return indices.astype(np.int64, copy=False)


def bound_index(xp, idx, n, mode, op):
    """Int64 indices into an axis of size ``n`` after MXNet's ``mode`` (clip, wrap, raise)."""
    if n == 0:
        if idx.size:
            raise MXNetError(f"{op}: cannot index an axis of size 0")
        return idx
    if mode == "clip":
        return xp.clip(idx, 0, n - 1)
    if mode == "wrap":
        return idx % n
    if idx.size and bool(((idx < 0) | (idx >= n)).any()):
        low, high = int(idx.min()), int(idx.max())
        raise MXNetError(f"{op}: indices must lie in [0, {n}) with mode='raise', got values "
                         f"from {low} to {high}; use mode='clip' or 'wrap' to allow them")
    return idx


def scatter_add_flat(xp, size, positions, values, dtype):
    """A flat array of ``size`` zeros with ``values`` added at ``positions`` (repeats add),
    summed in float64. ``positions`` must lie in ``[0, size)``.

    NumPy: ``bincount``. CuPy: ``cupyx.scatter_add`` into float64 zeros, since
    ``cupy.bincount`` reads the largest position and checks for negative ones on the host (two
    device syncs per call).
    """
    positions = positions.reshape(-1)
    weights = values.reshape(-1).astype(np.float64)
    if xp is np:
        out = xp.bincount(positions, weights=weights, minlength=size)
    else:
        import cupyx  # only reached with CuPy arrays, which have cupyx beside them

        out = xp.zeros(size, dtype=np.float64)
        cupyx.scatter_add(out, positions, weights)
    return out.astype(dtype)


def _first_type(attrs, in_types):
    """The output has the dtype of the first input (indices may have any dtype)."""
    return list(in_types), [in_types[0]]


# -- slice, slice_axis, slice_like ----------------------------------------------------------

def _slice_key(attrs, shapes):
    shape, begin, end, step = shapes[0], attrs["begin"], attrs["end"], attrs["step"]
    if len(begin) != len(end):
        raise MXNetError(f"slice: begin {begin} and end {end} must have the same length")
    if len(begin) > len(shape):
        raise MXNetError(f"slice: begin {begin} has {len(begin)} entries but the input of "
                         f"shape {tuple(shape)} has only {len(shape)} dims")
    if step and len(step) != len(begin):
        raise MXNetError(f"slice: step {step} must be empty or as long as begin {begin}")
    step = step or (None,) * len(begin)
    if 0 in step:
        raise MXNetError(f"slice: step cannot be 0, got step {step}")
    return tuple(slice(b, e, s) for b, e, s in zip(begin, end, step))


def _slice_axis_key(attrs, shapes):
    shape, axis, begin, end = shapes[0], attrs["axis"], attrs["begin"], attrs["end"]
    ax = _axis("slice_axis", axis, shape)
    n = shape[ax]
    start = begin + n if begin < 0 else begin
    stop = n if end is None else end + n if end < 0 else end
    if n and not 0 <= start < stop <= n:
        raise MXNetError(f"slice_axis: begin={begin}, end={end} do not select a non-empty range "
                         f"of axis {axis} (size {n}); need 0 <= begin < end <= {n} after "
                         f"adding {n} to negative values")
    return (slice(None),) * ax + (slice(start, stop),)


def _slice_like_key(attrs, shapes):
    shape, like, axes = shapes[0], shapes[1], attrs["axes"]
    if not axes:
        if len(like) != len(shape):
            raise MXNetError(f"slice_like: without axes, data {tuple(shape)} and shape_like "
                             f"{tuple(like)} must have the same number of dims")
        axes = range(len(shape))
    key = [slice(None)] * len(shape)
    for a in axes:
        ax = _axis("slice_like", a, shape, "axes entry")
        if ax >= len(like):
            raise MXNetError(f"slice_like: axes entry {a} is out of range for shape_like of "
                             f"shape {tuple(like)}")
        if like[ax] > shape[ax]:
            raise MXNetError(f"slice_like: shape_like {tuple(like)} is larger than data "
                             f"{tuple(shape)} along axis {ax}")
        key[ax] = slice(0, like[ax])
    return tuple(key)


def _sliced_shape(shape, key):
    return tuple(len(range(d)[k]) for d, k in zip(shape, key)) + tuple(shape[len(key):])


def _register_slicer(name, key_fn, inputs, attrs, aliases=(), doc="", example=""):
    """Register ``name`` (data[key]) and ``_backward_<name>`` (zeros with data[key] = g)."""
    back = f"_backward_{name}"

    def compute(xp, x, *rest, **attrs):
        return x[key_fn(attrs, [x.shape] + [r.shape for r in rest])].copy()

    def infer_shape(attrs, in_shapes):
        if any(s is None for s in in_shapes):
            return in_shapes, [None]
        return in_shapes, [_sliced_shape(in_shapes[0], key_fn(attrs, in_shapes))]

    def grad(F, ins, outs, gouts, **attrs):
        return [getattr(F, back)(gouts[0], *ins, **attrs)] + [None] * (len(ins) - 1)

    register(OpDef(name, aliases=aliases, inputs=inputs, attrs=attrs, compute=compute,
                   infer_shape=infer_shape, infer_type=_first_type, grad=grad,
                   nondiff_inputs=inputs[1:], doc=doc, example=example))

    def back_compute(xp, g, x, *rest, **attrs):
        out = xp.zeros(x.shape, dtype=g.dtype)
        out[key_fn(attrs, [x.shape] + [r.shape for r in rest])] = g
        return out

    def back_shape(attrs, in_shapes):
        return in_shapes, [in_shapes[1]]

    def back_grad(F, ins, outs, gouts, **attrs):
        return [getattr(F, name)(gouts[0], *ins[2:], **attrs)] + [None] * (len(ins) - 1)

    register(OpDef(back, inputs=("ograd",) + inputs, attrs=attrs, compute=back_compute,
                   infer_shape=back_shape, infer_type=_first_type, grad=back_grad,
                   nondiff_inputs=inputs,
                   doc=f"Gradient of {name}: ``ograd`` written into zeros shaped like data."))


_register_slicer(
    "slice", _slice_key, ("data",), aliases=("crop",),
    attrs={"begin": IndexTuple(doc="start per axis (None: from the start)"),
           "end": IndexTuple(doc="stop per axis (None: to the end)"),
           "step": IndexTuple(default=(), doc="step per axis (None or empty: 1)")},
    doc="A slice of the leading axes, as Python's ``x[b0:e0:s0, b1:e1:s1, ...]``.",
    example="nd.slice(nd.ones((3, 4)), begin=(1, None), end=(3, None)).shape  # (2, 4)")
_register_slicer(
    "slice_axis", _slice_axis_key, ("data",),
    attrs={"axis": Int(doc="axis to slice (negative counts from the end)"),
           "begin": Int(doc="start index (negative counts from the end)"),
           "end": Int(optional=True, doc="stop index (None: to the end)")},
    doc="A slice ``begin:end`` along one axis.",
    example="nd.slice_axis(nd.ones((3, 4)), axis=1, begin=1, end=None).shape  # (3, 3)")
_register_slicer(
    "slice_like", _slice_like_key, ("data", "shape_like"),
    attrs={"axes": Shape(default=(), doc="axes to slice (empty: all)")},
    doc="``data`` sliced from 0 to ``shape_like``'s size along ``axes``.",
    example="nd.slice_like(nd.ones((3, 4)), nd.ones((2, 2))).shape  # (2, 2)")


# -- take -----------------------------------------------------------------------------------

_TAKE_ATTRS = {
    "axis": Int(default=0, doc="axis to take along (negative counts from the end)"),
    "mode": Enum(("clip", "raise", "wrap"), default="clip", doc="out-of-range indices"),
}


def _raise_mode(attrs):
    """``host_sync`` of take and its gradient: mode='raise' reads the index range on the host."""
    return attrs["mode"] == "raise"


def _take_compute(xp, a, indices, axis=0, mode="clip"):
    ax = _axis("take", axis, a.shape)
    idx = bound_index(xp, int_index(indices), a.shape[ax], mode, "take")
    return xp.take(a, idx, axis=ax)


def _take_shape(attrs, in_shapes):
    a, indices = in_shapes
    if a is None or indices is None:
        return in_shapes, [None]
    ax = _axis("take", attrs["axis"], a)
    return in_shapes, [tuple(a[:ax]) + tuple(indices) + tuple(a[ax + 1:])]


def _take_grad(F, ins, outs, gouts, axis=0, mode="clip"):
    a, indices = ins
    return [F._backward_take(gouts[0], indices, a, axis=axis, mode=mode), None]


register(OpDef(
    "take", inputs=("a", "indices"), attrs=_TAKE_ATTRS, compute=_take_compute,
    infer_shape=_take_shape, infer_type=_first_type, grad=_take_grad,
    nondiff_inputs=("indices",), host_sync=_raise_mode,
    doc="Slices of ``a`` along ``axis`` at ``indices``: shape "
        "``a.shape[:axis] + indices.shape + a.shape[axis+1:]``.",
    example="nd.take(nd.ones((3, 4)), nd.array([[0, 2]]), axis=1).shape  # (3, 1, 2)"))


def _take_backward_compute(xp, g, indices, data, axis=0, mode="clip"):
    ax = _axis("take", axis, data.shape)
    n = data.shape[ax]
    idx = bound_index(xp, int_index(indices), n, mode, "take").reshape(1, -1, 1)
    pre, post = math.prod(data.shape[:ax]), math.prod(data.shape[ax + 1:])
    rows = xp.arange(pre, dtype=np.int64).reshape(-1, 1, 1)
    cols = xp.arange(post, dtype=np.int64).reshape(1, 1, -1)
    positions = (rows * n + idx) * post + cols
    out = scatter_add_flat(xp, data.size, positions, g.reshape(pre, -1, post), g.dtype)
    return out.reshape(data.shape)


register(OpDef(
    "_backward_take", inputs=("ograd", "indices", "data"), attrs=_TAKE_ATTRS,
    compute=_take_backward_compute, infer_shape=lambda attrs, s: (s, [s[2]]),
    infer_type=_first_type, nondiff_inputs=("indices", "data"), host_sync=_raise_mode,
    grad=lambda F, ins, outs, gouts, axis=0, mode="clip": [
        F.take(gouts[0], ins[1], axis=axis, mode=mode), None, None],
    doc="Gradient of take: ``ograd`` slices added into zeros shaped like data at the "
        "indices (repeated indices add up)."))


# -- pick -----------------------------------------------------------------------------------

_PICK_ATTRS = {
    "axis": Int(default=-1, optional=True,
                doc="axis to pick along (None is not supported, as in MXNet)"),
    "keepdims": Bool(default=False, doc="keep the picked axis with size 1"),
    "mode": Enum(("clip", "wrap"), default="clip", doc="out-of-range indices"),
}


def _pick_layout(shape, index_shape, axis, keepdims):
    """(axis, index shape with the axis kept, output shape); MXNetError on a bad index."""
    if axis is None:
        raise MXNetError("pick: axis=None is not supported (MXNet rejects it too); give the "
                         "axis to pick along")
    ax = _axis("pick", axis, shape)
    kept = reduced_shape(shape, (ax,), True)
    dropped = reduced_shape(shape, (ax,), False)
    if index_shape is not None and tuple(index_shape) not in (kept, dropped):
        raise MXNetError(f"pick: index has shape {tuple(index_shape)}, expected {dropped} (or "
                         f"{kept}) for data of shape {tuple(shape)} and axis {axis}")
    return ax, kept, kept if keepdims else dropped


def _pick_compute(xp, data, index, axis=-1, keepdims=False, mode="clip"):
    ax, kept, out_shape = _pick_layout(data.shape, index.shape, axis, keepdims)
    idx = bound_index(xp, int_index(index), data.shape[ax], mode, "pick").reshape(kept)
    return xp.take_along_axis(data, idx, axis=ax).reshape(out_shape)


def _pick_shape(attrs, in_shapes):
    data, index = in_shapes
    if data is None:
        return in_shapes, [None]
    ax, kept, out_shape = _pick_layout(data, index, attrs["axis"], attrs["keepdims"])
    return [data, index or reduced_shape(data, (ax,), False)], [out_shape]


def _pick_backward_compute(xp, g, index, data, axis=-1, keepdims=False, mode="clip"):
    ax, kept, _ = _pick_layout(data.shape, index.shape, axis, keepdims)
    n = data.shape[ax]
    idx = bound_index(xp, int_index(index), n, mode, "pick").reshape(kept)
    positions = xp.arange(n, dtype=np.int64).reshape((n,) + (1,) * (data.ndim - ax - 1))
    return xp.where(positions == idx, g.reshape(kept), xp.zeros((), dtype=g.dtype))


register(OpDef(
    "pick", aliases=("choose_element_0index",), inputs=("data", "index"), attrs=_PICK_ATTRS,
    compute=_pick_compute, infer_shape=_pick_shape, infer_type=_first_type,
    grad=lambda F, ins, outs, gouts, **attrs: [
        F._backward_pick(gouts[0], ins[1], ins[0], **attrs), None],
    nondiff_inputs=("index",),
    doc="One element per position along ``axis``, chosen by ``index`` (shape of data "
        "without that axis).",
    example="nd.pick(nd.array([[1.0, 2.0], [3.0, 4.0]]), nd.array([1, 0]))  # [2. 3.]"))
register(OpDef(
    "_backward_pick", inputs=("ograd", "index", "data"), attrs=_PICK_ATTRS,
    compute=_pick_backward_compute, infer_shape=lambda attrs, s: (s, [s[2]]),
    infer_type=_first_type, nondiff_inputs=("index", "data"),
    grad=lambda F, ins, outs, gouts, **attrs: [F.pick(gouts[0], ins[1], **attrs), None, None],
    doc="Gradient of pick: ``ograd`` placed at the picked positions of zeros shaped like "
        "data."))


# -- one_hot --------------------------------------------------------------------------------

def _one_hot_compute(xp, indices, depth, on_value=1.0, off_value=0.0, dtype="float32"):
    if depth < 0:
        raise MXNetError(f"one_hot: depth must be >= 0, got {depth}")
    hit = int_index(indices)[..., None] == xp.arange(depth, dtype=np.int64)
    return xp.where(hit, on_value, off_value).astype(dtype)


register(OpDef(
    "one_hot", inputs=("indices",),
    attrs={"depth": Int(doc="size of the one-hot axis"),
           "on_value": Float(default=1.0, doc="value at the index"),
           "off_value": Float(default=0.0, doc="value elsewhere"),
           "dtype": DType(default="float32", doc="output dtype")},
    compute=_one_hot_compute,
    infer_shape=lambda attrs, s: (s, [None if s[0] is None else tuple(s[0]) +
                                      (attrs["depth"],)]),
    infer_type=lambda attrs, t: (list(t), [attrs["dtype"]]),
    nondiff_inputs=("indices",),
    doc="One-hot encoding along a new last axis; indices outside [0, depth) give all "
        "off_value. Not differentiable.",
    example="nd.one_hot(nd.array([1, 0]), 3)  # [[0. 1. 0.] [1. 0. 0.]]"))


# -- gather_nd, scatter_nd ------------------------------------------------------------------

def _nd_index_shapes(op, index_shape, shape):
    """(M, Y): indices of shape (M,) + Y address the first M axes of ``shape``."""
    if len(index_shape) < 2:
        raise MXNetError(f"{op}: indices must have at least 2 dims (M, ...), got shape "
                         f"{tuple(index_shape)}")
    m = index_shape[0]
    if m > len(shape):
        raise MXNetError(f"{op}: indices address {m} axes but the array of shape "
                         f"{tuple(shape)} has only {len(shape)}")
    return m, tuple(index_shape[1:])


def _nd_positions(xp, op, indices, shape, wrap_negative):
    """Row numbers into ``shape`` reshaped to (prod(shape[:M]), -1), and whether each is
    in range. Negative indices count from the end when ``wrap_negative``."""
    m, _ = _nd_index_shapes(op, indices.shape, shape)
    idx = int_index(indices)
    dims = xp.asarray(np.asarray(shape[:m], dtype=np.int64)).reshape((m,) + (1,) * (idx.ndim - 1))
    if wrap_negative:
        idx = xp.where(idx < 0, idx + dims, idx)
    valid = ((idx >= 0) & (idx < dims)).all(axis=0)
    strides = np.cumprod((1,) + tuple(shape[:m][::-1]), dtype=np.int64)[:m][::-1].copy()
    weights = xp.asarray(strides).reshape(dims.shape)
    return (idx * weights).sum(axis=0), valid


def _checked_positions(xp, op, indices, shape):
    rows, valid = _nd_positions(xp, op, indices, shape, wrap_negative=True)
    if valid.size and not bool(valid.all()):
        raise MXNetError(f"{op}: indices out of range for an array of shape {tuple(shape)} "
                         f"(each index i along an axis of size n needs -n <= i < n)")
    return rows


def _gather_nd_compute(xp, data, indices):
    m, y = _nd_index_shapes("gather_nd", indices.shape, data.shape)
    rows = _checked_positions(xp, "gather_nd", indices, data.shape)
    table = data.reshape((math.prod(data.shape[:m]),) + data.shape[m:])
    return table[rows.reshape(-1)].reshape(y + data.shape[m:])


def _gather_nd_shape(attrs, in_shapes):
    data, indices = in_shapes
    if data is None or indices is None:
        return in_shapes, [None]
    m, y = _nd_index_shapes("gather_nd", indices, data)
    return in_shapes, [y + tuple(data[m:])]


register(OpDef(
    "gather_nd", inputs=("data", "indices"), compute=_gather_nd_compute,
    infer_shape=_gather_nd_shape, infer_type=_first_type, nondiff_inputs=("indices",),
    host_sync=True,  # the range check of the index tuples reads one bool on the host
    grad=lambda F, ins, outs, gouts: [
        F._backward_gather_nd(gouts[0], ins[1], shape=ins[0].shape), None],
    doc="Elements or slices of data at the index tuples in the first axis of indices: "
        "indices (M, Y...) give shape Y + data.shape[M:].",
    example="nd.gather_nd(nd.array([[1.0, 2.0], [3.0, 4.0]]), nd.array([[1, 0], [0, 1]]))"
            "  # [3. 2.]"))


def _scatter_layout(op, data_shape, index_shape, shape):
    m, y = _nd_index_shapes(op, index_shape, shape)
    want = y + tuple(shape[m:])
    if data_shape is not None and tuple(data_shape) != want:
        raise MXNetError(f"{op}: data has shape {tuple(data_shape)} but indices "
                         f"{tuple(index_shape)} and shape {tuple(shape)} need {want}")
    return m


def _scatter_nd_compute(xp, data, indices, shape):
    m = _scatter_layout("scatter_nd", data.shape, indices.shape, shape)
    rows, valid = _nd_positions(xp, "scatter_nd", indices, shape, wrap_negative=False)
    count = math.prod(shape[:m])
    rows = xp.where(valid, rows, count).reshape(-1)  # out-of-range entries go to a spare row
    out = xp.zeros((count + 1,) + tuple(shape[m:]), dtype=data.dtype)
    out[rows] = data.reshape((-1,) + tuple(shape[m:]))
    return out[:count].reshape(shape)


def _scatter_add_compute(xp, data, indices, shape):
    m = _scatter_layout("_backward_gather_nd", data.shape, indices.shape, shape)
    rows = _checked_positions(xp, "_backward_gather_nd", indices, shape).reshape(-1, 1)
    post = math.prod(shape[m:])
    positions = rows * post + xp.arange(post, dtype=np.int64).reshape(1, -1)
    return scatter_add_flat(xp, math.prod(shape), positions, data, data.dtype).reshape(shape)


def _scatter_shape(op):
    def rule(attrs, in_shapes):
        data, indices = in_shapes
        if indices is not None:
            _scatter_layout(op, data, indices, attrs["shape"])
        return in_shapes, [tuple(attrs["shape"])]

    return rule


_SCATTER_ATTRS = {"shape": Shape(doc="shape of the output")}
register(OpDef(
    "scatter_nd", inputs=("data", "indices"), attrs=_SCATTER_ATTRS,
    compute=_scatter_nd_compute, infer_shape=_scatter_shape("scatter_nd"),
    infer_type=_first_type, nondiff_inputs=("indices",),
    grad=lambda F, ins, outs, gouts, shape: [F.gather_nd(gouts[0], ins[1]), None],
    doc="Zeros of ``shape`` with data written at the index tuples (the inverse of "
        "gather_nd); entries with an index outside [0, n) are dropped, as in MXNet, and on a "
        "repeated index one of the writes wins.",
    example="nd.scatter_nd(nd.array([5.0]), nd.array([[1], [0]]), shape=(2, 2))"
            "  # [[0. 0.] [5. 0.]]"))
register(OpDef(
    "_backward_gather_nd", inputs=("data", "indices"), attrs=_SCATTER_ATTRS,
    compute=_scatter_add_compute, infer_shape=_scatter_shape("_backward_gather_nd"),
    infer_type=_first_type, nondiff_inputs=("indices",), host_sync=True,  # range check
    grad=lambda F, ins, outs, gouts, shape: [F.gather_nd(gouts[0], ins[1]), None],
    doc="Gradient of gather_nd: zeros of ``shape`` with data added at the index tuples "
        "(repeated indices add up)."))


# -- batch_take, ravel_multi_index, unravel_index -------------------------------------------

def _batch_take_compute(xp, a, indices):
    rows = a.reshape(-1, a.shape[-1]) if a.ndim else a.reshape(1, 1)
    if indices.size != rows.shape[0]:
        raise MXNetError(f"batch_take: indices has {indices.size} elements but a of shape "
                         f"{tuple(a.shape)} has {rows.shape[0]} rows (all axes but the last)")
    idx = xp.clip(int_index(indices).reshape(-1), 0, rows.shape[1] - 1)
    return rows[xp.arange(rows.shape[0]), idx].reshape(indices.shape)


register(OpDef(
    "batch_take", inputs=("a", "indices"), compute=_batch_take_compute,
    infer_shape=lambda attrs, s: (s, [s[1]]), infer_type=_first_type,
    nondiff_inputs=("indices",),
    doc="``a[i, indices[i]]`` for each row i of ``a`` (indices clipped to the row); "
        "deprecated in MXNet in favour of pick. Not differentiable (as in MXNet).",
    example="nd.batch_take(nd.array([[1.0, 2.0], [3.0, 4.0]]), nd.array([1, 0]))  # [2. 3.]"))


def _ravel_shape_check(op, shape, data_shape, need_2d):
    if not shape:
        raise MXNetError(f"{op}: attribute 'shape' is required (the shape the indices refer to)")
    if any(d == -1 for d in shape[1:]) or any(d < -1 or d == 0 for d in shape):
        raise MXNetError(f"{op}: shape {tuple(shape)} must be positive (only the first "
                         f"entry may be -1)")
    if need_2d and (len(data_shape) != 2 or data_shape[0] != len(shape)):
        raise MXNetError(f"{op}: data must have shape ({len(shape)}, N) for shape "
                         f"{tuple(shape)}, got {tuple(data_shape)}")


def _ravel_compute(xp, data, shape=None):
    _ravel_shape_check("ravel_multi_index", shape, data.shape, True)
    idx = int_index(data)
    strides = np.cumprod((1,) + tuple(shape[:0:-1]), dtype=np.int64)[::-1].copy()
    out = (idx * xp.asarray(strides).reshape(-1, 1)).sum(axis=0)
    return out.astype(data.dtype)


def _unravel_compute(xp, data, shape=None):
    _ravel_shape_check("unravel_index", shape, data.shape, False)
    rest = int_index(data)
    parts = []
    for size in shape[:0:-1]:  # C-style: remainder takes the sign of the dividend
        remainder = xp.fmod(rest, size)
        parts.append(remainder)
        rest = (rest - remainder) // size
    parts.append(rest)
    return xp.stack(parts[::-1]).astype(data.dtype)


_RAVEL_ATTRS = {"shape": Shape(default=None, doc="shape the flat indices refer to (the first "
                                                 "entry may be -1)")}
register(OpDef(
    "_ravel_multi_index", aliases=("ravel_multi_index",), inputs=("data",),
    attrs=_RAVEL_ATTRS, compute=_ravel_compute,
    infer_shape=lambda attrs, s: (s, [None if s[0] is None else tuple(s[0][1:])]),
    doc="Flat indices of the columns of data (one multi-index per column) in an array of "
        "``shape``; no range check, as in MXNet. Not differentiable.",
    example="nd.ravel_multi_index(nd.array([[3, 4], [6, 5]]), shape=(7, 6))  # [24. 29.]"))
register(OpDef(
    "_unravel_index", aliases=("unravel_index",), inputs=("data",), attrs=_RAVEL_ATTRS,
    compute=_unravel_compute,
    infer_shape=lambda attrs, s: (s, [None if s[0] is None or not attrs["shape"] else
                                      (len(attrs["shape"]),) + tuple(s[0])]),
    doc="Multi-indices (one per column of the result) of flat indices in an array of "
        "``shape``; the first axis is not wrapped, as in MXNet. Not differentiable.",
    example="nd.unravel_index(nd.array([22, 41]), shape=(7, 6))  # [[3. 6.] [4. 5.]]"))
