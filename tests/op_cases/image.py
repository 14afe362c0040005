"""Cases for ``ops/image.py``: image.to_tensor (uint8 and float images, single and batched)
and image.normalize (per-channel and single mean/std, 1 and 3 channels, batched) with its
backward op. References: the definitions, axis by axis, in float64."""

from __future__ import annotations

import numpy as np

from op_harness import OpCase


def to_tensor_ref(x):
    axes = (2, 0, 1) if x.ndim == 3 else (0, 3, 1, 2)
    return (x.astype(np.float64) / 255).transpose(axes)


def _per_channel(values, channels):
    values = tuple(values) if isinstance(values, (tuple, list)) else (values,)
    return np.array(values * channels if len(values) == 1 else values).reshape(channels, 1, 1)


def normalize_ref(x, mean=(0.0,), std=(1.0,)):
    channels = x.shape[-3]
    return (x.astype(np.float64) - _per_channel(mean, channels)) / _per_channel(std, channels)


def normalize_backward_ref(g, x, mean=(0.0,), std=(1.0,)):
    return g.astype(np.float64) / _per_channel(std, x.shape[-3])


def _image(shape, dtype_name):
    def make(rng, dtype):
        return [rng.randint(0, 256, shape).astype(dtype_name)]
    return make


CASES = [
    OpCase("_image_to_tensor", make=_image((4, 5, 3), "uint8"), ref=to_tensor_ref, grad=False,
           dtypes=("float32",), id="uint8"),
    OpCase("_image_to_tensor", make=_image((2, 4, 5, 3), "float32"), ref=to_tensor_ref,
           grad=False, dtypes=("float32",), id="batch-float"),
    OpCase("_image_normalize", shapes=[(3, 4, 5)],
           attrs={"mean": (0.1, 0.2, 0.3), "std": (0.5, 2.0, 4.0)}, ref=normalize_ref),
    OpCase("_image_normalize", shapes=[(2, 1, 4, 5)], attrs={"mean": 0.5, "std": 0.25},
           ref=normalize_ref, id="one-channel-batch"),
    OpCase("_backward_image_normalize", shapes=[(2, 3, 4, 5), (2, 3, 4, 5)],
           attrs={"mean": (0.1, 0.2, 0.3), "std": (0.5, 2.0, 4.0)},
           ref=normalize_backward_ref, grad=False),
]


# -- ops/image_color.py: with min_factor = max_factor the random ops are deterministic --------

GREY = np.array([0.299, 0.587, 0.114])
EIG = np.array([[55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
                [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
                [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203]])


def _as_image(values, like):
    return np.clip(values, 0, 255).astype(np.uint8) if like.dtype == np.uint8 else values


def brightness_ref(x, min_factor, max_factor):
    return _as_image(x.astype(np.float64) * min_factor, x)


def contrast_ref(x, min_factor, max_factor):
    f = x.astype(np.float64)
    mean = (f @ GREY).mean() if x.shape[-1] == 3 else f.mean()
    return _as_image(f * min_factor + (1 - min_factor) * mean, x)


def saturation_ref(x, min_factor, max_factor):
    f = x.astype(np.float64)      # MXNet's grey: the blue channel's term only
    return _as_image(f[..., 2:3] * GREY[2] * (1 - min_factor) + f * min_factor, x)


def lighting_ref(x, alpha):
    return _as_image(x.astype(np.float64) + EIG @ np.asarray(alpha), x)


def _pixels(rng, dtype):
    return [rng.uniform(0, 255, (4, 5, 3)).astype(dtype)]


CASES += [
    OpCase("_image_random_brightness", make=_pixels, ref=brightness_ref, grad=False,
           attrs={"min_factor": 1.3, "max_factor": 1.3}, dtypes=("float32",)),
    OpCase("_image_random_contrast", make=_pixels, ref=contrast_ref, grad=False,
           attrs={"min_factor": 0.7, "max_factor": 0.7}, dtypes=("float32",), rtol=1e-5,
           atol=1e-4),
    OpCase("_image_random_saturation", make=_pixels, ref=saturation_ref, grad=False,
           attrs={"min_factor": 1.6, "max_factor": 1.6}, dtypes=("float32",), atol=1e-4),
    OpCase("_image_adjust_lighting", make=_pixels, ref=lighting_ref, grad=False,
           attrs={"alpha": (0.5, -1.0, 2.0)}, dtypes=("float32",), atol=1e-4),
    OpCase("_image_random_color_jitter", make=_pixels, ref=None, grad=False,
           attrs={"brightness": 0.4, "contrast": 0.4, "saturation": 0.4, "hue": 0.0},
           dtypes=("float32",)),
    OpCase("_image_random_lighting", make=_pixels, ref=None, grad=False,
           attrs={"alpha_std": 0.1}, dtypes=("float32",)),
]
