"""Executors: one module (or package) per backend, each registering itself with
``compiler.pipeline.register_backend`` for its device type when imported (``hybridgpu``
imports this package). ``cpu``: ``CpuExecutable`` replays the generated NumPy program of
``compiler.codegen.python``. A gpu backend adds ``from . import gpu`` here. The reference
interpreter (``compiler.pipeline.InterpretedExecutable``) is every device's fallback.

Example:
    >>> from hybridgpu.executor import CpuExecutable
    >>> from hybridgpu.compiler.pipeline import backend_for
    >>> backend_for("cpu").device_type, CpuExecutable.__name__
    ('cpu', 'CpuExecutable')
"""

from .cpu import CpuExecutable

__all__ = ["CpuExecutable"]
