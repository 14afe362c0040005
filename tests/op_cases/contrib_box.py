"""Cases for ``ops/contrib_box.py`` (box_nms and its backward op, box_iou),
``ops/contrib_attention.py`` (the interleaved self-attention matmuls, div_sqrt_dim) and
``ops/amp_cast.py`` (amp_cast, amp_multicast).

The NMS reference is the definition written as plain loops: valid boxes (score above
valid_thresh, class not background) by falling score (ties in input order), the first topk,
each dropped when a kept higher-scored box of its class (any class with force_suppress)
overlaps it by IoU > overlap_thresh; kept rows first, the rest -1. Scores are distinct draws,
so the order has one right answer.
"""

from __future__ import annotations

import numpy as np

from op_harness import OpCase


def _iou(a, b):
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    inter = max(w, 0.0) * max(h, 0.0)
    if inter <= 0:
        return 0.0

    def area(box):
        bw, bh = box[2] - box[0], box[3] - box[1]
        return 0.0 if bw < 0 or bh < 0 else bw * bh

    return inter / (area(a) + area(b) - inter)


def nms_ref(data, overlap_thresh=0.5, valid_thresh=0.0, topk=-1, coord_start=2,
            score_index=1, id_index=-1, background_id=-1, force_suppress=False, **_):
    flat = data.reshape(-1, *data.shape[-2:]).astype(np.float64)
    out = np.full(flat.shape, -1.0)
    for b, rows in enumerate(flat):
        valid = [i for i in range(len(rows)) if rows[i, score_index] > valid_thresh
                 and (id_index < 0 or rows[i, id_index] != background_id)]
        order = sorted(valid, key=lambda i: -rows[i, score_index])
        if topk >= 0:
            order = order[:topk]
        kept = []
        for i in order:
            box = rows[i, coord_start:coord_start + 4]
            if all(_iou(rows[k, coord_start:coord_start + 4], box) <= overlap_thresh
                   for k in kept
                   if force_suppress or id_index < 0 or rows[k, id_index] == rows[i, id_index]):
                kept.append(i)
        out[b, :len(kept)] = rows[kept]
    return out.reshape(data.shape)


def _detections(batch_shape, num=12, classes=3):
    def make(rng, dtype):
        ids = rng.randint(-1, classes, batch_shape + (num, 1)).astype(dtype)
        scores = rng.permutation(np.prod(batch_shape + (num,))).reshape(
            batch_shape + (num, 1)).astype(dtype) / 100
        lo = rng.uniform(0, 4, batch_shape + (num, 2))
        size = rng.uniform(1, 4, batch_shape + (num, 2))
        return [np.concatenate([ids, scores, lo, lo + size], axis=-1).astype(dtype)]
    return make


def iou_ref(lhs, rhs, format="corner"):  # noqa: A002
    a, b = lhs.reshape(-1, 4).astype(np.float64), rhs.reshape(-1, 4).astype(np.float64)
    if format == "center":
        a = np.concatenate([a[:, :2] - a[:, 2:] / 2, a[:, :2] + a[:, 2:] / 2], axis=1)
        b = np.concatenate([b[:, :2] - b[:, 2:] / 2, b[:, :2] + b[:, 2:] / 2], axis=1)
    out = np.array([[_iou(x, y) for y in b] for x in a])
    return out.reshape(lhs.shape[:-1] + rhs.shape[:-1])


def _boxes(*shapes):
    def make(rng, dtype):
        arrays = []
        for shape in shapes:
            lo = rng.uniform(0, 4, shape[:-1] + (2,))
            arrays.append(np.concatenate([lo, lo + rng.uniform(0.5, 3, lo.shape)],
                                         axis=-1).astype(dtype))
        return arrays
    return make


def _nms_backward_inputs(rng, dtype):
    grad = rng.uniform(-1, 1, (2, 5, 6)).astype(dtype)
    record = np.array([[3, 0, -1, -1, -1], [7, 9, 5, -1, -1]], dtype).reshape(2, 5, 1)
    return [grad, record]


def nms_backward_ref(grad, record, **_):
    flat = grad.reshape(-1, grad.shape[-1])
    out = np.zeros_like(flat, dtype=np.float64)
    for i, src in enumerate(record.reshape(-1)):
        if src >= 0:
            out[int(src)] = flat[i]
    return out.reshape(grad.shape)


