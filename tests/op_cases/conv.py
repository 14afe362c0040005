"""Cases for ``ops/conv.py``: Convolution, Deconvolution and ``_backward_Convolution_weight``.

The references loop over output (or input) positions one at a time with plain NumPy, straight
from the definitions: ``y[n, f, o] = sum_{c, k} xpad[n, c, o*stride + k*dilate] * w[f, c, k]``
per group, and Deconvolution as the scatter ``y[n, f, i*stride + k*dilate - pad] +=
x[n, c, i] * w[c, f, k]``. Shapes stay small: the loops are slow on purpose.
"""

from __future__ import annotations

import itertools

import numpy as np

from op_harness import OpCase


def _full(value, nd, default):
    return tuple(value) if value else (default,) * nd


def _geom(kernel, stride=(), dilate=(), pad=()):
    nd = len(kernel)
    return _full(stride, nd, 1), _full(dilate, nd, 1), _full(pad, nd, 0)


def _taps(kernel, dilate):
    """Index arrays of the kernel taps along each spatial dim (for np.ix_)."""
    return [np.arange(k) * d for k, d in zip(kernel, dilate)]


def conv_ref(x, w, b=None, *, kernel, num_filter, stride=(), dilate=(), pad=(), num_group=1,
             no_bias=False, **_):
    """Direct convolution: one output position at a time."""
    stride, dilate, pad = _geom(kernel, stride, dilate, pad)
    xpad = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    out_sp = [(xpad.shape[2 + i] - (dilate[i] * (kernel[i] - 1) + 1)) // stride[i] + 1
              for i in range(len(kernel))]
    n, c = x.shape[:2]
    cg, fg = c // num_group, num_filter // num_group
    y = np.zeros((n, num_filter, *out_sp), dtype=np.float64)
    taps = _taps(kernel, dilate)
    for o in itertools.product(*(range(m) for m in out_sp)):
        index = np.ix_(*[o[i] * stride[i] + taps[i] for i in range(len(kernel))])
        for g in range(num_group):
            patch = xpad[:, g * cg:(g + 1) * cg][(Ellipsis, *index)]  # (n, cg, *kernel)
            wg = w[g * fg:(g + 1) * fg]                                 # (fg, cg, *kernel)
            y[(slice(None), slice(g * fg, (g + 1) * fg), *o)] = np.tensordot(
                patch, wg, axes=(list(range(1, patch.ndim)), list(range(1, wg.ndim))))
    if b is not None:
        y += b.reshape((1, -1) + (1,) * len(kernel))
    return y.astype(x.dtype)


def deconv_out_size(size, k, s, d, p, a, t):
    """Deconvolution's output size and the pad it crops (target ``t`` overrides p and a)."""
    full = s * (size - 1) + d * (k - 1) + 1
    if t:
        total = full - t
        return t, (total + 1) // 2
    return full - 2 * p + a, p


def deconv_ref(x, w, b=None, *, kernel, num_filter, stride=(), dilate=(), pad=(), adj=(),
               target_shape=(), num_group=1, no_bias=True, **_):
    """Direct transposed convolution: scatter every input position through the kernel."""
    nd = len(kernel)
    stride, dilate, pad = _geom(kernel, stride, dilate, pad)
    adj, target = _full(adj, nd, 0), _full(target_shape, nd, 0)
    sizes = [deconv_out_size(x.shape[2 + i], kernel[i], stride[i], dilate[i], pad[i], adj[i],
                             target[i]) for i in range(nd)]
    big = [x.shape[2 + i] * stride[i] + dilate[i] * kernel[i] + sizes[i][0] for i in range(nd)]
    n, c = x.shape[:2]
    cg, fg = c // num_group, num_filter // num_group
    y = np.zeros((n, num_filter, *big), dtype=np.float64)
    taps = _taps(kernel, dilate)
    for i in itertools.product(*(range(m) for m in x.shape[2:])):
        index = np.ix_(*[i[d] * stride[d] + taps[d] for d in range(nd)])
        for g in range(num_group):
            contrib = np.tensordot(x[(slice(None), slice(g * cg, (g + 1) * cg), *i)],
                                   w[g * cg:(g + 1) * cg], axes=(1, 0))  # (n, fg, *kernel)
            y[:, g * fg:(g + 1) * fg][(Ellipsis, *index)] += contrib
    y = y[(slice(None), slice(None), *[slice(p, p + s) for (s, p) in sizes])]
    if b is not None:
        y = y + b.reshape((1, -1) + (1,) * nd)
    return y.astype(x.dtype)


