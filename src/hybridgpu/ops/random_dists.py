"""More random ops: the exponential, gamma, Poisson, negative binomial and generalized negative
binomial distributions, each in MXNet's three forms, plus ``_sample_multinomial``.

* ``_random_<dist>``: scalar parameters as attributes, output of ``shape`` (``(1,)`` when not
  given);
* ``_random_<dist>_like``: scalar parameters, the shape and dtype of the input ``data``;
* ``_sample_<dist>``: parameter arrays as inputs, ``shape`` draws for each element (output shape
  ``param.shape + shape``).

The parameters are MXNet's: exponential ``lam`` (the rate), gamma ``alpha`` (shape) and ``beta``
(scale), Poisson ``lam``, negative binomial ``k`` (successes to reach) and ``p`` (the success
probability), the generalized negative binomial ``mu`` (mean) and ``alpha`` (dispersion; a
Poisson at 0). Counting distributions give float values (MXNet's default dtype float32). None
of these ops has a gradient; ``compute`` gets ``rng=`` as the ops of ``random.py`` do.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> op = ops.get("_random_poisson")
    >>> out = op.compute(np, **op.parse_attrs({"lam": 4, "shape": (3,)}),
    ...                  rng=np.random.RandomState(0))
    >>> out.shape, out.dtype.name, bool((out == np.round(out)).all())
    ((3,), 'float32', True)
"""

from __future__ import annotations

from ..base import MXNetError
from .attrs import Bool, Float, Int, Shape
from .creation import dtype_attr, require_known_shape
from .opdef import OpDef, register
from .rules import fixed_type, same_shape, same_type

__all__ = []

_FLOATS = ("float16", "float32", "float64")


def _draw_generalized_negative_binomial(rng, mu, alpha, size):
    """A Poisson whose rate is Gamma(1/alpha, alpha*mu) distributed (mean mu); where alpha is
    0 the rate is mu (a plain Poisson): Gamma(1, 0) draws 0, and mu is added there."""
    plain = alpha == 0
    rate = rng.gamma(1.0 / (alpha + plain), alpha * mu, size) + mu * plain
    return rng.poisson(rate, size)


def _draw_negative_binomial(rng, k, p, size):
    """Failures before ``k`` successes: a Poisson whose rate is Gamma(k, (1-p)/p) distributed
    (gamma and poisson are what NumPy's and CuPy's generators both have)."""
    return rng.poisson(rng.gamma(k, (1.0 - p) / p, size), size)


def _check_positive(op, **values):
    for key, value in values.items():
        if not hasattr(value, "shape") and not value > 0:
            raise MXNetError(f"{op}: {key} must be positive, got {value}")


def _check_probability(op, p):
    if not hasattr(p, "shape") and not 0 < p <= 1:
        raise MXNetError(f"{op}: p must be in (0, 1], got {p}")


# name -> (parameters with their attribute specs, draw(rng, *params, size), checks, doc)
_DISTRIBUTIONS = {
    "exponential": (
        {"lam": Float(default=1.0, doc="the rate (the mean is 1/lam)")},
        lambda rng, lam, size: rng.exponential(1.0 / lam, size),
        lambda op, lam: _check_positive(op, lam=lam),
        "the exponential distribution with rate lam"),
    "gamma": (
        {"alpha": Float(default=1.0, doc="shape"), "beta": Float(default=1.0, doc="scale")},
        lambda rng, alpha, beta, size: rng.gamma(alpha, beta, size),
        lambda op, alpha, beta: _check_positive(op, alpha=alpha, beta=beta),
        "the gamma distribution with shape alpha and scale beta"),
    "poisson": (
        {"lam": Float(default=1.0, doc="the rate (the mean)")},
        lambda rng, lam, size: rng.poisson(lam, size),
        lambda op, lam: _check_positive(op, lam=lam),
        "the Poisson distribution with rate lam"),
    "negative_binomial": (
        {"k": Int(default=1, doc="the number of successes to reach"),
         "p": Float(default=1.0, doc="the success probability of one trial")},
        _draw_negative_binomial,
        lambda op, k, p: (_check_positive(op, k=k), _check_probability(op, p)),
        "the negative binomial distribution (failures before k successes)"),
    "generalized_negative_binomial": (
        {"mu": Float(default=1.0, doc="the mean"),
         "alpha": Float(default=1.0, doc="the dispersion (0 gives a Poisson)")},
        _draw_generalized_negative_binomial,
        lambda op, mu, alpha: _check_positive(op, mu=mu),
        "the generalized negative binomial distribution with mean mu and dispersion alpha"),
}


def _scalar_compute(dist, op_name):
    params, draw, check, _ = _DISTRIBUTIONS[dist]

    def compute(xp, shape=None, dtype=None, *, rng, **values):
        check(op_name, *values.values())
        size = (1,) if shape is None else require_known_shape(op_name, shape)
        return draw(rng, *values.values(), size).astype(dtype or "float32", copy=False)

    return compute


def _like_compute(dist, op_name):
    params, draw, check, _ = _DISTRIBUTIONS[dist]

    def compute(xp, data, *, rng, **values):
        check(op_name, *values.values())
        return draw(rng, *values.values(), data.shape).astype(data.dtype, copy=False)

    return compute


