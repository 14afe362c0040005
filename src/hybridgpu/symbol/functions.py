"""MXNet's Python-level ``mx.sym`` functions (``mxnet/symbol/symbol.py``): ``pow``/``power``,
``maximum``, ``minimum``, ``hypot``; ``zeros``, ``ones``, ``full``, ``eye``, ``arange``,
``linspace``; ``histogram`` and ``split_v2``. They pick the op (and so the node's automatic name)
exactly as MXNet does:

==================  ==================  ======================  ======================
function            Symbol, Symbol      Symbol, number          number, Symbol
==================  ==================  ======================  ======================
``pow``/``power``   ``_power``          ``_power_scalar``       ``_rpower_scalar``
``maximum``         ``_maximum``        ``_maximum_scalar``     ``_maximum_scalar``
``minimum``         ``_minimum``        ``_minimum_scalar``     ``_minimum_scalar``
``hypot``           ``_hypot``          ``_hypot_scalar``       ``_hypot_scalar``
==================  ==================  ======================  ======================

Two numbers give a Python number (``pow(2, 3) == 8``). The Symbol/Symbol ops need equal shapes,
as in MXNet; use ``broadcast_power`` and friends to broadcast. ``mx.sym`` has no ``equal``,
``greater``, ... helpers in MXNet 1.9 (only the operators ``==``, ``>``, ...), so none are here.

The creation functions take MXNet's keywords besides their own: ``name``, ``attr`` (a dict of
string attributes for the node, merged with the current ``AttrScope``), ``ctx`` (accepted and
ignored: a graph is placed when it is bound) and ``__key__`` attributes.

Example:
    >>> import hybridgpu as mx
    >>> x = mx.sym.var("x")
    >>> with mx.name.NameManager():  # fresh automatic-name counters
    ...     pow(x, 2).name, pow(2, x).name, maximum(x, x).name, pow(2, 3)
    ('_powerscalar0', '_rpowerscalar0', '_maximum0', 8)
    >>> zeros((2, 3), dtype="int32").infer_type()[1], arange(0, 10, 3).infer_shape()[1]
    ([<class 'numpy.int32'>], [(4,)])
    >>> len(split_v2(x, 3)), split_v2(x, (1, 4), axis=1).infer_shape(x=(2, 6))[1]
    (3, [(2, 1), (2, 3), (2, 2)])
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import ops
from ..ndarray.splitting import split_indices
from .symbol import Symbol, apply_op

__all__ = ["pow", "power", "maximum", "minimum", "hypot", "eye", "zeros", "ones", "full",
           "arange", "linspace", "histogram", "split_v2"]

_FLOAT32 = "float32"


# -- helpers ----------------------------------------------------------------------------------

def _make(op_name, hint, inputs, given, name=None, attr=None):
    """A Symbol of op ``op_name`` over ``inputs`` with the attributes ``given`` (written to
    JSON as given), named ``name`` or ``hint<k>``."""
    op = ops.get(op_name)
    attrs = op.parse_attrs(given, len(inputs) if op.variadic else None)
    return apply_op(op, hint, list(inputs), attrs, given, name=name, attr=attr)


def _split_keywords(kwargs):
    """``(name, attr, op attributes)`` from the extra keywords MXNet's helpers pass on:
    ``__key__`` entries join ``attr`` (node attributes), ``ctx`` is dropped."""
    kwargs = dict(kwargs)
    name = kwargs.pop("name", None)
    attr = dict(kwargs.pop("attr", None) or {})
    kwargs.pop("ctx", None)
    for key in [k for k in kwargs if k.startswith("__") and k.endswith("__")]:
        attr[key] = str(kwargs.pop(key))
    return name, attr or None, kwargs


def _is_number(value):
    return isinstance(value, (numbers.Number, np.bool_)) and not isinstance(value, Symbol)


def _scalar(value):
    """The ``scalar`` attribute: a Python int for ints and bools, else a float (so MXNet's
    JSON text ``'2'`` / ``'2.5'`` comes out)."""
    if isinstance(value, (bool, np.bool_, numbers.Integral)):
        return int(value)
    return float(value)


def _binary(fn_name, left, right, table, on_numbers):
    """Dispatch a two-operand helper on Symbol/number operands (see the module table)."""
    array_op, scalar_op, reflected_op = table
    if isinstance(left, Symbol):
        if isinstance(right, Symbol):
            return _make(array_op, array_op, [left, right], {})
        if _is_number(right):
            return _make(scalar_op, scalar_op.replace("_scalar", "scalar"), [left],
                         {"scalar": _scalar(right)})
    elif _is_number(left):
        if isinstance(right, Symbol):
            return _make(reflected_op, reflected_op.replace("_scalar", "scalar"), [right],
                         {"scalar": _scalar(left)})
        if _is_number(right):
            return on_numbers(left, right)
    raise TypeError(f"sym.{fn_name}: types ({type(left).__name__}, {type(right).__name__}) "
                    "not supported; each operand must be a Symbol or a number")


# -- two-operand math -------------------------------------------------------------------------

def pow(base, exp):  # noqa: A001 (MXNet's name)
    """``base ** exp`` elementwise; either may be a number (two numbers give a number).

    Example:
        >>> import hybridgpu as mx
        >>> pow(mx.sym.var("b"), mx.sym.var("e")).list_arguments()
        ['b', 'e']
    """
    return _binary("pow", base, exp, ("_power", "_power_scalar", "_rpower_scalar"),
                   lambda b, e: b ** e)


def power(base, exp):
    """Same as ``pow``."""
    return _binary("power", base, exp, ("_power", "_power_scalar", "_rpower_scalar"),
                   lambda b, e: b ** e)


def maximum(left, right):
    """Elementwise maximum; either may be a number (two numbers give ``max``)."""
    return _binary("maximum", left, right,
                   ("_maximum", "_maximum_scalar", "_maximum_scalar"), max)


def minimum(left, right):
    """Elementwise minimum; either may be a number (two numbers give ``min``)."""
    return _binary("minimum", left, right,
                   ("_minimum", "_minimum_scalar", "_minimum_scalar"), min)


def hypot(left, right):
    """``sqrt(left**2 + right**2)`` elementwise; either may be a number (two numbers give
    ``numpy.hypot``)."""
    return _binary("hypot", left, right, ("_hypot", "_hypot_scalar", "_hypot_scalar"),
                   np.hypot)


# -- creation ---------------------------------------------------------------------------------

def _dtype_name(dtype):
    """``dtype`` as the name MXNet writes (``'float32'`` for None); unknown ones are left to
    the op's schema, which names the valid choices."""
    if dtype is None:
        return _FLOAT32
    try:
        return np.dtype(dtype).name
    except TypeError:
        return dtype


