"""Image transforms that need no image decoding: ``Compose``, ``Cast``, ``ToTensor``,
``Normalize`` (MXNet 1.9's blocks, written with plain ops, so they run on NDArrays and trace
as Symbols); ``Resize``, ``CenterCrop``, ``RandomResizedCrop`` and the random flips from
``transforms_geometry``; brightness, contrast, saturation, colour jitter and lighting from
``transforms_color``. Hue, rotation and the other random crops need image operators hybridgpu
does not have; asking for them raises an ``AttributeError`` that says so.

Example:
    >>> import numpy as np
    >>> from hybridgpu import nd
    >>> image = nd.array(np.full((2, 2, 3), 255), dtype="uint8")
    >>> out = Compose([ToTensor(), Normalize(0.5, 0.25)])(image)
    >>> out.shape, out.dtype.__name__, out.asnumpy().max().item()
    ((3, 2, 2), 'float32', 2.0)
"""

from __future__ import annotations

import numbers

from ....base import MXNetError
from ...block import Block
from ...hybrid_block import HybridBlock
from ...nn import HybridSequential, Lambda, Sequential

__all__ = ["Compose", "Cast", "ToTensor", "Normalize", "Resize", "CenterCrop",
           "RandomResizedCrop", "RandomFlipLeftRight", "RandomFlipTopBottom",
           "RandomBrightness", "RandomContrast", "RandomSaturation", "RandomColorJitter",
           "RandomLighting"]

_NEEDS_IMAGE_OPS = {"CropResize", "RandomCrop", "RandomHue", "RandomRotation", "Rotate",
                    "RandomApply"}


def __getattr__(name):
    if name in _NEEDS_IMAGE_OPS:
        raise AttributeError(f"transforms.{name} needs MXNet's image operators, which hybridgpu "
                             "does not have; resize/crop/augment your images with NumPy, Pillow "
                             "or OpenCV inside a Dataset.transform function instead")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Compose(Sequential):
    """Apply ``transforms`` (Blocks or plain functions) in order. Consecutive HybridBlocks are
    grouped in a ``HybridSequential`` as in MXNet (hybridgpu leaves them imperative, so images
    of any size run without retracing).

    Example:
        >>> from hybridgpu import nd
        >>> Compose([Cast("float16"), lambda x: x * 2])(nd.ones((1, 1, 1))).dtype.__name__
        'float16'
    """

    def __init__(self, transforms):
        super().__init__()
        with self.name_scope():
            group = []
            for transform in list(transforms) + [None]:
                if isinstance(transform, HybridBlock):
                    group.append(transform)
                    continue
                if len(group) == 1:
                    self.add(group[0])
                elif group:
                    hybrid = HybridSequential()
                    hybrid.add(*group)
                    self.add(hybrid)
                group = []
                if isinstance(transform, Block):
                    self.add(transform)
                elif transform is not None:
                    self.add(Lambda(transform))


class Cast(HybridBlock):
    """Cast the input to ``dtype``.

    Example:
        >>> from hybridgpu import nd
        >>> Cast()(nd.ones((2,), dtype="uint8")).dtype.__name__
        'float32'
    """

    def __init__(self, dtype="float32"):
        super().__init__()
        self._dtype = dtype

    def hybrid_forward(self, F, x):
        return F.cast(x, dtype=self._dtype)


def _image_ndim(x, what, layout):
    ndim = len(x.shape)
    if ndim not in (3, 4):
        raise MXNetError(f"{what} must have shape {layout}, or (N, {layout[1:]}, but got "
                         f"{tuple(x.shape)}")
    return ndim


class ToTensor(HybridBlock):
    """An image ``(H, W, C)`` or batch ``(N, H, W, C)`` (any dtype, usually uint8 in
    ``[0, 255]``) to float32 ``(C, H, W)`` / ``(N, C, H, W)`` in ``[0, 1]`` (divided by 255).

    Example:
        >>> from hybridgpu import nd
        >>> ToTensor()(nd.ones((4, 5, 3), dtype="uint8")).shape
        (3, 4, 5)
    """

    def __init__(self):
        super().__init__()

    def hybrid_forward(self, F, x):
        ndim = _image_ndim(x, "Input image", "(height, width, channels)")
        axes = (2, 0, 1) if ndim == 3 else (0, 3, 1, 2)
        return F.transpose(F.cast(x, dtype="float32") / 255.0, axes=axes)


def _per_channel(value, name):
    if isinstance(value, numbers.Number):
        return (float(value),)
    values = tuple(float(v) for v in value)
    if not values:
        raise ValueError(f"Normalize: {name} is empty")
    return values


class Normalize(HybridBlock):
    """``(x - mean) / std`` per channel of a ``(C, H, W)`` or ``(N, C, H, W)`` tensor;
    ``mean`` and ``std`` are numbers or sequences of one value per channel (any number of
    channels; MXNet allows only 1 or 3).

    Example:
        >>> from hybridgpu import nd
        >>> out = Normalize((0.0, 1.0), (1.0, 2.0))(nd.ones((2, 1, 1)))
        >>> out.asnumpy().ravel().tolist()
        [1.0, 0.0]
    """

    def __init__(self, mean=0.0, std=1.0):
        super().__init__()
        self._mean = _per_channel(mean, "mean")
        self._std = _per_channel(std, "std")

    def _channel_values(self, channels, shape):
        values = []
        for name, given in (("mean", self._mean), ("std", self._std)):
            if len(given) not in (1, channels):
                raise MXNetError(f"Invalid {name} for input with shape {tuple(shape)}. {name} "
                                 f"must have either 1 or {channels} elements, but got "
                                 f"{list(given)}")
            values.append(given * channels if len(given) == 1 else given)
        return values

    def hybrid_forward(self, F, x):
        ndim = _image_ndim(x, "Input tensor", "(channels, height, width)")
        axis = 0 if ndim == 3 else 1
        channels = x.shape[axis]
        mean, std = self._channel_values(channels, x.shape)
        if len(set(mean)) == 1 and len(set(std)) == 1:
            return (x - mean[0]) / std[0]
        pieces = F.split(x, num_outputs=channels, axis=axis)
        return F.concat(*[(pieces[c] - mean[c]) / std[c] for c in range(channels)], dim=axis)


# Colour, resizing, cropping and flipping transforms (issue 21: GluonCV's presets)
from .transforms_color import (  # noqa: E402
    RandomBrightness,
    RandomColorJitter,
    RandomContrast,
    RandomLighting,
    RandomSaturation,
)
from .transforms_geometry import (  # noqa: E402
    CenterCrop,
    RandomFlipLeftRight,
    RandomFlipTopBottom,
    RandomResizedCrop,
    Resize,
)
