"""The remaining nn ops: ``Dropout``, ``Embedding`` (and its hidden ``_backward_Embedding``),
the softmax family (``softmax``, ``log_softmax``, ``softmin``, ``SoftmaxActivation``,
``SoftmaxOutput``, ``softmax_cross_entropy``) and the sequence ops (``SequenceMask``,
``SequenceLast``, ``SequenceReverse``), with MXNet 1.9's names, attributes and gradients.

Behaviour checked against MXNet 1.9.1:

* ``Dropout`` has two outputs, ``(output, mask)``, one visible; the mask holds ``keep/(1-p)``
  so that ``output = data * mask`` and the gradient is ``out_grad * mask``. ``axes`` lists the
  axes along which one mask value is shared. In predict mode (``mode='training'``) it is the
  identity with a mask of ones; ``mode='always'`` drops in predict mode too.
* ``Embedding`` truncates float indices toward zero and clips them into ``[0, input_dim)``;
  its output has the weight's dtype and the indices get no gradient.
* ``softmax``'s optional ``length`` input (with ``use_length=True``) must be an integer array
  of the data's shape without ``axis``; masked positions give 0 (a length of 0 gives a row of
  zeros). ``log_softmax`` and ``softmin`` take no length input in MXNet 1.9.
* ``SoftmaxOutput``'s gradient ignores the incoming gradient: it is
  ``(softmax - one_hot(label)) * grad_scale``, with label smoothing by ``smooth_alpha`` (which
  MXNet ignores with ``multi_output``) and the rows labelled ``ignore_label`` zeroed with
  ``use_ignore``, divided by the label count (``normalization='batch'``), by the count of
  labels other than ``ignore_label`` (``'valid'``, counted with or without ``use_ignore``) or,
  with ``multi_output`` and ``'null'``, by the number of spatial positions. Labels out of range
  contribute no one-hot term. With ``out_grad=True`` it is multiplied by the incoming
  gradient, as documented (MXNet 1.9.1 multiplies by the softmax output instead, a bug not
  copied here).
* ``SoftmaxActivation`` (mode 'instance') takes the softmax over the last axis, as MXNet 1.9's
  forward does; its gradient here is that softmax's derivative (MXNet 1.9's backward reduces
  over axis 1 instead for data of more than 2 dims, which does not match its own forward).
* ``SequenceMask`` truncates lengths toward zero and sets positions ``t >= length`` to ``value``.
  ``SequenceLast`` picks step ``length - 1`` and ``SequenceReverse`` (axis 0 only) reverses the
  first ``length`` steps; MXNet reads out of bounds for lengths outside ``[1, T]``, here they
  are clipped into range.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> sm = ops.get("softmax")
    >>> sm.compute(np, np.zeros((1, 4)), **sm.parse_attrs({})).tolist()
    [[0.25, 0.25, 0.25, 0.25]]
    >>> emb = ops.get("Embedding")
    >>> emb.compute(np, np.array([1.0, 9.0]), np.arange(6.0).reshape(3, 2),
    ...             **emb.parse_attrs({"input_dim": 3, "output_dim": 2})).tolist()
    [[2.0, 3.0], [4.0, 5.0]]
"""

from __future__ import annotations

import math

import numpy as np

from ..base import MXNetError
from .attrs import Bool, DType, Enum, Float, Int, Shape
from .lowering import Lowering, same_float
from .opdef import OpDef, register
from .rules import merge_shapes, normalize_axis, same_shape

__all__ = []


def _dtype_name(x):
    """The dtype name of an NDArray or Symbol (``.dtype`` is a NumPy type on both)."""
    return np.dtype(x.dtype).name


# -- Dropout --------------------------------------------------------------------------------

def _dropout_compute(xp, data, *, p, mode, axes, cudnn_off=False, rng=None, is_train=False):
    if not 0.0 <= p <= 1.0:
        raise MXNetError(f"Dropout: p must be in [0, 1], got {p}")
    if not (is_train or mode == "always") or p == 0.0:
        return data.copy(), xp.ones_like(data)
    shared = {normalize_axis(a, data.ndim, "Dropout") for a in axes}
    mask_shape = tuple(1 if i in shared else d for i, d in enumerate(data.shape))
    keep = rng.uniform(0.0, 1.0, size=mask_shape) >= p
    scale = 1.0 / (1.0 - p) if p < 1.0 else 0.0  # MXNet gives NaN at p = 1; zeros is the limit
    mask = xp.broadcast_to(keep * data.dtype.type(scale), data.shape).astype(data.dtype)
    return data * mask, mask


