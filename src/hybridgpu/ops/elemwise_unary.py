"""Unary elementwise math ops: one table row per op gives its NumPy/CuPy compute, its CUDA
expression over ``in0`` and its gradient written as ops.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> ops.get("relu").compute(np, np.array([-1.0, 2.0]))
    array([0., 2.])
    >>> ops.get("relu").cuda
    '(in0 > (T)0 ? in0 : (T)0)'
"""

from __future__ import annotations

from .opdef import OpDef, register
from .rules import same_shape

__all__ = []


def _unary(name, compute, cuda, grad_rule=None, aliases=(), doc=""):
    """Register ``name``; ``grad_rule(F, x, y, g)`` returns the gradient with respect to x."""

    def grad(F, ins, outs, gouts):
        return [grad_rule(F, ins[0], outs[0], gouts[0])]

    register(OpDef(name, aliases=aliases, inputs=("data",), compute=compute,
                   infer_shape=same_shape, grad=grad if grad_rule else None, cuda=cuda,
                   elementwise=True, doc=doc or f"Elementwise {name}."))


_unary("relu", lambda xp, x: xp.maximum(x, x.dtype.type(0)), "(in0 > (T)0 ? in0 : (T)0)",
       lambda F, x, y, g: F.broadcast_mul(g, F._greater_scalar(x, scalar=0)),
       doc="Rectified linear unit, max(x, 0).")
_unary("negative", lambda xp, x: xp.negative(x), "-in0",
       lambda F, x, y, g: F.negative(g), doc="Elementwise -x.")
_unary("abs", lambda xp, x: xp.abs(x), "abs(in0)",
       lambda F, x, y, g: F.broadcast_mul(g, F.sign(x)), doc="Elementwise |x|.")
_unary("sign", lambda xp, x: xp.sign(x), "(T)((in0 > (T)0) - (in0 < (T)0))",
       lambda F, x, y, g: F.zeros_like(g), doc="Elementwise sign: -1, 0 or 1.")
_unary("floor", lambda xp, x: xp.floor(x), "floor(in0)",
       lambda F, x, y, g: F.zeros_like(g), doc="Elementwise floor.")
_unary("exp", lambda xp, x: xp.exp(x), "exp(in0)",
       lambda F, x, y, g: F.broadcast_mul(g, y), doc="Elementwise e**x.")
_unary("log", lambda xp, x: xp.log(x), "log(in0)",
       lambda F, x, y, g: F.broadcast_div(g, x), doc="Elementwise natural logarithm.")
