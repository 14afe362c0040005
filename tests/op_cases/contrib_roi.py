"""Cases for ``ops/contrib_roi.py`` (``_contrib_ROIAlign`` and ``_backward_ROIAlign``).

The reference is MXNet's kernel written as plain loops: for each roi, bin and sample point, the
four bilinear corners and their weights (a point more than a pixel outside the map reads
nothing, one within a pixel of the edge is clamped onto it), averaged over the bin's samples;
the backward reference adds each bin's gradient back at the same corners with the same weights.
The real MXNet's numbers are checked in tests/test_roi_align.py.
"""

from __future__ import annotations

import math

import numpy as np

from op_harness import OpCase


def _corners(y, x, height, width):
    """[(row, col, weight)] of one sample, MXNet's edge rules; [] when it reads nothing."""
    if y < -1.0 or y > height or x < -1.0 or x > width:
        return []
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    y1, x1 = y0 + 1, x0 + 1
    if y0 >= height - 1:
        y0 = y1 = height - 1
        y = float(y0)
    if x0 >= width - 1:
        x0 = x1 = width - 1
        x = float(x0)
    ly, lx = y - y0, x - x0
    return [(y0, x0, (1 - ly) * (1 - lx)), (y0, x1, (1 - ly) * lx),
            (y1, x0, ly * (1 - lx)), (y1, x1, ly * lx)]


def _bins(roi, height, width, pooled_size, spatial_scale, sample_ratio=-1, aligned=False,
          **_):
    """{(i, j): [(row, col, weight / count)]} of one roi's bins."""
    ph, pw = pooled_size
    off = 0.5 if aligned else 0.0
    x1, y1, x2, y2 = (float(v) * spatial_scale - off for v in roi[1:])
    rw, rh = x2 - x1, y2 - y1
    if not aligned:
        rw, rh = max(rw, 1.0), max(rh, 1.0)
    gh = sample_ratio if sample_ratio > 0 else math.ceil(rh / ph)
    gw = sample_ratio if sample_ratio > 0 else math.ceil(rw / pw)
    bins = {}
    for i in range(ph):
        for j in range(pw):
            bins[i, j] = [(r, c, w / (gh * gw))
                          for iy in range(gh) for ix in range(gw)
                          for r, c, w in _corners(y1 + i * rh / ph + (iy + 0.5) * rh / ph / gh,
                                                  x1 + j * rw / pw + (ix + 0.5) * rw / pw / gw,
                                                  height, width)]
    return bins


def _channel(c, i, j, pooled_size, position_sensitive=False, **_):
    ph, pw = pooled_size
    return (c * ph + i) * pw + j if position_sensitive else c


def roi_align_ref(data, rois, **attrs):
    ph, pw = attrs["pooled_size"]
    channels = data.shape[1] // (ph * pw if attrs.get("position_sensitive") else 1)
    out = np.zeros((len(rois), channels, ph, pw))
    for n, roi in enumerate(rois):
        if roi[0] < 0:
            continue
        image = data[int(roi[0])].astype(np.float64)
        for (i, j), corners in _bins(roi, *data.shape[2:], **attrs).items():
            for c in range(channels):
                plane = image[_channel(c, i, j, **attrs)]
                out[n, c, i, j] = sum(w * plane[r, col] for r, col, w in corners)
    return out


def roi_align_backward_ref(ograd, rois, data, **attrs):
    grad = np.zeros(data.shape)
    for n, roi in enumerate(rois):
        if roi[0] < 0:
            continue
        for (i, j), corners in _bins(roi, *data.shape[2:], **attrs).items():
            for c in range(ograd.shape[1]):
                for r, col, w in corners:
                    grad[int(roi[0]), _channel(c, i, j, **attrs), r, col] += w * ograd[n, c, i, j]
    return grad


#: in feature-map pixels (spatial_scale 1): inside, across the top-left edge, past the
#: bottom-right edge by more than a pixel, thinner than a pixel, and a skipped roi (batch -1)
_ROIS = [[0, 0.5, 1.0, 4.0, 3.5], [1, -2.0, -1.5, 2.5, 2.0], [0, 3.0, 2.0, 8.5, 7.0],
         [1, 2.2, 1.1, 2.6, 1.4], [-1, 0.0, 0.0, 3.0, 3.0]]


def _inputs(channels, backward=None):
    def make(rng, dtype):
        data = rng.uniform(-1, 1, (2, channels, 5, 6)).astype(dtype)
        rois = np.array(_ROIS, dtype)
        if backward is None:
            return [data, rois]
        return [rng.uniform(-1, 1, (len(_ROIS), *backward)).astype(dtype), rois, data]
    return make


CASES = [
    OpCase("_contrib_ROIAlign", make=_inputs(2), ref=roi_align_ref,
           attrs={"pooled_size": (2, 3), "spatial_scale": 1.0}, id="adaptive"),
    OpCase("_contrib_ROIAlign", make=_inputs(2), ref=roi_align_ref,
           attrs={"pooled_size": (2, 2), "spatial_scale": 1.0, "sample_ratio": 2,
                  "aligned": True}, id="ratio2-aligned"),
    OpCase("_contrib_ROIAlign", make=_inputs(8), ref=roi_align_ref,
           attrs={"pooled_size": (2, 2), "spatial_scale": 0.8, "sample_ratio": 1,
                  "position_sensitive": True}, id="position-sensitive"),
    OpCase("_backward_ROIAlign", make=_inputs(2, backward=(2, 3, 2)),
           ref=roi_align_backward_ref, grad=False,
           attrs={"pooled_size": (3, 2), "spatial_scale": 1.0}, id="adaptive"),
    OpCase("_backward_ROIAlign", make=_inputs(8, backward=(2, 2, 2)),
           ref=roi_align_backward_ref, grad=False,
           attrs={"pooled_size": (2, 2), "spatial_scale": 1.0, "sample_ratio": 2,
                  "position_sensitive": True, "aligned": True}, id="position-sensitive"),
]
