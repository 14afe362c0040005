"""Batched linear algebra beyond products: ``_linalg_potrf``, ``potri``, ``trsm``, ``trmm``,
``syrk``, ``sumlogdiag``, ``inverse``, ``det``, ``slogdet``, ``extractdiag``, ``makediag``,
``extracttrian``, ``maketrian`` (``nd.linalg.<name>``, alias ``linalg_<name>``), and ``diag``
with its hidden gradient ``_backward_diag``.

Every ``_linalg_*`` op works on the last two axes and batches over the leading ones, as in
MXNet; a reduction of one matrix (``det``, ``slogdet``, ``sumlogdiag``) has shape ``(1,)``.
The triangular ops read only their triangle: ``potrf`` factors the symmetric matrix given by
the lower (``lower=False``: upper) triangle, ``potri``, ``trsm`` and ``trmm`` ignore the other
triangle of ``A``, and their gradients for ``A`` are zero there. ``potrf``'s gradient is MXNet's
symmetric one: the gradient with respect to a symmetric ``A`` (each off-diagonal pair shares
it), not the derivative of the lower triangle alone. ``extracttrian`` lists a lower triangle
row by row and an upper triangle column by column (MXNet's order).

All gradients are ops: ``inverse`` gives ``-A^-T g A^-T`` (``linalg_gemm2``), ``det``
``g * det * A^-T``, ``potrf`` the Cholesky backward ``sym(L^-T Phi(L^T g) L^-1)`` made of
``trsm``/``gemm2``/``extracttrian`` calls; the structural ops are each other's gradients.

Deliberate differences from MXNet: the decompositions take float32 and float64 only (as
MXNet), but the structural ops (``extractdiag``, ``makediag``, ``extracttrian``,
``maketrian``, ``diag``) take any dtype; a singular matrix in ``inverse``, ``potri`` or
``trsm`` raises MXNetError (MXNet's ``trsm``/``potri`` return inf/nan), and so does the
gradient of ``det``/``slogdet`` at a singular matrix (MXNet gives zeros); on gpu, CuPy by
default does not check for a failed Cholesky or a singular matrix and returns NaNs or infs.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> potrf = ops.get("_linalg_potrf")
    >>> potrf.compute(np, np.array([[4.0, 1.0], [1.0, 4.25]]), **potrf.parse_attrs({}))
    array([[2. , 0. ],
           [0.5, 2. ]])
    >>> ops.get("linalg_det").infer_shape({}, [(5, 3, 3)])[1]
    [(5,)]
"""

from __future__ import annotations

import math

import numpy as np

from ..base import MXNetError
from .attrs import Bool, Float, Int
from .opdef import OpDef, register
from .rules import check_float

__all__ = []

_FLOATS = ("float32", "float64")


# -- shared checks and helpers ----------------------------------------------------------------



def _float_type(op, num_outputs=1):
    """All inputs and outputs share one dtype, which must be float32 or float64."""

    def rule(attrs, in_types):
        known = [t for t in in_types if t is not None]
        for t in known:
            if t not in _FLOATS:
                raise MXNetError(f"{op}: supports float32 and float64 only, got {t}")
            if t != known[0]:
                raise MXNetError(f"{op}: inputs have different dtypes {in_types}")
        dtype = known[0] if known else None
        return [dtype] * len(in_types), [dtype] * num_outputs

    return rule


def _square(op, shape, name="A"):
    """The size n of a stack of n x n matrices of shape ``shape``, else MXNetError."""
    if len(shape) < 2:
        raise MXNetError(f"{op}: input {name} must have at least 2 dims (a stack of "
                         f"matrices), got shape {tuple(shape)}")
    if shape[-1] != shape[-2]:
        raise MXNetError(f"{op}: input {name} must be a stack of square matrices, got shape "
                         f"{tuple(shape)}")
    return shape[-1]


def _batch_out(shape):
    """The shape of one value per matrix: the batch axes, or ``(1,)`` for one matrix."""
    return tuple(shape[:-2]) or (1,)


def _mt(xp, a):
    return xp.swapaxes(a, -1, -2)


def _keep_tri(xp, a, lower, k=0):
    """``a`` with everything outside its lower (upper) triangle set to zero, batched."""
    n, m = a.shape[-2], a.shape[-1]
    mask = xp.tri(n, m, k, dtype=bool) if lower else ~xp.tri(n, m, k - 1, dtype=bool)
    return xp.where(mask, a, xp.zeros((), dtype=a.dtype))