def _mixed(*dtypes):
    def make(rng, dtype):
        return [rng.uniform(-2, 2, (2, 3)).astype(d) for d in dtypes]
    return make


def multicast_ref(*data, num_outputs, cast_narrow=False):
    names = [d.dtype.name for d in data]
    if cast_narrow:
        target = "float16" if "float16" in names else "float32"
    else:
        target = "float32" if "float32" in names else names[0]
    return tuple(d.astype(target) if d.dtype.name in ("float16", "float32") else d
                 for d in data)


CASES = [
    OpCase("_contrib_box_nms", make=_detections((2,)), ref=nms_ref, grad=False,
           attrs={"id_index": 0, "overlap_thresh": 0.3}, id="classes"),
    OpCase("_contrib_box_nms", make=_detections((2, 2)), ref=nms_ref, grad=False,
           attrs={"id_index": 0, "force_suppress": True, "topk": 5, "valid_thresh": 0.055,
                  "background_id": 0}, id="force-topk-background"),
    OpCase("_contrib_box_nms", make=_detections(()), ref=nms_ref, grad=False,
           attrs={"overlap_thresh": 0.2}, id="no-classes"),
    OpCase("_backward_contrib_box_nms", make=_nms_backward_inputs, ref=nms_backward_ref,
           grad=False),
    OpCase("_contrib_box_iou", make=_boxes((5, 4), (2, 3, 4)), ref=iou_ref, grad=False),
    OpCase("_contrib_box_iou", make=_boxes((2, 2, 4), (3, 4)), ref=iou_ref, grad=False,
           attrs={"format": "center"}, id="center"),
    OpCase("amp_cast", shapes=[(2, 3)], attrs={"dtype": "float16"}, dtypes=("float32",),
           ref=lambda x, dtype: x.astype(dtype), grad=False, rtol=1e-3, atol=1e-3),
    OpCase("amp_cast", shapes=[(2, 3)], attrs={"dtype": "float16"}, dtypes=("float64",),
           ref=lambda x, dtype: x, id="float64-unchanged"),
    OpCase("amp_multicast", make=_mixed("float16", "float32"), attrs={"num_outputs": 2},
           ref=multicast_ref, grad=False, rtol=1e-3, atol=1e-3, id="widest"),
    OpCase("amp_multicast", make=_mixed("float16", "float32"),
           attrs={"num_outputs": 2, "cast_narrow": True}, ref=multicast_ref, grad=False,
           rtol=1e-3, atol=1e-3, id="narrow"),
    OpCase("amp_multicast", make=_mixed("int32", "float16"), attrs={"num_outputs": 2},
           ref=multicast_ref, grad=False, id="first-dtype"),
]


# -- ops/contrib_attention.py: the references slice q, k, v head by head ---------------------

def _heads(qkv, heads):
    """{(batch, head): (q, k, v)}, each (seq, dim), from the interleaved layout."""
    seq, batch, width = qkv.shape
    dim = width // (3 * heads)
    parts = qkv.reshape(seq, batch, heads, 3, dim).astype(np.float64)
    return {(b, h): tuple(parts[:, b, h, i] for i in range(3))
            for b in range(batch) for h in range(heads)}, dim


def qk_ref(qkv, heads):
    parts, dim = _heads(qkv, heads)
    batch = qkv.shape[1]
    return np.stack([parts[b, h][0] @ parts[b, h][1].T / np.sqrt(dim)
                     for b in range(batch) for h in range(heads)])


def valatt_ref(qkv, attention, heads):
    parts, dim = _heads(qkv, heads)
    seq, batch = qkv.shape[:2]
    out = np.zeros((seq, batch, heads, dim))
    for b in range(batch):
        for h in range(heads):
            out[:, b, h] = attention[b * heads + h] @ parts[b, h][2]
    return out.reshape(seq, batch, heads * dim)


def _qkv_and(shape_extra):
    def make(rng, dtype):
        qkv = rng.uniform(-1, 1, (5, 2, 2 * 3 * 4)).astype(dtype)
        return [qkv] + [rng.uniform(0, 1, s).astype(dtype) for s in shape_extra]
    return make


