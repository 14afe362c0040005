"""MXNet's bounding-box ops that GluonCV's detectors call: ``contrib.box_nms`` (alias
``box_non_maximum_suppression``) and ``contrib.box_iou``, with MXNet 1.9.1's semantics.

``box_nms`` on data ``(..., N, K)``: in each batch, the boxes whose score is above
``valid_thresh`` (and whose class is not ``background_id``) are sorted by falling score (ties
keep their order), the first ``topk`` of them go through greedy suppression (a box is dropped
when its IoU with a kept, higher-scored box of the same class, or any class with
``force_suppress``, is above ``overlap_thresh``), and the kept boxes come first in the output,
the remaining rows filled with -1. Its gradient sends each output row's gradient back to the
input row it came from.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> boxes = np.array([[0, .9, 0, 0, 1, 1], [0, .8, 0, 0, 1, .9], [1, .7, 0, 0, 1, 1]], "f4")
    >>> out, _ = ops.get("_contrib_box_nms").compute(np, boxes, overlap_thresh=.5, id_index=0,
    ...     valid_thresh=0, topk=-1, coord_start=2, score_index=1, background_id=-1,
    ...     force_suppress=False, in_format="corner", out_format="corner")
    >>> out[:, :2].tolist()
    [[0.0, 0.8999999761581421], [1.0, 0.699999988079071], [-1.0, -1.0]]
"""

from __future__ import annotations

import numpy as np

from ..base import MXNetError
from .attrs import Bool, Enum, Float, Int
from .opdef import OpDef, register

__all__ = []

_FORMATS = ("corner", "center")


def _extent(lo, hi, center):
    """(low, high) edges along one axis of boxes given as corners or as centre + size."""
    if center:
        half = hi / lo.dtype.type(2)
        return lo - half, lo + half
    return lo, hi


def _overlap_1d(a_lo, a_hi, b_lo, b_hi, center):
    """Overlapping length along one axis, clipped at 0, MXNet's arithmetic."""
    al, ar = _extent(a_lo, a_hi, center)
    bl, br = _extent(b_lo, b_hi, center)
    width = np.minimum(ar, br) - np.maximum(al, bl)
    return np.where(width > 0, width, width.dtype.type(0))


def _area(box, center):
    """Area of boxes (..., 4): 0 for a negative width or height."""
    if center:
        w, h = box[..., 2], box[..., 3]
    else:
        w, h = box[..., 2] - box[..., 0], box[..., 3] - box[..., 1]
    return np.where((w < 0) | (h < 0), w.dtype.type(0), w * h)


def _intersection(a, b, center):
    return (_overlap_1d(a[..., 0], a[..., 2], b[..., 0], b[..., 2], center)
            * _overlap_1d(a[..., 1], a[..., 3], b[..., 1], b[..., 3], center))


# -- box_nms ------------------------------------------------------------------------------

_NMS_ATTRS = {
    "overlap_thresh": Float(default=0.5, doc="suppress above this IoU"),
    "valid_thresh": Float(default=0.0, doc="boxes scoring above this take part"),
    "topk": Int(default=-1, doc="keep only the top k valid boxes per batch (-1: all)"),
    "coord_start": Int(default=2, doc="index of the first of the 4 coordinates"),
    "score_index": Int(default=1, doc="index of the score"),
    "id_index": Int(default=-1, doc="index of the class id (-1: no classes)"),
    "background_id": Int(default=-1, doc="class id of the background, never valid"),
    "force_suppress": Bool(default=False, doc="suppress across classes too"),
    "in_format": Enum(_FORMATS, default="corner", doc="corner [x1, y1, x2, y2] or center "
                      "[x, y, w, h]"),
    "out_format": Enum(_FORMATS, default="corner", doc="the output's coordinate format"),
}


