"""MXNet's ``contrib.ROIAlign`` (Mask R-CNN's region feature pooling) and its hidden backward
op, with MXNet 1.9.1's semantics.

Each region of interest ``[batch_index, x1, y1, x2, y2]`` (image coordinates, scaled by
``spatial_scale`` to the feature map; shifted by half a pixel with ``aligned``) is cut into a
``pooled_size`` grid of bins; each bin averages ``sample_ratio`` x ``sample_ratio`` bilinear
samples (``sample_ratio <= 0``: ``ceil(roi size / pooled size)`` per region and axis). MXNet's
edge rules are kept: a sample more than one pixel outside the map adds 0 (it still counts in
the average), one within a pixel of the edge is clamped onto it, a region with a negative batch
index gives zeros, and without ``aligned`` a region smaller than one pixel is widened to 1.

Bilinear sampling is separable, so the op is two matrix products per image: ``Wy @ data @
Wx^T`` with ``Wy`` (regions, pooled rows, H) and ``Wx`` (regions, pooled cols, W) holding each
bin's summed sample weights; the gradient applies the transposed weights.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> roi_align = ops.get("_contrib_ROIAlign")
    >>> data = np.arange(16, dtype="f4").reshape(1, 1, 4, 4)
    >>> rois = np.array([[0, 0, 0, 2, 2]], "f4")
    >>> roi_align.compute(np, data, rois, **roi_align.parse_attrs(
    ...     {"pooled_size": (1, 1), "spatial_scale": 1.0, "sample_ratio": 2})).tolist()
    [[[[5.0]]]]
"""

from __future__ import annotations

import numpy as np

from ..base import MXNetError
from .attrs import Bool, Float, Int, Shape
from .opdef import OpDef, register

__all__ = []

_ATTRS = {
    "pooled_size": Shape(doc="(height, width) of the pooled output"),
    "spatial_scale": Float(doc="feature map size / image size (1 / total stride)"),
    "sample_ratio": Int(default=-1, doc="samples per bin and axis (<= 0: ceil(roi / pooled))"),
    "position_sensitive": Bool(default=False, doc="R-FCN's position-sensitive pooling: bin "
                               "(i, j) of output channel c reads input channel "
                               "(c * ph + i) * pw + j"),
    "aligned": Bool(default=False, doc="Detectron2's half-pixel shift of the roi corners"),
}


def _pooled(pooled_size):
    if len(pooled_size) != 2 or min(pooled_size) <= 0:
        raise MXNetError(f"ROIAlign: pooled_size must be two positive ints (h, w), got "
                         f"{pooled_size}")
    return pooled_size


def _axis_weights(xp, start, size, pooled, grid, length, max_grid):
    """(R, pooled, length) weights: bin p's bilinear sample weights along one axis, summed.

    ``start``/``size``: (R,) the roi's first edge and extent in feature-map pixels; ``grid``:
    (R,) samples per bin. Samples past ``grid`` (adaptive grids below ``max_grid``) and samples
    more than a pixel outside ``[0, length)`` weigh 0, as MXNet's kernel skips them.
    """
    t = start.dtype.type
    bin_size = size / t(pooled)
    p = xp.arange(pooled, dtype=start.dtype).reshape(1, pooled, 1)
    k = xp.arange(max_grid, dtype=start.dtype).reshape(1, 1, max_grid)
    g = grid.reshape(-1, 1, 1)
    bins = bin_size.reshape(-1, 1, 1)
    pos = start.reshape(-1, 1, 1) + p * bins + (k + t(0.5)) * bins / xp.maximum(g, t(1))
    keep = (pos >= t(-1)) & (pos <= t(length)) & (k < g)                   # (R, pooled, G)
    pos = xp.where(keep, pos, t(0))
    pos = xp.maximum(pos, t(0))
    low = xp.floor(pos).astype(np.int64)
    edge = low >= length - 1
    low = xp.where(edge, length - 1, low)
    pos = xp.where(edge, low.astype(start.dtype), pos)
    frac = pos - low.astype(start.dtype)
    high = xp.where(edge, low, low + 1)
    cells = xp.arange(length).reshape(1, 1, 1, length)
    zero = t(0)
    weights = (xp.where(cells == low[..., None], (t(1) - frac)[..., None], zero)
               + xp.where(cells == high[..., None], frac[..., None], zero))
    weights = xp.where(keep[..., None], weights, zero)
    return weights.sum(axis=2)


