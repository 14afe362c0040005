"""``mx.np`` creation functions: ``zeros, ones, full, empty, arange, linspace, eye,
identity, zeros_like, ones_like, full_like, empty_like``, over the registry's creation
ops (``_npi_zeros``, ``_npi_ones``, ``_npi_full``, ``_arange``, ``_linspace``, ``_eye``).
Float32 unless a dtype is given, as in MXNet 1.9.

Example:
    >>> arange(3), zeros((2,), dtype="int32"), full((2,), 7)
    (array([0., 1., 2.]), array([0, 0], dtype=int32), array([7., 7.]))
"""

from __future__ import annotations

import numpy as onp

from ..base import MXNetError
from . import _dispatch
from .dtypes import DEFAULT

__all__ = ["zeros", "ones", "full", "empty", "arange", "linspace", "eye", "identity",
           "zeros_like", "ones_like", "full_like", "empty_like"]


def _shape(shape, fn):
    if isinstance(shape, (int, onp.integer)):
        return (int(shape),)
    try:
        return tuple(int(d) for d in shape)
    except TypeError:
        raise MXNetError(f"np.{fn}: shape must be an int or a tuple of ints, got "
                         f"{shape!r}") from None


def _dtype(dtype):
    return DEFAULT.name if dtype is None else onp.dtype(dtype).name


def _ctx(ctx, device):
    return device if ctx is None else ctx


def zeros(shape, dtype=None, order="C", ctx=None, device=None):
    """An array of zeros (float32 by default)."""
    return _dispatch.call("_npi_zeros", [], {"shape": _shape(shape, "zeros"),
                                          "dtype": _dtype(dtype)}, ctx=_ctx(ctx, device))


def ones(shape, dtype=None, order="C", ctx=None, device=None):
    """An array of ones (float32 by default)."""
    return _dispatch.call("_npi_ones", [], {"shape": _shape(shape, "ones"),
                                         "dtype": _dtype(dtype)}, ctx=_ctx(ctx, device))


def empty(shape, dtype=None, order="C", ctx=None, device=None):
    """An array of the given shape; hybridgpu fills it with zeros."""
    return zeros(shape, dtype=dtype, ctx=ctx, device=device)


def full(shape, fill_value, dtype=None, order="C", ctx=None, device=None, out=None):
    """An array filled with ``fill_value`` (float32 unless ``dtype`` says otherwise)."""
    if hasattr(fill_value, "shape"):
        base = zeros(shape, dtype=dtype, ctx=ctx, device=device)
        return base + fill_value.astype(base.dtype)
    return _dispatch.call("_npi_full", [], {"shape": _shape(shape, "full"), "value": fill_value,
                                         "dtype": _dtype(dtype)}, ctx=_ctx(ctx, device))


def arange(start, stop=None, step=1, dtype=None, ctx=None, device=None):
    """Evenly spaced values in ``[start, stop)`` (float32 unless ``dtype`` is given)."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise MXNetError("np.arange: step must not be 0")
    return _dispatch.call("_arange", [], {"start": start, "stop": stop, "step": step,
                                           "dtype": _dtype(dtype)}, ctx=_ctx(ctx, device))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, ctx=None,
             device=None):
    """``num`` evenly spaced values from ``start`` to ``stop``."""
    if axis != 0:
        raise MXNetError("np.linspace: only axis=0 is supported")
    out = _dispatch.call("_linspace", [], {"start": start, "stop": stop, "num": num,
                                            "endpoint": endpoint, "dtype": _dtype(dtype)},
                         ctx=_ctx(ctx, device))
    if retstep:
        return out, (stop - start) / max(num - (1 if endpoint else 0), 1)
    return out


def eye(N, M=None, k=0, dtype=None, ctx=None, device=None):  # noqa: N803 (NumPy's names)
    """A 2-D array with ones on diagonal ``k``."""
    return _dispatch.call("_eye", [], {"N": N, "M": M or 0, "k": k, "dtype": _dtype(dtype)},
                          ctx=_ctx(ctx, device))


def identity(n, dtype=None, ctx=None, device=None):
    """The ``n`` x ``n`` identity matrix."""
    return eye(n, dtype=dtype, ctx=ctx, device=device)


def _like(name, a, dtype):
    from .multiarray import as_np

    a = as_np(a)
    out = _dispatch.call(name, [a])
    if dtype is not None and onp.dtype(dtype) != onp.dtype(a.dtype):
        out = out.astype(dtype)
    return out


def zeros_like(a, dtype=None, order="C", ctx=None, device=None):
    """Zeros of ``a``'s shape and dtype."""
    return _like("zeros_like", a, dtype)


def ones_like(a, dtype=None, order="C", ctx=None, device=None):
    """Ones of ``a``'s shape and dtype."""
    return _like("ones_like", a, dtype)


def empty_like(prototype, dtype=None, order="C", subok=False, shape=None):
    """An array of ``prototype``'s shape and dtype (zeros in hybridgpu)."""
    return _like("zeros_like", prototype, dtype)


def full_like(a, fill_value, dtype=None, order="C", ctx=None, device=None):
    """``a``'s shape and dtype filled with ``fill_value``."""
    out = _like("zeros_like", a, dtype)
    return out + fill_value
