"""Virtual devices: ``Device(i)``, the current device of each thread, and the capture state.

A capture in progress forbids, on the thread that captures, allocations, host syncs and
host<->device copies: ``check_not_capturing(what)`` raises ``CaptureError`` naming the step and
the capturing stream. Other threads go on (CuPy captures in CUDA's relaxed mode); a device-wide
synchronize fails on every thread (``check_no_capture_anywhere``). As in CUDA, a forbidden call
also invalidates the capture: its ``end_capture`` raises, even where the first error was
swallowed (a finalizer's).

Example:
    >>> from hybridgpu.vgpu import devices
    >>> devices.configure(2)
    >>> with devices.Device(1):
    ...     devices.current_id()
    1
    >>> devices.current_id()
    0
"""

from __future__ import annotations

import threading

from .errors import CaptureError

__all__ = ["Device", "configure", "count", "current_id", "check_not_capturing",
           "check_no_capture_anywhere", "capturing_streams", "on_device_synchronize",
           "synchronize_device"]

_state = {"count": 1}
_local = threading.local()
_capturing: dict = {}  # stream -> id of the thread capturing on it
_invalidated: dict = {}  # capturing stream -> what invalidated its capture
_drains: list = []  # run at a device synchronize (streams.drain_all: the async mode's queues)
#: bytes of memory each virtual device offers (what memGetInfo reports as total)
TOTAL_MEMORY = 16 << 30


def configure(n):
    """Set the number of virtual devices (``HYBRIDGPU_VIRTUAL_GPU=n``)."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"the virtual GPU needs at least one device, got {n!r}")
    _state["count"] = n


def count():
    """The number of virtual devices."""
    return _state["count"]


def _stack():
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = [0]
    return stack


def current_id():
    """The id of this thread's current device (0 unless set)."""
    return _stack()[-1]


def validate(device_id):
    """``device_id`` as an int, or the CUDA error for a device that does not exist."""
    if not isinstance(device_id, int) or isinstance(device_id, bool):
        raise TypeError(f"device id must be an int, got {device_id!r}")
    if not 0 <= device_id < count():
        raise ValueError(f"invalid device ordinal {device_id}: the virtual GPU has {count()} "
                         "device(s) (cudaErrorInvalidDevice)")
    return device_id


class Device:
    """``cupy.cuda.Device``: a ``with`` scope making device ``id`` current; ``use()`` makes it
    current for good.

    Example:
        >>> configure(2)
        >>> with Device(1) as d:
        ...     d.id, Device().id
        (1, 1)
    """

    #: What CuPy's ``Device.compute_capability`` gives (a string, ``major * 10 + minor``):
    #: the virtual GPU models an sm_90 device (an H100/H200).
    compute_capability = "90"

    def __init__(self, device=None):
        self.id = current_id() if device is None else validate(int(device))

    def use(self):
        """Make this device current for this thread (outside any ``with``)."""
        _stack()[0] = self.id

    def synchronize(self):
        """Wait for the device: the capture check, then every stream's queued work."""
        check_no_capture_anywhere("Device.synchronize()")
        synchronize_device(self.id)

    def __enter__(self):
        _stack().append(self.id)
        return self

    def __exit__(self, *exc):
        _stack().pop()

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return hash(("vgpu.Device", self.id))

    def __repr__(self):
        return f"<CUDA Device {self.id}>"


def capturing_streams():
    """The streams capturing now, on any thread (a snapshot)."""
    return set(_capturing)


def on_device_synchronize(drain):
    """Call ``drain(device_id)`` at every device synchronize (streams registers its queues)."""
    _drains.append(drain)


def synchronize_device(device_id):
    """Run the work queued on device ``device_id`` (after the capture check)."""
    for drain in _drains:
        drain(device_id)


def begin_capture(stream):
    _capturing[stream] = threading.get_ident()
    _invalidated.pop(stream, None)


def end_capture(stream):
    """End ``stream``'s capture; CaptureError if a forbidden call invalidated it meanwhile
    (even one whose error was swallowed, as in a finalizer run by the garbage collector)."""
    _capturing.pop(stream, None)
    what = _invalidated.pop(stream, None)
    if what is not None:
        raise CaptureError(f"the capture on {stream!r} was invalidated by {what} "
                           "(cudaErrorStreamCaptureInvalidated)")


def _raise(what, streams):
    for stream in streams:
        _invalidated.setdefault(stream, what)
    names = ", ".join(sorted(repr(s) for s in streams))
    raise CaptureError(f"{what} is not allowed while a stream is capturing a CUDA graph "
                       f"({names}): CUDA fails the capture "
                       "(cudaErrorStreamCaptureUnsupported/Invalidated)")


def check_not_capturing(what):
    """Raise CaptureError if this thread is capturing: ``what`` is forbidden under capture."""
    if _capturing:
        me = threading.get_ident()
        mine = [s for s, thread in list(_capturing.items()) if thread == me]
        if mine:
            _raise(what, mine)


def check_no_capture_anywhere(what):
    """Raise CaptureError if any thread is capturing (device-wide synchronisation)."""
    if _capturing:
        _raise(what, list(_capturing))
