"""The stand-in ``cupy`` module object (and its ``cupyx``) that ``mx.gpu(i).xp`` returns on
the virtual GPU.

It offers only names CuPy has (tests/test_vgpu_names.py checks each against the real CuPy),
plus ``is_virtual = True`` and ``virtual_cublas_library()``. ``import cupyx`` inside an op
finds the stand-in's ``cupyx`` while the virtual GPU is on (``install_cupyx``); its functions
hand real CuPy arrays on to the real ``cupyx`` when that is installed.

Example:
    >>> xp = build()
    >>> x = xp.arange(6, dtype=xp.float32).reshape(2, 3)
    >>> xp.is_virtual, type(x).__name__, xp.asnumpy(xp.exp(x).sum(axis=1)).shape
    (True, 'ndarray', (2,))
"""

from __future__ import annotations

import sys
import types

import numpy as np

from . import array as array_mod
from . import devices, functions, memory, nccl, streams
from . import special as special_host
from .array import ndarray, wrap

__all__ = ["build", "install_cupyx", "cupyx_modules"]

_NUMPY_NAMES = functions.words(
    "pi e inf nan newaxis euler_gamma dtype finfo iinfo bool_ int8 int16 int32 "
    "int64 uint8 uint16 uint32 uint64 float16 float32 float64 complex64 complex128 "
    "intp uintp byte short intc longlong ubyte ushort uintc ulonglong half single "
    "double csingle cdouble generic number integer signedinteger "
    "unsignedinteger floating complexfloating inexact bool")


def _module(name, doc=""):
    module = types.ModuleType(name, doc)
    return module


def _runtime():
    rt = _module("cupy.cuda.runtime")
    rt.memcpyHostToHost, rt.memcpyHostToDevice, rt.memcpyDeviceToHost = 0, 1, 2
    rt.memcpyDeviceToDevice, rt.memcpyDefault = 3, 4
    rt.streamCaptureStatusNone, rt.streamCaptureStatusActive = 0, 1
    rt.memcpyAsync = streams.memcpy_async
    rt.getDeviceCount = devices.count
    rt.getDevice = devices.current_id

    def set_device(i):
        devices.Device(i).use()

    def mem_get_info():
        used = memory.used_bytes(devices.current_id())
        return devices.TOTAL_MEMORY - used, devices.TOTAL_MEMORY

    def device_synchronize():
        devices.check_no_capture_anywhere("cudaDeviceSynchronize (a host sync)")
        devices.synchronize_device(devices.current_id())

    def runtime_version():
        return 13000

    rt.setDevice, rt.memGetInfo, rt.deviceSynchronize = set_device, mem_get_info, \
        device_synchronize
    rt.runtimeGetVersion = rt.driverGetVersion = runtime_version
    rt.CUDARuntimeError = RuntimeError
    rt.is_hip = False
    return rt


def _cuda():
    cuda = _module("cupy.cuda")
    cuda.Device, cuda.Stream, cuda.Event, cuda.Graph = devices.Device, streams.Stream, \
        streams.Event, streams.Graph
    cuda.Memory, cuda.MemoryPointer, cuda.MemoryPool = memory.Memory, memory.MemoryPointer, \
        memory.MemoryPool
    cuda.get_current_stream = streams.get_current_stream
    cuda.get_device_id = devices.current_id
    cuda.runtime = _runtime()
    cuda.is_available = lambda: True
    cuda.nccl = nccl.build()

    def alloc(size):
        return memory.MemoryPointer(memory.Memory(size), 0)

    cuda.alloc = alloc
    return cuda


def _linalg():
    linalg = _module("cupy.linalg")
    for name in functions.LINALG:
        setattr(linalg, name, functions.device_function(f"cupy.linalg.{name}",
                                                        getattr(np.linalg, name)))
    linalg.LinAlgError = np.linalg.LinAlgError
    return linalg


def _random():
    random = _module("cupy.random")
    random.RandomState = functions.RandomState
    state = [functions.RandomState()]

    def seed(value=None):
        state[0] = functions.RandomState(value)

    def get_random_state():
        return state[0]

    random.seed, random.get_random_state = seed, get_random_state
    for name in functions.words("uniform normal randint permutation rand randn random_sample "
                                "standard_normal choice shuffle"):
        setattr(random, name, (lambda n: lambda *a, **k: getattr(state[0], n)(*a, **k))(name))
    return random


def build():
    """A new stand-in ``cupy`` module over the virtual devices."""
    xp = _module("cupy", "CuPy played by the virtual GPU (hybridgpu.vgpu)")
    xp.is_virtual = True
    xp.ndarray = ndarray
    for name in functions.FUNCTIONS:
        impl = functions.SIGNATURES.get(name) or getattr(np, name, None)
        if impl is not None:
            setattr(xp, name, functions.device_function(f"cupy.{name}", impl,
                                                        syncs=name in functions.SYNCING))
    for name in functions.UFUNCS:
        if hasattr(np, name):
            setattr(xp, name, functions.Ufunc(getattr(np, name), name))
    for name in _NUMPY_NAMES:
        if hasattr(np, name):
            setattr(xp, name, getattr(np, name))
    xp.asarray, xp.array, xp.asnumpy = functions.asarray, functions.array, functions.asnumpy
    xp.asanyarray = functions.asarray
    xp.empty, xp.empty_like = functions.empty, functions.empty_like
    xp.cuda, xp.linalg, xp.random = _cuda(), _linalg(), _random()
    pool = memory.MemoryPool()
    xp.get_default_memory_pool = lambda: pool
    xp.get_default_pinned_memory_pool = lambda: pool
    xp.get_array_module = _get_array_module(xp)
    xp.from_dlpack = _from_dlpack
    from . import cublas, kernels  # the device runtime half

    xp.RawModule, xp.RawKernel = kernels.RawModule, kernels.RawKernel
    xp.virtual_cublas_library = cublas.library
    return xp


