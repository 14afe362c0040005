"""Cases for ``ops/pool.py``: Pooling (max/avg/sum/lp, 1-D/2-D/3-D, pad, 'full', global) and
``_backward_Pooling``.

The reference visits every output position and reduces its window of the input directly,
clipping the window to the input (and, for avg's divisor, to ``[-pad, size + pad)`` or to the
valid elements): the definitions, with no padded array. The backward reference routes each
output's gradient through the same windows (max: to the window's first maximum).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from op_harness import OpCase


def _setup(x, kernel=(), stride=(), pad=(), global_pool=False, pooling_convention="valid",
           **_):
    sp = x.shape[2:]
    if global_pool:
        return sp, (1,) * len(sp), (0,) * len(sp), (1,) * len(sp)
    nd = len(kernel)
    stride = tuple(stride) or (1,) * nd
    pad = tuple(pad) or (0,) * nd
    rnd = math.ceil if pooling_convention == "full" else math.floor
    out = tuple(int(rnd((sp[i] + 2 * pad[i] - kernel[i]) / stride[i])) + 1 for i in range(nd))
    return tuple(kernel), stride, pad, out


def _windows(x, attrs):
    """Yield ``(out index, tuple of slices into x, divisor with pad, divisor without)``."""
    kernel, stride, pad, out = _setup(x, **attrs)
    sp = x.shape[2:]
    for o in itertools.product(*(range(m) for m in out)):
        starts = [o[i] * stride[i] - pad[i] for i in range(len(o))]
        ends = [starts[i] + kernel[i] for i in range(len(o))]
        region = tuple(slice(max(s, 0), min(e, n)) for s, e, n in zip(starts, ends, sp))
        with_pad = math.prod(min(e, n + p) - s for s, e, n, p in zip(starts, ends, sp, pad))
        valid = math.prod(r.stop - r.start for r in region)
        yield o, region, with_pad, valid


def pool_ref(x, *, pool_type="max", p_value=None, count_include_pad=None, **attrs):
    """Reduce every window of ``x`` directly (float64)."""
    kernel, stride, pad, out = _setup(x, **attrs)
    y = np.zeros(x.shape[:2] + out, dtype=np.float64)
    for o, region, with_pad, valid in _windows(x, attrs):
        win = x[(slice(None), slice(None), *region)].astype(np.float64)
        win = win.reshape(*x.shape[:2], -1)
        if pool_type == "max":
            v = win.max(axis=2)
        elif pool_type == "sum":
            v = win.sum(axis=2)
        elif pool_type == "avg":
            v = win.sum(axis=2) / (valid if count_include_pad is False else with_pad)
        else:
            v = np.cbrt((win ** 3).sum(axis=2)) if p_value == 3 else (
                (win ** p_value).sum(axis=2) ** (1.0 / p_value))
        y[(slice(None), slice(None), *o)] = v
    return y.astype(x.dtype)


def pool_backward_ref(x, y, g, *, pool_type="max", p_value=None, count_include_pad=None,
                      **attrs):
    """Route every output's gradient back through its window (float64)."""
    dx = np.zeros(x.shape, dtype=np.float64)
    n, c = x.shape[:2]
    for o, region, with_pad, valid in _windows(x, attrs):
        at = (slice(None), slice(None), *o)
        win = x[(slice(None), slice(None), *region)].astype(np.float64)
        go = g[at].astype(np.float64)[..., None]
        flat = win.reshape(n, c, -1)
        if pool_type == "max":
            contrib = np.zeros_like(flat)
            first = flat.argmax(axis=2)
            np.put_along_axis(contrib, first[..., None], go, axis=2)
        elif pool_type == "sum":
            contrib = np.broadcast_to(go, flat.shape)
        elif pool_type == "avg":
            contrib = np.broadcast_to(go / (valid if count_include_pad is False else with_pad),
                                      flat.shape)
        else:
            contrib = go * (flat / y[at][..., None]) ** (p_value - 1)
        dx[(slice(None), slice(None), *region)] += contrib.reshape(win.shape)
    return dx.astype(x.dtype)


