"""What a GPU result is tied to: device, driver, CUDA, library versions, date and commit.

Example:
    >>> import numpy as np
    >>> info = describe(np)
    >>> info["numpy"] == np.__version__, "date" in info
    (True, True)
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess

import numpy as np

__all__ = ["describe", "commit"]


def commit():
    """The git commit of the source tree (``unknown`` outside a checkout)."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True,
                             text=True, check=False, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def _cuda_versions(xp):
    runtime = xp.cuda.runtime
    info = {"cupy": getattr(xp, "__version__", "unknown"),
            "virtual_gpu": bool(getattr(xp, "is_virtual", False))}
    if info["virtual_gpu"]:
        info["device"] = "virtual GPU (hybridgpu.vgpu: kernels on the CPU, times meaningless)"
        return info
    try:
        from cupy.cuda import nvrtc

        info["nvrtc"] = ".".join(map(str, nvrtc.getVersion()))
    except Exception as err:  # an old CuPy, or NVRTC missing: say so, the rest still helps
        info["nvrtc"] = f"unknown ({type(err).__name__})"
    try:
        props = runtime.getDeviceProperties(0)
        name = props.get("name", b"")
        info["device"] = name.decode() if isinstance(name, bytes) else str(name)
        info["driver"] = runtime.driverGetVersion()
        info["cuda_runtime"] = runtime.runtimeGetVersion()
        info["compute_capability"] = f"{props.get('major')}.{props.get('minor')}"
    except Exception as err:  # the virtual GPU offers no properties: say so
        info.setdefault("device", f"unknown ({type(err).__name__})")
    return info


def describe(xp):
    """A dict of everything a measurement depends on, for ``xp`` (numpy or a cupy module)."""
    info = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "commit": commit(), "numpy": np.__version__, "python": platform.python_version(),
            "host": platform.node(), "processor": platform.processor() or platform.machine()}
    if xp is not np and getattr(xp, "cuda", None) is not None:
        info.update(_cuda_versions(xp))
    else:
        info["device"] = f"cpu: {info['processor']}"
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_cuda"] = bool(torch.cuda.is_available())
    except ImportError:
        info["torch"] = None
    return info
