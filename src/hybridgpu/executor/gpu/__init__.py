"""The GPU executor: the optimized graph lowered to a ``Program`` (steps over one arena,
``program``/``lower``), run on CuPy with CUDA-graph capture (``runtime``), GEMMs through a
ctypes binding of cuBLAS (``cublas``).

Example:
    >>> from hybridgpu.executor.gpu import Program, Ref
    >>> str(Ref.arena(256)), str(Ref.ext("fc_weight"))
    ('arena[256]', 'fc_weight')
"""

from ...compiler.pipeline import InterpretedExecutable, register_backend
from .lower import lower
from .policy import GpuMemoryPolicy
from .program import ALIGNED, Copy, Eager, Gemm, Launch, Program, Ref
from .runtime import build_gpu_executable

__all__ = ["lower", "Program", "Ref", "Launch", "Gemm", "Copy", "Eager", "ALIGNED",
           "GpuMemoryPolicy", "build"]


def build(graph, plan, ctx, is_train, flags):
    """The backend's ``build``: a GpuExecutable, or the reference interpreter for a graph the
    arena cannot hold (a value of unknown size)."""
    built = build_gpu_executable(graph, plan, ctx, is_train, flags)
    return built if built is not None else InterpretedExecutable(graph, ctx, is_train, plan)


register_backend("gpu", build, lambda graph, is_train, flags: GpuMemoryPolicy())
