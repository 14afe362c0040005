"""Random ops: draws from the per-context generator that ``mx.random.seed`` resets.

* ``_random_uniform``, ``_random_normal``, ``_random_randint``: scalar parameters, the output
  shape from ``shape`` (``(1,)`` when it is not given);
* ``_random_uniform_like``, ``_random_normal_like``: the shape and dtype of an input array;
* ``_sample_uniform``, ``_sample_normal``: one distribution per element of parameter arrays,
  ``shape`` draws from each (output shape ``param.shape + shape``);
* ``_shuffle``: a random permutation of the rows (first axis) of its input.

``compute`` gets ``rng=``, a NumPy or CuPy ``RandomState``, and uses only the methods both have
(``uniform``, ``normal``, ``randint``, ``permutation``). Values are drawn in float64 and cast,
so a float32 uniform draw could round up to ``high``: it is capped below ``high`` to keep
MXNet's half-open interval ``[low, high)``. None of these ops has a gradient. The ops without
inputs are ``creation`` ops too; their MXNet ``ctx`` attribute is left out of the schema, as
for the ops in ``creation.py``.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> op = ops.get("_random_uniform")
    >>> rng = np.random.RandomState(0)
    >>> out = op.compute(np, **op.parse_attrs({"low": 1, "high": 2, "shape": (2, 3)}), rng=rng)
    >>> out.shape, out.dtype.name, bool(((out >= 1) & (out < 2)).all())
    ((2, 3), 'float32', True)
"""

from __future__ import annotations

import numpy as np

from ..base import MXNetError
from .attrs import Float, Int, Shape
from .creation import dtype_attr, require_known_shape
from .opdef import OpDef, register
from .rules import fixed_type, same_shape, same_type

__all__ = []

_FLOATS = ("float16", "float32", "float64")
_SHAPE = Shape(default=None, doc="the shape of the output; (1,) when not given")


def _float_dtype():
    return dtype_attr(_FLOATS, None, "the output dtype; float32 when not given")


def _out_shape(op, shape):
    return (1,) if shape is None else require_known_shape(op, shape)


def _cast(values, dtype):
    return values.astype(dtype, copy=False)


def _uniform_values(xp, rng, low, high, size, dtype):
    """Draws on ``[low, high)`` in ``dtype``. Rounding a float64 draw to ``dtype`` can reach
    ``high``; such draws are capped at the largest ``dtype`` value below it."""
    kind = np.dtype(dtype).type
    values = _cast(rng.uniform(low, high, size), dtype)
    return xp.minimum(values, np.nextafter(kind(high), kind(low)))


def _check_uniform(op, low, high):
    if not low <= high:
        raise MXNetError(f"{op}: low must be less than or equal to high, got low={low}, "
                         f"high={high}")


def _check_normal(op, scale):
    if not scale > 0:
        raise MXNetError(f"{op}: scale (the standard deviation) must be positive, got {scale}")


# -- scalar parameters ------------------------------------------------------------------------

def _uniform(xp, low=0.0, high=1.0, shape=None, dtype=None, *, rng):
    _check_uniform("_random_uniform", low, high)
    size = _out_shape("_random_uniform", shape)
    return _uniform_values(xp, rng, low, high, size, dtype or "float32")


def _normal(xp, loc=0.0, scale=1.0, shape=None, dtype=None, *, rng):
    _check_normal("_random_normal", scale)
    return _cast(rng.normal(loc, scale, _out_shape("_random_normal", shape)), dtype or "float32")


def _randint(xp, low, high, shape=None, dtype=None, *, rng):
    if not low < high:
        raise MXNetError(f"_random_randint: low must be less than high (the draws are in "
                         f"[low, high)), got low={low}, high={high}")
    size = _out_shape("_random_randint", shape)
    return rng.randint(low, high, size=size, dtype=dtype or "int32")


def _scalar_shape(attrs, in_shapes):
    shape = attrs["shape"]
    return list(in_shapes), [(1,) if shape is None else (tuple(shape) or None)]


register(OpDef(
    "_random_uniform", aliases=("uniform", "random_uniform"), inputs=(), compute=_uniform,
    attrs={"low": Float(default=0.0, doc="lower bound (included)"),
           "high": Float(default=1.0, doc="upper bound (excluded)"),
           "shape": _SHAPE, "dtype": _float_dtype()},
    infer_shape=_scalar_shape, infer_type=fixed_type("dtype"), random=True, creation=True,
    doc="Samples from the uniform distribution on [low, high).",
    example="nd.random.uniform(0, 1, shape=(2, 3)).shape  # (2, 3)"))

register(OpDef(
    "_random_normal", aliases=("normal", "random_normal"), inputs=(), compute=_normal,
    attrs={"loc": Float(default=0.0, doc="mean"),
           "scale": Float(default=1.0, doc="standard deviation (positive)"),
           "shape": _SHAPE, "dtype": _float_dtype()},
    infer_shape=_scalar_shape, infer_type=fixed_type("dtype"), random=True, creation=True,
    doc="Samples from the normal distribution N(loc, scale**2).",
    example="nd.random.normal(0, 1, shape=(2, 3)).shape  # (2, 3)"))