def _kept(rows, order, attrs):
    """Indices (into ``rows``) of the boxes greedy suppression keeps, in ``order``."""
    dtype = rows.dtype.type
    center = attrs["in_format"] == "center"
    c0 = attrs["coord_start"]
    boxes = rows[order, c0:c0 + 4]
    areas = _area(boxes, center)
    alive = np.ones(len(order), bool)
    same_class = attrs["id_index"] >= 0 and not attrs["force_suppress"]
    ids = rows[order, attrs["id_index"]].astype(np.int64) if same_class else None
    thresh = np.float32(attrs["overlap_thresh"])
    for ref in range(len(order)):
        if not alive[ref]:
            continue
        later = np.arange(ref + 1, len(order))
        later = later[alive[later]]
        if same_class:
            later = later[ids[later] == ids[ref]]
        if not len(later):
            continue
        inter = _intersection(boxes[ref], boxes[later], center)
        iou = inter / (areas[ref] + areas[later] - inter)
        alive[later[iou > dtype(thresh)]] = False
    return order[alive]


def _convert(out, attrs):
    """MXNet converts the coordinates of rows whose first coordinate is >= 0."""
    if attrs["in_format"] == attrs["out_format"]:
        return
    c0 = attrs["coord_start"]
    box = out[:, c0:c0 + 4]
    rows = box[:, 0] >= 0
    a, b, c, d = (box[rows, k].copy() for k in range(4))
    two = out.dtype.type(2)
    if attrs["out_format"] == "center":
        box[rows] = np.stack([(a + c) / two, (b + d) / two, c - a, d - b], axis=1)
    else:
        box[rows] = np.stack([a - c / two, b - d / two, a + c / two, b + d / two], axis=1)


def _nms_batch(rows, attrs):
    """(output rows, record of source rows) of one batch (N, K)."""
    num = rows.shape[0]
    score = rows[:, attrs["score_index"]]
    valid = score > rows.dtype.type(np.float32(attrs["valid_thresh"]))
    if attrs["id_index"] >= 0:
        valid &= rows[:, attrs["id_index"]] != rows.dtype.type(attrs["background_id"])
    candidates = np.flatnonzero(valid)
    order = candidates[np.argsort(-score[candidates], kind="stable")]
    topk = num if attrs["topk"] < 0 else min(num, attrs["topk"])
    kept = _kept(rows, order[:topk], attrs)
    out = np.full_like(rows, -1)
    out[:len(kept)] = rows[kept]
    record = np.full((num, 1), -1.0, rows.dtype)
    record[:len(kept), 0] = kept
    return out, record


def _check_nms(attrs, width):
    c0, k = attrs["coord_start"], width
    for name, index in (("coord_start + 3", c0 + 3), ("score_index", attrs["score_index"]),
                        ("id_index", attrs["id_index"])):
        if index >= k:
            raise MXNetError(f"box_nms: {name} = {index} is outside the last axis of size {k}")


def _nms_compute(xp, data, **attrs):
    if data.ndim < 2:
        raise MXNetError(f"box_nms: data must have at least 2 dimensions (..., N, K), got "
                         f"shape {data.shape}")
    _check_nms(attrs, data.shape[-1])
    host = np.asarray(data.get() if hasattr(data, "get") else data)
    num, width = host.shape[-2:]
    flat = host.reshape(-1, num, width)
    if attrs["topk"] == 0:
        out = flat.copy()
        record = np.arange(flat.shape[0] * num, dtype=host.dtype).reshape(-1, num, 1)
    else:
        outs, records = zip(*(_nms_batch(b, attrs) for b in flat))
        out, record = np.stack(outs), np.stack(records)
        for b in range(flat.shape[0]):
            live = record[b, :, 0] >= 0
            record[b, live, 0] += b * num            # MXNet records global row numbers
            _convert(out[b], attrs)
    shape = host.shape[:-1] + (1,)
    return xp.asarray(out.reshape(host.shape)), xp.asarray(record.reshape(shape))