def _grid_and_count(xp, height, width, pooled_size, sample_ratio):
    """Samples per bin along y and x, (R,) each, in the rois' dtype, and the largest of each."""
    ph, pw = pooled_size
    t = height.dtype.type
    if sample_ratio > 0:
        grid_h = xp.full(height.shape, sample_ratio, dtype=height.dtype)
        return grid_h, grid_h, sample_ratio, sample_ratio
    grid_h = xp.ceil(height / t(ph))
    grid_w = xp.ceil(width / t(pw))
    if not grid_h.size:
        return grid_h, grid_w, 1, 1
    # adaptive grids differ per roi: their largest size sets the sample axis (a host read,
    # declared by host_sync for sample_ratio <= 0)
    return grid_h, grid_w, max(int(grid_h.max()), 1), max(int(grid_w.max()), 1)


def _weights(xp, rois, data_shape, attrs):
    """(Wy, Wx, batch): Wy (R, ph, H) and Wx (R, pw, W) with 1 / count folded into Wy."""
    ph, pw = _pooled(attrs["pooled_size"])
    height, width = data_shape[2:]
    t = rois.dtype.type
    offset = t(0.5) if attrs["aligned"] else t(0)
    scale = t(attrs["spatial_scale"])
    x1, y1, x2, y2 = (rois[:, k] * scale - offset for k in range(1, 5))
    roi_w, roi_h = x2 - x1, y2 - y1
    live = rois[:, 0] >= 0                       # rois with a negative batch index: zeros
    if attrs["aligned"]:
        empty = live & ((roi_w <= 0) | (roi_h <= 0))
        if xp is np and empty.any():             # MXNet aborts; on a device: zeros, no sync
            bad = int(np.flatnonzero(empty)[0])
            raise MXNetError(f"ROIAlign: with aligned=True every roi needs a positive width "
                             f"and height, roi {bad} is {rois[bad].tolist()}")
    else:
        roi_w, roi_h = xp.maximum(roi_w, t(1)), xp.maximum(roi_h, t(1))
    grid_h, grid_w, max_h, max_w = _grid_and_count(xp, roi_h, roi_w, (ph, pw),
                                                   attrs["sample_ratio"])
    wy = _axis_weights(xp, y1, roi_h, ph, grid_h, height, max_h)
    wx = _axis_weights(xp, x1, roi_w, pw, grid_w, width, max_w)
    count = (grid_h * grid_w).reshape(-1, 1, 1)
    used = live.reshape(-1, 1, 1) & (count > 0)
    wy = xp.where(used, wy / xp.maximum(count, t(1)), t(0))
    return wy, wx, xp.trunc(rois[:, 0]).astype(np.int64)


def _check_inputs(data_shape, rois_shape, attrs):
    if len(data_shape) != 4:
        raise MXNetError(f"ROIAlign: data must be 4-d (N, C, H, W), got shape {data_shape}")
    if len(rois_shape) != 2 or rois_shape[1] != 5:
        raise MXNetError(f"ROIAlign: rois must have shape (R, 5) [batch_index, x1, y1, x2, "
                         f"y2], got {rois_shape}")
    ph, pw = _pooled(attrs["pooled_size"])
    if attrs["position_sensitive"] and data_shape[1] % (ph * pw):
        raise MXNetError(f"ROIAlign: with position_sensitive the {data_shape[1]} input "
                         f"channels must divide by pooled_size {ph}x{pw}")


def _sensitive_pick(xp, full, ph, pw):
    """(R, C, ph, pw) from (R, C*ph*pw, ph, pw): bin (i, j) of channel c reads channel
    (c * ph + i) * pw + j."""
    r = full.shape[0]
    full = full.reshape(r, -1, ph * pw, ph * pw)
    diag = xp.arange(ph * pw)
    return full[:, :, diag, diag].reshape(r, -1, ph, pw)


