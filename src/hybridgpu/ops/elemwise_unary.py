"""Unary elementwise math ops: one table row per op gives its NumPy/CuPy compute, its CUDA
expression over ``in0`` and its gradient written as ops. Also ``identity`` (alias ``_copy``),
``BlockGrad`` (alias ``stop_gradient``), ``hard_sigmoid``, ``smooth_l1``, ``clip``, ``where``,
``Cast`` (alias ``cast``) and the hidden ``_backward_gammaln`` (gradient helper of gamma and
gammaln). Float attributes MXNet keeps as C floats (clip's bounds, hard_sigmoid's alpha and
beta) are rounded to float32 as MXNet does: ``clip(x, 0, 0.8)`` on float64 gives
0.800000011920929.

Output dtypes follow MXNet: the output has the input's dtype. Integer inputs of float math
(``exp``, ``sqrt``, ``sigmoid``...) are computed in float64 and truncated back, as MXNet does
(``exp`` of int32 ``[2, 5]`` is ``[7, 148]``; NaN becomes INT_MIN).

Rounding follows MXNet, not NumPy: ``round`` rounds halves away from zero (2.5 -> 3,
-0.5 -> -1); ``rint`` rounds halves down, toward -inf (2.5 -> 2, -2.5 -> -3, 0.5 -> 0);
``fix`` and ``trunc`` round toward zero.

NumPy has no ``erf``, ``erfinv``, ``gamma``, ``gammaln`` or digamma: on cpu they are computed in
float64 with Python's ``math.erf``/``math.gamma``/``math.lgamma`` mapped over the elements (slow
for big arrays, exact to float64), ``erfinv`` by an approximation refined by Newton steps on
``erf``, digamma by recurrence plus its asymptotic series. On gpu they come from
``cupyx.scipy.special`` (imported lazily), with gamma's and gammaln's values at the poles
patched to the host's (cupyx: +inf at negative integers, -inf at -inf).

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> ops.get("exp").compute(np, np.array([0.0]))
    array([1.])
    >>> ops.get("exp").cuda, ops.get("exp").lowering_for("array").kind
    ('exp(in0)', 'out')
    >>> ops.get("round").compute(np, np.array([-2.5, -0.5, 0.5, 2.5]))
    array([-3., -1.,  1.,  3.])
    >>> ops.get("rint").compute(np, np.array([-2.5, -0.5, 0.5, 2.5]))
    array([-3., -1.,  0.,  2.])
"""

from __future__ import annotations

import math

import numpy as np

from ..base import DTYPE_TO_FLAG, MXNetError
from .attrs import Bool, DType, Float, Number
from .lowering import FIRST, Lowering, c_float, same_dtype, same_float, ufunc
from .opdef import OpDef, register
from .rules import fixed_type, merge_shapes, same_shape

__all__ = []

_LN2, _LN10 = math.log(2.0), math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _unary(name, compute, cuda, grad_rule=None, aliases=(), doc="", example="", lower=None):
    """Register ``name``; ``grad_rule(F, x, y, g)`` returns the gradient with respect to x;
    ``lower`` defaults to the array module's function of the same name (float inputs)."""

    def grad(F, ins, outs, gouts):
        return [grad_rule(F, ins[0], outs[0], gouts[0])]

    register(OpDef(name, aliases=aliases, inputs=("data",), compute=compute,
                   infer_shape=same_shape, grad=grad if grad_rule else None, cuda=cuda,
                   elementwise=True, doc=doc or f"Elementwise {name}.", example=example,
                   lower=lower, views=False))


# -- lowerings other than ``xp.<name>(x, out=y)`` --------------------------------------------

def _one_over(fn):
    """``1 / fn(x)`` (rsqrt, rcbrt), or ``1 / x`` with ``fn=None`` (reciprocal)."""

    def emit(site):
        xp, x, o = site.xp, site.ins[0], site.outs[0]
        one = site.const(1, site.out_dtypes[0])
        if fn is None:
            return [f"{xp}.divide({one}, {x}, out={o})"]
        return [f"{xp}.{fn}({x}, out={o})", f"{xp}.divide({one}, {o}, out={o})"]

    return Lowering(emit, same_float, inplace=FIRST)


