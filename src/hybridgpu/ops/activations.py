"""Activation functions, each defined once: the ops ``relu``, ``sigmoid``, ``tanh`` and
``softsign``, and the composite ops ``Activation(act_type=...)`` and
``LeakyReLU(act_type=...)``, which dispatch to the same definitions.

A ``Function`` holds everything about one function: its NumPy/CuPy compute over a float
array, its CUDA expression over ``in0``, its gradient written as ops and its lowering (how a
backend emits it, ``ops/lowering.py``). ``nd.Activation(x, act_type='sigmoid')`` and
``nd.sigmoid(x)`` run the same code, so they agree to the bit, hybridized or not.

The formulas never overflow: ``sigmoid(x) = exp(min(x, 0)) / (1 + exp(-|x|))`` (both
exponentials are at most 1), ``softrelu(x) = logaddexp(x, 0)``; ``elu``/``selu`` take
``expm1`` of ``min(x, 0)`` only.

``LeakyReLU`` is ``mode_dependent`` for the sake of ``rrelu``: outside training it is a leaky
ReLU with slope ``(lower_bound + upper_bound) / 2`` (as MXNet); in training it raises, since
MXNet's random per-element slopes are not implemented. It is not ``elementwise``: ``prelu``
broadcasts ``gamma`` along axis 1, not NumPy-style, so a fuser leaves it alone.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> x = np.array([-1e4, -100.0, 0.0, 100.0, 1e4], np.float32)
    >>> ops.get("sigmoid").compute(np, x)  # no overflow warning; exp(-100) is kept
    array([0.0e+00, 3.8e-44, 5.0e-01, 1.0e+00, 1.0e+00], dtype=float32)
    >>> act = ops.get("Activation")
    >>> act.compute(np, np.array([-1.0, 2.0]), act_type="relu")
    array([0., 2.])
    >>> act.cuda["tanh"] == ops.get("tanh").cuda
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..base import MXNetError
from .attrs import Enum, Float
from .lowering import FIRST, Lowering, dispatch, same_float, ufunc
from .opdef import OpDef, get, register
from .rules import check_float, same_shape

__all__ = ["Function", "FUNCTIONS"]


@dataclass(frozen=True)
class Function:
    """One activation function: ``compute(xp, x, slope=...)`` for float ``x``; ``cuda`` over
    ``in0`` (and ``slope``); ``grad(F, x, y, g, slope=...)`` -> dL/dx; ``lower``: its
    Lowering (None: backends call compute)."""

    name: str
    compute: Callable
    cuda: str
    grad: Callable
    lower: Lowering | None = None


def _t(x, value):
    return x.dtype.type(value)


# -- the formulas ---------------------------------------------------------------------------

def _relu(xp, x, **_):
    return xp.maximum(x, _t(x, 0))


def _sigmoid(xp, x, **_):
    return xp.exp(xp.minimum(x, _t(x, 0))) / (_t(x, 1) + xp.exp(-xp.abs(x)))


def _tanh(xp, x, **_):
    return xp.tanh(x)


def _softrelu(xp, x, **_):
    return xp.logaddexp(x, _t(x, 0))  # log(1 + exp(x)) without overflow


def _softsign(xp, x, **_):
    return x / (_t(x, 1) + xp.abs(x))


def _leaky(xp, x, slope=0.25, **_):
    return xp.where(x > 0, x, x * _t(x, slope))


def _elu(xp, x, slope=0.25, **_):
    return xp.where(x > 0, x, xp.expm1(xp.minimum(x, _t(x, 0))) * _t(x, slope))


_SELU_LAMBDA = 1.0507009873554804934193349852946
_SELU_ALPHA = 1.6732632423543772848170429916717
_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _selu(xp, x, **_):
    neg = xp.expm1(xp.minimum(x, _t(x, 0))) * _t(x, _SELU_ALPHA)
    return xp.where(x > 0, x, neg) * _t(x, _SELU_LAMBDA)


def _gelu(xp, x, **_):
    """x * Phi(x) with the exact normal CDF (MXNet uses erf, not the tanh approximation);
    erf is the registry's ``erf`` op (NumPy has none)."""
    erf = get("erf").compute
    return _t(x, 0.5) * x * (_t(x, 1) + erf(xp, x * _t(x, _SQRT_HALF)))


# -- gradients (built from ops) --------------------------------------------------------------

def _times(F, g, factor):
    return F.broadcast_mul(g, factor)


def _relu_grad(F, x, y, g, **_):
    return _times(F, g, F._greater_scalar(x, scalar=0))


def _sigmoid_grad(F, x, y, g, **_):
    return _times(F, g, F.broadcast_mul(y, F._rminus_scalar(y, scalar=1)))


