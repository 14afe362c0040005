"""MXNet's two-operand helpers of ``mx.nd`` (``add``, ``subtract``, ..., ``logical_xor``): each
takes two NDArrays (NumPy broadcasting, the ``broadcast_*`` op), an NDArray and a number in
either order (the ``_*_scalar`` op, or its reflected ``_r*_scalar`` form), or two numbers (plain
Python arithmetic; comparisons and logical ops give the int 0 or 1).

As in MXNet, the result of an array op keeps the array's dtype: a number is cast to it
(``add(int32 array, 2.5)`` adds 2), comparisons give 0/1 in that dtype. ``hypot`` has no such
helper in MXNet (only the ops ``_hypot`` and ``broadcast_hypot``), so none is defined here.

Example:
    >>> from hybridgpu import nd
    >>> nd.add(nd.array([1, 2]), 3).asnumpy()
    array([4., 5.], dtype=float32)
    >>> nd.subtract(10, nd.array([1, 2])).asnumpy()
    array([9., 8.], dtype=float32)
    >>> nd.greater(nd.array([[1], [3]]), nd.array([2, 0])).asnumpy().tolist()
    [[0.0, 1.0], [1.0, 1.0]]
    >>> nd.maximum(2, 3), nd.equal(2, 2)
    (3, 1)
"""

from __future__ import annotations

import numbers
import operator

import numpy as np

from .. import ops
from .imperative import invoke
from .ndarray import NDArray

__all__ = ["add", "subtract", "multiply", "divide", "true_divide", "modulo", "power",
           "maximum", "minimum", "equal", "not_equal", "greater", "greater_equal", "lesser",
           "lesser_equal", "logical_and", "logical_or", "logical_xor"]


def _flag(test):
    return lambda x, y: 1 if test(x, y) else 0


# helper: (array op, scalar op, op for a number on the left, Python function of two numbers)
# A number on the left uses the reflected op (10 - x is _rminus_scalar) or the mirrored
# comparison (1 > x is x < 1).
_TABLE = {
    "add": ("broadcast_add", "_plus_scalar", "_plus_scalar", operator.add),
    "subtract": ("broadcast_sub", "_minus_scalar", "_rminus_scalar", operator.sub),
    "multiply": ("broadcast_mul", "_mul_scalar", "_mul_scalar", operator.mul),
    "divide": ("broadcast_div", "_div_scalar", "_rdiv_scalar", operator.truediv),
    "modulo": ("broadcast_mod", "_mod_scalar", "_rmod_scalar", operator.mod),
    "power": ("broadcast_power", "_power_scalar", "_rpower_scalar", operator.pow),
    "maximum": ("broadcast_maximum", "_maximum_scalar", "_maximum_scalar", max),
    "minimum": ("broadcast_minimum", "_minimum_scalar", "_minimum_scalar", min),
    "equal": ("broadcast_equal", "_equal_scalar", "_equal_scalar", _flag(operator.eq)),
    "not_equal": ("broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar",
                  _flag(operator.ne)),
    "greater": ("broadcast_greater", "_greater_scalar", "_lesser_scalar", _flag(operator.gt)),
    "greater_equal": ("broadcast_greater_equal", "_greater_equal_scalar",
                      "_lesser_equal_scalar", _flag(operator.ge)),
    "lesser": ("broadcast_lesser", "_lesser_scalar", "_greater_scalar", _flag(operator.lt)),
    "lesser_equal": ("broadcast_lesser_equal", "_lesser_equal_scalar", "_greater_equal_scalar",
                     _flag(operator.le)),
    "logical_and": ("broadcast_logical_and", "_logical_and_scalar", "_logical_and_scalar",
                    _flag(lambda x, y: bool(x) and bool(y))),
    "logical_or": ("broadcast_logical_or", "_logical_or_scalar", "_logical_or_scalar",
                   _flag(lambda x, y: bool(x) or bool(y))),
    "logical_xor": ("broadcast_logical_xor", "_logical_xor_scalar", "_logical_xor_scalar",
                    _flag(lambda x, y: bool(x) != bool(y))),
}


def _is_number(value):
    return isinstance(value, (numbers.Number, np.bool_))  # NumPy scalars are Numbers