def _scaled(x, alpha):
    return x if alpha == 1 else x * x.dtype.type(alpha)


def _linalg_call(op, fn, *args, what="the matrix is singular"):
    try:
        return fn(*args)
    except np.linalg.LinAlgError as err:
        raise MXNetError(f"{op}: {what} ({err})") from None


def _shape_rule(out_fn):
    """An ``infer_shape`` for one-input ops: unknown in, unknown out."""

    def rule(attrs, in_shapes):
        if in_shapes[0] is None:
            return list(in_shapes), [None]
        outs = out_fn(attrs, in_shapes[0])
        return list(in_shapes), list(outs) if isinstance(outs, list) else [outs]

    return rule


# -- gradient building blocks (ops only) ------------------------------------------------------

def _f_mt(F, x):
    return F.swapaxes(x, dim1=-1, dim2=-2)


def _f_tri(F, x, lower=True):
    """The lower (upper) triangle of ``x``, the rest zero."""
    return F.linalg_maketrian(F.linalg_extracttrian(x, lower=lower), lower=lower)


def _f_per_matrix(F, g, a_shape, tail):
    """``g`` (one value per matrix) reshaped to broadcast against the matrices."""
    return F.reshape(g, shape=tuple(a_shape[:-2]) + tail)


def _register(name, compute, infer_shape, grad, doc, example, attrs=None, inputs=("A",),
              num_outputs=1, floats=True):
    register(OpDef(
        name, aliases=(name[1:],), inputs=inputs, attrs=attrs or {}, compute=compute,
        infer_shape=infer_shape, grad=grad, num_outputs=num_outputs,
        infer_type=_float_type(name, num_outputs) if floats else None, doc=doc,
        example=example))


# -- potrf, potri ---------------------------------------------------------------------------

def _potrf_compute(xp, a, lower=True):
    check_float("_linalg_potrf", a, dtypes=_FLOATS)
    _square("_linalg_potrf", a.shape)
    low = a if lower else _mt(xp, a)
    sym = _keep_tri(xp, low, True) + _mt(xp, _keep_tri(xp, low, True, -1))
    factor = _linalg_call("_linalg_potrf", xp.linalg.cholesky, sym,
                          what="the input is not symmetric positive definite (Cholesky failed)")
    return factor if lower else xp.ascontiguousarray(_mt(xp, factor))


def _same_square(op):
    """``infer_shape`` of an op whose output has the shape of its square matrices."""

    def out(attrs, a):
        _square(op, a)
        return tuple(a)

    return _shape_rule(out)


def _potrf_grad(F, ins, outs, gouts, lower=True):
    factor, gbar = outs[0], gouts[0]
    if not lower:
        factor, gbar = _f_mt(F, factor), _f_mt(F, gbar)
    prod = F.linalg_gemm2(factor, gbar, transpose_a=True)
    phi = _f_tri(F, prod) - F._mul_scalar(
        F.linalg_makediag(F.linalg_extractdiag(prod)), scalar=0.5)
    s = F.linalg_trsm(factor, F.linalg_trsm(factor, phi, transpose=True), rightside=True)
    return [F._mul_scalar(s + _f_mt(F, s), scalar=0.5)]


_LOWER = {"lower": Bool(default=True, doc="use (and return) the lower triangle; False: upper")}

_register(
    "_linalg_potrf", _potrf_compute, _same_square("_linalg_potrf"), _potrf_grad, attrs=_LOWER,
    doc="Cholesky factor L (A = L L^T) of symmetric positive-definite matrices, batched; "
        "reads only the lower (lower=False: upper, A = U^T U) triangle of A.",
    example="nd.linalg.potrf(nd.array([[4, 1], [1, 4.25]]))  # [[2, 0], [0.5, 2]]")


def _potri_compute(xp, a, lower=True):
    check_float("_linalg_potri", a, dtypes=_FLOATS)
    _square("_linalg_potri", a.shape)
    low = _keep_tri(xp, a if lower else _mt(xp, a), True)
    inv = _linalg_call("_linalg_potri", xp.linalg.inv, low,
                       what="the triangular factor is singular (a zero on its diagonal)")
    return xp.matmul(_mt(xp, inv), inv)


