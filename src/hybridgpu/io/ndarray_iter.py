"""``NDArrayIter``: batches over in-memory arrays, as MXNet 1.x's ``mx.io.NDArrayIter``.

Data and labels are an array, a list of arrays (named ``_0_<name>``, ``_1_<name>``, ...) or a
dict of name -> array; they are kept sorted by name. numpy arrays become float32 NDArrays.
``last_batch_handle`` says what happens to a last batch shorter than ``batch_size``:

* ``'pad'``: it is filled up with examples from the start (``batch.pad`` says how many);
* ``'discard'``: it is dropped;
* ``'roll_over'``: it is kept for the next epoch, whose first batch is those examples followed
  by the first ones of the new epoch (``batch.pad`` of that batch is the number carried over,
  as in MXNet).

``shuffle=True`` permutes the examples with ``numpy.random.shuffle`` at construction and at
every ``reset()`` (so ``np.random.seed`` makes the order MXNet's).

Differences from MXNet 1.9.1, on purpose: an unknown ``last_batch_handle``, a batch size
below 1, and data and labels with different numbers of examples raise ``ValueError`` (MXNet
accepts them and misbehaves later); NDArrays keep their dtype when shuffled (MXNet turns them
into float32).

Example:
    >>> import numpy as np
    >>> it = NDArrayIter(np.arange(10).reshape(5, 2), np.arange(5), batch_size=2)
    >>> [(b.label[0].asnumpy().tolist(), b.pad) for b in it]
    [([0.0, 1.0], 0), ([2.0, 3.0], 0), ([4.0, 0.0], 1)]
    >>> it.provide_data
    [DataDesc[data,(2, 2),<class 'numpy.float32'>,NCHW]]
"""

from __future__ import annotations

import numpy as np

from .. import ndarray as nd
from ..ndarray import NDArray
from .batch import DataBatch, DataDesc, DataIter

__all__ = ["NDArrayIter"]

_HANDLES = ("pad", "discard", "roll_over")


def _as_ndarray(value, name):
    if isinstance(value, NDArray):
        return value
    try:
        return nd.array(value)
    except (TypeError, ValueError) as err:
        raise TypeError(f"NDArrayIter: invalid type {type(value).__name__!r} for {name!r}; "
                        f"pass an NDArray, a numpy.ndarray, a list of them or a dict of "
                        f"them ({err})") from None


def named_arrays(arrays, default_name, allow_empty):
    """``[(name, NDArray)]`` sorted by name, from an array, a list or a dict of arrays."""
    if arrays is None:
        if not allow_empty:
            raise ValueError("NDArrayIter: data must be given (an array, list or dict)")
        arrays = []
    if isinstance(arrays, (np.ndarray, NDArray)):
        arrays = [arrays]
    if isinstance(arrays, (list, tuple)):
        if not arrays and not allow_empty:
            raise ValueError("NDArrayIter: data must hold at least one array")
        if len(arrays) == 1:
            arrays = {default_name: arrays[0]}
        else:
            arrays = {f"_{i}_{default_name}": a for i, a in enumerate(arrays)}
    if not isinstance(arrays, dict):
        raise TypeError(f"NDArrayIter: input must be an NDArray, a numpy.ndarray, a list of "
                        f"them or a dict with them as values, got {type(arrays).__name__}")
    return sorted((name, _as_ndarray(v, name)) for name, v in arrays.items())


