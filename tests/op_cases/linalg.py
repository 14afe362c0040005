"""Cases for ``ops/linalg.py``: ``dot`` (1-D, 2-D, N-d, every transpose), ``batch_dot``,
``_linalg_gemm2`` and ``_linalg_gemm``, against ``np.tensordot`` / ``np.matmul``."""

from __future__ import annotations

import numpy as np

from op_harness import OpCase


def _dot_ref(a, b, transpose_a=False, transpose_b=False):
    """MXNet's dot: transpose_a contracts a's first axis, transpose_b b's last axis."""
    out = np.tensordot(a, b, axes=([0 if transpose_a else -1], [-1 if transpose_b else 0]))
    return out.reshape(out.shape or (1,))


def _t(x, flag):
    return np.swapaxes(x, -1, -2) if flag else x


def _batch_dot_ref(a, b, transpose_a=False, transpose_b=False):
    return np.matmul(_t(a, transpose_a), _t(b, transpose_b))


def _gemm2_ref(a, b, transpose_a=False, transpose_b=False, alpha=1.0, axis=-2):
    """swapaxes(row axis, -2), matmul, swap back: the equivalence MXNet documents."""
    row = axis % a.ndim
    a, b = np.swapaxes(a, row, -2), np.swapaxes(b, row, -2)
    out = alpha * np.matmul(_t(a, transpose_a), _t(b, transpose_b))
    return np.swapaxes(out, row, -2)


def _gemm_ref(a, b, c, beta=1.0, **attrs):
    return _gemm2_ref(a, b, **attrs) + beta * c


def _dot(sa, sb, case_id, **attrs):
    return OpCase("dot", shapes=[sa, sb], attrs=attrs, ref=_dot_ref, id=case_id)


CASES = [
    _dot((2, 3), (3, 4), "2d"),
    _dot((3,), (3,), "vectors"),
    _dot((2, 3), (3,), "matrix-vector"),
    _dot((3,), (3, 4), "vector-matrix"),
    _dot((2, 3, 4), (4, 5, 2), "nd"),
    _dot((3, 2), (3, 4), "ta", transpose_a=True),
    _dot((2, 3), (4, 3), "tb", transpose_b=True),
    _dot((3, 2), (4, 3), "ta-tb", transpose_a=True, transpose_b=True),
    _dot((4, 2, 3), (4, 5), "nd-ta", transpose_a=True),
    _dot((2, 3), (4, 5, 3), "nd-tb", transpose_b=True),
    _dot((3, 4, 2), (5, 2, 3), "nd-ta-tb", transpose_a=True, transpose_b=True),
    _dot((3,), (2, 3), "vector-tb", transpose_b=True),
    OpCase("batch_dot", shapes=[(2, 3, 4), (2, 4, 5)], ref=_batch_dot_ref),
    OpCase("batch_dot", shapes=[(2, 4, 3), (2, 4, 5)], attrs={"transpose_a": True},
           ref=_batch_dot_ref, id="ta"),
    OpCase("batch_dot", shapes=[(2, 3, 4), (2, 5, 4)], attrs={"transpose_b": True},
           ref=_batch_dot_ref, id="tb"),
    OpCase("batch_dot", shapes=[(2, 2, 4, 3), (2, 2, 5, 4)],
           attrs={"transpose_a": True, "transpose_b": True}, ref=_batch_dot_ref, id="4d-ta-tb"),
    OpCase("_linalg_gemm2", shapes=[(2, 3), (3, 4)], ref=_gemm2_ref),
    OpCase("_linalg_gemm2", shapes=[(5, 3, 2), (5, 4, 3)],
           attrs={"transpose_a": True, "transpose_b": True, "alpha": 2.5},
           ref=_gemm2_ref, id="batch-ta-tb-alpha"),
    OpCase("_linalg_gemm2", shapes=[(2, 3, 5, 4), (2, 4, 5, 6)], attrs={"axis": 1},
           ref=_gemm2_ref, id="axis1"),
    OpCase("_linalg_gemm2", shapes=[(2, 3), (4, 3)], attrs={"transpose_b": True, "alpha": -1},
           ref=_gemm2_ref, id="tb"),
    OpCase("_linalg_gemm", shapes=[(2, 3), (3, 4), (2, 4)], attrs={"alpha": 2.0, "beta": 0.5},
           ref=_gemm_ref),
    OpCase("_linalg_gemm", shapes=[(3, 3, 2), (3, 4, 3), (3, 2, 4)],
           attrs={"transpose_a": True, "transpose_b": True, "beta": -1.5},
           ref=_gemm_ref, id="batch-ta-tb"),
]