def wgrad_ref(g, x, *, kernel, num_filter, stride=(), dilate=(), pad=(), num_group=1, **_):
    """dW[f, c, k] = sum over n and output positions of g[n, f, o] * xpad[n, c, o*s + k*d]."""
    stride, dilate, pad = _geom(kernel, stride, dilate, pad)
    xpad = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    cg, fg = x.shape[1] // num_group, num_filter // num_group
    dw = np.zeros((num_filter, cg, *kernel), dtype=np.float64)
    taps = _taps(kernel, dilate)
    for o in itertools.product(*(range(m) for m in g.shape[2:])):
        index = np.ix_(*[o[i] * stride[i] + taps[i] for i in range(len(kernel))])
        for grp in range(num_group):
            patch = xpad[:, grp * cg:(grp + 1) * cg][(Ellipsis, *index)]  # (n, cg, *k)
            gg = g[(slice(None), slice(grp * fg, (grp + 1) * fg), *o)]      # (n, fg)
            dw[grp * fg:(grp + 1) * fg] += np.tensordot(gg, patch, axes=(0, 0))
    return dw.astype(x.dtype)


def _conv(shapes, cid, **attrs):
    return OpCase("Convolution", shapes=shapes, attrs=attrs, ref=conv_ref, id=cid)


def _deconv(shapes, cid, **attrs):
    return OpCase("Deconvolution", shapes=shapes, attrs=attrs, ref=deconv_ref, id=cid)


def _wgrad(data_shape, cid, **attrs):
    """Cases of the weight-gradient op: out_grad gets the convolution's output shape."""
    def make(rng, dtype):
        x = rng.uniform(-1, 1, data_shape).astype(dtype)
        w = np.zeros((attrs["num_filter"], data_shape[1] // attrs.get("num_group", 1),
                      *attrs["kernel"]), dtype=dtype)
        g = rng.uniform(-1, 1, conv_ref(x, w, **attrs).shape).astype(dtype)
        return [g, x]

    return OpCase("_backward_Convolution_weight", make=make, attrs=attrs, ref=wgrad_ref,
                  id=cid)


CASES = [
    _conv([(2, 3, 6, 6), (4, 3, 3, 3), (4,)], "2d", kernel=(3, 3), num_filter=4),
    _conv([(2, 3, 7, 6), (4, 3, 3, 2), (4,)], "2d-stride-pad", kernel=(3, 2), stride=(2, 3),
          pad=(1, 2), num_filter=4),
    _conv([(1, 2, 7, 7), (3, 2, 3, 3), (3,)], "2d-dilate", kernel=(3, 3), dilate=(2, 1),
          pad=(1, 0), num_filter=3),
    _conv([(2, 4, 5, 5), (6, 2, 3, 3)], "2d-group-nobias", kernel=(3, 3), num_filter=6,
          num_group=2, no_bias=True, pad=(1, 1)),
    _conv([(2, 3, 9), (4, 3, 3), (4,)], "1d", kernel=(3,), stride=(2,), pad=(1,),
          num_filter=4),
    _conv([(1, 2, 4, 5, 4), (3, 2, 2, 3, 2), (3,)], "3d", kernel=(2, 3, 2), stride=(2, 1, 1),
          pad=(1, 1, 0), num_filter=3),
    _conv([(2, 3, 5, 5), (2, 3, 1, 1)], "1x1", kernel=(1, 1), num_filter=2, no_bias=True,
          layout="NCHW", workspace=256, cudnn_tune="fastest", cudnn_off=True),
    _deconv([(2, 3, 4, 4), (3, 2, 3, 3)], "2d", kernel=(3, 3), num_filter=2),
    _deconv([(2, 3, 4, 3), (3, 2, 3, 3), (2,)], "2d-stride2-adj", kernel=(3, 3),
            stride=(2, 2), pad=(1, 1), adj=(1, 0), num_filter=2, no_bias=False),
    _deconv([(1, 4, 3, 3), (4, 3, 3, 3)], "2d-group", kernel=(3, 3), stride=(2, 1),
            num_filter=6, num_group=2),
    _deconv([(1, 2, 3, 4), (2, 2, 3, 3)], "2d-target", kernel=(3, 3), stride=(2, 2),
            target_shape=(6, 7), num_filter=2),
    _deconv([(1, 2, 4, 4), (2, 1, 2, 3)], "2d-dilate", kernel=(2, 3), stride=(2, 1),
            dilate=(2, 2), num_filter=1),
    _deconv([(2, 3, 5), (3, 2, 4), (2,)], "1d", kernel=(4,), stride=(3,), pad=(1,), adj=(2,),
            num_filter=2, no_bias=False),
    _deconv([(1, 2, 2, 3, 2), (2, 2, 2, 2, 2)], "3d", kernel=(2, 2, 2), stride=(2, 1, 2),
            num_filter=2),
    _wgrad((2, 3, 6, 5), "2d", kernel=(3, 2), stride=(2, 1), pad=(1, 1), num_filter=4),
    _wgrad((1, 4, 5, 5), "2d-group-dilate", kernel=(2, 2), dilate=(2, 1), num_filter=2,
           num_group=2),
    _wgrad((2, 2, 7), "1d", kernel=(3,), stride=(2,), num_filter=3),
]
