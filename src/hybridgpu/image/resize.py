"""Image resizing with OpenCV's sampling rules (which MXNet's ``mx.image`` uses), in NumPy.

``resize(img, w, h, interp)`` for an (H, W) or (H, W, C) array. ``interp`` takes OpenCV's
codes, as MXNet passes them through: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos
(8x8 window); 9 picks bicubic to enlarge and area to shrink. Each axis is resampled by a
weight matrix, so a resize is two matrix products in float64, rounded and clipped back to
the input's dtype. OpenCV computes uint8 images in fixed point, so results may differ from
MXNet's by one grey level (tests allow that; nearest is exact).

Example:
    >>> import numpy as np
    >>> img = np.arange(16, dtype=np.uint8).reshape(4, 4)
    >>> resize(img, 2, 2, interp=3)
    array([[ 3,  5],
           [11, 13]], dtype=uint8)
"""

from __future__ import annotations

import math

import numpy as np

from ..base import MXNetError

__all__ = ["resize", "INTERP_NAMES"]

INTERP_NAMES = {0: "nearest", 1: "bilinear", 2: "bicubic", 3: "area", 4: "lanczos"}


def _nearest(n_in, n_out):
    scale = n_in / n_out
    weights = np.zeros((n_out, n_in))
    src = np.minimum(np.floor(np.arange(n_out) * scale).astype(int), n_in - 1)
    weights[np.arange(n_out), src] = 1.0
    return weights


def _kernel_weights(n_in, n_out, taps, kernel):
    """Weights of a ``taps``-wide interpolation kernel at OpenCV's half-pixel centres, with
    indices past either edge clamped to it (border replicate)."""
    scale = n_in / n_out
    weights = np.zeros((n_out, n_in))
    for i in range(n_out):
        x = (i + 0.5) * scale - 0.5
        base = math.floor(x)
        frac = x - base
        coeffs = kernel(frac)
        for k, c in enumerate(coeffs):
            j = min(max(base + k - (taps // 2 - 1), 0), n_in - 1)
            weights[i, j] += c
    return weights


def _linear_coeffs(t):
    return (1.0 - t, t)


def _linear(n_in, n_out):
    scale = n_in / n_out
    weights = np.zeros((n_out, n_in))
    for i in range(n_out):
        x = (i + 0.5) * scale - 0.5
        base = math.floor(x)
        frac = x - base
        if base < 0:  # OpenCV clamps the position itself at the left edge
            base, frac = 0, 0.0
        if base >= n_in - 1:
            base, frac = n_in - 1, 0.0
        weights[i, base] += 1.0 - frac
        weights[i, min(base + 1, n_in - 1)] += frac
    return weights


def _cubic_coeffs(t, a=-0.75):
    def near(d):
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d):
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a

    return (far(t + 1), near(t), near(1 - t), far(2 - t))


def _lanczos_coeffs(t):
    out = []
    for k in range(8):
        d = t + 3 - k
        out.append(1.0 if abs(d) < 1e-12 else
                   4 * math.sin(math.pi * d) * math.sin(math.pi * d / 4) / (math.pi * d) ** 2)
    total = sum(out)
    return tuple(c / total for c in out)


def _area_enlarge(n_in, n_out):
    """OpenCV's ``INTER_AREA`` when enlarging: output pixel ``i`` covers part of source pixel
    ``floor(i * n_in / n_out)``; only the fraction spilling past its end goes to the next."""
    weights = np.zeros((n_out, n_in))
    for i in range(n_out):
        base = math.floor(i * n_in / n_out)
        frac = (i + 1) - (base + 1) * n_out / n_in
        frac = 0.0 if frac <= 0 else frac - math.floor(frac)
        weights[i, min(base, n_in - 1)] += 1.0 - frac
        weights[i, min(base + 1, n_in - 1)] += frac
    return weights


def _area(n_in, n_out):
    if n_out > n_in:  # enlarging: OpenCV's area mode blends the two nearest pixels
        return _area_enlarge(n_in, n_out)
    scale = n_in / n_out
    weights = np.zeros((n_out, n_in))
    for i in range(n_out):
        lo, hi = i * scale, (i + 1) * scale
        for j in range(math.floor(lo), min(math.ceil(hi), n_in)):
            weights[i, j] = (min(hi, j + 1) - max(lo, j)) / scale
    return weights


def _axis_weights(n_in, n_out, interp):
    if interp == 0:
        return _nearest(n_in, n_out)
    if interp == 1:
        return _linear(n_in, n_out)
    if interp == 2:
        return _kernel_weights(n_in, n_out, 4, _cubic_coeffs)
    if interp == 3:
        return _area(n_in, n_out)
    if interp == 4:
        return _kernel_weights(n_in, n_out, 8, _lanczos_coeffs)
    raise MXNetError(f"resize: interp must be one of {sorted(INTERP_NAMES)} or 9, got {interp}")


def resize(img, w, h, interp=1):
    """``img`` resized to width ``w`` and height ``h`` (see the module docstring)."""
    img = np.asarray(img)
    if img.ndim not in (2, 3):
        raise MXNetError(f"resize: expected an (H, W) or (H, W, C) image, got shape {img.shape}")
    if int(w) < 1 or int(h) < 1:
        raise MXNetError(f"resize: the size must be positive, got w={w}, h={h}")
    in_h, in_w = img.shape[:2]
    if interp == 9:
        interp = 2 if w * h > in_w * in_h else 3
    rows = _axis_weights(in_h, int(h), interp)
    cols = _axis_weights(in_w, int(w), interp)
    data = img.astype(np.float64)
    out = np.einsum("ij,jk...->ik...", rows, data)
    out = np.einsum("lk,ik...->il...", cols, out)
    if img.dtype.kind in "ui":
        info = np.iinfo(img.dtype)
        out = np.clip(np.floor(out + 0.5), info.min, info.max)  # half up, as OpenCV
    return out.astype(img.dtype)