def _emit_logical_not(site):
    x, o = site.ins[0], site.outs[0]
    return [f"{site.xp}.equal({x}, {site.const(0, site.out_dtypes[0])}, out={o})"]


def _emit_copy(site):
    return [f"{site.xp}.copyto({site.outs[0]}, {site.ins[0]})"]


# -- compute helpers ------------------------------------------------------------------------

def _c_float(value):
    """MXNet stores float attributes (clip's bounds, hard_sigmoid's alpha) as C floats: round
    them to float32 precision, as it does."""
    return float(np.float32(value))


def _float_math(fn):
    """``fn(xp, x)`` for float ``x``; other dtypes go through float64 and back (MXNet's
    truncation; NaN/inf become whatever the C cast gives, without NumPy's warning)."""

    def compute(xp, x):
        if x.dtype.kind == "f":
            return fn(xp, x)
        with np.errstate(all="ignore"):
            return fn(xp, x.astype(np.float64)).astype(x.dtype)

    return compute


def _ufunc(np_name):
    """``xp.<np_name>`` keeping the input dtype (looked up once per array module)."""
    functions = {}

    def fn(xp, x):
        f = functions.get(xp)
        if f is None:
            f = functions[xp] = getattr(xp, np_name)
        return f(x)

    return _float_math(fn)


def _rounding(fn):
    """A rounding op: integer arrays are already whole, so they come back as a copy."""

    def compute(xp, x):
        return fn(xp, x) if x.dtype.kind == "f" else x.copy()

    return compute


def _round_half_away(xp, x):
    t = xp.trunc(x)
    with np.errstate(invalid="ignore"):  # inf - inf: the where still picks inf
        return xp.where(xp.abs(x - t) >= 0.5, t + xp.sign(x), t)  # x - t is exact


def _rint_half_down(xp, x):
    f, c = xp.floor(x), xp.ceil(x)
    with np.errstate(invalid="ignore"):  # inf - inf: the where still picks inf
        return xp.where(x - f <= c - x, f, c)


# -- special functions (erf, erfinv, gamma, gammaln, digamma) --------------------------------

def _host_map(fn, x):
    """Python float function ``fn`` over every element of NumPy array ``x``, in float64."""
    values = x.astype(np.float64, copy=False).ravel().tolist()
    return np.array([fn(v) for v in values], dtype=np.float64).reshape(x.shape)


def _gamma_scalar(v):
    try:
        return math.gamma(v)
    except ValueError:  # a pole: +-0 gives +-inf, negative integers and -inf give NaN
        return math.copysign(math.inf, v) if v == 0 else math.nan
    except OverflowError:
        return math.inf


def _lgamma_scalar(v):
    try:
        return math.lgamma(v)
    except (ValueError, OverflowError):  # poles and overflow: +inf, as C's lgamma
        return math.inf


def _poly(t, coefficients):
    result = np.full_like(t, coefficients[0])
    for c in coefficients[1:]:
        result = result * t + c
    return result


# Giles (2010), "Approximating the erfinv function": a single-precision first guess.
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                   0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _erfinv_host(y):
    """Inverse of erf on NumPy float64: Giles' guess, then Newton steps on ``erf(x) = |y|``;
    near 1 on ``log(erfc(x)) = log(1 - |y|)`` instead, where ``1 - |y|`` is exact, erf has no
    precision left and the logarithm makes Newton converge from a poor guess."""
    a = np.abs(y)
    with np.errstate(all="ignore"):
        w = -np.log((1.0 - a) * (1.0 + a))
        guess = np.where(w < 5.0, _poly(w - 2.5, _ERFINV_CENTRAL),
                         _poly(np.sqrt(w) - 3.0, _ERFINV_TAIL))
        x = np.where(np.isfinite(w), guess * a, 0.0)
        tail, log_target = a > 0.5, np.log(1.0 - a)
        for _ in range(4):
            slope = _TWO_OVER_SQRT_PI * np.exp(-x * x)
            erfc = _host_map(math.erfc, x)
            step = np.where(tail, (np.log(erfc) - log_target) * erfc,
                            _host_map(math.erf, x) - a)
            x = np.where(np.isfinite(step), x + np.where(tail, step, -step) / slope, x)
    x = np.where(a == 1.0, np.inf, x)
    return np.where((a > 1.0) | np.isnan(y), np.nan, np.copysign(x, y))


