"""``npx.reshape``: reshape with MXNet 1.9's NumPy-mode codes (``-1`` infer, ``-2`` copy,
``-3`` drop a size-1 dimension, ``-4`` copy the rest, ``-5`` merge two, ``-6`` split one), the
``_npx_reshape`` op (``ops/np_reshape.py``).

Example:
    >>> import hybridgpu as mx
    >>> reshape(mx.np.zeros((2, 3, 4)), (-2, -1)).shape
    (2, 12)
"""

from __future__ import annotations

from ..numpy import _dispatch
from ..numpy.multiarray import as_np

__all__ = ["reshape"]


def reshape(a, newshape, reverse=False, order="C"):
    """``a`` reshaped with MXNet's NumPy-mode codes (see ``ops/np_reshape.py``)."""
    shape = (newshape,) if isinstance(newshape, int) else tuple(newshape)
    return _dispatch.call("_npx_reshape", [as_np(a)], {"newshape": shape, "reverse": reverse})
