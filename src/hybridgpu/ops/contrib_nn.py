"""MXNet's ``contrib`` layers ops that GluonCV and GluonNLP models call (issue 21):
``SyncBatchNorm`` (BatchNorm with MXNet's cross-device statistics on one device),
``BilinearResize2D``, ``AdaptiveAvgPooling2D`` and ``arange_like``.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> x = np.arange(4, dtype="f4").reshape(1, 1, 2, 2)
    >>> ops.get("_contrib_AdaptiveAvgPooling2D").compute(np, x, output_size=(1,)).ravel()
    array([1.5], dtype=float32)
"""

from __future__ import annotations

import numpy as np

from ..base import MXNetError
from .attrs import Bool, Enum, Float, Int, Shape, Str
from .norm import _bn_compute, _bn_shape, _bn_type
from .opdef import OpDef, register
from .rules import normalize_axis

__all__ = []

# -- SyncBatchNorm --------------------------------------------------------------------------

_SYNC_BN_ATTRS = {
    "eps": Float(default=1e-3, doc="added to the variance"),
    "momentum": Float(default=0.9, doc="moving average momentum"),
    "fix_gamma": Bool(default=True, doc="use gamma = 1 (and give gamma a zero gradient)"),
    "use_global_stats": Bool(default=False,
                             doc="normalize with the moving statistics even in training"),
    "output_mean_var": Bool(default=False, doc="also output the mean and the inverse std"),
    "ndev": Int(default=1, doc="devices whose batches share statistics in MXNet"),
    "key": Str(default="", doc="the name that groups the devices' calls in MXNet"),
}


def _sync_bn_compute(xp, data, gamma, beta, moving_mean, moving_var, *, eps, momentum,
                     fix_gamma, use_global_stats, output_mean_var, ndev=1, key="",
                     is_train=False):
    return _bn_compute(xp, data, gamma, beta, moving_mean, moving_var, eps=eps,
                       momentum=momentum, fix_gamma=fix_gamma, use_global_stats=use_global_stats,
                       output_mean_var=output_mean_var, axis=1, is_train=is_train)


def _sync_bn_shape(attrs, in_shapes):
    return _bn_shape({**attrs, "axis": 1}, in_shapes)


def _sync_bn_grad(F, ins, outs, gouts, ndev=1, key="", **attrs):
    dx, dgamma, dbeta = F._backward_BatchNorm(gouts[0], ins[0], ins[1], outs[1], outs[2],
                                              axis=1, **attrs)
    return [dx, dgamma, dbeta, None, None]


register(OpDef(
    "_contrib_SyncBatchNorm", inputs=("data", "gamma", "beta", "moving_mean", "moving_var"),
    input_init={"moving_mean": '["zero", {}]', "moving_var": '["one", {}]'},
    aux=("moving_mean", "moving_var"), attrs=_SYNC_BN_ATTRS, compute=_sync_bn_compute,
    infer_shape=_sync_bn_shape, infer_type=_bn_type, grad=_sync_bn_grad, num_outputs=3,
    num_visible_outputs=lambda a: 3 if a["output_mean_var"] else 1,
    output_names=("output", "mean", "var"), mode_dependent=True, mutates_aux=True,
    views=False,
    doc="BatchNorm over the channel axis 1. MXNet pools the batch statistics of the ndev "
        "devices that share key; hybridgpu runs each device's call on its own (the same "
        "numbers with one device).",
    example="nd.contrib.SyncBatchNorm(x, gamma, beta, mean, var).shape  # x.shape"))


# -- separable 2-D linear maps: bilinear resizing and adaptive average pooling -------------
# Both map each (H, W) plane to (h, w) as ``A_h @ x @ A_w.T``; the gradient is the transpose,
# ``A_h.T @ g @ A_w``. The matrices are built from the shapes and attributes alone.

def _bilinear_matrix(size_in, size_out, align_corners):
    """(size_out, size_in) weights of MXNet's bilinear sampling along one axis."""
    f32 = np.float32
    if size_out > 1:
        scale = (f32(size_in - 1) / f32(size_out - 1) if align_corners
                 else f32(size_in) / f32(size_out))
    else:
        scale = f32(0)
    dst = np.arange(size_out, dtype=f32)
    src = scale * dst if align_corners else np.maximum(scale * (dst + f32(0.5)) - f32(0.5),
                                                       f32(0))
    lo = src.astype(np.int64)
    step = (lo < size_in - 1).astype(np.int64)
    frac = (src - lo.astype(f32)).astype(np.float64)  # float32 weights, as MXNet's kernel
    matrix = np.zeros((size_out, size_in))
    rows = np.arange(size_out)
    np.add.at(matrix, (rows, lo), 1.0 - frac)
    np.add.at(matrix, (rows, lo + step), frac)
    return matrix


