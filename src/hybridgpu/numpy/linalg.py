"""``mx.np.linalg``: ``norm, inv, det, slogdet, cholesky, solve, matrix_power``, over the
registry's ``_np_sum``, ``sqrt``, ``_linalg_inverse``, ``_linalg_det``, ``_linalg_slogdet``,
``_linalg_potrf`` and ``_npi_matmul`` (gradients included).

Example:
    >>> import hybridgpu as mx
    >>> norm(mx.np.array([3.0, 4.0])), det(mx.np.array([[2.0, 0.0], [0.0, 3.0]]))
    (array(5.), array(6.))
"""

from __future__ import annotations

import numpy as onp

from ..base import MXNetError
from . import _dispatch
from .multiarray import as_np

__all__ = ["norm", "inv", "det", "slogdet", "cholesky", "solve", "matrix_power"]


def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002 (NumPy's argument name)
    """The 2-norm (Frobenius for matrices) over ``axis`` (every axis when None); ``ord=1``
    the sum of absolute values, ``ord=inf`` their maximum (vectors)."""
    from . import math as _math
    from . import reduce as _reduce

    x = as_np(x)
    if ord in (None, 2, "fro"):
        if ord == 2 and (axis is None and x.ndim == 2 or isinstance(axis, tuple)):
            raise MXNetError("np.linalg.norm: the matrix 2-norm (largest singular value) is "
                             "not supported; use ord=None (Frobenius)")
        return _math.make_unary("sqrt")(_reduce.sum(x * x, axis=axis, keepdims=keepdims))
    if ord == 1:
        return _reduce.sum(abs(x), axis=axis, keepdims=keepdims)
    if ord == onp.inf:
        return _reduce.max(abs(x), axis=axis, keepdims=keepdims)
    raise MXNetError(f"np.linalg.norm: ord={ord!r} is not supported (None, 'fro', 1, 2 for "
                     "vectors, inf)")


def inv(a):
    """The inverse of each square matrix in ``a``."""
    return _dispatch.call("_linalg_inverse", [as_np(a)])


def det(a):
    """The determinant of each square matrix in ``a``."""
    a = as_np(a)
    out = _dispatch.call("_linalg_det", [a])
    return out.reshape(a.shape[:-2]) if not _dispatch.is_symbolic([a]) else out


def slogdet(a):
    """``(sign, log|det|)`` of each square matrix in ``a``."""
    a = as_np(a)
    sign, logdet = _dispatch.call("_linalg_slogdet", [a])
    return sign.reshape(a.shape[:-2]), logdet.reshape(a.shape[:-2])


def cholesky(a):
    """The lower Cholesky factor ``L`` of each symmetric positive-definite matrix
    (``a = L @ L.T``)."""
    return _dispatch.call("_linalg_potrf", [as_np(a)], {"lower": True})


def solve(a, b):
    """``x`` with ``a @ x = b`` (``b`` a vector or a stack of columns), as ``inv(a) @ b``."""
    from .math import matmul

    return matmul(inv(a), as_np(b))


def matrix_power(a, n):
    """``a`` multiplied by itself ``n`` times (``n < 0``: of its inverse)."""
    from .math import matmul

    a = as_np(a)
    if n < 0:
        a, n = inv(a), -n
    if n == 0:
        from .creation import eye

        return eye(a.shape[-1], dtype=a.dtype, ctx=a.ctx) + a * 0
    out = a
    for _ in range(n - 1):
        out = matmul(out, a)
    return out
