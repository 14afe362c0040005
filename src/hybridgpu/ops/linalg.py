"""Matrix products: ``dot``, ``batch_dot``, ``_linalg_gemm2`` and ``_linalg_gemm``.

* ``dot`` follows MXNet for N-d arrays: ``lhs`` is read as a matrix of shape
  ``(prod(lhs.shape[:-1]), lhs.shape[-1])`` and ``rhs`` as ``(rhs.shape[0],
  prod(rhs.shape[1:]))``, so the last axis of ``lhs`` meets the first axis of ``rhs``.
  ``transpose_a`` reads ``lhs`` as ``(lhs.shape[0], rest)`` transposed (its first axis is
  contracted), ``transpose_b`` reads ``rhs`` as ``(rest, rhs.shape[-1])`` transposed (its last
  axis is contracted). Two vectors give shape ``(1,)``.
* ``batch_dot``: matrix products over the last two axes of N-d (N >= 3) arrays with equal
  leading (batch) axes.
* ``_linalg_gemm2``: ``alpha * op(A) @ op(B)`` over matrices whose rows are ``axis`` and whose
  columns are the last axis; ``_linalg_gemm`` adds ``beta * C``.

Gradients are products of the same kind with transposes (``dot``'s are ``dot``s of the
matrix views, reshaped back when an input is not 2-D). ``forward_stype`` (sparse output) is
accepted for compatibility; only dense (``None``/``'default'``) storage exists in hybridgpu.
Unlike MXNet, integer and float16 inputs are allowed on cpu as well.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> dot = ops.get("dot")
    >>> dot.infer_shape(dot.parse_attrs({"transpose_a": True}), [(4, 2, 3), (4, 5)])[1]
    [(2, 3, 5)]
    >>> dot.compute(np, np.ones((2, 3)), np.ones((3, 4)), **dot.parse_attrs({})).shape
    (2, 4)
"""

from __future__ import annotations

import math

from ..base import MXNetError
from .attrs import Bool, Enum, Float, Int
from .opdef import OpDef, register
from .rules import merge_shapes, normalize_axis

__all__ = []


def _transpose_attrs():
    return {"transpose_a": Bool(default=False, doc="use the transpose of the first input"),
            "transpose_b": Bool(default=False, doc="use the transpose of the second input")}


def _stype_attr():
    return Enum((None, "csr", "default", "row_sparse"), default=None,
                doc="storage type of the output; only dense exists in hybridgpu")


def _check_stype(op, stype):
    if stype not in (None, "default"):
        raise MXNetError(f"{op}: forward_stype={stype!r} asks for sparse storage, which "
                         "hybridgpu does not have; leave it None or 'default'")


def _matmul_grads(mm, a, b, g, ta, tb):
    """Gradients of ``op(a) @ op(b)`` for output gradient ``g``, with ``mm(x, y, tx, ty)``
    computing ``op(x) @ op(y)`` (the usual four transpose cases)."""
    if not ta and not tb:
        return mm(g, b, False, True), mm(a, g, True, False)
    if ta and not tb:
        return mm(b, g, False, True), mm(a, g, False, False)
    if not ta:
        return mm(g, b, False, False), mm(g, a, True, False)
    return mm(b, g, True, True), mm(g, a, True, True)


# -- dot --------------------------------------------------------------------------------------

def _dot_views(lshape, rshape, ta, tb):
    """``(lhs matrix shape, rhs matrix shape, output shape, lhs k, rhs k)`` as stored."""
    if len(lshape) == 0 or len(rshape) == 0:
        raise MXNetError(f"dot: inputs must have at least one dimension, got {lshape} and "
                         f"{rshape}")
    if len(lshape) == 1 and len(rshape) == 1 and (ta or tb):
        raise MXNetError("dot: cannot transpose vectors (both inputs are 1-D)")
    if ta:
        lmat, lead, lk = (lshape[0], math.prod(lshape[1:])), lshape[1:], lshape[0]
    else:
        lmat, lead, lk = (math.prod(lshape[:-1]), lshape[-1]), lshape[:-1], lshape[-1]
    if tb:
        rmat, tail, rk = (math.prod(rshape[:-1]), rshape[-1]), rshape[:-1], rshape[-1]
    else:
        rmat, tail, rk = (rshape[0], math.prod(rshape[1:])), rshape[1:], rshape[0]
    return lmat, rmat, tuple(lead + tail) or (1,), lk, rk


