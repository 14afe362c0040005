"""The ``_histogram`` op (behind ``nd.histogram`` and ``sym.histogram``): how many values of
the input fall into each bin, and the bin edges.

Two ways to give the bins, as in MXNet:

* ``bin_cnt`` and ``range=(lo, hi)`` (both or neither): ``bin_cnt`` equal bins over
  ``[lo, hi]``; the op then has the single input ``data``. The edges are
  ``(lo * (bin_cnt - i) + hi * i) / bin_cnt`` in float64, which is what MXNet 1.9 returns bit for
  bit, cast to the data's dtype. ``lo == hi`` widens the range to ``(lo - 0.5, hi + 0.5)``.
* a second input ``bins``: a 1-D array of increasing edges.

Outputs: the counts (``int64``, one per bin) and the edges (the data's dtype). A value ``v``
lands in bin ``i`` when ``edges[i] <= v < edges[i + 1]``; the last bin also holds
``v == edges[-1]``; values outside ``[edges[0], edges[-1]]`` and NaN are not counted. This is
``numpy.histogram``'s rule, applied to the edges the op returns, so counts and edges always
agree. MXNet's own kernel rounds differently for a value that sits exactly on an inner edge
(and for integer data), so such a value can land one bin away from where MXNet puts it;
values between edges are counted identically. There is no gradient (the op is piecewise
constant), as in MXNet.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> op = ops.get("_histogram")
    >>> data = np.array([0.0, 1, 2, 2, 3, 7.5, 9, 10])
    >>> counts, edges = op.compute(np, data, **op.parse_attrs({"bin_cnt": 5, "range": (0, 10)}))
    >>> counts.tolist(), edges.tolist()
    ([2, 3, 0, 1, 2], [0.0, 2.0, 4.0, 6.0, 8.0, 10.0])
    >>> op.infer_shape(op.parse_attrs({"bin_cnt": 5, "range": (0, 10)}), [(8,)])
    ([(8,)], [(5,), (6,)])
"""

from __future__ import annotations

import numpy as np

from ..base import MXNetError
from .attrs import AttrError, FloatTuple, Int
from .opdef import OpDef, register

__all__ = ["uniform_edges"]


class _Range(FloatTuple):
    """``(lo, hi)``: two floats."""

    kind = "range (lo, hi)"

    def _check(self, value):
        values = super()._check(value)
        if len(values) != 2:
            raise AttrError(f"expected two numbers (lo, hi), got {value!r}")
        return values


def _uniform(attrs):
    """``(bin_cnt, lo, hi)`` for uniform bins, ``None`` when the bins come as an input."""
    count, bounds = attrs["bin_cnt"], attrs["range"]
    if (count is None) != (bounds is None):
        raise MXNetError(f"_histogram: bin_cnt and range must be given together or not at all "
                         f"(got bin_cnt={count}, range={bounds}); pass both for equal bins, "
                         "or neither and a bins array")
    if count is None:
        return None
    if count < 1:
        raise MXNetError(f"_histogram: bin_cnt must be at least 1, got {count}")
    lo, hi = bounds
    if not lo <= hi:
        raise MXNetError(f"_histogram: left hand side of range({lo:g}) should be less than or "
                         f"equal to right hand side({hi:g})")
    if lo == hi:  # as numpy and MXNet: a degenerate range becomes one unit wide
        lo, hi = lo - 0.5, hi + 0.5
    return count, lo, hi


def uniform_edges(xp, count, lo, hi):
    """The ``count + 1`` edges of equal bins over ``[lo, hi]`` in float64, computed as
    MXNet 1.9 computes them."""
    i = xp.arange(count + 1, dtype=np.float64)
    return (lo * (count - i) + hi * i) / count


def _count(xp, data, edges):
    """Counts (int64) of ``data`` per bin of the 1-D ``edges``, numpy.histogram's rule."""
    x = data.reshape(-1).astype(np.float64)
    e = edges.astype(np.float64)
    bins = e.shape[0] - 1
    index = xp.searchsorted(e, x, side="right") - 1
    index = xp.where(x == e[-1], bins - 1, index)       # the last bin is closed
    inside = (x >= e[0]) & (x <= e[-1])                 # False for NaN too
    index = xp.where(inside, index, bins)               # an extra bin, dropped below
    return _bin_counts(xp, index, bins + 1)[:bins].astype(np.int64)


def _bin_counts(xp, index, size):
    """How often each of ``0 .. size - 1`` occurs in ``index`` (all in range). CuPy: a
    scatter-add, since ``cupy.bincount`` reads the largest index and checks for negative ones on
    the host (two device syncs)."""
    if xp is np:
        return xp.bincount(index, minlength=size)
    import cupyx  # only reached with CuPy arrays, which have cupyx beside them

    counts = xp.zeros(size, dtype=np.uint64)  # scatter_add has no int64 kernel; uint64 is exact
    cupyx.scatter_add(counts, index, xp.ones(index.shape, dtype=np.uint64))
    return counts


def _histogram(xp, data, bins=None, bin_cnt=None, range=None):  # noqa: A002 (MXNet's name)
    uniform = _uniform({"bin_cnt": bin_cnt, "range": range})
    if uniform is not None:
        edges = uniform_edges(xp, *uniform).astype(data.dtype)
    else:
        _edge_count(tuple(bins.shape))
        if bool((bins[1:] < bins[:-1]).any()):
            raise MXNetError(f"_histogram: bins must increase monotonically, got "
                             f"{bins.tolist()}")
        edges = bins.astype(data.dtype)
    return _count(xp, data, edges), edges


def _edge_count(shape):
    if len(shape) != 1:
        raise MXNetError(f"_histogram: bins argument should be an 1D vector, got an array of "
                         f"shape {shape}")
    if shape[0] and shape[0] < 2:
        raise MXNetError(f"_histogram: bins needs at least 2 edges (one bin), got {shape[0]}")
    return shape[0]


def _shape(attrs, in_shapes):
    uniform = _uniform(attrs)
    if uniform is not None:
        count = uniform[0]
        return list(in_shapes), [(count,), (count + 1,)]
    bins = in_shapes[1]
    if bins is None or _edge_count(bins) == 0:
        return list(in_shapes), [None, None]
    return list(in_shapes), [(bins[0] - 1,), bins]


def _type(attrs, in_types):
    return list(in_types), ["int64", in_types[0]]


register(OpDef(
    "_histogram", inputs=("data", "bins"),
    input_filter=lambda a: ("data",) if a["bin_cnt"] is not None else ("data", "bins"),
    attrs={"bin_cnt": Int(default=None, doc="number of equal bins (with range)"),
           "range": _Range(default=None, doc="(lo, hi) of the equal bins (with bin_cnt)")},
    num_outputs=2, compute=_histogram, infer_shape=_shape, infer_type=_type,
    host_sync=lambda attrs: attrs["bin_cnt"] is None,  # bins input: the monotonicity check
    nondiff_inputs=("data", "bins"),
    doc="Counts of the input's values per bin (int64) and the bin edges: equal bins from "
        "bin_cnt and range, or the edges given as the input bins.",
    example="nd._internal._histogram(nd.array([0, 1, 2, 2]), bin_cnt=2, range=(0, 2))"
            "  # [[1, 3], [0., 1., 2.]]"))
