"""Errors and small shared definitions (MXNet's ``mxnet.base``).

Example:
    >>> import hybridgpu as mx
    >>> issubclass(mx.base.MXNetError, RuntimeError)
    True
"""

from __future__ import annotations

__all__ = ["MXNetError", "NotImplementedForSymbol", "mx_real_t", "DTYPE_TO_FLAG",
           "dtype_of_flag"]

#: The default floating point type, as in MXNet.
mx_real_t = "float32"

#: MXNet's numeric dtype flags, the one table of them: a variable's ``__dtype__`` in symbol
#: JSON and the type field of an array in a ``.params`` file.
DTYPE_TO_FLAG = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5,
                 "int64": 6, "bool": 7}
_FLAG_TO_DTYPE = {flag: name for name, flag in DTYPE_TO_FLAG.items()}


def dtype_of_flag(flag):
    """The dtype name of MXNet's numeric dtype ``flag`` (an int, or its digits as JSON writes
    them); None for a flag without a dtype here.

    Example:
        >>> dtype_of_flag(0), dtype_of_flag("6"), dtype_of_flag(12)
        ('float32', 'int64', None)
    """
    if isinstance(flag, str):
        if not flag.isdigit():
            return None
        flag = int(flag)
    return _FLAG_TO_DTYPE.get(flag)


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