def _digamma_host(x):
    """The digamma function psi on NumPy float64: reflection below 0.5, recurrence up to 10,
    then the asymptotic series (error below 1e-14)."""
    with np.errstate(all="ignore"):
        reflect = x < 0.5
        z = np.where(reflect, 1.0 - x, x)
        acc = np.zeros_like(z)
        for _ in range(10):  # psi(z) = psi(z + 1) - 1 / z
            small = z < 10.0
            acc -= np.where(small, 1.0 / z, 0.0)
            z = np.where(small, z + 1.0, z)
        inv2 = 1.0 / (z * z)
        tail = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (
            1 / 240 - inv2 / 132))))
        result = acc + np.log(z) - 0.5 / z - tail
        return np.where(reflect, result - np.pi / np.tan(np.pi * x), result)


_HOST_SPECIAL = {
    "erf": lambda x: _host_map(math.erf, x),
    "erfinv": _erfinv_host,
    "gamma": lambda x: _host_map(_gamma_scalar, x),
    "gammaln": lambda x: _host_map(_lgamma_scalar, x),
    "digamma": _digamma_host,
}


def _special_fn(xp, name):
    """The special function ``name`` for array module ``xp`` (cupyx on gpu)."""
    if xp is np:
        return _HOST_SPECIAL[name]
    from cupyx.scipy import special  # only on gpu contexts

    return getattr(special, name)


def _special_input(xp, x):
    """float64 on the host; float32/float64 as they are on gpu (cupyx has kernels for both)."""
    if xp is not np and x.dtype in (np.float32, np.float64):
        return x
    return x.astype(np.float64)


def _host_poles(xp, name, x, result):
    """cupyx's gamma kernel gives +inf at negative integers and -inf at -inf, its gammaln -inf
    at -inf; the host functions, like C's tgamma/lgamma (MXNet's kernels), give NaN, NaN and
    +inf there. Patch the GPU results to match."""
    if name == "gamma":
        pole = (x < 0) & (xp.floor(x) == x)  # negative integers and -inf
        return xp.where(pole, result.dtype.type(np.nan), result)
    if name == "gammaln":
        return xp.where(x == -np.inf, result.dtype.type(np.inf), result)
    return result


def _special(name):
    def compute(xp, x):
        data = _special_input(xp, x)
        result = _special_fn(xp, name)(data)
        if xp is not np:
            result = _host_poles(xp, name, data, result)
        with np.errstate(all="ignore"):
            return result.astype(x.dtype, copy=False)

    return compute


# -- gradient building blocks (each returns d(op)/dx * g, built from F ops) ------------------

def _zero(F, x, y, g):
    return F.zeros_like(g)


def _times(F, g, factor):
    return F.broadcast_mul(g, factor)


def _over(F, g, divisor):
    return F.broadcast_div(g, divisor)


def _inv_sqrt_one_minus_sq(F, x):
    return F.rsqrt(F._rminus_scalar(F.square(x), scalar=1))


# -- activations and signs ------------------------------------------------------------------

_unary("negative", lambda xp, x: xp.negative(x), "-in0",
       lambda F, x, y, g: F.negative(g), doc="Elementwise -x.",
       lower=ufunc("negative"))
_unary("abs", lambda xp, x: xp.abs(x), "abs(in0)",
       lambda F, x, y, g: _times(F, g, F.sign(x)), doc="Elementwise |x|.",
       lower=ufunc("abs"))
_unary("sign", lambda xp, x: (x > 0).astype(x.dtype) - (x < 0),
       "(T)((in0 > (T)0) - (in0 < (T)0))", _zero,
       doc="Elementwise sign: -1, 0 or 1 (0 for NaN, as MXNet).")
_unary("logical_not", lambda xp, x: (x == 0).astype(x.dtype), "(T)(in0 == (T)0)", _zero,
       doc="Logical NOT: 1 where x is 0, else 0, in the input's dtype.",
       lower=Lowering(_emit_logical_not, same_float, inplace=FIRST))

