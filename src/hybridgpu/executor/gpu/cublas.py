"""A minimal ctypes binding of cuBLAS: what the GPU program's ``Gemm`` steps need.

CuPy's own cuBLAS wrappers refuse to run while a stream is being captured, so the executor owns
a cuBLAS handle and calls the library directly. On real CuPy this loads the ``libcublas`` that
CuPy itself loaded (found in the process's memory map after ``import cupy.cuda.cublas``); on the
virtual GPU, ``xp.virtual_cublas_library()`` offers the same functions computing with NumPy.
Every argument is passed as a Python int (pointers as addresses; ``alpha``/``beta`` are
addresses of host scalars, kept alive by the ``Cublas`` object, so a captured call can read
them again at replay).

Math: float32 GEMMs compute in float32 (``CUBLAS_DEFAULT_MATH``). TF32 tensor cores are used
only when the user opts in: ``HYBRIDGPU_ALLOW_TF32=1`` in the environment, or
``hybridize(..)`` flags ``{"allow_tf32": True}`` passed to ``compile_graph``. float16 GEMMs go
through ``cublasGemmEx`` / ``cublasGemmStridedBatchedEx`` with float16 operands and result and
``CUBLAS_COMPUTE_32F`` (products summed in float32, rounded once to float16: MXNet's float16
layers do the same), on tensor cores.

Example:
    >>> import numpy as np
    >>> from hybridgpu.executor.gpu.cublas import MATH_MODES
    >>> MATH_MODES
    {'default': 0, 'tf32': 3}
"""

from __future__ import annotations

import ctypes
import os

from ...base import MXNetError

__all__ = ["Cublas", "MATH_MODES", "tf32_allowed"]

MATH_MODES = {"default": 0, "tf32": 3}

_P, _I, _L = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
_SIGNATURES = {
    "cublasCreate_v2": [_P],
    "cublasDestroy_v2": [_P],
    "cublasSetStream_v2": [_P, _P],
    "cublasSetMathMode": [_P, _I],
    "cublasSetWorkspace_v2": [_P, _P, ctypes.c_size_t],
    "cublasSgemm_v2": [_P, _I, _I, _I, _I, _I, _P, _P, _I, _P, _I, _P, _P, _I],
    "cublasDgemm_v2": [_P, _I, _I, _I, _I, _I, _P, _P, _I, _P, _I, _P, _P, _I],
    "cublasSgemmStridedBatched": [_P, _I, _I, _I, _I, _I, _P, _P, _I, _L, _P, _I, _L, _P, _P,
                                  _I, _L, _I],
    "cublasDgemmStridedBatched": [_P, _I, _I, _I, _I, _I, _P, _P, _I, _L, _P, _I, _L, _P, _P,
                                  _I, _L, _I],
    "cublasGemmEx": [_P, _I, _I, _I, _I, _I, _P, _P, _I, _I, _P, _I, _I, _P, _P, _I, _I, _I,
                     _I],
    "cublasGemmStridedBatchedEx": [_P, _I, _I, _I, _I, _I, _P, _P, _I, _I, _L, _P, _I, _I, _L,
                                   _P, _P, _I, _I, _L, _I, _I, _I],
}
_SCALAR = {"float32": ctypes.c_float, "float64": ctypes.c_double}
#: cudaDataType of each dtype the Ex GEMMs take, and their compute type and algorithm.
CUDA_R_16F, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT = 2, 68, -1


def tf32_allowed(flags=None):
    """True when the user opted in to TF32 for float32 GEMMs (see the module docstring)."""
    if flags and flags.get("allow_tf32") is not None:
        return bool(flags["allow_tf32"])
    return os.environ.get("HYBRIDGPU_ALLOW_TF32", "") not in ("", "0")


