"""``cupy.RawModule`` / ``cupy.RawKernel`` on the virtual GPU: the CUDA C source compiled with
g++ (compiler.py) and launched through ctypes with CuPy's argument rules.

Arguments as CuPy passes them: a device array as a pointer to its data, a NumPy scalar as its
own C type, a Python int as ``long long`` (int64), a Python float as ``double``, a bool as
``bool``. Each is checked against the kernel's declared parameter (parsed from the source):
a mismatch raises TypeError naming the kernel and the argument, where CUDA would silently read
garbage. Pointer parameters of a scalar type must get arrays of that dtype (``void*``/``char*``
take any), vector pointers (``float4*``...) 16-byte aligned data. ``grid``, ``block`` and
``options`` must be tuples, as CuPy's Cython declares them (each dimension launched as
``max(1, d)``, as CuPy does). The launch is checked against CUDA's limits, the kernel's
``__launch_bounds__`` and shared memory (launch_facts.py), runs on the current stream
(recorded there while it captures; queued in the async mode), in the block and thread order
of the ordering modes (ordering.py), and reports a memory fault or misaligned vector access as
``MemoryFaultError`` naming the kernel, the block, the thread and where the address lies;
threads meeting at different barriers as ``BarrierError``.

Example:
    >>> from hybridgpu import vgpu
    >>> xp = vgpu.module(1)
    >>> src = 'extern "C" __global__ void twice(const float* x, float* y, int n) {' \\
    ...       '  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2 * x[i]; }'
    >>> k = xp.RawModule(code=src).get_function("twice")
    >>> x = xp.arange(5, dtype=xp.float32); y = xp.empty_like(x)
    >>> k((1,), (32,), (x, y, xp.int32(5)))
    >>> xp.asnumpy(y).tolist()
    [0.0, 2.0, 4.0, 6.0, 8.0]
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from . import compiler, devices, memory, ordering, streams
from .array import ndarray
from .errors import (
    BarrierError,
    KernelCompileError,
    LaunchError,
    MemoryFaultError,
    OutOfMemoryError,
)
from .launch_facts import launch_facts

__all__ = ["RawModule", "RawKernel", "MAX_SHARED_DEFAULT"]

_one_launch_at_a_time = threading.Lock()  # the shim's fault handlers are process-wide
# the shim's fibers and their stacks (cuda_shim.h FiberPool), one set for every kernel library:
# launches run one at a time
_FIBER_POOL = (ctypes.c_uint64 * 2)()
MAX_SHARED_DEFAULT = 48 * 1024  # dynamic shared memory without opting in
MAX_SHARED_OPTIN = 227 * 1024  # sm_90

_SCALARS = {
    "bool": np.bool_, "char": np.int8, "signed char": np.int8, "unsigned char": np.uint8,
    "short": np.int16, "unsigned short": np.uint16, "int": np.int32, "signed": np.int32,
    "signed int": np.int32, "unsigned": np.uint32, "unsigned int": np.uint32,
    "long": np.int64, "long int": np.int64, "unsigned long": np.uint64,
    "long long": np.int64, "long long int": np.int64, "unsigned long long": np.uint64,
    "unsigned long long int": np.uint64, "size_t": np.uint64, "ptrdiff_t": np.int64,
    "int8_t": np.int8, "uint8_t": np.uint8, "int16_t": np.int16, "uint16_t": np.uint16,
    "int32_t": np.int32, "uint32_t": np.uint32, "int64_t": np.int64, "uint64_t": np.uint64,
    "float": np.float32, "double": np.float64, "__half": np.float16, "half": np.float16,
}
_VECTORS = {"float2": (np.float32, 8), "float4": (np.float32, 16), "double2": (np.float64, 16),
            "int2": (np.int32, 8), "int4": (np.int32, 16), "uint2": (np.uint32, 8),
            "uint4": (np.uint32, 16), "longlong2": (np.int64, 16)}
_ANY_POINTEE = {"void", "char", "unsigned char", "signed char", "uint8_t", "int8_t"}
_CTYPES = {np.dtype(t): c for t, c in [
    (np.bool_, ctypes.c_bool), (np.int8, ctypes.c_int8), (np.uint8, ctypes.c_uint8),
    (np.int16, ctypes.c_int16), (np.uint16, ctypes.c_uint16), (np.int32, ctypes.c_int32),
    (np.uint32, ctypes.c_uint32), (np.int64, ctypes.c_int64), (np.uint64, ctypes.c_uint64),
    (np.float32, ctypes.c_float), (np.float64, ctypes.c_double), (np.float16, ctypes.c_uint16)]}


class _Report(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("address", ctypes.c_ulonglong),
                ("block", ctypes.c_uint * 3), ("thread", ctypes.c_uint * 3),
                ("what", ctypes.c_char * 96)]


class RawModule:
    """``cupy.RawModule(code=source, options=(), name_expressions=None)``: the source's
    kernels, compiled (one library) on the first ``get_function``."""

    def __init__(self, *, code=None, path=None, options=(), backend="nvrtc",
                 translate_cucomplex=False, enable_cooperative_groups=False,
                 name_expressions=None, jitify=None):
        if code is None:
            if path is None:
                raise TypeError("RawModule needs code= (CUDA C source) or path=")
            with open(path) as f:
                code = f.read()
        if not isinstance(code, str):
            raise TypeError(f"RawModule code must be a str, got {type(code).__name__}")
        self.code, self.options = code, _options(options)
        self.name_expressions = name_expressions
        self._signatures = compiler.kernel_signatures(code)
        self._facts = launch_facts(code)
        self._lib = None

    def get_function(self, name):
        """The kernel ``name`` (``extern "C" __global__``) as a RawKernel."""
        if name not in self._signatures:
            raise AttributeError(f"RawModule has no kernel {name!r} (its extern \"C\" "
                                 f"__global__ kernels: {sorted(self._signatures)}) "
                                 "(cudaErrorSymbolNotFound / CUDA_ERROR_NOT_FOUND)")
        if self._lib is None:
            self._lib = compiler.build(self.code, compiler.macro_options(self.options))
        return RawKernel(self.code, name, self.options, _module=self)


class RawKernel:
    """``cupy.RawKernel(code, name)``: ``k(grid, block, args, shared_mem=0)`` launches it on
    the current stream."""

    def __init__(self, code, name, options=(), backend="nvrtc", translate_cucomplex=False, *,
                 enable_cooperative_groups=False, jitify=None, _module=None):
        module = _module or RawModule(code=code, options=options)
        if name not in module._signatures:
            module.get_function(name)  # raises naming the kernels there are
        self.code, self.name, self.options = code, name, _options(options)
        self._params = module._signatures[name]
        self._module = module
        self._fibers = compiler.uses_barriers(code)
        self._fn = None
        self._bounds, self._static_shared = module._facts.get(name, (None, 0))
        if self._static_shared > MAX_SHARED_DEFAULT:
            raise KernelCompileError(
                f"kernel {name} uses too much shared data ({self._static_shared} bytes of "
                f"static __shared__ arrays, {MAX_SHARED_DEFAULT} max): ptxas rejects it; "
                "use dynamic shared memory (extern __shared__) with "
                "max_dynamic_shared_size_bytes")
        self._max_dynamic = None

    @property
    def max_dynamic_shared_size_bytes(self):
        """Dynamic shared memory a launch may use: 48 KiB less the static arrays, unless set
        (CUDA's cudaFuncAttributeMaxDynamicSharedMemorySize)."""
        if self._max_dynamic is None:
            return MAX_SHARED_DEFAULT - self._static_shared
        return self._max_dynamic

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, value):
        if value < 0 or value + self._static_shared > MAX_SHARED_OPTIN:
            raise LaunchError(f"kernel {self.name}: max_dynamic_shared_size_bytes={value} with "
                              f"{self._static_shared} bytes of static shared memory is over "
                              f"{MAX_SHARED_OPTIN} (cudaErrorInvalidValue)")
        self._max_dynamic = int(value)

    def _function(self):
        if self._fn is None:
            if self._module._lib is None:
                self._module._lib = compiler.build(self.code,
                                                   compiler.macro_options(self.options))
            fn = getattr(self._module._lib, f"{self.name}__vgpu_launch")
            fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(_Report)]
            fn.restype = ctypes.c_int
            self._fn = fn
        return self._fn

    def __call__(self, grid, block, args, *, shared_mem=0, stream=None,
                 enable_cooperative_groups=False):
        grid, block = _dims(self.name, grid, "grid"), _dims(self.name, block, "block")
        shared_mem = _shared_bytes(self.name, shared_mem)
        _check_limits(self.name, grid, block, shared_mem, self.max_dynamic_shared_size_bytes)
        _check_bounds(self.name, block, self._bounds)
        if not isinstance(args, (tuple, list)):
            raise TypeError(f"kernel {self.name}: args must be a tuple (CuPy iterates it), "
                            f"got {type(args).__name__}")
        if len(args) != len(self._params):
            raise TypeError(f"kernel {self.name} takes {len(self._params)} arguments "
                            f"({', '.join(n for _, n in self._params)}), got {len(args)}")
        values, pointers = [], []
        for i, (arg, (ctype, pname)) in enumerate(zip(args, self._params)):
            value, pointer = _argument(self.name, i, pname, ctype, arg)
            values.append(value)
            if pointer is not None:
                pointers.append(pointer)
        fn = self._function()
        cfg = (ctypes.c_longlong * 11)(*grid, *block, int(self._fibers), int(shared_mem),
                                       ordering.launch_flags(), ordering.seed(),
                                       ctypes.addressof(_FIBER_POOL))
        slots = (ctypes.c_void_p * max(len(values), 1))(*[ctypes.addressof(v) for v in values])
        what = f"kernel {self.name} grid={grid} block={block}"

        def run():
            _keep = (values, cfg, slots)  # noqa: F841  (alive while recorded in a graph)
            report = _Report()
            out = ctypes.byref(report)  # allocated before the lock: a finalizer may launch
            with _one_launch_at_a_time:
                status = fn(cfg, slots, out)
            if status != 0:
                raise _fault(self.name, report)

        target = streams.get_current_stream() if stream is None else stream
        target.submit(streams.Step(what, run, pointers))

    def __repr__(self):
        return f"<virtual RawKernel {self.name}>"