def _scalar(value):
    """A Python int or float for the op's ``scalar`` attribute (bools count as ints)."""
    if isinstance(value, (bool, np.bool_, numbers.Integral)):
        return int(value)
    return float(value)


def _dispatch(name, lhs, rhs):
    array_op, scalar_op, left_scalar_op, on_numbers = _TABLE[name]
    if isinstance(lhs, NDArray):
        if isinstance(rhs, NDArray):
            return invoke(ops.get(array_op), [lhs, rhs], {})
        if _is_number(rhs):
            return invoke(ops.get(scalar_op), [lhs], {"scalar": _scalar(rhs)})
    elif _is_number(lhs):
        if isinstance(rhs, NDArray):
            return invoke(ops.get(left_scalar_op), [rhs], {"scalar": _scalar(lhs)})
        if _is_number(rhs):
            return on_numbers(lhs, rhs)
    bad, which = (rhs, "rhs") if isinstance(lhs, NDArray) or _is_number(lhs) else (lhs, "lhs")
    raise TypeError(f"nd.{name}: {which} must be an NDArray or a number, got "
                    f"{type(bad).__name__}; convert it with nd.array(...) first")


def add(lhs, rhs):
    """``lhs + rhs`` with broadcasting; either side may be a number.

    Example:
        >>> add(2, 3)
        5
    """
    return _dispatch("add", lhs, rhs)


def subtract(lhs, rhs):
    """``lhs - rhs`` with broadcasting; either side may be a number."""
    return _dispatch("subtract", lhs, rhs)


def multiply(lhs, rhs):
    """``lhs * rhs`` with broadcasting; either side may be a number."""
    return _dispatch("multiply", lhs, rhs)


def divide(lhs, rhs):
    """``lhs / rhs`` with broadcasting (integer arrays divide as C integers)."""
    return _dispatch("divide", lhs, rhs)


def true_divide(lhs, rhs):
    """Same as ``divide`` (MXNet's alias)."""
    return _dispatch("divide", lhs, rhs)


def modulo(lhs, rhs):
    """``lhs % rhs`` with broadcasting; either side may be a number."""
    return _dispatch("modulo", lhs, rhs)


def power(base, exp):
    """``base ** exp`` with broadcasting; either side may be a number."""
    return _dispatch("power", base, exp)


def maximum(lhs, rhs):
    """Elementwise maximum with broadcasting; either side may be a number."""
    return _dispatch("maximum", lhs, rhs)


def minimum(lhs, rhs):
    """Elementwise minimum with broadcasting; either side may be a number."""
    return _dispatch("minimum", lhs, rhs)


def equal(lhs, rhs):
    """1 where ``lhs == rhs`` else 0, in the array's dtype."""
    return _dispatch("equal", lhs, rhs)


def not_equal(lhs, rhs):
    """1 where ``lhs != rhs`` else 0, in the array's dtype."""
    return _dispatch("not_equal", lhs, rhs)


def greater(lhs, rhs):
    """1 where ``lhs > rhs`` else 0, in the array's dtype."""
    return _dispatch("greater", lhs, rhs)


def greater_equal(lhs, rhs):
    """1 where ``lhs >= rhs`` else 0, in the array's dtype."""
    return _dispatch("greater_equal", lhs, rhs)


def lesser(lhs, rhs):
    """1 where ``lhs < rhs`` else 0, in the array's dtype."""
    return _dispatch("lesser", lhs, rhs)


def lesser_equal(lhs, rhs):
    """1 where ``lhs <= rhs`` else 0, in the array's dtype."""
    return _dispatch("lesser_equal", lhs, rhs)


def logical_and(lhs, rhs):
    """1 where both are nonzero else 0, in the array's dtype."""
    return _dispatch("logical_and", lhs, rhs)


def logical_or(lhs, rhs):
    """1 where either is nonzero else 0, in the array's dtype."""
    return _dispatch("logical_or", lhs, rhs)


def logical_xor(lhs, rhs):
    """1 where exactly one is nonzero else 0, in the array's dtype."""
    return _dispatch("logical_xor", lhs, rhs)
