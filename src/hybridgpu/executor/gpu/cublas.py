"""A minimal ctypes binding of cuBLAS: what the GPU program's ``Gemm`` steps need.

CuPy's own cuBLAS wrappers refuse to run while a stream is being captured, so the executor calls
the library directly, through one cuBLAS handle per device for the whole process
(``device_handle``): created on a device's first GEMM, bound before each call to the calling
program's stream, workspace and math mode, and never destroyed behind the user's back (a
``cublasDestroy`` synchronizes the device, which would invalidate any capture in flight;
``release_handles()`` destroys them on request and checks each status).

Loading (``load_library``): ``cuda.pathfinder.load_nvidia_dynamic_lib("cublas")`` when the
``cuda-pathfinder`` package is there (it finds the ``nvidia-cublas`` wheel's
``libcublas.so.13``, and loads ``libcublasLt`` first); else CuPy's package attribute
``cupy.cuda.cublas`` (an attribute made by ``cupy/cuda/__init__.py``'s ``__getattr__``, which
loads the library: ``import cupy.cuda.cublas`` is no module on CuPy 13 or 14), the library
then found in the process's memory map; else an ``MXNetError`` saying what to install. Every
symbol in ``SIGNATURES`` is resolved at load time. On the virtual GPU,
``xp.virtual_cublas_library()`` offers the same functions computing with NumPy.

Every argument is passed as a Python int (pointers as addresses; ``alpha``/``beta`` are
addresses of host scalars, kept alive by the handle, so a captured call can read them again at
replay). Every call's status is checked; a failure names the call and the status.

Math: float32 GEMMs compute in float32 (``CUBLAS_DEFAULT_MATH``). TF32 tensor cores are used
only when the user opts in: ``HYBRIDGPU_ALLOW_TF32=1`` in the environment, or
``hybridize(..)`` flags ``{"allow_tf32": True}`` passed to ``compile_graph``. float16 GEMMs go
through ``cublasGemmEx`` / ``cublasGemmStridedBatchedEx`` with float16 operands and result and
``CUBLAS_COMPUTE_32F`` (products summed in float32, rounded once to float16: MXNet's float16
layers do the same), on tensor cores.

Workspace (``workspace_bytes``): what cuBLAS's documentation recommends, 32 MiB on compute
capability 9.0 and later (Hopper's fastest kernels need it), 4 MiB before.

Example:
    >>> MATH_MODES
    {'default': 0, 'tf32': 3}
    >>> workspace_bytes("90") >> 20, workspace_bytes("86") >> 20
    (32, 4)
    >>> status_name(7)
    'CUBLAS_STATUS_INVALID_VALUE'
"""

from __future__ import annotations

import ctypes
import os
import threading

from ...base import MXNetError

__all__ = ["Cublas", "MATH_MODES", "SIGNATURES", "tf32_allowed", "load_library",
           "device_handle", "release_handles", "workspace_bytes", "status_name"]

MATH_MODES = {"default": 0, "tf32": 3}

