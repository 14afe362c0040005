"""Cases for ``ops/histogram.py`` (``_histogram``): equal bins from ``bin_cnt``/``range`` and
edges given as the input ``bins``, checked against ``numpy.histogram`` on random data and
against counts MXNet 1.9.1 printed for values on the edges, integer data, a degenerate range
and NaN. The op has no gradient.
"""

from __future__ import annotations

import numpy as np

from op_harness import OpCase


def _uniform_ref(data, bin_cnt, range):  # noqa: A002 (the op's attribute name)
    counts, edges = np.histogram(data.astype(np.float64), bin_cnt, range)
    return counts, edges.astype(data.dtype)


def _edges_ref(data, bins):
    counts, edges = np.histogram(data.astype(np.float64), bins.astype(np.float64))
    return counts, edges.astype(data.dtype)


def _fixed(*arrays):
    return lambda rng, dtype: [np.array(a, dtype=dtype) for a in arrays]


def _known(counts, edges):
    """A reference that returns what MXNet 1.9.1 printed for the case."""
    return lambda *inputs, **attrs: (np.array(counts), np.array(edges))


def _case(make_or_shapes, attrs, ref, case_id, dtypes=("float32", "float64")):
    inputs = {"shapes": make_or_shapes} if isinstance(make_or_shapes, list) else {
        "make": make_or_shapes}
    return OpCase("_histogram", attrs=attrs, ref=ref, grad=False, dtypes=dtypes, id=case_id,
                  **inputs)


def _random_with_bins(rng, dtype):
    bins = np.array([-1.5, -0.2, 0.0, 0.7, 1.9], dtype=dtype)
    return [rng.uniform(-2, 2, size=(4, 5)).astype(dtype), bins]


_INT32 = ("int32",)

_CASES = [
    _case([(3, 4)], {"bin_cnt": 5, "range": (-2, 2)}, _uniform_ref, "uniform"),
    _case([(50,)], {"bin_cnt": 7, "range": (-1.3, 0.9)}, _uniform_ref, "part-outside"),
    _case([(2, 3, 4)], {"bin_cnt": 1, "range": (-2, 2)}, _uniform_ref, "one-bin"),
    _case(_random_with_bins, {}, _edges_ref, "bins-input"),
    _case(_fixed([0, 1, 2, 2, 3, 7.5, 9, 10]), {"bin_cnt": 5, "range": (0, 10)},
          _known([2, 3, 0, 1, 2], [0, 2, 4, 6, 8, 10]), "mxnet-on-edges"),
    _case(_fixed([[0, 1], [2, 2], [3, 4]]), {"bin_cnt": 5, "range": (0, 5)},
          _known([1, 1, 2, 1, 1], [0, 1, 2, 3, 4, 5]), "mxnet-doc-example"),
    _case(_fixed([-1, 0, 1, 2, 3, 11], [0, 1, 1.5, 3]), {},
          _known([1, 1, 2], [0, 1, 1.5, 3]), "mxnet-bins-input"),
    _case(_fixed([-1, 0, 1, 2, 3, 11]), {"bin_cnt": 3, "range": (2, 2)},
          _known([0, 1, 0], [1.5, 11 / 6, 13 / 6, 2.5]), "degenerate-range"),
    _case(_fixed([np.nan, -1, 0, 1, 2, 3, 11]), {"bin_cnt": 3, "range": (0, 3)},
          _known([1, 1, 2], [0, 1, 2, 3]), "nan-not-counted"),
    _case(_fixed([0, 1, 2, 3, 4, 5]), {"bin_cnt": 3, "range": (0, 5)},
          _known([1, 2, 3], [0, 1, 3, 5]), "int-edges", dtypes=_INT32),
]

CASES = _CASES
