"""MXNet 1.9's colour augmentation transforms, on the ``nd.image`` / ``sym.image`` ops of
``ops/image_color.py``: ``RandomBrightness``, ``RandomContrast``, ``RandomSaturation``,
``RandomColorJitter`` (hue jitter not ported) and ``RandomLighting`` (GluonCV's ImageNet
training preset). They take (H, W, C) images with 1 or 3 channels and keep the dtype.

Example:
    >>> import numpy as np
    >>> from hybridgpu import nd
    >>> img = nd.array(np.full((2, 2, 3), 100), dtype="uint8")
    >>> RandomBrightness(0.0)(img).asnumpy()[0, 0].tolist()
    [100, 100, 100]
"""

from __future__ import annotations

from ....base import MXNetError
from ...hybrid_block import HybridBlock

__all__ = ["RandomBrightness", "RandomContrast", "RandomSaturation", "RandomColorJitter",
           "RandomLighting"]


def _factors(amount, what):
    if amount < 0:
        raise MXNetError(f"{what}: the jitter amount must be >= 0, got {amount}")
    return max(0.0, 1.0 - amount), 1.0 + amount


class RandomBrightness(HybridBlock):
    """Multiply by a factor drawn from [max(0, 1 - brightness), 1 + brightness]."""

    _op = "random_brightness"

    def __init__(self, brightness):
        super().__init__()
        self._args = _factors(brightness, type(self).__name__)

    def hybrid_forward(self, F, x):
        return getattr(F.image, self._op)(x, *self._args)


class RandomContrast(RandomBrightness):
    """Blend with the image's mean grey by a factor drawn as in RandomBrightness."""

    _op = "random_contrast"


class RandomSaturation(RandomBrightness):
    """Blend with each pixel's grey by a factor drawn as in RandomBrightness."""

    _op = "random_saturation"


class RandomColorJitter(HybridBlock):
    """Brightness, contrast and saturation jitter in random order (``hue`` must be 0: hue
    jitter is not ported)."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__()
        if hue:
            raise MXNetError("RandomColorJitter: hue jitter is not ported in hybridgpu; use "
                             "hue=0")
        self._args = (brightness, contrast, saturation, hue)

    def hybrid_forward(self, F, x):
        return F.image.random_color_jitter(x, *self._args)


class RandomLighting(HybridBlock):
    """AlexNet's PCA lighting noise with alphas drawn from N(0, alpha)."""

    def __init__(self, alpha):
        super().__init__()
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.image.random_lighting(x, self._alpha)
