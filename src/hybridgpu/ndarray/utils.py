"""Helpers of ``mx.nd``: ``waitall``, ``from_dlpack``.

Example:
    >>> import numpy as np
    >>> from_dlpack(np.arange(3.0)).shape
    (3,)
"""

from __future__ import annotations

import numpy as np

from ..context import cpu, gpu, num_gpus
from .ndarray import NDArray

__all__ = ["waitall", "from_dlpack"]

_DLPACK_CUDA = 2


def waitall():
    """Wait for all pending work on every gpu (nothing to wait for on cpu)."""
    if num_gpus() == 0:
        return
    import cupy

    for device_id in range(num_gpus()):
        with cupy.cuda.Device(device_id):
            cupy.cuda.get_current_stream().synchronize()


def from_dlpack(dlpack):
    """An NDArray sharing memory with a DLPack producer (an object with ``__dlpack__``, e.g. a
    torch tensor or a NumPy/CuPy array), on cpu or on the producer's gpu."""
    device = dlpack.__dlpack_device__() if hasattr(dlpack, "__dlpack_device__") else (1, 0)
    if device[0] == _DLPACK_CUDA:
        ctx = gpu(device[1])
        with ctx.scope():
            return NDArray(ctx.xp.from_dlpack(dlpack), ctx)
    return NDArray(np.from_dlpack(dlpack), cpu(0))