# -- exponentials, logarithms, powers -------------------------------------------------------

_unary("exp", _ufunc("exp"), "exp(in0)",
       lambda F, x, y, g: _times(F, g, y), doc="Elementwise e**x.",
       lower=ufunc("exp"))
_unary("expm1", _ufunc("expm1"), "expm1(in0)",
       lambda F, x, y, g: _times(F, g, F.exp(x)), doc="exp(x) - 1, accurate near 0.",
       lower=ufunc("expm1"))
_unary("log", _ufunc("log"), "log(in0)",
       lambda F, x, y, g: _over(F, g, x), doc="Elementwise natural logarithm.",
       lower=ufunc("log"))
_unary("log1p", _ufunc("log1p"), "log1p(in0)",
       lambda F, x, y, g: _over(F, g, F._plus_scalar(x, scalar=1)),
       doc="log(1 + x), accurate near 0.",
       lower=ufunc("log1p"))
_unary("log2", _ufunc("log2"), "log2(in0)",
       lambda F, x, y, g: _over(F, g, F._mul_scalar(x, scalar=_LN2)),
       doc="Base-2 logarithm.",
       lower=ufunc("log2"))
_unary("log10", _ufunc("log10"), "log10(in0)",
       lambda F, x, y, g: _over(F, g, F._mul_scalar(x, scalar=_LN10)),
       doc="Base-10 logarithm.",
       lower=ufunc("log10"))
_unary("sqrt", _ufunc("sqrt"), "sqrt(in0)",
       lambda F, x, y, g: _over(F, g, F._mul_scalar(y, scalar=2)), doc="Square root.",
       lower=ufunc("sqrt"))
_unary("rsqrt", _float_math(lambda xp, x: 1 / xp.sqrt(x)), "rsqrt(in0)",
       lambda F, x, y, g: _times(F, g, F._mul_scalar(F._power_scalar(y, scalar=3),
                                                     scalar=-0.5)),
       doc="Reciprocal square root, 1 / sqrt(x).",
       lower=_one_over("sqrt"))
_unary("cbrt", _ufunc("cbrt"), "cbrt(in0)",
       lambda F, x, y, g: _over(F, g, F._mul_scalar(F.square(y), scalar=3)),
       doc="Cube root (negative for negative x).",
       lower=ufunc("cbrt"))
_unary("rcbrt", _float_math(lambda xp, x: 1 / xp.cbrt(x)), "rcbrt(in0)",
       lambda F, x, y, g: _times(F, g, F._mul_scalar(F._power_scalar(y, scalar=4),
                                                     scalar=-1 / 3)),
       doc="Reciprocal cube root, 1 / cbrt(x).",
       lower=_one_over("cbrt"))
_unary("square", lambda xp, x: xp.square(x), "in0 * in0",
       lambda F, x, y, g: _times(F, g, F._mul_scalar(x, scalar=2)), doc="Elementwise x**2.",
       lower=ufunc("square"))
_unary("reciprocal", _float_math(lambda xp, x: 1 / x), "(T)1 / in0",
       lambda F, x, y, g: F.negative(_times(F, g, F.square(y))), doc="Elementwise 1 / x.",
       lower=_one_over(None))

# -- special functions ----------------------------------------------------------------------

_unary("erf", _special("erf"), "erf(in0)",
       lambda F, x, y, g: _times(F, g, F._mul_scalar(F.exp(F.negative(F.square(x))),
                                                     scalar=_TWO_OVER_SQRT_PI)),
       doc="Gauss error function.")
_unary("erfinv", _special("erfinv"), "erfinv(in0)",
       lambda F, x, y, g: _times(F, g, F._mul_scalar(F.exp(F.square(y)),
                                                     scalar=1 / _TWO_OVER_SQRT_PI)),
       doc="Inverse of the Gauss error function (NaN outside [-1, 1]).")
_unary("gamma", _special("gamma"), "tgamma(in0)",
       lambda F, x, y, g: F._backward_gammaln(_times(F, g, y), x),
       doc="The gamma function.")
