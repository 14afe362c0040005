"""More of ``mx.np``: ``meshgrid, outer, cumsum, sort, argsort, take, diag, isnan, isinf,
isfinite, around/round, copy, tril, triu, logspace, diff, trace, inner, vdot, average``, each
over registry ops (``_np_cumsum``, ``sort``, ``argsort``, ``take``, ``diag``,
``_contrib_isnan``, ``round``, ``_copy``, ``slice_axis``, and the functions of the other
modules); ``nonzero``, ``unique``, ``genfromtxt``, ``allclose``, ``array_equal`` read values on
the host, as MXNet 1.9's do.

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
           "isfinite", "around", "round", "copy", "allclose", "array_equal", "nonzero",
           "unique", "genfromtxt", "tril", "triu", "logspace", "diff", "trace", "inner", "vdot",
           "average", "fliplr", "flipud", "atleast_1d", "atleast_2d", "atleast_3d",
           "column_stack", "dstack", "hsplit", "vsplit", "dsplit", "ediff1d", "roll"]


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


# -- index-valued and host-side helpers (MXNet 1.9 runs these on the host too) -------------

def nonzero(a):
    """A tuple of index arrays, one per axis, of the nonzero elements (int64)."""
    from .multiarray import from_host

    a = as_np(a)
    return tuple(from_host(i.astype(onp.int64), a.ctx) for i in onp.nonzero(a.asnumpy()))


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None):
    """The sorted unique elements (and NumPy's optional index, inverse and counts arrays)."""
    from .multiarray import from_host

    ar = as_np(ar)
    found = onp.unique(ar.asnumpy(), return_index, return_inverse, return_counts, axis)
    if not isinstance(found, tuple):
        return from_host(found, ar.ctx)
    return tuple(from_host(f if i == 0 else f.astype(onp.int64), ar.ctx)
                 for i, f in enumerate(found))


def genfromtxt(*args, **kwargs):
    """NumPy's ``genfromtxt``, the result as an ``mx.np`` array (float32 unless ``dtype``)."""
    from .multiarray import array

    data = onp.genfromtxt(*args, **kwargs)
    return array(data, dtype=kwargs.get("dtype") or "float32")


# -- compositions of registry ops (gradients flow) -----------------------------------------

def _triangle(m, k, lower):
    from .multiarray import from_host

    m = as_np(m)
    rows, cols = m.shape[-2:]
    mask = onp.tri(rows, cols, k, dtype=bool)
    mask = mask if lower else ~onp.tri(rows, cols, k - 1, dtype=bool)
    return make_binary("multiply")(m, from_host(mask.astype(m.dtype), m.ctx))


def tril(m, k=0):
    """The lower triangle (elements above diagonal ``k`` set to zero)."""
    return _triangle(m, k, True)


def triu(m, k=0):
    """The upper triangle (elements below diagonal ``k`` set to zero)."""
    return _triangle(m, k, False)


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0, ctx=None):
    """``base ** linspace(start, stop, num)``."""
    from .creation import linspace

    exponents = linspace(start, stop, num, endpoint=endpoint, dtype=dtype, ctx=ctx)
    return make_binary("power")(base, exponents)


def diff(a, n=1, axis=-1):
    """The ``n``-th difference along ``axis``: ``a[1:] - a[:-1]``, ``n`` times."""
    a = as_np(a)
    for _ in range(n):
        length = a.shape[axis]
        upper = _dispatch.call("slice_axis", [a], {"axis": axis, "begin": 1, "end": length})
        lower = _dispatch.call("slice_axis", [a], {"axis": axis, "begin": 0,
                                                   "end": length - 1})
        a = make_binary("subtract")(upper, lower)
    return a


def trace(a, offset=0, axis1=0, axis2=1):
    """The sum of diagonal ``offset`` (over ``axis1``, ``axis2``)."""
    from .reduce import sum as _sum

    d = _dispatch.call("diag", [as_np(a)], {"k": offset, "axis1": axis1, "axis2": axis2})
    return _sum(d, axis=-1)


