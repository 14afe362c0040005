"""Virtual device memory: every allocation is its own mapping between two guard pages.

An allocation of ``n`` bytes is placed so that it ends (rounded up to 256 bytes, CUDA's
allocation alignment) right before an inaccessible page, with another inaccessible page in
front: a kernel reading or writing past either end faults, and the launch reports it
(kernels.py). Live allocations are kept by address range, so any pointer can be named
("48 bytes into allocation #12 of 400 bytes on device 0") and a graph replay can refuse
pointers into freed memory. Memory is given back when the last array using it goes.

Example:
    >>> mem = Memory(100, device_id=0)
    >>> find(mem.ptr + 10).size, mem.ptr % 256
    (100, 0)
    >>> describe(mem.ptr + 256 + 4096).startswith("not in any live allocation")
    True
"""

from __future__ import annotations

import bisect
import ctypes
import ctypes.util
import gc
import itertools
import threading
import weakref

import numpy as np

from . import devices
from .errors import OutOfMemoryError

__all__ = ["Memory", "MemoryPointer", "find", "describe", "used_bytes", "is_live", "hold_frees",
           "MemoryPool", "host_view"]

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_PROT_NONE, _PROT_RW = 0, 3
_MAP_PRIVATE_ANON = 0x02 | 0x20
_MAP_FAILED = ctypes.c_void_p(-1).value
PAGE = 4096
ALIGN = 256  # cudaMalloc's alignment

# reentrant: a Memory's finalizer (_unmap) may run from a garbage collection triggered by an
# allocation made while this thread holds the lock
_lock = threading.RLock()
_starts: list[int] = []  # sorted start addresses of live allocations
_by_start: dict[int, weakref.ref] = {}
_used: dict[int, int] = {}  # bytes in use per device id
_serial = itertools.count(1)
_held = [False]  # True while streams have queued work (async mode): frees keep their pages
_deferred: list = []  # (base, size) of the mappings freed while held


