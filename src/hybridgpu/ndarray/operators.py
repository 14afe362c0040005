"""``NDArray``'s arithmetic, comparison and in-place operators: ``a + b`` is ``broadcast_add``,
``a + 1`` is ``_plus_scalar``, ``a += b`` writes into ``a``; each runs its registry op through
``imperative.invoke``.

They are attached to the class here, above the dispatch point, because ``invoke`` wraps its
results in ``NDArray``: the class module does not import the dispatcher at its top.

Example:
    >>> import hybridgpu as mx
    >>> mx.nd.ones((2, 3)) + 1
    <BLANKLINE>
    [[2. 2. 2.]
     [2. 2. 2.]]
    <NDArray 2x3 @cpu(0)>
    >>> (mx.nd.ones((2,)) >= mx.nd.array([1, 2])).asnumpy().tolist()
    [1.0, 0.0]
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import ops
from ..base import ArgumentTypeError
from .imperative import invoke
from .ndarray import NDArray, check_not_recorded

__all__ = ["install"]

_NOATTR: dict = {}


def _scalar_attr(value):
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    if not isinstance(value, numbers.Number):
        return None
    return {"scalar": value}


# -- operators: one table, each entry (array op, scalar op, reflected scalar op) -----------------
_BINARY = {
    "add": ("broadcast_add", "_plus_scalar", "_plus_scalar"),
    "sub": ("broadcast_sub", "_minus_scalar", "_rminus_scalar"),
    "mul": ("broadcast_mul", "_mul_scalar", "_mul_scalar"),
    "truediv": ("broadcast_div", "_div_scalar", "_rdiv_scalar"),
    "mod": ("broadcast_mod", "_mod_scalar", "_rmod_scalar"),
    "pow": ("broadcast_power", "_power_scalar", "_rpower_scalar"),
}
_COMPARE = {
    "eq": ("broadcast_equal", "_equal_scalar"),
    "ne": ("broadcast_not_equal", "_not_equal_scalar"),
    "gt": ("broadcast_greater", "_greater_scalar"),
    "ge": ("broadcast_greater_equal", "_greater_equal_scalar"),
    "lt": ("broadcast_lesser", "_lesser_scalar"),
    "le": ("broadcast_lesser_equal", "_lesser_equal_scalar"),
}
_INPLACE_SYMBOL = {"broadcast_add": "+=", "broadcast_sub": "-=", "broadcast_mul": "*=",
                   "broadcast_div": "/=", "broadcast_mod": "%=", "broadcast_power": "**="}


def _refuse_numpy_array(other):
    """MXNet's TypeError for an NDArray combined with a NumPy array, raised here rather than
    left to NumPy's reflected operator (NumPy 1.x turns a failed ``==`` into ``False``)."""
    if isinstance(other, np.ndarray):
        raise ArgumentTypeError(
            f"type {type(other)} not supported: an NDArray combines only with NDArrays and "
            "numbers; convert the NumPy array with mx.nd.array(a) (or the NDArray with "
            "x.asnumpy())")


def _binary_method(array_name, scalar_name):
    array_op, scalar_op = ops.get(array_name), ops.get(scalar_name)

    def method(self, other):
        if isinstance(other, NDArray):
            return invoke(array_op, [self, other], _NOATTR)
        _refuse_numpy_array(other)
        attrs = _scalar_attr(other)
        if attrs is None:
            return NotImplemented
        return invoke(scalar_op, [self], attrs)

    return method


def _inplace_method(array_name, scalar_name):
    array_op, scalar_op = ops.get(array_name), ops.get(scalar_name)
    symbol = _INPLACE_SYMBOL[array_name]

    def method(self, other):
        check_not_recorded(self, symbol)
        if isinstance(other, NDArray):
            return invoke(array_op, [self, other], _NOATTR, out=self)
        _refuse_numpy_array(other)
        attrs = _scalar_attr(other)
        if attrs is None:
            return NotImplemented
        return invoke(scalar_op, [self], attrs, out=self)

    return method


def install():
    """Attach the operators to ``NDArray`` (idempotent)."""
    for name, (array_op, scalar_op, rscalar_op) in _BINARY.items():
        setattr(NDArray, f"__{name}__", _binary_method(array_op, scalar_op))
        setattr(NDArray, f"__r{name}__", _binary_method(array_op, rscalar_op))
        setattr(NDArray, f"__i{name}__", _inplace_method(array_op, scalar_op))
    for name, (array_op, scalar_op) in _COMPARE.items():
        setattr(NDArray, f"__{name}__", _binary_method(array_op, scalar_op))
    NDArray.__div__, NDArray.__rdiv__, NDArray.__idiv__ = (
        NDArray.__truediv__, NDArray.__rtruediv__, NDArray.__itruediv__)
    negative, absolute = ops.get("negative"), ops.get("abs")
    NDArray.__neg__ = lambda self: invoke(negative, [self], _NOATTR)
    NDArray.__pos__ = lambda self: self
    NDArray.__abs__ = lambda self: invoke(absolute, [self], _NOATTR)


install()
