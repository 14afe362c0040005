"""The errors the virtual GPU raises where a real GPU would fail (or silently misbehave).

Every error is a ``VirtualGPUError`` (a ``RuntimeError``, like CuPy's
``CUDARuntimeError``), except the argument and device errors, which are the ``TypeError`` and
``ValueError`` CuPy raises.

Example:
    >>> from hybridgpu.vgpu.errors import CaptureError, VirtualGPUError
    >>> issubclass(CaptureError, VirtualGPUError) and issubclass(VirtualGPUError, RuntimeError)
    True
"""

from __future__ import annotations

__all__ = ["VirtualGPUError", "CaptureError", "MemoryFaultError", "LaunchError",
           "KernelCompileError", "FreedMemoryError", "OutOfMemoryError", "BarrierError",
           "CacheError"]


class VirtualGPUError(RuntimeError):
    """Something that fails on a real GPU, caught by the virtual GPU."""


class CaptureError(VirtualGPUError):
    """An operation that CUDA forbids while a stream is capturing (allocation, host sync,
    host<->device copy); names the step."""


class MemoryFaultError(VirtualGPUError):
    """A kernel touched memory outside every live allocation, or made a misaligned vector
    (64/128-bit) access."""


class LaunchError(VirtualGPUError):
    """A launch over CUDA's limits (threads a block, grid dimensions, shared memory)."""


class KernelCompileError(VirtualGPUError):
    """The kernel source did not compile (g++ through the shim); carries the numbered source."""


class BarrierError(VirtualGPUError):
    """The threads of a block met at different barriers (``__syncthreads`` lines or counts,
    a warp sync its warp never reaches), or a shuffle went outside its warp: a GPU deadlocks
    or gives undefined results."""


class FreedMemoryError(VirtualGPUError):
    """A graph replay or a recorded step points into memory that has been freed since."""


class OutOfMemoryError(VirtualGPUError, MemoryError):
    """An allocation larger than the virtual device's memory left (CuPy's OutOfMemoryError)."""


class CacheError(VirtualGPUError):
    """The kernel cache folder is not private to this user (another owner, group or other
    write access, a symlink): nothing in it is loaded."""
