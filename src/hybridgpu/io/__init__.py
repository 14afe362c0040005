"""``mx.io``: data iterators (MXNet 1.x's API): ``NDArrayIter``, ``DataIter``, ``DataBatch``,
``DataDesc``.

Example:
    >>> import numpy as np
    >>> import hybridgpu as mx
    >>> it = mx.io.NDArrayIter(np.ones((6, 2)), np.zeros(6), batch_size=4,
    ...                        last_batch_handle="discard")
    >>> [b.data[0].shape for b in it]
    [(4, 2)]
"""

from .batch import DataBatch, DataDesc, DataIter
from .ndarray_iter import NDArrayIter

__all__ = ["DataBatch", "DataDesc", "DataIter", "NDArrayIter"]