_unary("gammaln", _special("gammaln"), "lgamma(in0)",
       lambda F, x, y, g: F._backward_gammaln(g, x),
       doc="Natural logarithm of the absolute value of the gamma function.")

# -- rounding (gradient zero) ---------------------------------------------------------------

_unary("floor", _rounding(lambda xp, x: xp.floor(x)), "floor(in0)", _zero,
       doc="Elementwise floor.",
       lower=ufunc("floor"))
_unary("ceil", _rounding(lambda xp, x: xp.ceil(x)), "ceil(in0)", _zero,
       doc="Elementwise ceiling.",
       lower=ufunc("ceil"))
_unary("round", _rounding(_round_half_away), "round(in0)", _zero,
       doc="Round to the nearest integer, halves away from zero (MXNet; not NumPy's "
           "half-to-even).", example="nd.round(nd.array([-2.5, 0.5, 2.5]))  # [-3, 1, 3]")
_unary("rint", _rounding(_rint_half_down),
       "(in0 - floor(in0) <= ceil(in0) - in0 ? floor(in0) : ceil(in0))", _zero,
       doc="Round to the nearest integer, halves toward -inf (MXNet; not NumPy's "
           "half-to-even).", example="nd.rint(nd.array([-2.5, 0.5, 2.5]))  # [-3, 0, 2]")
_unary("fix", _rounding(lambda xp, x: xp.trunc(x)), "trunc(in0)", _zero,
       doc="Round toward zero.",
       lower=ufunc("trunc"))
_unary("trunc", _rounding(lambda xp, x: xp.trunc(x)), "trunc(in0)", _zero,
       doc="Truncate toward zero.",
       lower=ufunc("trunc"))

# -- trigonometric and hyperbolic -----------------------------------------------------------

_unary("sin", _ufunc("sin"), "sin(in0)",
       lambda F, x, y, g: _times(F, g, F.cos(x)), doc="Elementwise sine.",
       lower=ufunc("sin"))
_unary("cos", _ufunc("cos"), "cos(in0)",
       lambda F, x, y, g: F.negative(_times(F, g, F.sin(x))), doc="Elementwise cosine.",
       lower=ufunc("cos"))
_unary("tan", _ufunc("tan"), "tan(in0)",
       lambda F, x, y, g: _times(F, g, F._plus_scalar(F.square(y), scalar=1)),
       doc="Elementwise tangent.",
       lower=ufunc("tan"))
_unary("arcsin", _ufunc("arcsin"), "asin(in0)",
       lambda F, x, y, g: _times(F, g, _inv_sqrt_one_minus_sq(F, x)), doc="Inverse sine.",
       lower=ufunc("arcsin"))
_unary("arccos", _ufunc("arccos"), "acos(in0)",
       lambda F, x, y, g: F.negative(_times(F, g, _inv_sqrt_one_minus_sq(F, x))),
       doc="Inverse cosine.",
       lower=ufunc("arccos"))
_unary("arctan", _ufunc("arctan"), "atan(in0)",
       lambda F, x, y, g: _over(F, g, F._plus_scalar(F.square(x), scalar=1)),
       doc="Inverse tangent.",
       lower=ufunc("arctan"))
_unary("sinh", _ufunc("sinh"), "sinh(in0)",
       lambda F, x, y, g: _times(F, g, F.cosh(x)), doc="Hyperbolic sine.",
       lower=ufunc("sinh"))
_unary("cosh", _ufunc("cosh"), "cosh(in0)",
       lambda F, x, y, g: _times(F, g, F.sinh(x)), doc="Hyperbolic cosine.",
       lower=ufunc("cosh"))
_unary("arcsinh", _ufunc("arcsinh"), "asinh(in0)",
       lambda F, x, y, g: _times(F, g, F.rsqrt(F._plus_scalar(F.square(x), scalar=1))),
       doc="Inverse hyperbolic sine.",
       lower=ufunc("arcsinh"))
_unary("arccosh", _ufunc("arccosh"), "acosh(in0)",
       lambda F, x, y, g: _times(F, g, F.rsqrt(F._minus_scalar(F.square(x), scalar=1))),
       doc="Inverse hyperbolic cosine.",
       lower=ufunc("arccosh"))