class NDArrayIter(DataIter):
    """Iterate over ``data`` (and ``label``) in batches of ``batch_size`` examples along the
    ``N`` axis of ``layout``.

    Example:
        >>> import numpy as np
        >>> it = NDArrayIter({"x": np.ones((5, 3))}, batch_size=2,
        ...                  last_batch_handle="roll_over")
        >>> [b.pad for b in it]
        [0, 0]
        >>> it.reset(); [(b.data[0].shape, b.pad) for b in it]
        [((2, 3), 1), ((2, 3), 0), ((2, 3), 0)]
    """

    def __init__(self, data, label=None, batch_size=1, shuffle=False,
                 last_batch_handle="pad", data_name="data", label_name="softmax_label",
                 layout="NCHW"):
        super().__init__(batch_size)
        if last_batch_handle not in _HANDLES:
            raise ValueError(f"NDArrayIter: last_batch_handle must be one of {_HANDLES}, "
                             f"got {last_batch_handle!r}")
        if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"NDArrayIter: batch_size must be a positive int, got "
                             f"{batch_size!r}")
        self.layout = layout
        self._axis = max(DataDesc.get_batch_axis(layout), 0)
        self.data = named_arrays(data, data_name, allow_empty=False)
        self.label = named_arrays(label, label_name, allow_empty=True)
        self.num_data = self._count_examples()
        self.idx = np.arange(self.num_data)
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.cursor = -batch_size
        self._cache = {"data": None, "label": None}
        self.reset()

    def _count_examples(self):
        counts = {name: a.shape[self._axis] for name, a in self.data + self.label}
        if len(set(counts.values())) > 1:
            raise ValueError(f"NDArrayIter: data and labels must have the same number of "
                             f"examples along the batch axis {self._axis}; got {counts}")
        return next(iter(counts.values()))

    def _describe(self, arrays):
        descs = []
        for name, array in arrays:
            shape = list(array.shape)
            shape[self._axis] = self.batch_size
            descs.append(DataDesc(name, tuple(shape), array.dtype, layout=self.layout))
        return descs

    @property
    def provide_data(self):
        """``DataDesc`` of each data array of a batch."""
        return self._describe(self.data)

    @property
    def provide_label(self):
        """``DataDesc`` of each label array of a batch."""
        return self._describe(self.label)

    # -- position -------------------------------------------------------------------------
    def hard_reset(self):
        """Go back to the start, forgetting examples kept by ``'roll_over'``."""
        if self.shuffle:
            self._shuffle_data()
        self.cursor = -self.batch_size
        self._cache = {"data": None, "label": None}

    def reset(self):
        """Go back to the start (after the examples kept by ``'roll_over'``)."""
        if self.shuffle:
            self._shuffle_data()
        in_last = self.num_data - self.batch_size < self.cursor < self.num_data
        if self.last_batch_handle == "roll_over" and in_last:
            self.cursor = self.cursor - self.num_data - self.batch_size
        else:
            self.cursor = -self.batch_size

    def iter_next(self):
        """Move the cursor to the next batch; False past the end."""
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    def next(self):
        """The next ``DataBatch``; a short last batch ends the epoch unless padded."""
        if not self.iter_next():
            raise StopIteration
        data, label = self.getdata(), self.getlabel()
        if data[0].shape[self._axis] != self.batch_size:  # 'discard' or 'roll_over'
            self._cache = {"data": data, "label": label}
            raise StopIteration
        return DataBatch(data=data, label=label, pad=self.getpad(), index=None)

    # -- batches --------------------------------------------------------------------------
    def _rows(self, arrays, start, end):
        return [nd.slice_axis(a, axis=self._axis, begin=start, end=end) for _, a in arrays]

    def _join(self, first, second):
        if not first or not second:
            return first or second
        return [nd.concat(a, b, dim=self._axis) for a, b in zip(first, second)]

    def _padding(self, arrays, count):
        """The first ``count`` examples, repeating the whole data as often as needed."""
        whole = self._rows(arrays, 0, self.num_data)
        parts = [whole] * (count // self.num_data)
        if count % self.num_data:
            parts.append(self._rows(arrays, 0, count % self.num_data))
        joined = parts[0]
        for part in parts[1:]:
            joined = self._join(joined, part)
        return joined

    def _batchify(self, arrays, kind):
        if self.cursor >= self.num_data:
            raise StopIteration("NDArrayIter: the epoch is over; call reset()")
        end = self.cursor + self.batch_size
        if self.last_batch_handle == "roll_over" and self.cursor < 0:
            carried = self._cache[kind]
            if carried is None:
                raise RuntimeError("NDArrayIter: the first batch of this epoch should start "
                                   "with the examples rolled over from the last epoch, but "
                                   "none were kept; call hard_reset()")
            self._cache[kind] = None
            return self._join(carried, self._rows(arrays, 0, end))
        if self.last_batch_handle == "pad" and end > self.num_data:
            return self._join(self._rows(arrays, self.cursor, self.num_data),
                              self._padding(arrays, end - self.num_data))
        return self._rows(arrays, self.cursor, min(end, self.num_data))

    def getdata(self):
        """The data arrays of the current batch."""
        return self._batchify(self.data, "data")

    def getlabel(self):
        """The label arrays of the current batch."""
        return self._batchify(self.label, "label")

    def getpad(self):
        """Filler examples at the end of the current batch (``'pad'``), or the examples
        carried over into it (first batch of an epoch, ``'roll_over'``)."""
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            return self.cursor + self.batch_size - self.num_data
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            return -self.cursor
        return 0

    def _shuffle_data(self):
        """Permute ``idx`` further and reorder the arrays by it (MXNet's order of draws)."""
        np.random.shuffle(self.idx)
        self.data = [(k, _taken(v, self.idx, self._axis)) for k, v in self.data]
        self.label = [(k, _taken(v, self.idx, self._axis)) for k, v in self.label]


def _taken(array, order, axis):
    return nd.array(np.take(array.asnumpy(), order, axis=axis), ctx=array.context,
                    dtype=array.dtype)
