"""``mx.gluon.contrib.nn``: MXNet 1.9 keeps ``Identity``, ``Concurrent`` and
``HybridConcurrent`` here; hybridgpu defines them in ``gluon.nn`` and re-exports them.

Example:
    >>> from hybridgpu.gluon.contrib.nn import Identity
    >>> Identity.__name__
    'Identity'
"""

from ...nn.basic_layers import Concurrent, HybridConcurrent, Identity
from .sync_batch_norm import SyncBatchNorm

__all__ = ["Identity", "Concurrent", "HybridConcurrent", "SyncBatchNorm"]
