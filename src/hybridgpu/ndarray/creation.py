"""Array creation: ``array``, ``empty``, ``zeros``, ``ones``, ``full``, ``arange``, ``linspace``,
``eye`` (MXNet's Python-level signatures; the work is done by creation ops in the registry:
``_zeros``, ``_ones``, ``_full``, ``_arange``, ``_linspace``, ``_eye``).

``ctx`` is a Context, a string such as ``'gpu(0)'``, or None for the current context.

Example:
    >>> from hybridgpu import nd
    >>> nd.array([1, 2]).dtype, nd.array(nd.array([1], dtype="int32")).dtype
    (<class 'numpy.float32'>, <class 'numpy.int32'>)
    >>> nd.arange(0, 10, 3).asnumpy().tolist(), nd.full((2,), 7).asnumpy().tolist()
    ([0.0, 3.0, 6.0, 9.0], [7.0, 7.0])
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import ops
from ..base import MXNetError, mx_real_t
from ..context import Context, current_context
from .imperative import invoke
from .ndarray import NDArray, to_device_array
from .register import _parse_context

__all__ = ["array", "empty", "zeros", "ones", "full", "arange", "linspace", "eye"]


def _context(ctx):
    """A Context from None (the current one), a Context or a string like ``'gpu(0)'``."""
    if ctx is None:
        return current_context()
    if isinstance(ctx, Context):
        return ctx
    if isinstance(ctx, str):
        return _parse_context(ctx)
    raise TypeError(f"ctx must be a Context or a string like 'gpu(0)', got {ctx!r}")


def _check_stype(fn, stype):
    if stype not in (None, "default"):
        raise MXNetError(f"nd.{fn}: stype={stype!r} is sparse storage, which hybridgpu does "
                         "not have; use stype=None or 'default'")


def _create(op_name, ctx, out=None, **attrs):
    """Run creation op ``op_name`` with ``attrs`` on ``ctx``, into ``out`` when given."""
    op = ops.get(op_name)
    ctx = out.context if ctx is None and out is not None else _context(ctx)
    return invoke(op, [], op.parse_attrs(attrs), out=out, ctx=ctx)


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


def empty(shape, ctx=None, dtype=None, stype=None):
    """An uninitialized NDArray of ``shape``.

    Example:
        >>> empty((2, 3)).shape
        (2, 3)
    """
    _check_stype("empty", stype)
    ctx = _context(ctx)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    xp = ctx.xp
    with ctx.scope():
        return NDArray(xp.empty(shape, dtype=dtype or mx_real_t), ctx)


def zeros(shape, ctx=None, dtype=None, stype=None, **kwargs):
    """An NDArray of zeros (op ``_zeros``); ``dtype`` defaults to float32.

    Example:
        >>> zeros((2, 3), dtype="int32").asnumpy().tolist()
        [[0, 0, 0], [0, 0, 0]]
    """
    _check_stype("zeros", stype)
    out = kwargs.pop("out", None)
    kwargs.pop("name", None)
    return _create("_zeros", ctx, out, shape=shape, dtype=dtype or mx_real_t, **kwargs)


def ones(shape, ctx=None, dtype=None, **kwargs):
    """An NDArray of ones (op ``_ones``); ``dtype`` defaults to float32.

    Example:
        >>> ones(3).asnumpy().tolist()
        [1.0, 1.0, 1.0]
    """
    out = kwargs.pop("out", None)
    kwargs.pop("name", None)
    return _create("_ones", ctx, out, shape=shape, dtype=dtype or mx_real_t, **kwargs)


def full(shape, val, ctx=None, dtype=mx_real_t, out=None):
    """An NDArray filled with ``val`` (op ``_full``); into ``out`` when given.

    Example:
        >>> full((2, 2), 7).asnumpy().tolist()
        [[7.0, 7.0], [7.0, 7.0]]
    """
    return _create("_full", ctx, out, shape=shape, value=val, dtype=dtype or mx_real_t)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=None, ctx=None, dtype=mx_real_t):
    """Evenly spaced values in ``[start, stop)`` (``[0, start)`` when ``stop`` is None), each
    repeated ``repeat`` times (op ``_arange``). ``infer_range`` is deprecated, as in MXNet.

    Example:
        >>> arange(0, 10, 3).asnumpy().tolist(), arange(3, repeat=2).asnumpy().tolist()
        ([0.0, 3.0, 6.0, 9.0], [0.0, 0.0, 1.0, 1.0, 2.0, 2.0])
    """
    if infer_range is not None:
        warnings.warn("nd.arange: the infer_range argument is deprecated and ignored",
                      DeprecationWarning, stacklevel=2)
    return _create("_arange", ctx, start=start, stop=stop, step=step, repeat=repeat,
                   dtype=dtype or mx_real_t)


def linspace(start, stop, num, endpoint=True, ctx=None, dtype=mx_real_t):
    """``num`` evenly spaced values from ``start`` to ``stop`` (op ``_linspace``).

    Example:
        >>> linspace(0, 1, 5).asnumpy().tolist()
        [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    return _create("_linspace", ctx, start=start, stop=stop, num=num, endpoint=endpoint,
                   dtype=dtype or mx_real_t)


def eye(N, M=0, k=0, ctx=None, dtype=None, **kwargs):
    """An ``N x M`` array (``M=0`` means ``N``) with ones on diagonal ``k`` (op ``_eye``).

    Example:
        >>> eye(3, k=1).asnumpy().tolist()
        [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]
    """
    out = kwargs.pop("out", None)
    kwargs.pop("name", None)
    return _create("_eye", ctx, out, N=N, M=M, k=k, dtype=dtype or mx_real_t, **kwargs)