def _dot_compute(xp, a, b, transpose_a=False, transpose_b=False, forward_stype=None):
    _check_stype("dot", forward_stype)
    lmat, rmat, out_shape, lk, rk = _dot_views(a.shape, b.shape, transpose_a, transpose_b)
    if lk != rk:
        raise MXNetError(f"dot: shapes {a.shape} and {b.shape} do not match: the contracted "
                         f"axes have sizes {lk} and {rk} (transpose_a={transpose_a}, "
                         f"transpose_b={transpose_b})")
    left = a.reshape(lmat)
    right = b.reshape(rmat)
    return xp.matmul(left.T if transpose_a else left,
                     right.T if transpose_b else right).reshape(out_shape)


def _dot_shape(attrs, in_shapes):
    a, b = in_shapes
    if a is None or b is None:
        return list(in_shapes), [None]
    ta, tb = attrs["transpose_a"], attrs["transpose_b"]
    lmat, rmat, out, lk, rk = _dot_views(a, b, ta, tb)
    if lk and rk and lk != rk:
        raise MXNetError(f"dot: shapes {a} and {b} do not match: the contracted axes have "
                         f"sizes {lk} and {rk} (transpose_a={ta}, transpose_b={tb})")
    k = lk or rk  # fill an unknown contracted size from the other input (deferred init)
    a = (k,) + a[1:] if ta else a[:-1] + (k,)
    b = b[:-1] + (k,) if tb else (k,) + b[1:]
    return [a, b], [out]


def _reshaped(F, x, have, want):
    return x if tuple(have) == tuple(want) else F.reshape(x, shape=tuple(want))


def _dot_grad(F, ins, outs, gouts, transpose_a=False, transpose_b=False, forward_stype=None):
    a, b = ins
    ashape, bshape = tuple(a.shape), tuple(b.shape)
    lmat, rmat, out_shape, _, _ = _dot_views(ashape, bshape, transpose_a, transpose_b)
    gmat = (lmat[1] if transpose_a else lmat[0], rmat[0] if transpose_b else rmat[1])
    left, right = _reshaped(F, a, ashape, lmat), _reshaped(F, b, bshape, rmat)
    g = _reshaped(F, gouts[0], out_shape, gmat)

    def mm(x, y, tx, ty):
        return F.dot(x, y, transpose_a=tx, transpose_b=ty)

    ga, gb = _matmul_grads(mm, left, right, g, transpose_a, transpose_b)
    return [_reshaped(F, ga, lmat, ashape), _reshaped(F, gb, rmat, bshape)]


register(OpDef(
    "dot", inputs=("lhs", "rhs"), attrs={**_transpose_attrs(), "forward_stype": _stype_attr()},
    compute=_dot_compute, infer_shape=_dot_shape, grad=_dot_grad,
    doc="Dot product: the last axis of lhs against the first axis of rhs (matrix product "
        "for 2-D inputs, inner product for vectors).",
    example="nd.dot(nd.ones((2, 3, 4)), nd.ones((4, 5))).shape  # (2, 3, 5)"))


# -- batch_dot --------------------------------------------------------------------------------

def _batch_dot_shape(attrs, in_shapes):
    a, b = in_shapes
    if a is None or b is None:
        return list(in_shapes), [None]
    ta, tb = attrs["transpose_a"], attrs["transpose_b"]
    if len(a) < 3 or len(a) != len(b):
        raise MXNetError(f"batch_dot: inputs must both be N-d arrays with N >= 3, got shapes "
                         f"{a} and {b}")
    try:
        batch = merge_shapes(a[:-2], b[:-2])
    except MXNetError:
        raise MXNetError(f"batch_dot: the leading (batch) dimensions of shapes {a} and {b} "
                         "must be equal") from None
    rows, lk = (a[-1], a[-2]) if ta else (a[-2], a[-1])
    rk, cols = (b[-1], b[-2]) if tb else (b[-2], b[-1])
    if lk and rk and lk != rk:
        raise MXNetError(f"batch_dot: shapes {a} and {b} do not match: the contracted axes have "
                         f"sizes {lk} and {rk} (transpose_a={ta}, transpose_b={tb})")
    return [batch + a[-2:], batch + b[-2:]], [batch + (rows, cols)]