def _options(options):
    if not isinstance(options, tuple):
        raise TypeError(f"Argument 'options' has incorrect type (expected tuple, got "
                        f"{type(options).__name__}): CuPy declares it a tuple")
    return options


def _dims(kernel, value, what):
    """``value`` as CuPy's Cython takes it: a tuple of 1 to 3 ints, each below 1 counted as 1
    (CuPy launches ``max(1, d)``)."""
    if not isinstance(value, tuple):
        raise TypeError(f"kernel {kernel}: Argument '{what}' has incorrect type (expected "
                        f"tuple, got {type(value).__name__}): CuPy takes {what}=(x,), (x, y) "
                        "or (x, y, z)")
    if not 1 <= len(value) <= 3:
        raise ValueError(f"kernel {kernel}: {what} must have 1 to 3 dimensions, got {value}")
    for v in value:
        if not isinstance(v, (int, np.integer)):
            raise TypeError(f"kernel {kernel}: {what} {value} holds a "
                            f"{type(v).__name__}; CuPy converts each to a C int")
    return tuple(max(1, int(v)) for v in value) + (1,) * (3 - len(value))


def _shared_bytes(kernel, value):
    if not isinstance(value, (int, np.integer)):
        raise TypeError(f"kernel {kernel}: shared_mem must be an int (size_t), got "
                        f"{type(value).__name__}")
    if value < 0:
        raise OverflowError(f"kernel {kernel}: shared_mem={value}: can't convert negative "
                            "value to size_t")
    return int(value)


