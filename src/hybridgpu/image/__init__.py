"""``mx.image``: the image helpers MXNet 1.x scripts preprocess with, on Pillow and NumPy.

``imdecode``/``imread`` give (H, W, 3) uint8 NDArrays in RGB (``to_rgb=0``: BGR, OpenCV's
order; ``flag=0``: (H, W, 1) grey); ``imresize``, ``resize_short``, ``fixed_crop``,
``center_crop``, ``random_crop``, ``scale_down`` and ``color_normalize`` follow MXNet's
signatures and OpenCV's sampling (``image.resize``). Decoding needs Pillow
(``pip install 'hybridgpu[image]'``) and accepts only the formats OpenCV decodes, told apart
by their first bytes (``serialization.image_formats``): any other buffer raises an
``MXNetError`` before Pillow sees it.

Example:
    >>> import numpy as np
    >>> import hybridgpu as mx
    >>> img = mx.nd.array(np.arange(48).reshape(4, 4, 3), dtype="uint8")
    >>> out, (x0, y0, w, h) = center_crop(img, (2, 2))
    >>> out.shape, (x0, y0, w, h)
    ((2, 2, 3), (1, 1, 2, 2))
    >>> resize_short(img, 2).shape
    (2, 2, 3)
"""

from __future__ import annotations

import io
import os
import random as _pyrandom

import numpy as np

from ..base import MXNetError
from ..ndarray import NDArray, array
from ..serialization.image_formats import pillow_format
from .resize import resize

__all__ = ["imdecode", "imread", "imresize", "resize_short", "fixed_crop", "center_crop",
           "random_crop", "scale_down", "color_normalize"]


def _pillow():
    try:
        from PIL import Image
    except ImportError as err:
        raise MXNetError("mx.image needs Pillow: pip install 'hybridgpu[image]' (or pillow) "
                         f"({err})") from None
    return Image


def _grey(rgb):
    """Grey as MXNet's decoder gives it: weights 0.299, 0.587, 0.114 in 14-bit fixed point,
    truncated (checked bit for bit against MXNet 1.9.1's ``imdecode(flag=0)``)."""
    r, g, b = (rgb[..., k].astype(np.int64) for k in range(3))
    return ((r * 4899 + g * 9617 + b * 1868) >> 14).astype(np.uint8)


def imdecode(buf, flag=1, to_rgb=1, out=None):
    """Decode an encoded image (bytes, bytearray or a uint8 NDArray/array of the file's
    bytes) into a uint8 NDArray: (H, W, 3) for ``flag=1``, (H, W, 1) grey for ``flag=0``.
    JPEG, PNG, BMP, TIFF, PPM/PGM/PBM and WebP only (``formats.ACCEPTED``), as MXNet's OpenCV;
    other formats raise an ``MXNetError`` before any decoder sees the bytes."""
    if isinstance(buf, NDArray):
        buf = buf.asnumpy()
    data = buf.tobytes() if isinstance(buf, np.ndarray) else bytes(buf)
    plugin = pillow_format(data)
    try:
        pic = _pillow().open(io.BytesIO(data), formats=(plugin,))
        pic.load()
    except MXNetError:
        raise
    except Exception as err:
        raise MXNetError(f"imdecode: the buffer ({len(data)} bytes) starts as {plugin} but "
                         f"is not an image Pillow can decode ({err})") from None
    rgb = np.asarray(pic.convert("RGB"))
    pixels = _grey(rgb)[:, :, None] if flag == 0 else (rgb if to_rgb else rgb[:, :, ::-1])
    result = array(np.ascontiguousarray(pixels), dtype="uint8")
    if out is not None:
        out[:] = result
        return out
    return result


def imread(filename, flag=1, to_rgb=1, out=None):
    """``imdecode`` of the file ``filename``."""
    if not os.path.isfile(filename):
        raise MXNetError(f"imread: no such file {filename!r}")
    with open(filename, "rb") as f:
        return imdecode(f.read(), flag=flag, to_rgb=to_rgb, out=out)


def _as_array(src):
    return src.asnumpy() if isinstance(src, NDArray) else np.asarray(src)


def _like(src, data):
    ctx = src.context if isinstance(src, NDArray) else None
    return array(data, ctx=ctx, dtype=data.dtype)


def imresize(src, w, h, interp=1):
    """``src`` (H, W, C) resized to width ``w``, height ``h`` (OpenCV's ``interp`` codes)."""
    return _like(src, resize(_as_array(src), w, h, interp))


def scale_down(src_size, size):
    """``size`` (w, h) scaled down to fit in ``src_size`` (w, h), keeping its aspect ratio."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def resize_short(src, size, interp=2):
    """``src`` resized so its shorter side is ``size`` (the other side keeps the ratio)."""
    h, w = _as_array(src).shape[:2]
    if h > w:
        new_w, new_h = size, size * h // w
    else:
        new_w, new_h = size * w // h, size
    return imresize(src, new_w, new_h, interp)


def fixed_crop(src, x0, y0, w, h, size=None, interp=2):
    """The region (x0, y0, w, h) of ``src``, resized to ``size`` (w, h) when given."""
    data = _as_array(src)
    if x0 < 0 or y0 < 0 or x0 + w > data.shape[1] or y0 + h > data.shape[0]:
        raise MXNetError(f"fixed_crop: region {(x0, y0, w, h)} is outside the image of "
                         f"size {data.shape[1]}x{data.shape[0]}")
    out = data[y0:y0 + h, x0:x0 + w]
    if size is not None and (w, h) != tuple(size):
        out = resize(out, size[0], size[1], interp)
    return _like(src, np.ascontiguousarray(out))


def center_crop(src, size, interp=2):
    """The centre crop of ``src`` with the aspect ratio of ``size`` (w, h), resized to it;
    returns ``(image, (x0, y0, w, h))``."""
    h, w = _as_array(src).shape[:2]
    new_w, new_h = scale_down((w, h), size)
    x0, y0 = (w - new_w) // 2, (h - new_h) // 2
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def random_crop(src, size, interp=2):
    """A random crop of ``src`` with the aspect ratio of ``size``, resized to it; returns
    ``(image, (x0, y0, w, h))`` (Python's ``random``, as MXNet)."""
    h, w = _as_array(src).shape[:2]
    new_w, new_h = scale_down((w, h), size)
    x0 = _pyrandom.randint(0, w - new_w)
    y0 = _pyrandom.randint(0, h - new_h)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def color_normalize(src, mean, std=None):
    """``(src - mean) / std`` (``std`` optional), broadcasting over the channel axis."""
    out = src - mean
    if std is not None:
        out = out / std
    return out
