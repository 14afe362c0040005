"""GEMM lowerings: FullyConnected, dot and batch_dot as cuBLAS ``Gemm`` steps.

Arrays are row-major and cuBLAS is column-major: a row-major ``(r, c)`` matrix is, to cuBLAS,
its transpose with leading dimension ``c``. So ``C = op(A) @ op(B)`` (row-major, ``M x N``) is
asked as ``C^T = op(B)^T @ op(A)^T``: cuBLAS's first operand is B, its ``m`` is N, its ``n``
is M (``row_major_gemm``).

Each lowering takes ``(attrs, in_shapes, out_shape)`` and returns ``(steps maker, bias)`` or
None when the shapes are not a plain GEMM (the node then runs eagerly). These are the kernel
templates of the GEMM family; the ops' facts (shapes, attributes) come from their OpDefs.

Example:
    >>> from hybridgpu.executor.gpu.program import Ref
    >>> g = row_major_gemm("float32", 2, 3, 4, Ref.arena(0), False, Ref.arena(256), True,
    ...                    Ref.arena(512))
    >>> (g.transa, g.transb, g.m, g.n, g.k, g.lda, g.ldb, g.ldc)
    (1, 0, 3, 2, 4, 4, 4, 3)
    >>> fully_connected({"flatten": True, "no_bias": False}, [(2, 4), (3, 4), (3,)], (2, 3))
    (2, 3, 4, False, True, True, 1)
"""

from __future__ import annotations

import math

from .program import Gemm

__all__ = ["row_major_gemm", "GEMM_SHAPES", "fully_connected", "dot", "batch_dot"]

GEMM_DTYPES = frozenset({"float16", "float32", "float64"})


def row_major_gemm(dtype, m, n, k, a, trans_a, b, trans_b, c, batch=1, node=-1):
    """The Gemm step of row-major ``C (m x n) = op(A) @ op(B)`` (``k`` inner), ``batch``
    contiguous products when ``batch > 1``."""
    return Gemm(dtype=dtype, transa=int(trans_b), transb=int(trans_a), m=n, n=m, k=k,
                a=b, lda=k if trans_b else n, b=a, ldb=m if trans_a else k, c=c, ldc=n,
                batch=batch, stride_a=k * n, stride_b=m * k, stride_c=m * n, node=node)


def fully_connected(attrs, in_shapes, out_shape):
    """``(m, n, k, trans_a, trans_b, has_bias, batch)`` of a FullyConnected, or None."""
    data, weight = in_shapes[0], in_shapes[1]
    if len(weight) != 2:
        return None
    n, k = weight
    m = math.prod(data) // k if data else 0
    if m * k != math.prod(data) or math.prod(out_shape) != m * n:
        return None
    return m, n, k, False, True, not attrs.get("no_bias", False), 1


def dot(attrs, in_shapes, out_shape):
    """GEMM parameters of ``dot`` over 2-D operands, or None."""
    a, b = in_shapes
    if len(a) != 2 or len(b) != 2:
        return None
    ta, tb = bool(attrs.get("transpose_a")), bool(attrs.get("transpose_b"))
    m, k = (a[1], a[0]) if ta else a
    k2, n = (b[1], b[0]) if tb else b
    if k != k2 or tuple(out_shape) != (m, n):
        return None
    return m, n, k, ta, tb, False, 1


def batch_dot(attrs, in_shapes, out_shape):
    """GEMM parameters of ``batch_dot`` over 3-D operands, or None."""
    a, b = in_shapes
    if len(a) != 3 or len(b) != 3 or a[0] != b[0]:
        return None
    ta, tb = bool(attrs.get("transpose_a")), bool(attrs.get("transpose_b"))
    m, k = (a[2], a[1]) if ta else (a[1], a[2])
    k2, n = (b[2], b[1]) if tb else (b[1], b[2])
    if k != k2 or tuple(out_shape) != (a[0], m, n):
        return None
    return m, n, k, ta, tb, False, a[0]


#: Op name -> its GEMM lowering (the templates of the GEMM family).
GEMM_SHAPES = {"FullyConnected": fully_connected, "dot": dot, "batch_dot": batch_dot}
