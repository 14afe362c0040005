"""CUDA C generation for the GPU backend: an indenting source builder with safe identifiers
(``source``), element types (``ctype``) and kernel generators (``elementwise``). The GPU
program that launches these kernels lives in ``executor/gpu``.

Example:
    >>> from hybridgpu.compiler.codegen.cuda import ident
    >>> ident("k", 12, "fused")
    'k12_fused'
"""

from .elementwise import ElementwiseSpec, Kernel, generate, launch_config
from .source import CudaSource, ident, numbered, safe_comment

__all__ = ["CudaSource", "ident", "numbered", "safe_comment", "ElementwiseSpec", "Kernel",
           "generate", "launch_config"]
