"""The basic layer ops: ``FullyConnected``, ``Activation`` and ``LeakyReLU``, with shape inference
that fills parameter shapes from the data shape (Gluon's deferred init) and gradients as ops.

CUDA expressions: ``Activation`` and ``LeakyReLU`` compute a different function per
``act_type``, so their ``cuda`` is a dict ``{act_type: C expression over in0}`` (``slope`` is
the attribute) with ``cuda_key="act_type"``; a fuser asks ``op.cuda_for(attrs)``.
``Activation`` is ``elementwise``. ``LeakyReLU`` is not: it has no ``prelu``/``rrelu`` entry
(prelu broadcasts ``gamma`` along axis 1, not NumPy-style), so a fuser must leave it alone.

``LeakyReLU`` is ``mode_dependent`` for the sake of ``rrelu``: outside training it is a leaky
ReLU with slope ``(lower_bound + upper_bound) / 2`` (as MXNet); in training it raises, since
MXNet's random per-element slopes are not implemented.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> fc = ops.get("FullyConnected")
    >>> fc.infer_shape(fc.parse_attrs({"num_hidden": 4}), [(2, 3, 5), None, None])
    ([(2, 3, 5), (4, 15), (4,)], [(2, 4)])
    >>> act = ops.get("Activation")
    >>> act.compute(np, np.array([-1.0, 2.0]), act_type="relu")
    array([0., 2.])
    >>> act.cuda["tanh"]
    'tanh(in0)'
"""

from __future__ import annotations

import math

from ..base import MXNetError
from .attrs import Bool, Enum, Float, Int
from .opdef import OpDef, get, register
from .rules import check_float, same_shape

__all__ = []




# -- FullyConnected ---------------------------------------------------------------------------

def _fc_in_units(shape, flatten):
    """Input features of ``data``: the product of all but axis 0, or the last axis; 0 when
    unknown."""
    if flatten:
        return math.prod(shape[1:]) if all(shape[1:]) else 0
    return shape[-1]


def _fc_check(x, w, b, num_hidden, flatten):
    check_float("FullyConnected", x, w)
    dtypes = [a.dtype for a in (x, w, b) if a is not None]
    if any(d != dtypes[0] for d in dtypes):
        raise MXNetError(f"FullyConnected: inputs have different dtypes "
                         f"{[str(d) for d in dtypes]}; cast them to one dtype first")
    if x.ndim == 0:
        raise MXNetError("FullyConnected: data must have at least 1 dim, got a scalar")
    want = (num_hidden, _fc_in_units(x.shape, flatten))
    if tuple(w.shape) != want:
        raise MXNetError(f"FullyConnected: weight shape {tuple(w.shape)} does not match data "
                         f"shape {x.shape} with num_hidden={num_hidden}, flatten={flatten}: "
                         f"expected {want}")
    if b is not None and tuple(b.shape) != (num_hidden,):
        raise MXNetError(f"FullyConnected: bias shape {tuple(b.shape)} does not match "
                         f"num_hidden={num_hidden}: expected ({num_hidden},)")


def _fc_compute(xp, x, w, b=None, num_hidden=None, no_bias=False, flatten=True):
    _fc_check(x, w, b, num_hidden, flatten)
    lead = x.shape[:1] if flatten else x.shape[:-1]
    y = xp.matmul(x.reshape(math.prod(lead), w.shape[1]), w.T)  # one 2-D product
    if b is not None:
        y += b
    return y.reshape(*lead, num_hidden)


