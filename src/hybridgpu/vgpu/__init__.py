"""The virtual GPU: CuPy played over host memory, so the GPU code path runs on a CPU (in CI).

``module(n)`` returns the stand-in ``cupy`` module over ``n`` virtual devices; hybridgpu uses it
for ``mx.gpu(i)`` when ``HYBRIDGPU_VIRTUAL_GPU=n`` is set. Arrays live in host memory (each
allocation between guard pages), array functions compute with NumPy, ``RawModule`` kernels are
compiled with g++ through the project's CUDA shim header (``cuda_shim.h``) and run with the
launch's grid, block and arguments, cuBLAS calls compute with NumPy, and streams capture
graphs that replay. It fails loudly where a real GPU would fail or misbehave: see
docs/hybridize_internals.md, "The virtual GPU".

Example:
    >>> xp = module(2)
    >>> xp.is_virtual, xp.cuda.runtime.getDeviceCount()
    (True, 2)
    >>> with xp.cuda.Device(1):
    ...     x = xp.ones(3, dtype=xp.float32)
    >>> x.device.id, xp.asnumpy(x).tolist()
    (1, [1.0, 1.0, 1.0])
    >>> x * 2
    Traceback (most recent call last):
    ValueError: operator __mul__: Array device must be same as the current device: array device = 1 while current = 0
"""  # noqa: E501

from __future__ import annotations

import os
import threading

from . import devices

__all__ = ["module", "is_virtual"]

_lock = threading.Lock()
_module = [None]


def module(n=1):
    """The stand-in ``cupy`` module with ``n`` virtual devices (one module per process; a
    later call changes the device count)."""
    devices.configure(n)
    with _lock:
        if _module[0] is None:
            from . import standin

            _module[0] = standin.build()
            standin.install_cupyx()
            if os.environ.get("HYBRIDGPU_VGPU_RECORD"):  # record CuPy calls (vgpu/recorder.py)
                from . import recorder

                recorder.install(_module[0])
    return _module[0]


def is_virtual(xp):
    """True when ``xp`` is the virtual GPU's stand-in module (real CuPy has no is_virtual)."""
    return getattr(xp, "is_virtual", False)
