"""Cases for ``ops/linalg_extra.py``: the batched ``_linalg_*`` decompositions, solves and
structural ops, and ``diag``, against NumPy (``np.linalg``, ``np.tril``, ``np.diagonal``).

Inputs are well conditioned: symmetric positive-definite matrices for ``potrf``, triangular
factors with a diagonal near 2 for ``potri``/``trsm``/``sumlogdiag``, ``I * 2 + noise`` for
``inverse``/``det``. The triangular ops get a full random ``A``: they must ignore the other
triangle (forward) and give it a zero gradient (finite differences then agree).

``potrf``'s gradient is MXNet's symmetric one (the gradient for a symmetric ``A``), which is
not the derivative of its forward (that reads the lower triangle only) in a random direction,
so its cases have ``grad=False``; it is checked against MXNet 1.9.1 by
``test_mxnet_op_fixtures.py::test_gradient_matches_mxnet[potrf]``.
"""

from __future__ import annotations

import numpy as np

from op_harness import OpCase

TESTED_ELSEWHERE = {
    "_linalg_potrf": "its gradient: test_mxnet_op_fixtures.py::test_gradient_matches_mxnet"
                     "[potrf] (MXNet's symmetric gradient, not a derivative of the lower "
                     "triangle); forward cases below",
}


def _t(x):
    return np.swapaxes(x, -1, -2)


def _per_matrix(x):
    """One value per matrix: the batch shape, or (1,) for one matrix."""
    x = np.asarray(x)
    return x.reshape(x.shape or (1,))


# -- inputs -----------------------------------------------------------------------------------

def _spd(*shape):
    def make(rng, dtype):
        a = rng.uniform(-1, 1, shape)
        return [(a @ _t(a) + shape[-1] * np.eye(shape[-1])).astype(dtype)]

    return make


def _tri_full(*shapes):
    """A full matrix whose lower (upper) triangle is a well-conditioned triangular factor,
    then the other inputs, uniform in [-1, 1)."""
    def make(rng, dtype):
        a = rng.uniform(-1, 1, shapes[0]) * 0.5
        n = shapes[0][-1]
        a = a + 2 * np.eye(n)
        return [a.astype(dtype)] + [rng.uniform(-1, 1, s).astype(dtype) for s in shapes[1:]]

    return make


def _well(*shape):
    def make(rng, dtype):
        return [(rng.uniform(-1, 1, shape) + 2 * np.eye(shape[-1])).astype(dtype)]

    return make


# -- references -------------------------------------------------------------------------------

def _lower_of(a, lower):
    return np.tril(a) if lower else np.triu(a)


def _potrf_ref(a, lower=True):
    low = a if lower else _t(a)
    sym = np.tril(low) + _t(np.tril(low, -1))
    factor = np.linalg.cholesky(sym.astype(np.float64)).astype(a.dtype)
    return factor if lower else _t(factor)


def _potri_ref(a, lower=True):
    low = np.tril(a if lower else _t(a)).astype(np.float64)
    return np.linalg.inv(low @ _t(low)).astype(a.dtype)


def _op_tri(a, transpose, lower):
    tri = _lower_of(a, lower).astype(np.float64)
    return _t(tri) if transpose else tri


def _trsm_ref(a, b, transpose=False, rightside=False, lower=True, alpha=1.0):
    op = _op_tri(a, transpose, lower)
    out = b @ np.linalg.inv(op) if rightside else np.linalg.solve(op, b)
    return (alpha * out).astype(a.dtype)


def _trmm_ref(a, b, transpose=False, rightside=False, lower=True, alpha=1.0):
    op = _op_tri(a, transpose, lower)
    return (alpha * (b @ op if rightside else op @ b)).astype(a.dtype)


def _syrk_ref(a, transpose=False, alpha=1.0):
    return alpha * (_t(a) @ a if transpose else a @ _t(a))