def _check_bounds(name, block, bounds):
    threads = block[0] * block[1] * block[2]
    if bounds is not None and threads > bounds:
        raise LaunchError(f"kernel {name}: {threads} threads a block, over its "
                          f"__launch_bounds__({bounds}) (cudaErrorLaunchOutOfResources: too "
                          "many resources requested for launch)")


def _check_limits(name, grid, block, shared_mem, max_shared):
    problems = []
    if block[0] > 1024 or block[1] > 1024 or block[2] > 64:
        problems.append(f"block {block} over (1024, 1024, 64)")
    if block[0] * block[1] * block[2] > 1024:
        problems.append(f"{block[0] * block[1] * block[2]} threads a block (at most 1024)")
    if grid[0] > 2**31 - 1 or grid[1] > 65535 or grid[2] > 65535:
        problems.append(f"grid {grid} over (2^31-1, 65535, 65535)")
    if shared_mem > max_shared:
        problems.append(f"{shared_mem} bytes of dynamic shared memory (at most {max_shared}; "
                        "set max_dynamic_shared_size_bytes to opt in up to "
                        f"{MAX_SHARED_OPTIN} with the static arrays)")
    if problems:
        raise LaunchError(f"kernel {name}: launch over CUDA's limits: {'; '.join(problems)} "
                          "(cudaErrorInvalidConfiguration)")


