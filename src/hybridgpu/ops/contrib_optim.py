"""MXNet's AdamW update ops (GluonNLP's ``BERTAdam`` calls them) and the numerics its
gradient clipping uses: ``contrib.adamw_update``, ``contrib.mp_adamw_update``,
``_multi_adamw_update``, ``_multi_mp_adamw_update``, ``multi_sum_sq`` and
``contrib.isfinite`` / ``isinf`` / ``isnan``.

The update ops follow MXNet 1.9.1: ``rescale_grad`` is an array input, and when it holds
NaN, an infinity or 0 the step is skipped (weights and moments unchanged); the moments (and
the float32 master weights of the ``mp_`` forms) are updated in place, the new weights are the
outputs (``out=weight`` writes them back). The single-weight form computes
``beta1 * m + (1 - beta1) * g``, the multi-weight forms ``beta1 * (m - g) + g``, each rounded
as MXNet's kernels round it.

Example:
    >>> import hybridgpu as mx
    >>> w, g = mx.nd.ones((2,)), mx.nd.full((2,), 0.5)
    >>> m, v = mx.nd.zeros((2,)), mx.nd.zeros((2,))
    >>> _ = mx.nd.contrib.adamw_update(w, g, m, v, mx.nd.ones((1,)), lr=0.1, eta=1.0, out=w)
    >>> [round(float(v), 4) for v in w.asnumpy()], [round(float(v), 4) for v in m.asnumpy()]
    ([0.6838, 0.6838], [0.05, 0.05])
"""

from __future__ import annotations

import numpy as np

from .attrs import Float, FloatTuple, Int
from .opdef import OpDef, register

__all__ = []

_ADAMW_ATTRS = {
    "lr": Float(doc="learning rate"),
    "beta1": Float(default=0.9, doc="decay rate of the first moment"),
    "beta2": Float(default=0.999, doc="decay rate of the second moment"),
    "epsilon": Float(default=1e-8, doc="added to the root of the second moment"),
    "wd": Float(default=0.0, doc="decoupled weight decay"),
    "eta": Float(doc="learning rate schedule multiplier"),
    "clip_gradient": Float(default=-1.0, doc="clip the rescaled gradient to +-this (>= 0)"),
}
_MULTI_ATTRS = {
    "lrs": FloatTuple(doc="learning rates, one per weight"),
    "beta1": Float(default=0.9), "beta2": Float(default=0.999), "epsilon": Float(default=1e-8),
    "wds": FloatTuple(doc="weight decays, one per weight"),
    "etas": FloatTuple(doc="schedule multipliers, one per weight"),
    "clip_gradient": Float(default=-1.0), "num_weights": Int(default=1),
}


def _scale(rescale_grad):
    """rescale_grad as a float32 number, or None when the step is to be skipped."""
    value = float(np.float32(rescale_grad.reshape(-1)[0].item()))
    return value if np.isfinite(value) and value != 0 else None


def _moments_step(xp, w, grad, mean, var, *, scale, lr, eta, wd, beta1, beta2, epsilon,
                  clip_gradient, multi):
    """One AdamW step in ``w``'s dtype; updates mean/var in place, returns the new weights.
    The attributes are C floats in MXNet: float32 values, whatever the weights' dtype."""
    def t(value):
        return w.dtype.type(np.float32(value))

    g = t(scale) * grad.astype(w.dtype, copy=False)
    if clip_gradient >= 0:
        g = xp.clip(g, t(-clip_gradient), t(clip_gradient))
    if multi:
        mean[...] = t(beta1) * (mean - g) + g
        var[...] = t(beta2) * (var - g * g) + g * g
    else:
        mean[...] = t(beta1) * mean + t(np.float32(1.0) - np.float32(beta1)) * g
        var[...] = t(beta2) * var + t(np.float32(1.0) - np.float32(beta2)) * (g * g)
    return w - t(eta) * (t(lr) * mean / (xp.sqrt(var) + t(epsilon)) + t(wd) * w)


def _adamw_compute(xp, weight, grad, mean, var, rescale_grad, **attrs):
    scale = _scale(rescale_grad)
    if scale is None:
        return weight.copy()
    return _moments_step(xp, weight, grad, mean, var, scale=scale, multi=False, **attrs)


def _mp_adamw_compute(xp, weight, grad, mean, var, weight32, rescale_grad, **attrs):
    scale = _scale(rescale_grad)
    if scale is None:
        return weight.copy()
    weight32[...] = _moments_step(xp, weight32, grad, mean, var, scale=scale, multi=False,
                                  **attrs)
    return weight32.astype(weight.dtype)


