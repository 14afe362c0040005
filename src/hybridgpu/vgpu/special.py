"""Host versions of the ``cupyx.scipy.special`` functions the virtual GPU offers (SciPy's when
it is installed, else these, computed in float64).

Example:
    >>> import numpy as np
    >>> np.round(HOST["erfinv"](np.array([0.0, 0.5])), 6).tolist()
    [0.0, 0.476936]
    >>> np.round(HOST["digamma"](np.array([1.0])), 6).tolist()
    [-0.577216]
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["HOST", "host_function"]


def _map(fn, x):
    x = np.asarray(x, dtype=np.float64)
    flat = [fn(v) for v in x.reshape(-1).tolist()]
    return np.array(flat, dtype=np.float64).reshape(x.shape)


def _gamma(v):
    if math.isnan(v) or v == -math.inf:
        return math.nan
    if v <= 0 and v == math.floor(v):
        return math.inf
    try:
        return math.gamma(v)
    except OverflowError:
        return math.inf


def _lgamma(v):
    if math.isnan(v):
        return math.nan
    if math.isinf(v):
        return math.inf
    if v <= 0 and v == math.floor(v):
        return math.inf
    return math.lgamma(v)


def _digamma(v):
    if math.isnan(v) or v == -math.inf:
        return math.nan
    if v == math.inf:
        return math.inf
    if v <= 0 and v == math.floor(v):
        return math.nan
    shift = 0.0
    if v < 0:  # reflection: psi(1 - x) - psi(x) = pi cot(pi x)
        return _digamma(1.0 - v) - math.pi / math.tan(math.pi * v)
    while v < 6.0:
        shift -= 1.0 / v
        v += 1.0
    inv2 = 1.0 / (v * v)
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132))))
    return shift + math.log(v) - 0.5 / v - series


def _erfinv(v):
    if math.isnan(v) or abs(v) > 1:
        return math.nan
    if abs(v) == 1:
        return math.copysign(math.inf, v)
    y = math.copysign(math.sqrt(-math.log((1.0 - abs(v)) / 2.0)), v) * 0.9 if abs(v) > 0.9 \
        else v * math.sqrt(math.pi) / 2.0
    for _ in range(60):  # Newton on erf(y) = v
        step = (math.erf(y) - v) / (2.0 / math.sqrt(math.pi) * math.exp(-y * y))
        y -= step
        if abs(step) <= 1e-16 * max(1.0, abs(y)):
            break
    return y


HOST = {
    "erf": lambda x: _map(math.erf, x),
    "erfc": lambda x: _map(math.erfc, x),
    "erfinv": lambda x: _map(_erfinv, x),
    "gamma": lambda x: _map(_gamma, x),
    "gammaln": lambda x: _map(_lgamma, x),
    "digamma": lambda x: _map(_digamma, x),
}


def host_function(name):
    """SciPy's ``special.<name>`` when SciPy is installed, else ``HOST[name]``."""
    try:
        from scipy import special
    except ImportError:
        return HOST[name]
    return getattr(special, name)
