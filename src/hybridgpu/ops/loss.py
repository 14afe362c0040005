"""Loss-head ops: their gradient is the loss gradient itself and ignores the incoming head
gradient, so ``backward()`` needs no ``out_grads`` (MXNet's ``MakeLoss``, ``make_loss``,
``LinearRegressionOutput``, ``LogisticRegressionOutput``, ``MAERegressionOutput``).

The regression outputs scale by ``grad_scale / num_output`` with ``num_output`` the label's
size per batch row, as MXNet does; their forward is the identity (sigmoid for logistic).

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> op = ops.get("LogisticRegressionOutput")
    >>> op.compute(np, np.array([[0.0]]), np.array([[1.0]]), grad_scale=1.0)
    array([[0.5]])
"""

from __future__ import annotations

from .attrs import Enum, Float
from .opdef import OpDef, register
from .rules import same_shape

__all__ = []


def _copy(xp, x, **_):
    return x.copy()


def _make_loss_grad(F, ins, outs, gouts, grad_scale=1.0, valid_thresh=0.0,
                    normalization="null"):
    (x,) = ins
    if normalization == "batch":
        grad_scale = grad_scale / x.shape[0]
    grad = F._mul_scalar(F.ones_like(x), scalar=grad_scale)
    if normalization == "valid":
        valid = F.sum(F._greater_scalar(x, scalar=valid_thresh))
        grad = F.broadcast_div(grad, F._maximum_scalar(valid, scalar=1))
    return [grad]


register(OpDef(
    "MakeLoss", inputs=("data",),
    attrs={"grad_scale": Float(default=1.0, doc="the gradient's value"),
           "valid_thresh": Float(default=0.0, doc="elements above it count as valid"),
           "normalization": Enum(("null", "batch", "valid"), default="null",
                                 doc="divide the gradient by the batch size or valid count")},
    compute=_copy, infer_shape=same_shape, grad=_make_loss_grad,
    doc="Marks its input as a loss: forward is the identity, the gradient is grad_scale "
        "(optionally normalized), whatever the head gradient."))
register(OpDef(
    "make_loss", inputs=("data",), compute=_copy, infer_shape=same_shape,
    grad=lambda F, ins, outs, gouts: [F.ones_like(ins[0])],
    doc="Marks its input as a loss: forward is the identity, the gradient is ones."))


def _label_shape(attrs, in_shapes):
    data, label = in_shapes
    if label is None and data is not None:
        label = data
    return [data, label], [data]


def _regression_grad(kind):
    def grad(F, ins, outs, gouts, grad_scale=1.0):
        data, label = ins
        per_row = 1
        for d in label.shape[1:]:
            per_row *= d
        diff = F.broadcast_sub(outs[0], F.reshape_like(label, outs[0]))
        if kind == "mae":
            diff = F.sign(diff)
        return [F._mul_scalar(diff, scalar=grad_scale / per_row), None]

    return grad


def _register_regression(name, kind, compute, what):
    register(OpDef(
        name, inputs=("data", "label"), nondiff_inputs=("label",),
        attrs={"grad_scale": Float(default=1.0, doc="scales the gradient")},
        compute=compute, infer_shape=_label_shape, grad=_regression_grad(kind),
        doc=f"{what} regression loss head: the gradient is "
            + ("sign(out - label)" if kind == "mae" else "(out - label)")
            + " * grad_scale / (label size per row), ignoring the head gradient."))


_register_regression("LinearRegressionOutput", "linear",
                     lambda xp, x, label, **_: x.copy(), "Least-squares")
_register_regression("LogisticRegressionOutput", "logistic",
                     lambda xp, x, label, **_: 1 / (1 + xp.exp(-x)), "Logistic (sigmoid)")
_register_regression("MAERegressionOutput", "mae",
                     lambda xp, x, label, **_: x.copy(), "Mean-absolute-error")