def _fc_shape(attrs, in_shapes):
    data, weight = in_shapes[0], in_shapes[1]
    bias = in_shapes[2] if len(in_shapes) > 2 else None
    hidden, flatten = attrs["num_hidden"], attrs["flatten"]
    if hidden < 1:
        raise MXNetError(f"FullyConnected: num_hidden must be positive, got {hidden}")
    if data is not None and len(data) == 0:
        raise MXNetError("FullyConnected: data must have at least 1 dim, got shape ()")
    want = (hidden, _fc_in_units(data, flatten) if data is not None else 0)
    if weight is not None and (len(weight) != 2 or any(
            a and b and a != b for a, b in zip(want, weight))):
        raise MXNetError(f"FullyConnected: weight shape {weight} does not match data shape "
                         f"{data} with num_hidden={hidden}, flatten={flatten}: expected "
                         f"{want} (0 = unknown)")
    weight = (hidden, want[1] or (weight[1] if weight is not None else 0))
    ins = [data, weight]
    if len(in_shapes) > 2:
        if bias is not None and bias not in ((hidden,), (0,)):
            raise MXNetError(f"FullyConnected: bias shape {bias} does not match "
                             f"num_hidden={hidden}: expected ({hidden},)")
        ins.append((hidden,))
    if data is None:
        return ins, [None]
    if weight[1] and (len(data) == 2 or not flatten) and not data[-1]:
        ins[0] = data = (*data[:-1], weight[1])  # the features axis, from the weight
    out = (data[0], hidden) if flatten else (*data[:-1], hidden)
    return ins, [out]


def _fc_grad(F, ins, outs, gouts, num_hidden, no_bias=False, flatten=True):
    x, w = ins[0], ins[1]
    g = gouts[0]
    x2 = x if len(x.shape) == 2 else F.reshape(
        x, shape=(x.shape[0], -1) if flatten else (-1, x.shape[-1]))
    g2 = g if len(g.shape) == 2 else F.reshape(g, shape=(-1, num_hidden))
    dx = F.dot(g2, w)
    if len(x.shape) != 2:
        dx = F.reshape(dx, shape=x.shape)
    grads = [dx, F.dot(g2, x2, transpose_a=True)]
    if len(ins) > 2:
        grads.append(F.sum(g2, axis=0))
    return grads


register(OpDef(
    "FullyConnected", inputs=("data", "weight", "bias"),
    input_filter=lambda a: ("data", "weight") if a["no_bias"] else ("data", "weight", "bias"),
    attrs={"num_hidden": Int(doc="number of output features"),
           "no_bias": Bool(default=False, doc="leave out the bias input"),
           "flatten": Bool(default=True, doc="collapse all axes but the first of data; "
                                             "False applies the layer to the last axis")},
    compute=_fc_compute, infer_shape=_fc_shape, grad=_fc_grad,
    doc="Fully connected layer: data @ weight.T + bias, weight (num_hidden, in_units).",
    example="nd.FullyConnected(nd.ones((2, 5)), nd.ones((4, 5)), nd.zeros(4), "
            "num_hidden=4).shape  # (2, 4)"))


# -- Activation -------------------------------------------------------------------------------

def _sigmoid(xp, x):
    return xp.exp(-xp.logaddexp(x.dtype.type(0), -x))  # no overflow for large |x|


_ACTIVATIONS = {
    "relu": lambda xp, x: xp.maximum(x, x.dtype.type(0)),
    "sigmoid": _sigmoid,
    "tanh": lambda xp, x: xp.tanh(x),
    "softrelu": lambda xp, x: xp.logaddexp(x, x.dtype.type(0)),  # log(1 + exp(x))
    "softsign": lambda xp, x: x / (xp.abs(x) + x.dtype.type(1)),
}
_ACTIVATION_CUDA = {
    "relu": "(in0 > (T)0 ? in0 : (T)0)",
    "sigmoid": "((T)1 / ((T)1 + exp(-in0)))",
    "tanh": "tanh(in0)",
    "softrelu": "(in0 > (T)20 ? in0 : log1p(exp(in0)))",
    "softsign": "(in0 / ((T)1 + abs(in0)))",
}


def _activation_compute(xp, x, act_type):
    check_float("Activation", x)
    return _ACTIVATIONS[act_type](xp, x)


def _activation_grad(F, ins, outs, gouts, act_type):
    (x,), y, g = ins, outs[0], gouts[0]
    if act_type == "relu":
        factor = F._greater_scalar(y, scalar=0)
    elif act_type == "sigmoid":
        factor = F.broadcast_mul(y, F._rminus_scalar(y, scalar=1))
    elif act_type == "tanh":
        factor = F._rminus_scalar(F.broadcast_mul(y, y), scalar=1)
    elif act_type == "softrelu":
        factor = F.Activation(x, act_type="sigmoid")
    else:  # softsign: 1 / (1 + |x|)^2
        denom = F._plus_scalar(F.abs(x), scalar=1)
        return [F.broadcast_div(g, F.broadcast_mul(denom, denom))]
    return [F.broadcast_mul(g, factor)]


