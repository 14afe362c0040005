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
