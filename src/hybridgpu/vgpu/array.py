"""``cupy.ndarray`` played over host memory: a NumPy view into a virtual device allocation.

It refuses what CuPy refuses: ``np.<ufunc>(x)`` and ``np.<function>(x)`` (TypeError: call
``xp.<name>``), implicit conversion to NumPy (``np.asarray(x)``: use ``x.get()``), a NumPy
array mixed into an operator, and (stricter than CuPy, which would run one kernel and one host
read per element) iterating over it. Host reads (``x.get()``, ``float(x)``, ``x.item()``,
boolean-mask indexing) and allocations raise while a stream captures a graph. Operators and
functions on an array of another device than the current one raise ValueError, as CuPy's
kernels do.

Example:
    >>> import numpy as np
    >>> from hybridgpu.vgpu.array import ndarray, to_device
    >>> x = to_device(np.arange(4.0))
    >>> (2 * x + 1).get().tolist(), x.data.ptr % 256, x.device.id
    ([1.0, 3.0, 5.0, 7.0], 0, 0)
    >>> np.asarray(x)
    Traceback (most recent call last):
    TypeError: Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy array explicitly.
"""  # noqa: E501

from __future__ import annotations

import numbers

import numpy as np

from . import devices, memory, streams

__all__ = ["ndarray", "to_device", "wrap", "unwrap", "host_operand", "on_current_device"]


def _host_of(mem, offset, shape, dtype, strides):
    whole = memory.host_view(mem.ptr, mem.size, mem)
    try:
        return np.ndarray(shape, dtype, buffer=whole, offset=offset, strides=strides)
    except (TypeError, ValueError) as err:
        raise ValueError(f"an array of shape {shape} and dtype {np.dtype(dtype)} at byte "
                         f"offset {offset} does not fit in {mem!r}: {err}") from None