_unary("arctanh", _ufunc("arctanh"), "atanh(in0)",
       lambda F, x, y, g: _over(F, g, F._rminus_scalar(F.square(x), scalar=1)),
       doc="Inverse hyperbolic tangent.",
       lower=ufunc("arctanh"))
_unary("degrees", _ufunc("degrees"), "in0 * (T)57.29577951308232",
       lambda F, x, y, g: F._mul_scalar(g, scalar=180 / math.pi),
       doc="Radians to degrees.",
       lower=ufunc("degrees"))
_unary("radians", _ufunc("radians"), "in0 * (T)0.017453292519943295",
       lambda F, x, y, g: F._mul_scalar(g, scalar=math.pi / 180),
       doc="Degrees to radians.",
       lower=ufunc("radians"))


# -- copies -----------------------------------------------------------------------------------

_unary("_copy", lambda xp, x: x.copy(), "in0", lambda F, x, y, g: g, aliases=("identity",),
       doc="A copy of the input.",
       lower=Lowering(_emit_copy, same_dtype))
_unary("BlockGrad", lambda xp, x: x.copy(), "in0", _zero, aliases=("stop_gradient",),
       doc="A copy of the input through which no gradient flows (the gradient is zero).",
       lower=Lowering(_emit_copy, same_dtype))


# -- hard_sigmoid, smooth_l1 ----------------------------------------------------------------

def _hard_sigmoid_compute(xp, x, alpha, beta):
    if x.dtype.kind != "f":
        raise ValueError(f"hard_sigmoid: only floating-point inputs are supported, got "
                         f"{x.dtype.name}; cast the input first")
    t = x * x.dtype.type(_c_float(alpha)) + x.dtype.type(_c_float(beta))
    return xp.clip(t, x.dtype.type(0), x.dtype.type(1))


def _hard_sigmoid_grad(F, ins, outs, gouts, alpha, beta):
    y = outs[0]  # the slope is alpha where 0 < alpha * x + beta < 1, else 0
    inside = F.broadcast_mul(F._greater_scalar(y, scalar=0), F._lesser_scalar(y, scalar=1))
    return [F._mul_scalar(F.broadcast_mul(gouts[0], inside), scalar=_c_float(alpha))]


def _emit_hard_sigmoid(site):
    xp, x, o, t = site.xp, site.ins[0], site.outs[0], site.out_dtypes[0]
    alpha = site.const(c_float(site.attrs["alpha"]), t)
    beta = site.const(c_float(site.attrs["beta"]), t)
    return [f"{xp}.multiply({x}, {alpha}, out={o})", f"{xp}.add({o}, {beta}, out={o})",
            f"{xp}.clip({o}, {site.const(0, t)}, {site.const(1, t)}, out={o})"]


register(OpDef(
    "hard_sigmoid", inputs=("data",),
    attrs={"alpha": Float(default=_c_float(0.2), doc="slope"),
           "beta": Float(default=0.5, doc="bias")},
    compute=_hard_sigmoid_compute, infer_shape=same_shape, grad=_hard_sigmoid_grad,
    cuda="((T)alpha * in0 + (T)beta <= (T)0 ? (T)0 : ((T)alpha * in0 + (T)beta >= (T)1 ? "
         "(T)1 : (T)alpha * in0 + (T)beta))",
    elementwise=True, doc="Hard sigmoid, max(0, min(1, alpha * x + beta)).",
    lower=Lowering(_emit_hard_sigmoid, same_float, inplace=FIRST), views=False,
    example="nd.hard_sigmoid(nd.array([-3, 0, 3]))  # [0, 0.5, 1]"))


def _smooth_l1_float(xp, x, scalar):
    s2 = x.dtype.type(float(scalar) ** 2)
    ax = xp.abs(x)
    return xp.where(ax < 1 / s2, x.dtype.type(0.5) * s2 * x * x, ax - x.dtype.type(0.5) / s2)