register(OpDef(
    "Activation", inputs=("data",),
    attrs={"act_type": Enum(tuple(sorted(_ACTIVATIONS)), doc="the activation function")},
    compute=_activation_compute, infer_shape=same_shape, grad=_activation_grad,
    cuda=dict(_ACTIVATION_CUDA), cuda_key="act_type", elementwise=True,
    doc="Elementwise activation: relu max(x, 0), sigmoid 1/(1+exp(-x)), tanh, softrelu "
        "log(1+exp(x)), softsign x/(1+|x|). ``cuda`` is a dict keyed by act_type.",
    example="nd.Activation(nd.array([-1, 2]), act_type='relu')  # [0, 2]"))


# -- LeakyReLU --------------------------------------------------------------------------------

_SELU_LAMBDA = 1.0507009873554804934193349852946
_SELU_ALPHA = 1.6732632423543772848170429916717
_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)

_LEAKY_CUDA = {
    "leaky": "(in0 > (T)0 ? in0 : (T)slope * in0)",
    "elu": "(in0 > (T)0 ? in0 : (T)slope * expm1(in0))",
    "selu": f"((T){_SELU_LAMBDA!r} * (in0 > (T)0 ? in0 : (T){_SELU_ALPHA!r} * expm1(in0)))",
    "gelu": f"((T)0.5 * in0 * ((T)1 + erf(in0 * (T){_SQRT_HALF!r})))",
}


def _gamma_view(gamma, ndim):
    """``gamma`` (C,) or (1,) shaped to broadcast along axis 1 of an ``ndim``-dim array."""
    if ndim < 2:
        return gamma
    return gamma.reshape((1, -1) + (1,) * (ndim - 2))


def _check_gamma(x_shape, g_shape):
    channels = x_shape[1] if len(x_shape) > 1 else x_shape[0]
    if len(g_shape) != 1 or g_shape[0] not in (1, channels):
        raise MXNetError(f"LeakyReLU: gamma shape {tuple(g_shape)} cannot broadcast along the "
                         f"channel axis of data shape {tuple(x_shape)}: expected ({channels},) "
                         "or (1,)")


def _rrelu_training():
    raise MXNetError("LeakyReLU: act_type='rrelu' is supported outside training only (random "
                     "slopes in train mode are not implemented); use act_type='leaky' with a "
                     "fixed slope to train")


def _leaky_compute(xp, x, gamma=None, act_type="leaky", slope=0.25, lower_bound=0.125,
                   upper_bound=0.334, is_train=False):
    check_float("LeakyReLU", x)
    t = x.dtype.type
    if act_type == "rrelu":  # outside training: the mean slope, as MXNet
        if is_train:
            _rrelu_training()
        act_type, slope = "leaky", (lower_bound + upper_bound) / 2
    if act_type == "leaky":
        return xp.where(x > 0, x, x * t(slope))
    if act_type == "prelu":
        _check_gamma(x.shape, gamma.shape)
        return xp.where(x > 0, x, x * _gamma_view(gamma, x.ndim))
    if act_type == "elu":
        return xp.where(x > 0, x, xp.expm1(xp.minimum(x, t(0))) * t(slope))
    if act_type == "selu":
        neg = xp.expm1(xp.minimum(x, t(0))) * t(_SELU_ALPHA)
        return xp.where(x > 0, x, neg) * t(_SELU_LAMBDA)
    return _gelu(xp, x)


def _gelu(xp, x):
    """x * Phi(x) with the exact normal CDF (MXNet uses erf, not the tanh approximation);
    erf is the registry's ``erf`` op (NumPy has none)."""
    t = x.dtype.type
    erf = get("erf").compute
    return t(0.5) * x * (t(1) + erf(xp, x * t(_SQRT_HALF)))


