"""``FullyConnected``: its compute, shape inference that fills parameter shapes from the data
shape (Gluon's deferred init), its gradient as ops, and its lowering (one ``dot`` into the
output, then the bias added in place). ``Activation`` and ``LeakyReLU`` live with the
functions they dispatch to, in ``ops/activations.py``.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> fc = ops.get("FullyConnected")
    >>> fc.infer_shape(fc.parse_attrs({"num_hidden": 4}), [(2, 3, 5), None, None])
    ([(2, 3, 5), (4, 15), (4,)], [(2, 4)])
    >>> fc.lowering_for("array").kind
    'out'
"""

from __future__ import annotations

import math

from ..base import MXNetError
from .attrs import Bool, Int
from .lowering import Lowering, same_float
from .opdef import OpDef, register
from .rules import check_float

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


def _fc_emit(site):
    """``x @ w.T`` with one ``dot`` into the output (2-D views of both), then ``+= bias``."""
    x, w, b = (*site.ins, None)[:3]
    o = site.outs[0]
    rows = math.prod(site.out_shapes[0][:-1])
    hidden, cols = site.in_shapes[1]
    x2 = x if site.in_shapes[0] == (rows, cols) else site.view(x, (rows, cols))
    o2 = o if site.out_shapes[0] == (rows, hidden) else site.view(o, (rows, hidden))
    lines = [f"{site.xp}.dot({x2}, {w}.T, out={o2})"]  # compute's matmul, one BLAS call
    if b is not None:
        lines.append(f"{site.xp}.add({o2}, {b}, out={o2})")
    return lines


def _fc_lowers(site):
    return same_float(site) and len(site.in_shapes[1]) == 2


register(OpDef(
    "FullyConnected", inputs=("data", "weight", "bias"),
    input_filter=lambda a: ("data", "weight") if a["no_bias"] else ("data", "weight", "bias"),
    attrs={"num_hidden": Int(doc="number of output features"),
           "no_bias": Bool(default=False, doc="leave out the bias input"),
           "flatten": Bool(default=True, doc="collapse all axes but the first of data; "
                                             "False applies the layer to the last axis")},
    compute=_fc_compute, infer_shape=_fc_shape, grad=_fc_grad,
    lower=Lowering(_fc_emit, _fc_lowers), views=False,
    doc="Fully connected layer: data @ weight.T + bias, weight (num_hidden, in_units).",
    example="nd.FullyConnected(nd.ones((2, 5)), nd.ones((4, 5)), nd.zeros(4), "
            "num_hidden=4).shape  # (2, 4)"))
