"""MXNet's reshape special codes, shared by ``NDArray.reshape`` and the ``Reshape`` op.

``0`` copies a dimension, ``-1`` infers one, ``-2`` copies all the rest, ``-3`` merges two
consecutive dimensions, ``-4`` splits one into the next two codes (one of which may be -1).
``reverse=True`` matches the codes from the right.

Example:
    >>> target_shape((2, 3, 4), (-4, 1, 2, -2))
    (1, 2, 3, 4)
    >>> target_shape((10, 5, 4), (-1, 0), reverse=True)
    (50, 4)
"""

from __future__ import annotations

import math

from ..base import MXNetError

__all__ = ["target_shape"]


def _fail(src, codes, why):
    raise MXNetError(f"Reshape: cannot reshape {tuple(src)} with shape={tuple(codes)}: {why}")


def _expand(src, codes):
    """Apply the codes left to right; returns dims with None where -1 is still unknown."""
    out, i, k = [], 0, 0
    while k < len(codes):
        code = codes[k]
        if code > 0:
            out.append(code)
            i += 1
        elif code == 0:
            if i >= len(src):
                _fail(src, codes, "code 0 has no input dimension to copy")
            out.append(src[i])
            i += 1
        elif code == -1:
            out.append(None)
            i += 1
        elif code == -2:
            out.extend(src[i:])
            i = len(src)
        elif code == -3:
            if i + 1 >= len(src):
                _fail(src, codes, "code -3 needs two input dimensions to merge")
            out.append(src[i] * src[i + 1])
            i += 2
        elif code == -4:
            if k + 2 >= len(codes) or i >= len(src):
                _fail(src, codes, "code -4 needs an input dimension and two codes after it")
            a, b = codes[k + 1], codes[k + 2]
            if a == -1 and b == -1 or a < -1 or b < -1:
                _fail(src, codes, "code -4 takes two sizes, at most one of them -1")
            d = src[i]
            a = d // b if a == -1 else a
            b = d // a if b == -1 else b
            if a * b != d:
                _fail(src, codes, f"cannot split dimension {d} into {a} x {b}")
            out.extend([a, b])
            i += 1
            k += 2
        else:
            _fail(src, codes, f"unknown code {code}")
        k += 1
    return out


def target_shape(src, codes, reverse=False):
    """The shape ``src`` becomes under MXNet's reshape ``codes``."""
    src, codes = tuple(src), tuple(codes)
    if reverse:
        out = _expand(src[::-1], codes[::-1])[::-1]
    else:
        out = _expand(src, codes)
    size = math.prod(src)
    if out.count(None) > 1:
        _fail(src, codes, "more than one -1")
    if None in out:
        rest = math.prod(d for d in out if d is not None)
        if rest == 0 or size % rest:
            _fail(src, codes, f"size {size} is not divisible by {rest}")
        out[out.index(None)] = size // rest
    if math.prod(out) != size:
        _fail(src, codes, f"target size {math.prod(out)} differs from the input's {size}")
    return tuple(out)
