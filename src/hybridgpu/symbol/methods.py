"""MXNet's fluent ``Symbol`` methods (``x.reshape((2, 3))``, ``x.sum(axis=1)``,
``x.astype('float16')``...), so ``hybrid_forward`` code written with NDArray methods traces too.

The method table is ``ndarray.methods.METHODS`` (one table for both classes) plus the methods
NDArray defines by hand; each forwards to ``sym.<function>(self, ...)``, looked up at call time.

Example:
    >>> import hybridgpu as mx
    >>> x = mx.sym.var("x", shape=(2, 6))
    >>> x.reshape((3, 4)).sum(axis=1).shape, x.astype("float16").dtype
    ((3,), <class 'numpy.float16'>)
"""

from __future__ import annotations

from .. import symbol as _sym
from ..base import MXNetError
from ..ndarray.methods import METHODS
from .symbol import Symbol

__all__ = ["SYMBOL_METHODS"]

#: method -> sym function; NDArray's op-backed methods plus those NDArray defines by hand.
SYMBOL_METHODS = {**METHODS, "reshape": "reshape", "reshape_like": "reshape_like",
                  "flatten": "flatten", "expand_dims": "expand_dims", "squeeze": "squeeze",
                  "broadcast_to": "broadcast_to", "diag": "diag"}


def _forwarding_method(method, function_name):
    def forward(self, *args, **kwargs):
        fn = getattr(_sym, function_name, None)
        if fn is None:
            raise MXNetError(f"Symbol.{method}: sym.{function_name} is not registered")
        return fn(self, *args, **kwargs)

    forward.__name__ = forward.__qualname__ = method
    forward.__doc__ = (f"Same as ``sym.{function_name}(self, *args, **kwargs)``: MXNet's "
                       f"``Symbol.{method}``.")
    return forward


def astype(self, dtype):
    """``sym.cast(self, dtype=dtype)``."""
    return _sym.cast(self, dtype=dtype)


def _install():
    for method, function_name in SYMBOL_METHODS.items():
        setattr(Symbol, method, _forwarding_method(method, function_name))
    Symbol.astype = astype


_install()
