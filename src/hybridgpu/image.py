"""``mx.image`` basics: decode, read, resize and crop images as HxWxC uint8 NDArrays.

Decoding uses Pillow (``pip install pillow``); images come out RGB (``to_rgb=1``, as MXNet) or
BGR (``to_rgb=0``), and ``flag=0`` gives one gray channel. ``imresize`` with ``interp=0``
(nearest) and ``interp=1`` (bilinear) follows OpenCV's pixel-centre rule and fixed-point
rounding (MXNet resizes with OpenCV); other ``interp`` values (2 area, 3 bicubic, 4 Lanczos) use
Pillow's filters, which can differ from OpenCV's by a few levels.

Example:
    >>> import io
    >>> import numpy as np
    >>> from PIL import Image
    >>> pixels = np.zeros((4, 6, 3), np.uint8); pixels[..., 0] = 200
    >>> buf = io.BytesIO(); Image.fromarray(pixels).save(buf, format="PNG")
    >>> img = imdecode(buf.getvalue())
    >>> img.shape, img.dtype.__name__, int(img[0, 0, 0].asscalar())
    ((4, 6, 3), 'uint8', 200)
    >>> resize_short(img, 2).shape, center_crop(img, (2, 2))[1]
    ((2, 3, 3), (2, 1, 2, 2))
"""

from __future__ import annotations

import io
import os

import numpy as np

from .base import MXNetError
from .ndarray import NDArray
from .ndarray import array as nd_array

__all__ = ["imdecode", "imread", "imresize", "resize_short", "center_crop", "fixed_crop",
           "scale_down", "color_normalize"]


def _pillow():
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("mx.image needs Pillow: pip install pillow") from None
    return Image


def _as_numpy(src, what):
    if isinstance(src, NDArray):
        return src.asnumpy(), src.context
    if isinstance(src, np.ndarray):
        return src, None
    raise TypeError(f"{what}: src must be an NDArray (HxWxC), got {type(src).__name__}")


def _wrap(array, ctx):
    return nd_array(array, ctx=ctx, dtype=array.dtype)


def _gray(rgb):
    """Gray as MXNet's decoder gives it: 0.299 R + 0.587 G + 0.114 B in 15-bit fixed point,
    truncated (libpng's conversion)."""
    weighted = rgb.astype(np.int64) @ np.array([9798, 19235, 3735], np.int64)
    return (weighted >> 15).astype(np.uint8)


def imdecode(buf, flag=1, to_rgb=1, out=None):
    """Decode image bytes (JPEG, PNG, ...) to an HxWxC uint8 NDArray: 3 channels (RGB, or BGR
    with ``to_rgb=0``) for ``flag=1``, one gray channel for ``flag=0``."""
    Image = _pillow()
    if isinstance(buf, NDArray):
        buf = buf.asnumpy().astype(np.uint8).tobytes()
    try:
        image = Image.open(io.BytesIO(bytes(buf)))
        image.load()
    except Exception as err:  # Pillow raises several types for bad data
        raise MXNetError(f"imdecode: decoding failed, invalid image data ({err})") from None
    pixels = np.asarray(image.convert("RGB"))
    if flag == 0:
        pixels = _gray(pixels)[:, :, None]
    elif not to_rgb:
        pixels = pixels[:, :, ::-1]
    result = _wrap(np.ascontiguousarray(pixels), None)
    if out is not None:
        out[:] = result
        return out
    return result


def imread(filename, flag=1, to_rgb=1, out=None):
    """``imdecode`` of the file ``filename``."""
    path = os.fspath(filename)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        raise MXNetError(f"imread: cannot read {path!r}: {err.strerror}") from None
    return imdecode(data, flag, to_rgb, out)


def _linear_taps(src_size, dst_size):
    """OpenCV's INTER_LINEAR source indices and 11-bit fixed-point weights."""
    scale = src_size / dst_size
    pos = (np.arange(dst_size) + 0.5) * scale - 0.5
    left = np.floor(pos).astype(np.int64)
    frac = pos - left
    frac[left < 0] = 0.0
    left = np.clip(left, 0, src_size - 1)
    right = np.minimum(left + 1, src_size - 1)
    frac[left >= src_size - 1] = 0.0
    weight = np.round(frac * 2048).astype(np.int64)
    return left, right, 2048 - weight, weight