def _batch_dot_compute(xp, a, b, transpose_a=False, transpose_b=False, forward_stype=None):
    _check_stype("batch_dot", forward_stype)
    _batch_dot_shape({"transpose_a": transpose_a, "transpose_b": transpose_b},
                     [a.shape, b.shape])
    left = xp.swapaxes(a, -1, -2) if transpose_a else a
    right = xp.swapaxes(b, -1, -2) if transpose_b else b
    return xp.matmul(left, right)


def _batch_dot_grad(F, ins, outs, gouts, transpose_a=False, transpose_b=False,
                    forward_stype=None):
    def mm(x, y, tx, ty):
        return F.batch_dot(x, y, transpose_a=tx, transpose_b=ty)

    return list(_matmul_grads(mm, ins[0], ins[1], gouts[0], transpose_a, transpose_b))


register(OpDef(
    "batch_dot", inputs=("lhs", "rhs"),
    attrs={**_transpose_attrs(), "forward_stype": _stype_attr()},
    compute=_batch_dot_compute, infer_shape=_batch_dot_shape, grad=_batch_dot_grad,
    doc="Matrix products over the last two axes of N-d (N >= 3) arrays, batch by batch.",
    example="nd.batch_dot(nd.ones((5, 2, 3)), nd.ones((5, 3, 4))).shape  # (5, 2, 4)"))


# -- gemm2 and gemm ---------------------------------------------------------------------------

def _row_axis(op, axis, ndim):
    """The row axis of the matrices: ``axis`` in ``[-ndim, ndim - 1)`` (not the column axis)."""
    if ndim < 2:
        raise MXNetError(f"{op}: inputs must have at least 2 dimensions, got {ndim}")
    row = normalize_axis(axis, ndim, op)
    if row == ndim - 1:
        raise MXNetError(f"{op}: axis={axis} is the column axis (the last one); the row axis "
                         f"must come before it")
    return row


def _gemm2_shape(op, attrs, a, b):
    """The output shape of ``op(a) @ op(b)`` with MXNet's checks, from known shapes."""
    if len(a) != len(b):
        raise MXNetError(f"{op}: inputs must have the same number of dimensions, got shapes "
                         f"{a} and {b}")
    row = _row_axis(op, attrs["axis"], len(a))
    ta, tb = attrs["transpose_a"], attrs["transpose_b"]
    rows, lk = (a[-1], a[row]) if ta else (a[row], a[-1])
    rk, cols = (b[-1], b[row]) if tb else (b[row], b[-1])
    if lk and rk and lk != rk:
        raise MXNetError(f"{op}: incompatible matrix dimensions: shapes {a} and {b} contract "
                         f"sizes {lk} and {rk} (transpose_a={ta}, transpose_b={tb})")
    others = [i for i in range(len(a)) if i not in (row, len(a) - 1)]
    for i in others:
        if a[i] and b[i] and a[i] != b[i]:
            raise MXNetError(f"{op}: shapes {a} and {b} must be equal except on the row and "
                             f"column axes")
    out = list(a)
    out[row], out[-1] = rows, cols
    return tuple(out)


def _gemm2_rule(attrs, in_shapes):
    a, b = in_shapes
    if a is None or b is None:
        return list(in_shapes), [None]
    return list(in_shapes), [_gemm2_shape("_linalg_gemm2", attrs, a, b)]


