"""Reductions over axes: ``sum, mean, max, min, prod, nansum, nanprod, norm, moments, argmax,
argmin, argmax_channel`` with MXNet's ``axis``/``keepdims``/``exclude`` semantics, and
``_reduce_sum_like``, the broadcast-gradient helper.

MXNet's rules, kept here: ``axis=None`` or ``()`` reduces every axis (with or without
``exclude``); a reduction over every axis gives shape ``(1,)``, never ``()``; ``exclude=True``
reduces the axes *not* listed; duplicate or out-of-range axes are errors naming the op. Results
keep the input's dtype (an int32 ``mean`` truncates toward zero, a uint8 ``sum`` wraps), and
``argmax``/``argmin`` return indices in the input's dtype too (float32 for float32 data).

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> s = ops.get("sum")
    >>> s.compute(np, np.ones((2, 3)), **s.parse_attrs({"axis": 1}))
    array([3., 3.])
    >>> m = ops.get("max")
    >>> m.compute(np, np.arange(6.0).reshape(2, 3), **m.parse_attrs({"exclude": True}))
    array([5.])
"""

from __future__ import annotations

import math

import numpy as np

from ..base import MXNetError
from .attrs import Axis, Bool, Enum, Int
from .lowering import Lowering, same_float
from .opdef import OpDef, register
from .rules import broadcast_shapes

__all__ = ["reduction_axes", "reduced_shape"]


# -- axes and shapes ------------------------------------------------------------------------

def reduction_axes(op, axis, shape, exclude=False):
    """The sorted axes a reduction of an array of ``shape`` covers, MXNet's way.

    ``None`` or ``()`` means every axis, with or without ``exclude``; otherwise the listed axes
    (negative ones count from the end), or with ``exclude`` every axis not listed. An axis out of
    range or listed twice raises MXNetError naming ``op``.
    """
    ndim = len(shape)
    if axis is None or axis == ():
        return tuple(range(ndim))
    given = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = []
    for a in given:
        if not -ndim <= a < ndim:
            raise MXNetError(f"{op}: axis {a} is out of range for an input of shape "
                             f"{tuple(shape)} (expected an axis in [{-ndim}, {ndim - 1}])")
        axes.append(a % ndim)
    if len(set(axes)) != len(axes):
        raise MXNetError(f"{op}: axis {axis} names an axis twice (input of shape "
                         f"{tuple(shape)}); list each axis once")
    if exclude:
        return tuple(i for i in range(ndim) if i not in axes)
    return tuple(sorted(axes))


def reduced_shape(shape, axes, keepdims):
    """``shape`` after reducing ``axes``: size-1 dims with ``keepdims``, at least ``(1,)``."""
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    out = tuple(d for i, d in enumerate(shape) if i not in axes)
    return out or (1,)


def _reduce_rule(op):
    def rule(attrs, in_shapes):
        shape = in_shapes[0]
        if shape is None:
            return in_shapes, [None]
        axes = reduction_axes(op, attrs.get("axis"), shape, attrs.get("exclude", False))
        return in_shapes, [reduced_shape(shape, axes, attrs["keepdims"])]

    return rule


_REDUCE_ATTRS = {
    "axis": Axis(default=None, doc="axis or axes to reduce; None or () for all"),
    "keepdims": Bool(default=False, doc="keep reduced axes with size 1"),
    "exclude": Bool(default=False, doc="reduce over every axis except those given"),
}


# -- compute --------------------------------------------------------------------------------

def _reduce_compute(op, fn_name, with_dtype):
    """compute for ``op``: ``xp.<fn_name>`` over the axes, result in the input's dtype."""
    functions = {}

    def compute(xp, x, axis=None, keepdims=False, exclude=False):
        fn = functions.get(xp)
        if fn is None:
            fn = functions[xp] = getattr(xp, fn_name)
        axes = reduction_axes(op, axis, x.shape, exclude)
        extra = {"dtype": x.dtype} if with_dtype else {}
        out = fn(x, axis=axes, keepdims=keepdims, **extra)
        if out.dtype != x.dtype:
            out = out.astype(x.dtype)
        return out.reshape(reduced_shape(x.shape, axes, keepdims))

    return compute


# -- gradients (built from ops) -------------------------------------------------------------

def _kept(F, y, x, axes, keepdims):
    """``y`` (a reduction result or its gradient) reshaped to keep the reduced axes."""
    if keepdims:
        return y
    return F.reshape(y, shape=reduced_shape(x.shape, axes, True))


