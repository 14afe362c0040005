"""``Pooling`` (max, avg, sum, lp; 1-D, 2-D, 3-D; channels-first) and its gradient op
``_backward_Pooling(data, output, out_grad)``.

Windows are visited one kernel offset at a time: each offset is one strided slice of the padded
input over every output position at once, so the loop runs ``prod(kernel)`` vectorized steps
(global pooling reduces directly). MXNet's conventions: ``valid`` output size
``floor((x + 2*pad - kernel) / stride) + 1``, ``full`` uses ceil; windows that run past the
padded input are clipped; avg divides by the window clipped to ``[-pad, x + pad)``
(``count_include_pad=True``, the default) or by its valid elements only (False); lp is
``(sum x**p) ** (1/p)`` (p=1 is the plain sum); max routes the gradient to the first maximum
of each window. Global pooling ignores kernel, stride, pad and convention.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> pool = ops.get("Pooling")
    >>> attrs = pool.parse_attrs({"kernel": (2, 2), "stride": (2, 2)})
    >>> pool.compute(np, np.arange(16.0).reshape(1, 1, 4, 4), **attrs)[0, 0]
    array([[ 5.,  7.],
           [13., 15.]])
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..base import MXNetError
from ..limits import check_elements
from .attrs import Bool, Enum, Int, Shape
from .opdef import OpDef, register
from .rules import check_float

__all__ = []

_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


# -- geometry ---------------------------------------------------------------------------------

def _per_dim(name, value, nd, default):
    if not value:
        return (default,) * nd
    if len(value) != nd:
        raise MXNetError(f"Pooling: {name} {tuple(value)} has {len(value)} dims but the "
                         f"kernel has {nd}; give one value per spatial dim")
    return tuple(value)


def _check_attrs(attrs, ndim):
    """Checks that do not need the spatial sizes; returns the number of spatial dims."""
    nd = ndim - 2 if attrs["global_pool"] else len(attrs["kernel"])
    if not attrs["global_pool"] and nd == 0:
        raise MXNetError("Pooling: kernel is required unless global_pool=True")
    if nd not in _LAYOUTS:
        raise MXNetError(f"Pooling: only 1-D, 2-D and 3-D pooling is supported, got a "
                         f"{nd}-D {'input' if attrs['global_pool'] else 'kernel'}")
    if ndim != nd + 2:
        raise MXNetError(f"Pooling: data must have {nd + 2} dims (N, C, *spatial) for kernel "
                         f"{tuple(attrs['kernel'])}, got {ndim} dims")
    layout = attrs["layout"]
    if layout is not None and layout != _LAYOUTS[nd]:
        raise MXNetError(f"Pooling: layout {layout!r} is not supported for {nd}-D pooling; "
                         f"only channels-first {_LAYOUTS[nd]!r} (or None) is")
    if attrs["pooling_convention"] == "same":
        raise MXNetError("Pooling: pooling_convention='same' is not supported (MXNet 1.9.1 "
                         "fails on it too); use 'valid' or 'full' with an explicit pad")
    if attrs["pool_type"] == "lp" and (attrs["p_value"] is None or attrs["p_value"] < 1):
        raise MXNetError(f"Pooling: pool_type='lp' needs p_value >= 1 (1 or 2 usually), got "
                         f"p_value={attrs['p_value']}")
    return nd


def _geometry(attrs, shape):
    """``(kernel, stride, pad, out_spatial)``; ``shape`` may hold 0s (unknown sizes)."""
    nd = _check_attrs(attrs, len(shape))
    spatial = tuple(shape[2:])
    if attrs["global_pool"]:
        return spatial, (1,) * nd, (0,) * nd, (1,) * nd
    kernel = tuple(attrs["kernel"])
    stride = _per_dim("stride", attrs["stride"], nd, 1)
    pad = _per_dim("pad", attrs["pad"], nd, 0)
    if min(kernel) < 1 or min(stride) < 1 or min(pad) < 0:
        raise MXNetError(f"Pooling: kernel {kernel} and stride {stride} must be positive and "
                         f"pad {pad} non-negative")
    full = attrs["pooling_convention"] == "full"
    out = []
    for size, k, s, p in zip(spatial, kernel, stride, pad):
        if not size:
            out.append(0)
            continue
        if k > size + 2 * p:
            raise MXNetError(f"Pooling: kernel {kernel} is larger than the padded input "
                             f"{spatial} (pad {pad})")
        span = size + 2 * p - k
        out.append((-(-span // s) if full else span // s) + 1)
    return kernel, stride, pad, tuple(out)


def _pad_after(spatial, kernel, stride, pad, out):
    """Padding needed after the input so that every window fits (``full`` needs more)."""
    return tuple(max(0, (o - 1) * s + k - x - p)
                 for x, k, s, p, o in zip(spatial, kernel, stride, pad, out))


def _window(offset, stride, count):
    return slice(offset, offset + stride * (count - 1) + 1, stride)


def _counts(spatial, kernel, stride, pad, out, include_pad):
    """Per-output window sizes (NumPy), for avg pooling; at least 1 (empty windows give 0)."""
    total = np.ones((), dtype=np.float64)
    for x, k, s, p, o in zip(spatial, kernel, stride, pad, out):
        start = np.arange(o) * s - p
        if include_pad:
            size = np.minimum(start + k, x + p) - start
        else:
            size = np.minimum(start + k, x) - np.maximum(start, 0)
        total = np.multiply.outer(total, np.maximum(size, 1))
    return total




def _padded(xp, x, kernel, stride, pad, out, fill):
    after = _pad_after(x.shape[2:], kernel, stride, pad, out)
    if not any(pad) and not any(after):
        return x
    widths = [(0, 0), (0, 0)] + list(zip(pad, after))
    check_elements((*x.shape[:2], *(d + b + a for d, b, a in zip(x.shape[2:], pad, after))),
                   "Pooling: padded input")
    return xp.pad(x, widths, constant_values=fill)


def _lowest(dtype):
    return np.finfo(dtype).min


def _include_pad(attrs):
    return attrs["count_include_pad"] is not False


# -- forward ----------------------------------------------------------------------------------

def _lp_root(xp, s, p):
    if p == 1:
        return s
    if p == 2:
        return xp.sqrt(s)
    return xp.sign(s) * xp.abs(s) ** (1.0 / p)  # the real p-th root, as MXNet


def _global_pool(xp, x, attrs):
    axes = tuple(range(2, x.ndim))
    ptype = attrs["pool_type"]
    if ptype == "max":
        return x.max(axis=axes, keepdims=True)
    if ptype == "avg":
        return x.mean(axis=axes, keepdims=True)
    if ptype == "sum":
        return x.sum(axis=axes, keepdims=True)
    p = attrs["p_value"]
    return _lp_root(xp, (x ** p).sum(axis=axes, keepdims=True), p)


def _pool_compute(xp, x, **attrs):
    check_float("Pooling", x)
    kernel, stride, pad, out = _geometry(attrs, x.shape)
    if attrs["global_pool"]:
        return _global_pool(xp, x, attrs)
    ptype, p = attrs["pool_type"], attrs["p_value"]
    fill = _lowest(x.dtype) if ptype == "max" else 0
    xpad = _padded(xp, x, kernel, stride, pad, out, fill)
    acc = None
    for offs in itertools.product(*(range(k) for k in kernel)):
        win = xpad[(Ellipsis, *(_window(o, s, n) for o, s, n in zip(offs, stride, out)))]
        if ptype == "lp" and p != 1:
            win = win ** p
        if acc is None:
            acc = win.copy()
        elif ptype == "max":
            xp.maximum(acc, win, out=acc)
        else:
            acc += win
    if ptype == "avg":
        acc /= xp.asarray(_counts(x.shape[2:], kernel, stride, pad, out, _include_pad(attrs)),
                          dtype=x.dtype)
    elif ptype == "lp":
        acc = _lp_root(xp, acc, p)
    return acc


def _pool_shape(attrs, in_shapes):
    (data,) = in_shapes
    if data is None:
        return in_shapes, [None]
    out = _geometry(attrs, data)[3]
    return in_shapes, [(data[0], data[1], *out)]


def _pool_grad(F, ins, outs, gouts, **attrs):
    return [F._backward_Pooling(ins[0], outs[0], gouts[0], **attrs)]


_POOL_ATTRS = {
    "kernel": Shape(default=(), doc="window size: (x,), (y, x) or (d, y, x)"),
    "pool_type": Enum(("avg", "lp", "max", "sum"), default="max", doc="the reduction"),
    "global_pool": Bool(default=False, doc="pool over the whole spatial extent"),
    "cudnn_off": Bool(default=False, doc="accepted; ignored"),
    "pooling_convention": Enum(("full", "same", "valid"), default="valid",
                               doc="output size rounding: valid (floor) or full (ceil); "
                                   "'same' is not supported"),
    "stride": Shape(default=(), doc="stride per spatial dim (default 1)"),
    "pad": Shape(default=(), doc="padding per spatial dim (default 0)"),
    "p_value": Int(default=None, doc="p of lp pooling"),
    "count_include_pad": Bool(default=None, doc="avg: count padding in the divisor "
                                                "(None means True)"),
    "layout": Enum(("NCDHW", "NCHW", "NCW", "NDHWC", "NHWC", "NWC"), default=None,
                   doc="only the channels-first layout (or None) is supported"),
}

register(OpDef(
    "Pooling", inputs=("data",), attrs=_POOL_ATTRS, compute=_pool_compute,
    infer_shape=_pool_shape, grad=_pool_grad,
    doc="Max, average, sum or Lp pooling over 1-D, 2-D or 3-D windows (channels-first).",
    example="nd.Pooling(nd.ones((1, 3, 8, 8)), kernel=(2, 2), stride=(2, 2)).shape  "
            "# (1, 3, 4, 4)"))


# -- backward ---------------------------------------------------------------------------------

def _first_max_mask(xp, x, y):
    """1 where ``x`` equals its window's maximum ``y`` first (global windows), else 0."""
    n, c = x.shape[:2]
    hit = (x == y).reshape(n, c, -1)
    first = hit & (xp.cumsum(hit, axis=2) == 1)
    return first.reshape(x.shape).astype(x.dtype)


