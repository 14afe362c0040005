"""Shape and dtype rules shared by many ops (``infer_shape`` / ``infer_type`` building blocks).

Shapes are tuples, ``None`` when unknown; a ``0`` dimension is unknown too.

Example:
    >>> broadcast_shape({}, [(2, 1, 3), (4, 1)])
    ([(2, 1, 3), (4, 1)], [(2, 4, 3)])
    >>> same_shape({}, [(2, 3), None])
    ([(2, 3), (2, 3)], [(2, 3)])
"""

from __future__ import annotations

from ..base import MXNetError

__all__ = ["same_shape", "broadcast_shape", "merge_shapes", "known", "fixed_type", "same_type",
           "broadcast_shapes", "normalize_axis", "check_float"]


def known(shape):
    """True when ``shape`` is fully known (not None and no 0 dims)."""
    return shape is not None and all(d > 0 for d in shape)


def merge_shapes(a, b, what="shapes"):
    """Merge two partially known shapes, dimension by dimension (0 = unknown)."""
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b):
        raise MXNetError(f"{what} do not match: {a} vs {b}")
    merged = []
    for x, y in zip(a, b):
        if x and y and x != y:
            raise MXNetError(f"{what} do not match: {a} vs {b}")
        merged.append(x or y)
    return tuple(merged)


def same_shape(attrs, in_shapes, num_outputs=1):
    """All inputs and outputs share one shape; unknown inputs are filled from known ones."""
    shape = None
    for s in in_shapes:
        shape = merge_shapes(shape, s, "input shapes")
    return [shape] * len(in_shapes), [shape] * num_outputs


def broadcast_shapes(*shapes):
    """NumPy broadcasting of known shapes, with MXNet's error text on a mismatch."""
    ndim = max(len(s) for s in shapes)
    out = []
    for i in range(ndim):
        dims = {s[i - ndim + len(s)] for s in shapes if i - ndim + len(s) >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise MXNetError(f"operands could not be broadcast together with shapes "
                             f"{' '.join(str(s) for s in shapes)}")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def broadcast_shape(attrs, in_shapes):
    """Output of broadcasting all inputs; unknown when any input is unknown."""
    if any(s is None for s in in_shapes):
        return list(in_shapes), [None]
    return list(in_shapes), [broadcast_shapes(*in_shapes)]


def same_type(attrs, in_types, num_outputs=1):
    """All inputs and outputs share the first known dtype."""
    known_types = [t for t in in_types if t is not None]
    dtype = known_types[0] if known_types else None
    for t in known_types:
        if t != dtype:
            raise MXNetError(f"inputs have different dtypes {in_types}; cast them first")
    return [dtype] * len(in_types), [dtype] * num_outputs


def fixed_type(dtype_attr=None, default="float32"):
    """A rule whose outputs have a fixed dtype, or the one named by attribute ``dtype_attr``."""

    def rule(attrs, in_types):
        dtype = attrs.get(dtype_attr) if dtype_attr else None
        return list(in_types), [dtype or default]

    return rule


def normalize_axis(axis, ndim, op="op"):
    """``axis`` in ``[-ndim, ndim)`` as a non-negative int, else MXNetError."""
    if not -ndim <= axis < ndim:
        raise MXNetError(f"{op}: axis {axis} is out of range for an array of {ndim} dims")
    return axis % ndim


def check_float(op, *arrays, dtypes=None):
    """MXNetError naming ``op`` unless every array is floating point (or, with ``dtypes``, of
    one of those dtype names)."""
    for a in arrays:
        if dtypes is None and a.dtype.kind != "f":
            raise MXNetError(f"{op}: only floating point data is supported, got {a.dtype}")
        if dtypes is not None and a.dtype.name not in dtypes:
            raise MXNetError(f"{op}: supports {' and '.join(dtypes)} only, got {a.dtype.name}")