def qk_backward_ref(g, qkv, heads):
    parts, dim = _heads(qkv, heads)
    seq, batch = qkv.shape[:2]
    out = np.zeros((seq, batch, heads, 3, dim))
    for b in range(batch):
        for h in range(heads):
            q, k, _ = parts[b, h]
            gi = g[b * heads + h] / np.sqrt(dim)
            out[:, b, h, 0], out[:, b, h, 1] = gi @ k, gi.T @ q
    return out.reshape(qkv.shape)


def valatt_backward_ref(g, qkv, attention, heads):
    parts, dim = _heads(qkv, heads)
    seq, batch = qkv.shape[:2]
    dqkv = np.zeros((seq, batch, heads, 3, dim))
    datt = np.zeros(attention.shape)
    gh = g.reshape(seq, batch, heads, dim)
    for b in range(batch):
        for h in range(heads):
            v = parts[b, h][2]
            datt[b * heads + h] = gh[:, b, h] @ v.T
            dqkv[:, b, h, 2] = attention[b * heads + h].T @ gh[:, b, h]
    return dqkv.reshape(qkv.shape), datt


CASES += [
    OpCase("_contrib_interleaved_matmul_selfatt_qk", make=_qkv_and([]), attrs={"heads": 2},
           ref=qk_ref),
    OpCase("_contrib_interleaved_matmul_selfatt_valatt", make=_qkv_and([(4, 5, 5)]),
           attrs={"heads": 2}, ref=valatt_ref),
    OpCase("_backward_interleaved_matmul_selfatt_qk",
           make=lambda rng, dtype: [rng.uniform(-1, 1, (4, 5, 5)).astype(dtype),
                                    rng.uniform(-1, 1, (5, 2, 24)).astype(dtype)],
           attrs={"heads": 2}, ref=qk_backward_ref, grad=False),
    OpCase("_backward_interleaved_matmul_selfatt_valatt",
           make=lambda rng, dtype: [rng.uniform(-1, 1, (5, 2, 8)).astype(dtype),
                                    rng.uniform(-1, 1, (5, 2, 24)).astype(dtype),
                                    rng.uniform(0, 1, (4, 5, 5)).astype(dtype)],
           attrs={"heads": 2}, ref=valatt_backward_ref, grad=False),
    OpCase("_contrib_div_sqrt_dim", shapes=[(2, 3, 4)],
           ref=lambda x: x / np.sqrt(x.shape[-1])),
]


# -- box_encode / box_decode: the offsets of SSD's box coder, written out ----------------------

def _center(box):
    w, h = box[..., 2] - box[..., 0], box[..., 3] - box[..., 1]
    return box[..., 0] + w / 2, box[..., 1] + h / 2, w, h


def encode_ref(samples, matches, anchors, refs, means, stds):
    b = np.arange(samples.shape[0])[:, None]
    rx, ry, rw, rh = _center(refs.astype(np.float64)[b, matches.astype(int)])
    ax, ay, aw, ah = _center(anchors.astype(np.float64))
    raw = np.stack([(rx - ax) / aw, (ry - ay) / ah, np.log(rw / aw), np.log(rh / ah)], -1)
    valid = (samples > 0.5)[..., None]
    return np.where(valid, (raw - means) / stds, 0.0), np.broadcast_to(valid, raw.shape) * 1.0


def decode_ref(x, anchors, std0=1.0, std1=1.0, std2=1.0, std3=1.0, clip=-1.0,
               format="center"):  # noqa: A002
    a = anchors.astype(np.float64).reshape(1, -1, 4)
    ax, ay, aw, ah = _center(a) if format == "corner" else (a[..., k] for k in range(4))
    dw, dh = x[..., 2] * std2, x[..., 3] * std3
    if clip > 0:
        dw, dh = np.minimum(dw, clip), np.minimum(dh, clip)
    ox, oy = x[..., 0] * std0 * aw + ax, x[..., 1] * std1 * ah + ay
    ow, oh = np.exp(dw) * aw / 2, np.exp(dh) * ah / 2
    return np.stack([ox - ow, oy - oh, ox + ow, oy + oh], -1)


def _encode_inputs(rng, dtype):
    boxes = _boxes((2, 6, 4), (2, 3, 4))(rng, dtype)
    samples = rng.choice([-1.0, 0.0, 1.0], (2, 6)).astype(dtype)
    matches = rng.randint(0, 3, (2, 6)).astype(dtype)
    return [samples, matches, *boxes, np.array([0.0, 0.1, 0.0, -0.1], dtype),
            np.array([0.1, 0.1, 0.2, 0.2], dtype)]


