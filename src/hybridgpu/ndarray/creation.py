"""Array creation: ``array``, ``empty``, ``zeros``, ``ones``, ``full``, ``arange``, ``linspace``,
``eye`` (MXNet's Python-level signatures; the work is done by creation ops in the registry).

Example:
    >>> from hybridgpu import nd
    >>> nd.array([1, 2]).dtype, nd.array(nd.array([1], dtype="int32")).dtype
    (<class 'numpy.float32'>, <class 'numpy.int32'>)
"""

from __future__ import annotations

import numpy as np

from ..base import MXNetError, mx_real_t
from ..context import Context, current_context
from .ndarray import NDArray, to_device_array

__all__ = ["array", "empty"]


def _context(ctx):
    return current_context() if ctx is None else Context(ctx)


def array(source_array, ctx=None, dtype=None):
    """An NDArray holding a copy of ``source_array`` (NDArray, NumPy/CuPy array, list, scalar).

    The dtype is ``float32`` unless ``dtype`` is given or the source is an NDArray (whose dtype
    is kept), as in MXNet.

    Example:
        >>> array([[1, 2], [3, 4]]).shape
        (2, 2)
    """
    ctx = _context(ctx)
    if isinstance(source_array, NDArray):
        dtype = source_array.dtype if dtype is None else dtype
        data = to_device_array(source_array._data, source_array._ctx, ctx)
        return NDArray(data.astype(dtype, copy=False), ctx)
    dtype = mx_real_t if dtype is None else dtype
    if type(source_array).__module__.startswith("cupy"):
        source_array = source_array.get()
    try:
        host = np.array(source_array, dtype=dtype)
    except (TypeError, ValueError) as err:
        raise MXNetError(f"nd.array: cannot make an array of dtype {np.dtype(dtype).name} "
                         f"from {type(source_array).__name__}: {err}") from None
    if host.dtype == object:
        raise MXNetError("nd.array: the source is ragged or holds objects")
    return NDArray(to_device_array(host, None, ctx), ctx)


def empty(shape, ctx=None, dtype=None):
    """An uninitialized NDArray of ``shape``.

    Example:
        >>> empty((2, 3)).shape
        (2, 3)
    """
    ctx = _context(ctx)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    xp = ctx.xp
    with ctx.scope():
        return NDArray(xp.empty(shape, dtype=dtype or mx_real_t), ctx)
