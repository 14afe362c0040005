"""Ops of MXNet's NumPy interface (``mx.np``) whose semantics differ from the ``nd`` ops, under
the names MXNet 1.9 writes in JSON: ``_np_sum, _npi_mean, _np_max, _np_min, _np_prod,
_npi_std, _npi_var, _npi_argmax, _npi_argmin, _np_reshape, _npi_tensordot, _npi_matmul``.

NumPy's rules, kept here: a reduction over every axis gives shape ``()`` (``nd`` gives
``(1,)``); ``axis`` may be an int, a tuple or None; ``mean`` of an integer array is float32
(MXNet's default float), the other reductions keep the input's dtype; ``argmax``/``argmin``
give int64 indices. Gradients reuse the ``nd`` reductions' (``ops/reduce.py``).

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> s = ops.get("_np_sum")
    >>> s.compute(np, np.ones((2, 3)), **s.parse_attrs({})).shape
    ()
    >>> t = ops.get("_npi_tensordot")
    >>> t.compute(np, np.ones((2, 3)), np.ones((3, 4)),
    ...           **t.parse_attrs({"a_axes_summed": (1,), "b_axes_summed": (0,)})).shape
    (2, 4)
"""

from __future__ import annotations

import numpy as np

from ..limits import check_elements
from .attrs import Axis, Bool, DType, Float, Int, Shape, Str
from .opdef import OpDef, register
from .reduce import _extreme_grad, _mean_grad, _prod_grad, _sum_grad, reduction_axes

__all__ = ["np_reduced_shape"]


def np_reduced_shape(shape, axes, keepdims):
    """NumPy's result shape: reduced axes dropped (kept as 1 with ``keepdims``); may be ``()``.

    Example:
        >>> np_reduced_shape((2, 3), (0, 1), False), np_reduced_shape((2, 3), (1,), True)
        ((), (2, 1))
    """
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _np_axes(op, axis, shape):
    """Axes as NumPy reads them: None is every axis, ``()`` is none."""
    if axis == ():
        return ()
    return reduction_axes(op, axis, shape)


def _reduce_rule(op):
    def rule(attrs, in_shapes):
        shape = in_shapes[0]
        if shape is None:
            return in_shapes, [None]
        axes = _np_axes(op, attrs.get("axis"), shape)
        return in_shapes, [np_reduced_shape(shape, axes, attrs["keepdims"])]
    return rule


def _out_dtype(op, dtype, given=None):
    """``mean`` of integers or booleans is float32 (MXNet's default), ``sum``/``prod`` of
    booleans int64; everything else keeps its dtype (an int8 sum wraps, as in MXNet)."""
    if given:
        return given
    if op == "_npi_mean" and not np.issubdtype(np.dtype(dtype), np.floating):
        return "float32"
    if op in ("_np_sum", "_np_prod") and np.dtype(dtype) == np.bool_:
        return "int64"
    return np.dtype(dtype).name


def _reduce_type(op):
    def rule(attrs, in_types):
        dtype = in_types[0]
        return list(in_types), [None if dtype is None else _out_dtype(op, dtype,
                                                                       attrs.get("dtype"))]
    return rule


def _reduce_compute(op, fn_name):
    def compute(xp, x, axis=None, keepdims=False, dtype=None, ddof=0):
        axes = _np_axes(op, axis, x.shape)
        out_dtype = np.dtype(_out_dtype(op, x.dtype, dtype))
        extra = {"ddof": ddof} if fn_name in ("std", "var") else {}
        work = x.astype(out_dtype) if out_dtype.kind == "f" and x.dtype != out_dtype else x
        out = getattr(xp, fn_name)(work, axis=axes, keepdims=keepdims, **extra)
        return xp.asarray(out).astype(out_dtype, copy=False).reshape(
            np_reduced_shape(x.shape, axes, keepdims))
    return compute


