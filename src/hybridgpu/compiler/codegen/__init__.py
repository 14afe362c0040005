"""Code generators: ``python`` writes the CPU program (one straight-line NumPy function per
signature) from each op's lowering (``OpDef.lowering_for``, ``ops/lowering.py``);
``site`` is a node as a lowering sees it, ``fused`` the lowering of fused groups.

Example:
    >>> from hybridgpu.compiler.codegen import build_cpu_executable, generate
    >>> callable(build_cpu_executable) and callable(generate)
    True
"""

from .python import Program, build_cpu_executable, generate

__all__ = ["Program", "build_cpu_executable", "generate"]
