"""Errors and small shared definitions (MXNet's ``mxnet.base``).

Example:
    >>> import hybridgpu as mx
    >>> issubclass(mx.base.MXNetError, RuntimeError)
    True
"""

from __future__ import annotations

__all__ = ["MXNetError", "mx_real_t"]

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
