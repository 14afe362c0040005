"""Streams, events and CUDA graphs of the virtual GPU, with CUDA's capture rules.

Work submitted to a stream runs at once (the virtual device is synchronous), except while the
stream captures: then each step (kernel launch, device-to-device copy, cuBLAS call) is
recorded into the graph that ``end_capture()`` returns, and ``graph.launch()`` replays the
steps with their recorded arguments. A replay refuses a step whose pointers lie in memory
freed since the capture (``FreedMemoryError`` naming the step). While a stream captures, the
capturing thread's allocations, host syncs, host<->device copies and work on the legacy
default stream raise ``CaptureError`` (other threads go on, as in CuPy's relaxed capture
mode, except that nobody may synchronise the capturing stream or the device).

In the ``async`` mode (``HYBRIDGPU_VGPU_ORDER``, see ordering.py) each stream queues its work
instead, and a step runs only when something waits for it: ``Stream.synchronize``,
``Event.synchronize``/``done``, a device synchronize (every queue, newest stream first), host
work on the current stream (``host_work()``: array functions, operators and host reads run
after that stream's queue, as CuPy's kernels and copies would), or a step queued after a
``wait_event`` on its event. The legacy default stream orders with blocking streams as in
CUDA. So a stream that reads another's results without an event wait reads stale data here,
as it may on a GPU. While work is queued, freed allocations keep their pages mapped
(``memory.hold_frees``): CuPy's pool reuses freed memory only in stream order, so queued work
may still read it, directly or through a pointer table.

Example:
    >>> s = Stream(non_blocking=True)
    >>> ran = []
    >>> with s:
    ...     s.begin_capture()
    ...     submit(Step("append 1", lambda: ran.append(1)))
    ...     g = s.end_capture()
    >>> before = list(ran); g.launch(stream=s); g.launch(stream=s)
    >>> s.synchronize(); before, ran
    ([], [1, 1])
"""

from __future__ import annotations

import gc
import itertools
import threading
import weakref

from . import devices, memory, ordering
from .errors import CaptureError, FreedMemoryError, MemoryFaultError

__all__ = ["Stream", "Event", "Graph", "Step", "submit", "get_current_stream",
           "stream_from_ptr", "memcpy_async", "host_work", "complete", "drain_all"]

_handles = itertools.count(0x5000, 0x10)
_by_ptr: dict[int, weakref.ref] = {}
_local = threading.local()
_queue_lock = threading.RLock()  # the queues of every stream (async mode)
_activity = itertools.count()  # when each stream last got work: drains go newest first
_queued: dict = {}  # stream -> its pending steps (async mode), in issue order
# freed memory kept mapped for queued work before the device catches up (runs its queues):
# each mapping is 3 of the process's 65530 (vm.max_map_count)
_MAX_DEFERRED = (1024, 256 << 20)


class Step:
    """One unit of device work: ``run()`` does it; ``what`` names it in errors; ``pointers``
    are the ``(allocation serial, address)`` pairs it touches, checked live at replay.
    Queued (async mode), it also holds ``after``: steps of other streams it waits for."""

    def __init__(self, what, run, pointers=()):
        self.what, self.run, self.pointers = what, run, tuple(pointers)
        self.after, self.done, self.stream = (), False, None

    def check_live(self, index):
        for serial, ptr in self.pointers:
            if not memory.is_live((serial, ptr)):
                raise FreedMemoryError(
                    f"graph step {index} ({self.what}) uses address 0x{ptr:x} of allocation "
                    f"#{serial}, which has been freed since the graph was captured "
                    f"(now {memory.describe(ptr)}); recapture after replacing arrays")


def _ran():
    """What a queued step becomes once it ran."""


def _marker(what, after=()):
    step = Step(what, lambda: None)
    step.after = tuple(a for a in after if a is not None and not a.done)
    return step