def _global_backward(xp, x, y, g, attrs):
    ptype = attrs["pool_type"]
    if ptype == "max":
        return _first_max_mask(xp, x, y) * g
    if ptype == "avg":
        return xp.broadcast_to(g / x.dtype.type(math.prod(x.shape[2:])), x.shape).copy()
    if ptype == "sum" or attrs["p_value"] == 1:
        return xp.broadcast_to(g, x.shape).copy()
    return g * _lp_ratio(xp, x, y, attrs["p_value"])


def _lp_ratio(xp, win, y, p):
    """d out / d x of lp pooling: (x / out) ** (p - 1), 0 where out is 0."""
    zero = y == 0
    ratio = win / xp.where(zero, y.dtype.type(1), y)
    return xp.where(zero, y.dtype.type(0), ratio ** (p - 1))


def _pool_backward(xp, x, y, g, **attrs):
    check_float("_backward_Pooling", x)
    kernel, stride, pad, out = _geometry(attrs, x.shape)
    if tuple(y.shape) != tuple(g.shape) or tuple(y.shape) != (*x.shape[:2], *out):
        raise MXNetError(f"_backward_Pooling: output {tuple(y.shape)} and out_grad "
                         f"{tuple(g.shape)} must both have the pooled shape "
                         f"{(*x.shape[:2], *out)} of data {tuple(x.shape)}")
    if attrs["global_pool"]:
        return _global_backward(xp, x, y, g, attrs)
    ptype, p = attrs["pool_type"], attrs["p_value"]
    xpad = _padded(xp, x, kernel, stride, pad, out, _lowest(x.dtype) if ptype == "max" else 0)
    grad = xp.zeros(xpad.shape, dtype=x.dtype)
    if ptype == "avg":
        g = g / xp.asarray(_counts(x.shape[2:], kernel, stride, pad, out, _include_pad(attrs)),
                           dtype=x.dtype)
    taken = xp.zeros(y.shape, dtype=bool) if ptype == "max" else None
    for offs in itertools.product(*(range(k) for k in kernel)):
        where = (Ellipsis, *(_window(o, s, n) for o, s, n in zip(offs, stride, out)))
        if ptype == "max":
            hit = (xpad[where] == y) & ~taken
            taken |= hit
            grad[where] += g * hit
        elif ptype == "lp" and p != 1:
            grad[where] += g * _lp_ratio(xp, xpad[where], y, p)
        else:
            grad[where] += g
    crop = tuple(slice(p_, p_ + n) for p_, n in zip(pad, x.shape[2:]))
    return xp.ascontiguousarray(grad[(slice(None), slice(None), *crop)])