def _pooling_matrix(size_in, size_out):
    """(size_out, size_in) weights averaging MXNet's adaptive bins along one axis."""
    matrix = np.zeros((size_out, size_in))
    for i in range(size_out):
        start, end = (i * size_in) // size_out, -(-((i + 1) * size_in) // size_out)
        matrix[i, start:end] = 1.0 / (end - start)
    return matrix


def _apply_separable(xp, data, rows, cols, transpose=False):
    """``rows @ plane @ cols.T`` for every (N, C) plane (transposed maps when asked)."""
    rows = xp.asarray(rows.T if transpose else rows, dtype=data.dtype)
    cols = xp.asarray(cols.T if transpose else cols, dtype=data.dtype)
    return xp.matmul(xp.matmul(rows, data), cols.T)


def _check_4d(op, shape):
    if shape is not None and len(shape) != 4:
        raise MXNetError(f"{op}: data must be 4-D (N, C, H, W), got shape {shape}")


_RESIZE_MODES = ("size", "odd_scale", "like", "to_even_down", "to_even_up", "to_odd_down",
                 "to_odd_up")
_RESIZE_ATTRS = {
    "height": Int(default=1, doc="output height (mode 'size' without scale_height)"),
    "width": Int(default=1, doc="output width (mode 'size' without scale_height)"),
    "scale_height": Float(default=None, doc="height multiplier (modes 'size', 'odd_scale')"),
    "scale_width": Float(default=None, doc="width multiplier (modes 'size', 'odd_scale')"),
    "mode": Enum(_RESIZE_MODES, default="size", doc="how the output size is chosen"),
    "align_corners": Bool(default=True, doc="corner pixels' centres map onto each other"),
}


def _resized(attrs, shape, like=None):
    """MXNet's output (height, width) of BilinearResize2D for a data shape."""
    h, w = shape[2], shape[3]
    mode = attrs["mode"]
    if mode == "size":
        if attrs["scale_height"] is None:
            return attrs["height"], attrs["width"]
        if attrs["scale_width"] is None:
            raise MXNetError("BilinearResize2D: scale_height is given, so scale_width is "
                             "needed too")
        return int(attrs["scale_height"] * h), int(attrs["scale_width"] * w)
    if mode == "odd_scale":
        if attrs["scale_height"] is None or attrs["scale_width"] is None:
            raise MXNetError("BilinearResize2D: mode 'odd_scale' needs scale_height and "
                             "scale_width")
        return tuple(int(n * s) if n % 2 == 0 else int((n - 1) * s) + 1
                     for n, s in ((h, attrs["scale_height"]), (w, attrs["scale_width"])))
    if mode == "like":
        return like[2], like[3]
    even, up = "even" in mode, mode.endswith("up")
    return tuple(n if (n % 2 == 0) == even else (n + 1 if up else n - 1) for n in (h, w))


def _resize_inputs(attrs):
    return ("data", "like") if attrs["mode"] == "like" else ("data",)


def _resize_shape(attrs, in_shapes):
    data = in_shapes[0]
    _check_4d("BilinearResize2D", data)
    like = in_shapes[1] if len(in_shapes) > 1 else None
    if data is None or (attrs["mode"] == "like" and like is None):
        return in_shapes, [None]
    h, w = _resized(attrs, data, like)
    if h < 1 or w < 1:
        raise MXNetError(f"BilinearResize2D: the output size ({h}, {w}) from input shape "
                         f"{data} and {attrs} is empty")
    return in_shapes, [(data[0], data[1], h, w)]


def _resize_matrices(attrs, data_shape, like_shape):
    h, w = _resized(attrs, data_shape, like_shape)
    return (_bilinear_matrix(data_shape[2], h, attrs["align_corners"]),
            _bilinear_matrix(data_shape[3], w, attrs["align_corners"]))


def _resize_compute(xp, data, like=None, **attrs):
    rows, cols = _resize_matrices(attrs, data.shape, None if like is None else like.shape)
    return _apply_separable(xp, data, rows, cols)


def _resize_grad(F, ins, outs, gouts, **attrs):
    grads = [F._backward_BilinearResize2D(gouts[0], ins[0], *ins[1:], **attrs)]
    return grads + [F.zeros_like(ins[1])] if len(ins) > 1 else grads


def _resize_backward_compute(xp, ograd, data, like=None, **attrs):
    rows, cols = _resize_matrices(attrs, data.shape, None if like is None else like.shape)
    return _apply_separable(xp, ograd, rows, cols, transpose=True)


register(OpDef(
    "_contrib_BilinearResize2D", inputs=("data", "like"), input_filter=_resize_inputs,
    attrs=_RESIZE_ATTRS, compute=_resize_compute, infer_shape=_resize_shape,
    infer_type=lambda a, t: (t, [t[0]]), grad=_resize_grad, views=False,
    nondiff_inputs=("like",),
    doc="Bilinear resizing of the (H, W) planes of NCHW data, MXNet's sampling (align_corners "
        "or half-pixel centres); the size from height/width, scales, another array ('like') "
        "or the nearest even/odd size.",
    example="nd.contrib.BilinearResize2D(x, height=8, width=8).shape  # (N, C, 8, 8)"))

