"""``mx.np.ndarray``: an ``NDArray`` with NumPy's semantics, as MXNet 1.9's ``mx.np`` has them.

It is a subclass of ``NDArray`` holding the same thing (one NumPy or CuPy array and its
Context), so every ``nd`` op, the tape and Gluon take it as they are; what differs is here and
in ``methods.py``: zero-dim arrays (``x[0]`` of a vector has shape ``()``, reductions give
``()``), NumPy indexing (boolean masks), NumPy's ``reshape``, printing as ``array([...])``, and
MXNet's dtype rules (``dtypes.py``). ``array(...)`` makes one.

Example:
    >>> import hybridgpu as mx
    >>> x = mx.np.array([[1, 2], [3, 4]])
    >>> x
    array([[1., 2.],
           [3., 4.]])
    >>> x[1, 0], x[1, 0].shape
    (array(3.), ())
"""

from __future__ import annotations

import re

import numpy as onp

from .. import tape
from ..base import MXNetError
from ..context import Context, current_context
from ..ndarray import NDArray
from ..ndarray.ndarray import _INDEXING, to_device_array
from . import _dispatch
from .dtypes import creation_dtype

__all__ = ["ndarray", "array", "as_np", "from_host"]

_FLOAT32_SUFFIX = re.compile(r",\s*dtype=float32\)$")


class ndarray(NDArray):  # noqa: N801  (MXNet's name)
    """An array with NumPy semantics on a device; make one with ``mx.np.array``.

    Example:
        >>> import hybridgpu as mx
        >>> a = mx.np.arange(6).reshape(2, 3)
        >>> a.shape, a.dtype, a.ctx, a.sum(axis=0)
        ((2, 3), dtype('float32'), cpu(0), array([3., 5., 7.]))
    """

    __slots__ = ()

    @property
    def dtype(self):
        """The element type as a NumPy dtype (``dtype('float32')``), as ``mx.np`` returns it."""
        return self._data.dtype

    @property
    def device(self):
        """The Context the data lives on (MXNet 2's name for ``ctx``)."""
        return self._ctx

    # -- host values --------------------------------------------------------------------
    def asnumpy(self):
        """A NumPy copy of the data, shape and dtype kept (zero-dim stays zero-dim)."""
        return self._host_copy()

    def item(self, *args):
        """The value of a one-element array (or of the element ``args`` name) as a Python
        number."""
        return self.asnumpy().item(*args)

    def tolist(self):
        """The data as nested Python lists."""
        return self.asnumpy().tolist()

    def as_nd_ndarray(self):
        """An ``mx.nd.NDArray`` sharing this array's data (and its autograd record)."""
        out = NDArray(self._data, self._ctx)
        out._ag = self._ag
        return out

    def as_np_ndarray(self):
        """This array."""
        return self

    def attach_grad(self, grad_req="write", stype=None):
        """Track this array in ``autograd.record()``; ``.grad`` is an ``mx.np.ndarray``."""
        if stype not in (None, "default"):
            raise MXNetError(f"attach_grad: sparse gradient storage {stype!r} is not supported")
        grad = ndarray(self._ctx.xp.zeros_like(self._data), self._ctx)
        tape.mark_variables([self], [grad], grad_req)

    def detach(self):
        """The same data, not tracked: gradients stop here."""
        return ndarray(self._data, self._ctx)

    def copy(self, order="C"):
        """A deep copy on the same context (recorded, so gradients flow through it)."""
        return _dispatch.wrap(super().copy())

    def copyto(self, other):
        """Copy into array ``other`` (same shape) or to a new array on Context ``other``."""
        return _dispatch.wrap(super().copyto(other))

    def as_in_context(self, context):
        """This array on ``context``: itself when already there, else a copy."""
        return self if self._ctx == context else self.copyto(context)

    as_in_ctx = as_in_context
    to_device = as_in_context

    # -- printing -----------------------------------------------------------------------
    def __repr__(self):
        text = repr(self._host_copy())
        dtype = self._data.dtype
        if dtype == onp.float32:
            text = _FLOAT32_SUFFIX.sub(")", text)
        elif dtype in (onp.float64, onp.int64) and "dtype=" not in text:
            text = text[:-1] + f", dtype={dtype.name})"
        if self._ctx.device_type != "cpu":
            text = text[:-1] + f", ctx={self._ctx})"
        return text

    def __str__(self):
        return str(self._host_copy())

    def __format__(self, spec):
        if self.ndim == 0:
            return format(self.item(), spec)
        return format(str(self), spec)

    # -- Python protocols ---------------------------------------------------------------
    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __bool__(self):
        if self.size == 1:
            return bool(self._host_copy().reshape(-1)[0])
        if self.size == 0:
            return False
        raise ValueError("The truth value of an ndarray with more than one element is "
                         "ambiguous. Use a.any() or a.all()")

    def __reduce__(self):
        return (from_host, (self._host_copy(), self._ctx))

    __hash__ = None

    # -- indexing -----------------------------------------------------------------------
    def _index_key(self, key):
        if isinstance(key, NDArray):
            data = key.as_in_context(self._ctx)._data
            return data if data.dtype == onp.bool_ else data.astype(onp.int64)
        if isinstance(key, tuple):
            return tuple(self._index_key(k) for k in key)
        if isinstance(key, list) and self._ctx.is_gpu:
            return self._ctx.xp.asarray(key)
        return key

    def __getitem__(self, key):
        index = self._index_key(key)
        try:
            with self._ctx.scope():
                result = self._data[index]
        except IndexError as err:
            raise IndexError(f"index {key!r} is out of bounds for ndarray of shape "
                             f"{self.shape}: {err}") from None
        if not hasattr(result, "ndim"):  # a NumPy scalar from a full integer index
            result = self._ctx.xp.asarray(result)
        elif not self._ctx.is_gpu and result.base is not None:
            result = result.copy()  # MXNet's indexing gives a new array
        out = ndarray(result, self._ctx)
        if tape.tracked(self):
            tape.record(_INDEXING, {"key": index}, [self], [out])
        return out


