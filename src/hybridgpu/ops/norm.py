"""Normalization ops: ``BatchNorm`` (with its hidden ``_backward_BatchNorm``), ``LayerNorm``,
``InstanceNorm``, ``GroupNorm`` and ``L2Normalization``, with MXNet 1.9's inputs, attributes,
outputs and gradients.

Facts checked against MXNet 1.9.1 (the tests pin them):

* BatchNorm, LayerNorm, GroupNorm and InstanceNorm have three outputs, one visible unless
  ``output_mean_var``: BatchNorm's are ``(output, mean, var)`` where ``var`` is really the
  *inverse std* ``1/sqrt(var + eps)``; LayerNorm's and GroupNorm's are ``(output, mean, std)``
  with ``std = sqrt(var + eps)``; InstanceNorm's hidden ones are ``(mean, var)`` of shape
  ``(N, C)``. No gradient flows back through the mean/std outputs (MXNet ignores their head
  gradients too).
* BatchNorm in training (and not ``use_global_stats``) normalizes with the batch mean and the
  biased batch variance and updates its auxiliary states in place:
  ``moving = moving * momentum + batch_stat * (1 - momentum)`` (biased variance). In inference,
  or with ``use_global_stats``, it uses ``moving_mean``/``moving_var``. ``fix_gamma`` (default
  True) uses gamma = 1 and gives gamma a zero gradient. float16 data keeps float32 parameters.
* Deliberate differences: the moving statistics are updated in the forward pass (MXNet 1.9.1's
  CPU build updates them in the backward pass, so a training forward without backward leaves
  them unchanged there; its cuDNN path updates them in the forward, with the unbiased
  variance). With ``fix_gamma`` MXNet also overwrites the gamma array with ones in place; here
  gamma is only read as 1. The data gradient is the derivative of the output in both modes
  (``_backward_BatchNorm`` reads the train flag when it runs, so backward must run in the
  forward's mode), where MXNet gives the training formula to any backward run in train mode.
* GroupNorm's gamma and beta have shape ``(num_groups,)`` (one scale per group, not per channel)
  and its data needs at least 3 dims; InstanceNorm scales per channel (axis 1).
* L2Normalization has a hidden second output, the norm; mode 'instance' normalizes over every
  axis but 0 (so 1-dim data gives ``x / sqrt(x**2 + eps)`` elementwise, as MXNet does).

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> bn = ops.get("BatchNorm")
    >>> bn.infer_shape(bn.parse_attrs({}), [(2, 3, 4), None, None, None, None])[0][1:]
    [(3,), (3,), (3,), (3,)]
    >>> ln = ops.get("LayerNorm")
    >>> out = ln.compute(np, np.array([[1.0, 3.0]]), np.ones(2), np.zeros(2),
    ...                  **ln.parse_attrs({"eps": 0.0}))[0]
    >>> out.tolist()
    [[-1.0, 1.0]]
"""

from __future__ import annotations

import math

import numpy as np

from ..base import MXNetError
from .attrs import Bool, Enum, Float, Int
from .lowering import Lowering, same_float
from .opdef import OpDef, register
from .rules import merge_shapes, normalize_axis

__all__ = []


# -- shared helpers -------------------------------------------------------------------------

def _along(shape_len, axis, size):
    """Broadcast shape of a ``(size,)`` vector laid along ``axis`` of a ``shape_len``-dim array."""
    return tuple(size if i == axis else 1 for i in range(shape_len))


def _check_vector(op, name, array, size):
    if tuple(array.shape) != (size,):
        raise MXNetError(f"{op}: {name} must have shape ({size},), got {tuple(array.shape)}")


def _fill_vectors(op, in_shapes, names, size):
    """Merge every ``(size,)`` parameter shape in ``in_shapes[1:]`` with ``(size,)``."""
    filled = [in_shapes[0]]
    for name, shape in zip(names, in_shapes[1:]):
        if shape is not None and len(shape) != 1:
            raise MXNetError(f"{op}: {name} must have shape ({size or '?'},), got {shape}")
        filled.append(merge_shapes(shape, (size,), f"{op}: {name} shape (expected ({size},))"))
    return filled