def _leaky_shape(attrs, in_shapes):
    if attrs["act_type"] != "prelu":
        return same_shape(attrs, in_shapes)
    data, gamma = in_shapes
    if data is None:
        return [None, gamma], [None]
    channels = data[1] if len(data) > 1 else data[0]
    if gamma is None or (len(gamma) == 1 and gamma[0] == 0):
        gamma = (channels,)
    elif channels:
        _check_gamma(data, gamma)
    return [data, gamma], [data]


def _leaky_grad(F, ins, outs, gouts, act_type="leaky", slope=0.25, lower_bound=0.125,
                upper_bound=0.334):
    x, y, g = ins[0], outs[0], gouts[0]
    positive = F._greater_scalar(x, scalar=0)
    if act_type == "rrelu":  # only computed outside training: a leaky with the mean slope
        act_type, slope = "leaky", (lower_bound + upper_bound) / 2
    if act_type == "leaky":
        factor = F._plus_scalar(F._mul_scalar(positive, scalar=1 - slope), scalar=slope)
    elif act_type in ("elu", "selu"):  # y' = y + c below 0 (c = slope, or lambda * alpha)
        scale = 1.0 if act_type == "elu" else _SELU_LAMBDA
        below = F._plus_scalar(y, scalar=slope if act_type == "elu" else scale * _SELU_ALPHA)
        factor = F.broadcast_add(below, F.broadcast_mul(
            positive, F._rminus_scalar(below, scalar=scale)))
    elif act_type == "gelu":  # Phi(x) + x * phi(x)
        cdf = F._mul_scalar(F._plus_scalar(F.erf(F._mul_scalar(x, scalar=_SQRT_HALF)),
                                           scalar=1), scalar=0.5)
        pdf = F._mul_scalar(F.exp(F._mul_scalar(F.broadcast_mul(x, x), scalar=-0.5)),
                            scalar=_INV_SQRT_2PI)
        factor = F.broadcast_add(cdf, F.broadcast_mul(x, pdf))
    else:  # prelu
        return _prelu_grad(F, x, ins[1], positive, g)
    return [F.broadcast_mul(g, factor)]


def _prelu_grad(F, x, gamma, positive, g):
    ndim = len(x.shape)
    gview = gamma if ndim < 2 else F.reshape(
        gamma, shape=(1, gamma.shape[0]) + (1,) * (ndim - 2))
    negative = F._rminus_scalar(positive, scalar=1)
    dx = F.broadcast_mul(g, F.broadcast_add(positive, F.broadcast_mul(negative, gview)))
    dgamma = F._reduce_sum_like(F.broadcast_mul(g, F.broadcast_mul(x, negative)), gview)
    if ndim >= 2:
        dgamma = F.reshape(dgamma, shape=gamma.shape)
    return [dx, dgamma]


register(OpDef(
    "LeakyReLU", inputs=("data", "gamma"),
    input_init={"gamma": '["Constant", {"value": 0.25}]'},
    input_filter=lambda a: ("data", "gamma") if a["act_type"] == "prelu" else ("data",),
    attrs={"act_type": Enum(("elu", "gelu", "leaky", "prelu", "rrelu", "selu"),
                            default="leaky", doc="the activation function"),
           "slope": Float(default=0.25, doc="slope below 0 (leaky) or scale (elu)"),
           "lower_bound": Float(default=0.125, doc="lower bound of rrelu's random slope"),
           "upper_bound": Float(default=0.334, doc="upper bound of rrelu's random slope")},
    compute=_leaky_compute, infer_shape=_leaky_shape, grad=_leaky_grad,
    cuda=dict(_LEAKY_CUDA), cuda_key="act_type", mode_dependent=True,
    doc="Leaky rectifiers: leaky x>0 ? x : slope*x; prelu with a learned gamma per channel "
        "(axis 1); elu slope*(exp(x)-1) below 0; selu; gelu x*Phi(x) (erf form); rrelu "
        "outside training only (slope (lower_bound+upper_bound)/2). ``cuda`` is a dict "
        "keyed by act_type (no prelu or rrelu entry).",
    example="nd.LeakyReLU(nd.array([-2, 2]), act_type='leaky', slope=0.1)  # [-0.2, 2]"))
