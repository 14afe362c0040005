"""Convolution and Deconvolution (1-D, 2-D and 3-D, channels-first), their shape inference
(which fills ``weight``/``bias`` from the data shape) and gradients written as ops.

Both ops are computed with one big matrix product: ``Convolution`` gathers the strided, dilated
windows of the padded input into a column matrix (im2col, one strided copy per kernel offset)
and multiplies it by the weight; ``Deconvolution`` multiplies first and scatters the columns
back (col2im). The code uses only ``xp.*`` and array methods, so NumPy and CuPy run it alike.

Gradients: the data gradient of a Convolution is a Deconvolution of the output gradient with
the same weight, and the other way round; both weight gradients use the hidden op
``_backward_Convolution_weight(out_grad, data)``.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> conv = ops.get("Convolution")
    >>> attrs = conv.parse_attrs({"kernel": (3, 3), "num_filter": 4})
    >>> conv.infer_shape(attrs, [(2, 3, 8, 8), None, None])
    ([(2, 3, 8, 8), (4, 3, 3, 3), (4,)], [(2, 4, 6, 6)])
    >>> x, w, b = np.ones((2, 3, 8, 8)), np.ones((4, 3, 3, 3)), np.zeros(4)
    >>> float(conv.compute(np, x, w, b, **attrs)[0, 0, 0, 0])
    27.0
"""

from __future__ import annotations

import itertools
import math

from ..base import MXNetError
from ..limits import check_elements
from .attrs import Bool, Enum, Int, Shape
from .opdef import OpDef, register
from .rules import check_float

__all__ = []

_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


# -- geometry ---------------------------------------------------------------------------------

def _per_dim(op, name, value, nd, default):
    """``value`` (a shape attribute) as one entry per spatial dim; ``()`` gives the default."""
    if not value:
        return (default,) * nd
    if len(value) != nd:
        raise MXNetError(f"{op}: {name} {tuple(value)} has {len(value)} dims but kernel has "
                         f"{nd}; give one value per spatial dim")
    return tuple(value)


def _geometry(op, attrs):
    """``(kernel, stride, dilate, pad)`` as full tuples, checked against each other."""
    kernel = tuple(attrs["kernel"])
    nd = len(kernel)
    if nd not in _LAYOUTS:
        raise MXNetError(f"{op}: kernel must have 1, 2 or 3 dims, got {kernel}")
    if min(kernel) < 1:
        raise MXNetError(f"{op}: kernel sizes must be positive, got {kernel}")
    layout = attrs.get("layout")
    if layout is not None and layout != _LAYOUTS[nd]:
        raise MXNetError(f"{op}: layout {layout!r} is not supported with a {nd}-D kernel; "
                         f"only channels-first {_LAYOUTS[nd]!r} (or None) is")
    stride = _per_dim(op, "stride", attrs["stride"], nd, 1)
    dilate = _per_dim(op, "dilate", attrs["dilate"], nd, 1)
    pad = _per_dim(op, "pad", attrs["pad"], nd, 0)
    if min(stride) < 1 or min(dilate) < 1 or min(pad) < 0:
        raise MXNetError(f"{op}: stride {stride} and dilate {dilate} must be positive and "
                         f"pad {pad} non-negative")
    for key in ("num_filter", "num_group"):
        if attrs[key] < 1:
            raise MXNetError(f"{op}: {key} must be positive, got {attrs[key]}")
    return kernel, stride, dilate, pad


def _dilated(kernel, dilate):
    return tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilate))