def _param_dtype(op, in_types, names):
    """dtypes of (data, params...): params follow the data, float32 for float16 data (as in
    MXNet's BatchNorm); a given param dtype that differs is an error naming the param."""
    data = in_types[0]
    want = None if data is None else ("float32" if data == "float16" else data)
    out = [data]
    for name, t in zip(names, in_types[1:]):
        if t is not None and want is not None and t != want:
            raise MXNetError(f"{op}: {name} has dtype {t}, expected {want} for {data} data")
        out.append(t or want)
    return out, want


def _moments(xp, x, axes):
    mean = x.mean(axis=axes, keepdims=True)
    centered = x - mean
    var = (centered * centered).mean(axis=axes, keepdims=True)
    return mean, centered, var


# -- BatchNorm ------------------------------------------------------------------------------

_BN_ATTRS = {
    "eps": Float(default=1e-3, doc="added to the variance; keep it >= 1e-5 for cuDNN"),
    "momentum": Float(default=0.9, doc="moving average momentum"),
    "fix_gamma": Bool(default=True, doc="use gamma = 1 (and give gamma a zero gradient)"),
    "use_global_stats": Bool(default=False,
                             doc="normalize with the moving statistics even in training"),
    "output_mean_var": Bool(default=False, doc="also output the mean and the inverse std"),
    "axis": Int(default=1, doc="the channel axis"),
    "cudnn_off": Bool(default=False, doc="accepted for compatibility; no effect"),
    "min_calib_range": Float(default=None, doc="quantization calibration (no effect)"),
    "max_calib_range": Float(default=None, doc="quantization calibration (no effect)"),
}
_BN_PARAMS = ("gamma", "beta", "moving_mean", "moving_var")


def _bn_layout(data, axis):
    """(channel axis, reduction axes, broadcast shape of a channel vector, channels)."""
    ax = normalize_axis(axis, data.ndim, "BatchNorm")
    red = tuple(i for i in range(data.ndim) if i != ax)
    channels = data.shape[ax]
    return ax, red, _along(data.ndim, ax, channels), channels


def moving_average_momentum(momentum):
    """BatchNorm's ``momentum`` as MXNet applies it: a C ``float`` attribute, so 0.9 weighs
    the old statistic by ``float32(0.9)`` and the batch's by ``1 - float32(0.9)`` in the
    statistics' own precision (which matters for float64 statistics).

    Example:
        >>> moving_average_momentum(0.9) == float(np.float32(0.9))
        True
    """
    return float(np.float32(momentum))


def _bn_compute(xp, data, gamma, beta, moving_mean, moving_var, *, eps, momentum, fix_gamma,
                use_global_stats, output_mean_var, axis, cudnn_off=False, min_calib_range=None,
                max_calib_range=None, is_train=False):
    _, red, bshape, channels = _bn_layout(data, axis)
    momentum = moving_average_momentum(momentum)
    for name, arr in zip(_BN_PARAMS, (gamma, beta, moving_mean, moving_var)):
        _check_vector("BatchNorm", name, arr, channels)
    x = data if data.dtype == moving_mean.dtype else data.astype(moving_mean.dtype)
    if is_train and not use_global_stats:
        mean = x.mean(axis=red)
        centered = x - mean.reshape(bshape)
        var = (centered * centered).mean(axis=red)
        # MXNet's update (biased variance), written into the auxiliary states in place.
        moving_mean *= momentum
        moving_mean += (1.0 - momentum) * mean
        moving_var *= momentum
        moving_var += (1.0 - momentum) * var
    else:
        mean = moving_mean.copy()
        var = moving_var
        centered = x - mean.reshape(bshape)
    invstd = 1.0 / xp.sqrt(var + eps)
    scale = invstd if fix_gamma else gamma * invstd
    out = centered * scale.reshape(bshape) + beta.reshape(bshape)
    return out.astype(data.dtype, copy=False), mean, invstd.astype(mean.dtype, copy=False)


