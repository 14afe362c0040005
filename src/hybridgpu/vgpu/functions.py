"""CuPy's array functions on the virtual GPU: NumPy computes, over device arrays only.

Each function unwraps its device arguments, refuses host NumPy arrays (CuPy takes them only in
``asarray``/``array``), calls NumPy with CuPy's signature where it differs (stable sorts only,
``take`` without ``mode``) and wraps the results as device arrays (a NumPy scalar becomes a
0-d array, as in CuPy). Functions whose CuPy version reads values on the host (the result size
of ``nonzero``, ``unique``...) raise under capture.

Example:
    >>> import numpy as np
    >>> xp_sum = device_function("sum", np.sum)
    >>> from hybridgpu.vgpu.array import to_device
    >>> r = xp_sum(to_device(np.ones(3)))
    >>> type(r).__name__, r.shape, float(r)
    ('ndarray', (), 3.0)
"""

from __future__ import annotations

import functools

import numpy as np

from . import devices
from .array import ndarray, on_current_device, to_device, unwrap, wrap

__all__ = ["FUNCTIONS", "LINALG", "device_function", "Ufunc", "asarray", "array", "asnumpy",
           "empty", "empty_like", "RandomState", "SYNCING"]


def words(text):
    """The whitespace-separated words of ``text``, as a frozenset."""
    return frozenset(text.split())


# cupy.<name> functions played by NumPy's (tests/test_vgpu_names.py checks each is in CuPy)
FUNCTIONS = words("""
eye full full_like identity ones ones_like zeros zeros_like copy ascontiguousarray
asfortranarray arange linspace logspace meshgrid diag diagflat tri tril triu copyto ravel
reshape moveaxis rollaxis swapaxes transpose atleast_1d atleast_2d atleast_3d broadcast_arrays
broadcast_to expand_dims squeeze column_stack concatenate dstack hstack stack vstack
array_split split hsplit vsplit dsplit repeat tile unique flip fliplr flipud roll rot90
can_cast result_type promote_types issubdtype min_scalar_type indices ravel_multi_index
unravel_index choose compress diagonal extract select take take_along_axis place put
fill_diagonal einsum cross dot inner kron matmul outer tensordot vdot trace allclose isclose
all any prod sum cumprod cumsum nansum nanprod diff around round fix nan_to_num clip pad
count_nonzero argmax argmin flatnonzero nanargmax nanargmin nonzero searchsorted where
argpartition argsort lexsort partition sort amax max amin min nanmax nanmin percentile
quantile median ptp average mean std var nanmean nanstd nanvar bincount digitize histogram
array_equal shape ndim size isscalar cov corrcoef interp convolve real imag
""")
# cupy ufuncs (each with reduce/accumulate/outer/at where NumPy has them)
UFUNCS = words("""
add subtract multiply divide true_divide floor_divide power remainder mod fmod negative
positive absolute abs fabs sign reciprocal square sqrt cbrt exp exp2 expm1 log log2 log10
log1p logaddexp logaddexp2 sin cos tan arcsin arccos arctan arctan2 hypot sinh cosh tanh
arcsinh arccosh arctanh deg2rad rad2deg degrees radians floor ceil trunc rint maximum minimum
fmax fmin greater greater_equal less less_equal equal not_equal logical_and logical_or
logical_xor logical_not bitwise_and bitwise_or bitwise_xor bitwise_not invert left_shift
right_shift isfinite isinf isnan signbit copysign nextafter ldexp frexp modf divmod conj
conjugate heaviside gcd lcm
""")
LINALG = words("cholesky inv solve det slogdet norm qr svd eigh eigvalsh pinv matrix_power "
                "matrix_rank lstsq tensorinv tensorsolve")
# functions whose CuPy version reads device values on the host
SYNCING = words("bincount nonzero flatnonzero unique compress extract histogram percentile "
                 "quantile median")


def _stable_sort(np_fn):
    def sort(a, axis=-1, kind=None):
        if kind not in (None, "stable"):
            raise TypeError(f"cupy sorts stably only (kind=None or 'stable'), got kind={kind!r}")
        return np_fn(a, axis=axis, kind="stable")

    return sort


def _take(a, indices, axis=None, out=None):  # cupy.take has no mode=
    return np.take(a, indices, axis=axis, out=out)


def _where(condition, *xy):
    if not xy:
        devices.check_not_capturing("xp.where(condition) (the result size is read on the host)")
    return np.where(condition, *xy)


SIGNATURES = {"argsort": _stable_sort(np.argsort), "sort": _stable_sort(np.sort),
              "take": _take, "where": _where}