def _resize_bilinear(pixels, w, h):
    x0, x1, wx0, wx1 = _linear_taps(pixels.shape[1], w)
    y0, y1, wy0, wy1 = _linear_taps(pixels.shape[0], h)
    src = pixels.astype(np.int64)
    rows = src[:, x0] * wx0[None, :, None] + src[:, x1] * wx1[None, :, None]
    out = rows[y0] * wy0[:, None, None] + rows[y1] * wy1[:, None, None]
    out = (out + (1 << 21)) >> 22
    return np.clip(out, 0, 255).astype(pixels.dtype) if pixels.dtype == np.uint8 else \
        out.astype(pixels.dtype)


def _resize_nearest(pixels, w, h):
    ys = np.minimum(np.floor(np.arange(h) * (pixels.shape[0] / h)).astype(np.int64),
                    pixels.shape[0] - 1)
    xs = np.minimum(np.floor(np.arange(w) * (pixels.shape[1] / w)).astype(np.int64),
                    pixels.shape[1] - 1)
    return pixels[ys][:, xs]


def _resize_pillow(pixels, w, h, interp):
    Image = _pillow()
    filters = {2: Image.BOX, 3: Image.BICUBIC, 4: Image.LANCZOS}
    channels = [np.asarray(Image.fromarray(pixels[:, :, c]).resize((w, h), filters[interp]))
                for c in range(pixels.shape[2])]
    return np.stack(channels, axis=2)


def imresize(src, w, h, interp=1):
    """``src`` (HxWxC) resized to ``h`` x ``w``; ``interp``: 0 nearest, 1 bilinear, 2 area,
    3 bicubic, 4 Lanczos."""
    pixels, ctx = _as_numpy(src, "imresize")
    if pixels.ndim != 3:
        raise MXNetError(f"imresize: src must be HxWxC, got shape {pixels.shape}")
    if int(w) <= 0 or int(h) <= 0:
        raise MXNetError(f"imresize: the size must be positive, got w={w}, h={h}")
    w, h = int(w), int(h)
    if interp == 0:
        out = _resize_nearest(pixels, w, h)
    elif interp == 1 or pixels.dtype != np.uint8:
        out = _resize_bilinear(pixels, w, h)
    elif interp in (2, 3, 4):
        out = _resize_pillow(pixels, w, h, interp)
    else:
        raise MXNetError(f"imresize: interp must be 0-4, got {interp}")
    return _wrap(np.ascontiguousarray(out), ctx)


def resize_short(src, size, interp=2):
    """Resize so that the shorter side is ``size`` (the aspect ratio kept, as MXNet rounds)."""
    h, w = src.shape[:2]
    if h > w:
        new_h, new_w = size * h // w, size
    else:
        new_h, new_w = size, size * w // h
    return imresize(src, new_w, new_h, interp=interp)


def scale_down(src_size, size):
    """``size`` (w, h) scaled down to fit in ``src_size`` (w, h), aspect ratio kept."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def fixed_crop(src, x0, y0, w, h, size=None, interp=2):
    """The ``w`` x ``h`` crop at (``x0``, ``y0``), resized to ``size`` (w, h) when given."""
    pixels, ctx = _as_numpy(src, "fixed_crop")
    out = _wrap(np.ascontiguousarray(pixels[y0:y0 + h, x0:x0 + w]), ctx)
    if size is not None and (w, h) != tuple(size):
        out = imresize(out, size[0], size[1], interp=interp)
    return out


def center_crop(src, size, interp=2):
    """The centred crop of ``size`` (w, h) and its ``(x0, y0, w, h)``; a source smaller than
    ``size`` gives the largest centred crop of that aspect ratio, resized to ``size``."""
    h, w = src.shape[:2]
    new_w, new_h = scale_down((w, h), size)
    x0 = int((w - new_w) / 2)
    y0 = int((h - new_h) / 2)
    out = fixed_crop(src, x0, y0, new_w, new_h, size, interp)
    return out, (x0, y0, new_w, new_h)


def color_normalize(src, mean, std=None):
    """``(src - mean) / std`` (``std`` optional)."""
    src = src - mean
    if std is not None:
        src = src / std
    return src
