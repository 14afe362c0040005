"""Creation ops: arrays made from attributes alone (``_zeros``, ``_ones``, ``_full``,
``_arange``, ``_linspace``, ``_eye``) and from another array's shape (``zeros_like``,
``ones_like``).

Two MXNet 1.x rules shape these ops:

* A ``0`` dimension and the empty shape ``()`` mean "unknown" (``nd.zeros((2, 0))`` fails in
  MXNet 1.x). Shape inference passes such shapes on, so a graph can complete them; computing an
  array from one is an MXNetError that says so.
* MXNet's ``ctx`` attribute ("Context of output ... only used for imperative calls") is not in
  these schemas. The ``nd`` functions take ``ctx=`` as the device of the result (it goes to
  ``invoke``, not to the op), and an attribute of the same name would clash with that keyword in
  the generated signatures. A reader of MXNet JSON drops ``ctx`` from ops without inputs.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> op = ops.get("_arange")
    >>> op.compute(np, **op.parse_attrs({"start": 0, "stop": 3, "repeat": 2}))
    array([0., 0., 1., 1., 2., 2.], dtype=float32)
    >>> op.infer_shape(op.parse_attrs({"start": 0, "stop": 3, "repeat": 2}), [])
    ([], [(6,)])
"""

from __future__ import annotations

import math

import numpy as np

from ..base import MXNetError
from ..limits import check_elements
from .attrs import Bool, DType, Float, Int, Shape
from .lowering import Lowering, same_dtype
from .opdef import OpDef, register
from .rules import fixed_type, same_shape

__all__ = ["dtype_attr", "require_known_shape"]

_FILL_DTYPES = ("bool", "float16", "float32", "float64", "int32", "int64", "int8", "uint8")
_RANGE_DTYPES = ("float16", "float32", "float64", "int32", "int64", "int8", "uint8")


def dtype_attr(names, default, doc):
    """A ``DType`` attribute restricted to ``names`` (the dtypes MXNet lists for the op)."""
    spec = DType(default=default, doc=doc)
    spec.NAMES = tuple(names)
    return spec


def require_known_shape(op, shape):
    """``shape`` as a tuple when every dimension is a positive size, else MXNetError.

    MXNet 1.x reads ``()`` and ``0`` dimensions as unknown, so an array cannot be made from them.
    """
    shape = tuple(shape)
    if not shape or any(d <= 0 for d in shape):
        raise MXNetError(
            f"{op}: shape {shape} is not a known shape: every dimension must be a positive size "
            "(MXNet 1.x reads () and 0 dimensions as unknown), e.g. shape=(2, 3)")
    check_elements(shape, op)  # MXNet's per-array limit, before anything is allocated
    return shape


def _partial_shape(shape):
    """Shape inference of a ``shape`` attribute: ``()`` is unknown, 0 dims stay unknown."""
    return tuple(shape) if shape else None


def _shape_rule(attrs, in_shapes):
    return list(in_shapes), [_partial_shape(attrs["shape"])]


_SHAPE = Shape(default=(), doc="the shape of the output")


def _fill_attrs(default_dtype="float32"):
    return {"shape": _SHAPE,
            "dtype": dtype_attr(_FILL_DTYPES, default_dtype, "the dtype of the output")}


def _zeros(xp, shape=(), dtype="float32"):
    return xp.zeros(require_known_shape("_zeros", shape), dtype=dtype)


def _ones(xp, shape=(), dtype="float32"):
    return xp.ones(require_known_shape("_ones", shape), dtype=dtype)


def _full(xp, shape=(), dtype="float32", value=0.0):
    return xp.full(require_known_shape("_full", shape), np.dtype(dtype).type(value), dtype=dtype)


for _name, _compute, _what in (("_zeros", _zeros, "zeros"), ("_ones", _ones, "ones")):
    register(OpDef(
        _name, inputs=(), attrs=_fill_attrs(), compute=_compute, infer_shape=_shape_rule,
        infer_type=fixed_type("dtype"), creation=True,
        doc=f"An array of {_what} of the given shape and dtype.",
        example=f"nd.{_name[1:]}((2, 3), dtype='int32').shape  # (2, 3)"))

register(OpDef(
    "_full", inputs=(), attrs={**_fill_attrs(), "value": Float(doc="the fill value")},
    compute=_full, infer_shape=_shape_rule, infer_type=fixed_type("dtype"), creation=True,
    doc="An array of the given shape and dtype filled with ``value``.",
    example="nd.full((2, 2), 7).asnumpy()  # [[7., 7.], [7., 7.]]"))


# -- ranges -----------------------------------------------------------------------------------

def _arange_count(start, stop, step):
    """How many distinct values ``_arange`` makes; MXNetError on an empty or endless range."""
    if stop is None:
        start, stop = 0.0, start
    if step == 0:
        raise MXNetError("_arange: step must not be 0")
    if (step > 0 and not start < stop) or (step < 0 and not start > stop):
        raise MXNetError(f"_arange: invalid range (start, stop, step) = ({start}, {stop}, "
                         f"{step}): it holds no values")
    return math.ceil((stop - start) / step)


