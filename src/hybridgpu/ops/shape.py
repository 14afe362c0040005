"""Shape ops: ``Reshape, transpose, SwapAxis, expand_dims, squeeze, Flatten, tile, repeat,
broadcast_to, broadcast_axis, broadcast_like, reverse, reshape_like, shape_array, size_array,
depth_to_space, space_to_depth, Pad``.

Every op returns a new array, never a view of its input (as MXNet's ops do: writing into the
result of ``nd.reshape`` leaves the input alone). Shape inference propagates unknown shapes
(``None``) and unknown dims (``0``) instead of failing, so deferred init can ask early.
Axes may be negative everywhere (MXNet 1.9 rejects them in ``transpose``, ``reverse`` and
``broadcast_axis``; accepting them is a superset).

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> r = ops.get("Reshape")
    >>> r.compute(np, np.zeros((2, 3, 4)), **r.parse_attrs({"shape": (0, -1)})).shape
    (2, 12)
    >>> r.infer_shape(r.parse_attrs({"shape": (-1, 12)}), [(0, 3, 4)])[1]
    [(0, 12)]
    >>> t = ops.get("tile")
    >>> t.compute(np, np.array([[1, 2]]), reps=(2, 2)).tolist()
    [[1, 2, 1, 2], [1, 2, 1, 2]]
"""

from __future__ import annotations

import math

import numpy as np

from ..base import MXNetError
from .attrs import Bool, Enum, Float, Int, Shape
from .lowering import Lowering, same_dtype
from .opdef import OpDef, register
from .reshape_codes import target_shape
from .rules import known, normalize_axis

__all__ = []


def _axes(axes, ndim, op, what="axis"):
    """Normalized distinct axes; MXNetError naming ``op`` on a bad or repeated one."""
    out = tuple(normalize_axis(a, ndim, op) for a in axes)
    if len(set(out)) != len(out):
        raise MXNetError(f"{op}: {what}={tuple(axes)} names an axis twice")
    return out


def _unary_rule(fn):
    """Shape rule for one input: ``fn(attrs, shape) -> out shape``; unknown input -> unknown."""

    def rule(attrs, in_shapes):
        (shape,) = in_shapes
        return in_shapes, [None if shape is None else tuple(fn(attrs, shape))]

    return rule


def _reshape_back(F, ins, outs, gouts, **attrs):
    """Gradient of every op that only moves elements in order: reshape to the input's shape."""
    return [F.reshape(gouts[0], shape=ins[0].shape)]


# -- Reshape ----------------------------------------------------------------------------------

def _reshape_codes(attrs):
    """The codes to apply: ``shape``, or the deprecated ``target_shape``/``keep_highest``."""
    if attrs["shape"]:
        return attrs["shape"], attrs["reverse"]
    legacy = attrs["target_shape"]
    if not legacy:
        raise MXNetError("Reshape: attribute 'shape' is empty; give the target shape, e.g. "
                         "shape=(0, -1)")
    codes = tuple(-1 if d == 0 else d for d in legacy)  # legacy 0 = infer
    if attrs["keep_highest"]:
        codes = (0, *codes[1:])
    return codes, False


def _reshape_shape(attrs, in_shapes):
    (shape,) = in_shapes
    codes, reverse = _reshape_codes(attrs)
    if known(shape):
        return in_shapes, [target_shape(shape, codes, reverse)]
    if all(c > 0 for c in codes):
        return in_shapes, [tuple(codes)]
    if shape is None:
        return in_shapes, [None]
    try:  # a partly known input: unknown (0) dims give unknown output dims where they flow
        return in_shapes, [target_shape(shape, codes, reverse)]
    except MXNetError:
        return in_shapes, [None]


def _reshape_compute(xp, x, **attrs):
    codes, reverse = _reshape_codes(attrs)
    return x.reshape(target_shape(x.shape, codes, reverse)).copy()


def _emit_reshape(site):
    return [f"{site.outs[0]} = {site.ins[0]}.reshape({site.out_shapes[0]!r})"]