def _sum_grad(F, ins, outs, gouts, axis=None, keepdims=False, exclude=False):
    x = ins[0]
    axes = reduction_axes("sum", axis, x.shape, exclude)
    return [F.broadcast_like(_kept(F, gouts[0], x, axes, keepdims), x)]


def _mean_grad(F, ins, outs, gouts, axis=None, keepdims=False, exclude=False):
    x = ins[0]
    axes = reduction_axes("mean", axis, x.shape, exclude)
    count = math.prod(x.shape[i] for i in axes)
    g = F._div_scalar(_kept(F, gouts[0], x, axes, keepdims), scalar=float(max(count, 1)))
    return [F.broadcast_like(g, x)]


def _extreme_grad(op):
    """max/min: every element equal to the result gets the whole gradient (ties included),
    as MXNet does."""

    def grad(F, ins, outs, gouts, axis=None, keepdims=False, exclude=False):
        x = ins[0]
        axes = reduction_axes(op, axis, x.shape, exclude)
        hit = F.broadcast_equal(x, _kept(F, outs[0], x, axes, keepdims))
        return [F.broadcast_mul(hit, _kept(F, gouts[0], x, axes, keepdims))]

    return grad


def _prod_grad(F, ins, outs, gouts, axis=None, keepdims=False, exclude=False):
    """g * prod / x, as MXNet computes it (NaN where x and the product are both 0)."""
    x = ins[0]
    axes = reduction_axes("prod", axis, x.shape, exclude)
    scale = F.broadcast_mul(_kept(F, gouts[0], x, axes, keepdims),
                            _kept(F, outs[0], x, axes, keepdims))
    return [F.broadcast_div(scale, x)]


def _nansum_grad(F, ins, outs, gouts, axis=None, keepdims=False, exclude=False):
    x = ins[0]
    axes = reduction_axes("nansum", axis, x.shape, exclude)
    not_nan = F.broadcast_equal(x, x)
    return [F.broadcast_mul(not_nan, _kept(F, gouts[0], x, axes, keepdims))]


def _nanprod_grad(F, ins, outs, gouts, axis=None, keepdims=False, exclude=False):
    x = ins[0]
    axes = reduction_axes("nanprod", axis, x.shape, exclude)
    scale = F.broadcast_mul(_kept(F, gouts[0], x, axes, keepdims),
                            _kept(F, outs[0], x, axes, keepdims))
    return [F.where(F.broadcast_equal(x, x), F.broadcast_div(scale, x), F.zeros_like(x))]


# name: (numpy function, pass dtype=, gradient, aliases, doc)
_REDUCTIONS = {
    "sum": ("sum", True, _sum_grad, ("sum_axis",), "Sum of array elements over the axes."),
    "mean": ("mean", False, _mean_grad, (), "Mean of array elements over the axes."),
    "max": ("max", False, _extreme_grad("max"), ("max_axis",),
            "Maximum over the axes (NaN if any element is NaN)."),
    "min": ("min", False, _extreme_grad("min"), ("min_axis",),
            "Minimum over the axes (NaN if any element is NaN)."),
    "prod": ("prod", True, _prod_grad, (), "Product of array elements over the axes."),
    "nansum": ("nansum", True, _nansum_grad, (), "Sum over the axes, NaN counted as 0."),
    "nanprod": ("nanprod", True, _nanprod_grad, (), "Product over the axes, NaN counted as 1."),
}


def _reduce_lowering(fn_name, with_dtype):
    """``xp.<fn>(x, axis=..., keepdims=..., out=y)`` (y viewed in the natural shape)."""

    def emit(site):
        name, attrs, t = site.op.name, site.attrs, site.out_dtypes[0]
        x, o, shape = site.ins[0], site.outs[0], site.in_shapes[0]
        axes = reduction_axes(name, attrs["axis"], shape, attrs["exclude"])
        keep = attrs["keepdims"]
        natural = reduced_shape(shape, axes, True) if keep else tuple(
            d for i, d in enumerate(shape) if i not in axes)
        out = o if natural == site.out_shapes[0] else site.view(o, natural)
        dtype = f", dtype={site.xp}.{t.name}" if with_dtype else ""
        return [f"{site.xp}.{fn_name}({x}, axis={axes!r}{dtype}, keepdims={keep}, out={out})"]

    def when(site):  # float16 goes through float32 in compute
        return same_float(site) and site.out_dtypes[0].itemsize >= 4

    return Lowering(emit, when)


