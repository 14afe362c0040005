"""Errors and small shared definitions (MXNet's ``mxnet.base``).

Example:
    >>> import hybridgpu as mx
    >>> issubclass(mx.base.MXNetError, RuntimeError)
    True
"""

from __future__ import annotations

__all__ = ["MXNetError", "NotImplementedForSymbol", "mx_real_t"]

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