#: Reshape, Flatten and expand_dims lower to a view of their input (no copy, no buffer).
_AS_VIEW = Lowering(_emit_reshape, same_dtype, kind="view")

register(OpDef(
    "Reshape", aliases=("reshape",), inputs=("data",),
    attrs={"shape": Shape(default=(), doc="target shape; codes 0, -1, -2, -3, -4 allowed"),
           "reverse": Bool(default=False, doc="match the special codes from the right"),
           "target_shape": Shape(default=(), doc="deprecated: use shape"),
           "keep_highest": Bool(default=False, doc="deprecated: use shape")},
    compute=_reshape_compute, infer_shape=_reshape_shape, grad=_reshape_back, lower=_AS_VIEW,
    doc="Reshape to ``shape``, with MXNet's special codes (0 copy, -1 infer, -2 copy the rest, "
        "-3 merge two, -4 split one).",
    example="nd.reshape(nd.zeros((2, 3, 4)), shape=(-1, 0), reverse=True).shape  # (6, 4)"))


# -- transpose and SwapAxis -------------------------------------------------------------------

def _perm(axes, ndim):
    if not axes:
        return tuple(range(ndim))[::-1]
    if len(axes) != ndim:
        raise MXNetError(f"transpose: axes={tuple(axes)} has {len(axes)} entries, expected one "
                         f"per input dimension ({ndim})")
    return _axes(axes, ndim, "transpose", "axes")


def _transpose_grad(F, ins, outs, gouts, axes=()):
    perm = _perm(axes, len(ins[0].shape))
    inverse = tuple(perm.index(i) for i in range(len(perm)))
    return [F.transpose(gouts[0], axes=inverse)]


register(OpDef(
    "transpose", inputs=("data",),
    attrs={"axes": Shape(default=(), doc="the new order of the axes; empty reverses them")},
    compute=lambda xp, x, axes=(): xp.transpose(x, _perm(axes, x.ndim)).copy(),
    infer_shape=_unary_rule(lambda a, s: [s[p] for p in _perm(a["axes"], len(s))]),
    grad=_transpose_grad,
    doc="Permute the axes (reverse them when ``axes`` is empty).",
    example="nd.transpose(nd.zeros((2, 3, 4)), axes=(1, 0, 2)).shape  # (3, 2, 4)"))


def _swap(shape, dim1, dim2):
    out = list(shape)
    i, j = (normalize_axis(d, len(shape), "SwapAxis") for d in (dim1, dim2))
    out[i], out[j] = out[j], out[i]
    return tuple(out)


register(OpDef(
    "SwapAxis", aliases=("swapaxes",), inputs=("data",),
    attrs={"dim1": Int(default=0, doc="the first axis"),
           "dim2": Int(default=0, doc="the second axis")},
    compute=lambda xp, x, dim1=0, dim2=0: xp.transpose(
        x, _swap(range(x.ndim), dim1, dim2)).copy(),
    infer_shape=_unary_rule(lambda a, s: _swap(s, a["dim1"], a["dim2"])),
    grad=lambda F, ins, outs, gouts, dim1=0, dim2=0: [F.SwapAxis(gouts[0], dim1=dim1,
                                                                 dim2=dim2)],
    doc="Swap two axes.",
    example="nd.swapaxes(nd.zeros((2, 3, 4)), 0, 2).shape  # (4, 3, 2)"))


# -- expand_dims, squeeze, Flatten ------------------------------------------------------------

def _expand_shape(shape, axis):
    ndim = len(shape)
    if not -ndim - 1 <= axis <= ndim:
        raise MXNetError(f"expand_dims: axis {axis} is out of range [{-ndim - 1}, {ndim}] for "
                         f"an input of shape {tuple(shape)}")
    axis = axis % (ndim + 1)
    return (*shape[:axis], 1, *shape[axis:])


