"""Devices: ``mx.cpu(i)`` runs on NumPy, ``mx.gpu(i)`` on CuPy device ``i``.

CuPy is imported only when a gpu context is first used, so the package imports on machines
without it. With ``HYBRIDGPU_VIRTUAL_GPU=N`` set, the gpu contexts are N virtual devices
(``hybridgpu.vgpu``: CuPy played over host memory, kernels compiled with g++), so the GPU code
path runs on a machine without a GPU.

Example:
    >>> import hybridgpu as mx
    >>> mx.cpu(0), mx.gpu(1)
    (cpu(0), gpu(1))
    >>> with mx.cpu(1):
    ...     mx.context.current_context()
    cpu(1)
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import warnings

import numpy as np

from .base import MXNetError

__all__ = ["Context", "cpu", "gpu", "cpu_pinned", "current_context", "num_gpus",
           "gpu_memory_info", "VirtualGPUWarning"]

_INSTALL_HINT = (
    "install CuPy for your CUDA version: pip install 'hybridgpu[cuda12]' (cupy-cuda12x) or "
    "pip install 'hybridgpu[cuda13]' (cupy-cuda13x)"
)


def _virtual_gpu_count():
    """N from ``HYBRIDGPU_VIRTUAL_GPU=N`` (0 when unset); a bad value raises MXNetError."""
    value = os.environ.get("HYBRIDGPU_VIRTUAL_GPU", "").strip()
    if not value:
        return 0
    try:
        n = int(value)
    except ValueError:
        n = -1
    if n < 0:
        raise MXNetError(f"HYBRIDGPU_VIRTUAL_GPU must be a number of virtual devices (an int "
                         f">= 0), got {value!r}")
    return n


class VirtualGPUWarning(UserWarning):
    """Said once a process, when a gpu context is first used while ``HYBRIDGPU_VIRTUAL_GPU``
    is set: ``gpu(i)`` is then the virtual GPU (CPU emulation), whose timings are not a
    GPU's. Silence it with ``warnings.simplefilter("ignore", VirtualGPUWarning)``."""


_virtual_noticed = []  # one entry once the notice was given (a list: no global statement)


def _notice_virtual(ctx, count):
    """Warn, the first time in this process, that ``ctx`` is the virtual GPU."""
    if _virtual_noticed:
        return
    _virtual_noticed.append(ctx)
    level, frame, package = 1, sys._getframe(0), os.path.dirname(__file__)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(package):
        level, frame = level + 1, frame.f_back  # point at the user's line, not ours
    warnings.warn(f"{ctx} is hybridgpu's virtual GPU (HYBRIDGPU_VIRTUAL_GPU={count}): the GPU "
                  "code path emulated on the CPU (kernels compiled with g++), for testing "
                  "without a GPU; results follow CUDA's rules, timings are not a GPU's",
                  VirtualGPUWarning, stacklevel=level)


def _import_cupy():
    """Return the cupy module (the virtual GPU's stand-in when ``HYBRIDGPU_VIRTUAL_GPU`` is
    set), or raise MXNetError saying how to install it."""
    n = _virtual_gpu_count()
    if n:
        from . import vgpu

        return vgpu.module(n)
    try:
        import cupy
    except ImportError as err:
        raise MXNetError(f"gpu contexts need CuPy, which is not installed ({err}); "
                         f"{_INSTALL_HINT}") from err
    return cupy


class _ContextType(type):
    """Context's metaclass: gives the class MXNet's deprecated ``Context.default_ctx``, a
    settable class attribute for this thread's default context."""

    @property
    def default_ctx(cls):
        """This thread's default context (MXNet 1.x; use ``current_context()``)."""
        return current_context()

    @default_ctx.setter
    def default_ctx(cls, ctx):
        stack = _scope_stack()
        if stack:
            stack[-1] = Context(ctx)
        else:
            stack.append(Context(ctx))