def _emit_dropout_identity(site):
    xp, x, (o, mask) = site.xp, site.ins[0], (*site.outs, None)[:2]
    lines = [f"{xp}.copyto({o}, {x})"]
    if mask is not None:
        lines.append(f"{mask}.fill(1)")
    return lines


def _dropout_is_identity(site):
    attrs = site.attrs
    identity = not (site.is_train or attrs["mode"] == "always") or attrs["p"] == 0.0
    return identity and 0.0 <= attrs["p"] <= 1.0 and same_float(site)


register(OpDef(
    "Dropout", inputs=("data",),
    attrs={"p": Float(default=0.5, doc="fraction of the input dropped in training"),
           "mode": Enum(("always", "training"), default="training",
                        doc="'training': only in train mode; 'always': in predict mode too"),
           "axes": Shape(default=(), doc="axes along which one mask value is shared"),
           "cudnn_off": Bool(default=False, optional=True, doc="accepted; no effect")},
    compute=_dropout_compute, infer_shape=lambda a, s: same_shape(a, s, 2),
    grad=lambda F, ins, outs, gouts, **a: [F.elemwise_mul(gouts[0], outs[1])],
    num_outputs=2, num_visible_outputs=1, output_names=("output", "mask"), random=True,
    mode_dependent=True, views=False,
    lower=Lowering(_emit_dropout_identity, _dropout_is_identity, inplace=(0,)),
    doc="Zero each element with probability p and scale the rest by 1/(1-p) (in train mode, "
        "or always with mode='always'); the identity otherwise.",
    example="nd.Dropout(x, p=0.2).shape  # x.shape"))


# -- Embedding ------------------------------------------------------------------------------

_EMB_ATTRS = {
    "input_dim": Int(doc="vocabulary size (rows of weight)"),
    "output_dim": Int(doc="embedding size (columns of weight)"),
    "dtype": DType(default="float32", doc="dtype of the weight"),
    "sparse_grad": Bool(default=False, doc="accepted; the gradient is always dense here"),
}


def _indices(xp, data, input_dim):
    """MXNet's index rule: truncate toward zero, then clip into ``[0, input_dim)``."""
    return xp.clip(data.astype(np.int64), 0, input_dim - 1)


def _emb_compute(xp, data, weight, *, input_dim, output_dim, dtype="float32", sparse_grad=False):
    if tuple(weight.shape) != (input_dim, output_dim):
        raise MXNetError(f"Embedding: weight must have shape (input_dim, output_dim) = "
                         f"({input_dim}, {output_dim}), got {tuple(weight.shape)}")
    return xp.take(weight, _indices(xp, data, input_dim), axis=0)


def _emb_shape(attrs, in_shapes):
    data, weight = in_shapes
    want = (attrs["input_dim"], attrs["output_dim"])
    weight = merge_shapes(weight, want, "Embedding: weight shape vs (input_dim, output_dim)")
    out = None if data is None else (*data, attrs["output_dim"])
    return [data, weight], [out]


def _emb_type(attrs, in_types):
    weight = in_types[1] or attrs["dtype"]
    return [in_types[0], weight], [weight]


def _emb_grad(F, ins, outs, gouts, input_dim, output_dim, dtype="float32", sparse_grad=False):
    dweight = F._backward_Embedding(gouts[0], ins[0], input_dim=input_dim,
                                    output_dim=output_dim, dtype=dtype)
    return [None, dweight]


register(OpDef(
    "Embedding", inputs=("data", "weight"), attrs=_EMB_ATTRS, compute=_emb_compute,
    infer_shape=_emb_shape, infer_type=_emb_type, grad=_emb_grad, nondiff_inputs=("data",),
    doc="Look up rows of ``weight`` (input_dim, output_dim) by the indices in ``data``.",
    example="nd.Embedding(nd.array([[1, 3]]), w, input_dim=4, output_dim=5).shape  # (1, 2, 5)"))


def _scatter_add(xp, target, index, values):
    """``target[index] += values`` with repeated indices accumulated, on NumPy or CuPy."""
    if xp is np:
        np.add.at(target, index, values)
        return target
    import cupyx  # only reached with CuPy arrays, which have cupyx beside them

    cupyx.scatter_add(target, index, values)
    return target


def _emb_backward_compute(xp, ograd, data, *, input_dim, output_dim, dtype="float32",
                          sparse_grad=False):
    rows = _indices(xp, data, input_dim).reshape(-1)
    dweight = xp.zeros((input_dim, output_dim), dtype=ograd.dtype)
    return _scatter_add(xp, dweight, rows, ograd.reshape(-1, output_dim))


