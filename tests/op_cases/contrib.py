"""Cases for ``ops/contrib_nn.py`` and ``ops/contrib_optim.py``: SyncBatchNorm,
BilinearResize2D (every size mode, both corner conventions, its backward op),
AdaptiveAvgPooling2D (and its backward op), arange_like, the AdamW update family,
multi_sum_sq and contrib.isfinite/isinf/isnan.

The references follow the definitions pixel by pixel: bilinear sampling takes MXNet's source
coordinate (computed in float32, as MXNet's kernels do, for every dtype) and mixes the two
neighbours on each axis; adaptive pooling averages bin ``[floor(i*H/h), ceil((i+1)*H/h))``.
The backward references apply the same definitions' adjoints (each output's gradient sent to
the input pixels it read, with the same weights). Numbers were also checked against MXNet
1.9.1 (tests/test_ecosystem_ops.py holds that comparison's fixture).
"""

from __future__ import annotations

import math

import numpy as np

from op_cases.norm import _bn_inputs, _bn_ref
from op_harness import OpCase


def _source(i, size_in, size_out, align_corners):
    """(lower index, step to the upper neighbour, weight of the upper one), MXNet's float32."""
    f = np.float32
    if size_out > 1:
        scale = f(size_in - 1) / f(size_out - 1) if align_corners else f(size_in) / f(size_out)
    else:
        scale = f(0)
    src = scale * f(i) if align_corners else max(scale * (f(i) + f(0.5)) - f(0.5), f(0))
    lo = int(src)
    return lo, int(lo < size_in - 1), float(f(src - f(lo)))


def _out_size(x, like=None, height=1, width=1, scale_height=None, scale_width=None,
              mode="size", **_):
    h, w = x.shape[2:]
    if mode == "size":
        return ((height, width) if scale_height is None
                else (int(scale_height * h), int(scale_width * w)))
    if mode == "odd_scale":
        return tuple(int(n * s) if n % 2 == 0 else int((n - 1) * s) + 1
                     for n, s in ((h, scale_height), (w, scale_width)))
    if mode == "like":
        return like.shape[2:]
    want_even = "even" in mode
    grow = 1 if mode.endswith("up") else -1
    return tuple(n if (n % 2 == 0) == want_even else n + grow for n in (h, w))


def _taps(x, attrs):
    """Yield (output pixel, [(input pixel, weight), ...]) of the bilinear sampling."""
    oh, ow = _out_size(x, **attrs)
    corners = attrs.get("align_corners", True)
    h, w = x.shape[2:]
    for i in range(oh):
        hl, hs, hw = _source(i, h, oh, corners)
        for j in range(ow):
            wl, ws, ww = _source(j, w, ow, corners)
            yield (i, j), [((hl, wl), (1 - hw) * (1 - ww)), ((hl, wl + ws), (1 - hw) * ww),
                           ((hl + hs, wl), hw * (1 - ww)), ((hl + hs, wl + ws), hw * ww)]


def resize_ref(x, like=None, **attrs):
    oh, ow = _out_size(x, like, **attrs)
    y = np.zeros(x.shape[:2] + (oh, ow))
    for (i, j), taps in _taps(x, {**attrs, "like": like}):
        y[:, :, i, j] = sum(x[:, :, a, b].astype(np.float64) * wt for (a, b), wt in taps)
    return y


def resize_backward_ref(g, x, like=None, **attrs):
    dx = np.zeros(x.shape)
    for (i, j), taps in _taps(x, {**attrs, "like": like}):
        for (a, b), wt in taps:
            dx[:, :, a, b] += g[:, :, i, j] * wt
    return dx


def _bins(size_in, size_out):
    return [(i * size_in // size_out, math.ceil((i + 1) * size_in / size_out))
            for i in range(size_out)]


def _pool_out(output_size=()):
    size = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,)
    size = size or (1,)
    return size * 2 if len(size) == 1 else size


def pool_ref(x, output_size=()):
    oh, ow = _pool_out(output_size)
    y = np.zeros(x.shape[:2] + (oh, ow))
    for i, (h0, h1) in enumerate(_bins(x.shape[2], oh)):
        for j, (w0, w1) in enumerate(_bins(x.shape[3], ow)):
            y[:, :, i, j] = x[:, :, h0:h1, w0:w1].astype(np.float64).mean(axis=(2, 3))
    return y


def pool_backward_ref(g, x, output_size=()):
    oh, ow = _pool_out(output_size)
    dx = np.zeros(x.shape)
    for i, (h0, h1) in enumerate(_bins(x.shape[2], oh)):
        for j, (w0, w1) in enumerate(_bins(x.shape[3], ow)):
            dx[:, :, h0:h1, w0:w1] += (g[:, :, i:i + 1, j:j + 1]
                                       / ((h1 - h0) * (w1 - w0)))
    return dx


