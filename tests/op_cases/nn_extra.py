"""Cases for ``ops/nn_extra.py``: ``LRN`` (odd and even windows, 2-D to 5-D data) and its
hidden ``_backward_LRN``; ``UpSampling`` nearest (one input, several inputs of different sizes
concatenated or summed) and bilinear (a depthwise transposed convolution written out with
loops here), against NumPy written from the formulas MXNet documents."""

from __future__ import annotations

import math

import numpy as np

from op_harness import OpCase

# -- LRN --------------------------------------------------------------------------------------

def _lrn_parts(x, alpha, knorm, nsize):
    """(scale, window indices) with the window (nsize - 1) // 2 channels each way."""
    half = (nsize - 1) // 2
    channels = x.shape[1]
    windows = [range(max(0, i - half), min(channels, i + half + 1)) for i in range(channels)]
    scale = np.stack([knorm + alpha / nsize * (x[:, list(w)] ** 2).sum(axis=1)
                      for w in windows], axis=1)
    return scale, windows


def _lrn_ref(x, alpha=1e-4, beta=0.75, knorm=2.0, nsize=None):
    scale, _ = _lrn_parts(x.astype(np.float64), alpha, knorm, nsize)
    return (x * scale ** -beta).astype(x.dtype), scale.astype(x.dtype)


def _lrn_visible_ref(x, **attrs):
    return _lrn_ref(x, **attrs)[0]


def _lrn_backward_ref(g, x, alpha=1e-4, beta=0.75, knorm=2.0, nsize=None):
    """The chain rule written per pair of channels (i is the output, m the input)."""
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    scale, windows = _lrn_parts(x64, alpha, knorm, nsize)
    out = g64 * scale ** -beta
    for i, window in enumerate(windows):
        common = g64[:, i] * x64[:, i] * scale[:, i] ** (-beta - 1) * 2 * alpha * beta / nsize
        for m in window:
            out[:, m] -= common * x64[:, m]
    return out.astype(x.dtype)


def _lrn_cases():
    attrs = {"alpha": 0.3, "beta": 0.75, "knorm": 1.5}
    cases = []
    for shape, nsize in (((2, 5, 3, 3), 3), ((1, 6, 2, 2), 4), ((2, 4), 5),
                         ((1, 3, 2, 2, 2), 1), ((1, 7, 4), 2)):
        a = {**attrs, "nsize": nsize}
        cases.append(OpCase("LRN", shapes=[shape], attrs=a, ref=_lrn_visible_ref,
                            id=f"{len(shape)}d-n{nsize}"))
    cases.append(OpCase("LRN", shapes=[(1, 5, 2, 2)], attrs={"nsize": 5},
                        ref=_lrn_visible_ref, id="defaults"))
    cases.append(OpCase("_backward_LRN", shapes=[(2, 5, 2, 3), (2, 5, 2, 3)],
                        attrs={**attrs, "nsize": 3}, ref=_lrn_backward_ref, grad=False))
    return cases


# -- UpSampling -------------------------------------------------------------------------------

def _nearest_ref(*xs, scale, sample_type, multi_input_mode="concat", **_):
    height = xs[0].shape[2] * scale
    ups = []
    for x in xs:
        k = height // x.shape[2]
        ups.append(x.repeat(k, axis=2).repeat(k, axis=3))
    if multi_input_mode == "sum":
        return sum(ups[1:], ups[0])
    return np.concatenate(ups, axis=1)


def _bilinear_ref(x, w, scale, num_filter, **_):
    """Each channel c: out[y * s - p + ky, x * s - p + kx] += x[y, x] * w[c, 0, ky, kx]."""
    k = 2 * scale - scale % 2
    pad = math.ceil((scale - 1) / 2)
    n, c, h, wd = x.shape
    full = np.zeros((n, c, (h - 1) * scale + k, (wd - 1) * scale + k), np.float64)
    for i in range(h):
        for j in range(wd):
            full[:, :, i * scale:i * scale + k, j * scale:j * scale + k] += (
                x[:, :, i, j, None, None] * w[None, :, 0])
    return full[:, :, pad:pad + h * scale, pad:pad + wd * scale].astype(x.dtype)


def _up_cases():
    near = {"sample_type": "nearest"}
    return [
        OpCase("UpSampling", shapes=[(1, 2, 2, 3)], attrs={**near, "scale": 2},
               ref=_nearest_ref, id="nearest"),
        OpCase("UpSampling", shapes=[(2, 1, 2, 2)], attrs={**near, "scale": 3},
               ref=_nearest_ref, id="nearest-3"),
        OpCase("UpSampling", shapes=[(2, 2, 2, 3)], attrs={**near, "scale": 1},
               ref=_nearest_ref, id="nearest-1"),
        OpCase("UpSampling", shapes=[(1, 2, 2, 3), (1, 1, 8, 12), (1, 3, 4, 6)],
               attrs={**near, "scale": 4}, ref=_nearest_ref, id="nearest-concat"),
        OpCase("UpSampling", shapes=[(2, 2, 2, 2), (2, 2, 4, 4)],
               attrs={**near, "scale": 2, "multi_input_mode": "sum"}, ref=_nearest_ref,
               id="nearest-sum"),
        OpCase("UpSampling", shapes=[(1, 2, 3, 2), (2, 1, 4, 4)],
               attrs={"sample_type": "bilinear", "scale": 2, "num_filter": 2},
               ref=_bilinear_ref, id="bilinear-2"),
        OpCase("UpSampling", shapes=[(2, 3, 2, 2), (3, 1, 5, 5)],
               attrs={"sample_type": "bilinear", "scale": 3, "num_filter": 3},
               ref=_bilinear_ref, id="bilinear-3"),
    ]


CASES = [*_lrn_cases(), *_up_cases()]
