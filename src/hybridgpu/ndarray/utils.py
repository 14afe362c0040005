"""Helpers of ``mx.nd``: ``waitall``, DLPack (``from_dlpack``, ``to_dlpack_for_read``,
``to_dlpack_for_write``), ``save``, ``load``, ``load_frombuffer``.

Example:
    >>> import numpy as np
    >>> from_dlpack(np.arange(3.0)).shape
    (3,)
    >>> from_dlpack(to_dlpack_for_read(from_dlpack(np.arange(2.0))))
    <BLANKLINE>
    [0. 1.]
    <NDArray 2 @cpu(0)>
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..base import MXNetError
from ..context import cpu, gpu, num_gpus
from ..serialization import ndarray_file
from .ndarray import NDArray, to_device_array

__all__ = ["waitall", "from_dlpack", "to_dlpack_for_read", "to_dlpack_for_write", "save", "load",
           "load_frombuffer"]

_DLPACK_CUDA = 2


def waitall():
    """Wait for all pending work on every gpu (nothing to wait for on cpu)."""
    if num_gpus() == 0:
        return
    cupy = gpu(0).xp  # CuPy, or the virtual GPU's stand-in

    for device_id in range(num_gpus()):
        with cupy.cuda.Device(device_id):
            cupy.cuda.get_current_stream().synchronize()


class _Capsule:
    """A bare DLPack capsule (``to_dlpack_for_read``'s, MXNet's or PyTorch's
    ``to_dlpack()``) as the ``__dlpack__`` producer NumPy and CuPy take. Its device is read
    from the capsule's DLTensor: a legacy ``dltensor`` capsule points at it directly, a
    versioned one (DLPack 1.x) after its version, manager, deleter and flags."""

    _KINDS = ((b"dltensor", 0), (b"dltensor_versioned", 32))

    def __init__(self, capsule):
        get = ctypes.pythonapi.PyCapsule_GetPointer
        get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        valid = ctypes.pythonapi.PyCapsule_IsValid
        valid.restype, valid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
        for name, offset in self._KINDS:
            if valid(capsule, name):
                tensor = get(capsule, name) + offset
                break
        else:
            raise MXNetError("from_dlpack: the capsule is not an unconsumed DLPack tensor "
                             "(a capsule can be consumed only once)")
        where = ctypes.cast(tensor + ctypes.sizeof(ctypes.c_void_p),
                            ctypes.POINTER(ctypes.c_int32 * 2))
        self.device = tuple(where.contents)
        self.capsule = capsule

    def __dlpack__(self, *args, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return self.device


def to_dlpack_for_read(data):
    """A DLPack capsule sharing ``data``'s memory (MXNet's name; waits for pending writes)."""
    return data.to_dlpack_for_read()


def to_dlpack_for_write(data):
    """A DLPack capsule sharing ``data``'s memory, for a consumer that writes into it."""
    return data.to_dlpack_for_write()


def from_dlpack(dlpack):
    """An NDArray sharing memory with a DLPack producer (an object with ``__dlpack__``, e.g. a
    torch tensor or a NumPy/CuPy array, or a bare DLPack capsule), on cpu or on the producer's
    gpu."""
    if type(dlpack).__name__ == "PyCapsule":
        dlpack = _Capsule(dlpack)
    device = dlpack.__dlpack_device__() if hasattr(dlpack, "__dlpack_device__") else (1, 0)
    if device[0] == _DLPACK_CUDA:
        ctx = gpu(device[1])
        with ctx.scope():
            return NDArray(ctx.xp.from_dlpack(dlpack), ctx)
    return NDArray(_writable(np.from_dlpack(dlpack)), cpu(0))


class _SharedMemory:
    """A NumPy array interface over ``array``'s memory, marked writeable, keeping ``array``
    (and so the DLPack deleter it holds) alive."""

    def __init__(self, array):
        interface = dict(array.__array_interface__)
        interface["data"] = (interface["data"][0], False)
        self.__array_interface__ = interface
        self.array = array


