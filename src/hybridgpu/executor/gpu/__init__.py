"""The GPU executor: the optimized graph lowered to a ``Program`` (steps over one arena,
``program``/``lower``), run on CuPy with CUDA-graph capture (``runtime``), GEMMs through a
ctypes binding of cuBLAS (``cublas``).

Example:
    >>> from hybridgpu.executor.gpu import Program, Ref
    >>> str(Ref.arena(256)), str(Ref.ext("fc_weight"))
    ('arena[256]', 'fc_weight')
"""

from .lower import lower
from .program import ALIGNED, Copy, Eager, Gemm, Launch, Program, Ref

__all__ = ["lower", "Program", "Ref", "Launch", "Gemm", "Copy", "Eager", "ALIGNED"]