def _arange(xp, start, stop=None, step=1.0, repeat=1, infer_range=False, dtype="float32"):
    if repeat < 1:
        raise MXNetError(f"_arange: repeat must be at least 1, got {repeat}")
    count = _arange_count(start, stop, step)
    first = 0.0 if stop is None else start
    kind = np.dtype(dtype).type  # as MXNet: start and step in the output dtype (2.5 -> 2)
    values = kind(first) + xp.arange(count, dtype=dtype) * kind(step)
    values = values.astype(dtype, copy=False)
    return xp.repeat(values, repeat) if repeat > 1 else values


def _arange_shape(attrs, in_shapes):
    if attrs["infer_range"]:  # the length comes from the graph, not from the attributes
        return list(in_shapes), [None]
    count = _arange_count(attrs["start"], attrs["stop"], attrs["step"])
    return list(in_shapes), [(count * attrs["repeat"],)]


register(OpDef(
    "_arange", inputs=(), compute=_arange, infer_shape=_arange_shape,
    infer_type=fixed_type("dtype"), creation=True,
    attrs={"start": Float(doc="start of the interval (included); the stop when stop is None"),
           "stop": Float(default=None, doc="end of the interval (excluded)"),
           "step": Float(default=1.0, doc="spacing between values"),
           "repeat": Int(default=1, doc="how many times each value is repeated"),
           "infer_range": Bool(default=False,
                               doc="infer the stop from the output size in a graph"),
           "dtype": dtype_attr(_RANGE_DTYPES, "float32", "the dtype of the output")},
    doc="Evenly spaced values in [start, stop), each repeated ``repeat`` times.",
    example="nd.arange(0, 10, 3).asnumpy()  # [0., 3., 6., 9.]"))


def _linspace(xp, start, stop, num, endpoint=True, dtype="float32"):
    if num < 0:
        raise MXNetError(f"_linspace: num must be non-negative, got {num}")
    values = xp.linspace(start, stop, num, endpoint=endpoint, dtype=np.float64)
    return values.astype(dtype)


def _linspace_shape(attrs, in_shapes):
    return list(in_shapes), [(attrs["num"],)]


register(OpDef(
    "_linspace", inputs=(), compute=_linspace, infer_shape=_linspace_shape,
    infer_type=fixed_type("dtype"), creation=True,
    attrs={"start": Float(doc="the first value"),
           "stop": Float(doc="the last value (included when endpoint is True)"),
           "num": Int(doc="how many values"),
           "endpoint": Bool(default=True, doc="whether stop is the last value"),
           "dtype": dtype_attr(_RANGE_DTYPES, "float32", "the dtype of the output")},
    doc="``num`` evenly spaced values from start to stop.",
    example="nd.linspace(0, 1, 5).asnumpy()  # [0., 0.25, 0.5, 0.75, 1.]"))


def _eye_size(N, M):
    if N < 0 or M < 0:
        raise MXNetError(f"_eye: N and M must be non-negative, got N={N}, M={M}")
    return N, M or N


def _eye(xp, N, M=0, k=0, dtype="float32"):
    rows, cols = _eye_size(N, M)
    return xp.eye(rows, cols, k, dtype=dtype)


register(OpDef(
    "_eye", inputs=(), compute=_eye, infer_type=fixed_type("dtype"), creation=True,
    infer_shape=lambda attrs, ins: (list(ins), [_eye_size(attrs["N"], attrs["M"])]),
    attrs={"N": Int(doc="number of rows"),
           "M": Int(default=0, doc="number of columns; 0 means N"),
           "k": Int(default=0, doc="the diagonal: 0 main, > 0 upper, < 0 lower"),
           "dtype": dtype_attr(("float16", "float32", "float64", "int32", "int64", "int8",
                                "uint8"), "float32", "the dtype of the output")},
    doc="A 2-D array with ones on diagonal ``k`` and zeros elsewhere.",
    example="nd.eye(3, k=1).asnumpy()  # ones above the main diagonal"))


# -- from another array -----------------------------------------------------------------------

#: MXNet 1.9.1's zeros_like/ones_like take a dtype and ignore it (GluonCV's CenterNet passes
#: one): the output keeps the input's dtype.
_IGNORED_DTYPE = DType(default=None, doc="accepted and ignored, as MXNet 1.9.1 does: the output "
                       "keeps the input's dtype")


def _zero_grad(F, ins, outs, gouts, **_):
    return [F.zeros_like(ins[0])]


def _fill(value):
    """The lowering of ``zeros_like``/``ones_like``: fill the output buffer."""
    return Lowering(lambda site: [f"{site.outs[0]}.fill({value})"], same_dtype)


register(OpDef(
    "zeros_like", inputs=("data",), compute=lambda xp, x, dtype=None: xp.zeros_like(x),
    attrs={"dtype": _IGNORED_DTYPE}, infer_shape=same_shape, grad=_zero_grad,
    cuda="((void)in0, (T)0)", elementwise=True,
    lower=_fill(0), views=False,
    doc="An array of zeros with the shape and dtype of the input.",
    example="nd.zeros_like(nd.ones((2, 3))).asnumpy()  # all zeros, shape (2, 3)"))

register(OpDef(
    "ones_like", inputs=("data",), compute=lambda xp, x, dtype=None: xp.ones_like(x),
    attrs={"dtype": _IGNORED_DTYPE}, infer_shape=same_shape, grad=_zero_grad,
    cuda="((void)in0, (T)1)", elementwise=True,
    lower=_fill(1), views=False,
    doc="An array of ones with the shape and dtype of the input.",
    example="nd.ones_like(nd.zeros((2, 3))).asnumpy()  # all ones, shape (2, 3)"))