def _potri_grad(F, ins, outs, gouts, lower=True):
    a, out, g = ins[0], outs[0], gouts[0]
    low = _f_tri(F, a if lower else _f_mt(F, a))
    m = F.linalg_gemm2(F.linalg_gemm2(out, g), out)
    lbar = _f_tri(F, F.linalg_gemm2(m + _f_mt(F, m), low, alpha=-1.0))
    return [lbar if lower else _f_mt(F, lbar)]


_register(
    "_linalg_potri", _potri_compute, _same_square("_linalg_potri"), _potri_grad, attrs=_LOWER,
    doc="Inverse of B = A A^T from its Cholesky factor A (lower triangle; lower=False: "
        "A upper and B = A^T A), batched: out = A^-T A^-1.",
    example="nd.linalg.potri(nd.array([[2, 0], [0.5, 2]]))  # [[0.2656, -0.0625], ...]")


# -- trsm, trmm -----------------------------------------------------------------------------

_TRI_ATTRS = {
    "transpose": Bool(default=False, doc="use the transpose of the triangular matrix A"),
    "rightside": Bool(default=False, doc="A multiplies from the right: B op(A)"),
    "lower": Bool(default=True, doc="A is lower triangular; False: upper"),
    "alpha": Float(default=1.0, doc="scale of the result"),
}


def _tri_shape(op, attrs, a, b):
    n = _square(op, a)
    if len(b) != len(a):
        raise MXNetError(f"{op}: A and B must have the same number of dims, got shapes "
                         f"{tuple(a)} and {tuple(b)}")
    if tuple(a[:-2]) != tuple(b[:-2]):
        raise MXNetError(f"{op}: A and B must have the same leading (batch) dims, got shapes "
                         f"{tuple(a)} and {tuple(b)}")
    side, k = ("columns", b[-1]) if attrs["rightside"] else ("rows", b[-2])
    if k != n:
        raise MXNetError(f"{op}: incompatible matrix dimensions: A has shape {tuple(a)} but B "
                         f"{tuple(b)} has {k} {side} (rightside={attrs['rightside']})")
    return tuple(b)


def _tri_rule(op):
    def rule(attrs, in_shapes):
        a, b = in_shapes
        if a is None or b is None:
            return list(in_shapes), [b]
        return list(in_shapes), [_tri_shape(op, attrs, a, b)]

    return rule


def _tri_operand(xp, a, transpose, lower):
    tri = _keep_tri(xp, a, lower)
    return _mt(xp, tri) if transpose else tri


def _trsm_compute(xp, a, b, transpose=False, rightside=False, lower=True, alpha=1.0):
    check_float("_linalg_trsm", a, b, dtypes=_FLOATS)
    _tri_shape("_linalg_trsm", {"rightside": rightside}, a.shape, b.shape)
    op_a = _tri_operand(xp, a, transpose, lower)
    what = "the triangular matrix A is singular (a zero on its diagonal)"
    if rightside:  # X op(A) = B  <=>  op(A)^T X^T = B^T
        out = _mt(xp, _linalg_call("_linalg_trsm", xp.linalg.solve, _mt(xp, op_a), _mt(xp, b),
                                   what=what))
    else:
        out = _linalg_call("_linalg_trsm", xp.linalg.solve, op_a, b, what=what)
    return _scaled(xp.ascontiguousarray(out), alpha)


def _trsm_grad(F, ins, outs, gouts, transpose=False, rightside=False, lower=True, alpha=1.0):
    a, x, g = ins[0], outs[0], gouts[0]
    # y = op(A)^-T g (left) or g op(A)^-T (right); B's gradient is alpha * y.
    y = F.linalg_trsm(a, g, transpose=not transpose, rightside=rightside, lower=lower)
    if rightside:
        abar = F.linalg_gemm2(y, x, transpose_a=True, alpha=-1.0) if transpose else \
            F.linalg_gemm2(x, y, transpose_a=True, alpha=-1.0)
    else:
        abar = F.linalg_gemm2(x, y, transpose_b=True, alpha=-1.0) if transpose else \
            F.linalg_gemm2(y, x, transpose_b=True, alpha=-1.0)
    return [_f_tri(F, abar, lower), F._mul_scalar(y, scalar=alpha)]