def _tanh_grad(F, x, y, g, **_):
    return _times(F, g, F._rminus_scalar(F.square(y), scalar=1))


def _softrelu_grad(F, x, y, g, **_):
    return _times(F, g, F.sigmoid(x))


def _softsign_grad(F, x, y, g, **_):
    return F.broadcast_div(g, F.square(F._plus_scalar(F.abs(x), scalar=1)))


def _leaky_grad(F, x, y, g, slope=0.25, **_):
    positive = F._greater_scalar(x, scalar=0)
    return _times(F, g, F._plus_scalar(F._mul_scalar(positive, scalar=1 - slope), scalar=slope))


def _exp_linear_grad(scale, below_shift):
    """elu/selu: y' = y + c below 0 (c = slope, or lambda * alpha), ``scale`` above."""

    def grad(F, x, y, g, slope=0.25, **_):
        positive = F._greater_scalar(x, scalar=0)
        below = F._plus_scalar(y, scalar=slope if below_shift is None else below_shift)
        factor = F.broadcast_add(below, F.broadcast_mul(
            positive, F._rminus_scalar(below, scalar=scale)))
        return _times(F, g, factor)

    return grad


def _gelu_grad(F, x, y, g, **_):  # Phi(x) + x * phi(x)
    cdf = F._mul_scalar(F._plus_scalar(F.erf(F._mul_scalar(x, scalar=_SQRT_HALF)), scalar=1),
                        scalar=0.5)
    pdf = F._mul_scalar(F.exp(F._mul_scalar(F.broadcast_mul(x, x), scalar=-0.5)),
                        scalar=_INV_SQRT_2PI)
    return _times(F, g, F.broadcast_add(cdf, F.broadcast_mul(x, pdf)))


# -- lowerings (array-module calls into the output buffer) ---------------------------------

def _emit_relu(site):
    x, o = site.ins[0], site.outs[0]
    return [f"{site.xp}.maximum({x}, {site.const(0, site.out_dtypes[0])}, out={o})"]


def _emit_sigmoid(site):
    """``exp(min(x, 0))`` into scratch, ``1 + exp(-|x|)`` into the output, then divide."""
    xp, x, o, s = site.xp, site.ins[0], site.outs[0], site.scratch[0]
    zero, one = (site.const(v, site.out_dtypes[0]) for v in (0, 1))
    return [f"{xp}.minimum({x}, {zero}, out={s})", f"{xp}.exp({s}, out={s})",
            f"{xp}.abs({x}, out={o})", f"{xp}.negative({o}, out={o})",
            f"{xp}.exp({o}, out={o})", f"{xp}.add({one}, {o}, out={o})",
            f"{xp}.divide({s}, {o}, out={o})"]


def _emit_softrelu(site):
    x, o = site.ins[0], site.outs[0]
    return [f"{site.xp}.logaddexp({x}, {site.const(0, site.out_dtypes[0])}, out={o})"]


def _emit_softsign(site):
    """``x / (1 + |x|)``; reads x after writing the output, so never in place."""
    xp, x, o = site.xp, site.ins[0], site.outs[0]
    one = site.const(1, site.out_dtypes[0])
    return [f"{xp}.abs({x}, out={o})", f"{xp}.add({one}, {o}, out={o})",
            f"{xp}.divide({x}, {o}, out={o})"]


def _same_buffer(site):
    return [(site.out_shapes[0], site.out_dtypes[0])]


FUNCTIONS = {f.name: f for f in (
    Function("relu", _relu, "(in0 > (T)0 ? in0 : (T)0)", _relu_grad,
             Lowering(_emit_relu, same_float, inplace=FIRST)),
    Function("sigmoid", _sigmoid,
             "(exp(in0 < (T)0 ? in0 : (T)0) / ((T)1 + exp(-abs(in0))))", _sigmoid_grad,
             Lowering(_emit_sigmoid, same_float, inplace=FIRST, scratch=_same_buffer)),
    Function("tanh", _tanh, "tanh(in0)", _tanh_grad, ufunc("tanh")),
    Function("softrelu", _softrelu, "((in0 > (T)0 ? in0 : (T)0) + log1p(exp(-abs(in0))))",
             _softrelu_grad, Lowering(_emit_softrelu, same_float, inplace=FIRST)),
    Function("softsign", _softsign, "in0 / ((T)1 + abs(in0))", _softsign_grad,
             Lowering(_emit_softsign, same_float)),
    Function("leaky", _leaky, "(in0 > (T)0 ? in0 : (T)slope * in0)", _leaky_grad),
    Function("elu", _elu, "(in0 > (T)0 ? in0 : (T)slope * expm1(in0))",
             _exp_linear_grad(1.0, None)),
    Function("selu", _selu,
             f"((T){_SELU_LAMBDA!r} * (in0 > (T)0 ? in0 : (T){_SELU_ALPHA!r} * expm1(in0)))",
             _exp_linear_grad(_SELU_LAMBDA, _SELU_LAMBDA * _SELU_ALPHA)),
    Function("gelu", _gelu, f"((T)0.5 * in0 * ((T)1 + erf(in0 * (T){_SQRT_HALF!r})))",
             _gelu_grad),
)}


