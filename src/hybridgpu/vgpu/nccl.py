"""``cupy.cuda.nccl`` played over the virtual devices' host memory (``xp.cuda.nccl``).

The communicators of one process come from ``NcclCommunicator.initAll(devices)``, one per
device (rank ``i`` drives ``devices[i]``); a collective reads and writes the buffers' host
memory. It fails loudly where real NCCL would fail or hang:

- with more than one rank, a collective outside ``groupStart()``/``groupEnd()`` raises
  ``NcclError`` (one thread driving several ranks deadlocks in real NCCL without a group);
- at ``groupEnd()`` every rank of a communicator set must have posted the same collectives
  (same count, datatype and op, in the same order), else ``NcclError`` (a real hang);
- a buffer must lie inside one live allocation on the communicator's device, and the stream
  must be a live stream of that device (``MemoryFaultError``/``ValueError``/``NcclError``
  otherwise);
- a collective on a capturing stream raises ``CaptureError`` (not emulated: real NCCL records
  into the graph).

Only names the real ``cupy.cuda.nccl`` has are offered (tests/test_vgpu_names.py).

Example:
    >>> import numpy as np
    >>> from hybridgpu import vgpu
    >>> xp = vgpu.module(2)
    >>> nccl = xp.cuda.nccl
    >>> comms = nccl.NcclCommunicator.initAll([0, 1])
    >>> parts = []
    >>> for dev in (0, 1):
    ...     with xp.cuda.Device(dev):
    ...         parts.append(xp.asarray(np.arange(3, dtype=np.float32) + 10 * dev))
    >>> nccl.groupStart()
    >>> for comm, x in zip(comms, parts):
    ...     comm.allReduce(x.data.ptr, x.data.ptr, x.size, nccl.NCCL_FLOAT32, nccl.NCCL_SUM,
    ...                    xp.cuda.get_current_stream().ptr)
    >>> nccl.groupEnd()
    >>> with xp.cuda.Device(1):
    ...     xp.asnumpy(parts[1]).tolist()
    [10.0, 12.0, 14.0]
"""

from __future__ import annotations

import itertools
import threading
import types

import numpy as np

from . import devices as device_state
from . import memory, streams
from .errors import CaptureError, MemoryFaultError

__all__ = ["build", "NcclCommunicator", "NcclError", "groupStart", "groupEnd"]

#: NCCL's datatype codes (as cupy.cuda.nccl has them) and the NumPy dtype of each.
DATATYPES = {"NCCL_INT8": 0, "NCCL_CHAR": 0, "NCCL_UINT8": 1, "NCCL_INT32": 2, "NCCL_INT": 2,
             "NCCL_UINT32": 3, "NCCL_INT64": 4, "NCCL_UINT64": 5, "NCCL_FLOAT16": 6,
             "NCCL_HALF": 6, "NCCL_FLOAT32": 7, "NCCL_FLOAT": 7, "NCCL_FLOAT64": 8,
             "NCCL_DOUBLE": 8, "NCCL_BFLOAT16": 9}
_DTYPES = {0: np.int8, 1: np.uint8, 2: np.int32, 3: np.uint32, 4: np.int64, 5: np.uint64,
           6: np.float16, 7: np.float32, 8: np.float64}
#: NCCL's reduction codes and how each combines the ranks' values.
OPS = {"NCCL_SUM": 0, "NCCL_PROD": 1, "NCCL_MAX": 2, "NCCL_MIN": 3, "NCCL_AVG": 4}
_REDUCERS = {0: np.add.reduce, 1: np.multiply.reduce, 2: np.maximum.reduce,
             3: np.minimum.reduce}
_VERSION = 23203  # the NCCL of the nvidia-nccl-cu13 wheel this stand-in was checked against

_RESULT_NAMES = {3: "ncclInternalError", 4: "ncclInvalidArgument", 5: "ncclInvalidUsage"}
_cliques = itertools.count()
_local = threading.local()