def _creation(op_name, given, kwargs):
    name, attr, rest = _split_keywords(kwargs)
    given = {**given, **rest}
    return _make(op_name, op_name, [], given, name=name, attr=attr)


def zeros(shape, dtype=None, **kwargs):
    """A Symbol of zeros of ``shape`` (op ``_zeros``); ``dtype`` defaults to float32.

    Example:
        >>> zeros((2, 3), name="z").infer_shape()
        ([], [(2, 3)], [])
    """
    return _creation("_zeros", {"shape": shape, "dtype": _dtype_name(dtype)}, kwargs)


def ones(shape, dtype=None, **kwargs):
    """A Symbol of ones of ``shape`` (op ``_ones``); ``dtype`` defaults to float32."""
    return _creation("_ones", {"shape": shape, "dtype": _dtype_name(dtype)}, kwargs)


def full(shape, val, dtype=None, **kwargs):
    """A Symbol of ``shape`` filled with ``val`` (op ``_full``); ``dtype`` defaults to
    float32."""
    given = {"shape": shape, "dtype": _dtype_name(dtype), "value": float(val)}
    return _creation("_full", given, kwargs)


def eye(N, M=0, k=0, dtype=None, **kwargs):
    """A 2-D Symbol, ``N x M`` (``M=0``: ``N x N``), with ones on diagonal ``k`` (op
    ``_eye``)."""
    given = {"N": N, "M": M, "k": k, "dtype": _dtype_name(dtype)}
    return _creation("_eye", given, kwargs)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=False, name=None, dtype=None):
    """Values in ``[start, stop)`` (``[0, start)`` when ``stop`` is None) spaced by ``step``,
    each repeated ``repeat`` times (op ``_arange``).

    Example:
        >>> arange(0, 3, repeat=2, name="r").infer_shape()[1]
        [(6,)]
    """
    given = {"start": start, "stop": stop, "step": step, "repeat": repeat,
             "infer_range": infer_range, "dtype": _dtype_name(dtype)}
    return _make("_arange", "_arange", [], given, name=name)