def _pool(shape, cid, **attrs):
    return OpCase("Pooling", shapes=[shape], attrs=attrs, ref=pool_ref, id=cid)


def _backward(shape, cid, grad=False, **attrs):
    """``_backward_Pooling`` on (data, Pooling(data) from the reference, out_grad)."""
    def make(rng, dtype):
        x = rng.uniform(-1, 1, shape).astype(dtype)
        y = pool_ref(x, **attrs)
        return [x, y, rng.uniform(-1, 1, y.shape).astype(dtype)]

    return OpCase("_backward_Pooling", make=make, attrs=attrs, ref=pool_backward_ref, id=cid,
                  grad=grad)


def _positive(shape):
    return lambda rng, dtype: [rng.uniform(0.2, 1.5, shape).astype(dtype)]


CASES = [
    _pool((2, 2, 5, 5), "max-2d", kernel=(3, 3)),
    _pool((2, 2, 6, 7), "max-stride-pad", kernel=(3, 2), stride=(2, 2), pad=(1, 1)),
    _pool((2, 2, 6, 6), "max-full", kernel=(3, 3), stride=(2, 2), pooling_convention="full"),
    _pool((2, 2, 7, 6), "avg-pad", kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg"),
    _pool((2, 2, 7, 6), "avg-pad-exclude", kernel=(3, 3), stride=(2, 2), pad=(1, 1),
          pool_type="avg", count_include_pad=False),
    _pool((2, 2, 6, 6), "avg-full-pad", kernel=(3, 3), stride=(2, 2), pad=(1, 1),
          pool_type="avg", pooling_convention="full"),
    _pool((2, 2, 6, 5), "sum-full", kernel=(2, 3), stride=(2, 2), pool_type="sum",
          pooling_convention="full"),
    _pool((2, 3, 8), "max-1d", kernel=(3,), stride=(2,), pad=(1,)),
    _pool((2, 3, 8), "avg-1d-full", kernel=(3,), stride=(3,), pool_type="avg",
          pooling_convention="full"),
    _pool((1, 2, 4, 5, 4), "max-3d", kernel=(2, 2, 2), stride=(2, 1, 2), pad=(1, 0, 0)),
    _pool((1, 2, 4, 4, 5), "avg-3d", kernel=(2, 3, 2), stride=(1, 2, 2), pool_type="avg"),
    _pool((2, 3, 4, 5), "global-max", global_pool=True),
    _pool((2, 3, 4, 5), "global-avg", global_pool=True, pool_type="avg", kernel=(2, 2)),
    _pool((2, 3, 6), "global-sum-1d", global_pool=True, pool_type="sum"),
    _pool((2, 2, 4, 4), "lp2", kernel=(2, 2), stride=(2, 2), pool_type="lp", p_value=2),
    _pool((2, 2, 5, 5), "lp1-full", kernel=(3, 3), stride=(2, 2), pool_type="lp", p_value=1,
          pooling_convention="full"),
    OpCase("Pooling", make=_positive((2, 2, 4, 4)), ref=pool_ref, id="lp3",
           attrs={"kernel": (2, 2), "pool_type": "lp", "p_value": 3}),
    OpCase("Pooling", make=_positive((1, 2, 3, 4)), ref=pool_ref, id="global-lp2",
           attrs={"global_pool": True, "pool_type": "lp", "p_value": 2}),
    _backward((2, 2, 6, 6), "max-full", kernel=(3, 3), stride=(2, 2), pad=(1, 1),
              pooling_convention="full"),
    _backward((2, 2, 5, 6), "avg", grad=True, kernel=(3, 2), stride=(2, 2), pad=(1, 1),
              pool_type="avg"),
    _backward((2, 2, 7), "sum-1d", grad=True, kernel=(3,), stride=(2,), pool_type="sum"),
    _backward((2, 3, 3, 4), "global-max", global_pool=True),
    _backward((2, 2, 4, 4), "lp2", kernel=(2, 2), pool_type="lp", p_value=2),
]