class ndarray:  # noqa: N801  (CuPy's name)
    """``cupy.ndarray(shape, dtype=float, memptr=None, strides=None)``: allocates, or views
    the memory at ``memptr`` (``base.data + byte_offset``)."""

    __slots__ = ("_a", "_mem", "__weakref__")
    __array_ufunc__ = None  # np.<ufunc>(x) raises; NumPy scalars hand operators over to x

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
        dtype = np.dtype(dtype)
        if memptr is None:
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            mem, offset = memory.Memory(nbytes), 0
            if order == "F" and strides is None:
                strides = _f_strides(shape, dtype.itemsize)
        else:
            mem, offset = memptr.mem, memptr.offset
        self._a = _host_of(mem, offset, shape, dtype, strides)
        self._mem = mem

    @classmethod
    def _view(cls, host, mem):
        self = object.__new__(cls)
        self._a, self._mem = host, mem
        return self

    # -- attributes ------------------------------------------------------------------
    @property
    def shape(self):
        return self._a.shape

    @shape.setter
    def shape(self, value):  # CuPy, like NumPy, reshapes in place when no copy is needed
        self._a.shape = value

    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: self._a.flags)

    @property
    def data(self):
        """The MemoryPointer of the first element (``x.data.ptr`` is its address)."""
        return memory.MemoryPointer(self._mem, self._address() - self._mem.ptr)

    @property
    def device(self):
        return devices.Device(self._mem.device_id)

    @property
    def T(self):
        return wrap(self._a.T)

    @property
    def mT(self):  # noqa: N802
        return wrap(np.swapaxes(self._a, -1, -2))

    @property
    def real(self):
        return wrap(self._a.real)

    @property
    def imag(self):
        return wrap(self._a.imag)

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "version": 3,
                "data": (self._address(), False),
                "strides": None if self._a.flags.c_contiguous else self.strides}

    def _address(self):
        return self._a.__array_interface__["data"][0]

    # -- what CuPy refuses ---------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use "
                        "`.get()` to construct a NumPy array explicitly.")

    def __array_function__(self, func, types, args, kwargs):
        raise TypeError(f"np.{func.__name__} was called on a (virtual) CuPy array; NumPy "
                        f"functions do not take device arrays: use xp.{func.__name__}")

    def __iter__(self):
        raise TypeError("iterating over a (virtual) CuPy array runs one kernel and one host "
                        "read per element; use xp array operations (or x.get() on purpose)")

    def __len__(self):
        if not self._a.ndim:
            raise TypeError("len() of unsized object")
        return self._a.shape[0]

    # -- host reads ----------------------------------------------------------------------
    def get(self, stream=None, order="C", out=None, blocking=True):
        """A NumPy copy of the data (a device -> host copy: not allowed under capture)."""
        devices.check_not_capturing("a device -> host copy (x.get() / asnumpy)")
        streams.host_work()
        if out is not None:
            out[...] = self._a
            return out
        return np.array(self._a, order=order, copy=True)

    def set(self, arr, stream=None):
        """Copy host array ``arr`` into this array (host -> device)."""
        devices.check_not_capturing("a host -> device copy (x.set())")
        streams.host_work()
        self._a[...] = arr

    def _read(self, what):
        devices.check_not_capturing(f"{what} (a host read of a device value)")
        streams.host_work()
        return self._a

    def __bool__(self):
        return bool(self._read("bool(x)"))

    def __int__(self):
        return int(self._read("int(x)"))

    def __float__(self):
        return float(self._read("float(x)"))

    def __complex__(self):
        return complex(self._read("complex(x)"))

    def __index__(self):
        return self._read("using x as an index").__index__()

    def item(self, *args):
        return self._read("x.item()").item(*args)

    def tolist(self):
        return self._read("x.tolist()").tolist()

    def tobytes(self, order="C"):
        return self._read("x.tobytes()").tobytes(order)

    def __repr__(self):
        return repr(self._read("repr(x)"))

    def __str__(self):
        return str(self._read("str(x)"))

    def __format__(self, spec):
        return format(self._read("formatting x"), spec)

    def __reduce__(self):
        return (to_device, (self.get(),))

    # -- indexing ------------------------------------------------------------------------
    def __getitem__(self, key):
        key = _index(key, "x[key]")
        got = self._a[key]
        if isinstance(got, np.generic):  # CuPy gives a 0-d view (read later), not a copy
            got = self._a[(key if isinstance(key, tuple) else (key,)) + (Ellipsis,)]
        return wrap(got)

    def __setitem__(self, key, value):
        key = _index(key, "x[key] = value")
        if isinstance(value, np.ndarray) and value.ndim:
            devices.check_not_capturing("a host -> device copy (x[key] = numpy array)")
        streams.host_work()
        self._a[key] = unwrap(value, "x[key] = value", allow_host=True)

    def __dlpack_device__(self):
        return (2, self._mem.device_id)  # kDLCUDA

    def __dlpack__(self, stream=None, **kwargs):
        """A DLPack capsule of the host view (read by the stand-in's ``from_dlpack``)."""
        streams.host_work()
        return self._a.__dlpack__()


def _f_strides(shape, itemsize):
    strides, step = [], itemsize
    for n in shape:
        strides.append(step)
        step *= max(n, 1)
    return tuple(strides)


def _index(key, what):
    keys = key if isinstance(key, tuple) else (key,)
    for k in keys:
        if isinstance(k, ndarray) and k.dtype == np.bool_:
            devices.check_not_capturing(f"{what} with a boolean mask (the result size is read "
                                        "on the host)")
    return unwrap(key, what, allow_host=True)


def _check_device(arr, what):
    """Refuse an array of another device than the current one; else order the host work about
    to read or write it after the current stream's queued work (streams.host_work)."""
    streams.host_work()
    current = devices.current_id()
    if arr._mem.device_id != current:
        raise ValueError(f"{what}: Array device must be same as the current device: array "
                         f"device = {arr._mem.device_id} while current = {current}")


def unwrap(value, what="a CuPy function", allow_host=False):
    """The NumPy views of device arrays in ``value`` (recursing into tuples, lists and dicts);
    a NumPy array in it raises TypeError unless ``allow_host``."""
    if isinstance(value, ndarray):
        _check_device(value, what)
        return value._a
    if isinstance(value, np.ndarray):
        if not allow_host:
            raise TypeError(f"{what}: Unsupported type {type(value)} (a host NumPy array; CuPy "
                            "takes host arrays only in xp.asarray/xp.array)")
        return value
    if isinstance(value, tuple):
        return tuple(unwrap(v, what, allow_host) for v in value)
    if isinstance(value, list):
        return [unwrap(v, what, allow_host) for v in value]
    if isinstance(value, dict):
        return {k: unwrap(v, what, allow_host) for k, v in value.items()}
    return value


