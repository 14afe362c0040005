"""Iterators over other iterators (MXNet 1.x's ``mx.io.ResizeIter`` and
``mx.io.PrefetchingIter``).

``ResizeIter(it, size)`` makes an epoch exactly ``size`` batches, restarting ``it`` when it
runs out. ``PrefetchingIter(iters, rename_data, rename_label)`` joins the batches of several
iterators (their data lists, then their label lists) and can rename their inputs.

Difference from MXNet 1.9.1: ``PrefetchingIter`` reads its iterators when asked, in the
calling thread (MXNet reads one batch ahead in background threads); the batches are the same.

Example:
    >>> import numpy as np
    >>> import hybridgpu as mx
    >>> base = mx.io.NDArrayIter(np.arange(4.0), batch_size=2)
    >>> [b.data[0].asnumpy().tolist() for b in ResizeIter(base, 3)]
    [[0.0, 1.0], [2.0, 3.0], [0.0, 1.0]]
"""

from __future__ import annotations

from .batch import DataBatch, DataDesc, DataIter

__all__ = ["ResizeIter", "PrefetchingIter"]


class _CurrentBatch(DataIter):
    """A DataIter whose ``get*`` read ``self.current_batch`` (the batch ``iter_next`` made)."""

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return self.current_batch.index

    def getpad(self):
        return self.current_batch.pad


class ResizeIter(_CurrentBatch):
    """``data_iter`` resized to ``size`` batches an epoch (``reset_internal``: ``reset()``
    also resets ``data_iter``).

    Example:
        >>> import numpy as np
        >>> import hybridgpu as mx
        >>> it = ResizeIter(mx.io.NDArrayIter(np.ones((6, 2)), batch_size=2), size=1)
        >>> len(list(it)), it.provide_data[0].shape
        (1, (2, 2))
    """

    def __init__(self, data_iter, size, reset_internal=True):
        super().__init__(data_iter.batch_size)
        self.data_iter = data_iter
        self.size = size
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self):
        """Start a new epoch of ``size`` batches."""
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self):
        """Read the next batch, restarting the inner iterator when it ends."""
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            self.current_batch = self.data_iter.next()
        self.cur += 1
        return True


def _renamed(descs, renames):
    if renames is None:
        return list(descs)
    return [DataDesc(renames[d.name], d.shape, d.dtype) if isinstance(d, DataDesc)
            else DataDesc(*d) for d in descs]


class PrefetchingIter(_CurrentBatch):
    """The batches of ``iters`` (an iterator or a list) joined: data of the first, then of
    the second, ...; ``rename_data``/``rename_label``: one ``{old: new}`` dict per iterator.

    Example:
        >>> import numpy as np
        >>> import hybridgpu as mx
        >>> a = mx.io.NDArrayIter(np.zeros((4, 1)), batch_size=2)
        >>> b = mx.io.NDArrayIter(np.ones((4, 3)), batch_size=2)
        >>> it = PrefetchingIter([a, b], rename_data=[{"data": "a"}, {"data": "b"}])
        >>> [(d.name, d.shape) for d in it.provide_data]
        [('a', (2, 1)), ('b', (2, 3))]
        >>> [[x.shape for x in batch.data] for batch in it]
        [[(2, 1), (2, 3)], [(2, 1), (2, 3)]]
    """

    def __init__(self, iters, rename_data=None, rename_label=None):
        super().__init__()
        self.iters = iters if isinstance(iters, list) else [iters]
        if not self.iters:
            raise ValueError("PrefetchingIter: give at least one iterator")
        self.n_iter = len(self.iters)
        self.rename_data = rename_data
        self.rename_label = rename_label
        self.batch_size = self.provide_data[0][1][0]
        self.current_batch = None

    @property
    def provide_data(self):
        renames = self.rename_data or [None] * self.n_iter
        return sum((_renamed(it.provide_data, r) for r, it in zip(renames, self.iters)), [])

    @property
    def provide_label(self):
        renames = self.rename_label or [None] * self.n_iter
        return sum((_renamed(it.provide_label, r) for r, it in zip(renames, self.iters)), [])

    def reset(self):
        """Reset every iterator."""
        for it in self.iters:
            it.reset()

    def iter_next(self):
        """Read one batch of every iterator; False when they end (together)."""
        batches = []
        for it in self.iters:
            try:
                batches.append(it.next())
            except StopIteration:
                batches.append(None)
        if all(b is None for b in batches):
            return False
        if any(b is None for b in batches) or len({b.pad for b in batches}) > 1:
            raise ValueError("PrefetchingIter: Number of entry mismatches between iterators "
                             "(they must give the same number of batches and padding)")
        self.current_batch = DataBatch(
            sum((b.data for b in batches), []), sum((b.label or [] for b in batches), []),
            batches[0].pad, batches[0].index, provide_data=self.provide_data,
            provide_label=self.provide_label)
        return True

    def next(self):
        if self.iter_next():
            return self.current_batch
        raise StopIteration