def _nms_shape(attrs, in_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, [None, None]
    return in_shapes, [data, data[:-1] + (1,)]


def _nms_grad(F, ins, outs, gouts, **attrs):
    return [F._backward_contrib_box_nms(gouts[0], outs[1], **attrs)]


register(OpDef(
    "_contrib_box_nms", aliases=("_contrib_box_non_maximum_suppression",),
    attrs=_NMS_ATTRS, compute=_nms_compute, infer_shape=_nms_shape,
    infer_type=lambda a, t: (t, [t[0], t[0]]), grad=_nms_grad, num_outputs=2,
    num_visible_outputs=1, output_names=("output", "record"), host_sync=True, views=False,
    doc="Non-maximum suppression of scored boxes (..., N, K): kept boxes by falling score "
        "first, the other rows -1.",
    example="nd.contrib.box_nms(dets, overlap_thresh=0.45, topk=400, id_index=0)"))


def _nms_backward_compute(xp, ograd, record, **attrs):
    num, width = ograd.shape[-2:]
    flat_g = ograd.reshape(-1, width)
    rows = record.reshape(-1)
    grad = xp.zeros_like(flat_g)
    live = rows >= 0
    grad[rows[live].astype(np.int64)] = flat_g[live]
    return grad.reshape(ograd.shape)


register(OpDef(
    "_backward_contrib_box_nms", inputs=("ograd", "record"), attrs=_NMS_ATTRS,
    compute=_nms_backward_compute, infer_shape=lambda a, s: (s, [s[0]]),
    infer_type=lambda a, t: (t, [t[0]]), views=False, host_sync=True,
    doc="Gradient of box_nms: each output row's gradient back at the input row it copied.",
    example="nd._backward_contrib_box_nms(g, record)"))


# -- box_iou ------------------------------------------------------------------------------

def _iou_compute(xp, lhs, rhs, *, format="corner"):  # noqa: A002  (MXNet's name)
    center = format == "center"
    a = lhs.reshape(-1, 1, 4)
    b = rhs.reshape(1, -1, 4)
    inter = _xp_intersection(xp, a, b, center)
    union = _xp_area(xp, a, center) + _xp_area(xp, b, center) - inter
    positive = inter > 0
    iou = xp.where(positive, inter / xp.where(positive, union, union.dtype.type(1)),
                   inter.dtype.type(0))
    return iou.reshape(lhs.shape[:-1] + rhs.shape[:-1]).astype(lhs.dtype, copy=False)


def _xp_extent(lo, hi, center):
    if center:
        half = hi / hi.dtype.type(2)
        return lo - half, lo + half
    return lo, hi


def _xp_intersection(xp, a, b, center):
    total = None
    for lo, hi in ((0, 2), (1, 3)):
        al, ar = _xp_extent(a[..., lo], a[..., hi], center)
        bl, br = _xp_extent(b[..., lo], b[..., hi], center)
        width = xp.minimum(ar, br) - xp.maximum(al, bl)
        width = xp.where(width > 0, width, width.dtype.type(0))
        total = width if total is None else total * width
    return total


def _xp_area(xp, box, center):
    w = box[..., 2] if center else box[..., 2] - box[..., 0]
    h = box[..., 3] if center else box[..., 3] - box[..., 1]
    return xp.where((w < 0) | (h < 0), w.dtype.type(0), w * h)


def _iou_shape(attrs, in_shapes):
    lhs, rhs = in_shapes
    for name, shape in (("lhs", lhs), ("rhs", rhs)):
        if shape is not None and (len(shape) < 2 or shape[-1] != 4):
            raise MXNetError(f"box_iou: {name} must have shape (..., 4), got {shape}")
    if lhs is None or rhs is None:
        return in_shapes, [None]
    return in_shapes, [lhs[:-1] + rhs[:-1]]


register(OpDef(
    "_contrib_box_iou", inputs=("lhs", "rhs"),
    attrs={"format": Enum(_FORMATS, default="corner", doc="corner or center boxes")},
    compute=_iou_compute, infer_shape=_iou_shape, infer_type=lambda a, t: (t, [t[0]]),
    grad=lambda F, ins, outs, gouts, **a: [F.zeros_like(ins[0]), F.zeros_like(ins[1])],
    views=False,
    doc="Intersection over union of every lhs box (..., 4) with every rhs box (..., 4): "
        "shape lhs.shape[:-1] + rhs.shape[:-1]; 0 where boxes do not overlap. Its gradient "
        "is 0, as in MXNet.",
    example="nd.contrib.box_iou(anchors, gt_boxes)  # (A, G)"))


# -- box_encode / box_decode --------------------------------------------------------------

def _corner_to_center(box):
    """(x, y, w, h) of corner boxes (..., 4), MXNet's order of operations."""
    w = box[..., 2] - box[..., 0]
    h = box[..., 3] - box[..., 1]
    half = box.dtype.type(0.5)
    return box[..., 0] + w * half, box[..., 1] + h * half, w, h


def _encode_compute(xp, samples, matches, anchors, refs, means, stds):
    batch, num = samples.shape
    rows = xp.arange(batch).reshape(batch, 1)
    ref = refs[rows, matches.astype(np.int64)]                   # (B, N, 4)
    rx, ry, rw, rh = _corner_to_center(ref)
    ax, ay, aw, ah = _corner_to_center(anchors)
    valid = samples > samples.dtype.type(0.5)
    raw = xp.stack([(rx - ax) / aw, (ry - ay) / ah, xp.log(rw / aw), xp.log(rh / ah)], axis=-1)
    targets = (raw - means.reshape(1, 1, 4)) / stds.reshape(1, 1, 4)
    zero = targets.dtype.type(0)
    mask = xp.broadcast_to(valid[..., None], targets.shape)
    return (xp.where(mask, targets, zero).astype(samples.dtype, copy=False),
            mask.astype(samples.dtype))


def _encode_shape(attrs, in_shapes):
    samples, _, anchors, *_ = in_shapes
    if samples is None:
        return in_shapes, [None, None]
    if len(samples) != 2 or (anchors is not None and tuple(anchors) != (*samples, 4)):
        raise MXNetError(f"box_encode: samples must be (B, N) and anchors (B, N, 4), got "
                         f"{samples} and {anchors}")
    out = (*samples, 4)
    return in_shapes, [out, out]


register(OpDef(
    "_contrib_box_encode", inputs=("samples", "matches", "anchors", "refs", "means", "stds"),
    compute=_encode_compute, infer_shape=_encode_shape,
    infer_type=lambda a, t: (t, [t[0], t[0]]), num_outputs=2,
    output_names=("output0", "output1"), views=False,
    grad=lambda F, ins, outs, gouts: [F.zeros_like(x) for x in ins],
    doc="SSD's training targets: for anchors whose sample is positive (> 0.5), the matched "
        "reference box's offsets (dx/w, dy/h, log w ratio, log h ratio), normalized by "
        "means/stds; with the 0/1 masks.",
    example="targets, masks = nd.contrib.box_encode(samples, matches, anchors, refs, means, "
            "stds)"))

_DECODE_ATTRS = {**{f"std{i}": Float(default=1.0, doc=f"scale of offset {i}")
                    for i in range(4)},
                 "clip": Float(default=-1.0, doc="clip the log sizes to this (> 0)"),
                 "format": Enum(_FORMATS, default="center", doc="the anchors' format")}


def _decode_compute(xp, data, anchors, *, std0, std1, std2, std3, clip, format):  # noqa: A002
    t = data.dtype.type
    anchors = anchors.reshape(1, -1, 4)
    if format == "corner":
        ax, ay, aw, ah = _corner_to_center(anchors)
    else:
        ax, ay, aw, ah = (anchors[..., k] for k in range(4))
    ox = data[..., 0] * t(std0) * aw + ax
    oy = data[..., 1] * t(std1) * ah + ay
    dw, dh = data[..., 2] * t(std2), data[..., 3] * t(std3)
    if clip > 0:
        dw, dh = xp.minimum(dw, t(clip)), xp.minimum(dh, t(clip))
    ow = xp.exp(dw) * aw * t(0.5)
    oh = xp.exp(dh) * ah * t(0.5)
    return xp.stack([ox - ow, oy - oh, ox + ow, oy + oh], axis=-1).astype(data.dtype,
                                                                          copy=False)


def _decode_shape(attrs, in_shapes):
    data = in_shapes[0]
    if data is not None and (len(data) != 3 or data[-1] != 4):
        raise MXNetError(f"box_decode: data must be (B, N, 4), got {data}")
    return in_shapes, [data]


register(OpDef(
    "_contrib_box_decode", inputs=("data", "anchors"), attrs=_DECODE_ATTRS,
    compute=_decode_compute, infer_shape=_decode_shape, infer_type=lambda a, t: (t, [t[0]]),
    grad=lambda F, ins, outs, gouts, **a: [F.zeros_like(ins[0]), F.zeros_like(ins[1])],
    views=False,
    doc="Boxes (corners) from offsets (B, N, 4) relative to anchors (center or corner "
        "format), scaled by std0..std3, log sizes clipped at clip.",
    example="nd.contrib.box_decode(offsets, anchors, 0.1, 0.1, 0.2, 0.2)"))


# -- bipartite_matching ---------------------------------------------------------------------

def _match_one(scores, threshold, is_ascend, topk):
    rows, cols = scores.shape
    flat = scores.reshape(-1)
    order = np.argsort(flat if is_ascend else -flat, kind="stable")
    row_marker = np.full(rows, -1.0, scores.dtype)
    col_marker = np.full(cols, -1.0, scores.dtype)
    count = 0
    for idx in order:
        r, c = divmod(int(idx), cols)
        if row_marker[r] != -1 or col_marker[c] != -1:
            continue
        passes = flat[idx] < threshold if is_ascend else flat[idx] > threshold
        if not passes:
            break
        row_marker[r], col_marker[c] = c, r
        count += 1
        if 0 < topk < count:    # MXNet stops after topk + 1 matches
            break
    return row_marker, col_marker


def _matching_compute(xp, data, *, is_ascend, threshold, topk):
    host = np.asarray(data.get() if hasattr(data, "get") else data)
    rows, cols = host.shape[-2:]
    flat = host.reshape(-1, rows, cols)
    pairs = [_match_one(b, np.float32(threshold).astype(host.dtype), is_ascend, topk)
             for b in flat]
    row_marker = np.stack([p[0] for p in pairs]).reshape(host.shape[:-1])
    col_marker = np.stack([p[1] for p in pairs]).reshape(host.shape[:-2] + (cols,))
    return xp.asarray(row_marker), xp.asarray(col_marker)


def _matching_shape(attrs, in_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, [None, None]
    if len(data) < 2:
        raise MXNetError(f"bipartite_matching: the score matrix must have 2 or more "
                         f"dimensions, got shape {data}")
    return in_shapes, [data[:-1], data[:-2] + data[-1:]]


register(OpDef(
    "_contrib_bipartite_matching",
    attrs={"is_ascend": Bool(default=False, doc="lower scores match first"),
           "threshold": Float(doc="scores must be above it (below with is_ascend)"),
           "topk": Int(default=-1, doc="stop after this many matches (-1: no limit)")},
    compute=_matching_compute, infer_shape=_matching_shape,
    infer_type=lambda a, t: (t, [t[0], t[0]]), num_outputs=2, host_sync=True,
    output_names=("output0", "output1"), views=False,
    grad=lambda F, ins, outs, gouts, **a: [F.zeros_like(ins[0])],
    doc="Greedy bipartite matching of a (..., rows, cols) score matrix, best scores first: "
        "the matched column of each row and the matched row of each column (-1: none). As "
        "in MXNet, topk=k stops after k + 1 matches.",
    example="rows, cols = nd.contrib.bipartite_matching(ious, threshold=1e-12)"))
