"""Errors and small shared definitions (MXNet's ``mxnet.base``).

Example:
    >>> import hybridgpu as mx
    >>> issubclass(mx.base.MXNetError, RuntimeError)
    True
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["MXNetError", "NotImplementedForSymbol", "ArgumentTypeError", "mx_real_t",
           "DTYPE_TO_FLAG", "dtype_of_flag", "STYPE_TO_FLAG"]

#: The default floating point type: the NumPy type, as in MXNet (``infer_type`` results and
#: NDArray dtypes compare equal to it).
mx_real_t = np.float32

#: MXNet's numeric dtype flags, the one table of them: a variable's ``__dtype__`` in symbol
#: JSON and the type field of an array in a ``.params`` file.
DTYPE_TO_FLAG = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5,
                 "int64": 6, "bool": 7}
_FLAG_TO_DTYPE = {flag: name for name, flag in DTYPE_TO_FLAG.items()}

#: MXNet's storage-type flags (a variable's ``__storage_type__`` in symbol JSON, the storage
#: type of an array in a ``.params`` file).
STYPE_TO_FLAG = {"undefined": -1, "default": 0, "row_sparse": 1, "csr": 2}


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


def data_dir_default():
    """MXNet's default data folder, ``~/.mxnet`` (``%APPDATA%\\mxnet`` on Windows)."""
    if os.name == "nt" and os.environ.get("APPDATA"):
        return os.path.join(os.environ["APPDATA"], "mxnet")
    return os.path.join(os.path.expanduser("~"), ".mxnet")


def data_dir():
    """The folder for downloaded models and datasets: ``$MXNET_HOME``, else
    ``data_dir_default()``.

    Example:
        >>> import os
        >>> os.environ["MXNET_HOME"] = "/data/mx"; data_dir()
        '/data/mx'
        >>> del os.environ["MXNET_HOME"]
    """
    return os.environ.get("MXNET_HOME", data_dir_default())


def _as_list(obj):
    """``obj`` itself when it is a list or tuple, else ``[obj]``.

    Example:
        >>> _as_list((1, 2)), _as_list(3)
        ((1, 2), [3])
    """
    return obj if isinstance(obj, (list, tuple)) else [obj]


__all__ += ["data_dir", "data_dir_default"]


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


class NotPortedError(AttributeError):  # noqa: N818  (says what it is: a name not ported)
    """A name MXNet 1.x has (or might have) that hybridgpu does not hold, such as a contrib op
    not ported: an AttributeError (so ``hasattr`` and ``getattr(..., default)`` work) whose
    message says where the name was looked up and points to docs/coming_from_mxnet.md.

    Example:
        >>> import hybridgpu as mx
        >>> hasattr(mx.nd.contrib, "no_such_op")
        False
    """


def missing_name_hook(namespace, public):
    """A module ``__getattr__`` for the op namespace dict ``namespace`` (shown as ``public``,
    e.g. ``'mx.nd.contrib'``): a public name it lacks raises NotPortedError naming what the
    namespace holds, the closest names, and docs/coming_from_mxnet.md.

    Example:
        >>> import hybridgpu as mx
        >>> try:
        ...     mx.nd.rellu
        ... except NotPortedError as err:
        ...     print(err)  # doctest: +ELLIPSIS
        mx.nd.rellu is not in hybridgpu (did you mean relu...?): mx.nd holds ... ops here ...
    """
    def __getattr__(name):  # noqa: N807  (PEP 562 module hook)
        if name.startswith("_"):
            raise AttributeError(f"module {public!r} has no attribute {name!r}")
        import difflib

        held = sorted(k for k, v in namespace.items() if not k.startswith("_") and callable(v)
                      and k != "populate" and getattr(v, "__module__", "").startswith("hybridgpu"))
        close = difflib.get_close_matches(name, held, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise NotPortedError(
            f"{public}.{name} is not in hybridgpu{hint}: {public} holds {len(held)} op"
            f"{'s' * (len(held) != 1)} here (dir({public}) lists them), and MXNet 1.x's other "
            "ops are not ported; see docs/coming_from_mxnet.md for what is here and what to use "
            "instead")

    return __getattr__


__all__ += ["NotPortedError", "missing_name_hook"]


class ArgumentTypeError(TypeError, AssertionError):
    """An argument of a kind the function does not take: an NDArray op given a Symbol, a NumPy
    array where an NDArray is needed. MXNet 1.9.1 raises ``AssertionError`` on some of these
    paths and ``TypeError`` on others; this is both, so either ``except`` catches it.

    Example:
        >>> issubclass(ArgumentTypeError, AssertionError), issubclass(ArgumentTypeError, TypeError)
        (True, True)
    """


class ReshapeSizeError(MXNetError, ValueError):
    """``NDArray.reshape`` to a shape of another size: MXNet 1.9.1 raises ``ValueError``
    there, hybridgpu's shape errors are ``MXNetError``; this is both.

    Example:
        >>> issubclass(ReshapeSizeError, ValueError), issubclass(ReshapeSizeError, MXNetError)
        (True, True)
    """


# MXNet's Python-type tuples and helpers, which GluonCV and GluonNLP import from mxnet.base
# (issue 21). numpy's scalar types count as numbers, as in MXNet.
import numpy as _np  # noqa: E402

string_types = (str,)
numeric_types = (float, int, _np.generic)
integer_types = (int, _np.int32, _np.int64)


def py_str(raw):
    """Text of the UTF-8 bytes ``raw`` (MXNet's ``base.py_str``).

    Example:
        >>> py_str(b"relu")
        'relu'
    """
    return raw.decode("utf-8")


__all__ += ["string_types", "numeric_types", "integer_types", "py_str"]
