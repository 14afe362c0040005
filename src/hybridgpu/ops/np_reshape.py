"""``_npx_reshape`` (``npx.reshape``): NumPy-mode reshape with MXNet 1.9's special codes
(different from ``nd.reshape``'s): ``-1`` infers a dimension, ``-2`` copies the input's
dimension, ``-3`` drops an input dimension of size 1, ``-4`` copies every remaining dimension,
``-5`` merges two consecutive input dimensions, ``-6`` splits one into the next two values (one
may be -1); ``reverse=True`` reads both shapes from the right. MXNet 1.9 writes this op when a
NumPy-mode block indexes with an integer (``x[:, 0]``).

Example:
    >>> target_shape((2, 3, 4), (-2, -1)), target_shape((2, 3, 4), (-6, 1, 2, -4))
    ((2, 12), (1, 2, 3, 4))
"""

from __future__ import annotations

import math

from ..base import MXNetError
from .attrs import Bool, Shape, Str
from .opdef import OpDef, register

__all__ = ["target_shape"]


def _fail(src, codes, why):
    raise MXNetError(f"npx.reshape: cannot reshape {tuple(src)} with newshape={tuple(codes)}: "
                     f"{why}")


def _expand(src, codes):
    out, i, k = [], 0, 0
    while k < len(codes):
        code = codes[k]
        if code >= 0 or code == -1:
            out.append(None if code == -1 else code)
            i += 1
        elif code == -2:
            out.append(src[i])
            i += 1
        elif code == -3:
            if src[i] != 1:
                _fail(src, codes, f"-3 drops a dimension of size 1, got {src[i]}")
            i += 1
        elif code == -4:
            out.extend(src[i:])
            i = len(src)
        elif code == -5:
            out.append(src[i] * src[i + 1])
            i += 2
        elif code == -6:
            d1, d2 = codes[k + 1], codes[k + 2]
            if d1 == -1:
                d1 = src[i] // d2
            if d2 == -1:
                d2 = src[i] // d1
            out += [d1, d2]
            i, k = i + 1, k + 2
        else:
            _fail(src, codes, f"unknown code {code}")
        k += 1
    return out


def target_shape(src, codes, reverse=False):
    """The shape ``npx.reshape`` gives an input of shape ``src`` for ``codes``."""
    src, codes = tuple(src), tuple(codes)
    if reverse:
        return tuple(reversed(target_shape(src[::-1], _reverse_codes(codes))))
    try:
        out = _expand(src, codes)
    except IndexError:
        _fail(src, codes, "the codes use more dimensions than the input has")
    if out.count(None) > 1:
        _fail(src, codes, "more than one dimension is inferred")
    known = math.prod(d for d in out if d is not None)
    if None in out:
        out[out.index(None)] = math.prod(src) // max(known, 1)
    if math.prod(out) != math.prod(src):
        _fail(src, codes, f"the sizes differ ({math.prod(src)} vs {math.prod(out)})")
    return tuple(out)


def _reverse_codes(codes):
    out, k = [], 0
    groups = []
    while k < len(codes):
        if codes[k] == -6:
            groups.append([-6, codes[k + 2], codes[k + 1]])
            k += 3
        else:
            groups.append([codes[k]])
            k += 1
    for group in reversed(groups):
        out.extend(group)
    return tuple(out)


def _shape_rule(attrs, in_shapes):
    shape = in_shapes[0]
    if shape is None:
        return in_shapes, [None]
    return in_shapes, [target_shape(shape, attrs["newshape"], attrs["reverse"])]


def _compute(xp, x, newshape, reverse=False, order="C"):
    return x.reshape(target_shape(x.shape, newshape, reverse))


def _grad(F, ins, outs, gouts, newshape, reverse=False, order="C"):
    return [F._np_reshape(gouts[0], newshape=ins[0].shape)]


register(OpDef(
    "_npx_reshape", attrs={"newshape": Shape(doc="the new shape, with MXNet's NumPy-mode codes"),
                           "reverse": Bool(default=False, doc="read the codes from the right"),
                           "order": Str(default="C", doc="only 'C' is supported")},
    compute=_compute, infer_shape=_shape_rule, grad=_grad,
    doc="npx.reshape: reshape with MXNet's NumPy-mode codes (-1 infer, -2 copy, -3 drop a 1, "
        "-4 copy the rest, -5 merge two, -6 split one)."))