def _emb_backward_shape(attrs, in_shapes):
    ograd, data = in_shapes
    if data is not None:
        ograd = merge_shapes(ograd, (*data, attrs["output_dim"]),
                             "_backward_Embedding: ograd shape vs data.shape + (output_dim,)")
    return [ograd, data], [(attrs["input_dim"], attrs["output_dim"])]


register(OpDef(
    "_backward_Embedding", inputs=("ograd", "data"), attrs=_EMB_ATTRS,
    compute=_emb_backward_compute, infer_shape=_emb_backward_shape,
    infer_type=lambda a, t: ([t[0], t[1]], [t[0]]), nondiff_inputs=("data",),
    grad=lambda F, ins, outs, gouts, **a: [
        F.Embedding(ins[1], gouts[0], input_dim=a["input_dim"], output_dim=a["output_dim"],
                    dtype=a["dtype"]), None],
    doc="Gradient of Embedding's weight: the rows of ``ograd`` summed into the rows their "
        "indices name (a scatter-add).",
    example="nd._backward_Embedding(g, idx, input_dim=4, output_dim=5).shape  # (4, 5)"))


# -- softmax family -------------------------------------------------------------------------

_SOFTMAX_ATTRS = {
    "axis": Int(default=-1, doc="the axis softmax runs along"),
    "temperature": Float(default=None, doc="divide the input by this first (None: 1)"),
    "dtype": DType(default=None, doc="output dtype (float16/32/64); None: the input's"),
    "use_length": Bool(default=False, optional=True, doc="mask with the length input"),
}
_FLOATS = ("float16", "float32", "float64")


def _out_dtype(op, data_dtype, dtype):
    if dtype is not None and dtype not in _FLOATS:
        raise MXNetError(f"{op}: dtype must be one of {list(_FLOATS)} or None, got {dtype!r}")
    return dtype or data_dtype


def _length_mask(xp, op, data, ax, length):
    want = data.shape[:ax] + data.shape[ax + 1:]
    if length.dtype.kind not in "iu":
        raise MXNetError(f"{op}: length must be an integer array, got {length.dtype.name}")
    if tuple(length.shape) != want:
        raise MXNetError(f"{op}: length must have shape {want} (data's shape without axis "
                         f"{ax}), got {tuple(length.shape)}")
    positions = xp.arange(data.shape[ax]).reshape(
        tuple(-1 if i == ax else 1 for i in range(data.ndim)))
    return positions < xp.expand_dims(length, ax)


def _softmax_core(xp, op, data, axis, temperature=None, dtype=None, length=None, sign=1.0,
                  log=False):
    """softmax (or log-softmax) of ``sign * data / temperature`` along ``axis``."""
    ax = normalize_axis(axis, data.ndim, op)
    out_dtype = _out_dtype(op, data.dtype.name, dtype)
    z = data.astype(np.result_type(data.dtype, out_dtype, np.float32), copy=False)
    scale = sign / (1.0 if temperature is None else temperature)
    if scale != 1.0:
        z = z * z.dtype.type(scale)
    mask = None if length is None else _length_mask(xp, op, data, ax, length)
    if mask is not None:
        z = xp.where(mask, z, z.dtype.type(-np.inf))
    top = z.max(axis=ax, keepdims=True)
    if mask is not None:  # rows of length 0: every entry is -inf
        top = xp.where(xp.isfinite(top), top, top.dtype.type(0))
    shifted = z - top
    e = xp.exp(shifted)
    total = e.sum(axis=ax, keepdims=True)
    if log:
        out = shifted - xp.log(total)
    else:
        if mask is not None:
            total = xp.where(total == 0, total.dtype.type(1), total)
        out = e / total
    return out.astype(out_dtype, copy=False)


def _no_length(op, use_length):
    if use_length:
        raise MXNetError(f"{op}: use_length=True is not supported; MXNet 1.9 gives the length "
                         "input only to softmax")


def _softmax_compute(xp, data, length=None, *, axis=-1, temperature=None, dtype=None,
                     use_length=False):
    return _softmax_core(xp, "softmax", data, axis, temperature, dtype,
                         length if use_length else None)


def _log_softmax_compute(xp, data, *, axis=-1, temperature=None, dtype=None, use_length=False):
    _no_length("log_softmax", use_length)
    return _softmax_core(xp, "log_softmax", data, axis, temperature, dtype, log=True)


