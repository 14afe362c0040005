"""Cases for ``ops/norm.py``: BatchNorm in train and predict mode (fix_gamma, use_global_stats,
axis), its hidden backward op, LayerNorm, InstanceNorm, GroupNorm and L2Normalization.

The references are written here in NumPy from the formulas checked against MXNet 1.9.1 (biased
batch variance, BatchNorm's third output is the inverse std, LayerNorm/GroupNorm output the std).
Cases with ``output_mean_var`` skip the finite-difference check: like MXNet, no gradient flows
back through the mean/std outputs, so the extra head gradients the harness draws are ignored.
"""

from __future__ import annotations

import numpy as np

from op_harness import OpCase


def _vec_shape(ndim, axis, size):
    return tuple(size if i == axis else 1 for i in range(ndim))


# -- BatchNorm ------------------------------------------------------------------------------

def _bn_inputs(shape, axis=1):
    """data, gamma, beta, moving_mean, moving_var (positive)."""
    channels = shape[axis]

    def make(rng, dtype):
        return [rng.uniform(-2, 2, shape).astype(dtype),
                rng.uniform(0.5, 1.5, channels).astype(dtype),
                rng.uniform(-1, 1, channels).astype(dtype),
                rng.uniform(-1, 1, channels).astype(dtype),
                rng.uniform(0.5, 1.5, channels).astype(dtype)]

    return make


def _bn_ref(train):
    def ref(x, gamma, beta, moving_mean, moving_var, eps=1e-3, fix_gamma=True,
            use_global_stats=False, axis=1, output_mean_var=False, **_):
        ax = axis % x.ndim
        red = tuple(i for i in range(x.ndim) if i != ax)
        vec = _vec_shape(x.ndim, ax, x.shape[ax])
        if train and not use_global_stats:
            mean, var = x.mean(axis=red), x.var(axis=red)
        else:
            mean, var = moving_mean, moving_var
        invstd = 1.0 / np.sqrt(var + eps)
        scale = invstd if fix_gamma else gamma * invstd
        out = (x - mean.reshape(vec)) * scale.reshape(vec) + beta.reshape(vec)
        return (out, mean, invstd) if output_mean_var else out

    return ref


def _bn_cases():
    cases = []
    for train in (True, False):
        mode = "train" if train else "predict"
        for fix in (True, False):
            cases.append(OpCase("BatchNorm", make=_bn_inputs((4, 3, 2, 2)),
                                attrs={"fix_gamma": fix}, ref=_bn_ref(train), is_train=train,
                                id=f"{mode}-fix{fix}"))
        cases.append(OpCase("BatchNorm", make=_bn_inputs((5, 3, 4), axis=-1),
                            attrs={"fix_gamma": False, "axis": -1, "eps": 1e-4},
                            ref=_bn_ref(train), is_train=train, id=f"{mode}-axis-1"))
        cases.append(OpCase("BatchNorm", make=_bn_inputs((6, 4)),
                            attrs={"fix_gamma": False, "momentum": 0.7}, ref=_bn_ref(train),
                            is_train=train, id=f"{mode}-2d"))
        cases.append(OpCase("BatchNorm", make=_bn_inputs((3, 2, 4)),
                            attrs={"fix_gamma": False, "output_mean_var": True},
                            ref=_bn_ref(train), is_train=train, grad=False,
                            id=f"{mode}-mean-var"))
    cases.append(OpCase("BatchNorm", make=_bn_inputs((4, 3, 2)),
                        attrs={"fix_gamma": False, "use_global_stats": True},
                        ref=_bn_ref(True), is_train=True, id="train-global-stats"))
    cases.append(OpCase("BatchNorm", make=_bn_inputs((2, 3, 2, 2), axis=2),
                        attrs={"fix_gamma": False, "axis": 2}, ref=_bn_ref(True), is_train=True,
                        id="train-axis2"))
    return cases


def _bn_backward_inputs(shape, axis=1):
    channels = shape[axis]

    def make(rng, dtype):
        return [rng.standard_normal(shape).astype(dtype),
                rng.uniform(-2, 2, shape).astype(dtype),
                rng.uniform(0.5, 1.5, channels).astype(dtype),
                rng.uniform(-1, 1, channels).astype(dtype),
                rng.uniform(0.5, 1.5, channels).astype(dtype)]

    return make


def _bn_backward_ref(train):
    """The textbook batch-norm backward, from the saved mean and inverse std."""

    def ref(g, x, gamma, mean, invstd, fix_gamma=True, use_global_stats=False, axis=1, **_):
        ax = axis % x.ndim
        red = tuple(i for i in range(x.ndim) if i != ax)
        vec = _vec_shape(x.ndim, ax, x.shape[ax])
        xhat = (x - mean.reshape(vec)) * invstd.reshape(vec)
        dbeta = g.sum(axis=red)
        dgamma = (g * xhat).sum(axis=red)
        scale = (invstd if fix_gamma else gamma * invstd).reshape(vec)
        if train and not use_global_stats:
            dx = scale * (g - g.mean(axis=red).reshape(vec)
                          - xhat * (g * xhat).mean(axis=red).reshape(vec))
        else:
            dx = scale * g
        return dx, (np.zeros_like(dgamma) if fix_gamma else dgamma), dbeta

    return ref