def _register_reductions():
    for name, (fn_name, with_dtype, grad, aliases, doc) in _REDUCTIONS.items():
        lower = None if fn_name.startswith("nan") else _reduce_lowering(fn_name, with_dtype)
        register(OpDef(
            name, aliases=aliases, inputs=("data",), attrs=_REDUCE_ATTRS,
            compute=_reduce_compute(name, fn_name, with_dtype), infer_shape=_reduce_rule(name),
            grad=grad, doc=doc, lower=lower, views=False,
            example=f"nd.{name}(nd.ones((2, 3, 4)), axis=(0, 2)).shape  # (3,)"))


_register_reductions()


# -- norm -----------------------------------------------------------------------------------

_NORM_DTYPES = ("float16", "float32", "float64", "int32", "int64", "int8")


def _check_ord(ord):
    if ord not in (1, 2):
        raise MXNetError(f"norm: ord must be 1 or 2, got {ord}")


def _norm_compute(xp, x, ord=2, axis=None, out_dtype=None, keepdims=False):
    _check_ord(ord)
    axes = reduction_axes("norm", axis, x.shape)
    work = x.astype(np.float32) if x.dtype == np.float16 else x  # accumulate fp16 in fp32
    if ord == 1:
        out = xp.sum(xp.abs(work), axis=axes, keepdims=keepdims)
    else:
        out = xp.sqrt(xp.sum(work * work, axis=axes, keepdims=keepdims))
    return out.astype(out_dtype or x.dtype).reshape(reduced_shape(x.shape, axes, keepdims))


def _norm_shape(attrs, in_shapes):
    _check_ord(attrs["ord"])
    return _reduce_rule("norm")(attrs, in_shapes)


def _norm_type(attrs, in_types):
    dtype = in_types[0]
    return list(in_types), [attrs["out_dtype"] or dtype]


def _norm_grad(F, ins, outs, gouts, ord=2, axis=None, out_dtype=None, keepdims=False):
    """L1: g * sign(x); L2: g * x / norm (NaN for an all-zero slice, as in MXNet)."""
    x = ins[0]
    axes = reduction_axes("norm", axis, x.shape)
    g = _kept(F, gouts[0], x, axes, keepdims)
    if ord == 1:
        return [F.broadcast_mul(F.sign(x), g)]
    return [F.broadcast_mul(x, F.broadcast_div(g, _kept(F, outs[0], x, axes, keepdims)))]


register(OpDef(
    "norm", inputs=("data",),
    attrs={"ord": Int(default=2, doc="1 (sum of |x|) or 2 (Euclidean)"),
           "axis": Axis(default=None, doc="axis or axes to reduce; None for all"),
           "out_dtype": Enum(_NORM_DTYPES, default=None, doc="output dtype (default: input's)"),
           "keepdims": Bool(default=False, doc="keep reduced axes with size 1")},
    compute=_norm_compute, infer_shape=_norm_shape, infer_type=_norm_type, grad=_norm_grad,
    doc="L1 or L2 norm over the axes (over several axes: of the flattened slice).",
    example="nd.norm(nd.array([[3.0, 4.0]]), axis=1)  # [5.]"))


# -- moments --------------------------------------------------------------------------------

def _moment_axes(axes, shape):
    if axes is None or axes == ():
        raise MXNetError("moments: axes must name at least one axis (MXNet rejects empty axes; "
                         "list every axis for global moments)")
    return reduction_axes("moments", axes, shape)


def _moments_compute(xp, x, axes=None, keepdims=False):
    ax = _moment_axes(axes, x.shape)
    work = x if x.dtype.kind == "f" and x.dtype != np.float16 else x.astype(np.float64)
    mean = xp.mean(work, axis=ax, keepdims=True)
    var = xp.mean(xp.square(work - mean), axis=ax, keepdims=keepdims)
    shape = reduced_shape(x.shape, ax, keepdims)
    return mean.astype(x.dtype).reshape(shape), var.astype(x.dtype).reshape(shape)


def _moments_shape(attrs, in_shapes):
    shape = in_shapes[0]
    if shape is None:
        return in_shapes, [None, None]
    out = reduced_shape(shape, _moment_axes(attrs["axes"], shape), attrs["keepdims"])
    return in_shapes, [out, out]


def _moments_grad(F, ins, outs, gouts, axes=None, keepdims=False):
    """d/dx of (mean, var): g_mean / n + g_var * 2 (x - mean) / n."""
    x = ins[0]
    ax = _moment_axes(axes, x.shape)
    n = float(max(math.prod(x.shape[i] for i in ax), 1))
    g_mean, g_var, mean = (_kept(F, y, x, ax, keepdims) for y in (gouts[0], gouts[1], outs[0]))
    spread = F.broadcast_mul(F.broadcast_sub(x, mean), F._mul_scalar(g_var, scalar=2.0 / n))
    return [F.broadcast_add(spread, F._div_scalar(g_mean, scalar=n))]


