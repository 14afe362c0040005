"""``mx.image.image``: the module MXNet 1.x keeps its image functions in (GluonCV imports
``_get_interp_method`` from it); the functions themselves are ``hybridgpu.image``'s.

Example:
    >>> _get_interp_method(9, (10, 10, 20, 20)), _get_interp_method(1)
    (2, 1)
"""

from __future__ import annotations

import random as _pyrandom

from . import (  # noqa: F401  (MXNet's names in this module)
    center_crop,
    color_normalize,
    fixed_crop,
    imdecode,
    imread,
    imresize,
    random_crop,
    resize_short,
    scale_down,
)

__all__ = ["center_crop", "color_normalize", "fixed_crop", "imdecode", "imread", "imresize",
           "random_crop", "resize_short", "scale_down"]


def _get_interp_method(interp, sizes=()):
    """OpenCV's interpolation code for ``interp``: 0-4 as given; 9 chooses by the resize
    (``sizes`` = (old h, old w, new h, new w): bicubic (2) to enlarge, area (3) to shrink,
    bilinear (1) otherwise, bicubic without sizes); 10 draws one of 0-4 (Python's random).

    Example:
        >>> _get_interp_method(11)
        Traceback (most recent call last):
        ...
        ValueError: Unknown interp method 11
    """
    if interp == 9:
        if not sizes:
            return 2
        if len(sizes) != 4:
            raise ValueError(f"sizes must be (old_h, old_w, new_h, new_w), got {sizes!r}")
        old_h, old_w, new_h, new_w = sizes
        if new_h > old_h and new_w > old_w:
            return 2
        if new_h < old_h and new_w < old_w:
            return 3
        return 1
    if interp == 10:
        return _pyrandom.randint(0, 4)
    if interp not in (0, 1, 2, 3, 4):
        raise ValueError(f"Unknown interp method {interp}")
    return interp
