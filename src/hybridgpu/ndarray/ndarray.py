"""``NDArray``: one NumPy (cpu) or CuPy (gpu) array plus its Context, with MXNet's behaviour.

This module is the array itself: data, context, host values, indexing, copies and the autograd
attributes, which call down into ``hybridgpu.tape``. The dispatch point ``imperative.invoke``
wraps op results in this class, so the few methods here that run an op (``astype``, ``T``,
``reshape`` and ``copy`` of recorded arrays) import it when called; the operators (``a + b``)
are attached by ``operators.py``.

Example:
    >>> import hybridgpu as mx
    >>> mx.nd.ones((2, 3)) + 1
    <BLANKLINE>
    [[2. 2. 2.]
     [2. 2. 2.]]
    <NDArray 2x3 @cpu(0)>
"""

from __future__ import annotations

import math

import numpy as np

from .. import numpy_interop, ops, tape
from ..base import STYPE_TO_FLAG, MXNetError, ReshapeSizeError
from ..context import Context, current_context
from ..ops.reshape_codes import target_shape

__all__ = ["NDArray", "to_device_array", "check_not_recorded"]

#: Python's ``slice`` under MXNet's name for it in this module (its tests import it)
py_slice = slice
#: MXNet's names for the storage-type flags (``base.STYPE_TO_FLAG``) and back
_STORAGE_TYPE_STR_TO_ID = dict(STYPE_TO_FLAG)
_STORAGE_TYPE_ID_TO_STR = {flag: name for name, flag in STYPE_TO_FLAG.items()}


def to_device_array(data, src_ctx, dst_ctx, copy=True):
    """Move a numpy/cupy array from ``src_ctx`` to ``dst_ctx`` (a copy unless ``copy=False``
    and nothing needs to move)."""
    if dst_ctx.is_gpu:
        xp = dst_ctx.xp
        with dst_ctx.scope():
            if src_ctx is not None and src_ctx == dst_ctx and not copy:
                return data
            return xp.array(data, copy=True)
    if src_ctx is not None and src_ctx.is_gpu:
        return data.get()
    return np.array(data, copy=True) if copy else np.asarray(data)