def _sumlogdiag_ref(a):
    return _per_matrix(np.log(np.diagonal(a, 0, -2, -1)).sum(-1))


def _slogdet_ref(a):
    sign, logabs = np.linalg.slogdet(a.astype(np.float64))
    return _per_matrix(sign).astype(a.dtype), _per_matrix(logabs).astype(a.dtype)


def _makediag_ref(a, offset=0):
    n = a.shape[-1] + abs(offset)
    out = np.zeros(a.shape[:-1] + (n, n), a.dtype)
    for index in np.ndindex(a.shape[:-1]):
        out[index] = np.diag(a[index], offset)
    return out


def _trian_order(n, offset, lower):
    """MXNet's order, written out: lower triangles row by row, upper ones column by column."""
    if offset < 0 or (offset == 0 and lower):
        return [(i, j) for i in range(n) for j in range(n) if j <= i + offset]
    return [(i, j) for j in range(n) for i in range(n) if j >= i + offset]


def _extracttrian_ref(a, offset=0, lower=True):
    pairs = _trian_order(a.shape[-1], offset, lower)
    return np.stack([a[..., i, j] for i, j in pairs], axis=-1)


def _maketrian_ref(v, offset=0, lower=True):
    m = int((np.sqrt(8 * v.shape[-1] + 1) - 1) / 2)
    n = m + abs(offset)
    out = np.zeros(v.shape[:-1] + (n, n), v.dtype)
    for k, (i, j) in enumerate(_trian_order(n, offset, lower)):
        out[..., i, j] = v[..., k]
    return out


def _diag_ref(x, k=0, axis1=0, axis2=1):
    return np.diag(x, k) if x.ndim == 1 else np.diagonal(x, k, axis1, axis2)


# -- cases ------------------------------------------------------------------------------------

def _tri_cases(op, ref):
    cases = []
    for transpose in (False, True):
        for rightside in (False, True):
            for lower in (True, False):
                attrs = {"transpose": transpose, "rightside": rightside, "lower": lower,
                         "alpha": 1.5}
                b = (2, 4, 3) if rightside else (2, 3, 4)
                cid = "-".join(k for k in ("transpose", "rightside") if attrs[k]) or "plain"
                cases.append(OpCase(op, make=_tri_full((2, 3, 3), b), attrs=attrs, ref=ref,
                                    id=f"{cid}-{'lower' if lower else 'upper'}"))
    cases.append(OpCase(op, make=_tri_full((3, 3), (3, 2)), ref=ref, id="2d"))
    return cases


def _structural_cases():
    return [
        OpCase("_linalg_extractdiag", shapes=[(2, 4, 4)], ref=lambda a, offset=0: np.diagonal(
            a, offset, -2, -1), attrs={"offset": off}, id=f"offset{off}")
        for off in (0, 2, -1)
    ] + [
        OpCase("_linalg_makediag", shapes=[s], ref=_makediag_ref, attrs={"offset": off},
               id=f"offset{off}-{len(s)}d")
        for s, off in (((3,), 0), ((2, 3), 1), ((2, 1, 3), -2))
    ] + [
        OpCase("_linalg_extracttrian", shapes=[s], ref=_extracttrian_ref,
               attrs={"offset": off, "lower": low}, id=f"offset{off}-lower{low}")
        for s, off, low in (((4, 4), 0, True), ((2, 4, 4), 0, False), ((4, 4), 1, True),
                            ((2, 4, 4), -2, False), ((1, 1), 0, True))
    ] + [
        OpCase("_linalg_maketrian", shapes=[s], ref=_maketrian_ref,
               attrs={"offset": off, "lower": low}, id=f"offset{off}-lower{low}")
        for s, off, low in (((10,), 0, True), ((2, 6), 0, False), ((3,), 1, True),
                            ((2, 6), -1, False), ((1,), 0, True))
    ]