_P, _I, _L = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
#: The functions bound, with their argument types (each returns a ``cublasStatus_t``).
SIGNATURES = {
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
#: ``cublasStatus_t`` values (cublas_api.h), for error messages.
STATUS = {0: "SUCCESS", 1: "NOT_INITIALIZED", 3: "ALLOC_FAILED", 7: "INVALID_VALUE",
          8: "ARCH_MISMATCH", 11: "MAPPING_ERROR", 13: "EXECUTION_FAILED", 14: "INTERNAL_ERROR",
          15: "NOT_SUPPORTED", 16: "LICENSE_ERROR"}
WORKSPACE_SMALL, WORKSPACE_LARGE = 4 << 20, 32 << 20


def tf32_allowed(flags=None):
    """True when the user opted in to TF32 for float32 GEMMs (see the module docstring)."""
    if flags and flags.get("allow_tf32") is not None:
        return bool(flags["allow_tf32"])
    return os.environ.get("HYBRIDGPU_ALLOW_TF32", "") not in ("", "0")


def status_name(status):
    """``CUBLAS_STATUS_<NAME>`` of a status code (or the number when unknown)."""
    name = STATUS.get(status)
    return f"CUBLAS_STATUS_{name}" if name else f"status {status}"


def workspace_bytes(compute_capability):
    """The cuBLAS workspace for a device of ``compute_capability`` (CuPy's ``"90"``, or
    ``"9.0"``, or a ``(major, minor)`` pair): 32 MiB from 9.0 on, else 4 MiB."""
    cc = compute_capability
    try:
        if isinstance(cc, (tuple, list)):
            major = int(cc[0])
        elif "." in str(cc):
            major = int(str(cc).split(".")[0])
        else:
            major = int(str(cc)) // 10
    except (ValueError, IndexError, TypeError):
        raise MXNetError(f"compute capability {compute_capability!r}: expected '90', '9.0' "
                         "or (9, 0)") from None
    return WORKSPACE_LARGE if major >= 9 else WORKSPACE_SMALL


# -- loading the real library ------------------------------------------------------------------
_lib_lock = threading.Lock()
_real = [None]


def load_library():
    """The process's ``libcublas`` as a ctypes CDLL, every function of ``SIGNATURES`` bound
    (loaded once; see the module docstring for where it is looked for)."""
    with _lib_lock:
        if _real[0] is None:
            path = _library_path()
            try:
                lib = ctypes.CDLL(path)
            except OSError as err:
                raise MXNetError(f"cannot load cuBLAS from {path}: {err}") from None
            _bind(lib, path)
            _real[0] = lib
        return _real[0]


def _bind(lib, path):
    for fn, argtypes in SIGNATURES.items():
        try:
            func = getattr(lib, fn)
        except AttributeError:
            raise MXNetError(f"{path} has no symbol {fn}: a cuBLAS older than the 12/13 line "
                             "the GPU backend binds") from None
        func.argtypes, func.restype = argtypes, ctypes.c_int


def _library_path():
    """The path of libcublas: through cuda.pathfinder, else CuPy's package attribute."""
    tried = []
    for find in (_through_pathfinder, _through_cupy):
        try:
            return find()
        except LookupError as err:
            tried.append(str(err))
    raise MXNetError("GEMM on gpu needs cuBLAS, and it was not found: pip install "
                     "'nvidia-cublas>=13,<14' cuda-pathfinder (CUDA 13; for CUDA 12, "
                     "nvidia-cublas-cu12). Tried: " + "; ".join(tried))


def _through_pathfinder():
    """libcublas as ``cuda.pathfinder`` finds and loads it (LookupError saying why not)."""
    try:
        from cuda import pathfinder
    except ImportError as err:
        raise LookupError(f"cuda.pathfinder: {err}") from None
    try:
        found = pathfinder.load_nvidia_dynamic_lib("cublas")
    except Exception as err:  # DynamicLibNotFoundError and its kin
        raise LookupError(f"cuda.pathfinder: {type(err).__name__}: {err}") from None
    path = getattr(found, "abs_path", None) or _mapped_path()
    if not path:
        raise LookupError("cuda.pathfinder loaded cuBLAS but gave no path")
    return path


def _through_cupy():
    """libcublas as CuPy loads it for its ``cupy.cuda.cublas`` attribute (LookupError saying
    why not)."""
    try:
        import cupy.cuda

        cupy.cuda.cublas  # noqa: B018  (the attribute loads libcublas into the process)
    except Exception as err:  # ImportError, AttributeError, CuPy's own errors
        raise LookupError(f"cupy.cuda.cublas: {type(err).__name__}: {err}") from None
    path = _mapped_path()
    if not path:
        raise LookupError("cupy.cuda.cublas loaded, but no libcublas.so in /proc/self/maps")
    return path


def _mapped_path():
    """The path of the libcublas mapped into this process, or None."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                name = line.split()[-1] if line.strip() else ""
                if "/libcublas.so" in name:
                    return name
    except OSError:
        pass
    return None


# -- the handles -------------------------------------------------------------------------------
_handles_lock = threading.Lock()
_handles: dict = {}


def device_handle(xp, device_id):
    """The process's cuBLAS handle of device ``device_id`` of array module ``xp`` (created on
    first use, with that device current)."""
    key = (bool(getattr(xp, "is_virtual", False)), int(device_id))
    with _handles_lock:
        handle = _handles.get(key)
        if handle is None:
            handle = _handles[key] = Cublas(xp, device_id)
        return handle


def release_handles():
    """Destroy every handle ``device_handle`` made (each status checked). Never call it while
    a stream captures: ``cublasDestroy`` synchronizes the device. Returns how many."""
    with _handles_lock:
        done = 0
        for key in list(_handles):
            _handles[key].close()
            del _handles[key]
            done += 1
        return done


class Cublas:
    """One cuBLAS handle on one device. ``gemm`` binds it to the caller's stream, workspace
    and math mode (when they differ from the last call's) and runs or, under capture, records
    the step; a lock makes the bind and the call one unit across threads."""

    def __init__(self, xp, device_id=None):
        if getattr(xp, "is_virtual", False):
            self.lib = xp.virtual_cublas_library()
        else:
            self.lib = load_library()
        self.device_id = device_id
        self.lock = threading.Lock()
        self._scalars = {}
        self._bound = None
        self.handle = 0
        holder = ctypes.c_void_p(0)
        self._check("cublasCreate_v2", ctypes.addressof(holder))
        self.handle = holder.value or 0

    def _check(self, fn, *args):
        status = getattr(self.lib, fn)(*args)
        if status != 0:
            where = "" if self.device_id is None else f" on device {self.device_id}"
            raise MXNetError(f"cuBLAS {fn} failed{where} with {status_name(status)}")

    def _bind(self, stream_ptr, workspace_ptr, nbytes, tf32):
        """SetStream (which resets the workspace to cuBLAS's own pool), then SetWorkspace,
        then SetMathMode, unless the last call set the same."""
        key = (stream_ptr, workspace_ptr, nbytes, bool(tf32))
        if key == self._bound:
            return
        self._bound = None
        self._check("cublasSetStream_v2", self.handle, stream_ptr)
        if nbytes:
            self._check("cublasSetWorkspace_v2", self.handle, workspace_ptr, nbytes)
        self._check("cublasSetMathMode", self.handle, MATH_MODES["tf32" if tf32 else "default"])
        self._bound = key

    def _scalar(self, dtype, value):
        """Address of a host scalar that lives as long as this handle."""
        key = (dtype, float(value))
        if key not in self._scalars:
            self._scalars[key] = _SCALAR[dtype](value)
        return ctypes.addressof(self._scalars[key])

    def gemm(self, step, a_ptr, b_ptr, c_ptr, stream_ptr, workspace_ptr=0, nbytes=0,
             tf32=False):
        """Run (or, under capture, record) the ``Gemm`` step on these device pointers, on
        ``stream_ptr`` with the workspace ``[workspace_ptr, +nbytes)`` (none when 0)."""
        with self.lock:
            if not self.handle:
                raise MXNetError("cuBLAS: this handle was destroyed (release_handles)")
            self._bind(stream_ptr, workspace_ptr, nbytes, tf32)
            if step.dtype == "float16":
                self._gemm_ex(step, a_ptr, b_ptr, c_ptr)
            else:
                self._gemm(step, a_ptr, b_ptr, c_ptr)

    def _gemm(self, s, a_ptr, b_ptr, c_ptr):
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
        """Destroy the handle (once; its status checked). Not under capture: it synchronizes
        the device."""
        with self.lock:
            if self.handle:
                self._check("cublasDestroy_v2", self.handle)
                self.handle, self._bound = 0, None
