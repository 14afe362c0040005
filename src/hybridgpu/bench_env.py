"""What ``python -m hybridgpu bench`` records about where it ran: the device and why that one,
the BLAS library and its thread count (fixed with threadpoolctl), versions and the git commit.

Example:
    >>> ctx, reason = device_choice()
    >>> str(ctx) in ("cpu(0)", "gpu(0)") and len(reason) > 0
    True
    >>> with blas_limit(1) as blas:
    ...     "thread" in blas["text"] or "threadpoolctl" in blas["text"]
    True
"""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
import time

import numpy as np

from .context import cpu, gpu

__all__ = ["device_choice", "blas_limit", "environment"]


def device_choice():
    """``(context, reason)``: gpu(0) when CuPy sees a CUDA device, else cpu(0), with the
    reason in words (CuPy missing, no driver or device, or the GPU's name)."""
    try:
        import cupy
    except ImportError:
        return cpu(0), ("CuPy is not installed, so NumPy runs everything (on a machine with an "
                        "NVIDIA GPU: pip install -e '.[cuda13]', or '.[cuda12]' for a CUDA 12 "
                        "driver)")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:  # CuPy raises its own runtime errors without a driver
        return cpu(0), (f"CuPy {cupy.__version__} is installed but finds no CUDA driver or "
                        f"device ({type(err).__name__}: {err})")
    if count == 0:
        return cpu(0), f"CuPy {cupy.__version__} is installed but sees no CUDA device"
    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    return gpu(0), f"CuPy {cupy.__version__} sees {count} CUDA device(s); gpu(0) is {name}"


def _blas_pools():
    from threadpoolctl import threadpool_info

    return [p for p in threadpool_info() if p.get("user_api") == "blas"]


@contextlib.contextmanager
def blas_limit(threads):
    """Within the scope, BLAS libraries use ``threads`` threads (0: leave them as they are);
    yields ``{"text", "library", "version", "threads"}`` describing what is in effect."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield {"text": "BLAS threads unknown (threadpoolctl is not installed)",
               "library": None, "version": None, "threads": None}
        return
    limits = threadpool_limits(limits=threads, user_api="blas") if threads else None
    try:
        pools = _blas_pools()
        counts = sorted({p["num_threads"] for p in pools})
        libs = ", ".join(f"{p['internal_api']} {p.get('version') or ''}".strip() for p in pools)
        how = (f"fixed to {threads} with threadpoolctl; --threads N to change" if threads
               else "the library's default (--threads 0)")
        text = (f"{libs or 'no BLAS library found'}, {'/'.join(map(str, counts)) or '?'} "
                f"thread(s) ({how}); {os.cpu_count()} cpu cores")
        yield {"text": text, "library": libs or None,
               "version": pools[0].get("version") if pools else None,
               "threads": counts[0] if len(counts) == 1 else counts}
    finally:
        if limits is not None:
            limits.restore_original_limits()


def git_commit():
    """The commit hybridgpu runs from (``git rev-parse HEAD`` in its directory), or
    ``'unknown'`` outside a git checkout."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                             text=True, check=False, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def environment(ctx, reason, blas):
    """The facts saved with a benchmark result (and printed above its table)."""
    from . import __version__

    try:
        import cupy

        cupy_version = cupy.__version__
    except ImportError:
        cupy_version = None
    return {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "hybridgpu": __version__, "commit": git_commit(),
            "python": platform.python_version(), "numpy": np.__version__,
            "cupy": cupy_version, "platform": platform.platform(),
            "cpu": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
            "device": str(ctx), "device_reason": reason, "blas": blas["text"],
            "blas_library": blas["library"], "blas_threads": blas["threads"]}