def _argument(kernel, index, pname, ctype, arg):
    """(ctypes value, (allocation serial, address) or None) for one argument."""
    where = f"kernel {kernel}: argument {index} ({ctype} {pname})"
    if ctype.endswith("*"):
        return _pointer(where, ctype[:-1].strip(), arg)
    if isinstance(arg, ndarray):
        raise TypeError(f"{where} got a device array, which CuPy passes as a pointer")
    want = _SCALARS.get(ctype)
    if want is None:
        raise TypeError(f"{where}: the virtual GPU cannot pass arguments of type {ctype!r}")
    got = _passed_dtype(arg, where)
    want = np.dtype(want)
    same_bits = got.itemsize == want.itemsize and got.kind in "iu" and want.kind in "iu"
    if got != want and not (same_bits and isinstance(arg, int) and arg >= 0):
        raise TypeError(f"{where} got {_describe(arg)}, which CuPy passes as "
                        f"{got.name}, not {want.name}: pass np.{want.name}(value)")
    value = np.asarray(arg, dtype=want)
    holder = _CTYPES[want](int(value.view(np.uint16)) if want == np.float16 else value.item())
    return holder, None


def _passed_dtype(arg, where):
    if isinstance(arg, (bool, np.bool_)):
        return np.dtype(np.bool_)
    if isinstance(arg, np.generic):
        return arg.dtype
    if isinstance(arg, int):
        return np.dtype(np.int64)
    if isinstance(arg, float):
        return np.dtype(np.float64)
    raise TypeError(f"{where}: unsupported argument type {type(arg).__name__}")


def _describe(arg):
    return f"a Python {type(arg).__name__}" if not isinstance(arg, np.generic) else \
        f"a NumPy {arg.dtype.name}"


def _pointer(where, pointee, arg):
    if not isinstance(arg, ndarray):
        raise TypeError(f"{where} needs a device array, got {_describe(arg)}"
                        if isinstance(arg, (int, float, np.generic)) else
                        f"{where} needs a device array, got {type(arg).__name__}")
    current = devices.current_id()
    if arg._mem.device_id != current:
        raise ValueError(f"{where}: the array is on device {arg._mem.device_id} but the current "
                         f"device is {current} (an illegal address on a real GPU)")
    address = arg._address()
    if pointee in _VECTORS:
        dtype, align = _VECTORS[pointee]
        if arg.dtype != dtype:
            raise TypeError(f"{where} got a {arg.dtype.name} array; {pointee} needs "
                            f"{np.dtype(dtype).name} data")
        if address % align:
            raise MemoryFaultError(f"{where}: address 0x{address:x} is not {align}-byte aligned "
                                   f"for {pointee} ({align * 8}-bit) loads "
                                   "(cudaErrorMisalignedAddress)")
    elif pointee not in _ANY_POINTEE:
        want = _SCALARS.get(pointee)
        if want is not None and np.dtype(want) != arg.dtype:
            raise TypeError(f"{where} got a {arg.dtype.name} array")
    mem = memory.find(address)
    return ctypes.c_void_p(address), (mem.serial, address) if mem is not None else None


def _fault(kernel, report):
    address = report.address
    block, thread = tuple(report.block), tuple(report.thread)
    what = report.what.decode(errors="replace")
    if report.code == 8:
        return OutOfMemoryError(f"kernel {kernel}: {what}")
    if report.code == 7:
        return BarrierError(f"kernel {kernel}: thread {thread} of block {block} {what}: the "
                            "threads of a block must meet at the same barriers (a GPU "
                            "deadlocks or gives undefined results)")
    if report.code == 2:
        detail = (f"misaligned {what} at 0x{address:x} (cudaErrorMisalignedAddress; "
                  f"{memory.describe(address)})")
    elif report.code == 3:
        detail = f"{what} (__syncthreads in a kernel the virtual GPU ran without fibers)"
    elif report.code == 4:
        detail = f"{what} (a GPU gives an undefined value without an error; the CPU traps)"
    elif report.code == 5:
        detail = "__trap() was called (cudaErrorLaunchFailure)"
    elif report.code == 6:
        detail = f"{what} (the virtual GPU gives each thread 128 KiB of stack)"

    else:
        detail = (f"{what} at address 0x{address:x}: {memory.describe(address)} "
                  "(cudaErrorIllegalAddress)")
    return MemoryFaultError(f"kernel {kernel}: {detail}, in block {block}, thread {thread}")
