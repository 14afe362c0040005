"""Executors: run a compiled Executable. ``cpu.CpuExecutable`` replays the generated NumPy
program of ``compiler.codegen.python``.

Example:
    >>> from hybridgpu.executor import CpuExecutable
    >>> CpuExecutable.__name__
    'CpuExecutable'
"""

from .cpu import CpuExecutable

__all__ = ["CpuExecutable"]
