"""MXNet's process-pool pieces of ``gluon.data.dataloader`` that GluonCV and GluonNLP build
their own loaders on (issue 21): ``_MultiWorkerIter`` (batches fetched from a worker pool in
order), ``default_mp_batchify_fn`` and ``ForkingPickler``.

The pool is the caller's (``multiprocessing.Pool`` or ``ThreadPool``): each batch is one
``pool.apply_async(worker_fn, (indices, batchify_fn, dataset))``; ``dataset=None`` means the
worker holds the dataset itself and returns the batch pickled (GluonCV's ``_worker_fn``).
NDArrays cross processes by value (``NDArray.__reduce__``), not through shared memory.

Example:
    >>> from multiprocessing.pool import ThreadPool
    >>> import hybridgpu as mx
    >>> def work(indices, batchify_fn, dataset):
    ...     return batchify_fn([dataset[i] for i in indices])
    >>> with ThreadPool(2) as pool:
    ...     it = _MultiWorkerIter(pool, default_mp_batchify_fn, [[0, 1], [2]], worker_fn=work,
    ...                           prefetch=2, dataset=[1.0, 2.0, 3.0])
    ...     [b.asnumpy().tolist() for b in it]
    [[1.0, 2.0], [3.0]]
"""

from __future__ import annotations

import multiprocessing
import pickle
from multiprocessing.reduction import ForkingPickler

from ... import context
from .dataloader import _as_in_context, default_batchify_fn

__all__ = ["ForkingPickler", "default_mp_batchify_fn", "_MultiWorkerIter"]


def default_mp_batchify_fn(data):
    """MXNet's batchify function for worker processes: the same batch as
    ``default_batchify_fn`` (MXNet places it in shared memory; here it is pickled by value).

    Example:
        >>> default_mp_batchify_fn([1, 2]).asnumpy().tolist()
        [1, 2]
    """
    return default_batchify_fn(data)


def _worker_fn(samples, batchify_fn, dataset=None):
    """Default work of one batch: the samples at ``samples`` batchified."""
    return batchify_fn([dataset[i] for i in samples])


class _MultiWorkerIter:
    """Iterates the batches of ``batch_sampler``, each computed by ``worker_fn`` in
    ``worker_pool``, in order, with ``prefetch`` batches requested ahead."""

    def __init__(self, worker_pool, batchify_fn, batch_sampler, pin_memory=False,
                 pin_device_id=0, worker_fn=_worker_fn, prefetch=0, dataset=None,
                 data_loader=None, timeout=120):
        self._worker_pool = worker_pool
        self._batchify_fn = batchify_fn
        self._batch_sampler = batch_sampler
        self._data_buffer = {}
        self._rcvd_idx = 0
        self._sent_idx = 0
        self._iter = iter(batch_sampler)
        self._worker_fn = worker_fn
        self._pin_memory = pin_memory
        self._pin_device_id = pin_device_id
        self._dataset = dataset
        self._data_loader = data_loader
        self._timeout = timeout
        for _ in range(prefetch):
            self._push_next()

    def __len__(self):
        return len(self._batch_sampler)

    def _push_next(self):
        """Request the next batch from the pool (nothing once the sampler is exhausted)."""
        indices = next(self._iter, None)
        if indices is None:
            return
        pending = self._worker_pool.apply_async(
            self._worker_fn, (indices, self._batchify_fn, self._dataset))
        self._data_buffer[self._sent_idx] = pending
        self._sent_idx += 1

    def __next__(self):
        self._push_next()
        if self._rcvd_idx == self._sent_idx:
            raise StopIteration
        pending = self._data_buffer.pop(self._rcvd_idx)
        try:
            batch = pending.get(self._timeout)
        except multiprocessing.TimeoutError:
            raise multiprocessing.TimeoutError(
                f"DataLoader worker gave no batch within timeout={self._timeout} s (a slow "
                "transform? raise the DataLoader's timeout)") from None
        if self._dataset is None:
            batch = pickle.loads(batch)
        if self._pin_memory:
            batch = _as_in_context(batch, context.cpu_pinned(self._pin_device_id))
        self._rcvd_idx += 1
        return batch

    next = __next__

    def __iter__(self):
        return self