def _pool_backward_shape(attrs, in_shapes):
    data, output, out_grad = in_shapes
    if data is not None:
        pooled = (data[0], data[1], *_geometry(attrs, data)[3])
        for name, shape in (("output", output), ("out_grad", out_grad)):
            if shape is not None and tuple(shape) != pooled and all(shape) and all(data):
                raise MXNetError(f"_backward_Pooling: {name} shape {shape} does not match "
                                 f"the pooled shape {pooled} of data {data}")
        output = output or pooled
        out_grad = out_grad or pooled
    return [data, output, out_grad], [data]


def _pool_backward_grad(F, ins, outs, gouts, **attrs):
    """Linear in out_grad for avg/sum/lp with p=1: the adjoint is the pooling itself."""
    if attrs["pool_type"] in ("avg", "sum") or attrs["p_value"] == 1:
        return [None, None, F.Pooling(gouts[0], **attrs)]
    raise MXNetError(f"_backward_Pooling: second-order gradients of "
                     f"pool_type={attrs['pool_type']!r} pooling are not supported (avg, sum "
                     "and lp with p_value=1 are)")


register(OpDef(
    "_backward_Pooling", inputs=("data", "output", "out_grad"), attrs=_POOL_ATTRS,
    compute=_pool_backward, infer_shape=_pool_backward_shape, grad=_pool_backward_grad,
    nondiff_inputs=("data", "output"),
    doc="Gradient of Pooling with respect to its data: max routes out_grad to the first "
        "maximum of each window, avg spreads out_grad / window size, sum spreads it, lp "
        "scales it by (x / output) ** (p - 1).",
    example="nd._backward_Pooling(x, nd.Pooling(x, kernel=(2, 2)), g, kernel=(2, 2))"))
