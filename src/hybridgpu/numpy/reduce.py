"""``mx.np`` reductions: ``sum, mean, max, min, prod, std, var, argmax, argmin`` (and
``amax``/``amin``), over the NumPy-semantics ops of ``ops/np_ops.py`` (``_np_sum``,
``_npi_mean``, ...): ``axis`` None, an int or a tuple; ``keepdims``; a full reduction gives a
zero-dim array.

Example:
    >>> import hybridgpu as mx
    >>> x = mx.np.arange(6).reshape(2, 3)
    >>> sum(x), mean(x, axis=0), argmax(x, axis=1)
    (array(15.), array([1.5, 2.5, 3.5]), array([2, 2], dtype=int64))
"""

from __future__ import annotations

import numpy as onp

from . import _dispatch
from .multiarray import as_np

__all__ = ["sum", "mean", "max", "min", "amax", "amin", "prod", "std", "var", "argmax",
           "argmin", "all", "any"]


def _axis(axis):
    if axis is None or isinstance(axis, (int, onp.integer)):
        return None if axis is None else int(axis)
    return tuple(int(a) for a in axis)


def _finish(result, out):
    if out is None:
        return result
    out[...] = result
    return out


def _reduce(op_name, a, axis, keepdims, dtype=None, out=None, **extra):
    attrs = {"axis": _axis(axis), "keepdims": bool(keepdims), **extra}
    if dtype is not None:
        attrs["dtype"] = onp.dtype(dtype).name
    return _finish(_dispatch.call(op_name, [as_np(a)], attrs), out)


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None):  # noqa: A001
    """Sum over ``axis`` (``_np_sum``)."""
    result = _reduce("_np_sum", a, axis, keepdims, dtype, out)
    return result if initial is None else result + initial


def mean(a, axis=None, dtype=None, out=None, keepdims=False):
    """Mean over ``axis`` (``_npi_mean``); integers give float32."""
    return _reduce("_npi_mean", a, axis, keepdims, dtype, out)


def max(a, axis=None, out=None, keepdims=False):  # noqa: A001
    """Maximum over ``axis`` (``_np_max``)."""
    return _reduce("_np_max", a, axis, keepdims, out=out)


def min(a, axis=None, out=None, keepdims=False):  # noqa: A001
    """Minimum over ``axis`` (``_np_min``)."""
    return _reduce("_np_min", a, axis, keepdims, out=out)


amax, amin = max, min


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None):
    """Product over ``axis`` (``_np_prod``)."""
    result = _reduce("_np_prod", a, axis, keepdims, dtype, out)
    return result if initial is None else result * initial


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """Standard deviation over ``axis`` (``_npi_std``)."""
    return _reduce("_npi_std", a, axis, keepdims, dtype, out, ddof=ddof)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """Variance over ``axis`` (``_npi_var``)."""
    return _reduce("_npi_var", a, axis, keepdims, dtype, out, ddof=ddof)


def _arg(op_name, a, axis, out, keepdims):
    if axis is not None and not isinstance(axis, (int, onp.integer)):
        raise TypeError(f"np.{op_name[5:]}: axis must be an int or None, got {axis!r}")
    attrs = {"axis": None if axis is None else int(axis), "keepdims": bool(keepdims)}
    return _finish(_dispatch.call(op_name, [as_np(a)], attrs), out)


def argmax(a, axis=None, out=None, keepdims=False):
    """Indices of the maxima along ``axis`` (int64; ``_npi_argmax``)."""
    return _arg("_npi_argmax", a, axis, out, keepdims)


def argmin(a, axis=None, out=None, keepdims=False):
    """Indices of the minima along ``axis`` (int64; ``_npi_argmin``)."""
    return _arg("_npi_argmin", a, axis, out, keepdims)



def _as_bool(a):
    from .math import cast_to

    return cast_to(as_np(a), "bool")


def all(a, axis=None, out=None, keepdims=False):  # noqa: A001
    """Whether every element along ``axis`` is nonzero (bool; the ``_np_min`` of bools)."""
    return _reduce("_np_min", _as_bool(a), axis, keepdims, out=out)


def any(a, axis=None, out=None, keepdims=False):  # noqa: A001
    """Whether any element along ``axis`` is nonzero (bool; the ``_np_max`` of bools)."""
    return _reduce("_np_max", _as_bool(a), axis, keepdims, out=out)