def _diag_cases():
    return [
        OpCase("diag", shapes=[(3,)], ref=_diag_ref, id="vector"),
        OpCase("diag", shapes=[(3,)], attrs={"k": -2}, ref=_diag_ref, id="vector-k-2"),
        OpCase("diag", shapes=[(3, 4)], attrs={"k": 1}, ref=_diag_ref, id="matrix-k1"),
        OpCase("diag", shapes=[(3, 4)], attrs={"k": -3}, ref=_diag_ref, id="matrix-empty"),
        OpCase("diag", shapes=[(2, 3, 4)], attrs={"k": -1, "axis1": 2, "axis2": 0},
               ref=_diag_ref, id="3d-axes"),
        OpCase("diag", shapes=[(2, 3, 4)], attrs={"axis1": -1, "axis2": -2}, ref=_diag_ref,
               id="3d-negative-axes"),
        OpCase("_backward_diag", shapes=[(2, 2), (2, 3, 4)], attrs={"k": 1, "axis1": 2,
                                                                   "axis2": 1},
               ref=_backward_diag_ref, grad_inputs=(0,), id="3d"),
        OpCase("_backward_diag", shapes=[(4, 4), (3,)], attrs={"k": 1},
               ref=_backward_diag_ref, grad_inputs=(0,), id="vector"),
    ]


def _backward_diag_ref(g, x, k=0, axis1=0, axis2=1):
    if x.ndim == 1:
        return np.diagonal(g, k).copy()
    out = np.zeros(x.shape, g.dtype)
    view = np.moveaxis(out, (axis1, axis2), (-2, -1))
    for i in range(g.shape[-1]):
        view[..., i + max(-k, 0), i + max(k, 0)] = g[..., i]
    return out


CASES = [
    OpCase("_linalg_potrf", make=_spd(3, 3), ref=_potrf_ref, grad=False),
    OpCase("_linalg_potrf", make=_spd(2, 4, 4), ref=_potrf_ref, grad=False, id="batch"),
    OpCase("_linalg_potrf", make=_spd(2, 3, 3), attrs={"lower": False}, ref=_potrf_ref,
           grad=False, id="upper"),
    OpCase("_linalg_potri", make=_tri_full((3, 3)), ref=_potri_ref),
    OpCase("_linalg_potri", make=_tri_full((2, 3, 3)), attrs={"lower": False},
           ref=_potri_ref, id="upper-batch"),
    *_tri_cases("_linalg_trsm", _trsm_ref),
    *_tri_cases("_linalg_trmm", _trmm_ref),
    OpCase("_linalg_syrk", shapes=[(2, 3)], attrs={"alpha": 2.0}, ref=_syrk_ref),
    OpCase("_linalg_syrk", shapes=[(2, 2, 3)], attrs={"transpose": True, "alpha": -0.5},
           ref=_syrk_ref, id="batch-transpose"),
    OpCase("_linalg_sumlogdiag", make=_tri_full((3, 3)), ref=_sumlogdiag_ref),
    OpCase("_linalg_sumlogdiag", make=_tri_full((2, 2, 3, 3)), ref=_sumlogdiag_ref,
           id="batch"),
    OpCase("_linalg_inverse", make=_well(3, 3), ref=np.linalg.inv),
    OpCase("_linalg_inverse", make=_well(2, 4, 4), ref=np.linalg.inv, id="batch"),
    OpCase("_linalg_det", make=_well(3, 3), ref=lambda a: _per_matrix(np.linalg.det(a))),
    OpCase("_linalg_det", make=_well(2, 3, 4, 4), ref=lambda a: _per_matrix(np.linalg.det(a)),
           id="batch"),
    OpCase("_linalg_slogdet", make=_well(3, 3), ref=_slogdet_ref),
    OpCase("_linalg_slogdet", make=_well(4, 3, 3), ref=_slogdet_ref, id="batch"),
    *_structural_cases(),
    *_diag_cases(),
]
