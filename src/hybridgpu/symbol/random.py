"""``mx.sym.random``: the sampling functions of ``mx.nd.random`` for graphs, with MXNet 1.9's
signatures, so ``F.random.uniform(...)`` works in a hybridized ``hybrid_forward``.

Numbers as the distribution parameters give a ``_random_<dist>`` node (``shape`` is the output
shape); Symbols give a ``_sample_<dist>`` node with the parameters as inputs (``shape`` draws
per element). A compiled program draws fresh values on every call, from the generator that
``mx.random.seed`` resets.

Example:
    >>> import hybridgpu as mx
    >>> u = mx.sym.random.uniform(-1, 1, shape=(2, 3), name="u")
    >>> u.tojson().count('"_random_uniform"'), u.infer_shape()[1]
    (1, [(2, 3)])
    >>> mx.sym.random.normal(mx.sym.var("mu"), mx.sym.var("sigma"), shape=4).list_arguments()
    ['mu', 'sigma']
"""

from __future__ import annotations

import numbers

from .. import ops
from ..base import MXNetError, missing_name_hook
from .register import make_function
from .symbol import Symbol

__all__ = ["uniform", "normal", "randint", "randn", "exponential", "gamma", "poisson",
           "negative_binomial", "generalized_negative_binomial", "multinomial", "shuffle",
           "uniform_like", "normal_like", "exponential_like", "gamma_like", "poisson_like",
           "negative_binomial_like", "generalized_negative_binomial_like"]


class _NullType:
    """The "not given" default of MXNet's Python signatures (prints as ``_Null``)."""

    def __repr__(self):
        return "_Null"

    def __bool__(self):
        return False


_Null = _NullType()


def _op_function(op_name):
    """The ``sym`` function of ``op_name``, naming its nodes after the op (``_random_uniform0``)."""
    return make_function(ops.get(op_name), op_name)


uniform_like = make_function(ops.get("_random_uniform_like"), "uniform_like")
normal_like = make_function(ops.get("_random_normal_like"), "normal_like")
exponential_like = make_function(ops.get("_random_exponential_like"), "exponential_like")
gamma_like = make_function(ops.get("_random_gamma_like"), "gamma_like")
poisson_like = make_function(ops.get("_random_poisson_like"), "poisson_like")
negative_binomial_like = make_function(ops.get("_random_negative_binomial_like"),
                                       "negative_binomial_like")
generalized_negative_binomial_like = make_function(
    ops.get("_random_generalized_negative_binomial_like"), "generalized_negative_binomial_like")


def _given(**values):
    return {k: v for k, v in values.items() if v is not _Null and v is not None}


def _is_number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _sample(dist, params, shape, dtype, kwargs, array_names=None):
    """All numbers: ``_random_<dist>`` with the parameters as attributes; all Symbols:
    ``_sample_<dist>`` with them as inputs (named ``array_names`` when they differ)."""
    values = list(params.values())
    extra = {**_given(shape=shape, dtype=dtype), **kwargs}
    if all(_is_number(v) for v in values):
        return _op_function(f"_random_{dist}")(**params, **extra)
    if all(isinstance(v, Symbol) for v in values):
        names = array_names or list(params)
        return _op_function(f"_sample_{dist}")(**dict(zip(names, values)), **extra)
    kinds = ", ".join(f"{k}={type(v).__name__}" for k, v in params.items())
    raise MXNetError(f"sym.random.{dist}: the distribution parameters must be all numbers or "
                     f"all Symbols, got {kinds}")


def uniform(low=0, high=1, shape=_Null, dtype=_Null, **kwargs):
    """Uniform samples on ``[low, high)``.

    Example:
        >>> uniform(0, 1, shape=(2,)).infer_shape()[1]
        [(2,)]
    """
    return _sample("uniform", {"low": low, "high": high}, shape, dtype, kwargs)


def normal(loc=0, scale=1, shape=_Null, dtype=_Null, **kwargs):
    """Normal samples N(loc, scale**2); Symbol parameters become the inputs ``mu``/``sigma``.

    Example:
        >>> normal(0, 2, shape=(3,)).infer_shape()[1]
        [(3,)]
    """
    return _sample("normal", {"loc": loc, "scale": scale}, shape, dtype, kwargs,
                   array_names=["mu", "sigma"])