register(OpDef(
    "expand_dims", inputs=("data",),
    attrs={"axis": Int(doc="where the new axis goes, in [-ndim-1, ndim]")},
    compute=lambda xp, x, axis: x.reshape(_expand_shape(x.shape, axis)).copy(),
    infer_shape=_unary_rule(lambda a, s: _expand_shape(s, a["axis"])), grad=_reshape_back,
    lower=_AS_VIEW,
    doc="Insert an axis of size 1 at ``axis``.",
    example="nd.expand_dims(nd.zeros((2, 3)), axis=-1).shape  # (2, 3, 1)"))


def _squeeze_shape(shape, axis, partial=False):
    """``shape`` without its size-1 axes (those in ``axis``); ``(1,)`` when none is left."""
    if axis is None:
        if partial and 0 in shape:
            return None  # an unknown dim may or may not be 1
        out = tuple(d for d in shape if d != 1)
    else:
        axes = _axes(axis, len(shape), "squeeze")
        for a in axes:
            if shape[a] not in (1, 0):
                raise MXNetError(f"squeeze: cannot remove axis {a} of shape {tuple(shape)}: "
                                 f"its size is {shape[a]}, expected 1")
        out = tuple(d for i, d in enumerate(shape) if i not in axes)
    return out or (1,)


def _squeeze_rule(attrs, in_shapes):
    (shape,) = in_shapes
    if shape is None:
        return in_shapes, [None]
    return in_shapes, [_squeeze_shape(shape, attrs["axis"], partial=True)]


register(OpDef(
    "squeeze", inputs=("data",),
    attrs={"axis": Shape(default=None, doc="axes of size 1 to remove; None removes all")},
    compute=lambda xp, x, axis=None: x.reshape(_squeeze_shape(x.shape, axis)).copy(),
    infer_shape=_squeeze_rule, grad=_reshape_back,
    doc="Remove axes of size 1 (all of them when ``axis`` is None); removing every axis "
        "gives shape (1,), as in MXNet.",
    example="nd.squeeze(nd.zeros((1, 3, 1))).shape  # (3,)"))


def _flat_shape(shape):
    if not shape:
        return (1, 1)
    return (shape[0], math.prod(shape[1:]))


register(OpDef(
    "Flatten", aliases=("flatten",), inputs=("data",),
    compute=lambda xp, x: x.reshape(_flat_shape(x.shape)).copy(),
    infer_shape=_unary_rule(lambda a, s: _flat_shape(s)), grad=_reshape_back, lower=_AS_VIEW,
    doc="Collapse every axis but the first: shape (N, rest).",
    example="nd.flatten(nd.zeros((2, 3, 4))).shape  # (2, 12)"))


# -- tile and repeat --------------------------------------------------------------------------

def _tile_dims(shape, reps):
    """Input dims and reps, both padded with leading 1s to one length."""
    for r in reps:
        if r < 1:
            raise MXNetError(f"tile: reps={tuple(reps)} must be positive integers")
    n = max(len(shape), len(reps))
    return (1,) * (n - len(shape)) + tuple(shape), (1,) * (n - len(reps)) + tuple(reps)


def _tile_shape(attrs, shape):
    dims, reps = _tile_dims(shape, attrs["reps"])
    return tuple(d * r for d, r in zip(dims, reps))


def _tile_grad(F, ins, outs, gouts, reps):
    x = ins[0]
    dims, reps = _tile_dims(x.shape, reps)
    if not dims:
        return [gouts[0]]
    split = [v for pair in zip(reps, dims) for v in pair]
    summed = F.sum(F.reshape(gouts[0], shape=split), axis=tuple(range(0, len(split), 2)))
    return [F.reshape(summed, shape=x.shape)]


register(OpDef(
    "tile", inputs=("data",),
    attrs={"reps": Shape(doc="repetitions per axis (padded with 1s like numpy.tile)")},
    compute=lambda xp, x, reps: (xp.tile(x, _tile_dims(x.shape, reps)[1]) if reps
                                 else x.copy()),
    infer_shape=_unary_rule(_tile_shape), grad=_tile_grad,
    doc="Repeat the whole array ``reps`` times along each axis (numpy.tile).",
    example="nd.tile(nd.zeros((2, 3)), reps=(2, 1)).shape  # (4, 3)"))


