"""Binary elementwise ops in MXNet's three forms: ``elemwise_*`` (same shape), ``broadcast_*``
(NumPy broadcasting) and ``_*_scalar`` (an array and a scalar attribute).

One table row per math function gives all three forms: the NumPy compute, the CUDA expression
and the gradient. Comparison and logical ops return 0/1 in the input's dtype, as MXNet does.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> ops.get("broadcast_add").compute(np, np.ones((2, 1)), np.ones(3)).shape
    (2, 3)
    >>> ops.get("_rminus_scalar").compute(np, np.ones(2), scalar=5)
    array([4., 4.])
"""

from __future__ import annotations

import math

from .attrs import Bool, Number
from .lowering import binary, scalar_call
from .opdef import OpDef, register
from .rules import broadcast_shape, same_shape

__all__ = []


def _same_dtype(result, like):
    return result if result.dtype == like.dtype else result.astype(like.dtype)


def _scalar_of(a, scalar):
    """The scalar in ``a``'s dtype, so int arrays stay int (MXNet casts the scalar)."""
    return a.dtype.type(scalar)


# -- gradients (built from ops, so they work on NDArrays and Symbols) -------------------------
# Each takes (F, a, b, out, g) with a, b arrays and returns the gradients before reduction.

def _g_add(F, a, b, out, g):
    return g, g


def _g_sub(F, a, b, out, g):
    return g, F.negative(g)


def _g_mul(F, a, b, out, g):
    return F.broadcast_mul(g, b), F.broadcast_mul(g, a)


def _g_div(F, a, b, out, g):
    ga = F.broadcast_div(g, b)
    return ga, F.negative(F.broadcast_mul(ga, F.broadcast_div(a, b)))


def _g_mod(F, a, b, out, g):
    return g, F.negative(F.broadcast_mul(g, F.floor(F.broadcast_div(a, b))))


def _g_power(F, a, b, out, g):
    ga = F.broadcast_mul(g, F.broadcast_mul(b, F.broadcast_power(a, F._minus_scalar(b, scalar=1))))
    return ga, F.broadcast_mul(g, F.broadcast_mul(out, F.log(a)))


def _g_maximum(F, a, b, out, g):
    mask = F.broadcast_greater_equal(a, b)
    return F.broadcast_mul(g, mask), F.broadcast_mul(g, F._rminus_scalar(mask, scalar=1))


def _g_minimum(F, a, b, out, g):
    mask = F.broadcast_lesser_equal(a, b)
    return F.broadcast_mul(g, mask), F.broadcast_mul(g, F._rminus_scalar(mask, scalar=1))


def _g_hypot(F, a, b, out, g):
    scale = F.broadcast_div(g, out)
    return F.broadcast_mul(scale, a), F.broadcast_mul(scale, b)


# name: (numpy function name, CUDA expression, gradient or None, elemwise alias names)
_ARITH = {
    "add": ("add", "in0 + in1", _g_add, ("_add", "_plus", "_Plus")),
    "sub": ("subtract", "in0 - in1", _g_sub, ("_sub", "_minus", "_Minus")),
    "mul": ("multiply", "in0 * in1", _g_mul, ("_mul", "_Mul")),
    "div": ("divide", "in0 / in1", _g_div, ("_div", "_Div")),
    "mod": ("mod", "in0 - floor(in0 / in1) * in1", _g_mod, ("_Mod",)),
    "power": ("power", "pow(in0, in1)", _g_power, ("_Power",)),
    "maximum": ("maximum", "(in0 > in1 ? in0 : in1)", _g_maximum, ("_Maximum",)),
    "minimum": ("minimum", "(in0 < in1 ? in0 : in1)", _g_minimum, ("_Minimum",)),
    "hypot": ("hypot", "hypot(in0, in1)", _g_hypot, ("_Hypot",)),
}
_LOGIC = {
    "equal": ("equal", "(T)(in0 == in1)", None, ("_Equal",)),
    "not_equal": ("not_equal", "(T)(in0 != in1)", None, ("_Not_Equal",)),
    "greater": ("greater", "(T)(in0 > in1)", None, ("_Greater",)),
    "greater_equal": ("greater_equal", "(T)(in0 >= in1)", None, ("_Greater_Equal",)),
    "lesser": ("less", "(T)(in0 < in1)", None, ("_Lesser",)),
    "lesser_equal": ("less_equal", "(T)(in0 <= in1)", None, ("_Lesser_Equal",)),
    "logical_and": ("logical_and", "(T)(in0 != (T)0 && in1 != (T)0)", None, ("_Logical_And",)),
    "logical_or": ("logical_or", "(T)(in0 != (T)0 || in1 != (T)0)", None, ("_Logical_Or",)),
    "logical_xor": ("logical_xor", "(T)((in0 != (T)0) != (in1 != (T)0))", None,
                    ("_Logical_Xor",)),
}
# MXNet's elemwise names: elemwise_add..div are public; the rest are _name (e.g. _maximum).
_ELEMWISE_NAME = {"add": "elemwise_add", "sub": "elemwise_sub", "mul": "elemwise_mul",
                  "div": "elemwise_div"}