_register(
    "_linalg_trsm", _trsm_compute, _tri_rule("_linalg_trsm"), _trsm_grad, attrs=_TRI_ATTRS,
    inputs=("A", "B"),
    doc="Solves op(A) X = alpha B (rightside: X op(A) = alpha B) for triangular A, batched.",
    example="nd.linalg.trsm(nd.array([[1, 0], [1, 1]]), nd.array([[2, 2], [4, 4]]), "
            "alpha=0.5)  # [[1, 1], [1, 1]]")


def _trmm_compute(xp, a, b, transpose=False, rightside=False, lower=True, alpha=1.0):
    check_float("_linalg_trmm", a, b, dtypes=_FLOATS)
    _tri_shape("_linalg_trmm", {"rightside": rightside}, a.shape, b.shape)
    op_a = _tri_operand(xp, a, transpose, lower)
    return _scaled(xp.matmul(b, op_a) if rightside else xp.matmul(op_a, b), alpha)


def _trmm_grad(F, ins, outs, gouts, transpose=False, rightside=False, lower=True, alpha=1.0):
    a, b, g = ins[0], ins[1], gouts[0]
    bbar = F.linalg_trmm(a, g, transpose=not transpose, rightside=rightside, lower=lower,
                         alpha=alpha)
    if rightside:
        abar = F.linalg_gemm2(g, b, transpose_a=True, alpha=alpha) if transpose else \
            F.linalg_gemm2(b, g, transpose_a=True, alpha=alpha)
    else:
        abar = F.linalg_gemm2(b, g, transpose_b=True, alpha=alpha) if transpose else \
            F.linalg_gemm2(g, b, transpose_b=True, alpha=alpha)
    return [_f_tri(F, abar, lower), bbar]


_register(
    "_linalg_trmm", _trmm_compute, _tri_rule("_linalg_trmm"), _trmm_grad, attrs=_TRI_ATTRS,
    inputs=("A", "B"),
    doc="alpha op(A) B (rightside: alpha B op(A)) for triangular A, batched.",
    example="nd.linalg.trmm(nd.array([[1, 0], [1, 1]]), nd.ones((2, 3))).shape  # (2, 3)")


# -- syrk, sumlogdiag -------------------------------------------------------------------------

def _syrk_out(attrs, a):
    if len(a) < 2:
        raise MXNetError(f"_linalg_syrk: input A must have at least 2 dims, got shape {a}")
    k = a[-1] if attrs["transpose"] else a[-2]
    return tuple(a[:-2]) + (k, k)


def _syrk_compute(xp, a, transpose=False, alpha=1.0):
    check_float("_linalg_syrk", a, dtypes=_FLOATS)
    _syrk_out({"transpose": transpose}, a.shape)
    out = xp.matmul(_mt(xp, a), a) if transpose else xp.matmul(a, _mt(xp, a))
    return _scaled(out, alpha)


def _syrk_grad(F, ins, outs, gouts, transpose=False, alpha=1.0):
    a, g = ins[0], gouts[0]
    if transpose:
        return [F.linalg_gemm2(a, g, alpha=alpha)
                + F.linalg_gemm2(a, g, transpose_b=True, alpha=alpha)]
    return [F.linalg_gemm2(g, a, alpha=alpha) + F.linalg_gemm2(g, a, transpose_a=True,
                                                                alpha=alpha)]


_register(
    "_linalg_syrk", _syrk_compute, _shape_rule(_syrk_out), _syrk_grad,
    attrs={"transpose": Bool(default=False, doc="compute alpha A^T A instead of alpha A A^T"),
           "alpha": Float(default=1.0, doc="scale of the result")},
    doc="alpha A A^T (transpose: alpha A^T A), batched.",
    example="nd.linalg.syrk(nd.ones((2, 3))).shape  # (2, 2)")


def _reduce_out(op):
    """Output shape of an op giving one value per square matrix."""

    def out(attrs, a):
        _square(op, a)
        return _batch_out(a)

    return out


def _sumlogdiag_compute(xp, a):
    check_float("_linalg_sumlogdiag", a, dtypes=_FLOATS)
    _square("_linalg_sumlogdiag", a.shape)
    return xp.log(xp.diagonal(a, 0, -2, -1)).sum(axis=-1).reshape(_batch_out(a.shape))