def _repeat_shape(attrs, shape):
    repeats, axis = attrs["repeats"], attrs["axis"]
    if repeats < 0:
        raise MXNetError(f"repeat: repeats must be >= 0, got {repeats}")
    if axis is None:
        return (math.prod(shape) * repeats,)
    axis = normalize_axis(axis, len(shape), "repeat")
    return (*shape[:axis], shape[axis] * repeats, *shape[axis + 1:])


def _repeat_compute(xp, x, repeats, axis=None):
    _repeat_shape({"repeats": repeats, "axis": axis}, x.shape)  # validates
    return xp.repeat(x, repeats, axis=axis)


def _repeat_grad(F, ins, outs, gouts, repeats, axis=None):
    shape = ins[0].shape
    if axis is None:
        split, summed_axis = (math.prod(shape), repeats), 1
    else:
        axis = normalize_axis(axis, len(shape), "repeat")
        split, summed_axis = (*shape[:axis], shape[axis], repeats, *shape[axis + 1:]), axis + 1
    summed = F.sum(F.reshape(gouts[0], shape=split), axis=summed_axis)
    return [F.reshape(summed, shape=shape)]


register(OpDef(
    "repeat", inputs=("data",),
    attrs={"repeats": Int(doc="repetitions of each element"),
           "axis": Int(default=None, doc="axis to repeat along; None flattens first")},
    compute=_repeat_compute, infer_shape=_unary_rule(_repeat_shape), grad=_repeat_grad,
    doc="Repeat each element ``repeats`` times (numpy.repeat).",
    example="nd.repeat(nd.zeros((2, 3)), repeats=2, axis=1).shape  # (2, 6)"))


# -- broadcast_to, broadcast_axis, broadcast_like ---------------------------------------------

def _broadcast_check(op, src, dst):
    """``dst`` if ``src`` broadcasts to it axis by axis (unknown 0 dims pass), else error."""
    if len(src) != len(dst) or any(s not in (1, d, 0) and d for s, d in zip(src, dst)):
        raise MXNetError(f"{op}: cannot broadcast an input of shape {tuple(src)} to "
                         f"{tuple(dst)} (dims must be equal or 1 in the input)")
    return tuple(dst)


def _broadcast_to_shape(shape, target):
    if len(shape) != len(target):
        raise MXNetError(f"broadcast_to: shape={tuple(target)} has {len(target)} dims, the "
                         f"input {tuple(shape)} has {len(shape)}; give one size per axis "
                         "(0 keeps the input's)")
    out = tuple(t or s for s, t in zip(shape, target))
    return _broadcast_check("broadcast_to", shape, out)


def _broadcast_to_rule(attrs, in_shapes):
    (shape,) = in_shapes
    target = attrs["shape"]
    if shape is None:
        return in_shapes, [tuple(target) if target and 0 not in target else None]
    return in_shapes, [_broadcast_to_shape(shape, target)]


def _sum_back(F, ins, outs, gouts, **attrs):
    """Gradient of a broadcast: sum over the broadcast axes; later inputs get none."""
    return [F._reduce_sum_like(gouts[0], ins[0])] + [None] * (len(ins) - 1)


def _broadcast(xp, x, shape):
    return xp.broadcast_to(x, shape).copy()


register(OpDef(
    "broadcast_to", inputs=("data",),
    attrs={"shape": Shape(default=(), doc="target shape; 0 keeps the input's dim")},
    compute=lambda xp, x, shape=(): _broadcast(xp, x, _broadcast_to_shape(x.shape, shape)),
    infer_shape=_broadcast_to_rule, grad=_sum_back,
    doc="Broadcast size-1 axes to ``shape`` (0 keeps a dim).",
    example="nd.broadcast_to(nd.zeros((2, 1)), shape=(0, 3)).shape  # (2, 3)"))