register(OpDef(
    "_random_randint", aliases=("random_randint",), inputs=(), compute=_randint,
    attrs={"low": Int(doc="lower bound (included)"),
           "high": Int(doc="upper bound (excluded)"),
           "shape": _SHAPE,
           "dtype": dtype_attr(("int32", "int64"), None, "the output dtype; int32 when not "
                                                         "given")},
    infer_shape=_scalar_shape, infer_type=fixed_type("dtype", "int32"), random=True,
    creation=True,
    doc="Samples integers uniformly from [low, high).",
    example="nd.random.randint(0, 10, shape=(4,)).dtype  # int32"))


# -- the shape and dtype of an input ----------------------------------------------------------

def _uniform_like(xp, data, low=0.0, high=1.0, *, rng):
    _check_uniform("_random_uniform_like", low, high)
    return _uniform_values(xp, rng, low, high, data.shape, data.dtype)


def _normal_like(xp, data, loc=0.0, scale=1.0, *, rng):
    _check_normal("_random_normal_like", scale)
    return _cast(rng.normal(loc, scale, data.shape), data.dtype)


register(OpDef(
    "_random_uniform_like", inputs=("data",), compute=_uniform_like,
    attrs={"low": Float(default=0.0, doc="lower bound (included)"),
           "high": Float(default=1.0, doc="upper bound (excluded)")},
    infer_shape=same_shape, random=True,
    doc="Uniform samples on [low, high) with the shape and dtype of the input.",
    example="nd.random.uniform_like(nd.zeros((2, 3))).shape  # (2, 3)"))

register(OpDef(
    "_random_normal_like", inputs=("data",), compute=_normal_like,
    attrs={"loc": Float(default=0.0, doc="mean"),
           "scale": Float(default=1.0, doc="standard deviation (positive)")},
    infer_shape=same_shape, random=True,
    doc="Normal samples N(loc, scale**2) with the shape and dtype of the input.",
    example="nd.random.normal_like(nd.zeros((2, 3))).shape  # (2, 3)"))


# -- array parameters -------------------------------------------------------------------------

def _param_views(op, a, b, shape):
    """The two parameter arrays reshaped to broadcast over ``shape`` trailing draws."""
    if a.shape != b.shape:
        raise MXNetError(f"{op}: the parameter arrays must have one shape, got {a.shape} and "
                         f"{b.shape}")
    if any(d <= 0 for d in shape):
        raise MXNetError(f"{op}: shape {tuple(shape)} must have positive dimensions")
    tail = (1,) * len(shape)
    return a.reshape(a.shape + tail), b.reshape(b.shape + tail), a.shape + tuple(shape)


def _sample_uniform(xp, low, high, shape=(), dtype=None, *, rng):
    low_v, high_v, size = _param_views("_sample_uniform", low, high, shape)
    unit = rng.uniform(0.0, 1.0, size)
    values = _cast(low_v + (high_v - low_v) * unit, dtype or "float32")
    high_v = _cast(high_v, values.dtype)  # cap rounding up to high, as in _uniform_values
    return xp.minimum(values, xp.nextafter(high_v, _cast(low_v, values.dtype)))


def _sample_normal(xp, mu, sigma, shape=(), dtype=None, *, rng):
    mu_v, sigma_v, size = _param_views("_sample_normal", mu, sigma, shape)
    return _cast(mu_v + sigma_v * rng.normal(0.0, 1.0, size), dtype or "float32")


def _sample_shape(attrs, in_shapes):
    a, b = in_shapes
    if a is not None and b is not None and a != b:
        raise MXNetError(f"the parameter arrays must have one shape, got {a} and {b}")
    param = a if a is not None else b
    return [param, param], [None if param is None else param + tuple(attrs["shape"])]


def _sample_type(attrs, in_types):
    ins, _ = same_type(attrs, in_types)
    return ins, [attrs["dtype"] or "float32"]


_SAMPLE_SHAPE = Shape(default=(), doc="draws per distribution, appended to the parameter shape")

register(OpDef(
    "_sample_uniform", aliases=("sample_uniform",), inputs=("low", "high"),
    compute=_sample_uniform, attrs={"shape": _SAMPLE_SHAPE, "dtype": _float_dtype()},
    infer_shape=_sample_shape, infer_type=_sample_type, random=True,
    doc="Uniform samples on [low[i], high[i]) for each element i of the parameter arrays.",
    example="nd.random.uniform(nd.zeros((2,)), nd.ones((2,)), shape=3).shape  # (2, 3)"))

register(OpDef(
    "_sample_normal", aliases=("sample_normal",), inputs=("mu", "sigma"),
    compute=_sample_normal, attrs={"shape": _SAMPLE_SHAPE, "dtype": _float_dtype()},
    infer_shape=_sample_shape, infer_type=_sample_type, random=True,
    doc="Normal samples N(mu[i], sigma[i]**2) for each element i of the parameter arrays.",
    example="nd.random.normal(nd.zeros((2,)), nd.ones((2,)), shape=3).shape  # (2, 3)"))


# -- permutation ------------------------------------------------------------------------------

def _shuffle(xp, data, *, rng):
    if data.ndim == 0:
        raise MXNetError("_shuffle: data must have at least one dimension, got a 0-d array")
    return data[rng.permutation(data.shape[0])]


register(OpDef(
    "_shuffle", aliases=("shuffle",), inputs=("data",), compute=_shuffle,
    infer_shape=same_shape, random=True,
    doc="The rows of the input (its first axis) in a random order; the input is unchanged.",
    example="nd.random.shuffle(nd.arange(6).reshape((3, 2))).shape  # (3, 2)"))
