"""The op registry: one ``OpDef`` per operator (see ``opdef.py``). Imports nothing else from
hybridgpu but ``base``.

Importing this package registers every op module below.

Example:
    >>> from hybridgpu import ops
    >>> ops.get("_Plus") is ops.get("elemwise_add")
    True
"""

from . import elemwise_binary, elemwise_unary, reduce  # noqa: F401  (register ops)
from .opdef import OpDef, all_ops, exists, get, register

__all__ = ["OpDef", "all_ops", "exists", "get", "register"]
