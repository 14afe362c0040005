"""Cases for ``ops/reduce.py``: every reduction with MXNet's axis variants (all axes, one axis,
negative axes, tuples, ``keepdims``, ``exclude``), ``norm``, and the ``arg*`` ops."""

from __future__ import annotations

import numpy as np

from op_harness import OpCase


def _axes(x, axis, exclude):
    """MXNet's reduction axes: None/() is every axis, with or without exclude."""
    if axis is None or axis == ():
        return tuple(range(x.ndim))
    listed = {a % x.ndim for a in ((axis,) if isinstance(axis, int) else axis)}
    if exclude:
        return tuple(a for a in range(x.ndim) if a not in listed)
    return tuple(sorted(listed))


def _reduce_ref(fn):
    def ref(x, axis=None, keepdims=False, exclude=False):
        out = np.asarray(fn(x, axis=_axes(x, axis, exclude), keepdims=keepdims))
        return (out.reshape(1) if out.ndim == 0 else out).astype(x.dtype)

    return ref


def _with_nans(shape, low=-2.0, high=2.0):
    """Random data with a few NaNs (never a whole row, so results stay finite)."""
    def make(rng, dtype):
        x = rng.uniform(low, high, size=shape).astype(dtype)
        x.reshape(-1)[[1, 7, 14]] = np.nan
        return [x]

    return make


_FUNCTIONS = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod,
              "nansum": np.nansum, "nanprod": np.nanprod}
_VARIANTS = [
    ({}, "all"),
    ({"axis": 1}, "axis1"),
    ({"axis": -1}, "axis-1"),
    ({"axis": (0, 2), "keepdims": True}, "tuple-keepdims"),
    ({"axis": (-1, -3)}, "negative-tuple"),
    ({"axis": 1, "exclude": True}, "exclude"),
    ({"axis": (0, 1), "exclude": True, "keepdims": True}, "exclude-keepdims"),
    ({"exclude": True}, "exclude-none"),
    ({"keepdims": True}, "all-keepdims"),
    ({"axis": ()}, "empty-tuple"),
]


def _reduction_cases():
    cases = []
    for name, fn in _FUNCTIONS.items():
        domain = (0.5, 1.5) if "prod" in name else (-2.0, 2.0)
        for attrs, tag in _VARIANTS:
            make = _with_nans((2, 3, 4), *domain) if name.startswith("nan") else None
            cases.append(OpCase(name, shapes=[(2, 3, 4)], attrs=attrs, ref=_reduce_ref(fn),
                                domain=domain, make=make, id=tag))
    cases += [
        OpCase("sum_axis", shapes=[(3, 4)], attrs={"axis": 0}, ref=_reduce_ref(np.sum),
               id="alias"),
        OpCase("max_axis", shapes=[(3, 4)], attrs={"axis": 1}, ref=_reduce_ref(np.max),
               id="alias"),
        OpCase("min_axis", shapes=[(3, 4)], attrs={"axis": 1}, ref=_reduce_ref(np.min),
               id="alias"),
        OpCase("sum", shapes=[(5,)], attrs={"axis": 0}, ref=_reduce_ref(np.sum), id="1d"),
        OpCase("mean", shapes=[(2, 3, 4)], attrs={"axis": (0, 1, 2), "exclude": True},
               ref=_reduce_ref(np.mean), id="exclude-every-axis"),
        OpCase("sum", make=lambda rng, dtype: [rng.randint(-9, 9, (3, 4)).astype(np.int32)],
               attrs={"axis": 1}, ref=_reduce_ref(np.sum), grad=False, dtypes=("int32",),
               id="int32"),
        # int mean truncates toward zero, as MXNet's integer division does
        OpCase("mean", make=lambda rng, dtype: [np.array([[-1, -2], [-3, -6], [7, 8]], np.int32)],
               attrs={"axis": 1}, ref=lambda x, axis: np.trunc(x.mean(axis=1)).astype(np.int32),
               grad=False, dtypes=("int32",), id="int32"),
    ]
    return cases


