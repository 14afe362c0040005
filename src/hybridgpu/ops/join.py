"""Join and split ops: ``Concat`` and ``stack`` (variadic), ``SliceChannel`` (``split``) and
``_split_v2`` (several outputs), and ``add_n`` (variadic sum).

Variadic ops take any number of inputs; ``num_args`` is set from the call. Split ops return
one output per piece (a single array when there is one piece), each a copy, not a view.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> c = ops.get("Concat")
    >>> c.infer_shape(c.parse_attrs({}, 2), [(2, 3), (2, 0)])[1]
    [(2, 0)]
    >>> s = ops.get("split")
    >>> [p.shape for p in s.compute(np, np.zeros((2, 6)), **s.parse_attrs({"num_outputs": 3}))]
    [(2, 2), (2, 2), (2, 2)]
"""

from __future__ import annotations

from ..base import MXNetError
from .attrs import Bool, Int, Shape
from .lowering import Lowering, same_float
from .opdef import OpDef, register
from .rules import merge_shapes, normalize_axis, same_shape

__all__ = []


# -- Concat -----------------------------------------------------------------------------------

def _concat_shape(shapes, dim):
    """Output of concatenating ``shapes`` (None or partial allowed) along ``dim``; the input
    shapes come back completed where the others tell (every axis but ``dim`` is shared)."""
    first = next((s for s in shapes if s is not None), None)
    if first is None:
        return list(shapes), None
    axis = normalize_axis(dim, len(first), "Concat")
    common = None
    for i, s in enumerate(shapes):
        if s is None:
            continue
        if len(s) != len(first):
            raise MXNetError(f"Concat: input {i} has shape {s}, input 0 has {first}: all "
                             "inputs need the same number of dims")
        masked = (*s[:axis], 0, *s[axis + 1:])
        try:
            common = merge_shapes(common, masked)
        except MXNetError:
            raise MXNetError(f"Concat: input {i} has shape {s}, which does not match "
                             f"{first} (input 0) on every axis but dim={dim}") from None
    ins = [(*common[:axis], 0, *common[axis + 1:]) if s is None else
           (*common[:axis], s[axis], *common[axis + 1:]) for s in shapes]
    sizes = [s[axis] for s in ins]
    total = sum(sizes) if all(sizes) else 0
    return ins, (*common[:axis], total, *common[axis + 1:])


def _concat_rule(attrs, in_shapes):
    ins, out = _concat_shape(in_shapes, attrs["dim"])
    return ins, [out]


def _same_dtype(op, arrays):
    """MXNet refuses mixed dtypes here (NumPy would promote silently)."""
    for i, a in enumerate(arrays[1:], 1):
        if a.dtype != arrays[0].dtype:
            raise MXNetError(f"{op}: input {i} has dtype {a.dtype.name}, input 0 has "
                             f"{arrays[0].dtype.name}; cast them to one dtype first")


def _concat_compute(xp, *arrays, dim=1, num_args=None):
    _concat_shape([a.shape for a in arrays], dim)  # the error names both shapes
    _same_dtype("Concat", arrays)
    return xp.concatenate(arrays, axis=dim)


def _concat_grad(F, ins, outs, gouts, dim=1, num_args=None):
    axis = normalize_axis(dim, len(ins[0].shape), "Concat")
    grads, begin = [], 0
    for x in ins:
        end = begin + x.shape[axis]
        grads.append(F.slice_axis(gouts[0], axis=axis, begin=begin, end=end))
        begin = end
    return grads


register(OpDef(
    "Concat", aliases=("concat",), variadic=True,
    attrs={"dim": Int(default=1, doc="the axis to join along")},
    compute=_concat_compute, infer_shape=_concat_rule, grad=_concat_grad,
    doc="Join arrays along an existing axis ``dim``.",
    example="nd.concat(nd.zeros((2, 3)), nd.zeros((2, 1)), dim=1).shape  # (2, 4)"))


# -- stack ------------------------------------------------------------------------------------

def _stack_axis(axis, ndim):
    if not -ndim - 1 <= axis <= ndim:
        raise MXNetError(f"stack: axis {axis} is out of range [{-ndim - 1}, {ndim}] for inputs "
                         f"of {ndim} dims")
    return axis % (ndim + 1)


def _stack_rule(attrs, in_shapes):
    try:
        ins, (shape,) = same_shape(attrs, in_shapes)
    except MXNetError:
        raise MXNetError(f"stack: every input needs one shape, got {in_shapes}") from None
    if shape is None:
        return ins, [None]
    axis = _stack_axis(attrs["axis"], len(shape))
    return ins, [(*shape[:axis], len(in_shapes), *shape[axis:])]


