"""``nd.histogram``: MXNet's Python-level helper over the ``_histogram`` op.

``bins`` is a number of equal bins (with ``range=(lo, hi)``) or an NDArray of increasing edges.
The result is ``[counts, edges]``: int64 counts and edges in the data's dtype. As in MXNet, an
int ``bins`` without ``range`` warns and returns NumPy's histogram of the data instead (a
tuple of float32 NDArrays), since the op needs the range up front.

Example:
    >>> from hybridgpu import nd
    >>> counts, edges = histogram(nd.array([0, 1, 2, 2, 3, 7.5, 9, 10]), bins=5, range=(0, 10))
    >>> counts.asnumpy().tolist(), edges.asnumpy().tolist()
    ([2, 3, 0, 1, 2], [0.0, 2.0, 4.0, 6.0, 8.0, 10.0])
    >>> histogram(nd.array([1, 2, 6]), bins=nd.array([0, 2, 8]))[0].asnumpy().tolist()
    [1, 2]
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from .. import ops
from .imperative import invoke
from .ndarray import NDArray

__all__ = ["histogram"]


def histogram(a, bins=10, range=None):  # noqa: A002 (MXNet's argument name)
    """Counts of ``a``'s values per bin and the bin edges, as ``[counts, edges]``.

    ``bins``: an int (equal bins over ``range``) or a 1-D NDArray of edges (``range`` is then
    ignored, as in MXNet). Values outside the bins are not counted; the last bin includes its
    right edge.
    """
    if not isinstance(a, NDArray):
        raise TypeError(f"nd.histogram: a must be an NDArray, got {type(a).__name__}; convert "
                        "it with nd.array(...) first")
    op = ops.get("_histogram")
    if isinstance(bins, NDArray):
        return invoke(op, [a, bins], op.parse_attrs({}))
    if isinstance(bins, numbers.Integral) and not isinstance(bins, bool):
        if range is None:
            warnings.warn("range is not specified, using numpy's result to ensure consistency "
                          "with numpy", UserWarning, stacklevel=2)
            counts, edges = np.histogram(a.asnumpy(), bins=int(bins))
            return (_float32(counts, a), _float32(edges, a))
        return invoke(op, [a], op.parse_attrs({"bin_cnt": int(bins), "range": range}))
    raise ValueError(f"bins argument should be either an integer or an NDArray, got "
                     f"{type(bins).__name__}")


def _float32(values, like):
    from .creation import array

    return array(values, ctx=like.context, dtype=np.float32)
