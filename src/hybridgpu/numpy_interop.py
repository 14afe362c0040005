"""What NumPy's ufuncs do with NDArrays and Symbols (the ``__array_ufunc__`` protocol).

- ``number <op> array`` written with a NumPy scalar (``np.float32(2) * x``) reaches the array
  through NumPy; it gives the array's own operator result, as MXNet does.
- An NDArray with a NumPy array (``nd.ones((2,)) + np.ones(2)``, either order) raises
  ``TypeError`` as MXNet 1.9.1 does ("type <class 'numpy.ndarray'> not supported").
- Other ufuncs on NDArrays (``np.exp(x)``) run on a NumPy copy and return a NumPy array.
- Any other ufunc on a Symbol raises, naming the F function to call instead.
- ``asnumpy()`` of a one-element array of shape ``(1,)`` (what MXNet's ``x.mean()`` gives)
  converts with ``float()``/``int()``/``'%f' %`` as under the NumPy 1.x that MXNet users ran;
  NumPy 2.4 raises ``TypeError`` there (``OneElementArray``, docs/differences.md).

Example:
    >>> import numpy as np
    >>> import hybridgpu as mx
    >>> (np.float32(2) * mx.nd.ones((2,))).asnumpy()
    array([2., 2.], dtype=float32)
    >>> mx.nd.ones((2,)) + np.ones(2)
    Traceback (most recent call last):
    ...
    hybridgpu.base.ArgumentTypeError: type <class 'numpy.ndarray'> not supported: ...
"""

from __future__ import annotations

import numbers

import numpy as np

from .base import ArgumentTypeError

__all__ = ["scalar_operator", "ndarray_ufunc", "OneElementArray", "host_array"]

#: ufunc -> (the operator method for ``array op number``, for ``number op array``)
_OPERATORS = {
    np.add: ("__add__", "__radd__"), np.subtract: ("__sub__", "__rsub__"),
    np.multiply: ("__mul__", "__rmul__"), np.true_divide: ("__truediv__", "__rtruediv__"),
    np.power: ("__pow__", "__rpow__"), np.remainder: ("__mod__", "__rmod__"),
    np.equal: ("__eq__", "__eq__"), np.not_equal: ("__ne__", "__ne__"),
    np.greater: ("__gt__", "__lt__"), np.greater_equal: ("__ge__", "__le__"),
    np.less: ("__lt__", "__gt__"), np.less_equal: ("__le__", "__ge__"),
}


def scalar_operator(cls, ufunc, method, inputs, kwargs):
    """The result of ``array <op> number`` (either order) for an operator ufunc NumPy handed
    to ``cls.__array_ufunc__``; None when the call is not that."""
    if method != "__call__" or kwargs or len(inputs) != 2 or ufunc not in _OPERATORS:
        return None
    first, second = inputs
    forward, reflected = _OPERATORS[ufunc]
    if isinstance(first, cls) and isinstance(second, numbers.Number):
        return getattr(first, forward)(second)
    if isinstance(second, cls) and isinstance(first, numbers.Number):
        return getattr(second, reflected)(first)
    return None


def ndarray_ufunc(cls, ufunc, method, inputs, kwargs):
    """``cls.__array_ufunc__`` for NDArray (see the module docstring)."""
    if any(isinstance(v, np.ndarray) for v in inputs):
        raise ArgumentTypeError(
            f"type {np.ndarray} not supported: NumPy's {ufunc.__name__} got an NDArray and a "
            "NumPy array; an NDArray combines only with NDArrays and numbers: convert the NumPy "
            "array with mx.nd.array(a) (or the NDArray with x.asnumpy())")
    result = scalar_operator(cls, ufunc, method, inputs, kwargs)
    if result is not None:
        return result
    if any(isinstance(v, cls) for v in kwargs.get("out", ())):
        raise ArgumentTypeError(f"NumPy's {ufunc.__name__} cannot write into an NDArray "
                                "(out=); use the nd function with out= instead")
    values = [v.asnumpy() if isinstance(v, cls) else v for v in inputs]
    return getattr(ufunc, method)(*values, **kwargs)


class OneElementArray(np.ndarray):
    """A NumPy array of one element and one or more dimensions that converts to a Python
    number as NumPy 1.x did: MXNet 1.x code writes ``'loss %f' % l.mean().asnumpy()``
    (``mean()`` has shape ``(1,)``), which NumPy 2.4 refuses. Everything else is NumPy's:
    ufunc and reduction results are plain ``numpy.ndarray``.

    Example:
        >>> x = host_array(np.array([1.5], np.float32))
        >>> 'loss %.2f' % x, int(x), type(x + 1).__name__
        ('loss 1.50', 1, 'ndarray')
    """

    def __float__(self):
        return float(self.reshape(-1)[0])

    def __int__(self):
        return int(self.reshape(-1)[0])

    def __complex__(self):
        return complex(self.reshape(-1)[0])

    def __repr__(self):
        return repr(self.view(np.ndarray))

    def __array_wrap__(self, array, context=None, return_scalar=False):
        if return_scalar or array.ndim == 0:  # NumPy 1.x passes no return_scalar
            return array[()]
        return array.view(np.ndarray)


def host_array(array):
    """``array`` as ``asnumpy()`` hands it out: a ``OneElementArray`` view when it holds one
    element in one or more dimensions, else ``array`` itself."""
    if array.ndim >= 1 and array.size == 1 and type(array) is np.ndarray:
        return array.view(OneElementArray)
    return array
