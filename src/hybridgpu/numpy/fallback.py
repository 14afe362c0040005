"""``mx.np`` functions that run NumPy itself on the host, as MXNet 1.9 runs them (its
``numpy/fallback.py`` list): the inputs are copied to the host, the official NumPy function runs,
and NumPy arrays in the result come back as ``mx.np`` arrays on the first input's device.
They have no gradient: called on an array autograd tracks, while recording, they raise.

Example:
    >>> import hybridgpu as mx
    >>> isclose(mx.np.array([1.0, 2.0]), 1.0), int(count_nonzero(mx.np.array([0, 1, 2])))
    (array([ True, False]), 2)
"""

from __future__ import annotations

import numpy as onp

from .. import tape
from ..base import MXNetError
from ..context import current_context
from ..ndarray import NDArray

# NumPy's names, as MXNet 1.9 falls back to them
FALLBACK = (
    "alltrue", "apply_along_axis", "apply_over_axes", "argpartition", "argwhere",
    "array_equiv", "choose", "compress", "corrcoef", "correlate", "count_nonzero", "cov",
    "digitize", "divmod", "extract", "flatnonzero", "float_power", "frexp", "heaviside",
    "histogram2d", "histogram_bin_edges", "histogramdd", "i0", "in1d", "interp", "intersect1d",
    "isclose", "isin", "ix_", "lexsort", "min_scalar_type", "mirr", "modf", "msort",
    "nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanmax", "nanmedian", "nanmin",
    "nanpercentile", "nanprod", "nanquantile", "npv", "partition", "piecewise", "packbits",
    "poly", "polyadd", "polydiv", "polyfit", "polyint", "polymul", "polysub", "positive", "ppmt",
    "promote_types", "ptp", "pv", "rate", "real", "result_type", "rollaxis", "roots",
    "searchsorted", "select", "setdiff1d", "setxor1d", "signbit", "spacing", "take_along_axis",
    "trapz", "tril_indices_from", "trim_zeros", "triu_indices_from", "union1d", "unpackbits",
    "unwrap", "vander",
)

__all__ = list(FALLBACK)


def _to_host(value, name, seen):
    if isinstance(value, NDArray):
        if tape.tracked(value):
            raise MXNetError(f"np.{name} runs NumPy on the host (as MXNet's fallback does) and "
                             "has no gradient; call it outside autograd.record() or on "
                             "x.detach()")
        seen.append(value._ctx)
        return value.asnumpy()
    if isinstance(value, (list, tuple)):
        return type(value)(_to_host(v, name, seen) for v in value)
    return value


def _to_device(value, ctx):
    from .multiarray import from_host

    if isinstance(value, onp.ndarray):
        return from_host(value, ctx)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(v, ctx) for v in value)
    return value


def make_fallback(name):
    """``mx.np.<name>``: NumPy's ``name`` on host copies of the inputs."""
    numpy_function = getattr(onp, name)

    def function(*args, **kwargs):
        seen = []
        host_args = _to_host(args, name, seen)
        host_kwargs = {k: _to_host(v, name, seen) for k, v in kwargs.items()}
        result = numpy_function(*host_args, **host_kwargs)
        return _to_device(result, seen[0] if seen else current_context())

    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"``numpy.{name}`` on host copies of the inputs (MXNet 1.9's "
                        "fallback; no gradient); see NumPy's documentation of it.")
    return function


for _name in FALLBACK:
    if hasattr(onp, _name):  # a few left NumPy 2 (alltrue, msort, trapz, in1d...)
        globals()[_name] = make_fallback(_name)
__all__ = [n for n in FALLBACK if n in globals()]
