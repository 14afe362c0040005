"""Caps on the work a model file can ask for, checked before anything is allocated.

A file's attributes decide array sizes (a ``_zeros`` shape, ``num_hidden``, kernel sizes and
pads, ``repeat``'s count). Every array whose size comes from a graph is checked against
``max_elements()`` when shape inference first knows it, and ops that build bigger temporaries
than their outputs (padded inputs, im2col columns) check those too, so a hostile file gets an
MXNetError naming the node instead of exhausting memory.

The caps, each raised (or lowered) by an environment variable:

* ``HYBRIDGPU_MAX_ARRAY_ELEMENTS``: elements in one array, default ``2**31 - 2``: the largest
  array MXNet 1.9.1's pip builds accept (they refuse ``2**31 - 1`` elements and more: "larger
  than 2^31 elements", built without ``USE_INT64_TENSOR_SIZE``).
* ``HYBRIDGPU_MAX_MODEL_BYTES``: bytes one compiled model may allocate in all (its planned
  buffers, the outputs it allocates per call, and the arrays its ops allocate), checked on the
  memory plan before any of it is allocated; default 64 GiB.

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

__all__ = ["max_elements", "check_elements", "max_model_bytes", "check_model_bytes",
           "DEFAULT_MAX_ELEMENTS", "ENV_MAX_ELEMENTS", "DEFAULT_MAX_MODEL_BYTES",
           "ENV_MAX_MODEL_BYTES"]

DEFAULT_MAX_ELEMENTS = 2 ** 31 - 2
ENV_MAX_ELEMENTS = "HYBRIDGPU_MAX_ARRAY_ELEMENTS"
DEFAULT_MAX_MODEL_BYTES = 64 * 2 ** 30
ENV_MAX_MODEL_BYTES = "HYBRIDGPU_MAX_MODEL_BYTES"


def _from_env(name, default):
    text = os.environ.get(name)
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise MXNetError(f"{name}={text!r} is not an integer") from None
    if value < 1:
        raise MXNetError(f"{name}={text!r} must be positive")
    return value


def max_elements():
    """The largest number of elements one array may have (see the module docstring)."""
    return _from_env(ENV_MAX_ELEMENTS, DEFAULT_MAX_ELEMENTS)


def max_model_bytes():
    """The most bytes one compiled model may allocate (see the module docstring)."""
    return _from_env(ENV_MAX_MODEL_BYTES, DEFAULT_MAX_MODEL_BYTES)


def check_model_bytes(nbytes, where, detail=""):
    """Raise MXNetError naming ``where`` when a model would allocate more than the cap.

    Example:
        >>> check_model_bytes(2 ** 20, "graph 'net'")
        >>> check_model_bytes(2 ** 40, "graph 'net'")
        Traceback (most recent call last):
        ...
        hybridgpu.base.MXNetError: graph 'net': would allocate 1099511627776 bytes (1024.0 GiB)...
    """
    cap = max_model_bytes()
    if nbytes > cap:
        raise MXNetError(f"{where}: would allocate {nbytes} bytes ({nbytes / 2 ** 30:.1f} GiB)"
                         f"{detail}, more than the cap of {cap} bytes ({cap / 2 ** 30:.1f} GiB, "
                         f"{ENV_MAX_MODEL_BYTES}; raise it if this model really needs that "
                         "much memory)")


def check_elements(shape, where):
    """Raise MXNetError naming ``where`` when an array of ``shape`` would pass the cap.
    Unknown dimensions (``0``) count as nothing."""
    count = math.prod(int(d) for d in shape if d)
    cap = max_elements()
    if count > cap:
        raise MXNetError(f"{where}: an array of shape {tuple(shape)} has {count} elements, "
                         f"more than the cap of {cap} ({ENV_MAX_ELEMENTS}; raise it if this "
                         "model really needs arrays this big)")
