"""Errors and small shared definitions (MXNet's ``mxnet.base``).

Example:
    >>> import hybridgpu as mx
    >>> issubclass(mx.base.MXNetError, RuntimeError)
    True
"""

from __future__ import annotations

__all__ = ["MXNetError", "NotImplementedForSymbol", "ArgumentTypeError", "mx_real_t"]

#: The default floating point type, as in MXNet.
mx_real_t = "float32"


class MXNetError(RuntimeError):
    """Error raised by hybridgpu where MXNet raises ``mxnet.base.MXNetError``.

    Example:
        >>> try:
        ...     raise MXNetError("FullyConnected: num_hidden is required")
        ... except RuntimeError as err:
        ...     print(err)
        FullyConnected: num_hidden is required
    """


class NotImplementedForSymbol(MXNetError):  # noqa: N818  (MXNet's name)
    """An NDArray-only operation (a value, an in-place op) was used on a Symbol; MXNet's name,
    kept so ``except mx.base.NotImplementedForSymbol`` works. hybridgpu raises its subclass
    ``hybridgpu.symbol.NotAvailableOnSymbol``, whose message says what to use instead."""


class ArgumentTypeError(TypeError, AssertionError):
    """An argument of a kind the function does not take: an NDArray op given a Symbol, a NumPy
    array where an NDArray is needed. MXNet 1.9.1 raises ``AssertionError`` on some of these
    paths and ``TypeError`` on others; this is both, so either ``except`` catches it.

    Example:
        >>> issubclass(ArgumentTypeError, AssertionError), issubclass(ArgumentTypeError, TypeError)
        (True, True)
    """
