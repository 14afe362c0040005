"""Summing one value per device across the devices of this process: NCCL on GPUs, a copying
sum otherwise. The Trainer's gradient sum and the KVStore's ``_merge`` both come here.

When every value lies on its own GPU (contiguous, of a dtype NCCL reduces), the sum is an NCCL
all-reduce (``cupy.cuda.nccl``; on the virtual GPU its stand-in ``xp.cuda.nccl``): one
communicator per set of devices, made once with ``NcclCommunicator.initAll`` and kept, and one
``allReduce`` (sum) per value on each device's current stream, the devices' calls grouped
(``groupStart``/``groupEnd``). Without NCCL (the library is not installed, its communicator
could not be made, or ``HYBRIDGPU_NCCL=0``) the values are copied to the first device, added
there and copied back, and a warning says so once. Values on cpu, or several on one device,
always take the copying sum.

Example (cpu: the copying sum):
    >>> import hybridgpu as mx
    >>> a, b = mx.nd.ones(2, ctx=mx.cpu(0)), mx.nd.ones(2, ctx=mx.cpu(1)) * 2
    >>> sum_into_every([a, b]); b.asnumpy().tolist()
    [3.0, 3.0]
    >>> summed([a, b], mx.cpu(0)).asnumpy().tolist()
    [6.0, 6.0]
"""

from __future__ import annotations

import importlib
import os
import threading
import warnings

import numpy as np

from ..ndarray import NDArray
from ..ndarray.ndarray import to_device_array

__all__ = ["sum_into_every", "sum_into_every_of", "summed", "nccl_all_reduce",
           "nccl_all_reduce_many", "nccl_module", "communicators", "NcclUnavailableError"]

_ENV = "HYBRIDGPU_NCCL"
_DTYPE_NAMES = {np.dtype(np.int8): "NCCL_INT8", np.dtype(np.uint8): "NCCL_UINT8",
                np.dtype(np.int32): "NCCL_INT32", np.dtype(np.uint32): "NCCL_UINT32",
                np.dtype(np.int64): "NCCL_INT64", np.dtype(np.uint64): "NCCL_UINT64",
                np.dtype(np.float16): "NCCL_FLOAT16", np.dtype(np.float32): "NCCL_FLOAT32",
                np.dtype(np.float64): "NCCL_FLOAT64"}
_lock = threading.Lock()
_communicators: dict = {}  # (id(xp), device ids) -> [NcclCommunicator, one per device]
_warned = [False]


class NcclUnavailableError(RuntimeError):
    """NCCL cannot serve this reduction (the reason is the message)."""


def nccl_module(xp):
    """The ``cupy.cuda.nccl`` of array module ``xp`` (the stand-in on the virtual GPU), or
    ``NcclUnavailableError`` saying why not."""
    if os.environ.get(_ENV, "1") == "0":
        raise NcclUnavailableError(f"{_ENV}=0 is set")
    if getattr(xp, "is_virtual", False):
        return xp.cuda.nccl
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CuPy's own warning when libnccl does not load
        try:
            module = importlib.import_module("cupy.cuda.nccl")
        except ImportError as err:
            raise NcclUnavailableError(f"cupy.cuda.nccl does not import ({err})") from None
    if not getattr(module, "available", False):
        raise NcclUnavailableError("CuPy found no NCCL library (pip install nvidia-nccl-cu13)")
    return module


def communicators(xp, device_ids):
    """The NCCL communicators of ``device_ids`` (one per device, rank i on device_ids[i]),
    made once with ``initAll`` and kept for the process."""
    key = (id(xp), tuple(device_ids))
    with _lock:
        comms = _communicators.get(key)
        if comms is None:
            nccl = nccl_module(xp)
            try:
                comms = nccl.NcclCommunicator.initAll(list(device_ids))
            except Exception as err:  # noqa: BLE001  (any failure: fall back, said once)
                comms = NcclUnavailableError(f"NcclCommunicator.initAll({list(device_ids)}) "
                                             f"failed: {type(err).__name__}: {err}")
            _communicators[key] = comms  # a failure too: it is not tried again every step
    if isinstance(comms, NcclUnavailableError):
        raise NcclUnavailableError(str(comms))
    return comms


def nccl_all_reduce(sends, recvs=None):
    """Sum device arrays ``sends`` (one per GPU, NDArrays) with NCCL into ``recvs`` (NDArrays
    of the same devices; ``sends`` themselves when None): each receives the total.
    ``NcclUnavailableError`` when NCCL cannot do it (nothing is written then)."""
    nccl_all_reduce_many([(sends, recvs)])


