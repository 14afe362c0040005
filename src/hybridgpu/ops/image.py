"""MXNet's ``nd.image`` / ``sym.image`` ops that GluonCV's data presets call:
``image.to_tensor`` (an (H, W, C) or (N, H, W, C) image, uint8 or float, to float32
(C, H, W) / (N, C, H, W) in [0, 1]) and ``image.normalize`` (``(x - mean) / std`` per channel
of a (C, H, W) or (N, C, H, W) float tensor with 1 or 3 channels; ``mean``/``std`` one value
or one per channel), with MXNet 1.9.1's checks.

Example:
    >>> import hybridgpu as mx
    >>> t = mx.nd.image.to_tensor(mx.nd.full((2, 2, 3), 255, dtype="uint8"))
    >>> t.shape, mx.nd.image.normalize(t, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5))[0, 0, 0].item()
    ((3, 2, 2), 1.0)
"""

from __future__ import annotations

import numpy as np

from ..base import MXNetError
from .attrs import FloatTuple
from .opdef import OpDef, register

__all__ = []


def _to_tensor_shape(attrs, in_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, [None]
    if len(data) not in (3, 4):
        raise MXNetError(f"to_tensor: the image must be (H, W, C) or (N, H, W, C), got shape "
                         f"{data}")
    return in_shapes, [(*data[:-3], data[-1], data[-3], data[-2])]


def _to_tensor(xp, data):
    _to_tensor_shape({}, [data.shape])
    axes = (2, 0, 1) if data.ndim == 3 else (0, 3, 1, 2)
    scaled = data.astype(np.float32) / np.float32(255)
    return xp.ascontiguousarray(scaled.transpose(axes))


register(OpDef(
    "_image_to_tensor", compute=_to_tensor, infer_shape=_to_tensor_shape,
    infer_type=lambda a, t: (t, ["float32"]), views=False,
    doc="An image (H, W, C) or batch (N, H, W, C) as float32 (C, H, W) / (N, C, H, W) "
        "divided by 255.",
    example="nd.image.to_tensor(img).shape  # (3, H, W)"))


def _channel_values(name, values, channels, shape):
    if len(values) not in (1, channels):
        raise MXNetError(f"normalize: {name} must have 1 or {channels} values for input of "
                         f"shape {shape}, got {list(values)}")
    return np.array(values * channels if len(values) == 1 else values, np.float64)


def _layout(shape, mean, std):
    """(per-channel mean, per-channel std, broadcast shape) for a (C, H, W)/(N, C, H, W)."""
    if len(shape) not in (3, 4):
        raise MXNetError(f"normalize: input must be (C, H, W) or (N, C, H, W), got {shape}")
    channels = shape[-3]
    if channels not in (1, 3):
        raise MXNetError(f"normalize: the channel axis must have 1 or 3 elements, got input "
                         f"of shape {shape}")
    bshape = (channels, 1, 1)
    return (_channel_values("mean", mean, channels, shape),
            _channel_values("std", std, channels, shape), bshape)


def _normalize(xp, data, *, mean=(0.0,), std=(1.0,)):
    m, s, bshape = _layout(data.shape, mean, std)
    centred = data - xp.asarray(m.astype(data.dtype)).reshape(bshape)
    return centred / xp.asarray(s.astype(data.dtype)).reshape(bshape)


def _normalize_backward(xp, ograd, data, *, mean=(0.0,), std=(1.0,)):
    _, s, bshape = _layout(data.shape, mean, std)
    return ograd / xp.asarray(s.astype(ograd.dtype)).reshape(bshape)


_NORM_ATTRS = {"mean": FloatTuple(default=(0.0,), doc="per-channel means (or one)"),
               "std": FloatTuple(default=(1.0,), doc="per-channel standard deviations")}

register(OpDef(
    "_image_normalize", attrs=_NORM_ATTRS, compute=_normalize,
    infer_shape=lambda a, s: (s, [s[0]]), infer_type=lambda a, t: (t, [t[0]]),
    grad=lambda F, ins, outs, gouts, **a: [F._backward_image_normalize(gouts[0], ins[0], **a)],
    views=False,
    doc="(x - mean) / std per channel of a (C, H, W) or (N, C, H, W) tensor.",
    example="nd.image.normalize(t, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))"))

register(OpDef(
    "_backward_image_normalize", inputs=("ograd", "data"), attrs=_NORM_ATTRS,
    compute=_normalize_backward, infer_shape=lambda a, s: (s, [s[1]]),
    infer_type=lambda a, t: (t, [t[0]]), views=False,
    doc="Gradient of image.normalize: the output gradient divided by std per channel.",
    example="nd._backward_image_normalize(g, t, std=(0.5, 0.5, 0.5))"))