def as_np(value, ctx=None, dtype=None):
    """``value`` as something an op takes: NDArrays (``mx.np`` or ``mx.nd``) and Symbols as they
    are, anything else (numbers, lists, NumPy arrays) through ``array``."""
    if isinstance(value, NDArray) or _dispatch.is_symbolic([value]):
        return value
    return array(value, dtype=dtype, ctx=ctx)


def from_host(data, ctx=None):
    """An ``ndarray`` holding a copy of NumPy array ``data`` on ``ctx``."""
    ctx = Context(ctx) if ctx is not None else current_context()
    return ndarray(to_device_array(onp.asarray(data), None, ctx), ctx)


def array(object, dtype=None, ctx=None, device=None):  # noqa: A002 (NumPy's argument name)
    """A new ``mx.np.ndarray`` from a list, number, NumPy array or array; float32 unless
    ``dtype`` says otherwise or ``object`` is a NumPy array (whose dtype it keeps).

    Example:
        >>> import numpy as onp
        >>> array([1, 2]).dtype, array(onp.arange(2)).dtype, array(3).shape
        (dtype('float32'), dtype('int64'), ())
    """
    ctx = device if ctx is None else ctx
    if isinstance(object, NDArray):
        ctx = object._ctx if ctx is None else ctx
        dtype = object._data.dtype if dtype is None else dtype
        object = object._host_copy()
    try:
        host = onp.array(object, dtype=creation_dtype(dtype, object))
    except (TypeError, ValueError) as err:
        raise MXNetError(f"np.array: cannot make a numeric array from "
                         f"{type(object).__name__} {object!r:.80}: {err}") from None
    return from_host(host, ctx)
_dispatch._CLASS.append(ndarray)
