"""``mx.mod`` (also ``mx.module``): MXNet 1.x's symbolic training API, ``Module`` and
``BaseModule``.

Example:
    >>> import hybridgpu as mx
    >>> mx.mod.Module is mx.module.Module
    True
"""

from .base_module import BaseModule
from .module import Module

__all__ = ["BaseModule", "Module"]