def _get_array_module(xp):
    def get_array_module(*args):
        return xp if any(isinstance(a, ndarray) for a in args) else np

    return get_array_module


class _HostSide:
    """A virtual device producer seen as the host memory it is (for ``np.from_dlpack``)."""

    def __init__(self, producer):
        self._producer = producer

    def __dlpack__(self, **kwargs):
        return self._producer.__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)


def _from_dlpack(obj):
    """``cupy.from_dlpack``: shares the memory of a virtual device array (or of a DLPack
    producer wrapping one); other producers raise."""
    if isinstance(obj, ndarray):
        return ndarray._view(obj._a, obj._mem)
    device = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else None
    if device is None or device[0] != 2:
        raise TypeError("cupy.from_dlpack on the virtual GPU takes device (kDLCUDA) producers, "
                        f"got {type(obj).__name__} on DLPack device {device}")
    host = np.from_dlpack(_HostSide(obj))
    if memory.find(host.__array_interface__["data"][0]) is None:
        raise TypeError(f"cupy.from_dlpack: {type(obj).__name__} is not virtual device memory")
    return wrap(host)


# -- cupyx -------------------------------------------------------------------------------------

_SCATTER_ADD_DTYPES = ("int32", "float16", "float32", "float64", "uint32", "uint64")
_real_cupyx: dict = {}


def _real(name):
    """The real cupyx function ``name`` (for real CuPy arrays), imported around the stand-in."""
    if name not in _real_cupyx:
        saved = {k: sys.modules.pop(k) for k in list(sys.modules) if k.split(".")[0] == "cupyx"}
        try:
            import importlib

            path, _, attr = name.rpartition(".")
            _real_cupyx[name] = getattr(importlib.import_module(path), attr)
        finally:
            for k in [k for k in sys.modules if k.split(".")[0] == "cupyx"]:
                del sys.modules[k]
            sys.modules.update(saved)
    return _real_cupyx[name]


def scatter_add(a, slices, value):
    """``cupyx.scatter_add(a, slices, value)``: ``a[slices] += value`` with repeats adding up;
    CuPy's dtypes only."""
    if not isinstance(a, ndarray):
        return _real("cupyx.scatter_add")(a, slices, value)
    if a.dtype.name not in _SCATTER_ADD_DTYPES:
        raise TypeError(f"cupyx.scatter_add has no {a.dtype.name} kernel (it has "
                        f"{', '.join(_SCATTER_ADD_DTYPES)})")
    values = array_mod.unwrap(value, "cupyx.scatter_add")
    streams.host_work()
    values = np.asarray(values).astype(a.dtype, copy=False)
    np.add.at(a._a, array_mod.unwrap(slices, "cupyx.scatter_add", allow_host=True), values)


def _cupyx_edges(name, x, y):
    """cupyx's values at the poles: gamma +inf at negative integers and -inf at -inf,
    gammaln -inf at -inf; float16/float32 in float32, others in float64."""
    if name == "gamma":
        y = np.where((x < 0) & (np.floor(x) == x), np.inf, y)
    if name in ("gamma", "gammaln"):
        y = np.where(x == -np.inf, -np.inf, y)
    return y.astype(np.float32 if x.dtype in (np.float16, np.float32) else np.float64)


def _special(name):
    def special_function(x):
        if not isinstance(x, ndarray):
            return _real(f"cupyx.scipy.special.{name}")(x)
        host = special_host.host_function(name)
        streams.host_work()
        with np.errstate(all="ignore"):
            return wrap(_cupyx_edges(name, x._a, np.asarray(host(x._a))))

    special_function.__name__ = name
    return special_function


def cupyx_modules():
    """``{'cupyx': ..., 'cupyx.scipy': ..., 'cupyx.scipy.special': ...}`` of the stand-in."""
    cupyx, scipy_, special = (_module(n) for n in ("cupyx", "cupyx.scipy",
                                                   "cupyx.scipy.special"))
    cupyx.scatter_add, cupyx.scipy, scipy_.special = scatter_add, scipy_, special
    cupyx.is_virtual = True
    for name in ("erf", "erfc", "erfinv", "gamma", "gammaln", "digamma"):
        setattr(special, name, _special(name))
    return {"cupyx": cupyx, "cupyx.scipy": scipy_, "cupyx.scipy.special": special}


def install_cupyx():
    """Make ``import cupyx`` find the stand-in's cupyx (the virtual GPU is on)."""
    if not getattr(sys.modules.get("cupyx"), "is_virtual", False):
        sys.modules.update(cupyx_modules())
