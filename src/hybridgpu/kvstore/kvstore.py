"""``KVStore``: MXNet 1.x's key-value store for parameters and gradients, in one process.

``init`` stores a copy of a value under an int or str key (one kind of key per store).
``push`` sums the values given (one per device, as a list) and either replaces the stored
value with the sum or, after ``set_optimizer``, hands ``(key, sum, stored)`` to the
optimizer's updater, which updates the stored value in place; ``pull`` copies the stored value
into every output array; ``pushpull`` does both. Keys and values may be lists.

This is the one KVStore class of hybridgpu: ``'local'`` and ``'device'`` are this class; the
multi-device reduction and the distributed kinds extend it (the reduction is ``_merge``).

Differences from MXNet 1.9.1, on purpose: pushing a value whose shape differs from the stored
one raises (MXNet replaces the stored value); after a push of several values without an
updater, the stored value does not share memory with MXNet's merge buffer (in MXNet a later
push of several values then overwrites the stored weight with the gradient sum before the
updater runs); ``save_optimizer_states`` writes hybridgpu's pickle-free states file.

Example:
    >>> import hybridgpu as mx
    >>> kv = KVStore("local")
    >>> kv.init("w", mx.nd.zeros(2))
    >>> kv.push("w", [mx.nd.ones(2), mx.nd.ones(2) * 2])   # summed: 3
    >>> out = mx.nd.zeros(2); kv.pull("w", out=out); out.asnumpy().tolist()
    [3.0, 3.0]
    >>> kv.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.5))
    >>> kv.pushpull("w", mx.nd.ones(2), out=out); out.asnumpy().tolist()   # 3 - 0.5 * 1
    [2.5, 2.5]
"""

from __future__ import annotations

from .. import optimizer as opt
from ..base import MXNetError
from ..ndarray import NDArray
from ..ndarray.ndarray import to_device_array
from ..serialization import files, ndarray_file
from . import device_reduce

__all__ = ["KVStore"]

_KEY_KINDS = {int: "int", str: "str"}


def _key_list(key, value, what):
    """``[(key, value)]`` for a single key or a list of keys with a list of values."""
    if isinstance(key, (list, tuple)):
        if value is None:
            return [(k, None) for k in key]
        if not isinstance(value, (list, tuple)) or len(value) != len(key):
            raise MXNetError(f"kvstore.{what}: {len(key)} keys need a list of {len(key)} "
                             f"values, got {type(value).__name__}")
        return list(zip(key, value))
    return [(key, value)]


def _arrays(value, key, what):
    arrays = list(value) if isinstance(value, (list, tuple)) else [value]
    if not arrays:
        raise MXNetError(f"kvstore.{what}: no value given for key {key!r}")
    for array in arrays:
        if not isinstance(array, NDArray):
            raise TypeError(f"kvstore.{what}: values of key {key!r} must be NDArrays, got "
                            f"{type(array).__name__}")
    return arrays


def _assign(target, source):
    """Copy ``source`` into ``target`` (any contexts), in place."""
    with target.context.scope():
        target._data[...] = to_device_array(source._data, source.context, target.context,
                                            copy=False)


