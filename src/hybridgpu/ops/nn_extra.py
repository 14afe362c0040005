"""``LRN`` (local response normalization across channels, with its hidden gradient
``_backward_LRN``) and ``UpSampling`` (nearest neighbour, any number of inputs; bilinear, one
input and a weight, computed as MXNet does: a grouped ``Deconvolution``).

``LRN`` normalizes each channel ``i`` of ``data`` (channels on axis 1, any rank >= 2) by
``(knorm + alpha / nsize * sum_j data_j ** 2) ** beta`` over the channels ``j`` within
``(nsize - 1) // 2`` of ``i`` (MXNet's window, also for an even ``nsize``). It computes two
outputs, as MXNet: the result and ``tmp_norm`` (the scale before the power), of which users
see the first. Its gradient is the hidden op ``_backward_LRN(ograd, data)``: the window sum
of the backward pass is one more kernel of its own.

``UpSampling`` with ``sample_type='nearest'`` repeats each pixel of NCHW inputs: the output
is ``scale`` times the size of the first input, each further input is scaled by the integer
that reaches the same size, and ``multi_input_mode`` concatenates the results on the channel
axis or sums them. Its gradient sums each output block back onto its pixel (``reshape`` +
``sum``). With ``'bilinear'`` the inputs are ``data`` and ``weight`` (``(num_filter, 1, k,
k)``, ``k = 2 * scale - scale % 2``) and the op is ``Deconvolution(data, weight,
kernel=(k, k), stride=scale, pad=ceil((scale - 1) / 2), num_group=num_filter)``; so is its
gradient.

Deliberate differences from MXNet: ``LRN`` also runs in float64 (MXNet: float32 only) and
rejects ``nsize < 1``; ``UpSampling`` rejects inputs whose batch sizes differ (MXNet
silently uses the first one's); both reject integer dtypes in type inference already (MXNet
only when running).

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> up = ops.get("UpSampling")
    >>> attrs = up.parse_attrs({"scale": 2, "sample_type": "nearest"}, 1)
    >>> up.compute(np, np.array([[[[1.0, 2.0]]]]), **attrs)
    array([[[[1., 1., 2., 2.],
             [1., 1., 2., 2.]]]])
"""

from __future__ import annotations

import math

from ..base import MXNetError
from .attrs import Enum, Float, Int
from .opdef import OpDef, get, register
from .rules import check_float, same_shape

__all__ = []

_FLOATS = ("float32", "float64")




def _float_type(num_outputs=1):
    """One float32 or float64 dtype for every input and output."""

    def rule(attrs, in_types):
        known = [t for t in in_types if t is not None]
        for t in known:
            if t not in _FLOATS or t != known[0]:
                raise MXNetError(f"inputs must share one dtype, float32 or float64; got "
                                 f"{in_types}")
        dtype = known[0] if known else None
        return [dtype] * len(in_types), [dtype] * num_outputs

    return rule


# -- LRN --------------------------------------------------------------------------------------

_LRN_ATTRS = {
    "alpha": Float(default=1e-4, doc="variance scaling: the sum of squares is scaled by "
                                    "alpha / nsize"),
    "beta": Float(default=0.75, doc="power of the normalizing scale"),
    "knorm": Float(default=2.0, doc="additive constant k of the scale"),
    "nsize": Int(doc="window width in channels (the window reaches (nsize - 1) // 2 "
                     "channels each way)"),
}


def _check_lrn(op, x, nsize):
    check_float(op, x, dtypes=_FLOATS)
    if x.ndim < 2:
        raise MXNetError(f"{op}: data must have at least 2 dims (N, C, ...), got shape "
                         f"{x.shape}")
    if nsize < 1:
        raise MXNetError(f"{op}: nsize must be at least 1, got {nsize}")


def _window_sum(xp, v, nsize):
    """Sum of ``v`` over the channels within ``(nsize - 1) // 2`` of each channel (axis 1)."""
    half = (nsize - 1) // 2
    if half == 0:
        return v
    pad = [(0, 0)] * v.ndim
    pad[1] = (half, half)
    padded = xp.pad(v, pad)
    channels = v.shape[1]
    total = padded[:, 0:channels].copy()
    for shift in range(1, 2 * half + 1):
        total += padded[:, shift:shift + channels]
    return total


