"""Samplers: the order in which a ``DataLoader`` reads samples (``SequentialSampler``,
``RandomSampler``, ``FilterSampler``) and how it groups them into batches (``BatchSampler``).

``RandomSampler`` shuffles with NumPy's global generator, exactly as MXNet 1.9 does, so
``numpy.random.seed(n)`` makes its order repeatable (and identical to MXNet's for the same
seed); ``mx.random.seed`` does not affect it.

Example:
    >>> list(BatchSampler(SequentialSampler(10), 3, "keep"))
    [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    >>> import numpy as np
    >>> np.random.seed(0)
    >>> [int(i) for i in RandomSampler(6)]
    [5, 2, 1, 3, 0, 4]
"""

from __future__ import annotations

import numpy as np

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "FilterSampler", "BatchSampler"]

_LAST_BATCH = ("keep", "discard", "rollover")


class Sampler:
    """Base class: ``__iter__`` yields sample indices, ``__len__`` says how many."""

    def __iter__(self):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``start, start + 1, ..., start + length - 1``.

    Example:
        >>> list(SequentialSampler(3, start=2))
        [2, 3, 4]
    """

    def __init__(self, length, start=0):
        self._length = length
        self._start = start

    def __iter__(self):
        return iter(range(self._start, self._start + self._length))

    def __len__(self):
        return self._length


class RandomSampler(Sampler):
    """A fresh random permutation of ``0 .. length - 1`` on every pass (NumPy ``int64``
    indices from ``numpy.random.shuffle``, NumPy's global generator, as in MXNet).

    Example:
        >>> sorted(int(i) for i in RandomSampler(4))
        [0, 1, 2, 3]
    """

    def __init__(self, length):
        self._length = length

    def __iter__(self):
        indices = np.arange(self._length)
        np.random.shuffle(indices)
        return iter(indices)

    def __len__(self):
        return self._length


class FilterSampler(Sampler):
    """The indices of the samples of ``dataset`` for which ``fn(sample)`` is true (decided
    once, when the sampler is made).

    Example:
        >>> list(FilterSampler(lambda x: x % 2 == 0, [5, 6, 7, 8]))
        [1, 3]
    """

    def __init__(self, fn, dataset):
        self._indices = [i for i in range(len(dataset)) if fn(dataset[i])]

    def __iter__(self):
        return iter(self._indices)

    def __len__(self):
        return len(self._indices)


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler``. ``last_batch`` says what happens to a
    final, short batch: ``'keep'`` it, ``'discard'`` it, or ``'rollover'`` its indices to the
    front of the next pass.

    Example:
        >>> sampler = BatchSampler(SequentialSampler(10), 3, "rollover")
        >>> list(sampler), len(sampler)
        ([[0, 1, 2], [3, 4, 5], [6, 7, 8]], 3)
        >>> list(sampler)
        [[9, 0, 1], [2, 3, 4], [5, 6, 7]]
    """

    def __init__(self, sampler, batch_size, last_batch="keep"):
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
                or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if last_batch not in _LAST_BATCH:
            raise ValueError("last_batch must be one of 'keep', 'discard', or 'rollover', but "
                             f"got {last_batch}")
        self._sampler = sampler
        self._batch_size = int(batch_size)
        self._last_batch = last_batch
        self._prev = []

    def __iter__(self):
        batch, self._prev = self._prev, []
        for index in self._sampler:
            batch.append(index)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch:
            if self._last_batch == "keep":
                yield batch
            elif self._last_batch == "rollover":
                self._prev = batch

    def __len__(self):
        if self._last_batch == "keep":
            return (len(self._sampler) + self._batch_size - 1) // self._batch_size
        if self._last_batch == "discard":
            return len(self._sampler) // self._batch_size
        return (len(self._prev) + len(self._sampler)) // self._batch_size