def _stack_compute(xp, *arrays, axis=0, num_args=None):
    _stack_rule({"axis": axis}, [a.shape for a in arrays])  # validates
    _same_dtype("stack", arrays)
    return xp.stack(arrays, axis=axis)


def _stack_grad(F, ins, outs, gouts, axis=0, num_args=None):
    n, g = len(ins), gouts[0]
    axis = _stack_axis(axis, len(ins[0].shape))
    if n == 1:
        return [F.reshape(g, shape=ins[0].shape)]
    parts = F.split(g, num_outputs=n, axis=axis, squeeze_axis=True)
    return [parts[i] for i in range(n)]


register(OpDef(
    "stack", variadic=True,
    attrs={"axis": Int(default=0, doc="the new axis in the result")},
    compute=_stack_compute, infer_shape=_stack_rule, grad=_stack_grad,
    doc="Join arrays of one shape along a new axis.",
    example="nd.stack(nd.zeros((2, 3)), nd.zeros((2, 3)), axis=-1).shape  # (2, 3, 2)"))


# -- SliceChannel (split) and _split_v2 -------------------------------------------------------

def _pieces(op, shape, axis, bounds, squeeze):
    """Output shapes for pieces ``[bounds[i], bounds[i+1])`` of ``shape`` along ``axis``."""
    outs = []
    for begin, end in zip(bounds[:-1], bounds[1:]):
        size = end - begin if shape[axis] else 0
        if squeeze:
            if size not in (1, 0):
                raise MXNetError(f"{op}: squeeze_axis=True needs pieces of size 1 along axis "
                                 f"{axis}, got {size} (input shape {tuple(shape)})")
            outs.append((*shape[:axis], *shape[axis + 1:]) or (1,))
        else:
            outs.append((*shape[:axis], size, *shape[axis + 1:]))
    return outs


def _even_bounds(shape, num_outputs, axis):
    axis = normalize_axis(axis, len(shape), "SliceChannel")
    size = shape[axis]
    if num_outputs < 1 or size % num_outputs:
        raise MXNetError(f"SliceChannel: cannot split axis {axis} of shape {tuple(shape)} into "
                         f"num_outputs={num_outputs} equal pieces")
    step = size // num_outputs
    return axis, [i * step for i in range(num_outputs + 1)]


def _split_rule(attrs, in_shapes):
    (shape,) = in_shapes
    n = attrs["num_outputs"]
    if shape is None:
        return in_shapes, [None] * n
    axis, bounds = _even_bounds(shape, n, attrs["axis"])
    return in_shapes, _pieces("SliceChannel", shape, axis, bounds, attrs["squeeze_axis"])


def _take_pieces(xp, x, axis, bounds, out_shapes):
    index = [slice(None)] * x.ndim
    outs = []
    for begin, end, shape in zip(bounds[:-1], bounds[1:], out_shapes):
        index[axis] = slice(begin, end)
        outs.append(x[tuple(index)].reshape(shape).copy())
    return tuple(outs)


def _split_compute(xp, x, num_outputs, axis=1, squeeze_axis=False):
    axis, bounds = _even_bounds(x.shape, num_outputs, axis)
    shapes = _pieces("SliceChannel", x.shape, axis, bounds, squeeze_axis)
    return _take_pieces(xp, x, axis, bounds, shapes)


def _join_grads(F, x, outs, gouts, axis, squeeze_axis):
    """Gradient of a split: the output gradients (zeros for unused outputs) joined back."""
    axis = normalize_axis(axis, len(x.shape), "split")
    parts = []
    for out, g in zip(outs, gouts):
        g = F.zeros_like(out) if g is None else g
        parts.append(F.expand_dims(g, axis=axis) if squeeze_axis else g)
    if len(parts) == 1:
        return [F.reshape(parts[0], shape=x.shape)]
    return [F.Concat(*parts, dim=axis)]


register(OpDef(
    "SliceChannel", aliases=("split",), inputs=("data",),
    attrs={"num_outputs": Int(doc="number of equal pieces"),
           "axis": Int(default=1, doc="the axis to split"),
           "squeeze_axis": Bool(default=False, doc="drop the split axis (pieces of size 1)")},
    num_outputs=lambda attrs: attrs["num_outputs"],
    compute=_split_compute, infer_shape=_split_rule,
    grad=lambda F, ins, outs, gouts, num_outputs, axis=1, squeeze_axis=False: _join_grads(
        F, ins[0], outs, gouts, axis, squeeze_axis),
    doc="Split an array into ``num_outputs`` equal pieces along ``axis``.",
    example="[p.shape for p in nd.split(nd.zeros((2, 6)), num_outputs=2)]  # [(2, 3), (2, 3)]"))