def _sample_compute(dist, op_name):
    params, draw, _, _ = _DISTRIBUTIONS[dist]

    def compute(xp, *arrays, shape=(), dtype=None, rng):
        first = arrays[0]
        if any(a.shape != first.shape for a in arrays):
            raise MXNetError(f"{op_name}: the parameter arrays must have one shape, got "
                             f"{[a.shape for a in arrays]}")
        if any(d <= 0 for d in shape):
            raise MXNetError(f"{op_name}: shape {tuple(shape)} must have positive dimensions")
        size = first.shape + tuple(shape)
        tail = (1,) * len(shape)
        views = [a.astype("float64").reshape(a.shape + tail) for a in arrays]
        return draw(rng, *views, size).astype(dtype or "float32", copy=False)

    return compute


def _scalar_shape(attrs, in_shapes):
    shape = attrs["shape"]
    return list(in_shapes), [(1,) if shape is None else (tuple(shape) or None)]


def _sample_shape(attrs, in_shapes):
    param = None
    for s in in_shapes:
        if s is not None and param is not None and s != param:
            raise MXNetError(f"the parameter arrays must have one shape, got {in_shapes}")
        param = s if s is not None else param
    out = None if param is None else param + tuple(attrs["shape"])
    return [param] * len(in_shapes), [out]


def _sample_type(attrs, in_types):
    ins, _ = same_type(attrs, in_types)
    return ins, [attrs["dtype"] or "float32"]


def _register_distribution(dist):
    params, _, _, text = _DISTRIBUTIONS[dist]
    dtype = dtype_attr(_FLOATS, None, "the output dtype; float32 when not given")
    scalar, like, sample = f"_random_{dist}", f"_random_{dist}_like", f"_sample_{dist}"
    register(OpDef(
        scalar, aliases=(f"random_{dist}",), inputs=(), compute=_scalar_compute(dist, scalar),
        attrs={**params, "shape": Shape(default=None, doc="the output shape; (1,) when not "
                                                         "given"), "dtype": dtype},
        infer_shape=_scalar_shape, infer_type=fixed_type("dtype"), random=True, creation=True,
        doc=f"Samples from {text}.",
        example=f"nd.random.{dist}(shape=(2, 3)).shape  # (2, 3)"))
    register(OpDef(
        like, inputs=("data",), compute=_like_compute(dist, like), attrs=dict(params),
        infer_shape=same_shape, random=True,
        doc=f"Samples from {text}, with the shape and dtype of the input.",
        example=f"nd.random.{dist}_like(nd.zeros((2, 3))).shape  # (2, 3)"))
    register(OpDef(
        sample, aliases=(f"sample_{dist}",), inputs=tuple(params),
        compute=_sample_compute(dist, sample),
        attrs={"shape": Shape(default=(), doc="draws per distribution, appended to the "
                                              "parameter shape"), "dtype": dtype},
        infer_shape=_sample_shape, infer_type=_sample_type, random=True,
        doc=f"Samples from {text}, one distribution per element of the parameter arrays.",
        example=f"nd.random.{dist}(*[nd.ones((2,))] * {len(params)}, shape=3).shape  # (2, 3)"))


for _dist in _DISTRIBUTIONS:
    _register_distribution(_dist)


# -- multinomial ------------------------------------------------------------------------------

def _multinomial(xp, data, shape=(), get_prob=False, dtype="int32", *, rng):
    """Category indices drawn from each row of probabilities (the last axis of ``data``);
    with ``get_prob`` also the log-probability of each draw."""
    if data.ndim == 0:
        raise MXNetError("_sample_multinomial: data must have at least one dimension")
    rows = data.reshape(-1, data.shape[-1]).astype("float64")
    count = 1
    for d in shape:
        count *= d
    cdf = xp.cumsum(rows, axis=1)
    units = rng.uniform(0.0, 1.0, (rows.shape[0], count)) * cdf[:, -1:]
    picks = (units[:, :, None] >= cdf[:, None, :]).sum(axis=2)
    picks = xp.minimum(picks, rows.shape[1] - 1)
    out_shape = data.shape[:-1] + tuple(shape) or (1,)  # MXNet never gives a 0-d result
    samples = picks.reshape(out_shape).astype(dtype)
    if not get_prob:
        return samples
    chosen = xp.take_along_axis(rows, picks, axis=1)
    return samples, xp.log(chosen).reshape(out_shape).astype(data.dtype)


def _multinomial_shape(attrs, in_shapes):
    data = in_shapes[0]
    out = None if data is None else data[:-1] + tuple(attrs["shape"]) or (1,)
    return [data], [out] * (2 if attrs["get_prob"] else 1)


def _multinomial_type(attrs, in_types):
    out = [attrs["dtype"]] + ([in_types[0]] if attrs["get_prob"] else [])
    return list(in_types), out


register(OpDef(
    "_sample_multinomial", aliases=("sample_multinomial",), inputs=("data",),
    compute=_multinomial,
    attrs={"shape": Shape(default=(), doc="draws per distribution"),
           "get_prob": Bool(default=False, doc="also output the log-probability of each draw"),
           "dtype": dtype_attr(("float16", "float32", "float64", "int32", "uint8"), "int32",
                               "the dtype of the drawn indices")},
    num_outputs=lambda attrs: 2 if attrs["get_prob"] else 1,
    infer_shape=_multinomial_shape, infer_type=_multinomial_type, random=True,
    doc="Category indices drawn from the probability rows of the last axis of the input.",
    example="nd.random.multinomial(nd.array([[0.5, 0.5]]), shape=3).shape  # (1, 3)"))