def _plain_grad(grad):
    """A ``nd`` reduction gradient, called without the NumPy-only attributes."""
    def wrapped(F, ins, outs, gouts, axis=None, keepdims=False, dtype=None, ddof=0):
        if axis == ():
            return [gouts[0]]
        return grad(F, ins, outs, gouts, axis=axis, keepdims=keepdims)
    return wrapped


def _moment_grad(op):
    """var: g * 2 (x - mean) / (n - ddof); std: that over 2 std."""
    def grad(F, ins, outs, gouts, axis=None, keepdims=False, dtype=None, ddof=0):
        x = ins[0]
        axes = _np_axes(op, axis, x.shape)
        count = 1
        for i in axes:
            count *= x.shape[i]
        kept = np_reduced_shape(x.shape, axes, True)
        centred = F.broadcast_sub(x, F.mean(x, axis=axes, keepdims=True))
        g = F.reshape(gouts[0], shape=kept)
        if op == "_npi_std":
            g = F.broadcast_div(g, F._mul_scalar(F.reshape(outs[0], shape=kept), scalar=2.0))
        scale = 2.0 / max(count - ddof, 1)
        return [F.broadcast_mul(F._mul_scalar(centred, scalar=scale), g)]
    return grad


_AXIS = Axis(default=None, doc="axis or axes to reduce; None for all")
_KEEP = Bool(default=False, doc="keep reduced axes with size 1")

# name: (numpy function, gradient, takes dtype=, takes ddof=, doc)
_REDUCTIONS = {
    "_np_sum": ("sum", _plain_grad(_sum_grad), True, False, "Sum over the axes (np.sum)."),
    "_npi_mean": ("mean", _plain_grad(_mean_grad), True, False, "Mean (np.mean)."),
    "_np_max": ("max", _plain_grad(_extreme_grad("max")), False, False, "Maximum (np.max)."),
    "_np_min": ("min", _plain_grad(_extreme_grad("min")), False, False, "Minimum (np.min)."),
    "_np_prod": ("prod", _plain_grad(_prod_grad), True, False, "Product (np.prod)."),
    "_npi_std": ("std", _moment_grad("_npi_std"), True, True, "Standard deviation (np.std)."),
    "_npi_var": ("var", _moment_grad("_npi_var"), True, True, "Variance (np.var)."),
}


def _register_reductions():
    for name, (fn_name, grad, with_dtype, with_ddof, doc) in _REDUCTIONS.items():
        attrs = {"axis": _AXIS, "keepdims": _KEEP}
        if with_dtype:
            attrs["dtype"] = DType(default=None, doc="result dtype")
        if with_ddof:
            attrs["ddof"] = Int(default=0, doc="delta degrees of freedom")
        register(OpDef(name, attrs=attrs, compute=_reduce_compute(name, fn_name),
                       infer_shape=_reduce_rule(name), infer_type=_reduce_type(name), grad=grad,
                       doc=doc, views=False,
                       example=f"np.{fn_name}(np.ones((2, 3)), axis=1).shape  # (2,)"))


_register_reductions()


# -- argmax / argmin ------------------------------------------------------------------------

def _arg_compute(fn_name):
    def compute(xp, x, axis=None, keepdims=False):
        out = getattr(xp, fn_name)(x, axis=axis)
        if keepdims:
            shape = [1] * x.ndim if axis is None else list(x.shape)
            if axis is not None:
                shape[axis % x.ndim] = 1
            out = out.reshape(shape)
        return xp.asarray(out).astype(np.int64)
    return compute


def _arg_shape(attrs, in_shapes):
    shape, axis = in_shapes[0], attrs["axis"]
    if shape is None:
        return in_shapes, [None]
    axes = tuple(range(len(shape))) if axis is None else (axis % len(shape),)
    return in_shapes, [np_reduced_shape(shape, axes, attrs["keepdims"])]


