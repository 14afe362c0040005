"""Executors: one module (or package) per backend, each registering itself with
``compiler.pipeline.register_backend`` for its device type when imported (``hybridgpu``
imports this package). ``cpu``: ``CpuExecutable`` replays the generated NumPy program of
``compiler.codegen.python``; ``gpu``: the GPU program over one arena, captured as CUDA graphs
(``executor.gpu``). The reference
interpreter (``compiler.pipeline.InterpretedExecutable``) is every device's fallback.

Example:
    >>> from hybridgpu.executor import CpuExecutable
    >>> from hybridgpu.compiler.pipeline import backend_for
    >>> backend_for("cpu").device_type, CpuExecutable.__name__
    ('cpu', 'CpuExecutable')
"""

from . import gpu  # noqa: F401  (registers the gpu backend)
from .cpu import CpuExecutable

__all__ = ["CpuExecutable"]
