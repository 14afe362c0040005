"""A fake cuBLAS for the virtual GPU: the functions the backend's ctypes binding calls, with
cuBLAS's names and arguments (all Python ints: handles, pointers as addresses, alpha/beta as
addresses of host scalars), computing with NumPy over the virtual device memory.

GEMMs are column-major (``CUBLAS_OP_N = 0``, ``CUBLAS_OP_T = 1``), run as steps on the handle's
stream (recorded there while it captures, like a kernel launch) and return 0
(``CUBLAS_STATUS_SUCCESS``); a bad argument raises ``ValueError`` naming the call. As with
CUDA, ``cublasCreate_v2`` (it allocates) on a capturing thread and ``cublasDestroy_v2`` (it
synchronizes the device) while any stream captures raise ``CaptureError``.

Example:
    >>> import ctypes, numpy as np
    >>> from hybridgpu import vgpu
    >>> xp = vgpu.module(1)
    >>> lib = xp.virtual_cublas_library()
    >>> h = ctypes.c_void_p(); lib.cublasCreate_v2(ctypes.addressof(h))
    0
    >>> a = xp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))  # row-major 2x3
    >>> c = xp.zeros((2, 2), dtype=xp.float32)
    >>> one, zero = ctypes.c_float(1), ctypes.c_float(0)
    >>> # C = A A^T in row-major is C^T = (A^T)^T A^T in column-major: op(A)=T, op(B)=N
    >>> lib.cublasSgemm_v2(h.value, 1, 0, 2, 2, 3, ctypes.addressof(one), a.data.ptr, 3,
    ...                    a.data.ptr, 3, ctypes.addressof(zero), c.data.ptr, 2)
    0
    >>> xp.asnumpy(c).tolist()
    [[5.0, 14.0], [14.0, 50.0]]
"""

from __future__ import annotations

import ctypes
import itertools

import numpy as np

from . import devices, memory, streams

__all__ = ["library", "VirtualCublas"]

_handles = itertools.count(0xB1A5000, 0x10)


def _column_major(ptr, rows, cols, ld, dtype, what):
    """The column-major ``rows x cols`` matrix with leading dimension ``ld`` at ``ptr``."""
    if ld < max(1, rows):
        raise ValueError(f"{what}: leading dimension {ld} < {rows} rows")
    itemsize = np.dtype(dtype).itemsize
    nbytes = ((cols - 1) * ld + rows) * itemsize if rows and cols else 0
    mem = memory.find(ptr)
    if mem is None or ptr + nbytes > mem.ptr + mem.size:
        raise ValueError(f"{what}: the matrix at 0x{ptr:x} ({nbytes} bytes) is not inside one "
                         f"live allocation ({memory.describe(ptr)})")
    if not nbytes:
        return np.zeros((rows, cols), dtype), mem
    buf = (ctypes.c_char * nbytes).from_address(ptr)
    flat = np.frombuffer(buf, dtype)
    return np.lib.stride_tricks.as_strided(flat, (rows, cols), (itemsize, ld * itemsize)), mem