def inner(a, b):
    """Sum of products over the last axes of ``a`` and ``b``."""
    from .math import tensordot

    a, b = as_np(a), as_np(b)
    return tensordot(a, b, axes=((a.ndim - 1,), (b.ndim - 1,)))


def vdot(a, b):
    """The dot product of the flattened arrays."""
    from .math import dot

    return dot(reshape(as_np(a), (-1,)), reshape(as_np(b), (-1,)))


def average(a, axis=None, weights=None, returned=False):
    """The (weighted) mean along ``axis``."""
    from .reduce import mean
    from .reduce import sum as _sum

    a = as_np(a)
    if weights is None:
        result, total = mean(a, axis=axis), None
    else:
        w = as_np(weights, ctx=a.ctx)
        if w.shape != a.shape and axis is not None:
            view = [1] * a.ndim
            view[axis] = w.shape[0]
            w = reshape(w, tuple(view))
        total = _sum(broadcast_to(w, a.shape), axis=axis)
        result = _sum(make_binary("multiply")(a, w), axis=axis) / total
    return (result, total) if returned else result


# -- aliases and small compositions --------------------------------------------------------

def fliplr(m):
    """Columns reversed (axis 1)."""
    return _dispatch.call("flip", [as_np(m)], {"axis": (1,)})


def flipud(m):
    """Rows reversed (axis 0)."""
    return _dispatch.call("flip", [as_np(m)], {"axis": (0,)})


def _at_least(arrays, ndim):
    out = []
    for a in arrays:
        a = as_np(a)
        shape = a.shape
        if len(shape) < ndim:  # NumPy's placement: (n,) -> (1, n) or (1, n, 1); (m, n) -> (m, n, 1)
            if not shape:
                shape = (1,) * ndim
            elif ndim == 2 or len(shape) == 1:
                shape = ((1,) + shape + (1,))[:ndim]
            else:
                shape = shape + (1,)
            a = reshape(a, shape)
        out.append(a)
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys):
    """Each input with at least one dimension."""
    return _at_least(arys, 1)


def atleast_2d(*arys):
    """Each input with at least two dimensions (vectors become rows)."""
    return _at_least(arys, 2)


def atleast_3d(*arys):
    """Each input with at least three dimensions (NumPy's placement of the new axes)."""
    return _at_least(arys, 3)


def column_stack(tup):
    """1-D arrays as columns of a 2-D array (2-D arrays as they are), joined on axis 1."""
    from .manipulation import concatenate

    cols = [as_np(a) for a in tup]
    return concatenate([reshape(c, (-1, 1)) if c.ndim == 1 else c for c in cols], axis=1)


def dstack(tup):
    """Arrays joined along the third axis."""
    from .manipulation import concatenate

    return concatenate(atleast_3d(*tup) if len(tup) > 1 else [atleast_3d(*tup)], axis=2)


def _split_on(ary, indices_or_sections, axis):
    from .manipulation import split

    return split(ary, indices_or_sections, axis)


def hsplit(ary, indices_or_sections):
    """``split`` along axis 1 (axis 0 for vectors)."""
    return _split_on(ary, indices_or_sections, 1 if as_np(ary).ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    """``split`` along axis 0."""
    return _split_on(ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    """``split`` along axis 2."""
    return _split_on(ary, indices_or_sections, 2)


def ediff1d(ary):
    """Differences of the flattened array."""
    return diff(reshape(as_np(ary), (-1,)))


def roll(a, shift, axis=None):
    """Elements shifted by ``shift`` along ``axis`` (of the flattened array when None),
    wrapping around: two slices joined."""
    from .manipulation import concatenate

    a = as_np(a)
    flat = axis is None
    work, axis = (reshape(a, (-1,)), 0) if flat else (a, axis)
    length = work.shape[axis]
    cut = (length - shift % length) % length if length else 0
    if cut:
        head = _dispatch.call("slice_axis", [work], {"axis": axis, "begin": cut, "end": length})
        tail = _dispatch.call("slice_axis", [work], {"axis": axis, "begin": 0, "end": cut})
        work = concatenate([head, tail], axis=axis)
    return reshape(work, a.shape) if flat else work