def randint(low, high, shape=_Null, dtype=_Null, **kwargs):
    """Integers drawn uniformly from ``[low, high)`` (int32 unless ``dtype='int64'``).

    Example:
        >>> randint(0, 5, shape=(2,)).infer_type()[1]
        [<class 'numpy.int32'>]
    """
    if not (_is_number(low) and _is_number(high)):
        raise MXNetError("sym.random.randint: low and high must be integers, not Symbols")
    return _op_function("_random_randint")(low=low, high=high,
                                           **_given(shape=shape, dtype=dtype), **kwargs)


def randn(*shape, **kwargs):
    """Normal samples of the given shape: ``randn(2, 3, loc=0, scale=1)``.

    Example:
        >>> randn(2, 3).infer_shape()[1]
        [(2, 3)]
    """
    loc = kwargs.pop("loc", 0)
    scale = kwargs.pop("scale", 1)
    dtype = kwargs.pop("dtype", _Null)
    return normal(loc, scale, shape or _Null, dtype, **kwargs)


def exponential(scale=1, shape=_Null, dtype=_Null, **kwargs):
    """Exponential samples with mean ``scale`` (the op's rate ``lam`` is ``1/scale``).
    Ops ``_random_exponential`` (numbers) and ``_sample_exponential`` (arrays).

    Example:
        >>> exponential(2.0, shape=(2,)).list_attr()["lam"]
        '0.5'
    """
    return _sample("exponential", {"lam": 1.0 / scale}, shape, dtype, kwargs)


def gamma(alpha=1, beta=1, shape=_Null, dtype=_Null, **kwargs):
    """Gamma samples with shape ``alpha`` and scale ``beta``.
    Ops ``_random_gamma`` (numbers) and ``_sample_gamma`` (arrays).

    Example:
        >>> gamma(2, 3, shape=(4,)).infer_shape()[1]
        [(4,)]
    """
    return _sample("gamma", {"alpha": alpha, "beta": beta}, shape, dtype, kwargs)


def poisson(lam=1, shape=_Null, dtype=_Null, **kwargs):
    """Poisson samples with rate ``lam`` (float values, as in MXNet).
    Ops ``_random_poisson`` (numbers) and ``_sample_poisson`` (arrays).

    Example:
        >>> poisson(3, shape=(2,)).infer_shape()[1]
        [(2,)]
    """
    return _sample("poisson", {"lam": lam}, shape, dtype, kwargs)


def negative_binomial(k=1, p=1, shape=_Null, dtype=_Null, **kwargs):
    """Failures before ``k`` successes of trials succeeding with probability ``p``.
    Ops ``_random_negative_binomial`` (numbers) and ``_sample_negative_binomial`` (arrays).

    Example:
        >>> negative_binomial(3, 0.5, shape=(2,)).infer_shape()[1]
        [(2,)]
    """
    return _sample("negative_binomial", {"k": k, "p": p}, shape, dtype, kwargs)


def generalized_negative_binomial(mu=1, alpha=1, shape=_Null, dtype=_Null, **kwargs):
    """Samples with mean ``mu`` and dispersion ``alpha``.
    Ops ``_random_generalized_negative_binomial`` (numbers) and
    ``_sample_generalized_negative_binomial`` (arrays).

    Example:
        >>> generalized_negative_binomial(2, 0.5, shape=(2,)).infer_shape()[1]
        [(2,)]
    """
    return _sample("generalized_negative_binomial", {"mu": mu, "alpha": alpha}, shape, dtype,
                   kwargs)


def multinomial(data, shape=_Null, get_prob=True, dtype="int32", **kwargs):
    """Category indices drawn from the probability rows of ``data`` (op
    ``_sample_multinomial``); with ``get_prob`` (the default for Symbols, as in MXNet) a
    second output holds each draw's log-probability.

    Example:
        >>> import hybridgpu as mx
        >>> len(multinomial(mx.sym.var("p"), shape=2))
        2
    """
    if not isinstance(data, Symbol):
        raise TypeError(f"sym.random.multinomial: data must be a Symbol, got "
                        f"{type(data).__name__}")
    return _op_function("_sample_multinomial")(data, get_prob=get_prob, dtype=dtype,
                                               **_given(shape=shape), **kwargs)


def shuffle(data, **kwargs):
    """The rows (first axis) of ``data`` in a random order.

    Example:
        >>> import hybridgpu as mx
        >>> shuffle(mx.sym.var("x")).name.startswith("_shuffle")
        True
    """
    return _op_function("_shuffle")(data, **kwargs)


__getattr__ = missing_name_hook(globals(), "mx.sym.random")