class NDArray:
    """An n-dimensional array on a device. Create one with ``nd.array``, ``nd.zeros``, ...

    Example:
        >>> import hybridgpu as mx
        >>> x = mx.nd.array([[1, 2], [3, 4]])
        >>> x.shape, x.dtype, x.context, x.T.asnumpy().tolist()
        ((2, 2), <class 'numpy.float32'>, cpu(0), [[1.0, 3.0], [2.0, 4.0]])
    """

    __slots__ = ("_data", "_ctx", "_ag", "__weakref__")
    __array_priority__ = 1000.0

    def __init__(self, data, ctx=None):
        self._data = data
        self._ctx = ctx if ctx is not None else current_context()
        self._ag = None  # autograd: None, or an AGInfo (variable or recorded output)

    # -- attributes ---------------------------------------------------------------------
    @property
    def shape(self):
        """The shape, a tuple of ints."""
        return tuple(self._data.shape)

    @property
    def dtype(self):
        """The element type as a NumPy type (``numpy.float32``), as MXNet returns it."""
        return self._data.dtype.type

    @property
    def size(self):
        """The number of elements."""
        return int(self._data.size)

    @property
    def ndim(self):
        """The number of dimensions."""
        return self._data.ndim

    @property
    def context(self):
        """The Context the data lives on."""
        return self._ctx

    ctx = context

    @property
    def stype(self):
        """The storage type; always ``'default'`` (dense) in hybridgpu."""
        return "default"

    @property
    def T(self):
        """The transpose (arrays of fewer than 2 dims are returned as they are)."""
        from .imperative import invoke

        if self.ndim < 2:
            return self
        return invoke(ops.get("transpose"), [self], {"axes": ()})

    @property
    def handle(self):
        """The underlying numpy or cupy array (hybridgpu's stand-in for MXNet's C handle)."""
        return self._data

    # -- host values --------------------------------------------------------------------
    def asnumpy(self):
        """A NumPy copy of the data (synchronizes a gpu array). One element of shape ``(1,)``
        converts with ``float()`` as under NumPy 1.x (``numpy_interop.OneElementArray``)."""
        return numpy_interop.host_array(self._host_copy())

    def _host_copy(self):
        if self._ctx.is_gpu:
            return self._data.get()
        return np.array(self._data, copy=True)

    def asscalar(self):
        """The value of a one-element array as a NumPy scalar; ValueError otherwise."""
        if self.shape != (1,) and self.shape != ():
            raise ValueError(f"The current array is not a scalar: shape {self.shape}")
        return self.asnumpy().reshape(())[()]

    def item(self):
        """The value of a one-element array as a Python number."""
        if self.size != 1:
            raise ValueError(f"item() needs an array of one element, got shape {self.shape}")
        return self.asnumpy().reshape(-1)[0].item()

    def wait_to_read(self):
        """Block until pending gpu work on this array is done."""
        if self._ctx.is_gpu:
            with self._ctx.scope():
                self._ctx.xp.cuda.get_current_stream().synchronize()

    def wait_to_write(self):
        """Same as ``wait_to_read`` here (hybridgpu has no write dependencies)."""
        self.wait_to_read()

    # -- autograd -----------------------------------------------------------------------
    def attach_grad(self, grad_req="write", stype=None):
        """Track this array in ``autograd.record()``; its gradient appears in ``.grad``."""
        if stype not in (None, "default"):
            raise MXNetError(f"attach_grad: sparse gradient storage {stype!r} is not supported")
        tape.mark_variables([self], [NDArray(self._ctx.xp.zeros_like(self._data), self._ctx)],
                            grad_req)

    @property
    def grad(self):
        """The gradient buffer of a tracked array (None when not tracked)."""
        return None if self._ag is None else self._ag.grad

    @property
    def _fresh_grad(self):
        """Whether a backward wrote this variable's gradient since the Trainer last used it
        (MXNet's name; user code sets it when writing gradients by hand)."""
        return bool(self._ag is not None and self._ag.fresh)

    @_fresh_grad.setter
    def _fresh_grad(self, value):
        if self._ag is None:
            raise MXNetError("_fresh_grad: this array is not tracked; call attach_grad() first")
        self._ag.fresh = bool(value)

    def detach(self):
        """The same data, not tracked: gradients stop here."""
        return NDArray(self._data, self._ctx)

    def backward(self, out_grad=None, retain_graph=False, train_mode=True):
        """``autograd.backward(self, out_grad)``: gradients into every tracked variable."""
        from .. import ndarray as nd  # the package: the ops the tape computes gradients with

        tape.backward([self], [out_grad], nd, retain_graph=retain_graph)

    # -- copies and conversions ---------------------------------------------------------
    def astype(self, dtype, copy=True):
        """A copy converted to ``dtype`` (the array itself if it already has it and
        ``copy=False``)."""
        from .imperative import invoke

        if not copy and np.dtype(dtype) == self._data.dtype:
            return self
        return invoke(ops.get("cast"), [self], {"dtype": np.dtype(dtype).name})

    def copy(self):
        """A deep copy on the same context."""
        if tape.tracked(self):
            from .imperative import invoke

            return invoke(ops.get("_copy"), [self], {})
        return NDArray(to_device_array(self._data, self._ctx, self._ctx), self._ctx)

    def copyto(self, other):
        """Copy into NDArray ``other`` (same shape) or to a new array on Context ``other``."""
        if isinstance(other, Context):
            out = NDArray(to_device_array(self._data, self._ctx, other), Context(other))
            tape.record(_DEVICE_COPY, {}, [self], [out])
            return out
        if isinstance(other, NDArray):
            if other is self:
                return self
            if other.shape != self.shape:
                raise MXNetError(f"copyto: shape mismatch, source {self.shape} vs "
                                 f"destination {other.shape}")
            other._data[...] = to_device_array(self._data, self._ctx, other._ctx, copy=False)
            return other
        raise TypeError(f"copyto does not support type {type(other).__name__}")

    def as_in_context(self, context):
        """This array on ``context``: itself when already there, else a copy."""
        if self._ctx == context:
            return self
        return self.copyto(context)

    def reshape(self, *shape, **kwargs):
        """A view with a new shape; MXNet's codes 0, -1, -2, -3, -4 and ``reverse=`` work.

        Example:
            >>> import hybridgpu as mx
            >>> mx.nd.zeros((2, 3, 4)).reshape(0, -1).shape
            (2, 12)
        """
        reverse = kwargs.pop("reverse", False)
        if "shape" in kwargs:
            shape = kwargs.pop("shape")
        elif len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        if kwargs:
            raise TypeError(f"reshape got unexpected keyword arguments {sorted(kwargs)}")
        try:
            new_shape = target_shape(self.shape, tuple(shape), reverse)
        except MXNetError as err:
            if all(isinstance(d, int) and d > 0 for d in shape) and \
                    math.prod(shape) != self.size:  # where MXNet raises ValueError
                raise ReshapeSizeError(str(err)) from None
            raise
        if tape.tracked(self):  # recorded as the Reshape op, so gradients flow through it
            from .imperative import invoke

            op = ops.get("Reshape")
            return invoke(op, [self], op.parse_attrs({"shape": new_shape}))
        return NDArray(self._data.reshape(new_shape), self._ctx)

    def reshape_like(self, other=None, rhs=None, **kwargs):
        """A view with the shape of ``other`` (or ``rhs=``, the op's argument name, as MXNet's
        fluent method takes it); with MXNet's ``lhs_begin``/``lhs_end``/``rhs_begin``/
        ``rhs_end`` (GluonNLP's BERT), the ``reshape_like`` op over those axes."""
        if (other is None) == (rhs is None):
            raise TypeError("reshape_like takes the array whose shape to use once: "
                            "reshape_like(other) or reshape_like(rhs=other)")
        other = rhs if other is None else other
        if not kwargs:
            return self.reshape(other.shape)
        from .imperative import invoke

        op = ops.get("reshape_like")
        return invoke(op, [self, other], op.parse_attrs(kwargs))

    def as_nd_ndarray(self):
        """This array (hybridgpu has one NDArray type)."""
        return self

    def tostype(self, stype):
        """Only ``'default'`` storage exists in hybridgpu."""
        if stype != "default":
            raise MXNetError(f"sparse storage type {stype!r} is not supported by hybridgpu")
        return self

    # -- Python protocols ---------------------------------------------------------------
    def __repr__(self):
        shape_info = "x".join(str(d) for d in self.shape)
        return f"\n{self.asnumpy()}\n<NDArray {shape_info} @{self._ctx}>"

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d NDArray")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __bool__(self):
        size = self.size
        if size == 0:
            return False
        if size == 1:
            return bool(self.asnumpy().reshape(-1)[0])
        raise ValueError("The truth value of an NDArray with multiple elements is ambiguous.")

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if not np.issubdtype(self._data.dtype, np.integer):
            raise TypeError("only integer NDArrays of one element can be used as an index")
        return int(self.item())

    def __array__(self, dtype=None, copy=None):
        out = self._host_copy()
        return out if dtype is None else out.astype(dtype, copy=False)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """NumPy ufuncs: ``np.float32(2) * x`` is ``x.__rmul__``; with a NumPy array,
        TypeError as MXNet; others run on a NumPy copy (``hybridgpu.numpy_interop``)."""
        return numpy_interop.ndarray_ufunc(NDArray, ufunc, method, inputs, kwargs)

    def __dlpack__(self, *args, **kwargs):
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def to_dlpack_for_read(self):
        """A DLPack capsule of the data (shared memory; NumPy consumers see it read-only)."""
        self.wait_to_read()
        return self._data.__dlpack__()

    def to_dlpack_for_write(self):
        """A DLPack 1.x capsule of the data (shared memory) that consumers may write into."""
        self.wait_to_read()
        try:
            return self._data.__dlpack__(max_version=(1, 0))
        except TypeError:  # an array module without versioned DLPack
            return self._data.__dlpack__()

    def __reduce__(self):
        return (_rebuild, (self.asnumpy(), self._ctx))

    __hash__ = object.__hash__

    # -- indexing -----------------------------------------------------------------------
    def _index_key(self, key):
        if isinstance(key, NDArray):
            return key.as_in_context(self._ctx)._data.astype(np.int64)
        if isinstance(key, tuple):
            return tuple(self._index_key(k) for k in key)
        if isinstance(key, list):
            return self._ctx.xp.asarray(key, dtype=np.int64) if self._ctx.is_gpu else key
        return key

    def __getitem__(self, key):
        try:
            with self._ctx.scope():
                result = self._data[self._index_key(key)]
        except IndexError as err:
            raise IndexError(f"index {key!r} is out of bounds for NDArray of shape "
                             f"{self.shape}: {err}") from None
        if result.ndim == 0:
            result = result.reshape(1)
        out = NDArray(result, self._ctx)
        if tape.tracked(self):
            tape.record(_INDEXING, {"key": self._index_key(key)}, [self], [out])
        return out

    def __setitem__(self, key, value):
        check_not_recorded(self, "x[...] = value")
        if isinstance(value, NDArray):
            value = to_device_array(value._data, value._ctx, self._ctx, copy=False)
        elif isinstance(value, np.ndarray) and self._ctx.is_gpu:
            value = to_device_array(value, None, self._ctx)
        if getattr(value, "size", 0) == 1 and getattr(value, "ndim", 0) > 0:
            value = value.reshape(())  # one element into one slot, as MXNet (d2lzh's corr2d)
        try:
            with self._ctx.scope():  # the array's device, whichever is current
                self._data[self._index_key(key)] = value
        except (IndexError, ValueError) as err:
            raise MXNetError(f"cannot assign to NDArray of shape {self.shape} at {key!r}: "
                             f"{err}") from None