for _name, _fn in (("_npi_argmax", "argmax"), ("_npi_argmin", "argmin")):
    register(OpDef(
        _name, attrs={"axis": Int(default=None, doc="the axis; None flattens"), "keepdims": _KEEP},
        compute=_arg_compute(_fn), infer_shape=_arg_shape,
        infer_type=lambda attrs, t: (list(t), ["int64"]), views=False,
        doc=f"Indices of the {_fn[3:]}imum along an axis (np.{_fn}), as int64."))


# -- reshape --------------------------------------------------------------------------------

def _np_reshape_shape(attrs, in_shapes):
    shape = in_shapes[0]
    if shape is None:
        return in_shapes, [None]
    return in_shapes, [np.empty(shape, dtype=np.bool_).reshape(attrs["newshape"]).shape]


def _np_reshape_grad(F, ins, outs, gouts, newshape=(), order="C"):
    return [F._np_reshape(gouts[0], newshape=ins[0].shape)]


register(OpDef(
    "_np_reshape", attrs={"newshape": Shape(doc="the new shape; one -1 is inferred"),
                          "order": Str(default="C", doc="only 'C' is supported")},
    compute=lambda xp, x, newshape, order="C": x.reshape(newshape),
    infer_shape=_np_reshape_shape, grad=_np_reshape_grad,
    doc="NumPy's reshape: -1 infers one dimension, () is a scalar's shape (np.reshape)."))


# -- tensordot and matmul -------------------------------------------------------------------

def _free_axes(ndim, summed):
    return [i for i in range(ndim) if i not in summed]


def _tensordot_grad(F, ins, outs, gouts, a_axes_summed=(), b_axes_summed=()):
    """dA = tensordot(G, B) over B's free axes, then A's axes put back in order (same for B)."""
    a, b = ins
    g = gouts[0]
    sa = [i % a.ndim for i in a_axes_summed]
    sb = [i % b.ndim for i in b_axes_summed]
    fa, fb = _free_axes(a.ndim, sa), _free_axes(b.ndim, sb)
    g_b = tuple(range(len(fa), len(fa) + len(fb)))  # G's axes that came from B
    g_a = tuple(range(len(fa)))
    da = F._npi_tensordot(g, b, a_axes_summed=g_b, b_axes_summed=tuple(fb))
    # da's axes: A's free axes, then B's summed axes in B's order, each standing for the
    # axis of A it was paired with
    order_a = fa + [sa[sb.index(s)] for s in sorted(sb)]
    da = F.transpose(da, axes=tuple(order_a.index(i) for i in range(a.ndim)))
    db = F._npi_tensordot(a, g, a_axes_summed=tuple(fa), b_axes_summed=g_a)
    order_b = [sb[sa.index(s)] for s in sorted(sa)] + fb
    db = F.transpose(db, axes=tuple(order_b.index(i) for i in range(b.ndim)))
    return [da, db]


def _tensordot_shape(attrs, in_shapes):
    a, b = in_shapes
    if a is None or b is None:
        return in_shapes, [None]
    sa = [i % len(a) for i in attrs["a_axes_summed"]]
    sb = [i % len(b) for i in attrs["b_axes_summed"]]
    for i, j in zip(sa, sb):
        if a[i] != b[j]:
            raise ValueError(f"shape-mismatch for sum: axis {i} of {a} vs axis {j} of {b}")
    out = [a[i] for i in _free_axes(len(a), sa)] + [b[i] for i in _free_axes(len(b), sb)]
    return in_shapes, [tuple(out)]


register(OpDef(
    "_npi_tensordot", inputs=("a", "b"),
    attrs={"a_axes_summed": Shape(doc="axes of a summed over"),
           "b_axes_summed": Shape(doc="axes of b summed over, paired with a's")},
    compute=lambda xp, a, b, a_axes_summed, b_axes_summed: xp.tensordot(
        a, b, axes=(list(a_axes_summed), list(b_axes_summed))),
    infer_shape=_tensordot_shape, grad=_tensordot_grad, views=False,
    doc="Sum of products over the paired axes (np.tensordot)."))