def _real_library():
    """ctypes CDLL of the libcublas CuPy loaded, with argument types set."""
    try:
        import cupy.cuda.cublas  # noqa: F401  (loads libcublas into the process)
    except ImportError as err:
        raise MXNetError(f"GEMM on gpu needs CuPy's cuBLAS (pip nvidia-cublas): {err}") from err
    path = None
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                if "libcublas.so" in line and "libcublasLt" not in line:
                    path = line.split()[-1]
                    break
    except OSError:
        pass
    names = [path] if path else ["libcublas.so.13", "libcublas.so.12", "libcublas.so"]
    for name in names:
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            continue
    else:
        raise MXNetError(f"cannot load libcublas (tried {names})")
    for fn, argtypes in _SIGNATURES.items():
        func = getattr(lib, fn)
        func.argtypes, func.restype = argtypes, ctypes.c_int
    return lib


class Cublas:
    """One cuBLAS handle bound to a stream, a workspace and a math mode."""

    def __init__(self, xp, stream_ptr, workspace_ptr=0, workspace_bytes=0, tf32=False):
        if getattr(xp, "is_virtual", False):
            self.lib = xp.virtual_cublas_library()
        else:
            self.lib = _real_library()
        holder = ctypes.c_void_p(0)
        self._check("cublasCreate_v2", ctypes.addressof(holder))
        self.handle = holder.value or 0
        self._check("cublasSetStream_v2", self.handle, stream_ptr)
        self._check("cublasSetMathMode", self.handle, MATH_MODES["tf32" if tf32 else "default"])
        if workspace_bytes:
            self._check("cublasSetWorkspace_v2", self.handle, workspace_ptr, workspace_bytes)
        self._scalars = {}

    def _check(self, fn, *args):
        status = getattr(self.lib, fn)(*args)
        if status != 0:
            raise MXNetError(f"cuBLAS {fn} failed with status {status}")

    def _scalar(self, dtype, value):
        """Address of a host scalar that lives as long as this handle."""
        key = (dtype, float(value))
        if key not in self._scalars:
            self._scalars[key] = _SCALAR[dtype](value)
        return ctypes.addressof(self._scalars[key])

    def gemm(self, step, a_ptr, b_ptr, c_ptr):
        """Run (or, under capture, record) the ``Gemm`` step on these device pointers."""
        s = step
        if s.dtype == "float16":
            return self._gemm_ex(s, a_ptr, b_ptr, c_ptr)
        alpha, beta = self._scalar(s.dtype, s.alpha), self._scalar(s.dtype, s.beta)
        prefix = "cublasS" if s.dtype == "float32" else "cublasD"
        if s.batch > 1:
            self._check(f"{prefix}gemmStridedBatched", self.handle, s.transa, s.transb, s.m,
                        s.n, s.k, alpha, a_ptr, s.lda, s.stride_a, b_ptr, s.ldb, s.stride_b,
                        beta, c_ptr, s.ldc, s.stride_c, s.batch)
        else:
            self._check(f"{prefix}gemm_v2", self.handle, s.transa, s.transb, s.m, s.n, s.k,
                        alpha, a_ptr, s.lda, b_ptr, s.ldb, beta, c_ptr, s.ldc)

    def _gemm_ex(self, s, a_ptr, b_ptr, c_ptr):
        """A float16 GEMM summed in float32 (alpha and beta are float32 scalars)."""
        alpha, beta = self._scalar("float32", s.alpha), self._scalar("float32", s.beta)
        half = CUDA_R_16F
        if s.batch > 1:
            self._check("cublasGemmStridedBatchedEx", self.handle, s.transa, s.transb, s.m,
                        s.n, s.k, alpha, a_ptr, half, s.lda, s.stride_a, b_ptr, half, s.ldb,
                        s.stride_b, beta, c_ptr, half, s.ldc, s.stride_c, s.batch,
                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
        else:
            self._check("cublasGemmEx", self.handle, s.transa, s.transb, s.m, s.n, s.k, alpha,
                        a_ptr, half, s.lda, b_ptr, half, s.ldb, beta, c_ptr, half, s.ldc,
                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)

    def close(self):
        """Destroy the handle (once)."""
        if self.handle:
            handle, self.handle = self.handle, 0
            self.lib.cublasDestroy_v2(handle)