_BROADCAST_ALIASES = {"add": ("broadcast_plus",), "sub": ("broadcast_minus",)}
# MXNet 1.9's NumPy-mode names (what its NumPy-mode exports hold), for the arithmetic forms
_NP_NAMES = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "true_divide",
             "mod": "mod", "power": "power", "maximum": "maximum", "minimum": "minimum",
             "hypot": "hypot"}


def _np_aliases(key, form):
    """``_npi_<name>`` (arrays), ``_npi_<name>_scalar`` or ``_npi_r<name>_scalar``."""
    name = _NP_NAMES.get(key)
    if name is None:
        return ()
    return ({"array": f"_npi_{name}", "scalar": f"_npi_{name}_scalar",
             "rscalar": f"_npi_r{name}_scalar"}[form],)


def _array_compute(np_name, logical):
    functions = {}  # xp -> its ufunc, looked up once

    def compute(xp, a, b):
        fn = functions.get(xp)
        if fn is None:
            fn = functions[xp] = getattr(xp, np_name)
        if a.dtype is not b.dtype and a.dtype != b.dtype:  # MXNet refuses; so does sym
            raise ValueError(f"inputs have different dtypes {a.dtype} and {b.dtype}; cast one "
                             f"with astype() first")
        result = fn(a, b)
        if logical or result.dtype is not a.dtype:  # identity first: dtype == is slow
            return _same_dtype(result, a)
        return result

    return compute


def _elemwise_compute(np_name, logical, op_name):
    inner = _array_compute(np_name, logical)

    def compute(xp, a, b):
        if a.shape != b.shape:
            raise ValueError(f"{op_name} needs inputs of one shape, got {a.shape} and {b.shape}"
                             f"; use broadcast_* for broadcasting")
        return inner(xp, a, b)

    return compute


def _array_grad(rule, broadcast):
    def grad(F, ins, outs, gouts, **attrs):
        a, b = ins
        ga, gb = rule(F, a, b, outs[0], gouts[0])
        if broadcast:
            return [F._reduce_sum_like(ga, a), F._reduce_sum_like(gb, b)]
        return [ga, gb]

    return grad if rule is not None else None


def _register_array_forms(key, np_name, cuda, rule, aliases, logical):
    elem_name = _ELEMWISE_NAME.get(key, f"_{key}")
    elem_aliases = tuple(a for a in aliases if a != elem_name)
    register(OpDef(
        elem_name, aliases=elem_aliases, inputs=("lhs", "rhs"),
        compute=_elemwise_compute(np_name, logical, elem_name),
        infer_shape=same_shape, grad=_array_grad(rule, False), cuda=cuda, elementwise=True,
        lower=binary(np_name), views=False,
        doc=f"Elementwise {key} of two arrays of the same shape."))
    register(OpDef(
        f"broadcast_{key}", aliases=_BROADCAST_ALIASES.get(key, ()) + _np_aliases(key, "array"),
        inputs=("lhs", "rhs"),
        compute=_array_compute(np_name, logical), infer_shape=broadcast_shape,
        grad=_array_grad(rule, True), cuda=cuda, elementwise=True,
        lower=binary(np_name), views=False,
        doc=f"Elementwise {key} of two arrays with NumPy broadcasting.",
        example=f"nd.broadcast_{key}(nd.ones((2, 1)), nd.ones((3,))).shape  # (2, 3)"))


