"""Timing on a device, the way the device notes ask: warm up, then time many calls between two
events, repeat, and keep the median (with the spread beside it).

On a real GPU the clock is a pair of CUDA events (``cupy.cuda.Event``) recorded on the current
stream around ``number`` calls; the host waits for the end event before reading it. On the
virtual GPU or the CPU, where events mean nothing, the host clock is read after a sync.

Example:
    >>> import numpy as np
    >>> stats = time_calls(lambda: np.ones(8).sum(), xp=np, repeat=3, min_seconds=0.001)
    >>> sorted(stats), stats["median_us"] > 0
    (['calls', 'max_us', 'median_us', 'min_us', 'repeat'], True)
"""

from __future__ import annotations

import statistics
import time

__all__ = ["time_calls", "uses_events"]


def uses_events(xp):
    """True when ``xp`` is the real CuPy (device events give device time)."""
    return getattr(xp, "cuda", None) is not None and not getattr(xp, "is_virtual", False) \
        and hasattr(xp.cuda, "Event")


def _sync(xp):
    if getattr(xp, "cuda", None) is not None:
        xp.cuda.get_current_stream().synchronize()


def _calls_for(fn, xp, min_seconds):
    """How many calls make one timed repeat last about ``min_seconds``."""
    start = time.perf_counter()
    fn()
    _sync(xp)
    single = max(time.perf_counter() - start, 1e-7)
    return max(1, min(100_000, int(min_seconds / single)))


def _one_repeat(fn, xp, number, events):
    if events:
        start, end = xp.cuda.Event(), xp.cuda.Event()
        start.record()
        for _ in range(number):
            fn()
        end.record()
        end.synchronize()
        return xp.cuda.get_elapsed_time(start, end) / 1e3 / number
    _sync(xp)
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    _sync(xp)
    return (time.perf_counter() - t0) / number


def time_calls(fn, xp, repeat=15, warmup=3, min_seconds=0.05, number=None):
    """``{median_us, min_us, max_us, calls, repeat}`` of ``fn()`` per call (see the module
    docstring); ``number`` calls a repeat (default: enough for ``min_seconds``)."""
    for _ in range(warmup):
        fn()
    _sync(xp)
    number = number or _calls_for(fn, xp, min_seconds)
    events = uses_events(xp)
    samples = [_one_repeat(fn, xp, number, events) for _ in range(repeat)]
    return {"median_us": statistics.median(samples) * 1e6, "min_us": min(samples) * 1e6,
            "max_us": max(samples) * 1e6, "calls": number, "repeat": repeat}