def arange_like_ref(x, start=0.0, step=1.0, repeat=1, axis=None):
    shape = x.shape if axis is None else (x.shape[axis],)
    t = x.dtype.type
    idx = np.arange(math.prod(shape)) // repeat
    return (t(start) + t(step) * idx.astype(x.dtype)).reshape(shape)


def _resize_cases():
    x = (2, 3, 5, 7)
    sizes = [({"height": 3, "width": 9}, "down-up"), ({"height": 10, "width": 14}, "up"),
             ({"height": 1, "width": 1}, "1x1"),
             ({"height": 8, "width": 4, "align_corners": False}, "half-pixel"),
             ({"scale_height": 2.0, "scale_width": 0.5}, "scale"),
             ({"mode": "odd_scale", "scale_height": 2.0, "scale_width": 3.0}, "odd-scale"),
             ({"mode": "to_even_up"}, "even-up"), ({"mode": "to_even_down"}, "even-down"),
             ({"mode": "to_odd_up"}, "odd-up"), ({"mode": "to_odd_down"}, "odd-down")]
    cases = [OpCase("_contrib_BilinearResize2D", shapes=[x], attrs=a, ref=resize_ref, id=cid)
             for a, cid in sizes]
    cases.append(OpCase("_contrib_BilinearResize2D", shapes=[x, (1, 1, 4, 6)],
                        attrs={"mode": "like"}, ref=resize_ref, grad_inputs=(0,), id="like"))
    for attrs, cid in sizes[:4]:
        out = resize_ref(np.zeros(x), **attrs).shape

        def make(rng, dtype, out=out):
            return [rng.uniform(-1, 1, out).astype(dtype), rng.uniform(-1, 1, x).astype(dtype)]

        cases.append(OpCase("_backward_BilinearResize2D", make=make, attrs=attrs,
                            ref=resize_backward_ref, grad=False, id=cid))
    return cases


def _pool_cases():
    x = (2, 3, 5, 7)
    sizes = [((), "default"), (3, "3"), ((2, 4), "2x4"), ((5, 7), "same"), ((6, 9), "up")]
    cases = [OpCase("_contrib_AdaptiveAvgPooling2D", shapes=[x], attrs={"output_size": s},
                    ref=pool_ref, id=cid) for s, cid in sizes]
    for size, cid in sizes[1:3]:
        out = pool_ref(np.zeros(x), size).shape

        def make(rng, dtype, out=out):
            return [rng.uniform(-1, 1, out).astype(dtype), rng.uniform(-1, 1, x).astype(dtype)]

        cases.append(OpCase("_backward_AdaptiveAvgPooling2D", make=make,
                            attrs={"output_size": size}, ref=pool_backward_ref, grad=False,
                            id=cid))
    return cases


def _sync_bn_cases():
    cases = []
    for train in (True, False):
        for fix in (True, False):
            cases.append(OpCase("_contrib_SyncBatchNorm", make=_bn_inputs((4, 3, 2, 2)),
                                attrs={"fix_gamma": fix, "ndev": 1, "key": "bn0"},
                                ref=_bn_ref(train), is_train=train,
                                id=f"{'train' if train else 'predict'}-fix{fix}"))
    return cases


# -- AdamW ----------------------------------------------------------------------------------

def _adamw_math(w, g, m, v, scale, lr, eta, wd, beta1=0.9, beta2=0.999, epsilon=1e-8,
                clip_gradient=-1.0):
    """MXNet's step with its C-float attributes (float32 values, ``1 - beta`` in float32)."""
    f = np.float32
    lr, eta, wd, epsilon, clip_gradient, scale = map(f, (lr, eta, wd, epsilon, clip_gradient,
                                                        scale))
    beta1, beta2 = f(beta1), f(beta2)
    one_m1, one_m2 = f(1) - beta1, f(1) - beta2
    beta1, beta2, one_m1, one_m2 = map(float, (beta1, beta2, one_m1, one_m2))
    g = float(scale) * g
    if clip_gradient >= 0:
        g = np.clip(g, -float(clip_gradient), float(clip_gradient))
    m = beta1 * m + one_m1 * g
    v = beta2 * v + one_m2 * g * g
    return w - float(eta) * (float(lr) * m / (np.sqrt(v) + float(epsilon)) + float(wd) * w)


