"""More of ``mx.np``: ``meshgrid, outer, cumsum, sort, argsort, take, diag, isnan, isinf,
isfinite, around/round, copy, allclose, array_equal``, each over registry ops (``_np_cumsum``,
``sort``, ``argsort``, ``take``, ``diag``, ``_contrib_isnan``, ``round``, ``_copy``, and the
functions of the other modules).

Example:
    >>> import hybridgpu as mx
    >>> xs, ys = meshgrid(mx.np.arange(3), mx.np.arange(2))
    >>> xs.shape, cumsum(mx.np.arange(4)), argsort(mx.np.array([3, 1, 2]))
    ((2, 3), array([0., 1., 3., 6.]), array([1, 2, 0], dtype=int64))
"""

from __future__ import annotations

import numpy as onp

from ..base import MXNetError
from . import _dispatch
from .manipulation import broadcast_to, reshape
from .math import cast_to, make_binary
from .multiarray import as_np

__all__ = ["meshgrid", "outer", "cumsum", "sort", "argsort", "take", "diag", "isnan", "isinf",
           "isfinite", "around", "round", "copy", "allclose", "array_equal"]


def meshgrid(*xi, indexing="xy", sparse=False, copy=True):
    """Coordinate arrays from 1-D arrays, NumPy's ``meshgrid`` (``indexing`` 'xy' or 'ij')."""
    if indexing not in ("xy", "ij"):
        raise MXNetError(f"np.meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    arrays = [reshape(as_np(x), (-1,)) for x in xi]
    shape = [a.shape[0] for a in arrays]
    if indexing == "xy" and len(arrays) > 1:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, a in enumerate(arrays):
        axis = i
        if indexing == "xy" and len(arrays) > 1 and i < 2:
            axis = 1 - i
        view = [1] * len(arrays)
        view[axis] = a.shape[0]
        piece = reshape(a, tuple(view))
        out.append(piece if sparse else broadcast_to(piece, tuple(shape)))
    return out


def outer(a, b):
    """``a[i] * b[j]`` for the flattened inputs."""
    return make_binary("multiply")(reshape(as_np(a), (-1, 1)), reshape(as_np(b), (1, -1)))


def cumsum(a, axis=None, dtype=None, out=None):
    """Running sum along ``axis`` (flattened when None), over ``_np_cumsum``."""
    attrs = {"axis": axis, "dtype": None if dtype is None else onp.dtype(dtype).name}
    result = _dispatch.call("_np_cumsum", [as_np(a)], attrs)
    if out is not None:
        out[...] = result
        return out
    return result


def sort(a, axis=-1, kind=None, order=None):
    """A sorted copy along ``axis``."""
    return _dispatch.call("sort", [as_np(a)], {"axis": axis})


def argsort(a, axis=-1, kind=None, order=None):
    """The indices that sort ``a`` along ``axis`` (int64)."""
    return _dispatch.call("argsort", [as_np(a)], {"axis": axis, "dtype": "int64"})


def take(a, indices, axis=None, mode="raise", out=None):
    """Elements of ``a`` at ``indices`` along ``axis`` (of the flattened ``a`` when None)."""
    a = as_np(a)
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    index = as_np(indices, ctx=a.ctx)
    return _dispatch.call("take", [a, index], {"axis": axis, "mode": mode})


def diag(v, k=0):
    """The ``k``-th diagonal of a matrix, or a matrix with vector ``v`` on it."""
    return _dispatch.call("diag", [as_np(v)], {"k": k})


def _test(op_name, x):
    return cast_to(_dispatch.call(op_name, [as_np(x)]), "bool")


def isnan(x):
    """Elementwise: is NaN (bool)."""
    return _test("_contrib_isnan", x)


def isinf(x):
    """Elementwise: is +-inf (bool)."""
    return _test("_contrib_isinf", x)


def isfinite(x):
    """Elementwise: neither NaN nor infinite (bool)."""
    return _test("_contrib_isfinite", x)


def around(x, decimals=0):
    """Rounded to ``decimals`` places (halves away from zero, as MXNet's ``round``)."""
    x = as_np(x)
    if decimals:
        scale = 10.0 ** decimals
        return _dispatch.call("round", [x * scale]) / scale
    return _dispatch.call("round", [x])


round = around  # noqa: A001 (NumPy's name)


def copy(a):
    """A copy of ``a`` (recorded: gradients flow through)."""
    return _dispatch.call("_copy", [as_np(a)])


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every pair of elements is close (a Python bool, read on the host)."""
    return bool(onp.allclose(as_np(a).asnumpy(), as_np(b).asnumpy(), rtol, atol, equal_nan))


def array_equal(a1, a2):
    """Whether the arrays have the same shape and elements (a Python bool)."""
    return bool(onp.array_equal(as_np(a1).asnumpy(), as_np(a2).asnumpy()))