def _smooth_l1_compute(xp, x, scalar=1, is_int=True):
    if x.dtype.kind == "f":
        return _smooth_l1_float(xp, x, scalar)
    with np.errstate(all="ignore"):  # ints: float math, truncated back (MXNet)
        return _smooth_l1_float(xp, x.astype(np.float64), scalar).astype(x.dtype)


def _smooth_l1_grad(F, ins, outs, gouts, scalar=1, is_int=True):
    x, s2 = ins[0], float(scalar) ** 2
    inside = F._lesser_scalar(F.abs(x), scalar=1 / s2)
    slope = F.where(inside, F._mul_scalar(x, scalar=s2), F.sign(x))
    return [F.broadcast_mul(gouts[0], slope)]


register(OpDef(
    "smooth_l1", inputs=("data",),
    attrs={"scalar": Number(default=1, doc="sigma"),
           "is_int": Bool(default=True, doc="whether the scalar was an int")},
    compute=_smooth_l1_compute, infer_shape=same_shape, grad=_smooth_l1_grad,
    cuda="(abs(in0) < (T)1 / ((T)scalar * (T)scalar) ? (T)0.5 * (T)scalar * (T)scalar * in0 "
         "* in0 : abs(in0) - (T)0.5 / ((T)scalar * (T)scalar))",
    elementwise=True,
    doc="Smooth L1: 0.5 * (sigma * x)**2 where |x| < 1 / sigma**2, else |x| - 0.5 / sigma**2 "
        "(sigma = scalar).",
    example="nd.smooth_l1(nd.array([0.5, 3]), scalar=1)  # [0.125, 2.5]"))


# -- the digamma gradient helper ------------------------------------------------------------

def _backward_gammaln_compute(xp, ograd, data):
    psi = _special_fn(xp, "digamma")(_special_input(xp, data))
    return (ograd * psi).astype(ograd.dtype, copy=False)


register(OpDef(
    "_backward_gammaln", inputs=("ograd", "data"), compute=_backward_gammaln_compute,
    infer_shape=same_shape,
    doc="Gradient helper of gammaln and gamma: ograd * digamma(data)."))


# -- clip -----------------------------------------------------------------------------------

def _clip_float(xp, x, a_min, a_max):
    lo, hi = x.dtype.type(_c_float(a_min)), x.dtype.type(_c_float(a_max))
    if lo <= hi:
        return xp.clip(x, lo, hi)
    return xp.where(x > hi, hi, xp.where(x < lo, lo, x))  # MXNet's order when lo > hi


def _clip_compute(xp, x, a_min, a_max):
    if x.dtype.kind == "f":
        return _clip_float(xp, x, a_min, a_max)
    with np.errstate(all="ignore"):  # ints: compared in float, then cast back (MXNet)
        return _clip_float(xp, x.astype(np.float64), a_min, a_max).astype(x.dtype)


def _clip_grad(F, ins, outs, gouts, a_min, a_max):
    x = ins[0]
    inside = F.broadcast_mul(F._greater_equal_scalar(x, scalar=_c_float(a_min)),
                             F._lesser_equal_scalar(x, scalar=_c_float(a_max)))
    return [F.broadcast_mul(gouts[0], inside)]


def _emit_clip(site):
    xp, x, o, t = site.xp, site.ins[0], site.outs[0], site.out_dtypes[0]
    lo = site.const(c_float(site.attrs["a_min"]), t)
    hi = site.const(c_float(site.attrs["a_max"]), t)
    return [f"{xp}.clip({x}, {lo}, {hi}, out={o})"]


def _clip_lowers(site):  # reversed bounds follow MXNet's order: compute
    return same_float(site) and c_float(site.attrs["a_min"]) <= c_float(site.attrs["a_max"])


register(OpDef(
    "clip", inputs=("data",),
    attrs={"a_min": Float(doc="minimum value"), "a_max": Float(doc="maximum value")},
    compute=_clip_compute, infer_shape=same_shape, grad=_clip_grad,
    cuda="(in0 > (T)a_max ? (T)a_max : (in0 < (T)a_min ? (T)a_min : in0))",
    elementwise=True, lower=Lowering(_emit_clip, _clip_lowers, inplace=FIRST), views=False,
    doc="Clip values to [a_min, a_max]; the gradient passes where a_min <= x <= a_max.",
    example="nd.clip(nd.array([-1, 0.5, 3]), 0, 1)  # [0, 0.5, 1]"))


