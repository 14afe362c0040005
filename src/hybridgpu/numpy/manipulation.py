"""``mx.np`` shape manipulation: ``reshape, transpose, swapaxes, moveaxis, expand_dims,
squeeze, ravel, concatenate, stack, vstack, hstack, split, array_split, broadcast_to,
broadcast_arrays, repeat, tile, flip``, over the registry's shape ops (``_np_reshape``,
``transpose``, ``SwapAxis``, ``Concat``, ``stack``, ``split``, ``broadcast_to``, ...).

Example:
    >>> import hybridgpu as mx
    >>> x = mx.np.arange(6).reshape(2, 3)
    >>> transpose(x).shape, concatenate([x, x]).shape, stack([x, x], axis=2).shape
    ((3, 2), (4, 3), (2, 3, 2))
"""

from __future__ import annotations

import numpy as onp

from ..base import MXNetError
from . import _dispatch
from .dtypes import binary_result
from .math import cast_to
from .multiarray import as_np

__all__ = ["reshape", "transpose", "swapaxes", "moveaxis", "expand_dims", "squeeze", "ravel",
           "concatenate", "stack", "vstack", "hstack", "split", "array_split",
           "broadcast_to", "broadcast_arrays", "repeat", "tile", "flip", "shape", "ndim",
           "size"]


def _shape_arg(newshape):
    if isinstance(newshape, (int, onp.integer)):
        return (int(newshape),)
    return tuple(int(d) for d in newshape)


def reshape(a, newshape, order="C"):
    """``a`` with shape ``newshape`` (one -1 inferred; ``()`` for one element)."""
    if order != "C":
        raise MXNetError(f"np.reshape: only order='C' is supported, got {order!r}")
    a = as_np(a)
    if _dispatch.is_symbolic([a]):
        return _dispatch.call("_np_reshape", [a], {"newshape": _shape_arg(newshape)})
    shape = _shape_arg(newshape)
    try:
        onp.empty(a.shape, dtype=onp.bool_).reshape(shape)
    except ValueError:
        raise MXNetError(f"np.reshape: cannot reshape array of shape {a.shape} (size {a.size})"
                         f" into shape {shape}") from None
    return _dispatch.call("_np_reshape", [a], {"newshape": shape})


def transpose(a, axes=None):
    """Axes reversed, or permuted as ``axes`` says."""
    a = as_np(a)
    return _dispatch.call("transpose", [a], {"axes": () if axes is None else tuple(axes)})


def swapaxes(a, axis1, axis2):
    """Axes ``axis1`` and ``axis2`` exchanged."""
    return _dispatch.call("SwapAxis", [as_np(a)], {"dim1": axis1, "dim2": axis2})


def moveaxis(a, source, destination):
    """Axis ``source`` moved to position ``destination``."""
    a = as_np(a)
    order = [i for i in range(a.ndim) if i != source % a.ndim]
    order.insert(destination % a.ndim, source % a.ndim)
    return transpose(a, order)


def expand_dims(a, axis):
    """A new axis of size 1 at ``axis``."""
    return _dispatch.call("expand_dims", [as_np(a)], {"axis": axis})


def squeeze(a, axis=None):
    """Axes of size 1 removed (all of them, or ``axis``)."""
    a = as_np(a)
    if _dispatch.is_symbolic([a]):
        return _dispatch.call("squeeze", [a], {"axis": axis})
    axes = (axis,) if isinstance(axis, int) else axis
    if axes is None:
        axes = tuple(i for i, d in enumerate(a.shape) if d == 1)
    axes = tuple(x % max(a.ndim, 1) for x in axes)
    for x in axes:
        if a.shape[x] != 1:
            raise MXNetError(f"np.squeeze: axis {x} of shape {a.shape} has size {a.shape[x]}, "
                             "not 1")
    return reshape(a, tuple(d for i, d in enumerate(a.shape) if i not in axes))


def ravel(x, order="C"):
    """A 1-D array of the elements."""
    return reshape(x, (-1,), order)


def _common(arrays, fn):
    arrays = [as_np(a) for a in arrays]
    if not arrays:
        raise MXNetError(f"np.{fn}: needs at least one array")
    if _dispatch.is_symbolic(arrays):
        return arrays
    dtype = arrays[0].dtype
    for a in arrays[1:]:
        dtype = binary_result(dtype, a.dtype, arithmetic=False)
    return [cast_to(a, dtype) for a in arrays]