def _matmul_shape(attrs, in_shapes):
    a, b = in_shapes
    if a is None or b is None:
        return in_shapes, [None]
    if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
        raise ValueError(f"matmul: shapes {a} and {b} do not fit (a[-1] must equal b[-2])")
    batch = np.broadcast_shapes(a[:-2], b[:-2])
    return in_shapes, [tuple(batch) + (a[-2], b[-1])]


def _matmul_grad(F, ins, outs, gouts):
    a, b = ins
    g = gouts[0]
    da = F._npi_matmul(g, F.swapaxes(b, dim1=-1, dim2=-2))
    db = F._npi_matmul(F.swapaxes(a, dim1=-1, dim2=-2), g)
    return [F._reduce_sum_like(da, a), F._reduce_sum_like(db, b)]


register(OpDef(
    "_npi_matmul", inputs=("a", "b"), compute=lambda xp, a, b: xp.matmul(a, b),
    infer_shape=_matmul_shape, grad=_matmul_grad, views=False,
    doc="Matrix product of stacks of matrices, batch axes broadcast (np.matmul; inputs of 2 "
        "or more dims: mx.np.matmul reshapes vectors around it)."))


# -- creation -------------------------------------------------------------------------------

def _np_fill(fill):
    def compute(xp, shape=(), dtype="float32", value=0.0):
        check_elements(shape, f"np.{fill}")
        if fill == "full":
            return xp.full(shape, np.dtype(dtype).type(value), dtype=dtype)
        return getattr(xp, fill)(shape, dtype=dtype)
    return compute


def _np_fill_shape(attrs, in_shapes):
    return list(in_shapes), [tuple(attrs["shape"])]


def _np_fill_type(attrs, in_types):
    return list(in_types), [attrs["dtype"]]


_NP_FILL_ATTRS = {"shape": Shape(default=(), doc="the shape; () is a scalar's, 0 dims allowed"),
                  "dtype": DType(default="float32", doc="the dtype of the output")}
for _name, _fill in (("_npi_zeros", "zeros"), ("_npi_ones", "ones"), ("_npi_full", "full")):
    _attrs = dict(_NP_FILL_ATTRS)
    if _fill == "full":
        _attrs["value"] = Float(doc="the fill value")
    register(OpDef(
        _name, inputs=(), attrs=_attrs, compute=_np_fill(_fill), infer_shape=_np_fill_shape,
        infer_type=_np_fill_type, creation=True,
        doc=f"np.{_fill}: NumPy shapes (() is a scalar's, 0 a zero-size axis)."))


# -- cumsum ---------------------------------------------------------------------------------

def _cumsum_compute(xp, x, axis=None, dtype=None):
    out = xp.cumsum(x.reshape(-1) if axis is None else x, axis=0 if axis is None else axis)
    return out.astype(dtype or x.dtype, copy=False)


def _cumsum_shape(attrs, in_shapes):
    shape = in_shapes[0]
    if shape is None:
        return in_shapes, [None]
    if attrs["axis"] is None:
        size = 1
        for d in shape:
            size *= d
        return in_shapes, [(size,)]
    return in_shapes, [shape]


def _cumsum_grad(F, ins, outs, gouts, axis=None, dtype=None):
    """The gradient of a running sum is the running sum from the other end."""
    x, g = ins[0], gouts[0]
    along = 0 if axis is None else axis
    back = F.flip(F._np_cumsum(F.flip(g, axis=along), axis=along), axis=along)
    return [F._np_reshape(back, newshape=x.shape) if axis is None else back]


register(OpDef(
    "_np_cumsum", inputs=("a",),
    attrs={"axis": Int(default=None, doc="the axis; None flattens first"),
           "dtype": DType(default=None, doc="the result dtype")},
    compute=_cumsum_compute, infer_shape=_cumsum_shape,
    infer_type=lambda attrs, t: (list(t), [attrs["dtype"] or t[0]]), grad=_cumsum_grad,
    views=False, doc="Running sum along an axis (np.cumsum)."))
