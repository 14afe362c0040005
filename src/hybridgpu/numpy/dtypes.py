"""MXNet 1.9's dtype rules for ``mx.np`` (checked against MXNet 1.9.1; they differ from
NumPy's in places, noted below).

* Creation without a dtype gives float32 (``np.array([1, 2])``, ``np.arange(3)``,
  ``np.full((2,), 3)``); a NumPy array keeps its dtype.
* Two arrays of different dtypes: an integer or boolean with a float gives the float's dtype
  (int64 + float32 is float32, NumPy says float64); otherwise NumPy's promotion; bool with
  bool in arithmetic gives float32.
* An array with a Python scalar keeps the array's dtype (int32 + 1.5 is int32: the scalar is
  cast, as MXNet does); a boolean array with a scalar is float32.
* True division of integers gives float32.

Example:
    >>> import numpy as onp
    >>> binary_result(onp.dtype("int64"), onp.dtype("float32")).name
    'float32'
    >>> scalar_result(onp.dtype("int32"), 1.5).name
    'int32'
"""

from __future__ import annotations

import numpy as np

__all__ = ["DEFAULT", "binary_result", "scalar_result", "divide_result", "creation_dtype"]

DEFAULT = np.dtype(np.float32)


def _is_float(dtype):
    return dtype.kind == "f"


def binary_result(a, b, arithmetic=True):
    """The dtype of an arithmetic op on arrays of dtypes ``a`` and ``b``."""
    a, b = np.dtype(a), np.dtype(b)
    if a == b:
        return DEFAULT if (arithmetic and a.kind == "b") else a
    if _is_float(a) != _is_float(b):
        return a if _is_float(a) else b
    return np.promote_types(a, b)


def scalar_result(a, scalar):
    """The dtype of an op on an array of dtype ``a`` and a Python scalar."""
    a = np.dtype(a)
    return DEFAULT if a.kind == "b" else a


def divide_result(dtype):
    """True division's result dtype: integers and booleans give float32."""
    dtype = np.dtype(dtype)
    return dtype if _is_float(dtype) else DEFAULT


def creation_dtype(dtype, data=None):
    """The dtype ``np.array(data, dtype)`` gets: ``dtype`` when given, a NumPy array's own,
    else float32 (Python booleans too, as in MXNet 1.9)."""
    if dtype is not None:
        return np.dtype(dtype)
    if isinstance(data, np.ndarray):
        return data.dtype
    return DEFAULT
