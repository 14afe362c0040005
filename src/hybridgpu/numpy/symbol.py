"""The Symbol side of ``mx.np``: while a NumPy-mode block is hybridized, its traced values are
``NumpySymbol``s, a ``Symbol`` subclass with NumPy's indexing (``x[:, 0]``, ``x[1:, ::2]``),
NumPy's ``reshape`` and methods (``x.sum(axis=1)``, ``x.T``, ``x.astype``) and operators
that build the same ops as ``mx.np``'s functions. ``wrap`` (``_dispatch``) turns the Symbols
``F.np``/``F.npx`` build into these; Gluon wraps the traced inputs and Parameters.

Example:
    >>> import hybridgpu as mx
    >>> x = as_numpy_symbol(mx.sym.var("x", shape=(2, 3)))
    >>> y = (x[:, 1] * 2).sum()
    >>> y.shape, type(y).__name__
    ((), 'NumpySymbol')
"""

from __future__ import annotations

import numbers

from ..base import MXNetError
from ..symbol import Symbol
from . import _dispatch

__all__ = ["NumpySymbol", "as_numpy_symbol"]


class NumpySymbol(Symbol):
    """A traced value of a NumPy-mode block (MXNet's ``mx.sym.np._Symbol``)."""

    __slots__ = ()

    def __getitem__(self, key):
        if len(self._outputs) != 1 or isinstance(key, str):
            return _dispatch.wrap(Symbol.__getitem__(self, key))
        return basic_index(self, key)

    def __iter__(self):
        if len(self._outputs) != 1:
            return iter([self[i] for i in range(len(self._outputs))])
        return iter([self[i] for i in range(self.shape[0])])


def as_numpy_symbol(value):
    """``value`` (a Symbol, or lists/tuples of them) as ``NumpySymbol``s, in place."""
    if type(value) is Symbol:
        value.__class__ = NumpySymbol
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(as_numpy_symbol(v) for v in value)
    return value


def _parts(key, ndim):
    """``key`` as one entry per axis: ints, slices, or None (a new axis)."""
    key = key if isinstance(key, tuple) else (key,)
    if any(k is Ellipsis for k in key):
        at = key.index(Ellipsis)
        fill = ndim - (len(key) - 1 - sum(k is None for k in key))
        key = key[:at] + (slice(None),) * fill + key[at + 1:]
    for k in key:
        if not (k is None or isinstance(k, (slice, numbers.Integral))):
            raise MXNetError(f"indexing a traced array with {type(k).__name__} is not "
                             "supported while hybridized; use F.np.take(x, indices, axis) or "
                             "F.npx.pick, or index with ints and slices")
    return key


def basic_index(x, key):
    """NumPy basic indexing of a traced array: the ``slice`` op, then ``_np_reshape`` to drop
    the integer-indexed axes and add the ``None`` ones."""
    shape = x.shape
    parts = _parts(key, len(shape))
    begin, end, step, out_shape, axis = [], [], [], [], 0
    for k in parts:
        if k is None:
            out_shape.append(1)
            continue
        if axis >= len(shape):
            raise IndexError(f"too many indices for a traced array of shape {shape}")
        size = shape[axis]
        if isinstance(k, numbers.Integral):
            i = int(k) + size if k < 0 else int(k)
            if not 0 <= i < size:
                raise IndexError(f"index {k} is out of bounds for axis {axis} with size {size}")
            begin.append(i)
            end.append(i + 1)
            step.append(1)
        else:
            start, stop, stride = k.indices(size)
            begin.append(start)
            end.append(stop if stop >= 0 else None)
            step.append(stride)
            out_shape.append(len(range(start, stop, stride)))
        axis += 1
    out_shape += list(shape[axis:])
    sliced = _dispatch.call("slice", [x], {"begin": tuple(begin), "end": tuple(end),
                                           "step": tuple(step)}) if begin else x
    return _dispatch.call("_np_reshape", [sliced], {"newshape": tuple(out_shape)})


_dispatch._SYM_CLASS.append(NumpySymbol)