# -- scalar forms ---------------------------------------------------------------------------

def _scalar_compute(np_name, reverse, logical):
    fn_cache = {}

    def compute(xp, a, scalar, is_int=True):
        fn = fn_cache.get(xp)
        if fn is None:
            fn = fn_cache[xp] = getattr(xp, np_name)
        s = _scalar_of(a, scalar)
        result = fn(s, a) if reverse else fn(a, s)
        return _same_dtype(result, a) if logical or result.dtype != a.dtype else result

    return compute


def _scalar_grad(key, reverse):
    """Gradient of ``f(a, s)`` (or ``f(s, a)`` when ``reverse``) with respect to ``a``."""

    def grad(F, ins, outs, gouts, scalar, is_int=True):
        (a,), out, g = ins, outs[0], gouts[0]
        if key in ("add",):
            return [g]
        if key == "sub":
            return [F.negative(g) if reverse else g]
        if key == "mul":
            return [F._mul_scalar(g, scalar=scalar)]
        if key == "div":
            if reverse:  # d(s/a) = -s/a^2 = -out/a
                return [F.negative(F.broadcast_mul(g, F.broadcast_div(out, a)))]
            return [F._div_scalar(g, scalar=scalar)]
        if key == "mod":
            if reverse:
                return [F.negative(F.broadcast_mul(g, F.floor(F._rdiv_scalar(a, scalar=scalar))))]
            return [g]
        if key == "power":
            if reverse:  # d(s^a) = s^a log s
                return [F._mul_scalar(F.broadcast_mul(g, out), scalar=math.log(scalar))]
            return [F.broadcast_mul(g, F._mul_scalar(F._power_scalar(a, scalar=scalar - 1),
                                                      scalar=scalar))]
        if key == "maximum":
            return [F.broadcast_mul(g, F._greater_equal_scalar(a, scalar=scalar))]
        if key == "minimum":
            return [F.broadcast_mul(g, F._lesser_equal_scalar(a, scalar=scalar))]
        if key == "hypot":
            return [F.broadcast_mul(g, F.broadcast_div(a, out))]
        raise AssertionError(key)

    return grad


def _scalar_cuda(cuda, reverse):
    """The array-array expression with the scalar in place of one operand."""
    scalar = "((T)scalar)"
    if reverse:  # f(scalar, in0)
        return cuda.replace("in0", "@").replace("in1", "in0").replace("@", scalar)
    return cuda.replace("in1", scalar)


def _camel(key, reverse):
    """MXNet's CamelCase alias: ``_PlusScalar``, ``_RMinusScalar``, ``_NotEqualScalar``."""
    parts = "".join(p.capitalize() for p in key.split("_"))
    return f"_{'R' if reverse else ''}{parts}Scalar"


def _register_scalar_form(key, np_name, cuda, rule, logical, reverse):
    name = f"_r{key}_scalar" if reverse else f"_{key}_scalar"
    if key == "sub":
        name = "_rminus_scalar" if reverse else "_minus_scalar"
    elif key == "add":
        name = "_plus_scalar"
    camel = _camel({"add": "plus", "sub": "minus"}.get(key, key), reverse)
    register(OpDef(
        name, aliases=(camel, *_np_aliases(key, "rscalar" if reverse else "scalar")),
        inputs=("data",),
        attrs={"scalar": Number(default=1, doc="the scalar operand"),
               "is_int": Bool(default=True, doc="whether the scalar was an int")},
        compute=_scalar_compute(np_name, reverse, logical), infer_shape=same_shape,
        grad=None if rule is None else _scalar_grad(key, reverse),
        cuda=_scalar_cuda(cuda, reverse), elementwise=True,
        lower=scalar_call(np_name, reverse), views=False,
        doc=f"Elementwise {key} of an array and a scalar"
            + (" (scalar on the left)." if reverse else ".")))


def _register_all():
    for table, logical in ((_ARITH, False), (_LOGIC, True)):
        for key, (np_name, cuda, rule, aliases) in table.items():
            _register_array_forms(key, np_name, cuda, rule, aliases, logical)
            _register_scalar_form(key, np_name, cuda, rule, logical, reverse=False)
            if key in ("sub", "div", "mod", "power"):
                _register_scalar_form(key, np_name, cuda, rule, logical, reverse=True)


_register_all()
