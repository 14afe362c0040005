"""``mx.test_utils``' comparisons, random shapes and arrays, and the default context.

Tolerances follow MXNet 1.9.1: ``assert_almost_equal`` picks, when not given, the larger
default of the two arrays' dtypes (rtol 1e-2/1e-4/1e-5 and atol 1e-1/1e-3/1e-20 for
float16/float32/float64, 0 for integers and bool); ``almost_equal`` defaults to the float64
ones. Random shapes and arrays draw from ``numpy.random``, so ``np.random.seed`` gives the
values MXNet gives.

Example:
    >>> import numpy as np
    >>> import hybridgpu as mx
    >>> assert_almost_equal(mx.nd.array([1.0, 2.0]), np.array([1.0, 2.00001]))
    >>> same(np.ones(2), mx.nd.ones(2).asnumpy()), almost_equal(np.ones(2), np.ones(2) + 1e-3)
    (True, False)
    >>> np.random.seed(0); rand_shape_nd(3, dim=4)
    (1, 4, 2)
"""

from __future__ import annotations

import numbers

import numpy as np

from ..context import Context, current_context
from ..ndarray import NDArray
from ..ndarray import array as nd_array

__all__ = ["default_context", "set_default_context", "default_dtype", "default_rtols",
           "default_atols", "get_tolerance", "get_tols", "get_rtol", "get_atol",
           "random_arrays", "rand_ndarray", "rand_shape_2d", "rand_shape_3d", "rand_shape_nd",
           "same", "almost_equal", "assert_almost_equal", "assert_allclose",
           "assert_exception"]

_INTEGER_TYPES = (np.int8, np.uint8, np.int32, np.int64, np.bool_)


def default_context():
    """The context tests run on: the current default context."""
    return current_context()


def set_default_context(ctx):
    """Make ``ctx`` the default context (inside a ``with ctx:`` scope, until it ends).

    Example:
        >>> import hybridgpu as mx
        >>> with mx.cpu(0):
        ...     set_default_context(mx.cpu(1)); default_context()
        cpu(1)
        >>> default_context()
        cpu(0)
    """
    Context.default_ctx = ctx


def default_dtype():
    """The dtype of random test arrays: float32."""
    return np.float32


def default_rtols():
    """``{dtype: default relative tolerance}``."""
    table = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4,
             np.dtype(np.float64): 1e-5}
    table.update({np.dtype(t): 0 for t in _INTEGER_TYPES})
    return table


def default_atols():
    """``{dtype: default absolute tolerance}``."""
    table = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3,
             np.dtype(np.float64): 1e-20}
    table.update({np.dtype(t): 0 for t in _INTEGER_TYPES})
    return table


def _dtype_of(value):
    if isinstance(value, numbers.Number):
        return np.asarray(value).dtype
    return np.dtype(value.dtype)


def get_tolerance(dat, tol, default_tol):
    """``tol`` if a number, else its entry (or ``default_tol``'s) for ``dat``'s dtype."""
    if isinstance(tol, numbers.Number):
        return tol
    dtype = _dtype_of(dat)
    tol = {} if tol is None else tol
    return tol.get(dtype, default_tol[dtype])


def get_tols(x, y, rtol, atol):
    """``(rtol, atol)`` for comparing ``x`` and ``y``: the larger of their dtypes'."""
    return (max(get_tolerance(x, rtol, default_rtols()),
                get_tolerance(y, rtol, default_rtols())),
            max(get_tolerance(x, atol, default_atols()),
                get_tolerance(y, atol, default_atols())))


def get_rtol(rtol=None, dtype=np.dtype(np.float64)):  # noqa: B008 (MXNet's signature)
    """``rtol``, or the default of ``dtype``."""
    return default_rtols()[np.dtype(dtype)] if rtol is None else rtol


def get_atol(atol=None, dtype=np.dtype(np.float64)):  # noqa: B008 (MXNet's signature)
    """``atol``, or the default of ``dtype``."""
    return default_atols()[np.dtype(dtype)] if atol is None else atol