def _decode_inputs(rng, dtype):
    return [rng.uniform(-1, 1, (2, 5, 4)).astype(dtype), _boxes((1, 5, 4))(rng, dtype)[0]]


CASES += [
    OpCase("_contrib_box_encode", make=_encode_inputs, ref=encode_ref, grad=False),
    OpCase("_contrib_box_decode", make=_decode_inputs, ref=decode_ref, grad=False,
           attrs={"std0": 0.1, "std1": 0.1, "std2": 0.2, "std3": 0.2, "format": "corner"},
           id="corner"),
    OpCase("_contrib_box_decode", make=_decode_inputs, ref=decode_ref, grad=False,
           attrs={"clip": 0.3}, id="center-clip"),
]


# -- bipartite_matching: greedy over every (row, col) pair, best score first ------------------

def matching_ref(scores, threshold, is_ascend=False, topk=-1):
    rows, cols = scores.shape[-2:]
    flat = scores.reshape(-1, rows, cols)
    row_out = np.full(flat.shape[:2], -1.0)
    col_out = np.full((flat.shape[0], cols), -1.0)
    for b, matrix in enumerate(flat):
        pairs = sorted(((matrix[r, c], r * cols + c) for r in range(rows) for c in range(cols)),
                       key=lambda p: (p[0] if is_ascend else -p[0], p[1]))
        count = 0
        for score, idx in pairs:
            r, c = divmod(idx, cols)
            if row_out[b, r] != -1 or col_out[b, c] != -1:
                continue
            if not (score < threshold if is_ascend else score > threshold):
                break
            row_out[b, r], col_out[b, c] = c, r
            count += 1
            if 0 < topk < count:
                break
    return (row_out.reshape(scores.shape[:-1]),
            col_out.reshape(scores.shape[:-2] + (cols,)))


def _scores(rng, dtype):
    return [rng.permutation(24).reshape(2, 4, 3).astype(dtype) / 24]


CASES += [
    OpCase("_contrib_bipartite_matching", make=_scores, attrs={"threshold": 0.2},
           ref=matching_ref, grad=False),
    OpCase("_contrib_bipartite_matching", make=_scores, attrs={"threshold": 0.5, "topk": 1},
           ref=matching_ref, grad=False, id="topk"),
    OpCase("_contrib_bipartite_matching", make=_scores,
           attrs={"threshold": 0.6, "is_ascend": True}, ref=matching_ref, grad=False,
           id="ascend"),
]


# -- gradient checks (finite differences) ---------------------------------------------------

def _nms_grad_input(rng, dtype):
    """Distinct positive scores and class ids 0.5, 1.5, 2.5 (read as 0, 1, 2, also when
    perturbed): a small perturbation changes no decision, so the output is a selection of
    input rows."""
    ids = rng.randint(0, 3, (2, 8, 1)).astype(dtype) + 0.5
    scores = (rng.permutation(16).reshape(2, 8, 1) + 1).astype(dtype) / 20
    lo = rng.uniform(0, 4, (2, 8, 2))
    return [np.concatenate([ids, scores, lo, lo + rng.uniform(1, 4, (2, 8, 2))],
                           axis=-1).astype(dtype)]


CASES += [
    OpCase("_contrib_box_nms", make=_nms_grad_input, ref=nms_ref, dtypes=("float64",),
           attrs={"id_index": 0, "overlap_thresh": 0.3}, id="gradient"),
    OpCase("amp_multicast", make=_mixed("float64", "float64"), attrs={"num_outputs": 2},
           ref=multicast_ref, dtypes=("float64",), id="gradient"),
    OpCase("_contrib_bipartite_matching", make=_scores, attrs={"threshold": 0.2},
           ref=matching_ref, dtypes=("float64",), id="gradient"),
]

#: ops whose MXNet gradient is zero by definition (not their derivative), checked by
#: tests/test_mxnet_ecosystem_names.py::test_box_ops_have_mxnets_zero_gradient
TESTED_ELSEWHERE = {
    name: "MXNet defines its gradient as zero (test_box_ops_have_mxnets_zero_gradient)"
    for name in ("_contrib_box_iou", "_contrib_box_encode", "_contrib_box_decode")
}
