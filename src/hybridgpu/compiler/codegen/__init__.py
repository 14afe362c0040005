"""Code generators: ``python`` writes the CPU program (one straight-line NumPy function per
signature) using the per-op rules of ``lowering_cpu``.

Example:
    >>> from hybridgpu.compiler.codegen import build_cpu_executable, generate
    >>> callable(build_cpu_executable) and callable(generate)
    True
"""

from .python import Program, build_cpu_executable, generate

__all__ = ["Program", "build_cpu_executable", "generate"]
