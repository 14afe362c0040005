"""Cases for ``ops/elemwise_unary.py``: every unary math op, ``clip``, ``where``, ``Cast`` and
``_backward_gammaln``, with NumPy references (``math`` for erf/gamma, bisection for erfinv).

Domains keep inputs inside each function's domain and away from kinks and poles, so finite
differences are meaningful; the rounding ops get a case of exact ties (MXNet's rules).
"""

from __future__ import annotations

import math

import numpy as np

from op_harness import OpCase


def _vectorized(fn):
    return lambda x: np.array([fn(v) for v in x.astype(np.float64).ravel()]).reshape(x.shape)


def _erfinv_ref(y):
    """erfinv by bisection on math.erf (independent of the op's Newton iteration)."""
    y = y.astype(np.float64)
    lo, hi = np.full(y.shape, -6.0), np.full(y.shape, 6.0)
    erf = _vectorized(math.erf)
    for _ in range(64):
        mid = 0.5 * (lo + hi)
        below = erf(mid) < y
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return 0.5 * (lo + hi)


def _digamma_ref(x):
    """psi(x) for x > 0: psi(x) = psi(x + 1000) - sum 1/(x + k), then three asymptotic terms."""
    x = x.astype(np.float64)
    z = x + 1000.0
    shift = sum(1.0 / (x + k) for k in range(1000))
    return np.log(z) - 0.5 / z - 1.0 / (12 * z * z) + 1.0 / (120 * z**4) - shift


def _as_input_dtype(fn):
    return lambda x: fn(x).astype(x.dtype)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# name: (reference, domain); the reference sees the float inputs of the case's dtype.
_SMOOTH = {
    "relu": (lambda x: np.maximum(x, 0), (-2.0, 2.0)),
    "sigmoid": (_sigmoid, (-3.0, 3.0)),
    "tanh": (np.tanh, (-2.0, 2.0)),
    "softsign": (lambda x: x / (1 + np.abs(x)), (-2.0, 2.0)),
    "negative": (np.negative, (-2.0, 2.0)),
    "abs": (np.abs, (-2.0, 2.0)),
    "exp": (np.exp, (-2.0, 2.0)),
    "expm1": (np.expm1, (-2.0, 2.0)),
    "log": (np.log, (0.5, 3.0)),
    "log1p": (np.log1p, (-0.5, 2.0)),
    "log2": (np.log2, (0.5, 3.0)),
    "log10": (np.log10, (0.5, 3.0)),
    "sqrt": (np.sqrt, (0.5, 3.0)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.5, 3.0)),
    "cbrt": (np.cbrt, (0.5, 3.0)),
    "rcbrt": (lambda x: 1 / np.cbrt(x), (0.5, 3.0)),
    "square": (np.square, (-2.0, 2.0)),
    "reciprocal": (np.reciprocal, (0.5, 2.0)),
    "erf": (_as_input_dtype(_vectorized(math.erf)), (-2.0, 2.0)),
    "erfinv": (_as_input_dtype(_erfinv_ref), (-0.9, 0.9)),
    "gamma": (_as_input_dtype(_vectorized(math.gamma)), (0.5, 3.0)),
    "gammaln": (_as_input_dtype(_vectorized(math.lgamma)), (0.5, 3.0)),
    "sin": (np.sin, (-3.0, 3.0)),
    "cos": (np.cos, (-3.0, 3.0)),
    "tan": (np.tan, (-1.2, 1.2)),
    "arcsin": (np.arcsin, (-0.9, 0.9)),
    "arccos": (np.arccos, (-0.9, 0.9)),
    "arctan": (np.arctan, (-3.0, 3.0)),
    "sinh": (np.sinh, (-2.0, 2.0)),
    "cosh": (np.cosh, (-2.0, 2.0)),
    "arcsinh": (np.arcsinh, (-3.0, 3.0)),
    "arccosh": (np.arccosh, (1.2, 3.0)),
    "arctanh": (np.arctanh, (-0.9, 0.9)),
    "degrees": (np.degrees, (-3.0, 3.0)),
    "radians": (np.radians, (-200.0, 200.0)),
}


