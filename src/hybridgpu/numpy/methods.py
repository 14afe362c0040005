"""``mx.np.ndarray``'s operators and NumPy methods (``a + b``, ``a @ b``, ``a.sum(axis=0)``,
``a.reshape(2, -1)``, ``a.T``, ``a.astype``), attached here, above the functions they call
(the class module cannot import them at its top).

Example:
    >>> import hybridgpu as mx
    >>> a = mx.np.array([[1, 2], [3, 4]])
    >>> (a @ a).sum(), (a > 2).dtype, a.reshape(-1).argmax()
    (array(54.), dtype('bool'), array(3, dtype=int64))
"""

from __future__ import annotations

import numpy as onp

from ..ndarray import NDArray
from ..ndarray.ndarray import check_not_recorded
from ..symbol import Symbol
from . import _dispatch
from . import extra as _extra
from . import manipulation as _shape
from . import math as _math
from . import reduce as _reduce
from .multiarray import ndarray
from .symbol import NumpySymbol

__all__ = ["install"]

_OPERATORS = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
              "mod": "mod", "pow": "power"}
_COMPARE = {"eq": "equal", "ne": "not_equal", "gt": "greater", "ge": "greater_equal",
            "lt": "less", "le": "less_equal"}


_OPERANDS = (NDArray, Symbol, list, tuple, onp.ndarray)


def _forward(fn):
    def method(self, other):
        if not (_math.is_scalar(other) or isinstance(other, _OPERANDS)):
            return NotImplemented
        return fn(self, other)
    return method


def _reflected(fn):
    def method(self, other):
        if not (_math.is_scalar(other) or isinstance(other, _OPERANDS)):
            return NotImplemented
        return fn(other, self)
    return method


def _inplace(fn, symbol):
    def method(self, other):
        check_not_recorded(self, symbol)
        result = fn(self, other)
        self[...] = result.astype(self.dtype) if result.dtype != self.dtype else result
        return self
    return method


def _reshape(self, *shape, **kwargs):
    """``a.reshape(2, 3)`` or ``a.reshape((2, 3))``, NumPy's way."""
    order = kwargs.pop("order", "C")
    if kwargs:
        raise TypeError(f"reshape got unexpected keyword arguments {sorted(kwargs)}")
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return _shape.reshape(self, tuple(shape), order)


def _transpose(self, *axes):
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    return _shape.transpose(self, axes or None)


def _astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
    """A copy in ``dtype`` (the array itself with ``copy=False`` when nothing changes)."""
    if onp.dtype(dtype) == self.dtype:
        return self if not copy or isinstance(self, Symbol) else self.copy()
    return _math.cast_to(self, dtype)


def _flatten(self, order="C"):
    return _shape.reshape(self, (-1,), order)


_METHODS = {
    "reshape": _reshape, "transpose": _transpose, "astype": _astype, "flatten": _flatten,
    "ravel": _flatten,
    "sum": _reduce.sum, "mean": _reduce.mean, "max": _reduce.max, "min": _reduce.min,
    "prod": _reduce.prod, "std": _reduce.std, "var": _reduce.var, "argmax": _reduce.argmax,
    "argmin": _reduce.argmin, "all": _reduce.all, "any": _reduce.any,
    "swapaxes": _shape.swapaxes, "squeeze": _shape.squeeze, "repeat": _shape.repeat,
    "tile": _shape.tile, "flip": _shape.flip, "broadcast_to": _shape.broadcast_to,
    "expand_dims": _shape.expand_dims, "split": _shape.split,
    "clip": _math.clip, "dot": _math.dot, "cumsum": _extra.cumsum, "sort": _extra.sort,
    "argsort": _extra.argsort, "take": _extra.take,
    "abs": _math.make_unary("abs"), "exp": _math.make_unary("exp"),
    "log": _math.make_unary("log"), "sqrt": _math.make_unary("sqrt"),
    "square": _math.make_unary("square"), "sign": _math.make_unary("sign"),
}


def _round(self, decimals=0):
    if decimals:
        scale = 10.0 ** decimals
        return _dispatch.call("round", [self * scale]) / scale
    return _dispatch.call("round", [self])


def attach(cls, inplace=True):
    """Attach the operators and methods to ``cls`` (``ndarray``; ``NumpySymbol`` without the
    in-place operators, which Python then runs as ``x = x + y``)."""
    for dunder, name in _OPERATORS.items():
        fn = _math.make_binary(name)
        setattr(cls, f"__{dunder}__", _forward(fn))
        setattr(cls, f"__r{dunder}__", _reflected(fn))
        if inplace:
            setattr(cls, f"__i{dunder}__", _inplace(fn, f"{dunder}="))
    for dunder, name in _COMPARE.items():
        setattr(cls, f"__{dunder}__", _forward(_math.make_binary(name)))
    cls.__hash__ = None if inplace else object.__hash__
    cls.__matmul__ = _forward(_math.matmul)
    cls.__rmatmul__ = _reflected(_math.matmul)
    cls.__neg__ = lambda self: _dispatch.call("negative", [self])
    cls.__abs__ = lambda self: _dispatch.call("abs", [self])
    cls.__pos__ = lambda self: self
    cls.__invert__ = lambda self: _math.logical_not(self)
    cls.T = property(lambda self: _shape.transpose(self), doc="The axes reversed.")
    cls.round = _round
    for name, fn in _METHODS.items():
        setattr(cls, name, fn)


def install():
    """Attach the operators and methods to ``mx.np.ndarray`` and ``NumpySymbol``."""
    attach(ndarray)
    attach(NumpySymbol, inplace=False)
    NDArray.as_np_ndarray = _as_np_ndarray


def _as_np_ndarray(self):
    """An ``mx.np.ndarray`` sharing this NDArray's data (and its autograd record)."""
    if isinstance(self, ndarray):
        return self
    out = ndarray(self._data, self._ctx)
    out._ag = self._ag
    return out


install()
