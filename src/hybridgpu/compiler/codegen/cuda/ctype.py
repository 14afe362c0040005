"""NumPy dtypes as CUDA C types: how an element is stored, computed, loaded and stored.

float16 is stored as ``__half`` and computed in ``float``; float32 and float64 compute in their
own type; integer types are supported for copies and casts (``Cast`` kernels), not for math.

Example:
    >>> STORAGE["float16"], COMPUTE["float16"], load("float16", "i0[j]", "float")
    ('__half', 'float', '__half2float(i0[j])')
    >>> store("float16", "v"), store("float32", "v")
    ('__float2half_rn(v)', 'v')
"""

from __future__ import annotations

__all__ = ["STORAGE", "COMPUTE", "FLOATS", "load", "store", "supported"]

#: C type of an element in memory, by dtype name.
STORAGE = {"float16": "__half", "float32": "float", "float64": "double", "int8": "signed char",
           "uint8": "unsigned char", "int32": "int", "int64": "long long",
           "uint64": "unsigned long long"}

#: C type the arithmetic runs in.
COMPUTE = {**STORAGE, "float16": "float"}

#: Dtypes whose math kernels are generated (the others get casts and copies only).
FLOATS = frozenset({"float16", "float32", "float64"})


def supported(dtype):
    """True when elements of ``dtype`` (a name or np.dtype) can be loaded and stored."""
    return str(dtype) in STORAGE


def load(dtype, expr, compute):
    """C expression reading ``expr`` (an element of ``dtype``) as the type ``compute``."""
    dtype = str(dtype)
    if dtype == "float16":
        value = f"__half2float({expr})"
        return value if compute == "float" else f"({compute}){value}"
    return expr if COMPUTE[dtype] == compute else f"({compute}){expr}"


def store(dtype, value):
    """C expression converting ``value`` (of the compute type) for storing as ``dtype``."""
    dtype = str(dtype)
    if dtype == "float16":
        return f"__float2half_rn({value})"
    return value