def random_arrays(*shapes):
    """float32 arrays of standard-normal values, one per shape (a single array for one)."""
    arrays = [np.array(np.random.randn(), dtype=default_dtype()) if len(s) == 0
              else np.random.randn(*s).astype(default_dtype()) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def rand_ndarray(shape, stype="default", density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices=False, distribution=None, ctx=None):
    """An NDArray of ``random_arrays(shape)`` (dense storage only) on ``ctx``."""
    if stype != "default":
        raise NotImplementedError(f"rand_ndarray: storage type {stype!r} is not supported "
                                  f"by hybridgpu (dense arrays only)")
    ctx = ctx if ctx else default_context()
    return nd_array(random_arrays(shape), dtype=dtype, ctx=ctx)


def _low(allow_zero_size):
    return 0 if allow_zero_size else 1


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False):
    """A random 2-d shape with sizes up to ``dim0`` and ``dim1``."""
    low = _low(allow_zero_size)
    return np.random.randint(low, dim0 + 1), np.random.randint(low, dim1 + 1)


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    """A random 3-d shape with sizes up to ``dim0``, ``dim1`` and ``dim2``."""
    low = _low(allow_zero_size)
    return (np.random.randint(low, dim0 + 1), np.random.randint(low, dim1 + 1),
            np.random.randint(low, dim2 + 1))


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    """A random shape of ``num_dim`` sizes up to ``dim``."""
    return tuple(int(d) for d in np.random.randint(_low(allow_zero_size), dim + 1,
                                                   size=num_dim))


def _host(value):
    return value.asnumpy() if isinstance(value, NDArray) else value


def same(a, b):
    """Whether ``a`` and ``b`` have the same shape and elements."""
    return np.array_equal(_host(a), _host(b))


def _check_shapes(a, b):
    if np.shape(a) != np.shape(b):
        raise AssertionError(f"a.shape = {np.shape(a)} and b.shape = {np.shape(b)} are not "
                             f"equal")


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True):
    """``np.allclose`` with the float64 default tolerances."""
    a, b = _host(a), _host(b)
    if not use_broadcast:
        _check_shapes(a, b)
    return bool(np.allclose(a, b, rtol=get_rtol(rtol), atol=get_atol(atol),
                            equal_nan=equal_nan))


def _worst(a, b, rtol, atol):
    """``(index, violation)`` of the element furthest out of tolerance."""
    diff = np.where(np.equal(a, b), 0, np.abs(a - b))
    violation = diff / (atol + rtol * np.abs(b) + 1e-20)
    index = tuple(int(i) for i in np.unravel_index(np.argmax(violation), violation.shape))
    return index, float(np.max(violation))


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False,
                        use_broadcast=True, mismatches=(10, 10)):
    """Raise ``AssertionError`` unless ``|a - b| <= atol + rtol * |b|`` everywhere, naming the
    worst element and the share of mismatches.

    Example:
        >>> import numpy as np
        >>> assert_almost_equal(np.array([1.0, 2.0]), np.array([1.0, 2.5]), names=("x", "y"))
        Traceback (most recent call last):
        ...
        AssertionError: Error 20000.000000 exceeds tolerance rtol=1.000000e-05, atol=1.000000e-20 (mismatch 50.000000%). Location of maximum error: (1,), x=2.00000000, y=2.50000000
    """  # noqa: E501
    if not use_broadcast:
        _check_shapes(a, b)
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = np.asarray(_host(a)), np.asarray(_host(b))
    if a.dtype == np.bool_ and b.dtype == np.bool_:
        np.testing.assert_equal(a, b)
        return
    if np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    a, b = np.broadcast_arrays(a, b)
    index, worst = _worst(a, b, rtol, atol)
    close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    share = 100.0 * float(np.sum(~close)) / max(a.size, 1)
    raise AssertionError(
        f"Error {worst:f} exceeds tolerance rtol={rtol:e}, atol={atol:e} (mismatch "
        f"{share:f}%). Location of maximum error: {index}, {names[0]}={a[index]:.8f}, "
        f"{names[1]}={b[index]:.8f}")


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True):
    """``np.testing.assert_allclose`` on host copies."""
    np.testing.assert_allclose(_host(a), _host(b), rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_exception(f, exception_type, *args, **kwargs):
    """Assert that ``f(*args, **kwargs)`` raises ``exception_type``."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{getattr(f, '__name__', f)} did not raise "
                         f"{exception_type.__name__}")
