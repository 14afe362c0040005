"""Flatten nested arguments (lists/tuples of arrays or symbols) to a flat list plus a format,
and regroup flat results by a format: how HybridBlocks pass structured inputs and outputs
through one flat graph.

Formats: ``0`` one array (or a single-output symbol), ``n > 1`` a symbol with n outputs
(regrouped as a list), ``-1`` None, a list of formats for a list/tuple.

Example:
    >>> flat, fmt = flatten([1, (2, 3), None], "input", leaf=lambda v: isinstance(v, int))
    >>> flat, fmt
    ([1, 2, 3], [0, [0, 0], -1])
    >>> regroup(["a", "b", "c"], fmt)
    ['a', ['b', 'c'], None]
"""

from __future__ import annotations

__all__ = ["flatten", "regroup"]


def flatten(args, what, leaf, width=lambda v: 0):
    """``(flat list, format)``; ``leaf(v)`` says what counts as one value, ``width(v)`` how
    many outputs a leaf stands for (0 for one)."""
    if args is None:
        return [], -1
    if leaf(args):
        return [args], width(args)
    if not isinstance(args, (list, tuple)):
        raise TypeError(f"HybridBlock {what} must be (nested) list of Symbol or NDArray, but "
                        f"got {args!r} of type {type(args).__name__}")
    flat, fmts = [], []
    for item in args:
        values, fmt = flatten(item, what, leaf, width)
        flat.extend(values)
        fmts.append(fmt)
    return flat, fmts


def regroup(flat, fmt):
    """Undo ``flatten``: rebuild the nested structure from ``flat`` values."""
    value, rest = _regroup(list(flat), fmt)
    if rest:
        raise ValueError(f"{len(rest)} values left over after regrouping by {fmt}")
    return value


def _regroup(flat, fmt):
    if isinstance(fmt, int):
        if fmt == -1:
            return None, flat
        if fmt == 0:
            return flat[0], flat[1:]
        return flat[:fmt], flat[fmt:]
    out = []
    for f in fmt:
        value, flat = _regroup(flat, f)
        out.append(value)
    return out, flat