class Stream:
    """``cupy.cuda.Stream``: ``with s:`` makes it current; ``ptr`` is its handle (0 for the
    legacy default stream ``Stream.null``)."""

    null: Stream

    def __init__(self, null=False, non_blocking=False, ptds=False, priority=None):
        self.ptr = 0 if null else next(_handles)
        self.device_id = devices.current_id()
        self.non_blocking = non_blocking
        self._graph_steps = None  # a list while capturing
        self._activity = 0
        if not null:
            _by_ptr[self.ptr] = weakref.ref(self)

    def __enter__(self):
        _stack().append(self)
        return self

    def __exit__(self, *exc):
        _stack().pop()

    def use(self):
        _stack()[0] = self
        return self

    def synchronize(self):
        if self.is_capturing():
            devices.check_no_capture_anywhere(f"{self!r}.synchronize() (a host sync of the "
                                              "capturing stream)")
        devices.check_not_capturing(f"{self!r}.synchronize() (a host sync)")
        complete(self)

    def record(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event):
        """Order this stream's later work after ``event`` (async mode: a queued marker that
        waits for the event's step)."""
        step = getattr(event, "_step", None)
        if step is not None and not step.done and not self.is_capturing():
            self.submit(_marker(f"wait for {event!r}", [step]))

    def is_capturing(self):
        return self._graph_steps is not None

    def begin_capture(self, mode=None):
        if self.ptr == 0:
            raise CaptureError("the legacy default stream cannot capture a graph "
                               "(cudaErrorStreamCaptureUnsupported); use "
                               "Stream(non_blocking=True)")
        if self._graph_steps is not None:
            raise CaptureError(f"{self!r} is already capturing")
        self._graph_steps = []
        devices.begin_capture(self)
        if ordering.enabled("gc"):
            gc.collect()  # a finalizer that synchronises invalidates the capture

    def end_capture(self):
        if self._graph_steps is None:
            raise CaptureError(f"{self!r}.end_capture() without begin_capture()")
        if ordering.enabled("gc"):
            gc.collect()
        steps, self._graph_steps = self._graph_steps, None
        devices.end_capture(self)  # raises if something invalidated the capture
        return Graph(steps)

    def submit(self, step):
        """Run ``step`` now (async mode: queue it), or record it when this stream captures."""
        if self._graph_steps is not None:
            self._graph_steps.append(step)
            return
        if self.ptr == 0 and devices.capturing_streams():
            # the legacy stream synchronises with blocking streams: a capture on one fails;
            # on the capturing thread, work meant for the graph landed on the wrong stream
            if any(not s.non_blocking for s in devices.capturing_streams()):
                devices.check_no_capture_anywhere(f"{step.what} on the legacy default stream")
            devices.check_not_capturing(f"{step.what} on the legacy default stream")
        if ordering.enabled("async"):
            _enqueue(self, step)
        else:
            step.run()

    def __repr__(self):
        return "<Stream null>" if self.ptr == 0 else f"<Stream 0x{self.ptr:x}>"


Stream.null = Stream(null=True)


def _stack():
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = [Stream.null]
    return stack


def get_current_stream(device_id=None):
    """The current stream of this thread (the legacy default stream unless set)."""
    return _stack()[-1]


def submit(step):
    """Submit ``step`` to the current stream."""
    get_current_stream().submit(step)


def stream_from_ptr(ptr):
    """The Stream with handle ``ptr`` (0: the legacy default stream)."""
    if ptr == 0:
        return Stream.null
    ref = _by_ptr.get(ptr)
    stream = ref() if ref is not None else None
    if stream is None:
        raise ValueError(f"0x{ptr:x} is not the handle of a live stream "
                         "(cudaErrorInvalidResourceHandle)")
    return stream


# -- the async mode's queues -----------------------------------------------------------------

def _legacy_partners(stream):
    """The streams whose queued work ``stream``'s next step must follow implicitly: the
    legacy stream follows every blocking stream of its device, a blocking stream follows the
    legacy stream."""
    if stream.ptr == 0:
        return [s for s in _queued if s.ptr != 0 and not s.non_blocking
                and s.device_id == devices.current_id()]
    return [] if stream.non_blocking else [Stream.null]


def _enqueue(stream, step):
    with _queue_lock:
        partners = [_queued[s][-1] for s in _legacy_partners(stream) if _queued.get(s)]
        step.after = tuple(step.after) + tuple(partners)
        step.stream = stream
        mappings, nbytes = memory.hold_frees(True)
        if mappings > _MAX_DEFERRED[0] or nbytes > _MAX_DEFERRED[1]:
            drain_all()  # the device catches up: its queued work runs, the pages go
            memory.hold_frees(True)
        _queued.setdefault(stream, []).append(step)
        stream._activity = next(_activity)


def _run_through(step):
    """Run ``step``'s stream's queue up to ``step`` (and what each waits for)."""
    with _queue_lock:
        queue = _queued.get(step.stream, [])
        while not step.done and queue:
            head = queue.pop(0)
            for other in head.after:
                if not other.done:
                    _run_through(other)
            head.done = True
            run, head.run, head.after = head.run, _ran, ()  # holds no arrays once run
            run()
        if not queue:
            _queued.pop(step.stream, None)
            if not _queued:
                memory.hold_frees(False)


def complete(stream):
    """Run everything queued on ``stream`` (async mode; otherwise nothing is queued)."""
    with _queue_lock:
        queue = _queued.get(stream)
        if queue:
            _run_through(queue[-1])


