"""``nd.split_v2``: MXNet's Python-level split helper over the ``_split_v2`` op.

An int ``N`` splits into ``N`` equal pieces; a tuple of indices splits before each index (as
``numpy.split`` does). The op receives the start of every piece, first ``0``, as MXNet's does.

Example:
    >>> from hybridgpu import nd
    >>> x = nd.array([[1, 2, 3, 4, 5]])
    >>> [p.asnumpy().tolist() for p in split_v2(x, (2, 3), axis=1)]
    [[[1.0, 2.0]], [[3.0]], [[4.0, 5.0]]]
"""

from __future__ import annotations

from ..base import MXNetError
from . import _internal

__all__ = ["split_v2"]  # split_indices: import it by name (for sym.split_v2)


def split_indices(indices_or_sections, axis_size, axis=0):
    """The ``indices`` attribute of ``_split_v2``: the start of every piece, first 0.

    Shared by ``nd.split_v2`` and a Symbol version (which needs the axis size, known at trace).
    """
    if isinstance(indices_or_sections, bool) or not isinstance(
            indices_or_sections, (int, tuple, list)):
        raise TypeError(f"split_v2: indices_or_sections must be an int or a tuple of ints, got "
                        f"{type(indices_or_sections).__name__}")
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
        if sections < 1 or axis_size % sections:
            raise MXNetError(f"split_v2: cannot split axis {axis} of size {axis_size} into "
                             f"{sections} equal pieces")
        return tuple(i * (axis_size // sections) for i in range(sections))
    return (0, *indices_or_sections)


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Split ``ary`` along ``axis`` into equal pieces (an int) or before each index (a tuple
    or list of sorted ints); ``squeeze_axis`` drops the split axis of pieces of size 1.

    Returns one NDArray per piece (a single NDArray when there is one piece).
    """
    indices = split_indices(indices_or_sections, ary.shape[axis], axis)
    return _internal._split_v2(ary, indices=indices, axis=axis, squeeze_axis=squeeze_axis)