def _softmin_compute(xp, data, *, axis=-1, temperature=None, dtype=None, use_length=False):
    _no_length("softmin", use_length)
    return _softmax_core(xp, "softmin", data, axis, temperature, dtype, sign=-1.0)


def _softmax_shape(attrs, in_shapes):
    data = in_shapes[0]
    if len(in_shapes) == 1 or data is None:
        return in_shapes, [data]
    ax = normalize_axis(attrs["axis"], len(data), "softmax")
    length = merge_shapes(in_shapes[1], data[:ax] + data[ax + 1:],
                          "softmax: length shape vs data's shape without axis")
    return [data, length], [data]


def _softmax_type(op):
    def rule(attrs, in_types):
        data = in_types[0]
        out = None if data is None else _out_dtype(op, data, attrs["dtype"])
        return list(in_types), [out]

    return rule


def _finish_grad(F, gx, data, temperature, dtype, sign=1.0):
    """Scale by ``sign / temperature`` and cast back to the data's dtype when ``dtype`` moved
    the output to another one."""
    scale = sign / (1.0 if temperature is None else temperature)
    if scale != 1.0:
        gx = F._mul_scalar(gx, scalar=scale)
    if dtype is not None and dtype != _dtype_name(data):
        gx = F.Cast(gx, dtype=_dtype_name(data))
    return gx


def _softmax_input_grad(F, out, g, axis):
    """d/dz of softmax(z) along ``axis``: ``out * (g - sum(g * out))``."""
    inner = F.sum(F.broadcast_mul(g, out), axis=axis, keepdims=True)
    return F.broadcast_mul(out, F.broadcast_sub(g, inner))


def _softmax_grad(sign):
    def grad(F, ins, outs, gouts, axis=-1, temperature=None, dtype=None, use_length=False):
        gx = _softmax_input_grad(F, outs[0], gouts[0], axis)
        return [_finish_grad(F, gx, ins[0], temperature, dtype, sign)] + [None] * (len(ins) - 1)

    return grad


def _log_softmax_grad(F, ins, outs, gouts, axis=-1, temperature=None, dtype=None,
                      use_length=False):
    g = gouts[0]
    gx = F.broadcast_sub(g, F.broadcast_mul(F.exp(outs[0]),
                                            F.sum(g, axis=axis, keepdims=True)))
    return [_finish_grad(F, gx, ins[0], temperature, dtype)]


register(OpDef(
    "softmax", inputs=("data", "length"),
    input_filter=lambda a: ("data", "length") if a["use_length"] else ("data",),
    attrs=_SOFTMAX_ATTRS, compute=_softmax_compute, infer_shape=_softmax_shape,
    infer_type=_softmax_type("softmax"), grad=_softmax_grad(1.0), nondiff_inputs=("length",),
    doc="exp(x / t) normalized to sum to 1 along ``axis``; with use_length, positions past "
        "``length`` are 0.",
    example="nd.softmax(nd.array([[1, 1]])).asnumpy()  # [[0.5, 0.5]]"))
register(OpDef(
    "log_softmax", inputs=("data",), attrs=_SOFTMAX_ATTRS, compute=_log_softmax_compute,
    infer_shape=same_shape, infer_type=_softmax_type("log_softmax"), grad=_log_softmax_grad,
    doc="log(softmax(x / t)) along ``axis``, computed stably.",
    example="nd.log_softmax(nd.array([1, 2, 0.1]))"))
register(OpDef(
    "softmin", inputs=("data",), attrs=_SOFTMAX_ATTRS, compute=_softmin_compute,
    infer_shape=same_shape, infer_type=_softmax_type("softmin"), grad=_softmax_grad(-1.0),
    doc="softmax(-x / t) along ``axis``.",
    example="nd.softmin(nd.array([[1, 2, 3]]))"))


def _softmax_activation_axis(op, ndim, mode):
    if mode == "channel":
        if ndim < 3:
            raise MXNetError(f"{op}: mode='channel' needs data of at least 3 dims, got {ndim}")
        return 1
    return ndim - 1


def _softmax_activation_compute(xp, data, *, mode="instance"):
    ax = _softmax_activation_axis("SoftmaxActivation", data.ndim, mode)
    return _softmax_core(xp, "SoftmaxActivation", data, ax)


def _softmax_activation_grad(F, ins, outs, gouts, mode="instance"):
    ax = _softmax_activation_axis("SoftmaxActivation", len(ins[0].shape), mode)
    return [_softmax_input_grad(F, outs[0], gouts[0], ax)]