def device_function(qualname, impl, syncs=False):
    """``impl`` (a NumPy function) as a CuPy function named ``qualname``."""
    @functools.wraps(impl)
    def function(*args, **kwargs):
        if syncs:
            devices.check_not_capturing(f"{qualname} (CuPy's version reads values on the host)")
        return wrap(impl(*unwrap(args, qualname), **unwrap(kwargs, qualname)))

    function.__qualname__ = function.__name__ = qualname.rsplit(".", 1)[-1]
    return function


class Ufunc:
    """A CuPy ufunc: ``f(x, ...)`` with ``reduce``, ``accumulate``, ``outer`` and ``at``."""

    def __init__(self, np_ufunc, name=None):
        self._u, self.__name__ = np_ufunc, name or np_ufunc.__name__
        self.nin, self.nout, self.nargs = np_ufunc.nin, np_ufunc.nout, np_ufunc.nargs

    def __call__(self, *args, **kwargs):
        what = f"cupy.{self.__name__}"
        return wrap(self._u(*unwrap(args, what), **unwrap(kwargs, what)))

    def _method(self, name, *args, **kwargs):
        what = f"cupy.{self.__name__}.{name}"
        return wrap(getattr(self._u, name)(*unwrap(args, what), **unwrap(kwargs, what)))

    def reduce(self, *args, **kwargs):
        return self._method("reduce", *args, **kwargs)

    def accumulate(self, *args, **kwargs):
        return self._method("accumulate", *args, **kwargs)

    def outer(self, *args, **kwargs):
        return self._method("outer", *args, **kwargs)

    def at(self, *args, **kwargs):
        return self._method("at", *args, **kwargs)

    def __repr__(self):
        return f"<ufunc '{self.__name__}'>"


def asarray(a, dtype=None, order=None, *, blocking=False):
    """``cupy.asarray``: a device array as it is (or cast); host data copied to the device."""
    if isinstance(a, ndarray):
        a = on_current_device(a)
        return a if dtype is None or np.dtype(dtype) == a.dtype else a.astype(dtype)
    devices.check_not_capturing("a host -> device copy (xp.asarray of host data)")
    return to_device(unwrap(a, "cupy.asarray", allow_host=True), dtype)


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, *, blocking=False):
    """``cupy.array``: a copy (unless ``copy=False`` and nothing changes) on the device."""
    if isinstance(obj, ndarray):
        moved = on_current_device(obj)
        copy = copy and moved is obj  # moving it made the copy
        obj = moved
        out = obj if not copy and dtype in (None, obj.dtype) else obj.astype(
            obj.dtype if dtype is None else dtype, copy=True)
    else:
        devices.check_not_capturing("a host -> device copy (xp.array of host data)")
        out = to_device(unwrap(obj, "cupy.array", allow_host=True), dtype)
    while out.ndim < ndmin:
        out = out[None]
    return out


def asnumpy(a, stream=None, order="C", out=None, *, blocking=True):
    """``cupy.asnumpy``: a NumPy copy of a device array (host data passes through)."""
    if isinstance(a, ndarray):
        return a.get(order=order, out=out)
    return np.asarray(a, order=order)


_POISON = 0xFF  # uninitialised device memory reads as NaN (floats) or -1 (ints)


def empty(shape, dtype=float, order="C"):
    """``cupy.empty``: filled with 0xff bytes (NaN / -1), so reading it before writing shows."""
    out = ndarray(shape, dtype, order=order)
    out._a.view(np.uint8)[...] = _POISON if out.size else 0
    return out


def empty_like(prototype, dtype=None, order="K", subok=None, shape=None):
    """``cupy.empty_like`` (CuPy's parameter names: ``blocking`` keyword-only above too)."""
    return empty(prototype.shape if shape is None else shape,
                 prototype.dtype if dtype is None else dtype)


class RandomState:
    """``cupy.random.RandomState`` played by NumPy's (the same stream for the same seed)."""

    METHODS = words("uniform normal randint permutation rand randn random_sample "
                     "standard_normal choice shuffle lognormal exponential gamma beta binomial "
                     "poisson seed tomaxint standard_gamma standard_exponential")

    def __init__(self, seed=None, method=None):
        self._rng = np.random.RandomState(seed)

    def __getattr__(self, name):
        if name not in self.METHODS:
            raise AttributeError(f"cupy.random.RandomState has no attribute {name!r}")
        method = device_function(f"RandomState.{name}", getattr(self._rng, name))
        if name == "shuffle":
            return self._shuffle
        return method

    def _shuffle(self, a):
        a._a[...] = self._rng.permutation(a._a)