def _broadcast_axis_shape(attrs, shape):
    axis, size = attrs["axis"], attrs["size"]
    if len(axis) != len(size):
        raise MXNetError(f"broadcast_axis: axis={tuple(axis)} and size={tuple(size)} must have "
                         "one size per axis")
    out = list(shape)
    for a, s in zip(_axes(axis, len(shape), "broadcast_axis"), size):
        if shape[a] not in (1, 0):
            raise MXNetError(f"broadcast_axis: axis {a} of the input {tuple(shape)} has size "
                             f"{shape[a]}, expected 1")
        out[a] = s
    return tuple(out)


register(OpDef(
    "broadcast_axis", aliases=("broadcast_axes",), inputs=("data",),
    attrs={"axis": Shape(default=(), doc="axes (of size 1) to broadcast"),
           "size": Shape(default=(), doc="their target sizes")},
    compute=lambda xp, x, axis=(), size=(): _broadcast(
        xp, x, _broadcast_axis_shape({"axis": axis, "size": size}, x.shape)),
    infer_shape=_unary_rule(_broadcast_axis_shape), grad=_sum_back,
    doc="Broadcast the size-1 axes ``axis`` to ``size``.",
    example="nd.broadcast_axis(nd.zeros((2, 1)), axis=1, size=3).shape  # (2, 3)"))


def _broadcast_like_shape(lhs, rhs, lhs_axes, rhs_axes):
    if lhs_axes is None and rhs_axes is None:  # fewer lhs dims: NumPy's leading 1s (a superset)
        if len(lhs) > len(rhs):
            raise MXNetError(f"broadcast_like: lhs {tuple(lhs)} has more dims than rhs "
                             f"{tuple(rhs)}")
        padded = (1,) * (len(rhs) - len(lhs)) + tuple(lhs)
        if any(s not in (1, d, 0) and d for s, d in zip(padded, rhs)):
            raise MXNetError(f"broadcast_like: cannot broadcast lhs of shape {tuple(lhs)} to "
                             f"the shape {tuple(rhs)} of rhs (dims must be equal or 1 in lhs)")
        return tuple(d or (0 if s == 1 else s) for s, d in zip(padded, rhs))
    if lhs_axes is None or rhs_axes is None or len(lhs_axes) != len(rhs_axes) or not lhs_axes:
        raise MXNetError(f"broadcast_like: lhs_axes={lhs_axes} and rhs_axes={rhs_axes} must "
                         "both be given, non-empty and of one length")
    out = list(lhs)
    for a, b in zip(_axes(lhs_axes, len(lhs), "broadcast_like", "lhs_axes"),
                    _axes(rhs_axes, len(rhs), "broadcast_like", "rhs_axes")):
        if lhs[a] not in (1, 0, rhs[b]) and rhs[b]:
            raise MXNetError(f"broadcast_like: axis {a} of lhs {tuple(lhs)} has size {lhs[a]} "
                             f"and cannot be broadcast to {rhs[b]} (axis {b} of rhs "
                             f"{tuple(rhs)})")
        out[a] = rhs[b]
    return tuple(out)


def _broadcast_like_rule(attrs, in_shapes):
    lhs, rhs = in_shapes
    if lhs is None or rhs is None:
        return in_shapes, [None]
    return in_shapes, [_broadcast_like_shape(lhs, rhs, attrs["lhs_axes"], attrs["rhs_axes"])]


def _lhs_type(attrs, in_types):
    """The output has the first input's dtype; the second input (a shape donor) may differ."""
    return in_types, [in_types[0]]


register(OpDef(
    "broadcast_like", inputs=("lhs", "rhs"),
    attrs={"lhs_axes": Shape(default=None, doc="axes of lhs to broadcast"),
           "rhs_axes": Shape(default=None, doc="axes of rhs whose sizes they take")},
    compute=lambda xp, lhs, rhs, lhs_axes=None, rhs_axes=None: _broadcast(
        xp, lhs, _broadcast_like_shape(lhs.shape, rhs.shape, lhs_axes, rhs_axes)),
    infer_shape=_broadcast_like_rule, infer_type=_lhs_type, grad=_sum_back,
    nondiff_inputs=("rhs",),
    doc="Broadcast ``lhs`` to the shape of ``rhs`` (or only the axes given).",
    example="nd.broadcast_like(nd.zeros((2, 1)), nd.zeros((2, 3))).shape  # (2, 3)"))


