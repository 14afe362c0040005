"""Gluon in NumPy mode (after ``npx.set_np()``, or for a call given ``mx.np.ndarray``): the
``F`` that ``hybrid_forward`` gets has ``F.np`` and ``F.npx``, Parameters created then hold
``mx.np.ndarray``, and blocks return ``mx.np.ndarray``.

``F`` stays ``mx.nd`` / ``mx.sym`` outside NumPy mode; inside it, it is a ``FrontEnd`` that
reads every name from ``mx.nd`` / ``mx.sym`` (their ops giving ``mx.np`` arrays or NumPy-mode
Symbols) and adds ``np``/``npx`` (whose functions build Symbols when given Symbols). While a
block is traced in NumPy mode, its inputs and Parameters are ``NumpySymbol``s
(``numpy/symbol.py``: NumPy indexing and methods).

Example:
    >>> import hybridgpu as mx
    >>> with numpy_call():
    ...     F = front_end(mx.nd)
    ...     F.np.sum(mx.np.ones((2, 3))), F.relu(mx.nd.ones(1))
    (array(6.), array([1.]))
    >>> front_end(mx.nd) is mx.nd
    True
"""

from __future__ import annotations

import types

from .. import numpy as _np
from .. import numpy_extension as _npx
from ..ndarray import NDArray
from ..numpy._dispatch import wrap
from ..symbol import Symbol
from ..util import is_np_array, np_array

__all__ = ["FrontEnd", "NumpyArray", "front_end", "in_numpy_mode", "numpy_call", "to_numpy",
           "numpy_parameters", "wrap_all"]

NumpyArray = _np.ndarray


class FrontEnd(types.ModuleType):
    """``mx.nd`` or ``mx.sym`` with ``np`` and ``npx`` added (MXNet's ``F`` in NumPy mode)."""

    def __init__(self, base):
        super().__init__(base.__name__, base.__doc__)
        self._base = base
        self.np = _np
        self.npx = _npx

    def __getattr__(self, name):
        value = getattr(self._base, name)
        if not isinstance(value, types.FunctionType):
            return value
        function = _in_numpy_mode(value)
        setattr(self, name, function)  # found once per name
        return function


def _in_numpy_mode(function):
    """``function`` (an ``nd``/``sym`` op) giving ``mx.np`` arrays / NumPy-mode Symbols."""
    def call(*args, **kwargs):
        return wrap_all(function(*args, **kwargs))

    call.__name__ = call.__qualname__ = function.__name__
    call.__doc__ = function.__doc__
    call.__wrapped__ = function
    return call


def wrap_all(out):
    """NDArrays and Symbols (possibly nested in lists/tuples) as their NumPy-mode classes."""
    if isinstance(out, (NDArray, Symbol)):
        return wrap(out)
    if isinstance(out, (list, tuple)):
        return type(out)(wrap_all(o) for o in out)
    return out


_FRONT_ENDS: dict = {}


def front_end(base):
    """The ``F`` for ``base`` (``mx.nd`` or ``mx.sym``): ``base`` itself outside NumPy mode."""
    if not is_np_array():
        return base
    found = _FRONT_ENDS.get(base.__name__)
    if found is None:
        found = _FRONT_ENDS[base.__name__] = FrontEnd(base)
    return found


def in_numpy_mode():
    """Whether NumPy mode is on in this thread (``npx.set_np()`` or inside ``numpy_call``)."""
    return is_np_array()


def numpy_call():
    """A scope with NumPy mode on (a block called with ``mx.np`` arrays)."""
    return np_array(True)


def to_numpy(out):
    """In NumPy mode, NDArrays and Symbols (possibly nested in lists/tuples) as
    ``mx.np.ndarray`` / ``NumpySymbol``; outside it, ``out`` unchanged."""
    return wrap_all(out) if is_np_array() else out


def numpy_parameters(arrays):
    """Make Parameter arrays ``mx.np.ndarray`` (in place) when NumPy mode is on."""
    if is_np_array():
        for arr in arrays:
            wrap(arr)