def _map(nbytes):
    """(mapping start, mapping size, data address) with guard pages around the data."""
    data_pages = -(-max(nbytes, 1) // PAGE)
    total = (data_pages + 2) * PAGE
    base = _libc.mmap(None, total, _PROT_NONE, _MAP_PRIVATE_ANON, -1, 0)
    if base in (None, _MAP_FAILED):  # out of mappings: collect dead arrays once, then retry
        gc.collect()
        base = _libc.mmap(None, total, _PROT_NONE, _MAP_PRIVATE_ANON, -1, 0)
    if base in (None, _MAP_FAILED):
        raise OutOfMemoryError(f"out of memory allocating {nbytes} bytes (mmap failed, errno "
                               f"{ctypes.get_errno()})")
    if _libc.mprotect(base + PAGE, data_pages * PAGE, _PROT_RW) != 0:
        _libc.munmap(base, total)
        raise OutOfMemoryError(f"mprotect failed for an allocation of {nbytes} bytes")
    end = base + PAGE + data_pages * PAGE
    data = end - (-(-max(nbytes, 1) // ALIGN) * ALIGN)
    return base, total, data


def _unmap(base, total, start, device_id, size):
    with _lock:
        i = bisect.bisect_left(_starts, start)
        if i < len(_starts) and _starts[i] == start:
            del _starts[i]
            _by_start.pop(start, None)
        _used[device_id] = _used.get(device_id, 0) - size
        if _held[0]:
            _deferred.append((base, total))
            return
    _libc.munmap(base, total)


def hold_frees(held):
    """While ``held``, a freed allocation leaves the used count but keeps its pages mapped:
    work queued on a stream (async mode) may still touch them, directly or through a pointer
    table, as a GPU's queued kernels touch memory CuPy's pool took back (and reuses only in
    stream order). Releasing the hold unmaps them. Returns ``(mappings, bytes)`` waiting to be
    unmapped."""
    with _lock:
        _held[0] = bool(held)
        freed = [] if held else list(_deferred)
        if not held:
            _deferred.clear()
        waiting = len(_deferred), sum(total for _, total in _deferred)
    for mapping in freed:
        _libc.munmap(*mapping)
    return waiting


class Memory:
    """``cupy.cuda.Memory``: ``size`` bytes on device ``device_id`` at address ``ptr``.

    Allocating under stream capture raises ``CaptureError``; more than the device's memory
    raises ``OutOfMemoryError``.
    """

    def __init__(self, size, device_id=None):
        device_id = devices.current_id() if device_id is None else device_id
        devices.check_not_capturing(f"allocating {size} bytes of device memory")
        if size < 0:
            raise ValueError(f"cannot allocate a negative size ({size} bytes)")
        if _used.get(device_id, 0) + size > devices.TOTAL_MEMORY:
            raise OutOfMemoryError(
                f"out of memory allocating {size:,} bytes on virtual device {device_id} "
                f"({_used.get(device_id, 0):,} of {devices.TOTAL_MEMORY:,} bytes in use)")
        base, total, self.ptr = _map(size)
        self.size, self.device_id, self.serial = size, device_id, next(_serial)
        with _lock:
            bisect.insort(_starts, self.ptr)
            _by_start[self.ptr] = weakref.ref(self)
            _used[device_id] = _used.get(device_id, 0) + size
        self._finalizer = weakref.finalize(self, _unmap, base, total, self.ptr, device_id, size)

    @property
    def device(self):
        return devices.Device(self.device_id)

    def __repr__(self):
        return f"<virtual allocation #{self.serial}: {self.size} bytes on device " \
               f"{self.device_id} at 0x{self.ptr:x}>"


class MemoryPointer:
    """``cupy.cuda.MemoryPointer``: an address inside a ``Memory`` (``ptr``), keeping it
    alive; ``p + n`` moves it by ``n`` bytes."""

    __slots__ = ("mem", "offset")

    def __init__(self, mem, offset):
        self.mem, self.offset = mem, offset

    @property
    def ptr(self):
        return self.mem.ptr + self.offset

    @property
    def device_id(self):
        return self.mem.device_id

    @property
    def device(self):
        return self.mem.device

    def __add__(self, nbytes):
        if not isinstance(nbytes, (int, np.integer)):
            return NotImplemented
        return MemoryPointer(self.mem, self.offset + int(nbytes))

    def __repr__(self):
        return f"<MemoryPointer 0x{self.ptr:x} (+{self.offset} in {self.mem!r})>"


def host_view(ptr, nbytes, owner):
    """A uint8 NumPy view of ``nbytes`` at ``ptr``, keeping ``owner`` alive."""
    buf = (ctypes.c_uint8 * max(nbytes, 1)).from_address(ptr)
    buf._owner = owner  # the view holds the buffer, the buffer holds the allocation
    return np.frombuffer(buf, np.uint8, count=nbytes)


def find(address):
    """The live Memory containing ``address`` (its end included for empty ranges), or None."""
    with _lock:
        i = bisect.bisect_right(_starts, address) - 1
        if i < 0:
            return None
        mem = _by_start[_starts[i]]()
    if mem is None or address > mem.ptr + max(mem.size, 0):
        return None
    return mem


def is_live(serial_and_ptr):
    """True when the allocation ``(serial, ptr)`` is still live."""
    serial, ptr = serial_and_ptr
    mem = find(ptr)
    return mem is not None and mem.serial == serial


def describe(address):
    """Where ``address`` lies, in words: inside, or how far from, the nearest allocation."""
    mem = find(address)
    if mem is not None and address < mem.ptr + mem.size:
        return f"{address - mem.ptr} bytes into {mem!r}"
    with _lock:
        i = bisect.bisect_right(_starts, address) - 1
        below = _by_start[_starts[i]]() if i >= 0 else None
    if below is not None and address >= below.ptr + below.size:
        past = address - (below.ptr + below.size)
        return f"not in any live allocation: {past} bytes past the end of {below!r}"
    return "not in any live allocation"


def used_bytes(device_id):
    """Bytes allocated on ``device_id`` now."""
    return _used.get(device_id, 0)


class MemoryPool:
    """``cupy.get_default_memory_pool()``: the virtual GPU allocates directly, so the pool
    holds nothing; it reports what is in use."""

    def used_bytes(self):
        return sum(_used.values())

    def total_bytes(self):
        return sum(_used.values())

    def free_bytes(self):
        return 0

    def free_all_blocks(self, stream=None):
        """Nothing is cached: nothing to give back."""

    def n_free_blocks(self):
        return 0

    def set_limit(self, size=None, fraction=None):
        """Accepted for compatibility; the virtual device has a fixed size."""

    def get_limit(self):
        return devices.TOTAL_MEMORY