def _lrn_scale(xp, x, alpha, knorm, nsize):
    return _window_sum(xp, x * x, nsize) * x.dtype.type(alpha / nsize) + x.dtype.type(knorm)


def _lrn_compute(xp, x, alpha=1e-4, beta=0.75, knorm=2.0, nsize=None):
    _check_lrn("LRN", x, nsize)
    scale = _lrn_scale(xp, x, alpha, knorm, nsize)
    return x * scale ** x.dtype.type(-beta), scale


def _lrn_grad(F, ins, outs, gouts, **attrs):
    return [F._backward_LRN(gouts[0], ins[0], **attrs)]


register(OpDef(
    "LRN", attrs=_LRN_ATTRS, compute=_lrn_compute, infer_shape=lambda a, s: same_shape(a, s, 2),
    infer_type=_float_type(2), grad=_lrn_grad, num_outputs=2, num_visible_outputs=1,
    output_names=("output", "tmp_norm"),
    doc="Local response normalization across channels: data / (knorm + alpha / nsize * "
        "(window sum of data^2)) ^ beta.",
    example="nd.LRN(nd.ones((1, 5, 2, 2)), nsize=3).shape  # (1, 5, 2, 2)"))


def _lrn_backward_compute(xp, g, x, alpha=1e-4, beta=0.75, knorm=2.0, nsize=None):
    _check_lrn("_backward_LRN", x, nsize)
    scale = _lrn_scale(xp, x, alpha, knorm, nsize)
    power = scale ** x.dtype.type(-beta)
    # d out_i / d x_m = [i = m] scale_i^-beta
    #                   - 2 alpha beta / nsize * x_i scale_i^(-beta-1) x_m  (m in window(i))
    inner = _window_sum(xp, g * x * power / scale, nsize)
    return g * power - x.dtype.type(2 * alpha * beta / nsize) * x * inner


register(OpDef(
    "_backward_LRN", inputs=("ograd", "data"), attrs=_LRN_ATTRS, compute=_lrn_backward_compute,
    infer_shape=same_shape, infer_type=_float_type(),
    doc="Gradient of LRN with respect to data, for output gradient ograd."))


# -- UpSampling -----------------------------------------------------------------------------

_UP_ATTRS = {
    "scale": Int(doc="upsampling factor"),
    "num_filter": Int(default=0, doc="bilinear: the number of channels (num_filter of the "
                                     "deconvolution)"),
    "sample_type": Enum(("bilinear", "nearest"), doc="upsampling method"),
    "multi_input_mode": Enum(("concat", "sum"), default="concat",
                             doc="nearest with several inputs: concatenate the upsampled "
                                 "inputs on the channel axis, or add them"),
    "num_args": Int(default=None, doc="number of inputs (set automatically); bilinear: 2"),
    "workspace": Int(default=512, doc="accepted for compatibility; ignored"),
}


class _UpSamplingDef(OpDef):
    """UpSampling is variadic for ``nearest`` but has named inputs ``data, weight`` for
    ``bilinear`` (so a graph names the weight ``<name>_weight``, as MXNet does)."""

    def input_names(self, attrs):
        if attrs.get("sample_type") == "bilinear":
            return ("data", "weight")
        return super().input_names(attrs)


def _bilinear_attrs(attrs):
    """The Deconvolution attributes bilinear UpSampling runs with."""
    scale = attrs["scale"]
    kernel = 2 * scale - scale % 2
    pad = math.ceil((scale - 1) / 2)
    deconv = get("Deconvolution")
    return deconv, deconv.parse_attrs({
        "kernel": (kernel, kernel), "stride": (scale, scale), "pad": (pad, pad),
        "num_filter": attrs["num_filter"], "num_group": attrs["num_filter"], "no_bias": True,
        "workspace": attrs["workspace"]})


def _check_up_attrs(attrs, count):
    if attrs["scale"] < 1:
        raise MXNetError(f"UpSampling: scale must be at least 1, got {attrs['scale']}")
    if attrs["sample_type"] == "bilinear":
        if count != 2:
            raise MXNetError(f"UpSampling: bilinear takes 2 inputs (data, weight), got {count}")
        if attrs["num_filter"] < 1:
            raise MXNetError("UpSampling: bilinear needs num_filter = the number of channels "
                             f"of data, got num_filter={attrs['num_filter']}")
    elif count < 1:
        raise MXNetError("UpSampling: nearest needs at least one input")


