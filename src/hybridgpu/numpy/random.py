"""``mx.np.random``: ``uniform, normal, randn, rand, randint, choice, shuffle, exponential,
gamma, poisson, seed``, over the registry's random ops (``_random_uniform``,
``_random_normal``, ``_random_randint``, ``_random_exponential``, ``_random_gamma``,
``_random_poisson``, ``_shuffle``, ``_sample_multinomial``), drawing from the generators
``mx.random.seed`` seeds.

Example:
    >>> import hybridgpu as mx
    >>> mx.random.seed(1); a = uniform(size=(2,))
    >>> mx.random.seed(1); b = uniform(size=(2,))
    >>> bool((a == b).all()), normal(0, 1, (2, 3)).shape, uniform().shape
    (True, (2, 3), ())
"""

from __future__ import annotations

import numpy as onp

from .. import random_state
from ..base import MXNetError
from ..ndarray import NDArray
from . import _dispatch
from .multiarray import as_np

__all__ = ["uniform", "normal", "randn", "rand", "randint", "choice", "shuffle", "seed",
           "exponential", "gamma", "poisson"]


def _size(size):
    if size is None:
        return None
    return (int(size),) if isinstance(size, (int, onp.integer)) else tuple(int(d) for d in size)


def _draw(op_name, attrs, size, ctx):
    shape = _size(size)
    out = _dispatch.call(op_name, [], {**attrs, "shape": shape or (1,)}, ctx=ctx)
    return out.reshape(()) if shape is None else out


def _is_array(value):
    return isinstance(value, NDArray)


def uniform(low=0.0, high=1.0, size=None, dtype=None, ctx=None, device=None, out=None):
    """Draws from ``[low, high)`` (float32 unless ``dtype``); ``size=None`` gives one value
    (shape ``()``), or the broadcast shape of array bounds."""
    ctx = ctx or device
    if _is_array(low) or _is_array(high):
        shape = _size(size) or onp.broadcast_shapes(onp.shape(low), onp.shape(high))
        unit = _draw("_random_uniform", {"low": 0.0, "high": 1.0, "dtype": dtype}, shape, ctx)
        return as_np(low) + unit * (as_np(high) - as_np(low))
    return _finish(_draw("_random_uniform", {"low": float(low), "high": float(high),
                                             "dtype": dtype}, size, ctx), out)


def normal(loc=0.0, scale=1.0, size=None, dtype=None, ctx=None, device=None, out=None):
    """Draws from the normal distribution N(loc, scale**2)."""
    ctx = ctx or device
    if _is_array(loc) or _is_array(scale):
        shape = _size(size) or onp.broadcast_shapes(onp.shape(loc), onp.shape(scale))
        unit = _draw("_random_normal", {"loc": 0.0, "scale": 1.0, "dtype": dtype}, shape, ctx)
        return as_np(loc) + unit * as_np(scale)
    return _finish(_draw("_random_normal", {"loc": float(loc), "scale": float(scale),
                                            "dtype": dtype}, size, ctx), out)


def randn(*size, **kwargs):
    """Standard normal draws of shape ``size``."""
    return normal(0.0, 1.0, size or None, **kwargs)


def rand(*size, **kwargs):
    """Uniform draws from ``[0, 1)`` of shape ``size``."""
    return uniform(0.0, 1.0, size or None, **kwargs)


def randint(low, high=None, size=None, dtype=None, ctx=None, device=None, out=None):
    """Integers from ``[low, high)`` (``[0, low)`` when ``high`` is None), int64 by default."""
    if high is None:
        low, high = 0, low
    attrs = {"low": int(low), "high": int(high), "dtype": onp.dtype(dtype or "int64").name}
    return _finish(_draw("_random_randint", attrs, size, ctx or device), out)


def choice(a, size=None, replace=True, p=None, ctx=None, device=None, out=None):
    """Draws from ``arange(a)`` (an int) or from the elements of 1-D ``a``; with ``p`` the
    probabilities, without ``replace`` each at most once."""
    ctx = ctx or device
    pool = None if isinstance(a, (int, onp.integer)) else as_np(a, ctx=ctx)
    n = int(a) if pool is None else pool.shape[0]
    shape = _size(size)
    count = 1 if shape is None else int(onp.prod(shape))
    if not replace:
        if count > n:
            raise MXNetError(f"np.random.choice: cannot take {count} samples from {n} "
                             "without replacement")
        if p is not None:
            raise MXNetError("np.random.choice: p with replace=False is not supported")
        from .creation import arange

        index = _dispatch.call("_shuffle", [arange(n, dtype="int64", ctx=ctx)])[:count]
    elif p is not None:
        probs = as_np(p, ctx=ctx).astype("float32").reshape(1, -1)
        index = _dispatch.call("_sample_multinomial", [probs], {"shape": (count,)})
        index = index.reshape(-1).astype("int64")
    else:
        index = _draw("_random_randint", {"low": 0, "high": n, "dtype": "int64"}, (count,), ctx)
    picked = index if pool is None else pool[index]
    picked = picked.reshape(()) if shape is None else picked.reshape(shape)
    return _finish(picked, out)


def exponential(scale=1.0, size=None, dtype=None, ctx=None, device=None, out=None):
    """Draws from the exponential distribution of mean ``scale``."""
    return _finish(_draw("_random_exponential", {"lam": 1.0 / float(scale), "dtype": dtype},
                         size, ctx or device), out)


def gamma(shape, scale=1.0, size=None, dtype=None, ctx=None, device=None, out=None):
    """Draws from the gamma distribution of ``shape`` (k) and ``scale`` (theta)."""
    return _finish(_draw("_random_gamma", {"alpha": float(shape), "beta": float(scale),
                                           "dtype": dtype}, size, ctx or device), out)


def poisson(lam=1.0, size=None, dtype=None, ctx=None, device=None, out=None):
    """Draws from the Poisson distribution of mean ``lam`` (float32 counts, as MXNet's)."""
    return _finish(_draw("_random_poisson", {"lam": float(lam), "dtype": dtype}, size,
                         ctx or device), out)


def shuffle(x):
    """Shuffle ``x`` in place along its first axis."""
    x[...] = _dispatch.call("_shuffle", [x])


def seed(seed_state, ctx="all"):
    """Seed the generators (``mx.random.seed``)."""
    random_state.seed(seed_state, ctx)


def _finish(result, out):
    if out is None:
        return result
    out[...] = result
    return out