register(OpDef(
    "SoftmaxActivation", inputs=("data",),
    attrs={"mode": Enum(("channel", "instance"), default="instance",
                        doc="'instance': softmax over the last axis; 'channel': over axis 1")},
    compute=_softmax_activation_compute, infer_shape=same_shape,
    grad=_softmax_activation_grad,
    doc="Softmax over the last axis (mode='instance') or axis 1 (mode='channel'); deprecated "
        "in MXNet in favour of softmax.",
    example="nd.SoftmaxActivation(nd.array([[1, 1]]))"))


# -- SoftmaxOutput --------------------------------------------------------------------------

_SO_ATTRS = {
    "grad_scale": Float(default=1.0, doc="scales the gradient"),
    "ignore_label": Float(default=-1.0, doc="label value ignored in the gradient (use_ignore)"),
    "multi_output": Bool(default=False, doc="softmax along axis 1 at every position"),
    "use_ignore": Bool(default=False, doc="zero the gradient of rows labelled ignore_label"),
    "preserve_shape": Bool(default=False, doc="softmax along the last axis"),
    "normalization": Enum(("batch", "null", "valid"), default="null",
                          doc="divide the gradient by the label count ('batch'), the count "
                              "not ignored ('valid') or nothing ('null')"),
    "out_grad": Bool(default=False, doc="multiply the gradient by the incoming gradient"),
    "smooth_alpha": Float(default=0.0, doc="label smoothing of the one-hot target"),
}


def _so_layout(shape, multi_output, preserve_shape):
    """``(kind, classes, label shape)``: kind is 'multi' (classes on axis 1), 'last' (classes
    on the last axis) or 'flat' (MXNet's default for >2-dim data: one softmax over all but
    axis 0)."""
    if len(shape) < 2:
        raise MXNetError(f"SoftmaxOutput: data must have at least 2 dims (batch, classes...), "
                         f"got shape {tuple(shape)}")
    if multi_output:
        return "multi", shape[1], (shape[0], math.prod(shape[2:]))
    if preserve_shape or len(shape) == 2:
        return "last", shape[-1], tuple(shape[:-1])
    return "flat", math.prod(shape[1:]), (shape[0],)


def _so_label_check(shape, label_shape, attrs):
    _, _, want = _so_layout(shape, attrs["multi_output"], attrs["preserve_shape"])
    ok = tuple(label_shape) == want or (
        attrs["multi_output"] and tuple(label_shape[:1]) == want[:1]
        and math.prod(label_shape) == math.prod(want))
    if not ok:
        raise MXNetError(f"SoftmaxOutput: label must have shape {want} for data of shape "
                         f"{tuple(shape)}, got {tuple(label_shape)}")
    return want


def _so_compute(xp, data, label, **attrs):
    kind, classes, _ = _so_layout(data.shape, attrs["multi_output"], attrs["preserve_shape"])
    _so_label_check(data.shape, label.shape, attrs)
    if kind == "flat":
        flat = _softmax_core(xp, "SoftmaxOutput", data.reshape(data.shape[0], classes), 1)
        return flat.reshape(data.shape)
    return _softmax_core(xp, "SoftmaxOutput", data, 1 if kind == "multi" else -1)


def _so_shape(attrs, in_shapes):
    data, label = in_shapes
    if data is None:
        return in_shapes, [None]
    if label is not None and all(label) and all(data):
        _so_label_check(data, label, attrs)
    else:
        _, _, want = _so_layout(data, attrs["multi_output"], attrs["preserve_shape"])
        label = merge_shapes(label, want, "SoftmaxOutput: label shape")
    return [data, label], [data]


def _so_target(F, data, label, attrs):
    """The (smoothed) one-hot target in data's layout and the label laid out to broadcast
    against it (for the ignore mask)."""
    shape = tuple(data.shape)
    kind, classes, _ = _so_layout(shape, attrs["multi_output"], attrs["preserve_shape"])
    dtype = _dtype_name(data)
    if kind == "multi":
        flat = F.one_hot(F.reshape(label, shape=(shape[0], -1)), depth=classes, dtype=dtype)
        target = F.reshape(F.transpose(flat, axes=(0, 2, 1)), shape=shape)
        label_b = F.reshape(label, shape=(shape[0], 1, *shape[2:]))
    elif kind == "last":
        target = F.one_hot(label, depth=classes, dtype=dtype)
        label_b = F.reshape(label, shape=(*shape[:-1], 1))
    else:
        target = F.reshape(F.one_hot(label, depth=classes, dtype=dtype), shape=shape)
        label_b = F.reshape(label, shape=(shape[0],) + (1,) * (len(shape) - 1))
    alpha = attrs["smooth_alpha"]
    if alpha and kind != "multi":  # MXNet 1.9 applies no smoothing with multi_output
        off = alpha / max(classes - 1, 1)
        target = F._plus_scalar(F._mul_scalar(target, scalar=1.0 - alpha - off), scalar=off)
    return target, label_b, kind


