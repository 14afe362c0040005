"""MXNet's fused self-attention ops that GluonNLP's BERT calls:
``contrib.interleaved_matmul_selfatt_qk``, ``contrib.interleaved_matmul_selfatt_valatt`` and
``contrib.div_sqrt_dim``, each with its gradient.

The projections arrive interleaved: ``queries_keys_values`` is (seq, batch, heads * 3 * dim)
laid out as (seq, batch, heads, [q, k, v], dim). ``selfatt_qk`` gives the scaled scores
``q @ k.T / sqrt(dim)`` as (batch * heads, seq, seq); ``selfatt_valatt`` gives
``attention @ v`` back in (seq, batch, heads * dim).

Example:
    >>> import hybridgpu as mx
    >>> qkv = mx.nd.ones((5, 2, 2 * 3 * 4))
    >>> mx.nd.contrib.interleaved_matmul_selfatt_qk(qkv, heads=2).shape
    (4, 5, 5)
"""

from __future__ import annotations

import math

from ..base import MXNetError
from .attrs import Int
from .opdef import OpDef, register

__all__ = []


def _split(qkv, heads, op):
    """(q, k, v), each (batch * heads, seq, dim), views of ``qkv``."""
    seq, batch, width = qkv.shape
    if width % (3 * heads):
        raise MXNetError(f"{op}: the last axis ({width}) must be heads ({heads}) x 3 x dim")
    dim = width // (3 * heads)
    parts = qkv.reshape(seq, batch, heads, 3, dim).transpose(3, 1, 2, 0, 4)
    return tuple(parts[i].reshape(batch * heads, seq, dim) for i in range(3))


def _join(xp, q, k, v, seq, batch, heads):
    """The (seq, batch, heads * 3 * dim) array holding q, k, v (each (batch*heads, seq, dim))."""
    dim = q.shape[-1]
    stacked = xp.stack([a.reshape(batch, heads, seq, dim) for a in (q, k, v)], axis=3)
    return stacked.transpose(2, 0, 1, 3, 4).reshape(seq, batch, heads * 3 * dim)


def _scale(dtype, dim):
    return dtype.type(1.0 / math.sqrt(dim))


def _qk_compute(xp, qkv, *, heads):
    q, k, _ = _split(qkv, heads, "interleaved_matmul_selfatt_qk")
    return xp.matmul(q, k.transpose(0, 2, 1)) * _scale(qkv.dtype, q.shape[-1])


def _qk_shape(attrs, in_shapes):
    qkv = in_shapes[0]
    if qkv is None:
        return in_shapes, [None]
    return in_shapes, [(qkv[1] * attrs["heads"], qkv[0], qkv[0])]


def _qk_backward_compute(xp, ograd, qkv, *, heads):
    q, k, v = _split(qkv, heads, "interleaved_matmul_selfatt_qk")
    scale = _scale(qkv.dtype, q.shape[-1])
    dq = xp.matmul(ograd, k) * scale
    dk = xp.matmul(ograd.transpose(0, 2, 1), q) * scale
    return _join(xp, dq, dk, xp.zeros_like(v), qkv.shape[0], qkv.shape[1], heads)


def _valatt_compute(xp, qkv, attention, *, heads):
    _, _, v = _split(qkv, heads, "interleaved_matmul_selfatt_valatt")
    seq, batch = qkv.shape[:2]
    out = xp.matmul(attention, v)                       # (batch * heads, seq, dim)
    return out.reshape(batch, heads, seq, -1).transpose(2, 0, 1, 3).reshape(seq, batch, -1)


def _valatt_shape(attrs, in_shapes):
    qkv = in_shapes[0]
    if qkv is None:
        return in_shapes, [None]
    return in_shapes, [(qkv[0], qkv[1], qkv[2] // 3)]


def _valatt_backward_compute(xp, ograd, qkv, attention, *, heads):
    q, _, v = _split(qkv, heads, "interleaved_matmul_selfatt_valatt")
    seq, batch = qkv.shape[:2]
    g = ograd.reshape(seq, batch, heads, -1).transpose(1, 2, 0, 3).reshape(batch * heads, seq, -1)
    datt = xp.matmul(g, v.transpose(0, 2, 1))
    dv = xp.matmul(attention.transpose(0, 2, 1), g)
    zeros = xp.zeros_like(q)
    return _join(xp, zeros, zeros, dv, seq, batch, heads), datt


_HEADS = {"heads": Int(doc="number of attention heads")}

register(OpDef(
    "_contrib_interleaved_matmul_selfatt_qk", inputs=("queries_keys_values",), attrs=_HEADS,
    compute=_qk_compute, infer_shape=_qk_shape, infer_type=lambda a, t: (t, [t[0]]),
    grad=lambda F, ins, outs, gouts, heads: [
        F._backward_interleaved_matmul_selfatt_qk(gouts[0], ins[0], heads=heads)],
    views=False,
    doc="Scaled self-attention scores q @ k.T / sqrt(dim) of interleaved projections "
        "(seq, batch, heads*3*dim), as (batch*heads, seq, seq).",
    example="nd.contrib.interleaved_matmul_selfatt_qk(qkv, heads=12)"))

register(OpDef(
    "_backward_interleaved_matmul_selfatt_qk", inputs=("ograd", "queries_keys_values"),
    attrs=_HEADS, compute=_qk_backward_compute, infer_shape=lambda a, s: (s, [s[1]]),
    infer_type=lambda a, t: (t, [t[1]]), views=False,
    doc="Gradient of interleaved_matmul_selfatt_qk with respect to the projections.",
    example="nd._backward_interleaved_matmul_selfatt_qk(g, qkv, heads=12)"))

register(OpDef(
    "_contrib_interleaved_matmul_selfatt_valatt", inputs=("queries_keys_values", "attention"),
    attrs=_HEADS, compute=_valatt_compute, infer_shape=_valatt_shape,
    infer_type=lambda a, t: (t, [t[0]]),
    grad=lambda F, ins, outs, gouts, heads: list(
        F._backward_interleaved_matmul_selfatt_valatt(gouts[0], ins[0], ins[1], heads=heads)),
    views=False,
    doc="attention (batch*heads, seq, seq) @ the interleaved values, as (seq, batch, "
        "heads*dim).",
    example="nd.contrib.interleaved_matmul_selfatt_valatt(qkv, att, heads=12)"))

register(OpDef(
    "_backward_interleaved_matmul_selfatt_valatt",
    inputs=("ograd", "queries_keys_values", "attention"), attrs=_HEADS,
    compute=_valatt_backward_compute, infer_shape=lambda a, s: (s, [s[1], s[2]]),
    infer_type=lambda a, t: (t, [t[1], t[2]]), num_outputs=2, views=False,
    doc="Gradients of interleaved_matmul_selfatt_valatt (projections, attention).",
    example="dqkv, datt = nd._backward_interleaved_matmul_selfatt_valatt(g, qkv, att, heads=2)"))


def _div_sqrt_dim(xp, data):
    return data * _scale(data.dtype, data.shape[-1])


register(OpDef(
    "_contrib_div_sqrt_dim", compute=_div_sqrt_dim, infer_shape=lambda a, s: (s, [s[0]]),
    infer_type=lambda a, t: (t, [t[0]]),
    grad=lambda F, ins, outs, gouts: [F.contrib.div_sqrt_dim(gouts[0])], views=False,
    doc="data / sqrt(data.shape[-1]).",
    example="nd.contrib.div_sqrt_dim(nd.ones((2, 4)))  # all 0.5"))