def linspace(start, stop, num, endpoint=True, name=None, dtype=None):
    """``num`` evenly spaced values from ``start`` to ``stop`` (op ``_linspace``)."""
    given = {"start": start, "stop": stop, "num": num, "endpoint": endpoint,
             "dtype": _dtype_name(dtype)}
    return _make("_linspace", "_linspace", [], given, name=name)


# -- histogram and split_v2 -------------------------------------------------------------------

def histogram(a, bins=10, range=None, **kwargs):  # noqa: A002 (MXNet's argument name)
    """Counts of ``a``'s values per bin and the bin edges: a Symbol of two outputs (op
    ``_histogram``).

    ``bins`` is an int (then ``range=(lo, hi)`` is required: a graph cannot look at the data
    to find it) or a Symbol of increasing edges (``range`` is then ignored, as in MXNet).

    Example:
        >>> import hybridgpu as mx
        >>> h = histogram(mx.sym.var("x"), bins=5, range=(0, 10), name="h")
        >>> h.list_outputs(), h.infer_shape(x=(8,))[1], h.infer_type(x="float64")[1]
        (['h_output0', 'h_output1'], [(5,), (6,)], [<class 'numpy.int64'>, <class 'numpy.float64'>])
    """
    name, attr, rest = _split_keywords(kwargs)
    if isinstance(bins, Symbol):
        return _make("_histogram", "_histogram", [a, bins], rest, name=name, attr=attr)
    if isinstance(bins, numbers.Integral) and not isinstance(bins, bool):
        if range is None:
            raise ValueError("null range is not supported in symbol mode: sym.histogram "
                             "with an int bins needs range=(lo, hi)")
        given = {"bin_cnt": int(bins), "range": range, **rest}
        return _make("_histogram", "_histogram", [a], given, name=name, attr=attr)
    raise ValueError(f"bins argument should be either an integer or an NDArray (a Symbol "
                     f"here), got {type(bins).__name__}")


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Split ``ary`` along ``axis``: into ``indices_or_sections`` equal pieces (an int), or
    before each index of a tuple (as ``numpy.split``). One output per piece (op ``_split_v2``).

    As MXNet writes it, an int becomes the op's ``sections`` (the graph checks that it divides
    the axis; ``indices`` is ``[]``) and a tuple its ``indices`` (the start of each piece, first
    0, written as a list). A list of ints
    is accepted like a tuple (MXNet accepts only tuples).

    Example:
        >>> import hybridgpu as mx
        >>> s = split_v2(mx.sym.var("x"), (2, 3), axis=1)
        >>> s.infer_shape(x=(4, 5))[1]
        [(4, 2), (4, 1), (4, 2)]
    """
    value = indices_or_sections
    if isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, bool):
        if value < 1:
            raise ValueError(f"split_v2: indices_or_sections={value} pieces: it must be at "
                             "least 1")
        indices, sections = [], int(value)
    elif isinstance(value, (tuple, list)) and all(
            isinstance(i, (numbers.Integral, np.integer)) and not isinstance(i, bool)
            for i in value):
        indices, sections = list(split_indices(tuple(int(i) for i in value), 0, axis)), 0
    else:
        raise ValueError(f"indices_or_sections must either int or tuple of ints, got "
                         f"{value!r}")
    given = {"indices": indices, "axis": axis, "squeeze_axis": squeeze_axis,
             "sections": sections}
    return _make("_split_v2", "_split_v2", [ary], given)