def _nearest_plan(attrs, shapes):
    """``(output shape, per-input scale)`` of nearest upsampling of NCHW ``shapes``."""
    for i, s in enumerate(shapes):
        if len(s) != 4:
            raise MXNetError(f"UpSampling: input {i} must be 4-D (batch, channel, height, "
                             f"width), got shape {tuple(s)}")
        if s[0] != shapes[0][0]:
            raise MXNetError(f"UpSampling: input {i} has batch size {s[0]}, input 0 has "
                             f"{shapes[0][0]}")
    height, width = shapes[0][2] * attrs["scale"], shapes[0][3] * attrs["scale"]
    scales = []
    for i, s in enumerate(shapes):
        k = height // s[2] if s[2] else 0
        if not k or s[2] * k != height or s[3] * k != width:
            raise MXNetError(f"UpSampling: input {i} of shape {tuple(s)} cannot be scaled by "
                             f"an integer to the output size ({height}, {width}) set by input 0 "
                             f"and scale={attrs['scale']}")
        scales.append(k)
    if attrs["multi_input_mode"] == "sum":
        for i, s in enumerate(shapes):
            if s[1] != shapes[0][1]:
                raise MXNetError(f"UpSampling: multi_input_mode='sum' needs equal channels, "
                                 f"input {i} has {s[1]} and input 0 has {shapes[0][1]}")
        channels = shapes[0][1]
    else:
        channels = sum(s[1] for s in shapes)
    return (shapes[0][0], channels, height, width), scales


def _up_compute(xp, *arrays, scale, num_filter=0, sample_type, multi_input_mode="concat",
                num_args=None, workspace=512):
    attrs = {"scale": scale, "num_filter": num_filter, "sample_type": sample_type,
             "multi_input_mode": multi_input_mode, "workspace": workspace}
    _check_up_attrs(attrs, len(arrays))
    check_float("UpSampling", *arrays, dtypes=_FLOATS)
    if sample_type == "bilinear":
        deconv, dattrs = _bilinear_attrs(attrs)
        return deconv.compute(xp, *arrays, **dattrs)
    _, scales = _nearest_plan(attrs, [a.shape for a in arrays])
    ups = [x if k == 1 else xp.repeat(xp.repeat(x, k, axis=2), k, axis=3)
           for x, k in zip(arrays, scales)]
    if len(ups) == 1:
        return xp.ascontiguousarray(ups[0])
    if multi_input_mode == "sum":
        total = ups[0].copy()
        for u in ups[1:]:
            total += u
        return total
    return xp.concatenate(ups, axis=1)


def _up_shape(attrs, in_shapes):
    _check_up_attrs(attrs, len(in_shapes))
    if attrs["sample_type"] == "bilinear":
        deconv, dattrs = _bilinear_attrs(attrs)
        return deconv.infer_shape(dattrs, in_shapes)
    if any(s is None for s in in_shapes):
        return list(in_shapes), [None]
    return list(in_shapes), [_nearest_plan(attrs, in_shapes)[0]]


def _up_grad(F, ins, outs, gouts, **attrs):
    g = gouts[0]
    if attrs["sample_type"] == "bilinear":
        deconv, dattrs = _bilinear_attrs(attrs)
        return deconv.grad(F, ins, outs, gouts, **dattrs)
    _, scales = _nearest_plan(attrs, [tuple(x.shape) for x in ins])
    grads, start = [], 0
    for x, k in zip(ins, scales):
        n, c, h, w = x.shape
        part = g
        if attrs["multi_input_mode"] == "concat" and len(ins) > 1:
            part = F.slice_axis(g, axis=1, begin=start, end=start + c)
            start += c
        if k > 1:
            part = F.sum(F.reshape(part, shape=(n, c, h, k, w, k)), axis=(3, 5))
        grads.append(part)
    return grads


register(_UpSamplingDef(
    "UpSampling", attrs=_UP_ATTRS, compute=_up_compute, infer_shape=_up_shape,
    infer_type=_float_type(), grad=_up_grad, variadic=True,
    doc="Upsamples NCHW inputs by an integer scale: nearest neighbour (several inputs, "
        "concatenated or summed) or bilinear (data and a weight, as a grouped Deconvolution).",
    example="nd.UpSampling(nd.ones((1, 2, 2, 3)), scale=2, sample_type='nearest').shape  "
            "# (1, 2, 4, 6)"))