def _shape_of_weight(attrs, in_shapes):
    return in_shapes, [in_shapes[0]]


def _type_of_weight(attrs, in_types):
    return in_types, [in_types[0]]


for _name, _inputs, _compute, _what in (
        ("_contrib_adamw_update", ("weight", "grad", "mean", "var", "rescale_grad"),
         _adamw_compute, "weights"),
        ("_contrib_mp_adamw_update",
         ("weight", "grad", "mean", "var", "weight32", "rescale_grad"), _mp_adamw_compute,
         "low-precision weights with a float32 master copy (weight32, updated in place)")):
    register(OpDef(
        _name, inputs=_inputs, attrs=_ADAMW_ATTRS, compute=_compute,
        infer_shape=_shape_of_weight, infer_type=_type_of_weight, host_sync=True, views=False,
        doc=f"One AdamW step of {_what}: mean and var updated in place, the new weights "
            "returned; skipped when rescale_grad is NaN, infinite or 0.",
        example=f"nd.contrib.{_name[9:]}(w, g, m, v, {'w32, ' if 'mp' in _name else ''}"
                "nd.ones(1), lr=1e-3, eta=1.0, out=w)"))


def _multi_compute(per_weight):
    def compute(xp, *arrays, lrs, wds, etas, num_weights, beta1, beta2, epsilon,
                clip_gradient, num_args=None):
        scale = _scale(arrays[-1])
        groups = [arrays[i * per_weight:(i + 1) * per_weight] for i in range(num_weights)]
        if scale is None:
            return tuple(group[0].copy() for group in groups)
        out = []
        for i, group in enumerate(groups):
            master = group[4] if per_weight == 5 else group[0]
            new = _moments_step(xp, master, group[1], group[2], group[3], scale=scale,
                                lr=lrs[i], eta=etas[i], wd=wds[i], beta1=beta1, beta2=beta2,
                                epsilon=epsilon, clip_gradient=clip_gradient, multi=True)
            if per_weight == 5:
                master[...] = new
            out.append(new.astype(group[0].dtype, copy=False))
        return tuple(out)
    return compute


def _multi_shape(per_weight):
    def infer(attrs, in_shapes):
        return in_shapes, [in_shapes[i * per_weight] for i in range(attrs["num_weights"])]
    return infer


def _multi_type(per_weight):
    def infer(attrs, in_types):
        return in_types, [in_types[i * per_weight] for i in range(attrs["num_weights"])]
    return infer


for _name, _per in (("_multi_adamw_update", 4), ("_multi_mp_adamw_update", 5)):
    register(OpDef(
        _name, variadic=True, attrs=_MULTI_ATTRS, compute=_multi_compute(_per),
        infer_shape=_multi_shape(_per), infer_type=_multi_type(_per), host_sync=True,
        num_outputs=lambda a: a["num_weights"], views=False,
        doc="AdamW steps of num_weights weights at once; inputs are (weight, grad, mean, var"
            + (", weight32" if _per == 5 else "") + ") per weight, then rescale_grad.",
        example="nd.contrib.multi_adamw_update([w], [g], [m], [v], nd.ones(1), lrs=[1e-3], "
                "wds=[0.0], etas=[1.0], out=[w])"))


# -- numerics of gradient clipping -----------------------------------------------------------

def _multi_sum_sq_compute(xp, *arrays, num_arrays, num_args=None):
    sums = [xp.square(a).sum() for a in arrays]
    return xp.stack(sums).astype(np.float32) if sums else xp.zeros((0,), np.float32)


register(OpDef(
    "multi_sum_sq", variadic=True, attrs={"num_arrays": Int(doc="number of arrays")},
    compute=_multi_sum_sq_compute,
    infer_shape=lambda a, s: (s, [(a["num_arrays"],)]),
    infer_type=lambda a, t: (t, ["float32"]), views=False,
    doc="The sum of squares of each input array, as one float32 vector.",
    example="nd.multi_sum_sq(a, b, num_arrays=2)  # [sum(a*a), sum(b*b)]"))


def _test_compute(fn):
    def compute(xp, data):
        return getattr(xp, fn)(data).astype(data.dtype)
    return compute


for _fn in ("isfinite", "isinf", "isnan"):
    register(OpDef(
        f"_contrib_{_fn}", compute=_test_compute(_fn),
        infer_shape=lambda a, s: (s, [s[0]]), infer_type=lambda a, t: (t, [t[0]]),
        views=False, differentiable=False,
        doc=f"1 where numpy.{_fn} holds, else 0, in the input's dtype.",
        example=f"nd.contrib.{_fn}(nd.array([1, float('inf')]))"))