def _product(xp, a, b, ta, tb, alpha, row):
    """``alpha * op(a) @ op(b)`` over matrices with rows on axis ``row``."""
    last = a.ndim - 1
    if row != last - 1:
        a, b = xp.swapaxes(a, row, last - 1), xp.swapaxes(b, row, last - 1)
    out = xp.matmul(xp.swapaxes(a, -1, -2) if ta else a, xp.swapaxes(b, -1, -2) if tb else b)
    if alpha != 1:
        out = out * out.dtype.type(alpha)
    return xp.swapaxes(out, row, last - 1) if row != last - 1 else out


def _gemm2_compute(xp, a, b, transpose_a=False, transpose_b=False, alpha=1.0, axis=-2):
    attrs = {"transpose_a": transpose_a, "transpose_b": transpose_b, "axis": axis}
    _gemm2_shape("_linalg_gemm2", attrs, a.shape, b.shape)
    return _product(xp, a, b, transpose_a, transpose_b, alpha, _row_axis("", axis, a.ndim))


def _gemm2_grads(F, a, b, g, transpose_a, transpose_b, alpha, axis):
    def mm(x, y, tx, ty):
        return F.linalg_gemm2(x, y, transpose_a=tx, transpose_b=ty, alpha=alpha, axis=axis)

    return list(_matmul_grads(mm, a, b, g, transpose_a, transpose_b))


def _gemm2_grad(F, ins, outs, gouts, transpose_a=False, transpose_b=False, alpha=1.0, axis=-2):
    return _gemm2_grads(F, ins[0], ins[1], gouts[0], transpose_a, transpose_b, alpha, axis)


def _gemm_attrs(with_beta):
    attrs = {**_transpose_attrs(),
             "alpha": Float(default=1.0, doc="scale of op(A) @ op(B)")}
    if with_beta:
        attrs["beta"] = Float(default=1.0, doc="scale of C")
    attrs["axis"] = Int(default=-2, doc="the row axis of the matrices (columns are the last)")
    return attrs


register(OpDef(
    "_linalg_gemm2", aliases=("linalg_gemm2",), inputs=("A", "B"), attrs=_gemm_attrs(False),
    compute=_gemm2_compute, infer_shape=_gemm2_rule, grad=_gemm2_grad,
    doc="General matrix product alpha * op(A) @ op(B), batched over the leading axes.",
    example="nd.linalg.gemm2(nd.ones((2, 3)), nd.ones((3, 4)), alpha=2).shape  # (2, 4)"))


def _gemm_rule(attrs, in_shapes):
    a, b, c = in_shapes
    out = None if a is None or b is None else _gemm2_shape("_linalg_gemm", attrs, a, b)
    out = merge_shapes(out, c, "_linalg_gemm: the shape of C and of op(A) @ op(B)")
    return [a, b, out], [out]


def _gemm_compute(xp, a, b, c, transpose_a=False, transpose_b=False, alpha=1.0, beta=1.0,
                  axis=-2):
    _gemm_rule({"transpose_a": transpose_a, "transpose_b": transpose_b, "axis": axis},
               [a.shape, b.shape, c.shape])
    out = _product(xp, a, b, transpose_a, transpose_b, alpha, _row_axis("", axis, a.ndim))
    return out + (c if beta == 1 else c * c.dtype.type(beta))


def _gemm_grad(F, ins, outs, gouts, transpose_a=False, transpose_b=False, alpha=1.0, beta=1.0,
               axis=-2):
    a, b, _ = ins
    g = gouts[0]
    ga, gb = _gemm2_grads(F, a, b, g, transpose_a, transpose_b, alpha, axis)
    return [ga, gb, F._mul_scalar(g, scalar=beta)]


register(OpDef(
    "_linalg_gemm", aliases=("linalg_gemm",), inputs=("A", "B", "C"), attrs=_gemm_attrs(True),
    compute=_gemm_compute, infer_shape=_gemm_rule, grad=_gemm_grad,
    doc="General matrix product and sum alpha * op(A) @ op(B) + beta * C.",
    example="nd.linalg.gemm(nd.ones((2, 3)), nd.ones((3, 4)), nd.ones((2, 4))).shape  # (2, 4)"))