def host_work():
    """Host computation on device arrays is about to run as work of the current stream: run
    what that stream (and, by CUDA's legacy-stream rule, its partners) has queued first."""
    if not _queued:
        return
    stream = get_current_stream()
    with _queue_lock:
        for other in _legacy_partners(stream):
            complete(other)
        complete(stream)


def drain_all(device_id=None):
    """Run every queue (of ``device_id``, or of all devices), the stream that got work last
    first: a device synchronize."""
    with _queue_lock:
        order = sorted(_queued, key=lambda s: -s._activity)
        for stream in order:
            if device_id is None or stream.device_id == device_id or stream.ptr == 0:
                complete(stream)


class Event:
    """``cupy.cuda.Event``: recorded on a stream; done when the work before it has run (at
    once, unless the async mode queues it)."""

    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.ptr = next(_handles)
        self._step = None

    def record(self, stream=None):
        self.stream = get_current_stream() if stream is None else stream
        self._step = None
        pending = [s for s in [self.stream, *_legacy_partners(self.stream)] if _queued.get(s)]
        if ordering.enabled("async") and not self.stream.is_capturing() and pending:
            self._step = _marker(f"{self!r} recorded")
            self.stream.submit(self._step)

    def synchronize(self):
        devices.check_not_capturing("Event.synchronize() (a host sync)")
        if self._step is not None:
            _run_through(self._step)

    @property
    def done(self):
        """True once the work before the event ran (a query runs it: the device progresses)."""
        if self._step is not None:
            _run_through(self._step)
        return True

    def __repr__(self):
        return f"<Event 0x{self.ptr:x}>"


class Graph:
    """``cupy.cuda.Graph``: the steps a capture recorded; ``launch()`` replays them."""

    def __init__(self, steps):
        self.steps = list(steps)

    def upload(self, stream=None):
        """Nothing to upload on the virtual GPU."""

    def launch(self, stream=None):
        """Replay every step in order on ``stream`` (the current one by default)."""
        stream = get_current_stream() if stream is None else stream
        if stream.is_capturing():
            raise CaptureError("launching a graph inside a capture is not supported here")
        for i, step in enumerate(self.steps):
            step.check_live(i)
        steps = self.steps

        def replay():
            for step in steps:
                step.run()

        pointers = [p for step in steps for p in step.pointers]
        stream.submit(Step(f"{self!r} launch", replay, pointers))

    def debug_dot_str(self, flags=0):
        nodes = "\n".join(f'  n{i} [label="{s.what}"];' for i, s in enumerate(self.steps))
        edges = "\n".join(f"  n{i} -> n{i + 1};" for i in range(len(self.steps) - 1))
        return f"digraph vgpu_graph {{\n{nodes}\n{edges}\n}}\n"

    def __repr__(self):
        return f"<virtual CUDA graph of {len(self.steps)} steps>"


def _device_range(ptr, nbytes, what):
    mem = memory.find(ptr)
    if mem is None or ptr + nbytes > mem.ptr + mem.size:
        raise MemoryFaultError(f"{what}: the range [0x{ptr:x}, +{nbytes}) is not inside one "
                               f"live allocation ({memory.describe(ptr)})")
    return mem


def memcpy_async(dst, src, nbytes, kind, stream_ptr):
    """``cupy.cuda.runtime.memcpyAsync``: device-to-device copies (kind 3, or 4 between two
    device pointers) are stream work; host<->device copies raise under capture."""
    import ctypes

    stream = stream_from_ptr(stream_ptr)
    what = f"memcpyAsync({nbytes} bytes, kind {kind})"
    if kind not in (0, 1, 2, 3, 4):
        raise ValueError(f"{what}: unknown cudaMemcpyKind {kind}")
    dst_dev, src_dev = memory.find(dst), memory.find(src)
    if kind == 4:
        kind = {(True, True): 3, (True, False): 1, (False, True): 2}.get(
            (dst_dev is not None, src_dev is not None), 0)
    if kind in (1, 2, 0):
        devices.check_not_capturing(f"{what}: a copy between host and device")
    if kind in (1, 3):
        dst_dev = _device_range(dst, nbytes, f"{what} destination")
    if kind in (2, 3):
        src_dev = _device_range(src, nbytes, f"{what} source")
    pointers = [(m.serial, p) for m, p in ((dst_dev, dst), (src_dev, src)) if m is not None]
    if kind != 3:  # pageable host memory: CUDA copies it synchronously, in stream order
        complete(stream)
        ctypes.memmove(dst, src, nbytes)
        return
    stream.submit(Step(what, lambda: ctypes.memmove(dst, src, nbytes), pointers))


devices.on_device_synchronize(drain_all)