def _ties(rng, dtype):
    """Small integers: every row has repeated maxima and minima."""
    return [rng.randint(0, 3, size=(4, 6)).astype(dtype)]


def _tie_grad_case(name):
    """max/min with ties: every tied element gets the whole gradient (MXNet's rule)."""
    x = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 1.0, 2.0]])
    return OpCase(name, make=lambda rng, dtype: [x.astype(dtype)], attrs={"axis": 1},
                  ref=_reduce_ref(getattr(np, name)), grad=False, id="ties")


def _norm_ref(x, ord=2, axis=None, keepdims=False, out_dtype=None):
    axes = _axes(x, axis, False)
    a = x.astype(np.float64)
    out = (np.abs(a).sum(axis=axes, keepdims=keepdims) if ord == 1
           else np.sqrt((a * a).sum(axis=axes, keepdims=keepdims)))
    return (out.reshape(1) if out.ndim == 0 else out).astype(out_dtype or x.dtype)


def _norm_cases():
    variants = [({}, "l2-all"), ({"ord": 1}, "l1-all"), ({"axis": 1}, "l2-axis1"),
                ({"ord": 1, "axis": -1}, "l1-axis-1"),
                ({"axis": (0, 2), "keepdims": True}, "l2-tuple-keepdims"),
                ({"ord": 1, "axis": (0, 2)}, "l1-tuple"), ({"keepdims": True}, "keepdims")]
    cases = [OpCase("norm", shapes=[(2, 3, 4)], attrs=a, ref=_norm_ref, id=tag)
             for a, tag in variants]
    cases.append(OpCase("norm", shapes=[(2, 3)], attrs={"axis": 1, "out_dtype": "float64"},
                        ref=_norm_ref, grad=False, id="out-dtype"))
    return cases


def _arg_ref(fn):
    def ref(x, axis=None, keepdims=False):
        if axis is None:
            out = np.asarray(fn(x.reshape(-1))).reshape((1,) * x.ndim if keepdims else (1,))
        else:
            out = fn(x, axis=axis)
            out = np.expand_dims(out, axis) if keepdims else out
        return out.astype(x.dtype)

    return ref


def _arg_cases():
    cases = []
    for name, fn in (("argmax", np.argmax), ("argmin", np.argmin)):
        for attrs, tag in (({"axis": 1}, "axis1"), ({"axis": -1, "keepdims": True}, "keepdims"),
                           ({}, "flat"), ({"keepdims": True}, "flat-keepdims"),
                           ({"axis": 0}, "axis0")):
            cases.append(OpCase(name, shapes=[(2, 3, 4)], attrs=attrs, ref=_arg_ref(fn), id=tag))
        cases.append(OpCase(name, make=_ties, attrs={"axis": 1}, ref=_arg_ref(fn),
                            id="first-of-ties"))
    cases += [
        OpCase("argmax_channel", shapes=[(3, 5)], ref=lambda x: x.argmax(1).astype(x.dtype)),
        OpCase("argmax_channel", shapes=[(2, 3, 4)], ref=lambda x: x.argmax(1).astype(x.dtype),
               id="3d"),
    ]
    return cases


def _moments_ref(x, axes, keepdims=False):
    a = x.astype(np.float64)
    mean = a.mean(axis=axes, keepdims=True)
    var = ((a - mean) ** 2).mean(axis=axes, keepdims=keepdims)
    return mean.reshape(var.shape).astype(x.dtype), var.astype(x.dtype)


_MOMENTS = [
    OpCase("moments", shapes=[(2, 3, 4)], attrs={"axes": (0, 2)}, ref=_moments_ref),
    OpCase("moments", shapes=[(2, 3, 4)], attrs={"axes": -1, "keepdims": True},
           ref=_moments_ref, id="keepdims"),
    OpCase("moments", shapes=[(2, 3)], attrs={"axes": (0, 1)}, ref=lambda x, axes: tuple(
        r.reshape(1) for r in _moments_ref(x, axes)), id="all"),
]

CASES = (_MOMENTS + _reduction_cases() + [_tie_grad_case("max"), _tie_grad_case("min")]
         + _norm_cases() + _arg_cases())