class KVStore:
    """A key-value store of NDArrays in this process (``mx.kv.create(kv_type)``).

    Example:
        >>> import hybridgpu as mx
        >>> kv = KVStore("device")
        >>> kv.type, kv.rank, kv.num_workers
        ('device', 0, 1)
    """

    OPTIMIZER = "optimizer"

    def __init__(self, kv_type="local"):
        self._type = kv_type
        self._store = {}
        self._key_kind = None
        self._updater = None

    # -- properties -----------------------------------------------------------------------
    @property
    def type(self):
        """The kind given to ``create`` (``'local'`` or ``'device'``)."""
        return self._type

    @property
    def rank(self):
        """This worker's rank (0: one process)."""
        return 0

    @property
    def num_workers(self):
        """The number of workers (1: one process)."""
        return 1

    def is_capable(self, capability):
        """Whether the store supports ``capability`` (``'optimizer'``: yes)."""
        if capability.lower() != KVStore.OPTIMIZER:
            raise MXNetError(f"Unknown capability: {capability}")
        return True

    def __contains__(self, key):
        return key in self._store

    def _check_key(self, key, what):
        kind = _KEY_KINDS.get(type(key))
        if kind is None:
            raise TypeError(f"kvstore.{what}: keys must be int or str, got "
                            f"{type(key).__name__} {key!r}")
        if self._key_kind is None:
            self._key_kind = kind
        elif kind != self._key_kind:
            raise MXNetError(f"kvstore.{what}: key {key!r} is a {kind}, but this store's keys "
                             f"are {self._key_kind}s: Mixed key types are not allowed")

    def _stored(self, key, what):
        self._check_key(key, what)
        if key not in self._store:
            raise MXNetError(f"kvstore.{what}: key {key!r} has not been inited; call "
                             f"kv.init({key!r}, value) first")
        return self._store[key]

    # -- operations -----------------------------------------------------------------------
    def init(self, key, value):
        """Store a copy of ``value`` (the first, if a list) under ``key`` (or each key)."""
        for k, v in _key_list(key, value, "init"):
            self._check_key(k, "init")
            if k in self._store:
                raise MXNetError(f"kvstore.init: duplicate init of key {k!r}. Please double "
                                 f"check if you called kv.init or kv.broadcast with this key "
                                 f"multiple times")
            self._store[k] = _arrays(v, k, "init")[0].copy()

    def _merge(self, key, arrays, stored):
        """The sum of ``arrays`` on ``stored``'s context (the reduction of several
        devices' values: NCCL when each is on its own GPU, ``device_reduce``)."""
        for array in arrays:
            if array.shape != stored.shape:
                raise MXNetError(f"kvstore.push: key {key!r} holds shape {stored.shape}, but "
                                 f"a value of shape {array.shape} was pushed")
        return device_reduce.summed(arrays, stored.context)

    def push(self, key, value, priority=0):
        """Push ``value`` (an NDArray or a list of them, summed) to ``key`` (or each key):
        the updater runs on the stored value, or the sum replaces it."""
        for k, v in _key_list(key, value, "push"):
            stored = self._stored(k, "push")
            merged = self._merge(k, _arrays(v, k, "push"), stored)
            if self._updater is not None:
                self._updater(k, merged, stored)
            else:
                _assign(stored, merged)

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Copy the value of ``key`` (or each key) into ``out`` (an NDArray or a list)."""
        if out is None:
            raise MXNetError("kvstore.pull: out must be given (the arrays to copy into)")
        for k, o in _key_list(key, out, "pull"):
            stored = self._stored(k, "pull")
            for target in _arrays(o, k, "pull"):
                if target.shape != stored.shape:
                    raise MXNetError(f"kvstore.pull: key {k!r} holds shape {stored.shape}, "
                                     f"but the output has shape {target.shape}")
                _assign(target, stored)

    def pushpull(self, key, value, out=None, priority=0):
        """``push(key, value)`` then ``pull(key, out)`` (into ``value`` when ``out`` is
        None)."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key, value, out, priority=0):
        """``init(key, value)`` then ``pull(key, out)``."""
        self.init(key, value)
        self.pull(key, out, priority)

    # -- optimizer ------------------------------------------------------------------------
    def set_optimizer(self, optimizer):
        """Update stored values with ``optimizer`` on every push."""
        self._set_updater(opt.get_updater(optimizer))

    def _set_updater(self, updater):
        """Call ``updater(key, merged, stored)`` on every push."""
        self._updater = updater

    def set_gradient_compression(self, compression_params):
        """Not supported: gradients are summed in process, uncompressed."""
        raise NotImplementedError("kvstore.set_gradient_compression: hybridgpu's kvstore "
                                  "sums gradients in process, uncompressed")

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Save the updater's states (hybridgpu's pickle-free format), atomically."""
        if self._updater is None:
            raise MXNetError("kvstore.save_optimizer_states: no optimizer; call "
                             "set_optimizer first")
        ndarray_file.save(fname, *self._updater._state_records(dump_optimizer))

    def load_optimizer_states(self, fname):
        """Load states written by ``save_optimizer_states``."""
        if self._updater is None:
            raise MXNetError("kvstore.load_optimizer_states: no optimizer; call "
                             "set_optimizer first")
        self._updater.set_states(files.read_regular(fname, "optimizer states file"))

    def barrier(self):
        """Wait for every worker (one process: returns at once)."""

    _barrier = barrier

    def __repr__(self):
        return f"<KVStore {self._type!r}: {len(self._store)} keys>"
