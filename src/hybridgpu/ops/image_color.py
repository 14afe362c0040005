"""MXNet's colour augmentation ops of ``nd.image`` / ``sym.image`` (GluonCV's training
presets use them through ``transforms.RandomColorJitter`` and ``RandomLighting``):
``random_brightness``, ``random_contrast``, ``random_saturation``, ``random_color_jitter``,
``random_lighting`` and the deterministic ``adjust_lighting``, on (H, W, C) images with 1 or 3
channels, in MXNet 1.9.1's arithmetic (float32, uint8 results clamped to [0, 255] and
truncated). ``random_saturation`` keeps MXNet's grey value, which weighs the blue channel
only (its loop assigns instead of adding). Hue jitter is not ported.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> img = np.full((1, 2, 3), 100, np.uint8)
    >>> ops.get("_image_adjust_lighting").compute(np, img, alpha=(0.1, 0.0, 0.0))[0, 0]
    array([96, 96, 96], dtype=uint8)
"""

from __future__ import annotations

import numpy as np

from ..base import MXNetError
from .attrs import Float, FloatTuple
from .opdef import OpDef, register

__all__ = []

_GREY = np.array([0.299, 0.587, 0.114], np.float32)
#: AlexNet's PCA lighting: eigenvectors (rows r, g, b) times eigenvalues, as MXNet writes them
_EIG = np.array([[55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
                 [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
                 [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203]]).astype(np.float32)


def _check(op, data):
    if data.ndim != 3 or data.shape[-1] not in (1, 3):
        raise MXNetError(f"{op}: the image must be (H, W, C) with 1 or 3 channels, got shape "
                         f"{data.shape}")


def _saturate(xp, values, dtype):
    if dtype == np.uint8:
        return xp.clip(values, 0, 255).astype(np.uint8)
    return values.astype(dtype)


def _brightness(xp, x, alpha):
    return _saturate(xp, x.astype(np.float32) * np.float32(alpha), x.dtype)


def _contrast(xp, x, alpha):
    f = x.astype(np.float32)
    grey = (f * xp.asarray(_GREY)).sum(axis=-1) if x.shape[-1] > 1 else f[..., 0]
    mean = grey.sum(dtype=np.float32) / np.float32(grey.size)
    beta = (np.float32(1) - np.float32(alpha)) * mean
    return _saturate(xp, f * np.float32(alpha) + beta, x.dtype)


def _saturation(xp, x, alpha):
    if x.shape[-1] == 1:
        return x.copy()
    f = x.astype(np.float32)
    grey = f[..., 2:3] * _GREY[2] * (np.float32(1) - np.float32(alpha))
    return _saturate(xp, grey + f * np.float32(alpha), x.dtype)


def _lighting(xp, x, alpha):
    if x.shape[-1] == 1:
        return x.copy()
    pca = (_EIG * np.asarray(alpha, np.float32)).sum(axis=1)
    return _saturate(xp, x.astype(np.float32) + xp.asarray(pca), x.dtype)


def _uniform(rng, low, high):
    """One float32 draw as a Python float (float() first: CuPy's scalars refuse NumPy)."""
    return float(np.float32(float(rng.uniform(low, high))))


def _enhance(name, fn):
    def compute(xp, data, *, min_factor, max_factor, rng):
        _check(name, data)
        return fn(xp, data, _uniform(rng, min_factor, max_factor))
    return compute


_ENHANCE_ATTRS = {"min_factor": Float(doc="smallest factor"),
                  "max_factor": Float(doc="largest factor")}
_IMAGE_SHAPE = {"infer_shape": lambda a, s: (s, [s[0]]),
                "infer_type": lambda a, t: (t, [t[0]])}

for _name, _fn, _what in (("brightness", _brightness, "x * f"),
                          ("contrast", _contrast, "x * f + (1 - f) * mean grey"),
                          ("saturation", _saturation, "x * f + (1 - f) * grey")):
    register(OpDef(
        f"_image_random_{_name}", attrs=_ENHANCE_ATTRS, compute=_enhance(_name, _fn),
        random=True, views=False, **_IMAGE_SHAPE,
        doc=f"Random {_name}: {_what}, f drawn uniformly in [min_factor, max_factor].",
        example=f"nd.image.random_{_name}(img, 0.6, 1.4)"))


def _jitter(xp, data, *, brightness, contrast, saturation, hue, rng):
    _check("random_color_jitter", data)
    if hue > 0:
        raise MXNetError("random_color_jitter: hue jitter (hue > 0) is not ported; use "
                         "hue=0")
    out = data
    for step in [int(v) for v in rng.permutation(4).tolist()]:
        if step == 0 and brightness > 0:
            out = _brightness(xp, out, 1.0 + _uniform(rng, -brightness, brightness))
        elif step == 1 and contrast > 0:
            out = _contrast(xp, out, 1.0 + _uniform(rng, -contrast, contrast))
        elif step == 2 and saturation > 0:
            out = _saturation(xp, out, 1.0 + _uniform(rng, -saturation, saturation))
    return out.copy() if out is data else out


register(OpDef(
    "_image_random_color_jitter",
    attrs={"brightness": Float(doc="brightness jitter"), "contrast": Float(doc="contrast"),
           "saturation": Float(doc="saturation"), "hue": Float(doc="hue (0 only)")},
    compute=_jitter, random=True, views=False, host_sync=True, **_IMAGE_SHAPE,
    doc="Brightness, contrast and saturation jitter (each 1 +- its amount) in random order.",
    example="nd.image.random_color_jitter(img, 0.4, 0.4, 0.4, 0)"))


def _adjust_lighting(xp, data, *, alpha):
    _check("adjust_lighting", data)
    if len(alpha) != 3:
        raise MXNetError(f"adjust_lighting: alpha must have 3 values, got {list(alpha)}")
    return _lighting(xp, data, alpha)


register(OpDef(
    "_image_adjust_lighting", attrs={"alpha": FloatTuple(doc="PCA weights of r, g, b")},
    compute=_adjust_lighting, views=False, **_IMAGE_SHAPE,
    doc="AlexNet's PCA lighting: adds eigvec @ (alpha * eigval) to every pixel.",
    example="nd.image.adjust_lighting(img, alpha=(0.02, -0.01, 0.03))"))


def _random_lighting(xp, data, *, alpha_std, rng):
    _check("random_lighting", data)
    alpha = [float(np.float32(float(rng.normal(0.0, alpha_std)))) for _ in range(3)]
    return _lighting(xp, data, alpha)


register(OpDef(
    "_image_random_lighting", attrs={"alpha_std": Float(default=0.05, doc="noise level")},
    compute=_random_lighting, random=True, views=False, **_IMAGE_SHAPE,
    doc="AlexNet's PCA lighting with alphas drawn from N(0, alpha_std).",
    example="nd.image.random_lighting(img, 0.1)"))