def _float_math(fn):
    """``fn(xp, x)`` for float ``x``; other dtypes go through float64 and back (MXNet)."""

    def compute(xp, x):
        if x.dtype.kind == "f":
            return fn(xp, x)
        with np.errstate(all="ignore"):
            return fn(xp, x.astype(np.float64)).astype(x.dtype)

    return compute


# -- the plain ops: relu, sigmoid, tanh, softsign ------------------------------------------

def _register_plain(name, doc):
    f = FUNCTIONS[name]

    def grad(F, ins, outs, gouts):
        return [f.grad(F, ins[0], outs[0], gouts[0])]

    compute = f.compute if name == "relu" else _float_math(f.compute)
    register(OpDef(name, inputs=("data",), compute=compute, infer_shape=same_shape,
                   grad=grad, cuda=f.cuda, elementwise=True, doc=doc, lower=f.lower,
                   views=False))


_register_plain("relu", "Rectified linear unit, max(x, 0).")
_register_plain("sigmoid", "Logistic sigmoid, 1 / (1 + exp(-x)), computed without overflow.")
_register_plain("tanh", "Hyperbolic tangent.")
_register_plain("softsign", "Softsign, x / (1 + |x|).")


# -- Activation -----------------------------------------------------------------------------

_ACT_TYPES = ("relu", "sigmoid", "softrelu", "softsign", "tanh")


def _activation_compute(xp, x, act_type):
    check_float("Activation", x)
    return FUNCTIONS[act_type].compute(xp, x)


def _activation_grad(F, ins, outs, gouts, act_type):
    return [FUNCTIONS[act_type].grad(F, ins[0], outs[0], gouts[0])]


def _function_of(attrs):
    return FUNCTIONS[attrs["act_type"]].lower


register(OpDef(
    "Activation", inputs=("data",),
    attrs={"act_type": Enum(_ACT_TYPES, doc="the activation function")},
    compute=_activation_compute, infer_shape=same_shape, grad=_activation_grad,
    cuda={k: FUNCTIONS[k].cuda for k in _ACT_TYPES}, cuda_key="act_type", elementwise=True,
    lower=dispatch(_function_of), views=False,
    doc="Elementwise activation: relu max(x, 0), sigmoid 1/(1+exp(-x)), tanh, softrelu "
        "log(1+exp(x)), softsign x/(1+|x|); each the one definition of that function "
        "(``nd.Activation(x, act_type='sigmoid')`` is ``nd.sigmoid(x)``). ``cuda`` is a dict "
        "keyed by act_type.",
    example="nd.Activation(nd.array([-1, 2]), act_type='relu')  # [0, 2]"))


# -- LeakyReLU ------------------------------------------------------------------------------

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
    if act_type == "rrelu":  # outside training: the mean slope, as MXNet
        if is_train:
            _rrelu_training()
        act_type, slope = "leaky", (lower_bound + upper_bound) / 2
    if act_type == "prelu":
        _check_gamma(x.shape, gamma.shape)
        return xp.where(x > 0, x, x * _gamma_view(gamma, x.ndim))
    return FUNCTIONS[act_type].compute(xp, x, slope=slope)


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
    if act_type == "rrelu":  # only computed outside training: a leaky with the mean slope
        act_type, slope = "leaky", (lower_bound + upper_bound) / 2
    if act_type == "prelu":
        return _prelu_grad(F, x, ins[1], F._greater_scalar(x, scalar=0), g)
    return [FUNCTIONS[act_type].grad(F, x, y, g, slope=slope)]


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


_LEAKY_FUNCTIONS = ("leaky", "elu", "selu", "gelu")

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
    cuda={k: FUNCTIONS[k].cuda for k in _LEAKY_FUNCTIONS}, cuda_key="act_type",
    mode_dependent=True, views=False,
    doc="Leaky rectifiers: leaky x>0 ? x : slope*x; prelu with a learned gamma per channel "
        "(axis 1); elu slope*(exp(x)-1) below 0; selu; gelu x*Phi(x) (erf form); rrelu "
        "outside training only (slope (lower_bound+upper_bound)/2). ``cuda`` is a dict "
        "keyed by act_type (no prelu or rrelu entry).",
    example="nd.LeakyReLU(nd.array([-2, 2]), act_type='leaky', slope=0.1)  # [-0.2, 2]"))