def _so_grad(F, ins, outs, gouts, **attrs):
    """MXNet's SoftmaxOutput gradient: not the derivative of the output (see module doc)."""
    data, label = ins
    target, label_b, kind = _so_target(F, data, label, attrs)
    grad = F.broadcast_sub(outs[0], target)
    norm = attrs["normalization"]
    keep = None
    if attrs["use_ignore"] or norm == "valid":
        keep = F._not_equal_scalar(label_b, scalar=attrs["ignore_label"])
    if attrs["use_ignore"]:
        grad = F.broadcast_mul(grad, keep)
    if attrs["out_grad"]:
        grad = F.broadcast_mul(grad, gouts[0])
    scale = attrs["grad_scale"]
    if norm == "batch":
        scale /= math.prod(label.shape)
    elif norm == "null" and kind == "multi":
        scale /= math.prod(data.shape[2:])
    elif norm == "valid":  # labels other than ignore_label, counted even without use_ignore
        grad = F.broadcast_div(grad, F._maximum_scalar(F.sum(keep), scalar=1))
    if scale != 1.0:
        grad = F._mul_scalar(grad, scalar=scale)
    return [grad, None]


register(OpDef(
    "SoftmaxOutput", aliases=("Softmax",), inputs=("data", "label"), attrs=_SO_ATTRS,
    compute=_so_compute, infer_shape=_so_shape,
    infer_type=lambda a, t: ([t[0], t[1] or t[0]], [t[0]]), grad=_so_grad,
    nondiff_inputs=("label",),
    doc="Softmax whose gradient is the cross-entropy gradient (softmax - one_hot(label)) * "
        "grad_scale, ignoring the incoming gradient (MXNet's output-layer op).",
    example="nd.SoftmaxOutput(nd.array([[1, 2]]), nd.array([1]))"))


# -- softmax_cross_entropy ------------------------------------------------------------------

def _sce_check(data_shape, label_shape):
    if len(data_shape) != 2:
        raise MXNetError(f"softmax_cross_entropy: data must be 2-dim (batch, classes), got "
                         f"shape {tuple(data_shape)}")
    if label_shape is not None and tuple(label_shape) != (data_shape[0],):
        raise MXNetError(f"softmax_cross_entropy: label must have shape ({data_shape[0]},), got "
                         f"{tuple(label_shape)}")


def _sce_compute(xp, data, label):
    _sce_check(data.shape, label.shape)
    logp = _softmax_core(xp, "softmax_cross_entropy", data, 1, log=True)
    picked = xp.mod(label.astype(np.int64), data.shape[1])  # MXNet wraps out-of-range labels
    loss = -xp.take_along_axis(logp, picked[:, None], axis=1).sum()
    return loss.reshape(1).astype(data.dtype)


def _sce_shape(attrs, in_shapes):
    data, label = in_shapes
    if data is None:
        return in_shapes, [(1,)]
    _sce_check(data, label)
    return [data, (data[0],)], [(1,)]


def _sce_grad(F, ins, outs, gouts):
    data, label = ins
    target = F.one_hot(label, depth=data.shape[1], dtype=_dtype_name(data))
    grad = F.broadcast_sub(F.softmax(data, axis=1), target)
    return [F.broadcast_mul(grad, gouts[0]), None]


register(OpDef(
    "softmax_cross_entropy", inputs=("data", "label"), compute=_sce_compute,
    infer_shape=_sce_shape, grad=_sce_grad, nondiff_inputs=("label",),
    doc="Sum over the batch of -log(softmax(data)[label]), shape (1,). Out-of-range labels "
        "wrap around in the loss and get no one-hot term in the gradient, as in MXNet 1.9.",
    example="nd.softmax_cross_entropy(nd.array([[1, 2, 3]]), nd.array([2]))  # [0.4076]"))


# -- SequenceMask ---------------------------------------------------------------------------

