"""``mx.kv`` (also ``mx.kvstore``): the key-value store of MXNet 1.x.

``create('local')`` and ``create('device')`` make a ``KVStore`` of one process;
``create('dist_sync')`` a ``DistKVStore`` of ``mpiexec``-launched workers (``kvstore.dist``);
``'dist_async'``, ``'horovod'`` and ``'byteps'`` raise.

Example:
    >>> import hybridgpu as mx
    >>> kv = mx.kv.create("local")
    >>> kv.init(0, mx.nd.ones(3))
    >>> out = mx.nd.zeros(3); kv.pull(0, out=out); out.asnumpy().tolist()
    [1.0, 1.0, 1.0]
"""

from ..base import MXNetError
from .dist import DIST_TYPES, DistKVStore, DistributedError, DistTimeoutError
from .kvstore import KVStore

__all__ = ["KVStore", "KVStoreBase", "DistKVStore", "DistributedError", "DistTimeoutError",
           "create"]

#: MXNet's base class name; the one class here.
KVStoreBase = KVStore

_LOCAL_TYPES = ("local", "device", "nccl")


def create(name="local"):
    """A new ``KVStore`` of kind ``name`` (``'local'``, ``'device'``; ``'nccl'`` behaves as
    ``'device'``).

    Example:
        >>> create("device").type
        'device'
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    if name in DIST_TYPES:
        return DistKVStore(name)
    if name.startswith("dist") or name in ("horovod", "byteps"):
        raise MXNetError(f"kvstore {name!r}: distributed training is not supported by "
                         f"hybridgpu except 'dist_sync' over MPI; use 'dist_sync', 'local' or "
                         "'device'")
    if name not in _LOCAL_TYPES:
        raise MXNetError(f"Unknown kvstore type {name!r}; hybridgpu accepts "
                         f"{', '.join(map(repr, _LOCAL_TYPES))}")
    return KVStore(name)