def _round_half_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _rint_half_down(x):
    return np.ceil(x - 0.5)


# Piecewise-constant ops: gradient zero away from the jumps.
_STEPS = {
    "sign": np.sign,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": _round_half_away,
    "rint": _rint_half_down,
    "fix": np.fix,
    "trunc": np.trunc,
    "logical_not": lambda x: (x == 0).astype(x.dtype),
}
_TIES = [-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -0.7, 0.7, 0.0, 4.0]


def _ints(low, high, shape=(3, 4)):
    return lambda rng, dtype: [rng.randint(low, high, size=shape).astype(dtype)]


def _int_math(fn):
    """MXNet's int semantics: computed in float, truncated back to the input's int dtype."""
    return lambda x: fn(x.astype(np.float64)).astype(x.dtype)


def _math_cases():
    cases = [OpCase(name, shapes=[(3, 4)], ref=ref, domain=domain)
             for name, (ref, domain) in _SMOOTH.items()]
    cases += [OpCase(name, shapes=[(3, 4)], ref=ref, domain=(-3.0, 3.0))
              for name, ref in _STEPS.items()]
    cases += [OpCase(name, make=lambda rng, dtype: [np.array(_TIES, dtype=dtype)], ref=ref,
                     grad=False, id="ties") for name, ref in _STEPS.items()]
    cases += [
        OpCase("cbrt", shapes=[(3, 4)], ref=np.cbrt, domain=(-3.0, -0.5), id="negative"),
        OpCase("reciprocal", shapes=[(3, 4)], ref=np.reciprocal, domain=(-2.0, -0.5),
               id="negative"),
        OpCase("gamma", shapes=[(3, 4)], ref=_as_input_dtype(_vectorized(math.gamma)),
               domain=(-0.9, -0.1), id="negative"),
        OpCase("gammaln", shapes=[(3, 4)], ref=_as_input_dtype(_vectorized(math.lgamma)),
               domain=(-0.9, -0.1), id="negative"),
        OpCase("logical_not", make=lambda rng, dtype: [np.array([0, 1, -2, 0, 0.5], dtype)],
               ref=lambda x: (x == 0).astype(x.dtype), grad=False, id="zeros"),
        OpCase("_backward_gammaln", shapes=[(3, 4), (3, 4)],
               make=lambda rng, dtype: [rng.uniform(-2, 2, (3, 4)).astype(dtype),
                                        rng.uniform(0.5, 3.0, (3, 4)).astype(dtype)],
               ref=lambda g, x: (g * _digamma_ref(x)).astype(g.dtype), grad=False),
    ]
    for name, fn in (("exp", np.exp), ("sqrt", np.sqrt), ("sigmoid", _sigmoid),
                     ("degrees", np.degrees), ("reciprocal", np.reciprocal),
                     ("gammaln", _vectorized(math.lgamma))):
        cases.append(OpCase(name, make=_ints(1, 9), ref=_int_math(fn), dtypes=("int32",),
                            grad=False, id="int32"))
    exact_on_ints = {"abs": np.abs, "sign": np.sign, "square": np.square,
                     "negative": np.negative, "floor": np.floor, "round": _round_half_away,
                     "relu": lambda x: np.maximum(x, 0)}
    for name, fn in exact_on_ints.items():
        cases.append(OpCase(name, make=_ints(-9, 9), ref=lambda x, fn=fn: fn(x).astype(x.dtype),
                            dtypes=("int32", "int64"), grad=False, id="int"))
    return cases


def _where_inputs(cond_shape, shape):
    def make(rng, dtype):
        cond = (rng.uniform(size=cond_shape) > 0.5).astype(dtype)
        return [cond, rng.uniform(-2, 2, shape).astype(dtype),
                rng.uniform(-2, 2, shape).astype(dtype)]

    return make


_ALPHA = float(np.float32(0.2))  # MXNet's default alpha, a C float


def _hard_sigmoid(x, alpha=_ALPHA, beta=0.5):
    return np.minimum(np.maximum(alpha * x + beta, 0), 1).astype(x.dtype)