def _sumlogdiag_grad(F, ins, outs, gouts):
    a = ins[0]
    coef = _f_per_matrix(F, gouts[0], a.shape, (1,))
    return [F.linalg_makediag(F.broadcast_div(coef, F.linalg_extractdiag(a)))]


_register(
    "_linalg_sumlogdiag", _sumlogdiag_compute, _shape_rule(_reduce_out("_linalg_sumlogdiag")),
    _sumlogdiag_grad,
    doc="Sum of the natural logs of the diagonal of square matrices, batched (shape (1,) "
        "for one matrix).",
    example="nd.linalg.sumlogdiag(nd.array([[1, 1], [1, 7]]))  # [1.9459]")


# -- inverse, det, slogdet --------------------------------------------------------------------

def _inverse_compute(xp, a):
    check_float("_linalg_inverse", a, dtypes=_FLOATS)
    _square("_linalg_inverse", a.shape)
    return _linalg_call("_linalg_inverse", xp.linalg.inv, a)


def _inverse_grad(F, ins, outs, gouts):
    inv, g = outs[0], gouts[0]
    return [F.linalg_gemm2(F.linalg_gemm2(inv, g, transpose_a=True), inv, transpose_b=True,
                           alpha=-1.0)]


_register(
    "_linalg_inverse", _inverse_compute, _same_square("_linalg_inverse"), _inverse_grad,
    doc="Inverse of square matrices, batched.",
    example="nd.linalg.inverse(nd.array([[1, 4], [2, 3]]))  # [[-0.6, 0.8], [0.4, -0.2]]")


def _det_compute(xp, a):
    check_float("_linalg_det", a, dtypes=_FLOATS)
    _square("_linalg_det", a.shape)
    return xp.linalg.det(a).reshape(_batch_out(a.shape))


def _inv_t_scaled(F, a, coef):
    """``coef`` (one value per matrix) times ``A^-T``."""
    scale = _f_per_matrix(F, coef, a.shape, (1, 1))
    return F.broadcast_mul(scale, _f_mt(F, F.linalg_inverse(a)))


def _det_grad(F, ins, outs, gouts):
    return [_inv_t_scaled(F, ins[0], gouts[0] * outs[0])]


_register(
    "_linalg_det", _det_compute, _shape_rule(_reduce_out("_linalg_det")), _det_grad,
    doc="Determinant of square matrices, batched (shape (1,) for one matrix).",
    example="nd.linalg.det(nd.array([[1, 4], [2, 3]]))  # [-5]")


def _slogdet_compute(xp, a):
    check_float("_linalg_slogdet", a, dtypes=_FLOATS)
    _square("_linalg_slogdet", a.shape)
    sign, logabs = xp.linalg.slogdet(a)
    out = _batch_out(a.shape)
    return sign.astype(a.dtype).reshape(out), logabs.astype(a.dtype).reshape(out)


def _slogdet_shape(attrs, a):
    out = _reduce_out("_linalg_slogdet")(attrs, a)
    return [out, out]


def _slogdet_grad(F, ins, outs, gouts):
    return [_inv_t_scaled(F, ins[0], gouts[1])]  # the sign has no gradient


_register(
    "_linalg_slogdet", _slogdet_compute, _shape_rule(_slogdet_shape), _slogdet_grad,
    num_outputs=2,
    doc="Sign and log of the absolute determinant of square matrices, batched (two outputs; "
        "only logabsdet has a gradient).",
    example="sign, logabsdet = nd.linalg.slogdet(nd.array([[2, 3], [1, 4]]))  # [1], [1.6094]")


# -- extractdiag, makediag, extracttrian, maketrian -------------------------------------------

_OFFSET = {"offset": Int(default=0, doc="diagonal offset: > 0 above, < 0 below the main one")}
_TRIAN_ATTRS = {**_OFFSET, "lower": Bool(default=True, doc="with offset=0: the lower "
                                                          "triangle; False: the upper one")}


def _inner_size(op, a, offset):
    """n - |offset| for a stack of n x n matrices, checking the diagonal exists."""
    n = _square(op, a)
    if abs(offset) >= n:
        raise MXNetError(f"{op}: offset={offset} is out of range for {n} x {n} matrices "
                         f"(expected |offset| < {n})")
    return n - abs(offset)


def _diag_index(xp, m, offset):
    idx = xp.arange(m)
    return idx + max(-offset, 0), idx + max(offset, 0)


