"""Caps on the work a model file can ask for, checked before anything is allocated.

A file's attributes decide array sizes (a ``_zeros`` shape, ``num_hidden``, kernel sizes and
pads, ``repeat``'s count). Every array whose size comes from a graph is checked against
``max_elements()`` when shape inference first knows it, and ops that build bigger temporaries
than their outputs (padded inputs, im2col columns) check those too, so a hostile file gets an
MXNetError naming the node instead of exhausting memory.

The cap is ``HYBRIDGPU_MAX_ARRAY_ELEMENTS`` (default 2**32 elements: 16 GiB of float32 in one
array); set it higher for bigger models.

Example:
    >>> check_elements((1024, 1024), "node 'fc'")
    >>> check_elements((2**20, 2**20), "node 'z'")
    Traceback (most recent call last):
    ...
    hybridgpu.base.MXNetError: node 'z': an array of shape (1048576, 1048576) has ...
"""

from __future__ import annotations

import math
import os

from .base import MXNetError

__all__ = ["max_elements", "check_elements", "DEFAULT_MAX_ELEMENTS", "ENV_MAX_ELEMENTS"]

DEFAULT_MAX_ELEMENTS = 2 ** 32
ENV_MAX_ELEMENTS = "HYBRIDGPU_MAX_ARRAY_ELEMENTS"


def max_elements():
    """The largest number of elements one array may have (see the module docstring)."""
    text = os.environ.get(ENV_MAX_ELEMENTS)
    if not text:
        return DEFAULT_MAX_ELEMENTS
    try:
        value = int(text)
    except ValueError:
        raise MXNetError(f"{ENV_MAX_ELEMENTS}={text!r} is not an integer") from None
    if value < 1:
        raise MXNetError(f"{ENV_MAX_ELEMENTS}={text!r} must be positive")
    return value


def check_elements(shape, where):
    """Raise MXNetError naming ``where`` when an array of ``shape`` would pass the cap.
    Unknown dimensions (``0``) count as nothing."""
    count = math.prod(int(d) for d in shape if d)
    cap = max_elements()
    if count > cap:
        raise MXNetError(f"{where}: an array of shape {tuple(shape)} has {count} elements, "
                         f"more than the cap of {cap} ({ENV_MAX_ELEMENTS}; raise it if this "
                         "model really needs arrays this big)")