def _smooth_l1(x, scalar=1.0, **_):
    s2 = scalar * scalar
    quadratic = 0.5 * s2 * x.astype(np.float64) ** 2
    return np.where(np.abs(x) < 1 / s2, quadratic, np.abs(x) - 0.5 / s2).astype(x.dtype)


def _other_cases():
    return [
        OpCase("identity", shapes=[(3, 4)], ref=lambda x: x.copy()),
        OpCase("_copy", make=_ints(-9, 9), ref=lambda x: x.copy(), dtypes=("int32",),
               grad=False, id="int32"),
        # BlockGrad's gradient is zero by definition, so finite differences cannot check it.
        OpCase("BlockGrad", shapes=[(3, 4)], ref=lambda x: x.copy(), grad=False),
        OpCase("hard_sigmoid", shapes=[(3, 4)], domain=(-4.0, 4.0), ref=_hard_sigmoid),
        OpCase("hard_sigmoid", shapes=[(3, 4)], attrs={"alpha": 0.25, "beta": 0.4},
               domain=(-4.0, 4.0), ref=lambda x, alpha, beta: _hard_sigmoid(
                   x, float(np.float32(alpha)), float(np.float32(beta))),
               id="attrs"),
        OpCase("smooth_l1", shapes=[(3, 4)], domain=(-2.0, 2.0), ref=_smooth_l1),
        OpCase("smooth_l1", shapes=[(3, 4)], attrs={"scalar": 2.0}, domain=(-1.0, 1.0),
               ref=_smooth_l1, id="sigma2"),
        OpCase("smooth_l1", make=_ints(-4, 4), attrs={"scalar": 1}, ref=_smooth_l1,
               dtypes=("int32",), grad=False, id="int32"),
        # MXNet keeps clip's bounds as C floats: 0.8 is float32(0.8) even for float64 data.
        OpCase("clip", shapes=[(3, 4)], attrs={"a_min": -0.5, "a_max": 0.8},
               ref=lambda x, a_min, a_max: np.clip(x, float(np.float32(a_min)),
                                                   float(np.float32(a_max))).astype(x.dtype)),
        OpCase("clip", shapes=[(3, 4)], attrs={"a_min": 1.0, "a_max": -1.0}, grad=False,
               ref=lambda x, a_min, a_max: np.where(
                   x > a_max, a_max, np.where(x < a_min, a_min, x)).astype(x.dtype),
               id="inverted"),
        OpCase("clip", make=_ints(-9, 9), attrs={"a_min": -2.7, "a_max": 6.5},
               ref=lambda x, **_: np.clip(x, -2, 6), dtypes=("int32",), grad=False,
               id="int32"),
        OpCase("clip", make=_ints(0, 200), attrs={"a_min": 3.0, "a_max": -1.0},
               ref=lambda x, **_: np.full(x.shape, 255, np.uint8), dtypes=("uint8",),
               grad=False, id="uint8-inverted"),
        OpCase("where", make=_where_inputs((3, 4), (3, 4)),
               ref=lambda c, x, y: np.where(c != 0, x, y)),
        OpCase("where", make=_where_inputs((3,), (3, 4, 2)),
               ref=lambda c, x, y: np.where(c[:, None, None] != 0, x, y), id="rows"),
        OpCase("Cast", shapes=[(3, 4)], attrs={"dtype": "float64"},
               ref=lambda x, dtype: x.astype(np.float64)),
        OpCase("cast", shapes=[(3, 4)], attrs={"dtype": "float16"}, grad=False,
               ref=lambda x, dtype: x.astype(np.float16), id="float16"),
        OpCase("Cast", shapes=[(3, 4)], attrs={"dtype": "int32"}, domain=(-5.0, 5.0),
               grad=False, ref=lambda x, dtype: np.trunc(x).astype(np.int32), id="int32"),
        OpCase("Cast", make=_ints(0, 200), attrs={"dtype": "uint8"}, dtypes=("int32",),
               grad=False, ref=lambda x, dtype: x.astype(np.uint8), id="uint8"),
    ]


CASES = _math_cases() + _other_cases()
TESTED_ELSEWHERE = {
    "BlockGrad": "test_mxnet_op_fixtures.py::test_gradient_matches_mxnet[BlockGrad] (zero)",
}