class NcclError(RuntimeError):
    """``cupy.cuda.nccl.NcclError``: an NCCL call failed (``status``: NCCL's result code)."""

    def __init__(self, status, detail=""):
        self.status = status
        name = _RESULT_NAMES.get(status, f"ncclResult {status}")
        super().__init__(f"{name}: {detail}" if detail else name)


def _pending():
    """This thread's open group: None, or ``[depth, [posted calls]]``."""
    return getattr(_local, "group", None)


def groupStart():  # noqa: N802  (NCCL's name)
    """Start a group of NCCL calls (nested groups count; the outermost ``groupEnd`` runs
    them)."""
    group = _pending()
    if group is None:
        _local.group = [1, []]
    else:
        group[0] += 1


def groupEnd():  # noqa: N802
    """End a group: at the outermost end, run every collective posted in it."""
    group = _pending()
    if group is None:
        raise NcclError(5, "groupEnd() without groupStart()")
    group[0] -= 1
    if group[0] == 0:
        _local.group = None
        _run_group(group[1])


def get_version():
    """The NCCL version number (major * 10000 + minor * 100 + patch)."""
    return _VERSION


def get_build_version():
    """The NCCL version CuPy was built against (the same here)."""
    return _VERSION


class NcclCommunicator:
    """One rank of a communicator set made by ``initAll`` (rank ``i`` drives device
    ``devices[i]``). Creating one directly (the multi-process ``ncclCommInitRank``) is not
    emulated."""

    def __init__(self, ndev, commId, rank, config=None):  # noqa: N803  (CuPy's names)
        raise NcclError(5, "the virtual GPU's NCCL has no multi-process communicators; use "
                           "NcclCommunicator.initAll(devices) in one process")

    @classmethod
    def _rank(cls, clique, rank, device_id, size):
        self = object.__new__(cls)
        self._clique, self._rank_id, self._device_id, self._size = clique, rank, device_id, size
        self._destroyed = False
        return self

    @staticmethod
    def initAll(devices):  # noqa: N802
        """One communicator per device of ``devices`` (a count: devices 0..n-1, or a list of
        distinct device ids), all in one set."""
        ids = list(range(devices)) if isinstance(devices, int) else list(devices)
        if not ids:
            raise NcclError(4, "initAll needs at least one device")
        if len(set(ids)) != len(ids):
            raise NcclError(4, f"initAll: a device may appear once in a set, got {ids}")
        for device_id in ids:
            device_state.validate(device_id)
        clique = next(_cliques)
        return [NcclCommunicator._rank(clique, r, d, len(ids)) for r, d in enumerate(ids)]

    def device_id(self):
        """The device this rank drives."""
        return self._device_id

    def rank_id(self):
        """This rank's index in its set."""
        return self._rank_id

    def size(self):
        """The number of ranks in the set."""
        return self._size

    def destroy(self):
        """Free the communicator; later calls on it raise."""
        self._destroyed = True

    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):  # noqa: N802
        """Reduce ``count`` elements of every rank's ``sendbuf`` with ``op`` into every
        rank's ``recvbuf`` (pointers; in place when equal), on ``stream`` (a handle)."""
        if self._destroyed:
            raise NcclError(5, f"allReduce on destroyed communicator (rank {self._rank_id})")
        if datatype not in _DTYPES or op not in _REDUCERS and op != OPS["NCCL_AVG"]:
            raise NcclError(4, f"allReduce: datatype {datatype} or op {op} is not supported "
                               "by the virtual GPU")
        call = _Call(self, int(sendbuf), int(recvbuf), int(count), datatype, op, int(stream))
        group = _pending()
        if group is not None:
            group[1].append(call)
        elif self._size > 1:
            raise NcclError(5, f"allReduce on rank {self._rank_id} of {self._size} outside "
                               "groupStart()/groupEnd(): one thread driving several ranks "
                               "deadlocks in NCCL; wrap the ranks' calls in a group")
        else:
            _run_group([call])

    def __repr__(self):
        return f"<virtual NcclCommunicator rank {self._rank_id}/{self._size} on device " \
               f"{self._device_id}>"