def _sequence_keep(xp, data, lengths, axis):
    """Boolean mask, broadcastable to data: position t along ``axis`` is kept if t < length."""
    if axis not in (0, 1):
        raise MXNetError(f"SequenceMask: axis must be 0 or 1, got {axis}")
    if data.ndim < 2:
        raise MXNetError(f"SequenceMask: data must have at least 2 dims, got shape "
                         f"{tuple(data.shape)}")
    batch = data.shape[1 - axis]
    if tuple(lengths.shape) != (batch,):
        raise MXNetError(f"SequenceMask: sequence_length must have shape ({batch},) (the batch "
                         f"axis {1 - axis} of data), got {tuple(lengths.shape)}")
    steps = xp.arange(data.shape[axis])
    limit = lengths.astype(np.int64)
    keep = steps[:, None] < limit[None, :] if axis == 0 else steps[None, :] < limit[:, None]
    return keep.reshape(keep.shape + (1,) * (data.ndim - 2))


def _sequence_mask_compute(xp, data, sequence_length=None, *, use_sequence_length=False,
                           value=0.0, axis=0):
    if not use_sequence_length:
        return data.copy()
    keep = _sequence_keep(xp, data, sequence_length, axis)
    return xp.where(keep, data, data.dtype.type(value))


def _sequence_mask_shape(attrs, in_shapes):
    data = in_shapes[0]
    if len(in_shapes) == 1 or data is None:
        return in_shapes, [data]
    length = merge_shapes(in_shapes[1], (data[1 - attrs["axis"]],),
                          "SequenceMask: sequence_length shape vs data's batch axis")
    return [data, length], [data]


def _sequence_mask_grad(F, ins, outs, gouts, use_sequence_length=False, value=0.0, axis=0):
    if not use_sequence_length:
        return [gouts[0]]
    masked = F.SequenceMask(gouts[0], ins[1], use_sequence_length=True, value=0.0, axis=axis)
    return [masked, None]


register(OpDef(
    "SequenceMask", inputs=("data", "sequence_length"),
    input_filter=lambda a: (("data", "sequence_length") if a["use_sequence_length"]
                            else ("data",)),
    attrs={"use_sequence_length": Bool(default=False, doc="use the sequence_length input"),
           "value": Float(default=0.0, doc="the value written past each sequence's end"),
           "axis": Int(default=0, doc="the time axis: 0 (T, N, ...) or 1 (N, T, ...)")},
    compute=_sequence_mask_compute, infer_shape=_sequence_mask_shape,
    infer_type=lambda a, t: ([t[0], *[u or t[0] for u in t[1:]]], [t[0]]),
    grad=_sequence_mask_grad, nondiff_inputs=("sequence_length",),
    doc="Set every step at or past each sequence's length to ``value`` (identity without "
        "use_sequence_length).",
    example="nd.SequenceMask(x, nd.array([1, 3]), use_sequence_length=True).shape  # x.shape"))


# -- SequenceLast, SequenceReverse ----------------------------------------------------------

def _seq_lengths(xp, op, data, sequence_length, axis):
    """Lengths truncated toward zero, checked against the batch axis ``1 - axis``."""
    if data.ndim < 2:
        raise MXNetError(f"{op}: data must have at least 2 dims, got shape {tuple(data.shape)}")
    batch = data.shape[1 - axis]
    if tuple(sequence_length.shape) != (batch,):
        raise MXNetError(f"{op}: sequence_length must have shape ({batch},) (the batch axis "
                         f"{1 - axis} of data), got {tuple(sequence_length.shape)}")
    return sequence_length.astype(np.int64)


def _sequence_last_compute(xp, data, sequence_length=None, *, use_sequence_length=False,
                           axis=0):
    if axis not in (0, 1):
        raise MXNetError(f"SequenceLast: axis must be 0 or 1, got {axis}")
    steps = data.shape[axis]
    if not use_sequence_length:
        return xp.take(data, steps - 1, axis=axis)
    lengths = _seq_lengths(xp, "SequenceLast", data, sequence_length, axis)
    last = xp.clip(lengths - 1, 0, steps - 1)  # MXNet reads out of bounds; we clip
    batch = xp.arange(data.shape[1 - axis])
    return data[last, batch] if axis == 0 else data[batch, last]


def _sequence_last_shape(attrs, in_shapes):
    data, axis = in_shapes[0], attrs["axis"]
    if data is None:
        return in_shapes, [None]
    out = data[:axis] + data[axis + 1:]
    if len(in_shapes) == 1:
        return in_shapes, [out]
    length = merge_shapes(in_shapes[1], (data[1 - axis],),
                          "SequenceLast: sequence_length shape vs data's batch axis")
    return [data, length], [out]