def _writable(array):
    """``array``, writeable: NumPy before 2.1 marks every DLPack import read-only (DLPack had
    no read-only flag), while MXNet's ``from_dlpack`` shares memory both ways."""
    if array.flags.writeable or array.size == 0:
        return array
    return np.asarray(_SharedMemory(array))


# -- nd.save / nd.load: MXNet's .params format (see hybridgpu.serialization.ndarray_file) -------
_SAVE_TYPE_ERROR = "save only accept dict str->NDArray or list of NDArray"


def _save_record(array):
    ctx = array.context
    return ndarray_file.ArrayRecord(array.shape, np.dtype(array.dtype), array.asnumpy,
                                    ctx.device_typeid, ctx.device_id)


def save(fname, data):
    """Save an NDArray, a list/tuple of NDArrays or a dict str -> NDArray to ``fname`` (str or
    ``os.PathLike``) in MXNet's binary format, byte for byte what MXNet 1.9 writes (a 0-d array
    goes in an older record kind, the only one MXNet reads back as 0-d).

    gpu arrays are copied to the host while writing and recorded with their gpu context. The
    file is written to a temporary file and renamed into place, so a failure leaves any previous
    file intact. Unlike MXNet, tuples and ``os.PathLike`` paths are accepted.

    Example:
        >>> import os, tempfile
        >>> from hybridgpu import nd
        >>> path = os.path.join(tempfile.mkdtemp(), "x.params")
        >>> save(path, {"w": nd.array([1, 2])})
        >>> load(path)["w"].asnumpy()
        array([1., 2.], dtype=float32)
    """
    if isinstance(data, NDArray):
        data = [data]
    if isinstance(data, dict):
        names, arrays = list(data.keys()), list(data.values())
        if not all(isinstance(name, str) for name in names):
            raise TypeError(_SAVE_TYPE_ERROR)
    elif isinstance(data, (list, tuple)):
        names, arrays = None, list(data)
    else:
        raise ValueError("data needs to either be a NDArray, dict of str, NDArray pairs or a "
                         "list of NDarrays.")
    if not all(isinstance(array, NDArray) for array in arrays):
        raise TypeError(_SAVE_TYPE_ERROR)
    ndarray_file.save(fname, [_save_record(a) for a in arrays], names)


def _to_ndarrays(records, names):
    """NDArrays from loaded records, placed as MXNet does: a gpu array onto its gpu when that
    gpu exists (MXNet's CUDA builds), everything else (and gpu arrays without it) onto cpu(0)."""
    gpu_count = None
    arrays, host = [], cpu(0)
    for rec in records:
        ctx = host
        if rec.device_type == 2:
            gpu_count = num_gpus() if gpu_count is None else gpu_count
            if rec.device_id < gpu_count:
                ctx = gpu(rec.device_id)
        data = to_device_array(rec.data, None, ctx) if ctx.is_gpu else rec.data
        arrays.append(NDArray(data, ctx))
    return dict(zip(names, arrays)) if names else arrays


def load(fname):
    """Load a file written by ``save`` or by MXNet 1.x: a list of NDArrays, or a dict
    str -> NDArray when the file has names.

    Arrays load onto cpu(0), except gpu arrays when their gpu is present (as in MXNet's CUDA
    builds; MXNet crashes when the gpu is missing, hybridgpu loads them onto cpu(0)). A truncated,
    corrupted, sparse or hostile file raises ``MXNetError`` saying what is wrong and where.

    Example:
        >>> import os, tempfile
        >>> from hybridgpu import nd
        >>> path = os.path.join(tempfile.mkdtemp(), "x.params")
        >>> save(path, [nd.array([[1, 2]]), nd.array([3], dtype="int64")])
        >>> [(a.shape, a.dtype.__name__) for a in load(path)]
        [((1, 2), 'float32'), ((1,), 'int64')]
    """
    return _to_ndarrays(*ndarray_file.load(fname))


def load_frombuffer(buf):
    """``load`` from the bytes of a file (bytes, bytearray or memoryview).

    Example:
        >>> blob = ndarray_file.dumps([np.arange(2.0)], names=["b"])
        >>> load_frombuffer(blob)["b"].asnumpy()
        array([0., 1.])
    """
    return _to_ndarrays(*ndarray_file.loads(buf))