def concatenate(seq, axis=0, out=None):
    """Arrays joined along ``axis`` (None: flattened first)."""
    arrays = _common(seq, "concatenate")
    if axis is None:
        arrays, axis = [ravel(a) for a in arrays], 0
    result = _dispatch.call("Concat", arrays, {"dim": axis})
    if out is not None:
        out[...] = result
        return out
    return result


def stack(arrays, axis=0, out=None):
    """Arrays of one shape joined along a new axis ``axis``."""
    result = _dispatch.call("stack", _common(arrays, "stack"), {"axis": axis})
    if out is not None:
        out[...] = result
        return out
    return result


def vstack(arrays, out=None):
    """Arrays joined along axis 0 (vectors as rows)."""
    arrays = [as_np(a) for a in arrays]
    return concatenate([a.reshape(1, -1) if a.ndim == 1 else a for a in arrays], 0, out)


def hstack(arrays):
    """Arrays joined along axis 1 (axis 0 for vectors)."""
    arrays = [as_np(a) for a in arrays]
    return concatenate(arrays, 0 if arrays[0].ndim == 1 else 1)


def split(ary, indices_or_sections, axis=0):
    """A list of sub-arrays: ``n`` equal parts, or split before each index listed."""
    a = as_np(ary)
    if isinstance(indices_or_sections, (int, onp.integer)):
        n = int(indices_or_sections)
        if not _dispatch.is_symbolic([a]) and a.shape[axis] % n:
            raise MXNetError(f"np.split: array split does not result in an equal division "
                             f"(axis {axis} of shape {a.shape} into {n})")
        parts = _dispatch.call("split", [a], {"num_outputs": n, "axis": axis})
    else:
        parts = _dispatch.call("_split_v2", [a], {"indices": (0, *indices_or_sections),
                                                  "axis": axis})
    return list(parts) if isinstance(parts, (list, tuple)) else [parts]


def array_split(ary, indices_or_sections, axis=0):
    """Like ``split``; ``n`` parts need not be equal (the first ones get one more)."""
    a = as_np(ary)
    if isinstance(indices_or_sections, (int, onp.integer)):
        n, length = int(indices_or_sections), a.shape[axis]
        sizes = [length // n + (1 if i < length % n else 0) for i in range(n)]
        indices_or_sections = list(onp.cumsum(sizes)[:-1])
    return split(a, [int(i) for i in indices_or_sections], axis)


def broadcast_to(array, shape):
    """``array`` broadcast to ``shape``."""
    a = as_np(array)
    shape = _shape_arg(shape)
    if not _dispatch.is_symbolic([a]) and a.ndim < len(shape):
        a = reshape(a, (1,) * (len(shape) - a.ndim) + a.shape)
    return _dispatch.call("broadcast_to", [a], {"shape": shape})


def broadcast_arrays(*args):
    """The arrays broadcast to their common shape."""
    arrays = [as_np(a) for a in args]
    target = onp.broadcast_shapes(*(a.shape for a in arrays))
    return [a if a.shape == target else broadcast_to(a, target) for a in arrays]


def repeat(a, repeats, axis=None):
    """Each element repeated ``repeats`` times (flattened first when ``axis`` is None)."""
    return _dispatch.call("repeat", [as_np(a)], {"repeats": repeats, "axis": axis})


def tile(A, reps):  # noqa: N803 (NumPy's name)
    """``A`` repeated ``reps`` times along each axis."""
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    return _dispatch.call("tile", [as_np(A)], {"reps": reps})


def flip(m, axis=None):
    """Elements reversed along ``axis`` (every axis when None)."""
    m = as_np(m)
    axes = tuple(range(m.ndim)) if axis is None else axis
    return _dispatch.call("flip", [m], {"axis": axes})


def shape(a):
    """The shape of ``a``."""
    return as_np(a).shape


def ndim(a):
    """The number of dimensions of ``a``."""
    return as_np(a).ndim


def size(a, axis=None):
    """The number of elements (along ``axis``)."""
    a = as_np(a)
    return a.size if axis is None else a.shape[axis]
