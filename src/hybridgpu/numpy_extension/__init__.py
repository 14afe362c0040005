"""``mx.npx``: MXNet 1.9's NumPy-mode extensions: the switches (``set_np``, ``reset_np``,
``is_np_array``), neural-network ops (``relu``, ``softmax``, ``fully_connected``,
``convolution``, ``batch_norm``, ...), devices (``cpu``, ``gpu``, ``num_gpus``), ``waitall``,
``load``/``save``. Each op is a thin function over the registry op ``nd`` runs
(``FullyConnected``, ``Convolution``, ...), taking and giving ``mx.np.ndarray`` (or Symbols
while hybridized).

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu import np, npx
    >>> npx.relu(np.array([-1.0, 2.0])), npx.one_hot(np.array([0, 2]), 3).shape
    (array([0., 2.]), (2, 3))
"""

from __future__ import annotations

from .. import ndarray as _nd
from ..context import Context, cpu, cpu_pinned, current_context, gpu, num_gpus
from ..numpy import _dispatch
from ..util import is_np_array, is_np_shape, reset_np, set_np, use_np
from .nn import *  # noqa: F403
from .nn import __all__ as _nn_all
from .reshape import reshape

__all__ = ["set_np", "reset_np", "is_np_array", "is_np_shape", "use_np", "cpu", "gpu",
           "cpu_pinned", "num_gpus", "current_context", "current_device", "Context",
           "waitall", "load", "save", "reshape", "gpu_memory_info", *_nn_all]

current_device = current_context


def waitall():
    """Wait for all pending device work (``nd.waitall``)."""
    _nd.waitall()


def gpu_memory_info(device_id=0):
    """``(free, total)`` bytes of gpu ``device_id`` (needs CuPy and a device)."""
    ctx = gpu(device_id)
    with ctx.scope():
        return tuple(ctx.xp.cuda.runtime.memGetInfo())


def save(file, arr):
    """Save an array, a list of arrays or a dict of arrays in MXNet's format (``nd.save``)."""
    if isinstance(arr, _nd.NDArray):
        arr = [arr]
    _nd.save(file, arr)


def load(file):
    """Load what ``save`` wrote: a list or a dict of ``mx.np.ndarray``."""
    data = _nd.load(file)
    if isinstance(data, dict):
        return {k: _np(v) for k, v in data.items()}
    return [_np(v) for v in data]


def _np(value):
    return _dispatch.ndarray_class()(value._data, value._ctx)