# -- where ----------------------------------------------------------------------------------

def _where_mask(xp, condition, x):
    if condition.shape == x.shape:
        return condition != 0
    if condition.ndim == 1 and x.ndim >= 1 and condition.shape[0] == x.shape[0]:
        return (condition != 0).reshape((-1,) + (1,) * (x.ndim - 1))
    raise ValueError(f"where: condition must have the shape of x {x.shape} or be 1-D of "
                     f"length {x.shape[0] if x.ndim else 0}, got {condition.shape}")


def _where_compute(xp, condition, x, y):
    if x.shape != y.shape:
        raise ValueError(f"where: x and y must have one shape, got {x.shape} and {y.shape}")
    return xp.where(_where_mask(xp, condition, x), x, y)


def _where_shape(attrs, in_shapes):
    cond, x, y = in_shapes
    data = merge_shapes(x, y, "where: shapes of x and y")
    if cond is not None and data is not None:
        if len(cond) == len(data):
            data = cond = merge_shapes(cond, data, "where: shapes of condition and x")
        elif len(cond) != 1 or (cond[0] and data[0] and cond[0] != data[0]):
            raise MXNetError(f"where: condition must have the shape of x {data} or be 1-D of "
                             f"length {data[0] if data else 0}, got {cond}")
    elif cond is not None and len(cond) > 1:
        data = cond
    return [cond, data, data], [data]


def _where_type(attrs, in_types):
    cond, x, y = in_types
    if x is not None and y is not None and x != y:
        raise MXNetError(f"where: x has dtype {x} but y has dtype {y}; cast them to one dtype")
    dtype = x or y
    return [cond, dtype, dtype], [dtype]


def _where_grad(F, ins, outs, gouts):
    cond, g = ins[0], gouts[0]
    zeros = F.zeros_like(g)
    return [None, F.where(cond, g, zeros), F.where(cond, zeros, g)]


register(OpDef(
    "where", inputs=("condition", "x", "y"), compute=_where_compute,
    infer_shape=_where_shape, infer_type=_where_type, grad=_where_grad,
    nondiff_inputs=("condition",),
    doc="Elements of x where condition is nonzero, else of y. condition has x's shape, or is "
        "1-D and picks whole rows (first axis).",
    example="nd.where(nd.array([1, 0]), nd.ones((2, 2)), nd.zeros((2, 2)))  # [[1, 1], [0, 0]]"))


# -- Cast -----------------------------------------------------------------------------------

def _cast_compute(xp, x, dtype):
    if x.dtype.kind == "f":
        with np.errstate(invalid="ignore", over="ignore"):  # the C cast, silently (MXNet)
            return x.astype(dtype)
    return x.astype(dtype)


def _cast_grad(F, ins, outs, gouts, dtype):
    return [F.cast(gouts[0], dtype=np.dtype(ins[0].dtype).name)]


#: The CUDA expression of a cast to each dtype. float16 values are computed in float in the
#: kernels (``compiler/codegen/cuda/ctype.py``), so a cast to float16 rounds to half precision
#: and back: inside a fused group (``compiler/passes/absorb_casts.py``) the next member sees
#: the rounded value, as it does when the cast is its own kernel.
_CAST_CUDA = {name: "(T)in0" for name in DTYPE_TO_FLAG}
_CAST_CUDA["float16"] = "(T)__half2float(__float2half_rn((float)(in0)))"


register(OpDef(
    "Cast", aliases=("cast",), inputs=("data",),
    attrs={"dtype": DType(doc="output dtype, e.g. 'float16', 'int32'")},
    compute=_cast_compute, infer_shape=same_shape, infer_type=fixed_type("dtype"),
    grad=_cast_grad, cuda=_CAST_CUDA, cuda_key="dtype", elementwise=True,
    doc="Convert every element to dtype (C casts: float to int truncates toward zero).",
    example="nd.cast(nd.array([1.7, -1.7]), dtype='int32')  # [1, -1]"))