class VirtualCublas:
    """The object ``xp.virtual_cublas_library()`` returns (see the module docstring)."""

    def __init__(self):
        self._streams = {}

    def cublasCreate_v2(self, handle_out_ptr):
        devices.check_not_capturing("cublasCreate_v2 (it allocates device memory)")
        handle = next(_handles)
        ctypes.c_void_p.from_address(handle_out_ptr).value = handle
        self._streams[handle] = 0
        return 0

    def cublasDestroy_v2(self, handle):
        self._check(handle, "cublasDestroy_v2")
        devices.check_no_capture_anywhere(f"cublasDestroy_v2(0x{handle:x}) (it synchronizes "
                                          "the device)")
        del self._streams[handle]
        return 0

    def cublasSetStream_v2(self, handle, stream_ptr):
        self._check(handle, "cublasSetStream_v2")
        streams.stream_from_ptr(stream_ptr)  # raises for an unknown stream
        self._streams[handle] = stream_ptr
        return 0

    def cublasSetMathMode(self, handle, mode):
        self._check(handle, "cublasSetMathMode")
        return 0

    def cublasSetWorkspace_v2(self, handle, ptr, nbytes):
        self._check(handle, "cublasSetWorkspace_v2")
        if nbytes and memory.find(ptr) is None:
            raise ValueError(f"cublasSetWorkspace_v2: workspace 0x{ptr:x} is not device memory")
        return 0

    def _check(self, handle, what):
        if handle not in self._streams:
            raise ValueError(f"{what}: {handle!r} is not a live cuBLAS handle "
                             "(CUBLAS_STATUS_NOT_INITIALIZED)")

    def _gemm(self, dtype, name, handle, ta, tb, m, n, k, alpha_ptr, a, lda, stride_a, b, ldb,
              stride_b, beta_ptr, c, ldc, stride_c, batch, compute=None):
        self._check(handle, name)
        if ta not in (0, 1) or tb not in (0, 1):
            raise ValueError(f"{name}: transa/transb must be 0 (N) or 1 (T), got {ta}, {tb}")
        compute = dtype if compute is None else compute
        scalar = ctypes.c_float if compute == np.float32 else ctypes.c_double
        alpha = scalar.from_address(alpha_ptr).value
        beta = scalar.from_address(beta_ptr).value
        size = dtype.itemsize
        what = f"{name}(m={m}, n={n}, k={k}, batch={batch})"
        mats = []
        for i in range(batch):
            A, ma = _column_major(a + i * stride_a * size, *((k, m) if ta else (m, k)), lda,
                                  dtype, f"{what} A")
            B, mb = _column_major(b + i * stride_b * size, *((n, k) if tb else (k, n)), ldb,
                                  dtype, f"{what} B")
            C, mc = _column_major(c + i * stride_c * size, m, n, ldc, dtype, f"{what} C")
            mats.append((A.T if ta else A, B.T if tb else B, C, (ma, mb, mc)))
        pointers = [(mem.serial, mem.ptr) for *_, mems in mats for mem in mems]

        def run():
            for A, B, C, _ in mats:
                product = alpha * (A.astype(compute, copy=False) @ B.astype(compute, copy=False))
                C[...] = product if beta == 0 else product + beta * C.astype(compute)

        streams.stream_from_ptr(self._streams[handle]).submit(streams.Step(what, run, pointers))
        return 0

    def cublasSgemm_v2(self, h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc):
        return self._gemm(np.dtype(np.float32), "cublasSgemm_v2", h, ta, tb, m, n, k, alpha, A,
                          lda, 0, B, ldb, 0, beta, C, ldc, 0, 1)

    def cublasDgemm_v2(self, h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc):
        return self._gemm(np.dtype(np.float64), "cublasDgemm_v2", h, ta, tb, m, n, k, alpha, A,
                          lda, 0, B, ldb, 0, beta, C, ldc, 0, 1)

    def cublasSgemmStridedBatched(self, h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb,
                                  beta, C, ldc, sc, batch):
        return self._gemm(np.dtype(np.float32), "cublasSgemmStridedBatched", h, ta, tb, m, n, k,
                          alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch)

    def cublasDgemmStridedBatched(self, h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb,
                                  beta, C, ldc, sc, batch):
        return self._gemm(np.dtype(np.float64), "cublasDgemmStridedBatched", h, ta, tb, m, n, k,
                          alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch)

    def _ex_types(self, name, atype, btype, ctype, compute, algo):
        """The dtype of a ``cublasGemmEx``-family call: float16 operands and result with
        ``CUBLAS_COMPUTE_32F`` (the one combination the backend uses), else ValueError."""
        if (atype, btype, ctype) != (_CUDA_R_16F,) * 3 or compute != _CUBLAS_COMPUTE_32F:
            raise ValueError(f"{name}: only float16 operands and result (cudaDataType 2) with "
                             f"CUBLAS_COMPUTE_32F (68) are offered here, got types "
                             f"{(atype, btype, ctype)} and compute {compute}")
        if algo != -1:
            raise ValueError(f"{name}: algo {algo}: only CUBLAS_GEMM_DEFAULT (-1) is offered")
        return np.dtype(np.float16)

    def cublasGemmEx(self, h, ta, tb, m, n, k, alpha, A, atype, lda, B, btype, ldb, beta, C,
                     ctype, ldc, compute, algo):
        dtype = self._ex_types("cublasGemmEx", atype, btype, ctype, compute, algo)
        return self._gemm(dtype, "cublasGemmEx", h, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb,
                          0, beta, C, ldc, 0, 1, compute=np.dtype(np.float32))

    def cublasGemmStridedBatchedEx(self, h, ta, tb, m, n, k, alpha, A, atype, lda, sa, B, btype,
                                   ldb, sb, beta, C, ctype, ldc, sc, batch, compute, algo):
        name = "cublasGemmStridedBatchedEx"
        dtype = self._ex_types(name, atype, btype, ctype, compute, algo)
        return self._gemm(dtype, name, h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta,
                          C, ldc, sc, batch, compute=np.dtype(np.float32))


_CUDA_R_16F, _CUBLAS_COMPUTE_32F = 2, 68
_library = [None]


def library():
    """The process's fake cuBLAS library object."""
    if _library[0] is None:
        _library[0] = VirtualCublas()
    return _library[0]