def _v2_count(attrs):
    return attrs["sections"] if attrs["sections"] > 0 else len(attrs["indices"])


def _v2_bounds(shape, attrs):
    axis = normalize_axis(attrs["axis"], len(shape), "_split_v2")
    size, sections = shape[axis], attrs["sections"]
    if sections > 0:
        if size % sections:
            raise MXNetError(f"_split_v2: cannot split axis {axis} of shape {tuple(shape)} "
                             f"into sections={sections} equal pieces")
        step = size // sections
        return axis, [i * step for i in range(sections + 1)]
    bounds = [*attrs["indices"], size]
    decreasing = size and any(a > b for a, b in zip(bounds, bounds[1:]))
    if len(bounds) < 2 or bounds[0] != 0 or decreasing:
        raise MXNetError(f"_split_v2: indices={tuple(attrs['indices'])} must start at 0 and "
                         f"be non-decreasing, up to the size {size} of axis {axis} of the "
                         f"input {tuple(shape)}")
    return axis, bounds


def _split_v2_rule(attrs, in_shapes):
    (shape,) = in_shapes
    if shape is None:
        return in_shapes, [None] * _v2_count(attrs)
    axis, bounds = _v2_bounds(shape, attrs)
    return in_shapes, _pieces("_split_v2", shape, axis, bounds, attrs["squeeze_axis"])


def _split_v2_compute(xp, x, **attrs):
    axis, bounds = _v2_bounds(x.shape, attrs)
    shapes = _pieces("_split_v2", x.shape, axis, bounds, attrs["squeeze_axis"])
    return _take_pieces(xp, x, axis, bounds, shapes)


register(OpDef(
    "_split_v2", inputs=("data",),
    attrs={"indices": Shape(doc="start of each piece along axis (the first is 0)"),
           "axis": Int(default=1, doc="the axis to split"),
           "squeeze_axis": Bool(default=False, doc="drop the split axis (pieces of size 1)"),
           "sections": Int(default=0, doc="number of equal pieces; 0 splits at indices")},
    num_outputs=_v2_count, compute=_split_v2_compute, infer_shape=_split_v2_rule,
    grad=lambda F, ins, outs, gouts, **a: _join_grads(
        F, ins[0], outs, gouts, a["axis"], a["squeeze_axis"]),
    doc="Split an array at ``indices`` (or into ``sections`` equal pieces) along ``axis``; "
        "the op behind ``nd.split_v2``.",
    example="[p.shape for p in nd._internal._split_v2(nd.zeros((5, 2)), indices=(0, 2), "
            "axis=0)]  # [(2, 2), (3, 2)]"))


# -- add_n ------------------------------------------------------------------------------------

def _add_n_compute(xp, *arrays, num_args=None):
    _add_n_rule({}, [a.shape for a in arrays])
    _same_dtype("add_n", arrays)
    if len(arrays) == 1:
        return arrays[0].copy()
    total = arrays[0] + arrays[1]
    for a in arrays[2:]:
        total += a
    return total


def _add_n_rule(attrs, in_shapes):
    try:
        return same_shape(attrs, in_shapes)
    except MXNetError:
        raise MXNetError(f"add_n: every input needs one shape, got {in_shapes}") from None


def _emit_add_n(site):
    """``in0 + in1`` into the output, then each further input added in place."""
    xp, o, ins = site.xp, site.outs[0], site.ins
    if len(ins) == 1:
        return [f"{xp}.copyto({o}, {ins[0]})"]
    return [f"{xp}.add({ins[0]}, {ins[1]}, out={o})"] + [
        f"{xp}.add({o}, {a}, out={o})" for a in ins[2:]]


register(OpDef(
    "add_n", aliases=("ElementWiseSum",), variadic=True,
    compute=_add_n_compute, infer_shape=_add_n_rule,
    lower=Lowering(_emit_add_n, same_float, inplace=(0, 1)), views=False,
    grad=lambda F, ins, outs, gouts, num_args=None: [gouts[0]] * len(ins),
    doc="Elementwise sum of any number of arrays of one shape.",
    example="nd.add_n(nd.ones((2,)), nd.ones((2,)), nd.ones((2,))).asnumpy().tolist()  "
            "# [3.0, 3.0]"))