# -- reverse ----------------------------------------------------------------------------------

def _reverse_shape(attrs, shape):
    _axes(attrs["axis"], len(shape), "reverse")  # validates
    return shape


register(OpDef(
    "reverse", aliases=("flip",), inputs=("data",),
    attrs={"axis": Shape(doc="the axes to reverse")},
    compute=lambda xp, x, axis: (xp.flip(x, _axes(axis, x.ndim, "reverse")).copy() if axis
                                 else x.copy()),
    infer_shape=_unary_rule(_reverse_shape),
    grad=lambda F, ins, outs, gouts, axis: [F.reverse(gouts[0], axis=axis)],
    doc="Reverse the order of elements along ``axis``.",
    example="nd.flip(nd.array([[1, 2, 3]]), axis=1).asnumpy().tolist()  # [[3.0, 2.0, 1.0]]"))


# -- reshape_like, shape_array, size_array ----------------------------------------------------

def _span(begin, end, ndim, which):
    b = 0 if begin is None else begin + ndim if begin < 0 else begin
    e = ndim if end is None else end + ndim if end < 0 else end
    if not 0 <= b <= e <= ndim:
        raise MXNetError(f"reshape_like: {which}_begin={begin}, {which}_end={end} do not give a "
                         f"range of the {ndim} axes of {which}")
    return b, e


def _reshape_like_shape(lhs, rhs, attrs):
    lb, le = _span(attrs["lhs_begin"], attrs["lhs_end"], len(lhs), "lhs")
    rb, re = _span(attrs["rhs_begin"], attrs["rhs_end"], len(rhs), "rhs")
    out = (*lhs[:lb], *rhs[rb:re], *lhs[le:])
    if known(lhs) and known(out) and math.prod(out) != math.prod(lhs):
        raise MXNetError(f"reshape_like: cannot reshape lhs of shape {tuple(lhs)} to {out} "
                         f"(taken from rhs {tuple(rhs)}): the sizes differ")
    return out


def _reshape_like_rule(attrs, in_shapes):
    lhs, rhs = in_shapes
    if lhs is None or rhs is None:
        return in_shapes, [None]
    return in_shapes, [_reshape_like_shape(lhs, rhs, attrs)]


_RANGE = {f"{side}_{end}": Int(default=None, doc=f"{end} of the {side} axes used (None: "
                                                 f"{'0' if end == 'begin' else 'ndim'})")
          for side in ("lhs", "rhs") for end in ("begin", "end")}

register(OpDef(
    "reshape_like", inputs=("lhs", "rhs"), attrs=_RANGE,
    compute=lambda xp, lhs, rhs, **a: lhs.reshape(
        _reshape_like_shape(lhs.shape, rhs.shape, a)).copy(),
    infer_shape=_reshape_like_rule, infer_type=_lhs_type,
    grad=lambda F, ins, outs, gouts, **a: [F.reshape(gouts[0], shape=ins[0].shape), None],
    nondiff_inputs=("rhs",),
    doc="Reshape ``lhs`` to the shape of ``rhs`` (or splice in a range of its axes).",
    example="nd.reshape_like(nd.zeros((2, 3)), nd.zeros((3, 2))).shape  # (3, 2)"))

register(OpDef(
    "shape_array", inputs=("data",),
    compute=lambda xp, x: xp.asarray(x.shape, dtype=np.int64).reshape(-1),
    infer_shape=_unary_rule(lambda a, s: (len(s),)),
    infer_type=lambda attrs, in_types: (in_types, ["int64"]),
    doc="The shape of the input as a 1-D int64 array.",
    example="nd.shape_array(nd.zeros((2, 3))).asnumpy().tolist()  # [2, 3]"))

