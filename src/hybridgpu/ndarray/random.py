"""``mx.nd.random``: sampling functions with MXNet's Python signatures.

``uniform`` and ``normal`` take scalar parameters (ops ``_random_uniform``, ``_random_normal``)
or NDArray parameters (ops ``_sample_uniform``, ``_sample_normal``: one distribution per
element, ``shape`` draws from each). ``randint``, ``randn`` and ``shuffle`` complete the set;
the other ``_random_*`` ops of the registry (``uniform_like``, ``normal_like``) are generated
here under their MXNet names. ``mx.random.seed(n)`` makes every draw repeatable.

Example:
    >>> import hybridgpu as mx
    >>> mx.random.seed(7); a = mx.nd.random.uniform(0, 1, shape=(2, 3))
    >>> mx.random.seed(7); b = mx.nd.random.uniform(0, 1, shape=(2, 3))
    >>> bool((a == b).asnumpy().all()), a.shape
    (True, (2, 3))
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import ops
from .creation import _context
from .imperative import invoke
from .ndarray import NDArray
from .register import make_function, populate


class _NullType:
    """The "not given" default of MXNet's Python signatures (prints as ``_Null``)."""

    def __repr__(self):
        return "_Null"

    def __bool__(self):
        return False


_Null = _NullType()

populate(globals(), "random")  # every _random_* op; the functions below replace some of them

__all__ = ["uniform", "normal", "randint", "randn", "shuffle", "uniform_like", "normal_like"]

uniform_like = make_function(ops.get("_random_uniform_like"), "uniform_like")
normal_like = make_function(ops.get("_random_normal_like"), "normal_like")


def _given(**values):
    return {k: v for k, v in values.items() if v is not _Null and v is not None}


def _from_out(out, shape, dtype, lead=0):
    """As MXNet: without ``shape``/``dtype``, the result takes those of ``out`` (past the
    ``lead`` parameter dimensions), so ``uniform(-1, 1, out=w)`` fills ``w``."""
    if out is None:
        return shape, dtype
    if shape is _Null or shape is None:
        shape = out.shape[lead:]
    if dtype is _Null or dtype is None:
        dtype = np.dtype(out.dtype).name
    return shape, dtype


def _sample(fn, scalar_op, array_op, params, shape, dtype, ctx, out, kwargs):
    """Dispatch on the parameter kinds: all numbers -> ``scalar_op`` (``shape`` is the output
    shape), all NDArrays -> ``array_op`` (``shape`` draws per element)."""
    kwargs.pop("name", None)
    values = list(params.values())
    lead = values[0].ndim if isinstance(values[0], NDArray) else 0
    shape, dtype = _from_out(out, shape, dtype, lead)
    if all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values):
        op = ops.get(scalar_op)
        attrs = op.parse_attrs({**params, **_given(shape=shape, dtype=dtype), **kwargs})
        if ctx is None and out is not None:
            ctx = out.context
        return invoke(op, [], attrs, out=out, ctx=_context(ctx))
    if all(isinstance(v, NDArray) for v in values):
        op = ops.get(array_op)
        attrs = op.parse_attrs({**_given(shape=shape, dtype=dtype), **kwargs})
        return invoke(op, values, attrs, out=out)
    kinds = ", ".join(f"{k}={type(v).__name__}" for k, v in params.items())
    raise ValueError(f"nd.random.{fn}: the distribution parameters must be all numbers or all "
                     f"NDArrays, got {kinds}")