def _sequence_last_grad(F, ins, outs, gouts, use_sequence_length=False, axis=0):
    data, g = ins[0], gouts[0]
    shape = tuple(data.shape)
    steps, rest = shape[axis], shape[2:]
    if not use_sequence_length:  # zeros for steps 0..T-2, then g
        head = F.expand_dims(g, axis=axis)
        if steps == 1:
            return [head]
        before = F.zeros_like(F.slice_axis(data, axis=axis, begin=0, end=steps - 1))
        return [F.concat(before, head, dim=axis)]
    last = F.clip(F._minus_scalar(ins[1], scalar=1), a_min=0, a_max=steps - 1)
    hot = F.one_hot(last, depth=steps, dtype=_dtype_name(data))  # (batch, T)
    if axis == 0:
        hot = F.transpose(hot)
    hot = F.reshape(hot, shape=shape[:2] + (1,) * len(rest))
    spread = F.expand_dims(g, axis=axis)
    return [F.broadcast_mul(hot, spread), None]


register(OpDef(
    "SequenceLast", inputs=("data", "sequence_length"),
    input_filter=lambda a: (("data", "sequence_length") if a["use_sequence_length"]
                            else ("data",)),
    attrs={"use_sequence_length": Bool(default=False, doc="use the sequence_length input"),
           "axis": Int(default=0, doc="the time axis: 0 (T, N, ...) or 1 (N, T, ...)")},
    compute=_sequence_last_compute, infer_shape=_sequence_last_shape,
    infer_type=lambda a, t: ([t[0], *[u or t[0] for u in t[1:]]], [t[0]]),
    grad=_sequence_last_grad, nondiff_inputs=("sequence_length",),
    doc="The last step of each sequence (step ``length - 1``, clipped into range; the last "
        "step without use_sequence_length).",
    example="nd.SequenceLast(x, nd.array([1, 3]), use_sequence_length=True).shape"))


def _sequence_reverse_compute(xp, data, sequence_length=None, *, use_sequence_length=False,
                              axis=0):
    if axis != 0:
        raise MXNetError(f"SequenceReverse: axis must be 0 (as in MXNet 1.9), got {axis}")
    if not use_sequence_length:
        return xp.flip(data, axis=0).copy()
    steps = data.shape[0]
    lengths = xp.clip(_seq_lengths(xp, "SequenceReverse", data, sequence_length, 0), 0, steps)
    t = xp.arange(steps)[:, None]
    source = xp.where(t < lengths[None, :], lengths[None, :] - 1 - t, t)  # (T, batch)
    source = source.reshape(source.shape + (1,) * (data.ndim - 2))
    return xp.take_along_axis(data, xp.broadcast_to(source, data.shape), axis=0)


def _sequence_reverse_shape(attrs, in_shapes):
    data = in_shapes[0]
    if len(in_shapes) == 1 or data is None:
        return in_shapes, [data]
    length = merge_shapes(in_shapes[1], (data[1],),
                          "SequenceReverse: sequence_length shape vs data's batch axis")
    return [data, length], [data]


def _sequence_reverse_grad(F, ins, outs, gouts, use_sequence_length=False, axis=0):
    if not use_sequence_length:
        return [F.SequenceReverse(gouts[0], axis=axis)]
    # the reversal is its own inverse, so the gradient is the reversed head gradient
    return [F.SequenceReverse(gouts[0], ins[1], use_sequence_length=True, axis=axis), None]


register(OpDef(
    "SequenceReverse", inputs=("data", "sequence_length"),
    input_filter=lambda a: (("data", "sequence_length") if a["use_sequence_length"]
                            else ("data",)),
    attrs={"use_sequence_length": Bool(default=False, doc="use the sequence_length input"),
           "axis": Int(default=0, doc="the time axis; MXNet 1.9 supports only 0")},
    compute=_sequence_reverse_compute, infer_shape=_sequence_reverse_shape,
    infer_type=lambda a, t: ([t[0], *[u or t[0] for u in t[1:]]], [t[0]]),
    grad=_sequence_reverse_grad, nondiff_inputs=("sequence_length",),
    doc="Reverse the first ``length`` steps of each sequence along axis 0 (all steps without "
        "use_sequence_length); later steps stay in place.",
    example="nd.SequenceReverse(x, nd.array([1, 3]), use_sequence_length=True).shape"))