register(OpDef(
    "size_array", inputs=("data",),
    compute=lambda xp, x: xp.asarray([x.size], dtype=np.int64),
    infer_shape=_unary_rule(lambda a, s: (1,)),
    infer_type=lambda attrs, in_types: (in_types, ["int64"]),
    doc="The number of elements of the input as a (1,) int64 array.",
    example="nd.size_array(nd.zeros((2, 3))).asnumpy().tolist()  # [6]"))


# -- depth_to_space, space_to_depth -----------------------------------------------------------

def _block_check(op, shape, block, axis_divisors):
    if len(shape) != 4:
        raise MXNetError(f"{op}: expected a 4-D input (N, C, H, W), got shape {tuple(shape)}")
    if block < 1:
        raise MXNetError(f"{op}: block_size must be positive, got {block}")
    for axis, divisor in axis_divisors:
        if shape[axis] % divisor:
            raise MXNetError(f"{op}: axis {axis} of the input {tuple(shape)} must be a "
                             f"multiple of {divisor} (block_size={block})")


def _d2s_shape(attrs, shape):
    b = attrs["block_size"]
    _block_check("depth_to_space", shape, b, [(1, b * b)])
    n, c, h, w = shape
    return (n, c // (b * b), h * b, w * b)


def _s2d_shape(attrs, shape):
    b = attrs["block_size"]
    _block_check("space_to_depth", shape, b, [(2, b), (3, b)])
    n, c, h, w = shape
    return (n, c * b * b, h // b, w // b)


def _d2s_compute(xp, x, block_size):
    b, out = block_size, _d2s_shape({"block_size": block_size}, x.shape)
    n, c, h, w = x.shape
    blocks = x.reshape(n, b, b, c // (b * b), h, w)
    return xp.transpose(blocks, (0, 3, 4, 1, 5, 2)).reshape(out)


def _s2d_compute(xp, x, block_size):
    b, out = block_size, _s2d_shape({"block_size": block_size}, x.shape)
    n, c, h, w = x.shape
    blocks = x.reshape(n, c, h // b, b, w // b, b)
    return xp.transpose(blocks, (0, 3, 5, 1, 2, 4)).reshape(out)


_BLOCK = {"block_size": Int(doc="side of the blocks moved between depth and space")}

register(OpDef(
    "depth_to_space", inputs=("data",), attrs=_BLOCK, compute=_d2s_compute,
    infer_shape=_unary_rule(_d2s_shape),
    grad=lambda F, ins, outs, gouts, block_size: [
        F.space_to_depth(gouts[0], block_size=block_size)],
    doc="Move blocks of channels into spatial blocks: (N, C, H, W) -> (N, C/b^2, H*b, W*b).",
    example="nd.depth_to_space(nd.zeros((1, 8, 2, 3)), 2).shape  # (1, 2, 4, 6)"))

register(OpDef(
    "space_to_depth", inputs=("data",), attrs=_BLOCK, compute=_s2d_compute,
    infer_shape=_unary_rule(_s2d_shape),
    grad=lambda F, ins, outs, gouts, block_size: [
        F.depth_to_space(gouts[0], block_size=block_size)],
    doc="Move spatial blocks into channels: (N, C, H, W) -> (N, C*b^2, H/b, W/b).",
    example="nd.space_to_depth(nd.zeros((1, 2, 4, 6)), 2).shape  # (1, 8, 2, 3)"))


# -- Pad and its backward ---------------------------------------------------------------------

def _pad_pairs(shape, mode, pad_width, op="Pad"):
    """``[(before, after), ...]`` per axis, checked against MXNet's limits."""
    ndim = len(shape)
    if ndim not in (4, 5):
        raise MXNetError(f"{op}: expected a 4-D or 5-D input, got shape {tuple(shape)}")
    if len(pad_width) != 2 * ndim:
        raise MXNetError(f"{op}: pad_width={tuple(pad_width)} needs {2 * ndim} entries "
                         f"(before, after for each of the {ndim} axes)")
    pairs = list(zip(pad_width[::2], pad_width[1::2]))
    if any(pairs[0]) or any(pairs[1]) or min(pad_width) < 0:
        raise MXNetError(f"{op}: pad_width={tuple(pad_width)} must be non-negative and zero "
                         "for the first two axes (N, C)")
    if mode == "reflect":
        for axis, (before, after) in enumerate(pairs):
            if shape[axis] and max(before, after) >= shape[axis]:
                raise MXNetError(f"{op}: reflect padding of ({before}, {after}) on axis {axis} "
                                 f"must be smaller than its size {shape[axis]}")
    return pairs


def _pad_shape(attrs, shape):
    pairs = _pad_pairs(shape, attrs["mode"], attrs["pad_width"])
    return tuple(d and d + b + a for d, (b, a) in zip(shape, pairs))


def _pad_compute(xp, x, mode, pad_width, constant_value=0.0):
    pairs = _pad_pairs(x.shape, mode, pad_width)
    if mode == "constant":
        return xp.pad(x, pairs, mode="constant", constant_values=x.dtype.type(constant_value))
    return xp.pad(x, pairs, mode=mode)


register(OpDef(
    "Pad", aliases=("pad",), inputs=("data",),
    attrs={"mode": Enum(("constant", "edge", "reflect"), doc="how to fill the padding"),
           "pad_width": Shape(doc="(before_1, after_1, ..., before_N, after_N)"),
           "constant_value": Float(default=0.0, doc="fill value of mode='constant'")},
    compute=_pad_compute, infer_shape=_unary_rule(_pad_shape),
    grad=lambda F, ins, outs, gouts, mode, pad_width, constant_value=0.0: [
        F._backward_Pad(gouts[0], mode=mode, pad_width=pad_width)],
    doc="Pad the spatial axes of a 4-D or 5-D array (constant, edge or reflect).",
    example="nd.pad(nd.zeros((1, 1, 2, 3)), mode='reflect', "
            "pad_width=(0, 0, 0, 0, 1, 1, 1, 1)).shape  # (1, 1, 4, 5)"))


def _unpad_axis(xp, g, axis, before, after, mode):
    """The adjoint of padding one axis: the interior plus what the padding copied from it."""
    n = g.shape[axis] - before - after
    idx = [slice(None)] * g.ndim

    def at(start, stop):
        idx[axis] = slice(start, stop)
        return tuple(idx)

    out = g[at(before, before + n)].copy()
    if mode == "edge":
        out[at(0, 1)] += g[at(0, before)].sum(axis=axis, keepdims=True)
        out[at(n - 1, n)] += g[at(before + n, before + n + after)].sum(axis=axis, keepdims=True)
    elif mode == "reflect":
        out[at(1, before + 1)] += xp.flip(g[at(0, before)], axis)
        out[at(n - 1 - after, n - 1)] += xp.flip(g[at(before + n, before + n + after)], axis)
    return out


def _unpad_shape(attrs, shape):
    pairs = list(zip(attrs["pad_width"][::2], attrs["pad_width"][1::2]))
    out = tuple(d and d - b - a for d, (b, a) in zip(shape, pairs))
    _pad_pairs(out, attrs["mode"], attrs["pad_width"], "_backward_Pad")
    return out


def _unpad_compute(xp, g, mode, pad_width):
    _unpad_shape({"mode": mode, "pad_width": pad_width}, g.shape)
    for axis in range(2, g.ndim):
        g = _unpad_axis(xp, g, axis, pad_width[2 * axis], pad_width[2 * axis + 1], mode)
    return g


register(OpDef(
    "_backward_Pad", inputs=("data",),
    attrs={"mode": Enum(("constant", "edge", "reflect")), "pad_width": Shape()},
    compute=_unpad_compute, infer_shape=_unary_rule(_unpad_shape),
    grad=lambda F, ins, outs, gouts, mode, pad_width: [
        F.Pad(gouts[0], mode=mode, pad_width=pad_width, constant_value=0.0)],
    doc="Gradient of Pad: the interior of the output gradient plus the padding's "
        "contributions added back to the elements it copied."))