def check_not_recorded(array, what):
    """In-place writes would silently change values a recorded gradient needs."""
    if tape.tracked(array):
        raise MXNetError(f"Inplace operations ({what}) are not supported when recording with "
                         "autograd: write y = x + 1 instead of x += 1")


class _Indexing:
    """Tape entry of ``x[key]``: the gradient scatters into zeros of x's shape (indices that
    repeat accumulate)."""

    name = "__getitem__"

    @staticmethod
    def grad(F, ins, outs, gouts, key):
        (x,), g = ins, gouts[0]
        xp = x._ctx.xp
        out = xp.zeros_like(x._data)
        data = g._data.reshape(out[key].shape) if hasattr(out[key], "shape") else g._data
        if xp is np:
            np.add.at(out, key, data)
        else:
            import cupyx

            cupyx.scatter_add(out, key, data)
        return [NDArray(out, x._ctx)]


class _DeviceCopy:
    """Tape entry of ``x.copyto(ctx)``: the gradient goes back to x's context."""

    name = "copyto"

    @staticmethod
    def grad(F, ins, outs, gouts):
        return [gouts[0].as_in_context(ins[0]._ctx)]


_INDEXING, _DEVICE_COPY = _Indexing(), _DeviceCopy()


def _rebuild(array, ctx):
    return NDArray(to_device_array(array, None, ctx), ctx)