def _bn_shape(attrs, in_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, [None, None, None]
    ax = normalize_axis(attrs["axis"], len(data), "BatchNorm")
    ins = _fill_vectors("BatchNorm", in_shapes, _BN_PARAMS, data[ax])
    return ins, [data, (data[ax],), (data[ax],)]


def _bn_type(attrs, in_types):
    ins, param = _param_dtype("BatchNorm", in_types, _BN_PARAMS)
    return ins, [ins[0], param, param]


def _bn_grad(F, ins, outs, gouts, **attrs):
    data, gamma = ins[0], ins[1]
    dx, dgamma, dbeta = F._backward_BatchNorm(gouts[0], data, gamma, outs[1], outs[2], **attrs)
    return [dx, dgamma, dbeta, None, None]


def _emit_bn(site):
    """Inference: ``(x - mean) * (gamma / sqrt(var + eps)) + beta``, compute's order, the
    vectors reshaped along the channel axis; the mean and inverse std copied out if read."""
    xp, (x, gamma, beta, mean, var) = site.xp, site.ins
    o, o_mean, o_invstd = (*site.outs, None, None)[:3]
    attrs, ndim = site.attrs, len(site.in_shapes[0])
    axis = attrs["axis"] % ndim
    bshape = tuple(site.in_shapes[0][axis] if i == axis else 1 for i in range(ndim))
    invstd, scale = site.temp(f"{o}_invstd"), site.temp(f"{o}_scale")
    lines = [f"{invstd} = 1.0 / {xp}.sqrt({var} + {site.number(attrs['eps'])})",
             f"{scale} = {invstd}" if attrs["fix_gamma"] else f"{scale} = {gamma} * {invstd}",
             f"{xp}.subtract({x}, {mean}.reshape({bshape!r}), out={o})",
             f"{xp}.multiply({o}, {scale}.reshape({bshape!r}), out={o})",
             f"{xp}.add({o}, {beta}.reshape({bshape!r}), out={o})"]
    if o_mean is not None:
        lines.append(f"{xp}.copyto({o_mean}, {mean})")
    if o_invstd is not None:
        lines.append(f"{xp}.copyto({o_invstd}, {invstd})")
    return lines


def _bn_lowers(site):  # inference only: training updates the moving statistics
    inference = not site.is_train or site.attrs["use_global_stats"]
    ndim = len(site.in_shapes[0])
    return inference and same_float(site) and -ndim <= site.attrs["axis"] < ndim


register(OpDef(
    "BatchNorm", inputs=("data", "gamma", "beta", "moving_mean", "moving_var"),
    input_init={"moving_mean": '["zero", {}]', "moving_var": '["one", {}]'},
    aux=("moving_mean", "moving_var"), attrs=_BN_ATTRS, compute=_bn_compute,
    infer_shape=_bn_shape, infer_type=_bn_type, grad=_bn_grad, num_outputs=3,
    num_visible_outputs=lambda a: 3 if a["output_mean_var"] else 1,
    output_names=("output", "mean", "var"), mode_dependent=True, mutates_aux=True,
    lower=Lowering(_emit_bn, _bn_lowers, inplace=(0,)), views=False,  # reads x first only
    doc="Batch normalization over every axis but ``axis``; in training it uses the batch "
        "statistics and updates moving_mean/moving_var in place.",
    example="nd.BatchNorm(x, gamma, beta, moving_mean, moving_var).shape  # x.shape"))


def _bn_backward_compute(xp, ograd, data, gamma, mean, invstd, *, eps, momentum, fix_gamma,
                         use_global_stats, output_mean_var, axis, cudnn_off=False,
                         min_calib_range=None, max_calib_range=None, is_train=False):
    _, red, bshape, channels = _bn_layout(data, axis)
    stat = mean.dtype
    g = ograd if ograd.dtype == stat else ograd.astype(stat)
    x = data if data.dtype == stat else data.astype(stat)
    xhat = (x - mean.reshape(bshape)) * invstd.reshape(bshape)
    dbeta = g.sum(axis=red)
    dgamma = (g * xhat).sum(axis=red)
    scale = (invstd if fix_gamma else gamma * invstd).reshape(bshape)
    if is_train and not use_global_stats:  # the batch statistics depend on the data too
        count = max(data.size // max(channels, 1), 1)
        dx = scale * (g - (dbeta.reshape(bshape) + xhat * dgamma.reshape(bshape)) / count)
    else:
        dx = scale * g
    if fix_gamma:
        dgamma = xp.zeros_like(dgamma)
    return dx.astype(data.dtype, copy=False), dgamma, dbeta


def _bn_backward_shape(attrs, in_shapes):
    data = merge_shapes(in_shapes[1], in_shapes[0], "_backward_BatchNorm: ograd and data shapes")
    if data is None:
        return in_shapes, [None, None, None]
    ax = normalize_axis(attrs["axis"], len(data), "_backward_BatchNorm")
    vectors = _fill_vectors("_backward_BatchNorm", [data, *in_shapes[2:]],
                            ("gamma", "mean", "invstd"), data[ax])
    return [data, *vectors], [data, (data[ax],), (data[ax],)]


def _bn_backward_type(attrs, in_types):
    data = in_types[1] or in_types[0]
    ins, param = _param_dtype("_backward_BatchNorm", [data, *in_types[2:]],
                              ("gamma", "mean", "invstd"))
    return [data, *ins], [data, param, param]


register(OpDef(
    "_backward_BatchNorm", inputs=("ograd", "data", "gamma", "mean", "invstd"),
    attrs=_BN_ATTRS, compute=_bn_backward_compute, infer_shape=_bn_backward_shape,
    infer_type=_bn_backward_type, num_outputs=3, mode_dependent=True,
    doc="Gradients (data, gamma, beta) of BatchNorm from the saved mean and inverse std; in "
        "training mode (not use_global_stats) through the batch statistics.",
    example="dx, dgamma, dbeta = nd._backward_BatchNorm(g, x, gamma, mean, invstd)"))


# -- LayerNorm ------------------------------------------------------------------------------

def _norm_backward(F, g, xhat, std, axes):
    """d(loss)/dx of ``xhat = (x - mean(x)) / std`` over ``axes`` given ``g = dloss/dxhat``:
    ``(g - mean(g) - xhat * mean(g * xhat)) / std``, as ops."""
    g_mean = F.mean(g, axis=axes, keepdims=True)
    gx_mean = F.mean(F.broadcast_mul(g, xhat), axis=axes, keepdims=True)
    centered = F.broadcast_sub(F.broadcast_sub(g, g_mean), F.broadcast_mul(xhat, gx_mean))
    return F.broadcast_div(centered, std)


def _ln_compute(xp, data, gamma, beta, *, axis, eps, output_mean_var):
    ax = normalize_axis(axis, data.ndim, "LayerNorm")
    for name, arr in (("gamma", gamma), ("beta", beta)):
        _check_vector("LayerNorm", name, arr, data.shape[ax])
    mean, centered, var = _moments(xp, data, ax)
    std = xp.sqrt(var + eps)
    bshape = _along(data.ndim, ax, data.shape[ax])
    out = centered / std * gamma.reshape(bshape) + beta.reshape(bshape)
    return out.astype(data.dtype, copy=False), mean, std.astype(data.dtype, copy=False)


def _ln_shape(attrs, in_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, [None, None, None]
    ax = normalize_axis(attrs["axis"], len(data), "LayerNorm")
    stat = tuple(1 if i == ax else d for i, d in enumerate(data))
    return _fill_vectors("LayerNorm", in_shapes, ("gamma", "beta"), data[ax]), [data, stat, stat]


def _ln_grad(F, ins, outs, gouts, axis, eps, output_mean_var):
    data, gamma = ins[0], ins[1]
    ax = normalize_axis(axis, len(data.shape), "LayerNorm")
    bshape = _along(len(data.shape), ax, data.shape[ax])
    g = gouts[0]
    xhat = F.broadcast_div(F.broadcast_sub(data, outs[1]), outs[2])
    dx = _norm_backward(F, F.broadcast_mul(g, F.reshape(gamma, shape=bshape)), xhat, outs[2], ax)
    dgamma = F.sum(F.broadcast_mul(g, xhat), axis=ax, exclude=True)
    dbeta = F.sum(g, axis=ax, exclude=True)
    return [dx, dgamma, dbeta]


register(OpDef(
    "LayerNorm", inputs=("data", "gamma", "beta"),
    attrs={"axis": Int(default=-1, doc="the axis normalized over (and scaled along)"),
           "eps": Float(default=1e-5, doc="added to the variance"),
           "output_mean_var": Bool(default=False, doc="also output the mean and the std")},
    compute=_ln_compute, infer_shape=_ln_shape, grad=_ln_grad, num_outputs=3,
    num_visible_outputs=lambda a: 3 if a["output_mean_var"] else 1,
    output_names=("output", "mean", "std"),
    doc="Layer normalization: normalize over ``axis``, then scale by gamma and shift by beta "
        "along it.",
    example="nd.LayerNorm(x, nd.ones((x.shape[-1],)), nd.zeros((x.shape[-1],))).shape"))


# -- InstanceNorm ---------------------------------------------------------------------------

def _instance_axes(ndim):
    return tuple(range(2, ndim))


def _in_compute(xp, data, gamma, beta, *, eps):
    if data.ndim < 3:
        raise MXNetError(f"InstanceNorm: data must have at least 3 dims (batch, channel, "
                         f"spatial...), got shape {tuple(data.shape)}")
    channels = data.shape[1]
    for name, arr in (("gamma", gamma), ("beta", beta)):
        _check_vector("InstanceNorm", name, arr, channels)
    mean, centered, var = _moments(xp, data, _instance_axes(data.ndim))
    bshape = _along(data.ndim, 1, channels)
    out = centered / xp.sqrt(var + eps) * gamma.reshape(bshape) + beta.reshape(bshape)
    stat = data.shape[:2]
    return out.astype(data.dtype, copy=False), mean.reshape(stat), var.reshape(stat)


def _in_shape(attrs, in_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, [None, None, None]
    if len(data) < 3:
        raise MXNetError(f"InstanceNorm: data must have at least 3 dims, got shape {data}")
    ins = _fill_vectors("InstanceNorm", in_shapes, ("gamma", "beta"), data[1])
    return ins, [data, data[:2], data[:2]]


def _in_grad(F, ins, outs, gouts, eps):
    data, gamma = ins[0], ins[1]
    ndim = len(data.shape)
    axes = _instance_axes(ndim)
    kept = tuple(data.shape[:2]) + (1,) * (ndim - 2)
    std = F.sqrt(F._plus_scalar(F.reshape(outs[2], shape=kept), scalar=eps))
    xhat = F.broadcast_div(F.broadcast_sub(data, F.reshape(outs[1], shape=kept)), std)
    g = gouts[0]
    gamma_b = F.reshape(gamma, shape=_along(ndim, 1, data.shape[1]))
    dx = _norm_backward(F, F.broadcast_mul(g, gamma_b), xhat, std, axes)
    dgamma = F.sum(F.broadcast_mul(g, xhat), axis=1, exclude=True)
    dbeta = F.sum(g, axis=1, exclude=True)
    return [dx, dgamma, dbeta]


register(OpDef(
    "InstanceNorm", inputs=("data", "gamma", "beta"),
    attrs={"eps": Float(default=1e-3, doc="added to the variance")},
    compute=_in_compute, infer_shape=_in_shape, grad=_in_grad, num_outputs=3,
    num_visible_outputs=1, output_names=("output", "mean", "var"),
    doc="Instance normalization: normalize each (sample, channel) over the spatial axes, then "
        "scale and shift per channel.",
    example="nd.InstanceNorm(x, nd.ones((x.shape[1],)), nd.zeros((x.shape[1],))).shape"))


# -- GroupNorm ------------------------------------------------------------------------------

def _group_layout(op, shape, num_groups):
    """``(N, G, rest)`` view of data of ``shape``; MXNetError when the groups do not fit."""
    if len(shape) < 3:
        raise MXNetError(f"{op}: data must have at least 3 dims (batch, channel, spatial...), "
                         f"got shape {tuple(shape)}")
    if num_groups < 1 or shape[1] % num_groups:
        raise MXNetError(f"{op}: num_groups={num_groups} must divide the {shape[1]} channels "
                         f"of data of shape {tuple(shape)}")
    return shape[0], num_groups, math.prod(shape[1:]) // num_groups


def _gn_compute(xp, data, gamma, beta, *, num_groups, eps, output_mean_var):
    n, groups, rest = _group_layout("GroupNorm", data.shape, num_groups)
    for name, arr in (("gamma", gamma), ("beta", beta)):
        _check_vector("GroupNorm", name, arr, groups)
    mean, centered, var = _moments(xp, data.reshape(n, groups, rest), 2)
    std = xp.sqrt(var + eps)
    out = centered / std * gamma.reshape(1, groups, 1) + beta.reshape(1, groups, 1)
    return (out.reshape(data.shape).astype(data.dtype, copy=False), mean.reshape(n, groups),
            std.reshape(n, groups).astype(data.dtype, copy=False))


def _gn_shape(attrs, in_shapes):
    data, groups = in_shapes[0], attrs["num_groups"]
    if data is None:
        ins = _fill_vectors("GroupNorm", in_shapes, ("gamma", "beta"), groups)
        return ins, [None, None, None]
    if data[1]:
        _group_layout("GroupNorm", data, groups)
    ins = _fill_vectors("GroupNorm", in_shapes, ("gamma", "beta"), groups)
    return ins, [data, (data[0], groups), (data[0], groups)]


def _gn_grad(F, ins, outs, gouts, num_groups, eps, output_mean_var):
    data, gamma = ins[0], ins[1]
    n, groups, rest = _group_layout("GroupNorm", data.shape, num_groups)
    view = (n, groups, rest)
    g = F.reshape(gouts[0], shape=view)
    mean = F.reshape(outs[1], shape=(n, groups, 1))
    std = F.reshape(outs[2], shape=(n, groups, 1))
    xhat = F.broadcast_div(F.broadcast_sub(F.reshape(data, shape=view), mean), std)
    gamma_b = F.reshape(gamma, shape=(1, groups, 1))
    dx = _norm_backward(F, F.broadcast_mul(g, gamma_b), xhat, std, 2)
    dgamma = F.sum(F.broadcast_mul(g, xhat), axis=(0, 2))
    dbeta = F.sum(g, axis=(0, 2))
    return [F.reshape(dx, shape=tuple(data.shape)), dgamma, dbeta]


register(OpDef(
    "GroupNorm", inputs=("data", "gamma", "beta"),
    attrs={"num_groups": Int(default=1, doc="number of channel groups"),
           "eps": Float(default=1e-5, doc="added to the variance"),
           "output_mean_var": Bool(default=False, doc="also output the mean and the std")},
    compute=_gn_compute, infer_shape=_gn_shape, grad=_gn_grad, num_outputs=3,
    num_visible_outputs=lambda a: 3 if a["output_mean_var"] else 1,
    output_names=("output", "mean", "std"),
    doc="Group normalization: split the channels into ``num_groups`` groups, normalize each "
        "(sample, group), then scale and shift per group (gamma, beta of shape (num_groups,)).",
    example="nd.GroupNorm(x, nd.ones((2,)), nd.zeros((2,)), num_groups=2).shape  # x.shape"))


# -- L2Normalization ------------------------------------------------------------------------

def _l2_axes(shape, mode):
    """Axes the norm runs over: every axis but 0 ('instance'), axis 1 ('channel') or the
    spatial axes 2.. ('spatial'); the last two need data of at least 3 dims."""
    if mode != "instance" and len(shape) < 3:
        raise MXNetError(f"L2Normalization: mode={mode!r} needs data of at least 3 dims, got "
                         f"shape {tuple(shape)}")
    if mode == "instance":
        return tuple(range(1, len(shape)))
    return (1,) if mode == "channel" else tuple(range(2, len(shape)))


def _l2_norm_shape(shape, axes):
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _l2_compute(xp, data, *, eps, mode):
    axes = _l2_axes(data.shape, mode)
    norm = xp.sqrt((data * data).sum(axis=axes, keepdims=True) + eps)
    return data / norm, norm.reshape(_l2_norm_shape(data.shape, axes))


def _l2_shape(attrs, in_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, [None, None]
    return in_shapes, [data, _l2_norm_shape(data, _l2_axes(data, attrs["mode"]))]


def _l2_grad(F, ins, outs, gouts, eps, mode):
    shape = tuple(ins[0].shape)
    axes = _l2_axes(shape, mode)
    norm = F.reshape(outs[1], shape=tuple(1 if i in axes else d for i, d in enumerate(shape)))
    out, g = outs[0], gouts[0]
    inner = F.broadcast_mul(g, out)
    if axes:  # 1-dim data in 'instance' mode: every element is its own instance
        inner = F.sum(inner, axis=axes, keepdims=True)
    return [F.broadcast_div(F.broadcast_sub(g, F.broadcast_mul(out, inner)), norm)]


register(OpDef(
    "L2Normalization", inputs=("data",),
    attrs={"eps": Float(default=1e-10, doc="added to the sum of squares"),
           "mode": Enum(("channel", "instance", "spatial"), default="instance",
                        doc="'instance': per sample (every axis but 0); 'channel': over axis "
                            "1; 'spatial': over axes 2..")},
    compute=_l2_compute, infer_shape=_l2_shape, grad=_l2_grad, num_outputs=2,
    num_visible_outputs=1, output_names=("output", "norm"),
    doc="Divide the data by its L2 norm ``sqrt(sum(x**2) + eps)`` over the axes ``mode`` "
        "names.",
    example="nd.L2Normalization(nd.array([[3, 4]])).asnumpy()  # [[0.6, 0.8]]"))
