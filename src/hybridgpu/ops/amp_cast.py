"""AMP's cast ops, ``amp_cast`` and ``amp_multicast``, with MXNet 1.9.1's dtype rules: only
float16 and float32 inputs are ever cast. ``amp_cast`` casts such an input to ``dtype``;
``amp_multicast`` casts such inputs to float32 when any input is float32 (else to the first
input's dtype), or with ``cast_narrow`` to float16 when any input is float16 (else float32).
GluonCV's box coders call ``amp_multicast`` on every forward.

Example:
    >>> import hybridgpu as mx
    >>> a, b = mx.nd.ones((2,), dtype="float16"), mx.nd.ones((2,))
    >>> [x.dtype.__name__ for x in mx.nd.amp_multicast(a, b, num_outputs=2)]
    ['float32', 'float32']
"""

from __future__ import annotations

from .attrs import Bool, DType, Int
from .opdef import OpDef, register

__all__ = []

_LOW_OR_SINGLE = ("float16", "float32")


def _cast_target(dtype_in, dtype):
    return dtype if dtype_in in _LOW_OR_SINGLE else dtype_in


register(OpDef(
    "amp_cast", attrs={"dtype": DType(doc="the dtype float16/float32 inputs become")},
    compute=lambda xp, data, dtype: data.astype(_cast_target(data.dtype.name, dtype)),
    infer_shape=lambda a, s: (s, [s[0]]),
    infer_type=lambda a, t: (t, [None if t[0] is None else _cast_target(t[0], a["dtype"])]),
    grad=lambda F, ins, outs, gouts, dtype: [F.amp_cast(gouts[0], dtype=ins[0].dtype)],
    views=False,
    doc="Cast a float16/float32 input to dtype; other dtypes pass unchanged.",
    example="nd.amp_cast(x, dtype='float16')"))


def _widest(types, cast_narrow):
    target = "float32" if cast_narrow else types[0]
    if not cast_narrow and "float32" in types:
        target = "float32"
    elif cast_narrow and "float16" in types:
        target = "float16"
    return target


def _multicast_types(attrs, in_types):
    if any(t is None for t in in_types):
        return in_types, [None] * len(in_types)
    target = _widest(in_types, attrs["cast_narrow"])
    return in_types, [target if t in _LOW_OR_SINGLE else t for t in in_types]


def _multicast_compute(xp, *data, num_outputs, cast_narrow=False, num_args=None):
    _, outs = _multicast_types({"cast_narrow": cast_narrow}, [d.dtype.name for d in data])
    return tuple(d.astype(t) for d, t in zip(data, outs))


register(OpDef(
    "amp_multicast", variadic=True,
    attrs={"num_outputs": Int(doc="number of input/output pairs"),
           "cast_narrow": Bool(default=False, doc="cast to the narrowest type instead")},
    compute=_multicast_compute, infer_shape=lambda a, s: (s, list(s)),
    infer_type=_multicast_types, num_outputs=lambda a: a["num_outputs"],
    grad=lambda F, ins, outs, gouts, **a: [F.amp_cast(g, dtype=x.dtype)
                                           for g, x in zip(gouts, ins)],
    views=False,
    doc="Cast float16/float32 inputs to their widest (or narrowest) common float type.",
    example="a32, b32 = nd.amp_multicast(a16, b32, num_outputs=2)"))