def host_operand(value):
    """An operator's other operand: device array -> its view, scalars as they are; a NumPy
    array raises TypeError (as CuPy), anything else gives NotImplemented."""
    if isinstance(value, ndarray):
        _check_device(value, "operator")
        return value._a
    if isinstance(value, np.ndarray):
        raise TypeError(f"Unsupported type {type(value)}: a host NumPy array mixed with a "
                        "(virtual) CuPy array; convert it with xp.asarray first")
    if isinstance(value, (numbers.Number, np.generic)):
        return value
    return NotImplemented


def to_device(host, dtype=None):
    """A new device array holding a copy of ``host`` (a NumPy array or anything np.asarray
    takes)."""
    host = np.asarray(host, dtype=dtype)
    out = ndarray(host.shape, host.dtype)
    out._a[...] = host
    return out


def wrap(value):
    """NumPy results as device values: a view into a live allocation stays a view of it,
    a new NumPy array or scalar is copied into a new allocation (tuples/lists recursed)."""
    if isinstance(value, np.ndarray):
        mem = memory.find(value.__array_interface__["data"][0]) if value.size else None
        if mem is not None:
            return ndarray._view(value, mem)
        return to_device(value)
    if isinstance(value, np.generic):
        return to_device(value)
    if isinstance(value, tuple):
        items = [wrap(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, list):
        return [wrap(v) for v in value]
    return value


def _operator(name, in_place=False):
    def method(self, *others):
        converted = [host_operand(o) for o in others]
        if any(c is NotImplemented for c in converted):
            return NotImplemented
        _check_device(self, f"operator {name}")
        result = getattr(self._a, name)(*converted)
        if result is NotImplemented:
            return result
        return self if in_place else wrap(result)

    method.__name__ = name
    return method


def _method(name, syncs=False):
    def method(self, *args, **kwargs):
        if syncs:
            devices.check_not_capturing(f"x.{name}() (it reads values on the host)")
        _check_device(self, f"x.{name}")
        result = getattr(self._a, name)(*unwrap(args, f"x.{name}"),
                                        **unwrap(kwargs, f"x.{name}"))
        return wrap(result)

    method.__name__ = name
    return method




def _copy(self, order="C"):
    """``x.copy()``: a copy on the current device, from any device (CuPy's documented way to
    move an array between devices)."""
    if order not in ("C", "F", "A", "K"):
        raise ValueError(f"x.copy: order must be one of 'C', 'F', 'A', 'K', got {order!r}")
    out = ndarray(self.shape, self.dtype, order="F" if order == "F" else "C")
    streams.host_work()
    out._a[...] = self._a
    return out


def on_current_device(arr):
    """``arr`` itself on the current device, else a copy of it there (what ``cupy.asarray``
    and ``cupy.array`` do with an array of another device)."""
    return arr if arr._mem.device_id == devices.current_id() else _copy(arr)


def _words(text):
    return text.split()


_ARITHMETIC = _words("add sub mul truediv floordiv mod pow matmul and or xor lshift rshift")
for _n in _ARITHMETIC:
    setattr(ndarray, f"__{_n}__", _operator(f"__{_n}__"))
    setattr(ndarray, f"__r{_n}__", _operator(f"__r{_n}__"))
    setattr(ndarray, f"__i{_n}__", _operator(f"__i{_n}__", in_place=True))
for _n in _words("lt le eq ne gt ge neg pos abs invert divmod rdivmod"):
    setattr(ndarray, f"__{_n}__", _operator(f"__{_n}__"))
ndarray.__hash__ = None

# cupy.ndarray's methods (checked against CuPy by tests/test_vgpu_names.py)
_METHODS = _words("all any argmax argmin argpartition argsort astype choose clip conj conjugate "
            "cumprod cumsum diagonal dot fill flatten max mean min partition prod put "
            "ravel repeat reshape round sort squeeze std sum swapaxes take trace transpose "
            "var view ptp")
_SYNCING_METHODS = ("nonzero", "compress")
for _n in _METHODS:
    setattr(ndarray, _n, _method(_n))
ndarray.copy = _copy
for _n in _SYNCING_METHODS:
    setattr(ndarray, _n, _method(_n, syncs=True))