def _adamw_inputs(mp=False, scale=0.5):
    def make(rng, dtype):
        shape = (3, 4)
        w = rng.uniform(-1, 1, shape).astype(dtype)
        arrays = [w, rng.uniform(-1, 1, shape).astype(dtype),
                  rng.uniform(-0.1, 0.1, shape).astype(dtype),
                  rng.uniform(0.01, 0.1, shape).astype(dtype)]
        if mp:
            arrays.append(w.astype(np.float32))
        return arrays + [np.full((1,), scale, dtype)]
    return make


def adamw_ref(w, g, m, v, *rest, lr, eta, **attrs):
    scale = rest[-1].item()
    if not np.isfinite(scale) or scale == 0:
        return w
    master = rest[0] if len(rest) == 2 else w
    new = _adamw_math(master.astype(np.float64), g.astype(np.float64), m.astype(np.float64),
                      v.astype(np.float64), scale, lr, eta, **attrs)
    return new


def multi_adamw_ref(*arrays, lrs, wds, etas, num_weights, **attrs):
    per = (len(arrays) - 1) // num_weights
    scale = arrays[-1]
    return tuple(adamw_ref(*arrays[i * per:(i + 1) * per], scale, lr=lrs[i], eta=etas[i],
                           wd=wds[i], **attrs) for i in range(num_weights))


def _multi_inputs(num, mp=False):
    def make(rng, dtype):
        one = [_adamw_inputs(mp)(rng, dtype) for _ in range(num)]
        return [a for arrays in one for a in arrays[:-1]] + [one[0][-1]]
    return make


def _adamw_cases():
    attrs = {"lr": 0.01, "eta": 0.5, "wd": 0.1}
    cases = [OpCase("_contrib_adamw_update", make=_adamw_inputs(), attrs=attrs, ref=adamw_ref,
                    grad=False, id="plain"),
             OpCase("_contrib_adamw_update", make=_adamw_inputs(),
                    attrs={**attrs, "clip_gradient": 0.2}, ref=adamw_ref, grad=False,
                    id="clip"),
             OpCase("_contrib_adamw_update", make=_adamw_inputs(scale=float("inf")),
                    attrs=attrs, ref=adamw_ref, grad=False, id="skipped-inf"),
             OpCase("_contrib_adamw_update", make=_adamw_inputs(scale=0.0),
                    attrs=attrs, ref=adamw_ref, grad=False, id="skipped-zero"),
             OpCase("_contrib_mp_adamw_update", make=_adamw_inputs(mp=True), attrs=attrs,
                    ref=adamw_ref, grad=False, dtypes=("float16",), rtol=1e-3, atol=1e-3)]
    multi = {"lrs": (0.01, 0.02), "wds": (0.0, 0.1), "etas": (1.0, 0.5), "num_weights": 2}
    cases += [OpCase("_multi_adamw_update", make=_multi_inputs(2), attrs=multi,
                     ref=multi_adamw_ref, grad=False),
              OpCase("_multi_mp_adamw_update", make=_multi_inputs(2, mp=True), attrs=multi,
                     ref=multi_adamw_ref, grad=False, dtypes=("float16",), rtol=1e-3,
                     atol=1e-3)]
    return cases


def _special(rng, dtype):
    return [np.array([1.0, np.inf, -np.inf, np.nan, 0.0, -2.5], dtype=dtype)]


CASES = [
    *_sync_bn_cases(), *_resize_cases(), *_pool_cases(), *_adamw_cases(),
    OpCase("_contrib_arange_like", shapes=[(2, 3, 4)], ref=arange_like_ref, grad=False),
    OpCase("_contrib_arange_like", shapes=[(2, 3, 4)],
           attrs={"start": 0.1, "step": 0.3, "repeat": 2}, ref=arange_like_ref, grad=False,
           id="step-repeat"),
    OpCase("_contrib_arange_like", shapes=[(2, 3, 4)], attrs={"axis": -1},
           ref=arange_like_ref, grad=False, id="axis"),
    OpCase("_contrib_arange_like", shapes=[(2, 3)], attrs={"start": 1.0},
           ref=arange_like_ref, dtypes=("float64",), id="gradient-zero"),
    OpCase("multi_sum_sq", shapes=[(3,), (2, 2), (1,)], attrs={"num_arrays": 3},
           ref=lambda *xs, num_arrays: np.array([np.square(x.astype(np.float64)).sum()
                                                 for x in xs]).astype(np.float32),
           grad=False),
    *[OpCase(f"_contrib_{fn}", make=_special, grad=False, id="special",
             ref=lambda x, fn=fn: getattr(np, fn)(x).astype(x.dtype))
      for fn in ("isfinite", "isinf", "isnan")],
]