class _Call:
    """One rank's posted allReduce, with its buffers checked against its device."""

    def __init__(self, comm, sendbuf, recvbuf, count, datatype, op, stream):
        self.comm, self.count, self.datatype, self.op = comm, count, datatype, op
        self.stream = streams.stream_from_ptr(stream)
        if self.stream.is_capturing():
            raise CaptureError(f"allReduce on capturing {self.stream!r}: the virtual GPU does "
                               "not capture NCCL collectives (a real GPU records them)")
        if self.stream.ptr != 0 and self.stream.device_id != comm._device_id:
            raise NcclError(4, f"allReduce of rank {comm._rank_id} on {self.stream!r} of device "
                               f"{self.stream.device_id}, but the communicator drives device "
                               f"{comm._device_id}")
        nbytes = count * np.dtype(_DTYPES[datatype]).itemsize
        self.send = self._view(sendbuf, nbytes, "sendbuf")
        self.recv = self._view(recvbuf, nbytes, "recvbuf")

    def _view(self, ptr, nbytes, what):
        mem = memory.find(ptr)
        where = f"allReduce {what} of rank {self.comm._rank_id}"
        if mem is None or ptr + nbytes > mem.ptr + mem.size:
            raise MemoryFaultError(f"{where}: [0x{ptr:x}, +{nbytes}) is not inside one live "
                                   f"allocation ({memory.describe(ptr)})")
        if mem.device_id != self.comm._device_id:
            raise MemoryFaultError(f"{where} lies on device {mem.device_id}, but the "
                                   f"communicator drives device {self.comm._device_id}")
        raw = memory.host_view(ptr, nbytes, mem)
        return raw.view(_DTYPES[self.datatype])

    def signature(self):
        return (self.count, self.datatype, self.op)


def _run_group(calls):
    """Run the collectives of a group: per communicator set, the k-th call of every rank
    together."""
    by_clique = {}
    for call in calls:
        ranks = by_clique.setdefault(call.comm._clique, {})
        ranks.setdefault(call.comm._rank_id, []).append(call)
    for ranks in by_clique.values():
        size = next(iter(ranks.values()))[0].comm._size
        posted = {r: len(c) for r, c in ranks.items()}
        if len(ranks) != size or len(set(posted.values())) != 1:
            raise NcclError(5, f"a group posted collectives on ranks {posted} (rank: count) of "
                               f"a set of {size}: every rank must post the same collectives, "
                               "or NCCL hangs")
        for step in zip(*(ranks[r] for r in range(size))):
            for call in step:  # the collective follows each rank's queued work (async mode)
                streams.complete(call.stream)
            _all_reduce(step)


def _all_reduce(calls):
    signatures = {c.signature() for c in calls}
    if len(signatures) != 1:
        raise NcclError(4, "allReduce: the ranks disagree on (count, datatype, op): "
                           f"{sorted(signatures)}")
    op = calls[0].op
    stacked = np.stack([c.send for c in calls])
    if op == OPS["NCCL_AVG"]:
        total = (np.add.reduce(stacked) / len(calls)).astype(stacked.dtype)
    else:
        total = _REDUCERS[op](stacked)
    for call in calls:
        device_state.check_not_capturing(f"NCCL allReduce on {call.stream!r}")
        call.recv[...] = total


def build():
    """The stand-in ``cupy.cuda.nccl`` module."""
    module = types.ModuleType("cupy.cuda.nccl", "NCCL played by the virtual GPU")
    module.available = True
    for name, value in {**DATATYPES, **OPS}.items():
        setattr(module, name, value)
    module.NcclCommunicator, module.NcclError = NcclCommunicator, NcclError
    module.groupStart, module.groupEnd = groupStart, groupEnd
    module.get_version, module.get_build_version = get_version, get_build_version
    return module