def _extractdiag_compute(xp, a, offset=0):
    _inner_size("_linalg_extractdiag", a.shape, offset)
    return xp.diagonal(a, offset, -2, -1).copy()


def _makediag_out(attrs, a):
    if len(a) < 1:
        raise MXNetError(f"_linalg_makediag: input A must have at least 1 dim, got shape {a}")
    n = a[-1] + abs(attrs["offset"])
    return tuple(a[:-1]) + (n, n)


def _makediag_compute(xp, a, offset=0):
    out = xp.zeros(_makediag_out({"offset": offset}, a.shape), dtype=a.dtype)
    rows, cols = _diag_index(xp, a.shape[-1], offset)
    out[..., rows, cols] = a
    return out


_register(
    "_linalg_extractdiag", _extractdiag_compute,
    _shape_rule(lambda attrs, a: tuple(a[:-2]) + (
        _inner_size("_linalg_extractdiag", a, attrs["offset"]),)),
    lambda F, ins, outs, gouts, offset=0: [F.linalg_makediag(gouts[0], offset=offset)],
    attrs=_OFFSET, floats=False,
    doc="The diagonal (offset: above > 0, below < 0) of square matrices, batched.",
    example="nd.linalg.extractdiag(nd.array([[1, 2], [3, 4]]))  # [1, 4]")
_register(
    "_linalg_makediag", _makediag_compute, _shape_rule(_makediag_out),
    lambda F, ins, outs, gouts, offset=0: [F.linalg_extractdiag(gouts[0], offset=offset)],
    attrs=_OFFSET, floats=False,
    doc="Square matrices with the last axis of A on their diagonal (offset: above > 0, "
        "below < 0) and zeros elsewhere, batched.",
    example="nd.linalg.makediag(nd.array([1, 2]))  # [[1, 0], [0, 2]]")


def _trian_index(xp, n, offset, lower):
    """(rows, cols) of the entries extracttrian reads, in MXNet's order: a lower triangle
    row by row, an upper triangle column by column."""
    rows, cols = np.tril_indices(n, -abs(offset))
    if offset > 0 or (offset == 0 and not lower):
        rows, cols = cols, rows
    return xp.asarray(rows), xp.asarray(cols)