def _bn_backward_cases():
    cases = []
    for train in (True, False):
        for fix in (True, False):
            cases.append(OpCase("_backward_BatchNorm", make=_bn_backward_inputs((4, 3, 2)),
                                attrs={"fix_gamma": fix}, ref=_bn_backward_ref(train),
                                is_train=train, id=f"{'train' if train else 'predict'}-fix{fix}"))
    cases.append(OpCase("_backward_BatchNorm", make=_bn_backward_inputs((3, 2, 4), axis=2),
                        attrs={"fix_gamma": False, "axis": -1, "use_global_stats": True},
                        ref=_bn_backward_ref(True), is_train=True, id="global-stats-axis-1"))
    return cases


# -- LayerNorm, InstanceNorm, GroupNorm -----------------------------------------------------

def _affine_inputs(shape, size):
    def make(rng, dtype):
        return [rng.uniform(-2, 2, shape).astype(dtype),
                rng.uniform(0.5, 1.5, size).astype(dtype),
                rng.uniform(-1, 1, size).astype(dtype)]

    return make


def _ln_ref(x, gamma, beta, axis=-1, eps=1e-5, output_mean_var=False):
    ax = axis % x.ndim
    vec = _vec_shape(x.ndim, ax, x.shape[ax])
    mean = x.mean(axis=ax, keepdims=True)
    std = np.sqrt(x.var(axis=ax, keepdims=True) + eps)
    out = (x - mean) / std * gamma.reshape(vec) + beta.reshape(vec)
    return (out, mean, std) if output_mean_var else out


def _in_ref(x, gamma, beta, eps=1e-3):
    axes = tuple(range(2, x.ndim))
    vec = _vec_shape(x.ndim, 1, x.shape[1])
    mean = x.mean(axis=axes, keepdims=True)
    out = (x - mean) / np.sqrt(x.var(axis=axes, keepdims=True) + eps)
    return out * gamma.reshape(vec) + beta.reshape(vec)


def _gn_ref(x, gamma, beta, num_groups=1, eps=1e-5, output_mean_var=False):
    n = x.shape[0]
    grouped = x.reshape(n, num_groups, -1)
    mean = grouped.mean(axis=2, keepdims=True)
    std = np.sqrt(grouped.var(axis=2, keepdims=True) + eps)
    out = (grouped - mean) / std * gamma.reshape(1, -1, 1) + beta.reshape(1, -1, 1)
    out = out.reshape(x.shape)
    return (out, mean.reshape(n, -1), std.reshape(n, -1)) if output_mean_var else out


def _other_norm_cases():
    return [
        OpCase("LayerNorm", make=_affine_inputs((3, 4, 5), 5), ref=_ln_ref, id="last"),
        OpCase("LayerNorm", make=_affine_inputs((3, 4, 5), 4), attrs={"axis": 1}, ref=_ln_ref,
               id="axis1"),
        OpCase("LayerNorm", make=_affine_inputs((4, 6), 6), attrs={"eps": 1e-3}, ref=_ln_ref,
               id="2d"),
        OpCase("LayerNorm", make=_affine_inputs((2, 3, 4), 3),
               attrs={"axis": -2, "output_mean_var": True}, ref=_ln_ref, grad=False,
               id="mean-std"),
        OpCase("InstanceNorm", make=_affine_inputs((2, 3, 4), 3), ref=_in_ref, id="3d"),
        OpCase("InstanceNorm", make=_affine_inputs((2, 3, 2, 3), 3), attrs={"eps": 1e-5},
               ref=_in_ref, id="4d"),
        OpCase("GroupNorm", make=_affine_inputs((2, 6, 3), 2), attrs={"num_groups": 2},
               ref=_gn_ref, id="2groups"),
        OpCase("GroupNorm", make=_affine_inputs((2, 4, 2, 2), 4),
               attrs={"num_groups": 4, "eps": 1e-3}, ref=_gn_ref, id="4groups-4d"),
        OpCase("GroupNorm", make=_affine_inputs((3, 2, 5), 1), ref=_gn_ref, id="1group"),
        OpCase("GroupNorm", make=_affine_inputs((2, 6, 2), 3),
               attrs={"num_groups": 3, "output_mean_var": True}, ref=_gn_ref, grad=False,
               id="mean-std"),
    ]


# -- L2Normalization ------------------------------------------------------------------------

def _l2_ref(x, eps=1e-10, mode="instance"):
    axes = {"instance": tuple(range(1, x.ndim)), "channel": (1,),
            "spatial": tuple(range(2, x.ndim))}[mode]
    return x / np.sqrt((x * x).sum(axis=axes, keepdims=True) + eps)


def _l2_cases():
    return [
        OpCase("L2Normalization", shapes=[(2, 3, 4)], ref=_l2_ref, id="instance"),
        OpCase("L2Normalization", shapes=[(3, 4)], attrs={"eps": 1e-3}, ref=_l2_ref,
               id="instance-2d"),
        OpCase("L2Normalization", shapes=[(5,)], attrs={"eps": 0.5}, ref=_l2_ref,
               id="instance-1d"),
        OpCase("L2Normalization", shapes=[(2, 3, 2, 2)], attrs={"mode": "channel"},
               ref=_l2_ref, id="channel"),
        OpCase("L2Normalization", shapes=[(2, 3, 2, 2)], attrs={"mode": "spatial", "eps": 1e-4},
               ref=_l2_ref, id="spatial"),
    ]


CASES = _bn_cases() + _bn_backward_cases() + _other_norm_cases() + _l2_cases()
