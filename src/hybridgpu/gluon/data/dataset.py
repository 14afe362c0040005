"""Datasets: ``Dataset`` (``transform``, ``transform_first``, ``filter``, ``shard``, ``take``,
``sample``), ``SimpleDataset``, ``ArrayDataset`` and ``RecordFileDataset``, as in MXNet 1.9.

A dataset is anything with ``__getitem__`` and ``__len__``. Samples that are tuples are
unpacked into a transform's arguments (``fn(data, label)``); ``transform_first`` changes only
the first element.

Example:
    >>> import numpy as np
    >>> ds = ArrayDataset(np.arange(6).reshape(3, 2), [10, 20, 30])
    >>> len(ds), ds[1]
    (3, (array([2, 3]), 20))
    >>> ds.transform_first(lambda x: x * 2)[1]
    (array([4, 6]), 20)
    >>> list(SimpleDataset(list(range(10))).shard(3, 1))
    [4, 5, 6]
"""

from __future__ import annotations

import os
import threading

from ...ndarray import NDArray
from ...serialization.recordio import RecordIOError, read_record
from ..utils import ArgumentError
from .sampler import FilterSampler, Sampler, SequentialSampler

__all__ = ["Dataset", "SimpleDataset", "ArrayDataset", "RecordFileDataset"]


class Dataset:
    """Abstract dataset: subclasses implement ``__getitem__`` and ``__len__``.

    Example:
        >>> class Squares(Dataset):
        ...     def __getitem__(self, idx):
        ...         return idx * idx
        ...     def __len__(self):
        ...         return 4
        >>> list(Squares().transform(lambda x: x + 1))
        [1, 2, 5, 10]
    """

    def __getitem__(self, idx):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def __iter__(self):
        # MXNet's Dataset has no __iter__, so iterating falls back to indexing until an
        # IndexError, which never comes for datasets that compute samples from any index.
        for idx in range(len(self)):
            yield self[idx]

    def filter(self, fn):
        """A dataset of the samples for which ``fn(sample)`` is true (decided now, once).

        Example:
            >>> list(SimpleDataset([1, 2, 3, 4, 5]).filter(lambda x: x % 2 == 1))
            [1, 3, 5]
        """
        return _SampledDataset(self, FilterSampler(fn, self))

    def shard(self, num_shards, index):
        """Shard ``index`` of ``num_shards`` contiguous shards; the first
        ``len(self) % num_shards`` shards have one extra sample. Shard before shuffling so that
        workers get disjoint samples.

        Example:
            >>> [list(SimpleDataset(list(range(5))).shard(3, i)) for i in range(3)]
            [[0, 1], [2, 3], [4]]
        """
        if index < 0:
            raise ArgumentError("Index must be non-negative")
        if index >= num_shards:
            raise ArgumentError(f"Shard index of out bound: {index} out of {num_shards}")
        base, extra = divmod(len(self), num_shards)
        start = base * index + min(index, extra)
        length = base + (1 if index < extra else 0)
        return _SampledDataset(self, SequentialSampler(length, start=start))

    def take(self, count):
        """A dataset of the first ``count`` samples (all of them when ``count`` is None or
        larger than the dataset).

        Example:
            >>> list(SimpleDataset([1, 2, 3]).take(2)), len(SimpleDataset([1, 2, 3]).take(None))
            ([1, 2], 3)
        """
        if count is None or count > len(self):
            count = len(self)
        if count < 0:
            raise ValueError(f"take: count must be non-negative or None, got {count}")
        return _SampledDataset(self, SequentialSampler(count))

    def sample(self, sampler):
        """A dataset of the samples at the indices ``sampler`` yields.

        Example:
            >>> from hybridgpu.gluon.data import SequentialSampler
            >>> list(SimpleDataset([1, 2, 3, 4]).sample(SequentialSampler(2, start=1)))
            [2, 3]
        """
        if not isinstance(sampler, Sampler):
            raise TypeError(f"Invalid sampler type: {type(sampler)}. Expected gluon.data.Sampler "
                            "instead.")
        return _SampledDataset(self, sampler)

    def transform(self, fn, lazy=True):
        """A dataset whose samples are ``fn(sample)`` (``fn(*sample)`` for tuple samples).

        ``lazy=True`` calls ``fn`` on every access; ``lazy=False`` transforms every sample now
        and returns a ``SimpleDataset`` of the results.

        Example:
            >>> pairs = SimpleDataset([(1, 2), (3, 4)])
            >>> pairs.transform(lambda a, b: a + b)[1], pairs.transform(lambda a, b: b, False)[0]
            (7, 2)
        """
        transformed = _LazyTransformDataset(self, fn)
        if lazy:
            return transformed
        return SimpleDataset([transformed[i] for i in range(len(transformed))])

    def transform_first(self, fn, lazy=True):
        """Like ``transform``, but ``fn`` changes only the first element of tuple samples (the
        data, leaving the label); a non-tuple sample is passed whole.

        Example:
            >>> SimpleDataset([(1, 2), (3, 4)]).transform_first(lambda x: x * 10)[1]
            (30, 4)
        """
        return self.transform(_TransformFirst(fn), lazy)


class _TransformFirst:
    """``fn`` on the first of the unpacked sample elements, the rest unchanged."""

    def __init__(self, fn):
        self._fn = fn

    def __call__(self, first, *rest):
        if rest:
            return (self._fn(first),) + rest
        return self._fn(first)