def _extracttrian_out(attrs, a):
    m = _inner_size("_linalg_extracttrian", a, attrs["offset"])
    return tuple(a[:-2]) + (m * (m + 1) // 2,)


def _extracttrian_compute(xp, a, offset=0, lower=True):
    _inner_size("_linalg_extracttrian", a.shape, offset)
    rows, cols = _trian_index(xp, a.shape[-1], offset, lower)
    return a[..., rows, cols]


def _maketrian_out(attrs, a):
    if len(a) < 1:
        raise MXNetError(f"_linalg_maketrian: input A must have at least 1 dim, got shape {a}")
    size = a[-1]
    m = (math.isqrt(8 * size + 1) - 1) // 2
    if m * (m + 1) // 2 != size or m == 0:
        raise MXNetError(f"_linalg_maketrian: the last axis of A (shape {tuple(a)}) must hold "
                         f"a triangle of m (m + 1) / 2 entries; {size} is not such a number")
    n = m + abs(attrs["offset"])
    return tuple(a[:-1]) + (n, n)


def _maketrian_compute(xp, a, offset=0, lower=True):
    shape = _maketrian_out({"offset": offset}, a.shape)
    out = xp.zeros(shape, dtype=a.dtype)
    rows, cols = _trian_index(xp, shape[-1], offset, lower)
    out[..., rows, cols] = a
    return out


_register(
    "_linalg_extracttrian", _extracttrian_compute, _shape_rule(_extracttrian_out),
    lambda F, ins, outs, gouts, offset=0, lower=True: [
        F.linalg_maketrian(gouts[0], offset=offset, lower=lower)],
    attrs=_TRIAN_ATTRS, floats=False,
    doc="The lower (upper) triangle of square matrices as a vector, batched; offset > 0 "
        "takes the triangle above that diagonal, offset < 0 the one below.",
    example="nd.linalg.extracttrian(nd.array([[1, 2], [3, 4]]))  # [1, 3, 4]")
_register(
    "_linalg_maketrian", _maketrian_compute, _shape_rule(_maketrian_out),
    lambda F, ins, outs, gouts, offset=0, lower=True: [
        F.linalg_extracttrian(gouts[0], offset=offset, lower=lower)],
    attrs=_TRIAN_ATTRS, floats=False,
    doc="Triangular matrices from vectors in extracttrian's order (the inverse of "
        "extracttrian), batched.",
    example="nd.linalg.maketrian(nd.array([1, 3, 4]))  # [[1, 0], [3, 4]]")


# -- diag -----------------------------------------------------------------------------------

_DIAG_ATTRS = {
    "k": Int(default=0, doc="diagonal: > 0 above, < 0 below the main one"),
    "axis1": Int(default=0, doc="first axis of the matrices (ignored for a 1-D input)"),
    "axis2": Int(default=1, doc="second axis of the matrices (ignored for a 1-D input)"),
}


def _diag_axes(shape, k, axis1, axis2):
    """Normalized ``(axis1, axis2)`` after MXNet's checks (input of 2+ dims)."""
    ndim = len(shape)
    for name, axis in (("axis1", axis1), ("axis2", axis2)):
        if not -ndim <= axis < ndim:
            raise MXNetError(f"diag: {name}={axis} is out of range for an input of shape "
                             f"{tuple(shape)}")
    a1, a2 = axis1 % ndim, axis2 % ndim
    if a1 == a2:
        raise MXNetError(f"diag: axis1 and axis2 must differ, both refer to axis {a1}")
    if not -shape[a1] <= k <= shape[a2]:
        raise MXNetError(f"diag: diagonal k={k} does not exist for axes of sizes {shape[a1]} "
                         f"and {shape[a2]} (expected {-shape[a1]} <= k <= {shape[a2]})")
    return a1, a2


def _diag_out(attrs, shape):
    k = attrs["k"]
    if len(shape) == 0:
        raise MXNetError("diag: the input must have at least 1 dim, got a scalar (shape ())")
    if len(shape) == 1:
        return (shape[0] + abs(k),) * 2
    a1, a2 = _diag_axes(shape, k, attrs["axis1"], attrs["axis2"])
    size = max(0, min(shape[a1] + min(k, 0), shape[a2] - max(k, 0)))
    return tuple(d for i, d in enumerate(shape) if i not in (a1, a2)) + (size,)


def _diag_compute(xp, x, k=0, axis1=0, axis2=1):
    if x.ndim == 1:
        return _makediag_compute(xp, x, offset=k)
    a1, a2 = _diag_axes(x.shape, k, axis1, axis2)
    return xp.diagonal(x, k, a1, a2).copy()


def _diag_grad(F, ins, outs, gouts, k=0, axis1=0, axis2=1):
    return [F._backward_diag(gouts[0], ins[0], k=k, axis1=axis1, axis2=axis2)]


register(OpDef(
    "diag", attrs=_DIAG_ATTRS, compute=_diag_compute, infer_shape=_shape_rule(_diag_out),
    grad=_diag_grad,
    doc="The k-th diagonal along axis1, axis2 (as numpy.diagonal) of an N-d input, or a "
        "square matrix with a 1-D input on its k-th diagonal.",
    example="nd.diag(nd.array([[1, 2], [3, 4]]), k=1)  # [2]"))


def _backward_diag_compute(xp, g, x, k=0, axis1=0, axis2=1):
    if x.ndim == 1:
        return xp.diagonal(g, k).copy()
    a1, a2 = _diag_axes(x.shape, k, axis1, axis2)
    out = xp.zeros(x.shape, dtype=g.dtype)
    view = xp.moveaxis(out, (a1, a2), (-2, -1))
    rows, cols = _diag_index(xp, g.shape[-1], k)
    view[..., rows, cols] = g
    return out


register(OpDef(
    "_backward_diag", inputs=("ograd", "data"), attrs=_DIAG_ATTRS,
    compute=_backward_diag_compute,
    infer_shape=lambda attrs, s: (list(s), [s[1]]),
    infer_type=lambda attrs, t: (list(t), [t[0]]),
    grad=lambda F, ins, outs, gouts, **attrs: [F.diag(gouts[0], **attrs), None],
    nondiff_inputs=("data",),
    doc="Gradient of diag: ograd placed on the diagonal of zeros shaped like data (or, for a "
        "1-D data, the k-th diagonal of ograd)."))