def uniform(low=0, high=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Samples from the uniform distribution on ``[low, high)``.

    Numbers ``low``/``high`` give an array of ``shape`` (op ``_random_uniform``); NDArrays
    give ``shape`` draws for each of their elements (op ``_sample_uniform``). ``dtype`` is
    float16, float32 (the default) or float64.

    Example:
        >>> uniform(-1, 1, shape=(2, 2)).shape
        (2, 2)
    """
    return _sample("uniform", "_random_uniform", "_sample_uniform", {"low": low, "high": high},
                   shape, dtype, ctx, out, kwargs)


def normal(loc=0, scale=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Samples from the normal distribution N(loc, scale**2).

    Numbers give an array of ``shape`` (op ``_random_normal``); NDArrays give ``shape`` draws
    for each of their elements (op ``_sample_normal``).

    Example:
        >>> normal(0, 1, shape=(3,)).shape
        (3,)
    """
    if isinstance(loc, NDArray) and isinstance(scale, NDArray):
        params = {"mu": loc, "sigma": scale}
    else:
        params = {"loc": loc, "scale": scale}
    return _sample("normal", "_random_normal", "_sample_normal", params, shape, dtype, ctx,
                   out, kwargs)


def randint(low, high, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Integers drawn uniformly from ``[low, high)`` (op ``_random_randint``); ``dtype`` is
    int32 (the default) or int64.

    Example:
        >>> randint(0, 10, shape=(4,)).dtype
        <class 'numpy.int32'>
    """
    if isinstance(low, NDArray) or isinstance(high, NDArray):
        raise ValueError("nd.random.randint: low and high must be integers, not NDArrays")
    return _sample("randint", "_random_randint", None, {"low": low, "high": high}, shape,
                   dtype, ctx, out, kwargs)


def randn(*shape, **kwargs):
    """Normal samples of the given shape: ``randn(2, 3, loc=0, scale=1, dtype=..., ctx=...)``.

    Without a shape it gives one value of shape ``(1,)``.

    Example:
        >>> randn(2, 3).shape
        (2, 3)
    """
    loc = kwargs.pop("loc", 0)
    scale = kwargs.pop("scale", 1)
    dtype = kwargs.pop("dtype", _Null)
    ctx = kwargs.pop("ctx", None)
    out = kwargs.pop("out", None)
    return normal(loc, scale, shape or _Null, dtype, ctx, out, **kwargs)


def shuffle(data, **kwargs):
    """The rows (first axis) of ``data`` in a random order (op ``_shuffle``); ``data`` is
    left unchanged.

    Example:
        >>> import hybridgpu as mx
        >>> sorted(shuffle(mx.nd.arange(4)).asnumpy().tolist())
        [0.0, 1.0, 2.0, 3.0]
    """
    out = kwargs.pop("out", None)
    kwargs.pop("name", None)
    if not isinstance(data, NDArray):
        raise TypeError(f"nd.random.shuffle: data must be an NDArray, got "
                        f"{type(data).__name__}")
    op = ops.get("_shuffle")
    return invoke(op, [data], op.parse_attrs(kwargs), out=out)


def _describe(fn, *op_names):
    """Mark ``fn`` with the op it runs (``fn.opdef``) for the namespace checks."""
    fn.opdef = ops.get(op_names[0])
    fn.op_names = op_names
    return fn


_describe(uniform, "_random_uniform", "_sample_uniform")
_describe(normal, "_random_normal", "_sample_normal")
_describe(randint, "_random_randint")
_describe(shuffle, "_shuffle")


# -- the other distributions (ops in ops/random_dists.py) -------------------------------------

__all__ += ["exponential", "gamma", "poisson", "negative_binomial",
            "generalized_negative_binomial", "multinomial", "exponential_like", "gamma_like",
            "poisson_like", "negative_binomial_like", "generalized_negative_binomial_like"]

exponential_like = make_function(ops.get("_random_exponential_like"), "exponential_like")
gamma_like = make_function(ops.get("_random_gamma_like"), "gamma_like")
poisson_like = make_function(ops.get("_random_poisson_like"), "poisson_like")
negative_binomial_like = make_function(ops.get("_random_negative_binomial_like"),
                                       "negative_binomial_like")
generalized_negative_binomial_like = make_function(
    ops.get("_random_generalized_negative_binomial_like"), "generalized_negative_binomial_like")


def _distribution(dist, params, shape, dtype, ctx, out, kwargs):
    return _sample(dist, f"_random_{dist}", f"_sample_{dist}", params, shape, dtype, ctx, out,
                   kwargs)


def exponential(scale=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Samples from the exponential distribution with mean ``scale`` (rate ``1/scale``).
    Ops ``_random_exponential`` (numbers) and ``_sample_exponential`` (arrays).

    Example:
        >>> exponential(2.0, shape=(2, 3)).shape
        (2, 3)
    """
    return _distribution("exponential", {"lam": 1.0 / scale}, shape, dtype, ctx, out, kwargs)


def gamma(alpha=1, beta=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Samples from the gamma distribution with shape ``alpha`` and scale ``beta``.
    Ops ``_random_gamma`` (numbers) and ``_sample_gamma`` (arrays).

    Example:
        >>> gamma(2.0, 0.5, shape=(4,)).shape
        (4,)
    """
    return _distribution("gamma", {"alpha": alpha, "beta": beta}, shape, dtype, ctx, out,
                         kwargs)


def poisson(lam=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Samples from the Poisson distribution with rate ``lam`` (float values, as MXNet).
    Ops ``_random_poisson`` (numbers) and ``_sample_poisson`` (arrays).

    Example:
        >>> poisson(3.0, shape=(2,)).dtype
        <class 'numpy.float32'>
    """
    return _distribution("poisson", {"lam": lam}, shape, dtype, ctx, out, kwargs)


def negative_binomial(k=1, p=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Failures before ``k`` successes of trials that succeed with probability ``p``.
    Ops ``_random_negative_binomial`` (numbers) and ``_sample_negative_binomial`` (arrays).

    Example:
        >>> negative_binomial(3, 0.5, shape=(2, 2)).shape
        (2, 2)
    """
    return _distribution("negative_binomial", {"k": k, "p": p}, shape, dtype, ctx, out,
                         kwargs)


def generalized_negative_binomial(mu=1, alpha=1, shape=_Null, dtype=_Null, ctx=None, out=None,
                                  **kwargs):
    """Samples with mean ``mu`` and dispersion ``alpha`` (a gamma-Poisson mixture).
    Ops ``_random_generalized_negative_binomial`` (numbers) and
    ``_sample_generalized_negative_binomial`` (arrays).

    Example:
        >>> generalized_negative_binomial(2.0, 0.5, shape=(3,)).shape
        (3,)
    """
    return _distribution("generalized_negative_binomial", {"mu": mu, "alpha": alpha}, shape,
                         dtype, ctx, out, kwargs)


def multinomial(data, shape=_Null, get_prob=False, out=None, dtype="int32", **kwargs):
    """Category indices drawn from each probability row (the last axis) of ``data``
    (op ``_sample_multinomial``); ``shape`` draws per row; ``get_prob=True`` also returns
    each draw's log-probability.

    Example:
        >>> import hybridgpu as mx
        >>> multinomial(mx.nd.array([[0.0, 1.0]]), shape=3).asnumpy().tolist()
        [[1, 1, 1]]
    """
    kwargs.pop("name", None)
    if not isinstance(data, NDArray):
        raise TypeError(f"nd.random.multinomial: data must be an NDArray of probabilities, "
                        f"got {type(data).__name__}")
    op = ops.get("_sample_multinomial")
    attrs = op.parse_attrs({**_given(shape=shape), "get_prob": get_prob, "dtype": dtype,
                            **kwargs})
    return invoke(op, [data], attrs, out=out)


_describe(exponential, "_random_exponential", "_sample_exponential")
_describe(gamma, "_random_gamma", "_sample_gamma")
_describe(poisson, "_random_poisson", "_sample_poisson")
_describe(negative_binomial, "_random_negative_binomial", "_sample_negative_binomial")
_describe(generalized_negative_binomial, "_random_generalized_negative_binomial",
          "_sample_generalized_negative_binomial")
_describe(multinomial, "_sample_multinomial")
