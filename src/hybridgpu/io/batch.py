"""``DataDesc``, ``DataBatch`` and ``DataIter``: what MXNet 1.x's data iterators hand out.

A ``DataIter`` yields ``DataBatch`` objects (lists of NDArrays for ``data`` and ``label``, plus
``pad``: how many examples at the end are filler); ``provide_data``/``provide_label`` describe
the arrays of one batch as ``DataDesc`` (name, shape, dtype, layout), which ``Module.bind``
takes.

Example:
    >>> import hybridgpu as mx
    >>> desc = DataDesc("data", (4, 3))
    >>> desc
    DataDesc[data,(4, 3),<class 'numpy.float32'>,NCHW]
    >>> desc.name, desc.shape, DataDesc.get_batch_axis("TNC")
    ('data', (4, 3), 1)
    >>> print(DataBatch([mx.nd.zeros((4, 3))], [mx.nd.zeros((4,))], pad=1))
    DataBatch: data shapes: [(4, 3)] label shapes: [(4,)]
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

__all__ = ["DataDesc", "DataBatch", "DataIter"]


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """Name and shape (a ``(name, shape)`` tuple) plus ``dtype`` and ``layout`` of one input.

    Example:
        >>> d = DataDesc("x", (8, 2), dtype="int32", layout="NC")
        >>> tuple(d), d.dtype, d.layout
        (('x', (8, 2)), 'int32', 'NC')
    """

    def __new__(cls, name, shape, dtype=np.float32, layout="NCHW"):
        desc = super().__new__(cls, name, shape)
        desc.dtype = dtype
        desc.layout = layout
        return desc

    def __repr__(self):
        return f"DataDesc[{self.name},{self.shape},{self.dtype},{self.layout}]"

    @staticmethod
    def get_batch_axis(layout):
        """The axis of ``N`` (the batch) in ``layout`` (0 when ``layout`` is None; -1 when
        it has no ``N``)."""
        return 0 if layout is None else layout.find("N")

    @staticmethod
    def get_list(shapes, types):
        """``DataDesc`` objects from ``[(name, shape)]`` and ``[(name, dtype)]`` (or None)."""
        if types is None:
            return [DataDesc(name, shape) for name, shape in shapes]
        dtypes = dict(types)
        return [DataDesc(name, shape, dtypes[name]) for name, shape in shapes]


class DataBatch:
    """One batch: ``data`` and ``label`` (lists of NDArrays), ``pad`` (filler examples at the
    end), ``index``, ``bucket_key``, ``provide_data`` and ``provide_label``.

    Example:
        >>> import hybridgpu as mx
        >>> batch = DataBatch(data=[mx.nd.ones((2, 3))], pad=0)
        >>> batch.data[0].shape, batch.label
        ((2, 3), None)
    """

    def __init__(self, data, label=None, pad=None, index=None, bucket_key=None,
                 provide_data=None, provide_label=None):
        if data is not None and not isinstance(data, (list, tuple)):
            raise TypeError(f"DataBatch: data must be a list of NDArrays, got "
                            f"{type(data).__name__}")
        if label is not None and not isinstance(label, (list, tuple)):
            raise TypeError(f"DataBatch: label must be a list of NDArrays, got "
                            f"{type(label).__name__}")
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self):
        data_shapes = [d.shape for d in self.data]
        label_shapes = [lb.shape for lb in self.label] if self.label else None
        return (f"{type(self).__name__}: data shapes: {data_shapes} label shapes: "
                f"{label_shapes}")


class DataIter:
    """Base class of data iterators: ``next()`` returns a ``DataBatch`` made from
    ``getdata``, ``getlabel``, ``getpad`` and ``getindex`` after ``iter_next()`` moved on, or
    raises ``StopIteration``; ``reset()`` goes back to the start.

    Example:
        >>> import hybridgpu as mx
        >>> class Twice(DataIter):
        ...     def __init__(self):
        ...         super().__init__(batch_size=1)
        ...         self.count = 0
        ...     def iter_next(self):
        ...         self.count += 1
        ...         return self.count <= 2
        ...     def getdata(self):
        ...         return [mx.nd.full((1,), self.count)]
        ...     def getpad(self):
        ...         return 0
        >>> [b.data[0].asnumpy().tolist() for b in Twice()]
        [[1.0], [2.0]]
    """

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def reset(self):
        """Go back to the first batch."""

    def next(self):
        """The next ``DataBatch``; ``StopIteration`` at the end."""
        if not self.iter_next():
            raise StopIteration
        return DataBatch(data=self.getdata(), label=self.getlabel(), pad=self.getpad(),
                         index=self.getindex())

    def __next__(self):
        return self.next()

    def iter_next(self):
        """Move to the next batch; False at the end."""
        return False

    def getdata(self):
        """The data arrays of the current batch."""
        return None

    def getlabel(self):
        """The label arrays of the current batch."""
        return None

    def getindex(self):
        """The indices of the current batch's examples (None: not tracked)."""
        return None

    def getpad(self):
        """How many examples at the end of the current batch are filler."""
        return None
