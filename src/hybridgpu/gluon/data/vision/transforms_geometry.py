"""MXNet 1.9's resizing, cropping and flipping transforms (``Resize``, ``CenterCrop``,
``RandomResizedCrop``, ``RandomFlipLeftRight``, ``RandomFlipTopBottom``), on
``hybridgpu.image``'s OpenCV-compatible resize: GluonCV's classification presets and training
scripts build their pipelines from them. They take (H, W, C) images (``Resize`` and the flips
also (N, H, W, C) batches) and keep the dtype; they run imperatively (they are Blocks, as in
MXNet where only ``Resize`` and the flips are HybridBlocks).

Example:
    >>> import numpy as np
    >>> from hybridgpu import nd
    >>> img = nd.array(np.arange(4 * 6 * 3).reshape(4, 6, 3), dtype="uint8")
    >>> Resize(2, keep_ratio=True)(img).shape, CenterCrop((2, 3))(img).shape
    ((2, 3, 3), (3, 2, 3))
"""

from __future__ import annotations

import math
import numbers
import random as _pyrandom

from .... import image
from .... import ndarray as nd
from ....base import MXNetError
from ....ndarray import NDArray
from ....ndarray import random as nd_random
from ...block import Block

__all__ = ["Resize", "CenterCrop", "RandomResizedCrop", "RandomFlipLeftRight",
           "RandomFlipTopBottom"]


def _pair(size, what):
    if isinstance(size, numbers.Integral):
        return (int(size), int(size))
    if isinstance(size, (tuple, list)) and len(size) == 2:
        return (int(size[0]), int(size[1]))
    raise MXNetError(f"{what}: size must be an int or (width, height), got {size!r}")


def _image(x, what, batched=True):
    if not isinstance(x, NDArray) or x.ndim not in ((3, 4) if batched else (3,)):
        shape = getattr(x, "shape", type(x).__name__)
        want = "(H, W, C) or (N, H, W, C)" if batched else "(H, W, C)"
        raise MXNetError(f"{what}: expects an NDArray image {want}, got {shape}")
    return x


class Resize(Block):
    """Resize to ``size`` (w, h); an int means (size, size), or with ``keep_ratio`` the
    shorter side becomes ``size`` and the other keeps the ratio (MXNet's integer rounding)."""

    def __init__(self, size, keep_ratio=False, interpolation=1):
        super().__init__()
        if isinstance(size, (tuple, list)):
            _pair(size, "Resize")
        elif not isinstance(size, numbers.Integral) or size <= 0:
            raise MXNetError(f"Resize: size must be a positive int or (width, height), got "
                             f"{size!r}")
        self._size, self._keep, self._interpolation = size, keep_ratio, interpolation

    def _target(self, h, w):
        if isinstance(self._size, (tuple, list)):
            return _pair(self._size, "Resize")
        size = int(self._size)
        if not self._keep:
            return size, size
        if h > w:
            return size, int(h * size / w)
        return int(w * size / h), size

    def forward(self, x):
        _image(x, "Resize")
        h, w = x.shape[-3:-1]
        new_w, new_h = self._target(h, w)
        if x.ndim == 3:
            return image.imresize(x, new_w, new_h, self._interpolation)
        return nd.stack(*[image.imresize(one, new_w, new_h, self._interpolation) for one in x])


class CenterCrop(Block):
    """The centre crop with the aspect ratio of ``size`` (w, h), resized to it (MXNet's
    ``image.center_crop``)."""

    def __init__(self, size, interpolation=1):
        super().__init__()
        self._size, self._interpolation = _pair(size, "CenterCrop"), interpolation

    def forward(self, x):
        return image.center_crop(_image(x, "CenterCrop", batched=False), self._size,
                                 self._interpolation)[0]


class RandomResizedCrop(Block):
    """A crop of random area (``scale`` of the image's) and aspect ratio (``ratio``, drawn
    log-uniformly), resized to ``size``; after 10 tries that do not fit, the centre crop.
    Draws from Python's ``random``, as MXNet's ``image.random_size_crop``."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation=1):
        super().__init__()
        self._size = _pair(size, "RandomResizedCrop")
        self._scale, self._ratio, self._interpolation = tuple(scale), tuple(ratio), interpolation

    def forward(self, x):
        _image(x, "RandomResizedCrop", batched=False)
        h, w = x.shape[:2]
        log_ratio = (math.log(self._ratio[0]), math.log(self._ratio[1]))
        for _ in range(10):
            area = _pyrandom.uniform(*self._scale) * h * w
            aspect = math.exp(_pyrandom.uniform(*log_ratio))
            new_w = int(round(math.sqrt(area * aspect)))
            new_h = int(round(math.sqrt(area / aspect)))
            if new_w <= w and new_h <= h:
                x0 = _pyrandom.randint(0, w - new_w)
                y0 = _pyrandom.randint(0, h - new_h)
                return image.fixed_crop(x, x0, y0, new_w, new_h, self._size,
                                        self._interpolation)
        return image.center_crop(x, self._size, self._interpolation)[0]


class _RandomFlip(Block):
    _axis_from_end = 2

    def forward(self, x):
        _image(x, type(self).__name__)
        if nd_random.uniform(0, 1).asscalar() >= 0.5:
            return x
        return x.flip(axis=x.ndim - self._axis_from_end)


class RandomFlipLeftRight(_RandomFlip):
    """Flip the image left-right (the width axis) with probability 0.5 (``mx.random``)."""

    _axis_from_end = 2


class RandomFlipTopBottom(_RandomFlip):
    """Flip the image top-bottom (the height axis) with probability 0.5 (``mx.random``)."""

    _axis_from_end = 3