register(OpDef(
    "_backward_BilinearResize2D", inputs=("ograd", "data", "like"),
    input_filter=lambda a: ("ograd", "data", "like") if a["mode"] == "like"
    else ("ograd", "data"),
    attrs=_RESIZE_ATTRS, compute=_resize_backward_compute,
    infer_shape=lambda a, s: (s, [s[1]]), infer_type=lambda a, t: (t, [t[0]]), views=False,
    doc="Gradient of BilinearResize2D with respect to its data (the transposed sampling).",
    example="nd._backward_BilinearResize2D(g, x, height=8, width=8)"))


def _pool_size(attrs):
    size = attrs["output_size"] or (1,)
    if len(size) not in (1, 2) or min(size) < 1:
        raise MXNetError(f"AdaptiveAvgPooling2D: output_size must be one or two positive "
                         f"ints, got {attrs['output_size']}")
    return (size[0], size[0]) if len(size) == 1 else tuple(size)


def _pool_matrices(attrs, shape):
    h, w = _pool_size(attrs)
    return _pooling_matrix(shape[2], h), _pooling_matrix(shape[3], w)


def _pool_shape(attrs, in_shapes):
    data = in_shapes[0]
    _check_4d("AdaptiveAvgPooling2D", data)
    if data is None:
        return in_shapes, [None]
    return in_shapes, [(data[0], data[1], *_pool_size(attrs))]


register(OpDef(
    "_contrib_AdaptiveAvgPooling2D", attrs={"output_size": Shape(
        default=(), doc="output (height, width), or one int for both; () means 1")},
    compute=lambda xp, data, output_size: _apply_separable(
        xp, data, *_pool_matrices({"output_size": output_size}, data.shape)),
    infer_shape=_pool_shape, infer_type=lambda a, t: (t, [t[0]]),
    grad=lambda F, ins, outs, gouts, **a: [F._backward_AdaptiveAvgPooling2D(gouts[0], ins[0],
                                                                             **a)],
    views=False,
    doc="Average pooling of NCHW data onto an output_size grid of bins (bin i spans "
        "floor(i*H/h) to ceil((i+1)*H/h)).",
    example="nd.contrib.AdaptiveAvgPooling2D(x, output_size=1).shape  # (N, C, 1, 1)"))

register(OpDef(
    "_backward_AdaptiveAvgPooling2D", inputs=("ograd", "data"),
    attrs={"output_size": Shape(default=())},
    compute=lambda xp, ograd, data, output_size: _apply_separable(
        xp, ograd, *_pool_matrices({"output_size": output_size}, data.shape), transpose=True),
    infer_shape=lambda a, s: (s, [s[1]]), infer_type=lambda a, t: (t, [t[0]]), views=False,
    doc="Gradient of AdaptiveAvgPooling2D: each bin's gradient spread evenly over it.",
    example="nd._backward_AdaptiveAvgPooling2D(g, x, output_size=1)"))


# -- arange_like ----------------------------------------------------------------------------

def _arange_like_shape(attrs, in_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, [None]
    if attrs["axis"] is None:
        return in_shapes, [data]
    return in_shapes, [(data[normalize_axis(attrs["axis"], len(data), "arange_like")],)]


def _arange_like_compute(xp, data, *, start, step, repeat, ctx="", axis=None):
    shape = _arange_like_shape({"axis": axis}, [data.shape])[1][0]
    if repeat < 1:
        raise MXNetError(f"arange_like: repeat must be >= 1, got {repeat}")
    t = data.dtype.type
    count = int(np.prod(shape))
    index = (xp.arange(count) // repeat).astype(data.dtype)
    return (t(start) + t(step) * index).reshape(shape)


register(OpDef(
    "_contrib_arange_like",
    attrs={"start": Float(default=0.0, doc="first value"),
           "step": Float(default=1.0, doc="spacing"),
           "repeat": Int(default=1, doc="times each value repeats"),
           "ctx": Str(default="", doc="accepted for compatibility"),
           "axis": Int(default=None, doc="take the size of this axis (a 1-D result)")},
    compute=_arange_like_compute, infer_shape=_arange_like_shape,
    infer_type=lambda a, t: (t, [t[0]]), grad=lambda F, ins, outs, gouts, **a: [None],
    nondiff_inputs=("data",), views=False,
    doc="Evenly spaced values shaped like data (or the length of one of its axes), in data's "
        "dtype: start + step * (i // repeat).",
    example="nd.contrib.arange_like(x, axis=1)  # [0, 1, ..., x.shape[1] - 1]"))