def _forward(xp, data, rois, **attrs):
    _check_inputs(data.shape, rois.shape, attrs)
    ph, pw = attrs["pooled_size"]
    wy, wx, batch = _weights(xp, rois, data.shape, attrs)
    (num, channels, height, width), r = data.shape, rois.shape[0]
    rows = xp.zeros((r * ph, channels * width), dtype=data.dtype)
    for b in range(num):                                 # one product per image
        mine = (batch == b).astype(data.dtype).reshape(-1, 1, 1)
        plane = data[b].transpose(1, 0, 2).reshape(height, channels * width)
        rows += (wy * mine).reshape(r * ph, height) @ plane
    # rows[r, p, c, w] @ Wx[r]^T over w: (R, ph * C, W) @ (R, W, pw)
    out = xp.matmul(rows.reshape(r, ph * channels, width), wx.transpose(0, 2, 1))
    out = out.reshape(r, ph, channels, pw).transpose(0, 2, 1, 3)
    if attrs["position_sensitive"]:
        out = _sensitive_pick(xp, out, ph, pw)
    return xp.ascontiguousarray(out)


def _shape(attrs, in_shapes):
    data, rois = in_shapes
    ph, pw = _pooled(attrs["pooled_size"])
    if data is None or rois is None:
        return in_shapes, [None]
    _check_inputs(data, rois, attrs)
    channels = data[1] // (ph * pw) if attrs["position_sensitive"] else data[1]
    return in_shapes, [(rois[0], channels, ph, pw)]


def _type(attrs, in_types):
    data, rois = in_types
    if data is not None and rois is not None and np.dtype(data) != np.dtype(rois):
        raise MXNetError(f"ROIAlign: rois must have data's dtype {np.dtype(data).name}, got "
                         f"{np.dtype(rois).name}")
    dtype = data if data is not None else rois
    return [dtype, dtype], [dtype]


def _grad(F, ins, outs, gouts, **attrs):
    return [F._backward_ROIAlign(gouts[0], ins[1], ins[0], **attrs), F.zeros_like(ins[1])]


def _host_sync(attrs):
    return attrs["sample_ratio"] <= 0


register(OpDef(
    "_contrib_ROIAlign", inputs=("data", "rois"), attrs=_ATTRS, compute=_forward,
    infer_shape=_shape, infer_type=_type, grad=_grad, nondiff_inputs=("rois",),
    host_sync=_host_sync, views=False,
    doc="Region features (R, C, ph, pw) of a feature map (N, C, H, W): each bin of each roi "
        "[batch_index, x1, y1, x2, y2] averages bilinear samples.",
    example="nd.contrib.ROIAlign(feat, rois, (7, 7), 1 / 16., sample_ratio=2)"))


def _backward(xp, ograd, rois, data, **attrs):
    _check_inputs(data.shape, rois.shape, attrs)
    ph, pw = attrs["pooled_size"]
    if attrs["position_sensitive"]:             # spread each bin back onto its own channel
        r, c = ograd.shape[:2]
        eye = xp.eye(ph * pw, dtype=ograd.dtype)
        ograd = (ograd.reshape(r, c, 1, ph * pw) * eye).reshape(r, c * ph * pw, ph, pw)
    wy, wx, batch = _weights(xp, rois, data.shape, attrs)
    (num, channels, height, width), r = data.shape, rois.shape[0]
    # cols[r, c, p, w]: the bins' gradients spread along x, (R, C * ph, pw) @ (R, pw, W)
    cols = xp.matmul(ograd.reshape(r, channels * ph, pw), wx)
    cols = cols.reshape(r, channels, ph, width).transpose(0, 2, 1, 3)
    cols = cols.reshape(r * ph, channels * width)
    grads = []
    for b in range(num):                                 # then along y, image by image
        mine = (batch == b).astype(ograd.dtype).reshape(-1, 1, 1)
        plane = (wy * mine).reshape(r * ph, height).T @ cols      # (H, C * W)
        grads.append(plane.reshape(height, channels, width).transpose(1, 0, 2))
    return xp.ascontiguousarray(xp.stack(grads).astype(data.dtype, copy=False))


register(OpDef(
    "_backward_ROIAlign", inputs=("ograd", "rois", "data"), attrs=_ATTRS,
    compute=_backward, infer_shape=lambda a, s: (s, [s[2]]),
    infer_type=lambda a, t: (t, [t[0]]), host_sync=_host_sync, views=False,
    doc="ROIAlign's gradient with respect to data (data is read for its shape only): each "
        "bin's gradient spread back over the pixels its samples read, by their weights.",
    example="nd._backward_ROIAlign(g, rois, data, pooled_size=(7, 7), spatial_scale=0.0625)"))