def _conv_out(op, spatial, kernel, stride, dilate, pad):
    """Output spatial sizes of a convolution (0 stays unknown)."""
    out = []
    for size, dk, s, p in zip(spatial, _dilated(kernel, dilate), stride, pad):
        if not size:
            out.append(0)
            continue
        if size + 2 * p < dk:
            raise MXNetError(f"{op}: the dilated kernel ({dk}) is larger than the padded input "
                             f"({size} + 2*{p}) along a spatial dim (input {tuple(spatial)}, "
                             f"kernel {kernel}, dilate {dilate}, pad {pad})")
        out.append((size + 2 * p - dk) // s + 1)
    return tuple(out)


def _deconv_pad_adj(attrs, spatial):
    """Deconvolution's effective ``(pad, adj)``: ``target_shape`` (when set) overrides both."""
    kernel, stride, dilate, pad = _geometry("Deconvolution", attrs)
    nd = len(kernel)
    adj = _per_dim("Deconvolution", "adj", attrs["adj"], nd, 0)
    target = tuple(attrs["target_shape"] or ())
    if target and any(target):
        target = _per_dim("Deconvolution", "target_shape", target, nd, 0)
        pads, adjs = [], []
        for size, dk, s, t in zip(spatial, _dilated(kernel, dilate), stride, target):
            full = s * (size - 1) + dk if size else 0
            if size and t > full:
                raise MXNetError(f"Deconvolution: target_shape {target} is too big: at most "
                                 f"{full} along that dim for input {tuple(spatial)}")
            total = full - t if size else 0
            pads.append((total + 1) // 2)
            adjs.append(total % 2)
        if any(a >= s for a, s in zip(adjs, stride)):
            raise MXNetError(f"Deconvolution: target_shape {target} cannot be reached with "
                             f"stride {stride} from input {tuple(spatial)}: it needs an output "
                             f"adjustment {tuple(adjs)}, which must be smaller than the stride")
        return tuple(pads), tuple(adjs)
    for a, s in zip(adj, stride):
        if not 0 <= a < s:
            raise MXNetError(f"Deconvolution: adj {adj} must be smaller than stride {stride} "
                             "(and non-negative)")
    return pad, adj


def _deconv_out(spatial, kernel, stride, dilate, pad, adj):
    return tuple(s * (size - 1) + dk - 2 * p + a if size else 0
                 for size, dk, s, p, a in zip(spatial, _dilated(kernel, dilate), stride, pad,
                                               adj))


def _window(offset, dilate, stride, count):
    """The strided slice that picks kernel offset ``offset`` for ``count`` outputs."""
    start = offset * dilate
    return slice(start, start + stride * (count - 1) + 1, stride)


def _offsets(kernel):
    return itertools.product(*(range(k) for k in kernel))




# -- im2col / col2im (NumPy and CuPy alike) ---------------------------------------------------

def _im2col(xp, x, kernel, stride, dilate, pad, out_sp, groups):
    """Columns of ``x`` (N, C, *spatial): shape ``(groups, C/groups*prod(kernel), N*prod(out))``,
    row ``(c, *k)``, column ``(n, *o)``: ``xpad[n, c, o*stride + k*dilate]``."""
    n, c = x.shape[:2]
    check_elements((n, c, *(d + 2 * p for d, p in zip(x.shape[2:], pad))), "padded input")
    check_elements((c, *kernel, n, *out_sp), "im2col columns")
    if any(pad):
        x = xp.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    xt = x.swapaxes(0, 1)  # (C, N, *spatial), a view
    cols = xp.empty((c, *kernel, n, *out_sp), dtype=x.dtype)
    whole = (slice(None), slice(None))
    for offs in _offsets(kernel):
        window = tuple(_window(o, d, s, m) for o, d, s, m in zip(offs, dilate, stride, out_sp))
        cols[(slice(None), *offs)] = xt[whole + window]
    return cols.reshape(groups, (c // groups) * math.prod(kernel), n * math.prod(out_sp))


def _col2im(xp, cols, kernel, stride, dilate, in_sp, full_sp):
    """Scatter-add ``cols`` (F, *kernel, N, *in_sp) into a zero array (F, N, *full_sp)."""
    f, n = cols.shape[0], cols.shape[1 + len(kernel)]
    out = xp.zeros((f, n, *full_sp), dtype=cols.dtype)
    whole = (slice(None), slice(None))
    for offs in _offsets(kernel):
        window = tuple(_window(o, d, s, m) for o, d, s, m in zip(offs, dilate, stride, in_sp))
        out[whole + window] += cols[(slice(None), *offs)]
    return out


def _matmul(xp, a, b):
    """``a @ b`` over a leading group axis; one plain 2-D product when there is one group."""
    if a.shape[0] == 1:
        return xp.matmul(a[0], b[0])[None]
    return xp.matmul(a, b)


def _channels_first(xp, y):
    """(F, N, ...) -> contiguous (N, F, ...)."""
    return xp.ascontiguousarray(y.swapaxes(0, 1))


def _add_bias(y, bias):
    """Add ``bias`` (F,) to ``y`` (N, F, ...) in place."""
    y += bias.reshape((1, -1) + (1,) * (y.ndim - 2))
    return y


# -- Convolution ------------------------------------------------------------------------------

def _check_conv_arrays(x, w, b, attrs):
    kernel, stride, dilate, pad = _geometry("Convolution", attrs)
    check_float("Convolution", x, w)
    if x.ndim != len(kernel) + 2:
        raise MXNetError(f"Convolution: data must have {len(kernel) + 2} dims (N, C, "
                         f"*spatial) for a {len(kernel)}-D kernel {kernel}, got shape {x.shape}")
    want = _conv_weight_shape("Convolution", attrs, x.shape[1], kernel)
    if tuple(w.shape) != want:
        raise MXNetError(f"Convolution: weight shape {tuple(w.shape)} does not match data shape "
                         f"{x.shape}: expected {want} = (num_filter, channels/num_group, "
                         "*kernel)")
    if b is not None and tuple(b.shape) != (attrs["num_filter"],):
        raise MXNetError(f"Convolution: bias shape {tuple(b.shape)} does not match "
                         f"num_filter={attrs['num_filter']}: expected ({attrs['num_filter']},)")
    return kernel, stride, dilate, pad


def _conv_weight_shape(op, attrs, channels, kernel):
    groups, filters = attrs["num_group"], attrs["num_filter"]
    if filters % groups:
        raise MXNetError(f"{op}: num_filter={filters} is not divisible by num_group={groups}")
    if channels and channels % groups:
        raise MXNetError(f"{op}: data has {channels} channels, not divisible by "
                         f"num_group={groups}")
    return (filters, channels // groups, *kernel)


def _conv_compute(xp, x, w, b=None, **attrs):
    kernel, stride, dilate, pad = _check_conv_arrays(x, w, b, attrs)
    out_sp = _conv_out("Convolution", x.shape[2:], kernel, stride, dilate, pad)
    groups = attrs["num_group"]
    cols = _im2col(xp, x, kernel, stride, dilate, pad, out_sp, groups)
    w2 = w.reshape(groups, w.shape[0] // groups, -1)
    y = _matmul(xp, w2, cols).reshape(w.shape[0], x.shape[0], *out_sp)
    y = _channels_first(xp, y)
    return y if b is None else _add_bias(y, b)


def _merge(op, name, want, given, context):
    """Merge the expected shape of a parameter with the one given (0 = unknown)."""
    if given is None:
        return want
    if len(given) != len(want) or any(a and b and a != b for a, b in zip(want, given)):
        raise MXNetError(f"{op}: {name} shape {given} does not match {context}: expected "
                         f"{tuple(want)}")
    return tuple(a or b for a, b in zip(want, given))


def _conv_shape(attrs, in_shapes):
    data, weight = in_shapes[0], in_shapes[1]
    bias = in_shapes[2] if len(in_shapes) > 2 else None
    kernel, stride, dilate, pad = _geometry("Convolution", attrs)
    nd, groups = len(kernel), attrs["num_group"]
    if data is not None and len(data) != nd + 2:
        raise MXNetError(f"Convolution: data must have {nd + 2} dims (N, C, *spatial) for a "
                         f"{nd}-D kernel {kernel}, got shape {data}")
    channels = data[1] if data is not None else 0
    want = _conv_weight_shape("Convolution", attrs, channels, kernel)
    weight = _merge("Convolution", "weight", want, weight,
                    f"data shape {data}, num_filter={attrs['num_filter']}, "
                    f"num_group={groups}, kernel={kernel}")
    ins = [data, weight]
    if len(in_shapes) > 2:
        ins.append(_merge("Convolution", "bias", (attrs["num_filter"],), bias,
                          f"num_filter={attrs['num_filter']}"))
    if data is None:
        return ins, [None]
    if not data[1] and weight[1]:
        ins[0] = data = (data[0], weight[1] * groups, *data[2:])
    out = _conv_out("Convolution", data[2:], kernel, stride, dilate, pad)
    return ins, [(data[0], attrs["num_filter"], *out)]


def _geometry_attrs(kernel, stride, dilate, pad):
    return {"kernel": kernel, "stride": stride, "dilate": dilate, "pad": pad}


def _conv_grad(F, ins, outs, gouts, **attrs):
    x, w = ins[0], ins[1]
    g = gouts[0]
    kernel, stride, dilate, pad = _geometry("Convolution", attrs)
    geom = _geometry_attrs(kernel, stride, dilate, pad)
    adj = tuple((size + 2 * p - dk) % s for size, dk, s, p in
                zip(x.shape[2:], _dilated(kernel, dilate), stride, pad))
    dx = F.Deconvolution(g, w, **geom, adj=adj, num_filter=x.shape[1],
                         num_group=attrs["num_group"], no_bias=True)
    dw = F._backward_Convolution_weight(g, x, **geom, num_filter=attrs["num_filter"],
                                        num_group=attrs["num_group"])
    grads = [dx, dw]
    if len(ins) > 2:
        grads.append(F.sum(g, axis=1, exclude=True))
    return grads


def _with_bias(attrs):
    return ("data", "weight") if attrs["no_bias"] else ("data", "weight", "bias")


_CUDNN_TUNE = Enum(("fastest", "limited_workspace", "off"), default=None,
                   doc="accepted for compatibility; ignored")
_LAYOUT = Enum(("NCW", "NCHW", "NCDHW", "NHWC", "NDHWC"), default=None,
               doc="only the channels-first layout of the kernel's rank (or None) is supported")


def _conv_attrs(deconv):
    attrs = {
        "kernel": Shape(doc="kernel size: (w,), (h, w) or (d, h, w)"),
        "stride": Shape(default=(), doc="stride per spatial dim (default 1)"),
        "dilate": Shape(default=(), doc="dilation per spatial dim (default 1)"),
        "pad": Shape(default=(), doc="zero padding per spatial dim (default 0)"),
    }
    if deconv:
        attrs["adj"] = Shape(default=(), doc="extra output size at the end (< stride); "
                                             "ignored when target_shape is set")
        attrs["target_shape"] = Shape(default=(), doc="output spatial shape; sets pad and adj")
    attrs.update({
        "num_filter": Int(doc="number of output channels"),
        "num_group": Int(default=1, doc="number of groups the channels are split into"),
        "workspace": Int(default=512 if deconv else 1024, doc="accepted; ignored"),
        "no_bias": Bool(default=deconv, doc="leave out the bias input"),
        "cudnn_tune": _CUDNN_TUNE,
        "cudnn_off": Bool(default=False, doc="accepted; ignored"),
        "layout": _LAYOUT,
    })
    return attrs


register(OpDef(
    "Convolution", inputs=("data", "weight", "bias"), input_filter=_with_bias,
    attrs=_conv_attrs(deconv=False), compute=_conv_compute, infer_shape=_conv_shape,
    grad=_conv_grad,
    doc="N-D convolution (1-D, 2-D, 3-D; channels-first) with stride, dilation, zero padding "
        "and groups. Weight shape: (num_filter, channels/num_group, *kernel).",
    example="nd.Convolution(nd.ones((1, 3, 8, 8)), nd.ones((4, 3, 3, 3)), nd.zeros(4), "
            "kernel=(3, 3), num_filter=4).shape  # (1, 4, 6, 6)"))


# -- Deconvolution ----------------------------------------------------------------------------

def _deconv_weight_shape(attrs, channels, kernel):
    groups, filters = attrs["num_group"], attrs["num_filter"]
    if filters % groups:
        raise MXNetError(f"Deconvolution: num_filter={filters} is not divisible by "
                         f"num_group={groups}")
    if channels and channels % groups:
        raise MXNetError(f"Deconvolution: data has {channels} channels, not divisible by "
                         f"num_group={groups}")
    return (channels, filters // groups, *kernel)


def _check_deconv_arrays(x, w, b, attrs):
    kernel = _geometry("Deconvolution", attrs)[0]
    check_float("Deconvolution", x, w)
    if x.ndim != len(kernel) + 2:
        raise MXNetError(f"Deconvolution: data must have {len(kernel) + 2} dims (N, C, "
                         f"*spatial) for a {len(kernel)}-D kernel {kernel}, got shape {x.shape}")
    want = _deconv_weight_shape(attrs, x.shape[1], kernel)
    if tuple(w.shape) != want:
        raise MXNetError(f"Deconvolution: weight shape {tuple(w.shape)} does not match data "
                         f"shape {x.shape}: expected {want} = (channels, "
                         "num_filter/num_group, *kernel)")
    if b is not None and tuple(b.shape) != (attrs["num_filter"],):
        raise MXNetError(f"Deconvolution: bias shape {tuple(b.shape)} does not match "
                         f"num_filter={attrs['num_filter']}: expected ({attrs['num_filter']},)")


def _deconv_compute(xp, x, w, b=None, **attrs):
    _check_deconv_arrays(x, w, b, attrs)
    kernel, stride, dilate, _ = _geometry("Deconvolution", attrs)
    in_sp = x.shape[2:]
    pad, adj = _deconv_pad_adj(attrs, in_sp)
    out_sp = _deconv_out(in_sp, kernel, stride, dilate, pad, adj)
    groups, n = attrs["num_group"], x.shape[0]
    wt = w.reshape(groups, w.shape[0] // groups, -1).swapaxes(1, 2)  # (G, Fg*K, Cg)
    x2 = xp.ascontiguousarray(x.swapaxes(0, 1)).reshape(groups, x.shape[1] // groups, -1)
    cols = _matmul(xp, wt, x2).reshape(attrs["num_filter"], *kernel, n, *in_sp)
    full = tuple(max(s * (size - 1) + dk, p + o) for size, dk, s, p, o in
                 zip(in_sp, _dilated(kernel, dilate), stride, pad, out_sp))
    y = _col2im(xp, cols, kernel, stride, dilate, in_sp, full)
    crop = tuple(slice(p, p + o) for p, o in zip(pad, out_sp))
    y = _channels_first(xp, y[(slice(None), slice(None)) + crop])
    return y if b is None else _add_bias(y, b)


def _deconv_shape(attrs, in_shapes):
    data, weight = in_shapes[0], in_shapes[1]
    bias = in_shapes[2] if len(in_shapes) > 2 else None
    kernel, stride, dilate, _ = _geometry("Deconvolution", attrs)
    nd = len(kernel)
    if data is not None and len(data) != nd + 2:
        raise MXNetError(f"Deconvolution: data must have {nd + 2} dims (N, C, *spatial) for a "
                         f"{nd}-D kernel {kernel}, got shape {data}")
    channels = data[1] if data is not None else 0
    want = _deconv_weight_shape(attrs, channels, kernel)
    weight = _merge("Deconvolution", "weight", want, weight,
                    f"data shape {data}, num_filter={attrs['num_filter']}, "
                    f"num_group={attrs['num_group']}, kernel={kernel}")
    ins = [data, weight]
    if len(in_shapes) > 2:
        ins.append(_merge("Deconvolution", "bias", (attrs["num_filter"],), bias,
                          f"num_filter={attrs['num_filter']}"))
    if data is None:
        return ins, [None]
    if not data[1] and weight[0]:
        ins[0] = data = (data[0], weight[0], *data[2:])
    pad, adj = _deconv_pad_adj(attrs, data[2:])
    out = _deconv_out(data[2:], kernel, stride, dilate, pad, adj)
    return ins, [(data[0], attrs["num_filter"], *out)]


def _deconv_grad(F, ins, outs, gouts, **attrs):
    x, w = ins[0], ins[1]
    g = gouts[0]
    kernel, stride, dilate, _ = _geometry("Deconvolution", attrs)
    pad, _ = _deconv_pad_adj(attrs, x.shape[2:])
    geom = _geometry_attrs(kernel, stride, dilate, pad)
    groups = attrs["num_group"]
    dx = F.Convolution(g, w, **geom, num_filter=x.shape[1], num_group=groups, no_bias=True)
    dw = F._backward_Convolution_weight(x, g, **geom, num_filter=x.shape[1], num_group=groups)
    grads = [dx, dw]
    if len(ins) > 2:
        grads.append(F.sum(g, axis=1, exclude=True))
    return grads


register(OpDef(
    "Deconvolution", inputs=("data", "weight", "bias"), input_filter=_with_bias,
    attrs=_conv_attrs(deconv=True), compute=_deconv_compute, infer_shape=_deconv_shape,
    grad=_deconv_grad,
    doc="Transposed convolution (the gradient of Convolution with respect to its data). "
        "Weight shape: (channels, num_filter/num_group, *kernel); output size "
        "stride*(in-1) + dilate*(kernel-1) + 1 - 2*pad + adj, or target_shape.",
    example="nd.Deconvolution(nd.ones((1, 4, 5, 5)), nd.ones((4, 2, 3, 3)), kernel=(3, 3), "
            "stride=(2, 2), num_filter=2).shape  # (1, 2, 11, 11)"))


# -- the weight gradient ----------------------------------------------------------------------

def _wgrad_geometry(attrs, g_shape, x_shape):
    """Checked geometry: ``out_grad`` must have the shape of the convolution of ``data``."""
    op = "_backward_Convolution_weight"
    kernel, stride, dilate, pad = _geometry(op, attrs)
    nd = len(kernel)
    if len(g_shape) != nd + 2 or len(x_shape) != nd + 2:
        raise MXNetError(f"{op}: out_grad {tuple(g_shape)} and data {tuple(x_shape)} must "
                         f"have {nd + 2} dims for a {nd}-D kernel")
    full = _conv_out(op, x_shape[2:], kernel, stride, dilate, pad)
    want = (x_shape[0], attrs["num_filter"], *full)
    if tuple(g_shape) != want:
        raise MXNetError(f"{op}: out_grad shape {tuple(g_shape)} does not match data shape "
                         f"{tuple(x_shape)}: expected {want} (the convolution's output)")
    return kernel, stride, dilate, pad


def _wgrad_compute(xp, g, x, **attrs):
    kernel, stride, dilate, pad = _wgrad_geometry(attrs, g.shape, x.shape)
    groups, filters = attrs["num_group"], attrs["num_filter"]
    cols = _im2col(xp, x, kernel, stride, dilate, pad, g.shape[2:], groups)
    g2 = xp.ascontiguousarray(g.swapaxes(0, 1)).reshape(groups, filters // groups, -1)
    dw = _matmul(xp, g2, cols.swapaxes(1, 2))
    return dw.reshape(_conv_weight_shape("_backward_Convolution_weight", attrs, x.shape[1],
                                         kernel))


def _wgrad_shape(attrs, in_shapes):
    g, x = in_shapes
    kernel = _geometry("_backward_Convolution_weight", attrs)[0]
    channels = x[1] if x is not None else 0
    weight = _conv_weight_shape("_backward_Convolution_weight", attrs, channels, kernel)
    if g is not None and x is not None and all(g) and all(x):
        _wgrad_geometry(attrs, g, x)
    return [g, x], [weight]


def _wgrad_grad(F, ins, outs, gouts, **attrs):
    """The op is bilinear: its adjoints are a Convolution and a Deconvolution with ``h``."""
    g, x = ins
    h = gouts[0]
    kernel, stride, dilate, pad = _geometry("_backward_Convolution_weight", attrs)
    geom = _geometry_attrs(kernel, stride, dilate, pad)
    groups = attrs["num_group"]
    dg = F.Convolution(x, h, **geom, num_filter=attrs["num_filter"], num_group=groups,
                       no_bias=True)
    adj = tuple((size + 2 * p - dk) % s for size, dk, s, p in
                zip(x.shape[2:], _dilated(kernel, dilate), stride, pad))
    dx = F.Deconvolution(g, h, **geom, adj=adj, num_filter=x.shape[1], num_group=groups,
                         no_bias=True)
    return [dg, dx]


register(OpDef(
    "_backward_Convolution_weight", inputs=("out_grad", "data"),
    attrs={key: spec for key, spec in _conv_attrs(deconv=False).items()
           if key in ("kernel", "stride", "dilate", "pad", "num_filter", "num_group")},
    compute=_wgrad_compute, infer_shape=_wgrad_shape, grad=_wgrad_grad,
    doc="Gradient of Convolution with respect to its weight: out_grad (N, num_filter, *out) "
        "times the im2col columns of data (N, C, *in); shape (num_filter, C/num_group, "
        "*kernel).",
    example="nd._backward_Convolution_weight(nd.ones((1, 4, 6, 6)), nd.ones((1, 3, 8, 8)), "
            "kernel=(3, 3), num_filter=4).shape  # (4, 3, 3, 3)"))