class Context(metaclass=_ContextType):
    """A device: ``Context('cpu', 0)``, ``Context('gpu', 1)`` or a copy of another Context.

    ``device_type`` is ``'cpu'``, ``'gpu'``, ``'cpu_pinned'`` or ``'cpu_shared'`` (the last two
    are plain NumPy memory here). A Context is a ``with`` scope that sets the default context;
    ``Context.default_ctx`` reads or sets this thread's default, as in MXNet 1.x.

    Example:
        >>> ctx = Context('gpu', 0)
        >>> ctx.device_type, ctx.device_id, ctx == gpu(0), str(ctx)
        ('gpu', 0, True, 'gpu(0)')
    """

    devtype2str = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
    devstr2type = {name: code for code, name in devtype2str.items()}
    _default = threading.local()
    __slots__ = ("device_typeid", "device_id", "is_gpu", "_xp")

    _interned: dict = {}

    def __new__(cls, device_type, device_id=0):
        # One object per device, so the dispatcher's identity check usually settles equality.
        if isinstance(device_type, Context):
            key = (device_type.device_typeid, device_type.device_id)
        else:
            key = (cls.devstr2type.get(device_type, device_type), device_id)
        try:
            return cls._interned[key]
        except (KeyError, TypeError):
            pass
        self = super().__new__(cls)
        self._init(device_type, device_id)
        with contextlib.suppress(TypeError):  # an unhashable device id is refused by _init
            cls._interned[key] = self
        return self

    def __init__(self, device_type, device_id=0):
        """Set up in ``__new__`` (instances are interned)."""

    def _init(self, device_type, device_id):
        if isinstance(device_type, Context):
            self.device_typeid, self.device_id = device_type.device_typeid, device_type.device_id
        else:
            if device_type not in self.devstr2type:
                raise MXNetError(f"unknown device type {device_type!r}; expected one of "
                                 f"{sorted(self.devstr2type)}")
            if not isinstance(device_id, (int, np.integer)) or device_id < 0:
                raise MXNetError(f"device id must be a non-negative int, got {device_id!r}")
            self.device_typeid, self.device_id = self.devstr2type[device_type], int(device_id)
        self.is_gpu = self.device_typeid == 2  # plain attribute: read on every op dispatch
        self._xp = None if self.is_gpu else np

    @property
    def is_virtual(self):
        """True for a gpu context while ``HYBRIDGPU_VIRTUAL_GPU`` is set: the virtual GPU (the
        GPU code path emulated on the CPU); ``str(ctx)`` stays MXNet's ``'gpu(0)'``.

        Example:
            >>> cpu(0).is_virtual
            False
        """
        return self.is_gpu and _virtual_gpu_count() > 0

    @property
    def device_type(self):
        """``'cpu'``, ``'gpu'``, ``'cpu_pinned'`` or ``'cpu_shared'``."""
        return self.devtype2str[self.device_typeid]

    @property
    def xp(self):
        """The array module for this context: ``numpy`` for cpu, ``cupy`` for gpu.

        Raises MXNetError when CuPy is missing or the device does not exist.
        """
        if self._xp is None:
            if self.is_gpu:
                cupy = _import_cupy()
                count = _gpu_count(cupy)
                if self.device_id >= count:
                    seen = (f"the virtual GPU has {count} device(s) (HYBRIDGPU_VIRTUAL_GPU="
                            f"{count})" if getattr(cupy, "is_virtual", False) else
                            f"CuPy sees {count} CUDA device(s)")
                    raise MXNetError(
                        f"{self} is not available: {seen}"
                        + ("; is a CUDA driver installed and a GPU visible?" if count == 0 else ""))
                if getattr(cupy, "is_virtual", False):
                    _notice_virtual(self, count)
                self._xp = cupy
            else:
                self._xp = np
        return self._xp

    def scope(self):
        """A ``with`` scope making this device current for CuPy (nothing to do on cpu)."""
        if self.is_gpu:
            return self.xp.cuda.Device(self.device_id)
        return contextlib.nullcontext()

    def empty_cache(self):
        """Give CuPy's cached device memory back to the driver (no-op on cpu)."""
        if self.is_gpu:
            self.xp.get_default_memory_pool().free_all_blocks()

    # Contexts are interned (one object per device), so identity hashing agrees with __eq__
    # and keeps dict lookups keyed by a Context (parameters, traces) at C speed.
    __hash__ = object.__hash__

    def __eq__(self, other):
        return (isinstance(other, Context) and self.device_typeid == other.device_typeid
                and self.device_id == other.device_id)

    def __repr__(self):
        return f"{self.device_type}({self.device_id})"

    __str__ = __repr__

    def __enter__(self):
        _scope_stack().append(self)
        return self

    def __exit__(self, *exc):
        _scope_stack().pop()

    def __reduce__(self):
        return (Context, (self.device_type, self.device_id))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


def _gpu_count(cupy):
    try:
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # no driver, no device: CuPy raises its own runtime errors
        return 0


_CPU0 = Context("cpu", 0)


def cpu(device_id=0):
    """The cpu context (NumPy). ``device_id`` is kept for MXNet compatibility.

    Example:
        >>> cpu()
        cpu(0)
    """
    return Context("cpu", device_id)


def cpu_pinned(device_id=0):
    """The pinned-cpu context; plain NumPy memory in hybridgpu."""
    return Context("cpu_pinned", device_id)


def gpu(device_id=0):
    """The context of CUDA device ``device_id`` (CuPy). Creating it never fails; using it does
    when CuPy or the device is missing.

    Example:
        >>> gpu(1)
        gpu(1)
    """
    return Context("gpu", device_id)


def current_context():
    """The default context of this thread: ``cpu(0)`` unless a ``with ctx:`` scope is active.

    Example:
        >>> current_context()
        cpu(0)
    """
    stack = _scope_stack()
    return stack[-1] if stack else _CPU0


def _scope_stack():
    stack = getattr(Context._default, "stack", None)
    if stack is None:
        stack = Context._default.stack = []
    return stack


def num_gpus():
    """The number of CUDA devices CuPy sees; 0 without CuPy or a driver. With
    ``HYBRIDGPU_VIRTUAL_GPU=N`` set: N.

    Example:
        >>> num_gpus() >= 0
        True
    """
    if _virtual_gpu_count():
        return _virtual_gpu_count()
    try:
        import cupy
    except ImportError:
        return 0
    return _gpu_count(cupy)


def gpu_memory_info(device_id=0):
    """``(free, total)`` bytes of gpu ``device_id`` (MXNet's ``mx.context.gpu_memory_info``).

    Example:
        >>> import hybridgpu as mx
        >>> if mx.context.num_gpus():
        ...     free, total = gpu_memory_info(0)
        ...     assert 0 <= free <= total
    """
    ctx = gpu(device_id)
    xp = ctx.xp
    with ctx.scope():
        free, total = xp.cuda.runtime.memGetInfo()
    return int(free), int(total)