register(OpDef(
    "moments", inputs=("data",),
    attrs={"axes": Axis(default=None, doc="axes to reduce (at least one)"),
           "keepdims": Bool(default=False, doc="keep reduced axes with size 1")},
    compute=_moments_compute, infer_shape=_moments_shape, grad=_moments_grad, num_outputs=2,
    doc="Mean and (population) variance over the axes: two outputs.",
    example="mean, var = nd.moments(nd.array([[1.0, 3.0]]), axes=(1,))  # [2.] [1.]"))


# -- argmax / argmin / argmax_channel -------------------------------------------------------

def _normalize_axis(op, axis, shape):
    ndim = len(shape)
    if not -ndim <= axis < ndim:
        raise MXNetError(f"{op}: axis {axis} is out of range for an input of shape "
                         f"{tuple(shape)} (expected an axis in [{-ndim}, {ndim - 1}])")
    return axis % ndim


def _arg_shape(op, shape, axis, keepdims):
    if axis is None:
        return (1,) * len(shape) if keepdims else (1,)
    ax = _normalize_axis(op, axis, shape)
    return reduced_shape(shape, (ax,), keepdims)


def _arg_compute(op, fn_name):
    def compute(xp, x, axis=None, keepdims=False):
        out_shape = _arg_shape(op, x.shape, axis, keepdims)
        fn = getattr(xp, fn_name)
        idx = fn(x.reshape(-1)) if axis is None else fn(x, axis=_normalize_axis(op, axis,
                                                                                 x.shape))
        return xp.asarray(idx).astype(x.dtype).reshape(out_shape)

    return compute


def _arg_rule(op):
    def rule(attrs, in_shapes):
        shape = in_shapes[0]
        if shape is None:
            return in_shapes, [None]
        return in_shapes, [_arg_shape(op, shape, attrs["axis"], attrs["keepdims"])]

    return rule


for _name, _fn in (("argmax", "argmax"), ("argmin", "argmin")):
    register(OpDef(
        _name, inputs=("data",),
        attrs={"axis": Int(default=None, doc="axis to reduce; None flattens the input"),
               "keepdims": Bool(default=False, doc="keep the reduced axis with size 1")},
        compute=_arg_compute(_name, _fn), infer_shape=_arg_rule(_name),
        doc=f"Index of the {_name[3:]}imum along an axis (the first one on ties), in the "
            "input's dtype. Not differentiable.",
        example=f"nd.{_name}(nd.array([[1.0, 3.0, 2.0]]), axis=1)"))


def _channel_axis(shape):
    if len(shape) < 2:
        raise MXNetError(f"argmax_channel: input must have at least 2 dims (axis 1 is the "
                         f"channel axis), got shape {tuple(shape)}")
    return 1


def _argmax_channel_compute(xp, x):
    return xp.argmax(x, axis=_channel_axis(x.shape)).astype(x.dtype)


def _argmax_channel_shape(attrs, in_shapes):
    shape = in_shapes[0]
    if shape is None:
        return in_shapes, [None]
    return in_shapes, [reduced_shape(shape, (_channel_axis(shape),), False)]


register(OpDef(
    "argmax_channel", inputs=("data",), compute=_argmax_channel_compute,
    infer_shape=_argmax_channel_shape,
    doc="Index of the maximum along axis 1 (the channel axis), in the input's dtype.",
    example="nd.argmax_channel(nd.array([[1.0, 3.0, 2.0]]))  # [1.]"))


# -- _reduce_sum_like -----------------------------------------------------------------------

def _reduce_sum_like_compute(xp, x, like):
    """Sum ``x`` down to ``like.shape`` (undo a broadcast)."""
    if x.shape == like.shape:
        return x
    lead = x.ndim - like.ndim
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(like.shape) if d == 1 and x.shape[lead + i] != 1)
    return xp.sum(x, axis=axes, dtype=x.dtype).reshape(like.shape)


def _reduce_sum_like_shape(attrs, in_shapes):
    x, like = in_shapes
    if x is not None and like is not None and broadcast_shapes(x, like) != x:
        raise ValueError(f"cannot reduce shape {x} to {like}")
    return in_shapes, [like]


register(OpDef(
    "_reduce_sum_like", inputs=("data", "like"), compute=_reduce_sum_like_compute,
    infer_shape=_reduce_sum_like_shape, nondiff_inputs=("like",),
    grad=lambda F, ins, outs, gouts: [F.broadcast_like(gouts[0], ins[0]), None],
    doc="Sum ``data`` over the axes along which ``like`` was broadcast to it (gradient "
        "helper of broadcast ops)."))