class _LazyTransformDataset(Dataset):
    """``fn`` applied to each sample on access."""

    def __init__(self, data, fn):
        self._data = data
        self._fn = fn

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        item = self._data[idx]
        if isinstance(item, tuple):
            return self._fn(*item)
        return self._fn(item)


class _SampledDataset(Dataset):
    """The samples of ``dataset`` at the indices a sampler yields (listed once, now)."""

    def __init__(self, dataset, sampler):
        self._dataset = dataset
        self._indices = list(sampler)

    def __len__(self):
        return len(self._indices)

    def __getitem__(self, idx):
        return self._dataset[self._indices[idx]]


class SimpleDataset(Dataset):
    """A dataset over any object with ``__getitem__`` and ``__len__`` (a list, an array...).

    Example:
        >>> ds = SimpleDataset([1, 2, 3])
        >>> len(ds), ds[-1]
        (3, 3)
    """

    def __init__(self, data):
        self._data = data

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        return self._data[idx]


class ArrayDataset(Dataset):
    """A dataset over one or more arrays of equal length (NDArrays, NumPy arrays, lists...);
    sample ``i`` is ``(a[i], b[i], ...)``, or ``a[i]`` itself for one array.

    1-D NDArrays are converted to NumPy arrays, as in MXNet, so their samples are NumPy
    scalars; other NDArrays give NDArray samples.

    Example:
        >>> from hybridgpu import nd
        >>> ds = ArrayDataset(nd.arange(3), [7, 8, 9])
        >>> float(ds[2][0]), ds[2][1]
        (2.0, 9)
        >>> try:
        ...     ArrayDataset([1, 2, 3], [4, 5])
        ... except ValueError as err:
        ...     print(err)
        All arrays must have the same length; array[0] has length 3 while array[1] has length 2.
    """

    def __init__(self, *args):
        if not args:
            raise ArgumentError("Needs at least 1 arrays")
        self._length = len(args[0])
        self._data = []
        for i, data in enumerate(args):
            if len(data) != self._length:
                raise ArgumentError(
                    f"All arrays must have the same length; array[0] has length {self._length} "
                    f"while array[{i}] has length {len(data)}.")
            if isinstance(data, NDArray) and data.ndim == 1:
                data = data.asnumpy()
            self._data.append(data)

    def __getitem__(self, idx):
        if len(self._data) == 1:
            return self._data[0][idx]
        return tuple(data[idx] for data in self._data)

    def __len__(self):
        return self._length


# -- RecordIO ---------------------------------------------------------------------------------

def _read_index(idx_path):
    """The ``key -> byte offset`` table of a RecordIO ``.idx`` file (``key\\toffset`` lines)."""
    offsets = {}
    with open(idx_path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 2:
                raise ValueError(f"{idx_path}:{lineno}: expected 'key<TAB>offset', got "
                                 f"{line.rstrip()!r}")
            offsets[int(fields[0])] = int(fields[1])
    return offsets


def _read_record_at(f, offset, path):
    """The payload of the record starting at ``offset`` (a ``RecordIOError``, which is a
    ValueError, when the file is not RecordIO there)."""
    f.seek(offset)
    payload = read_record(f, path)
    if payload is None:
        raise RecordIOError(f"{path}: truncated record header at byte {offset}")
    return payload


class RecordFileDataset(Dataset):
    """The records of a RecordIO file (``.rec`` with its ``.idx`` index beside it, as written
    by MXNet's ``MXIndexedRecordIO`` or ``im2rec``); each sample is the raw bytes of a record.

    Reads are thread-safe (one lock around the file handle).

    Example:
        >>> import os, struct, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> rec, idx = os.path.join(folder, "d.rec"), os.path.join(folder, "d.idx")
        >>> with open(rec, "wb") as f, open(idx, "w") as g:
        ...     for key, payload in enumerate([b"abc", b"hello"]):
        ...         _ = g.write(f"{key}\\t{f.tell()}\\n")
        ...         _ = f.write(struct.pack("<II", 0xCED7230A, len(payload)) + payload)
        ...         _ = f.write(b"\\0" * (-len(payload) % 4))
        >>> ds = RecordFileDataset(rec)
        >>> len(ds), ds[1]
        (2, b'hello')
    """

    def __init__(self, filename):
        self.idx_file = os.path.splitext(filename)[0] + ".idx"
        self.filename = filename
        if not os.path.isfile(filename):
            raise FileNotFoundError(f"RecordFileDataset: no such file {filename}")
        if not os.path.isfile(self.idx_file):
            raise FileNotFoundError(f"RecordFileDataset: the index {self.idx_file} of {filename} "
                                    "is missing")
        self._offsets = _read_index(self.idx_file)
        self._keys = list(self._offsets)
        self._lock = threading.Lock()
        self._file = open(filename, "rb")  # noqa: SIM115  (kept open for random access)

    def __getitem__(self, idx):
        offset = self._offsets[self._keys[idx]]
        with self._lock:
            return _read_record_at(self._file, offset, self.filename)

    def __len__(self):
        return len(self._keys)

    def __del__(self):
        handle = getattr(self, "_file", None)
        if handle is not None:
            handle.close()

    def __getstate__(self):
        raise TypeError("RecordFileDataset holds an open file and cannot be pickled; "
                        "hybridgpu's DataLoader uses threads, so it never needs to")