def nccl_all_reduce_many(pairs):
    """``nccl_all_reduce`` of every ``(sends, recvs)`` in ``pairs`` (recvs None: in place),
    all posted in one NCCL group, so NCCL launches them together."""
    for sends, _ in pairs:
        _check_nccl_able(sends)
    xp = pairs[0][0][0].context.xp
    nccl = nccl_module(xp)
    posts = [(communicators(xp, [a.context.device_id for a in sends]), sends,
              sends if recvs is None else recvs) for sends, recvs in pairs]
    nccl.groupStart()
    try:
        for comms, sends, recvs in posts:
            datatype = getattr(nccl, _DTYPE_NAMES[np.dtype(sends[0].dtype)])
            for comm, send, recv in zip(comms, sends, recvs):
                with send.context.scope():
                    stream = xp.cuda.get_current_stream()
                    comm.allReduce(send._data.data.ptr, recv._data.data.ptr, send.size,
                                   datatype, nccl.NCCL_SUM, stream.ptr)
    finally:
        nccl.groupEnd()


def _check_nccl_able(arrays):
    """``NcclUnavailableError`` unless NCCL can reduce ``arrays`` (``_nccl_able``)."""
    why = _why_not_nccl(arrays)
    if why:
        raise NcclUnavailableError(why)


def _why_not_nccl(arrays):
    """Why NCCL cannot reduce ``arrays`` (each a contiguous array of its own GPU, all of one
    shape and an NCCL dtype), or "" when it can."""
    ids = [a.context.device_id if a.context.is_gpu else None for a in arrays]
    if None in ids or len(set(ids)) != len(ids):
        return "the values are not each on its own GPU"
    if len({(a.shape, np.dtype(a.dtype)) for a in arrays}) != 1:
        return "the values differ in shape or dtype"
    if np.dtype(arrays[0].dtype) not in _DTYPE_NAMES:
        return f"NCCL does not reduce dtype {np.dtype(arrays[0].dtype)}"
    if not all(a._data.flags.c_contiguous for a in arrays):
        return "a value is not contiguous"
    return ""


def _warn_once(reason):
    if not _warned[0]:
        _warned[0] = True
        warnings.warn(f"hybridgpu: summing values of several GPUs without NCCL ({reason}); "
                      "they are copied to one device, added and copied back, which is slower",
                      RuntimeWarning, stacklevel=4)


def _try_nccl(pairs):
    """Run the NCCL all-reduces of ``pairs`` (each NCCL-able) in one group; False (and the
    warning, once) when NCCL is unavailable and the copying sum must run."""
    try:
        nccl_all_reduce_many(pairs)
    except NcclUnavailableError as why:
        _warn_once(str(why))
        return False
    return True


def sum_into_every(arrays):
    """Write the sum of ``arrays`` (NDArrays, one per context) into each of them."""
    sum_into_every_of([arrays])


def sum_into_every_of(lists):
    """``sum_into_every`` of each list of ``lists`` (a Trainer step: one list per Parameter);
    the NCCL-able ones in one NCCL group."""
    lists = [arrays for arrays in lists if len(arrays) > 1]
    able = [arrays for arrays in lists if not _why_not_nccl(arrays)]
    if able and _try_nccl([(arrays, None) for arrays in able]):
        lists = [arrays for arrays in lists if _why_not_nccl(arrays)]
    for arrays in lists:
        total = _copying_sum(arrays, arrays[0].context)
        for array in arrays:
            with array.context.scope():
                array._data[...] = to_device_array(total._data, total.context, array.context,
                                                   copy=False)


def summed(arrays, ctx):
    """A new NDArray on ``ctx`` holding the sum of ``arrays`` (which are left as they are)."""
    if len(arrays) > 1 and not _why_not_nccl(arrays):
        recvs = [_empty_like(a) for a in arrays]
        if _try_nccl([(arrays, recvs)]):
            on_ctx = [r for r in recvs if r.context == ctx]
            return on_ctx[0] if on_ctx else recvs[0].as_in_context(ctx)
    return _copying_sum(arrays, ctx)


def _empty_like(array):
    with array.context.scope():
        return NDArray(array.context.xp.empty_like(array._data), array.context)


def _copying_sum(arrays, ctx):
    """The sum of ``arrays``, each copied to ``ctx`` and added there (a new array)."""
    total = arrays[0].as_in_context(ctx).copy()
    for array in arrays[1:]:
        total += array.as_in_context(ctx)
    return total
