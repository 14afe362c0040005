"""``mx.profiler``: time every op, write a Chrome trace, print per-op statistics.

``set_config(filename=...)``, then ``set_state('run')``: from then on every op that runs is
timed — each eager ``nd.*`` call, and each step of a hybridized program (while profiling, a
compiled program runs its steps one by one through the reference interpreter, so each step has
its own time; ``set_state('stop')`` returns to the compiled code). ``dumps()`` gives the
aggregate table (count, total, min, max, average per op, as MXNet prints it) and ``dump()``
writes the events as a Chrome-trace JSON file, which Perfetto (ui.perfetto.dev) or
chrome://tracing opens. ``Domain``, ``Task``, ``Frame``, ``Event``, ``Counter``, ``Marker`` and
``scope`` add your own ranges, values and marks.

Example:
    >>> import hybridgpu as mx
    >>> mx.profiler.set_config(filename="/tmp/doctest_profile.json", aggregate_stats=True)
    >>> mx.profiler.set_state("run")
    >>> y = mx.nd.relu(mx.nd.ones((4, 4)) - 2)
    >>> mx.profiler.set_state("stop")
    >>> "relu" in mx.profiler.dumps(reset=True)
    True
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time

from . import ops
from .base import MXNetError

__all__ = ["set_config", "set_state", "get_state", "dump", "dumps", "pause", "resume", "scope",
           "Domain", "Task", "Frame", "Event", "Counter", "Marker", "profiler_set_config",
           "profiler_set_state", "dump_profile"]

_CONFIG_KEYS = ("profile_all", "profile_symbolic", "profile_imperative", "profile_memory",
                "profile_api", "filename", "continuous_dump", "dump_period", "aggregate_stats",
                "profile_process")
_PID = os.getpid()


class _State:
    """Everything the profiler holds: config, on/off, events and per-name statistics."""

    def __init__(self):
        self.lock = threading.Lock()
        self.config = {"filename": "profile.json", "aggregate_stats": False}
        self.running = False
        self.paused = False
        self.events = []
        self.stats = {}  # category -> name -> [count, total_us, min_us, max_us]
        self.scopes = threading.local()
        self.originals = {}

    @property
    def recording(self):
        return self.running and not self.paused

    def add(self, event, duration_us=None):
        with self.lock:
            self.events.append(event)
            if duration_us is not None:
                entry = self.stats.setdefault(event["cat"], {}).setdefault(
                    event["name"], [0, 0.0, float("inf"), 0.0])
                entry[0] += 1
                entry[1] += duration_us
                entry[2] = min(entry[2], duration_us)
                entry[3] = max(entry[3], duration_us)


_STATE = _State()


def _now_us():
    return time.perf_counter_ns() / 1000.0


def _record_range(name, category, start_us, end_us, args=None):
    event = {"name": name, "cat": category, "ph": "X", "ts": start_us,
             "dur": end_us - start_us, "pid": _PID, "tid": threading.get_ident()}
    if args:
        event["args"] = args
    _STATE.add(event, end_us - start_us)


def _current_scope():
    return getattr(_STATE.scopes, "name", "")


# -- timing ops -------------------------------------------------------------------------------

def _timed_compute(op, compute):
    def compute_and_time(xp, *args, **kwargs):
        if not _STATE.recording:
            return compute(xp, *args, **kwargs)
        start = _now_us()
        result = compute(xp, *args, **kwargs)
        if getattr(xp, "__name__", "numpy") != "numpy":  # wait for the device to finish
            xp.cuda.Device().synchronize()
        _record_range(_current_scope() + op.name, "operator", start, _now_us())
        return result

    compute_and_time.__wrapped__ = compute
    return compute_and_time


def _stepwise_call(self, inputs, rng=None):
    """A compiled program's call while profiling: its steps one by one (each op timed)."""
    from .compiler.pipeline import InterpretedExecutable

    start = _now_us()
    outs = InterpretedExecutable(self.graph, self.ctx, self.is_train, self.plan)(inputs, rng)
    _record_range(_current_scope() + "hybridized program", "program", start, _now_us(),
                  {"nodes": len(self.graph.nodes)})
    return outs


def _compiled_classes():
    from .compiler.pipeline import Executable, InterpretedExecutable

    found, todo = [], list(Executable.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if cls is not InterpretedExecutable and "__call__" in vars(cls):
            found.append(cls)
    return found


def _instrument():
    for op in ops.all_ops():
        if op not in _STATE.originals:
            _STATE.originals[op] = op.compute
            op.compute = _timed_compute(op, op.compute)
    for cls in _compiled_classes():
        if cls not in _STATE.originals:
            _STATE.originals[cls] = vars(cls)["__call__"]
            cls.__call__ = _stepwise_call


def _restore():
    for target, original in _STATE.originals.items():
        if isinstance(target, type):
            target.__call__ = original
        else:
            target.compute = original
    _STATE.originals.clear()


# -- the MXNet API ----------------------------------------------------------------------------

def set_config(**kwargs):
    """Set profiler options: ``filename`` (the trace ``dump`` writes; default
    'profile.json'), ``aggregate_stats``, ``profile_all``... (MXNet's names; every op is
    profiled here whatever the ``profile_*`` switches say)."""
    unknown = sorted(set(kwargs) - set(_CONFIG_KEYS))
    if unknown:
        raise MXNetError(f"profiler.set_config: unknown option {unknown[0]!r}; valid options "
                         f"are {list(_CONFIG_KEYS)}")
    if "filename" in kwargs and not isinstance(kwargs["filename"], (str, os.PathLike)):
        raise TypeError(f"profiler.set_config: filename must be a path, got "
                        f"{type(kwargs['filename']).__name__}")
    _STATE.config.update(kwargs)


def set_state(state="stop", profile_process="worker"):
    """``'run'`` starts timing, ``'stop'`` stops it (the collected data stay for dump)."""
    if state not in ("run", "stop"):
        raise ValueError(f"profiler.set_state: state must be 'run' or 'stop', got {state!r}")
    if state == "run" and not _STATE.running:
        _instrument()
        _STATE.running, _STATE.paused = True, False
    elif state == "stop" and _STATE.running:
        _STATE.running = False
        _restore()


def get_state():
    """``'run'`` or ``'stop'``."""
    return "run" if _STATE.running else "stop"


def pause(profile_process="worker"):
    """Stop recording until ``resume()`` (the profiler stays in the 'run' state)."""
    _STATE.paused = True


def resume(profile_process="worker"):
    """Record again after ``pause()``."""
    _STATE.paused = False


def _trace():
    meta = [{"name": "process_name", "ph": "M", "pid": _PID, "args": {"name": "hybridgpu"}}]
    with _STATE.lock:
        return {"traceEvents": meta + list(_STATE.events), "displayTimeUnit": "ms"}


def dump(finished=True, profile_process="worker"):
    """Write the events as a Chrome-trace JSON file (``set_config(filename=...)``), through a
    temporary file and a rename. ``finished`` drops the written events afterwards."""
    path = os.fspath(_STATE.config["filename"])
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(_trace(), f)
    os.replace(tmp, path)
    if finished:
        with _STATE.lock:
            _STATE.events.clear()


_SORT_KEYS = {"total": 1, "min": 2, "max": 3, "count": 0, "avg": None}


def _rows(table, sort_by, ascending):
    def key(item):
        count, total, low, high = item[1]
        index = _SORT_KEYS[sort_by]
        return total / count if index is None else item[1][index]

    return sorted(table.items(), key=key, reverse=not ascending)


def dumps(reset=False, format="table", sort_by="total", ascending=False):  # noqa: A002
    """The aggregate statistics: per category (``operator``, ``program``, your domains), per
    name the count and the total, min, max and average time in ms; ``format`` is 'table' (as
    MXNet prints it) or 'json'. ``reset`` clears them afterwards."""
    if format not in ("table", "json"):
        raise ValueError(f"profiler.dumps: format must be 'table' or 'json', got {format!r}")
    if sort_by not in _SORT_KEYS:
        raise ValueError(f"profiler.dumps: sort_by must be one of {list(_SORT_KEYS)}, got "
                         f"{sort_by!r}")
    with _STATE.lock:
        stats = {cat: dict(table) for cat, table in _STATE.stats.items()}
        if reset:
            _STATE.stats.clear()
    if format == "json":
        return json.dumps({"Time": {cat: {name: {
            "Count": c, "Total": t / 1000, "Min": lo / 1000, "Max": hi / 1000,
            "Avg": t / c / 1000} for name, (c, t, lo, hi) in _rows(table, sort_by, ascending)}
            for cat, table in sorted(stats.items())}, "Unit": {"Time": "ms"}}, indent=4)
    lines = ["", "Profile Statistics:", "\tNote the difference in units for different entries."]
    header = (f"{'Name':<30}{'Total Count':>11}{'Time (ms)':>17}{'Min Time (ms)':>17}"
              f"{'Max Time (ms)':>17}{'Avg Time (ms)':>17}")
    for cat, table in sorted(stats.items()):
        lines += [cat, "=================", header,
                  f"{'----':<30}{'-----------':>11}{'---------':>17}{'-------------':>17}"
                  f"{'-------------':>17}{'-------------':>17}"]
        for name, (c, t, lo, hi) in _rows(table, sort_by, ascending):
            lines.append(f"{name:<30}{c:>11}{t / 1000:>17.4f}{lo / 1000:>17.4f}"
                         f"{hi / 1000:>17.4f}{t / c / 1000:>17.4f}")
        lines.append("")
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def scope(name="<unk>:", append_mode=False):
    """Prefix the names of ops timed inside with ``name`` (``append_mode`` adds it to the
    enclosing scope's prefix)."""
    outer = _current_scope()
    _STATE.scopes.name = (outer + name) if append_mode else name
    try:
        yield
    finally:
        _STATE.scopes.name = outer


# MXNet's older names
profiler_set_config = set_config
profiler_set_state = set_state
dump_profile = dump


# -- user annotations -------------------------------------------------------------------------

class Domain:
    """A named group of tasks, frames, counters and markers (their category in the trace).

    Example:
        >>> Domain("training").new_task("epoch").name
        'epoch'
    """

    def __init__(self, name):
        if not isinstance(name, str):
            raise TypeError(f"profiler.Domain: name must be a string, got {type(name).__name__}")
        self.name = name

    def new_task(self, name):
        return Task(self, name)

    def new_frame(self, name):
        return Frame(self, name)

    def new_counter(self, name, value=None):
        return Counter(self, name, value)

    def new_marker(self, name):
        return Marker(self, name)

    def __str__(self):
        return self.name


class _Range:
    """A timed range: ``start()``/``stop()`` (or ``with``), recorded while profiling runs."""

    def __init__(self, name, category):
        self.name = name
        self.category = category
        self._start = None

    def start(self):
        self._start = _now_us()

    def stop(self):
        if self._start is None:
            raise MXNetError(f"profiler {type(self).__name__} {self.name!r}: stop() before "
                             f"start()")
        if _STATE.recording:
            _record_range(self.name, self.category, self._start, _now_us())
        self._start = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def __str__(self):
        return self.name


class Task(_Range):
    """A range of work in a domain (category: the domain's name)."""

    def __init__(self, domain, name):
        super().__init__(name, domain.name)
        self.domain = domain


class Frame(_Range):
    """A frame (one iteration of a repeated piece of work) in a domain."""

    def __init__(self, domain, name):
        super().__init__(name, f"{domain.name},frame")
        self.domain = domain


class Event(_Range):
    """A range outside any domain (category 'event')."""

    def __init__(self, name):
        super().__init__(name, "event")


class Counter:
    """A value over time, drawn as a graph in the trace: ``set_value``, ``increment``,
    ``decrement``, ``+=`` and ``-=``.

    Example:
        >>> c = Counter(Domain("d"), "queue", 3)
        >>> c += 2
        >>> c.value
        5
    """

    def __init__(self, domain, name, value=None):
        self.domain = domain
        self.name = name
        self.value = 0
        if value is not None:
            self.set_value(value)

    def set_value(self, value):
        self.value = value
        if _STATE.recording:
            _STATE.add({"name": self.name, "cat": self.domain.name, "ph": "C", "ts": _now_us(),
                        "pid": _PID, "tid": threading.get_ident(),
                        "args": {self.name: value}})

    def increment(self, delta=1):
        self.set_value(self.value + delta)

    def decrement(self, delta=1):
        self.set_value(self.value - delta)

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self

    def __str__(self):
        return self.name


_MARK_SCOPES = {"global": "g", "process": "p", "thread": "t", "task": "t", "marker": "t"}


class Marker:
    """An instant mark in the trace: ``mark(scope='process')`` (or 'global', 'thread')."""

    def __init__(self, domain, name):
        self.domain = domain
        self.name = name

    def mark(self, scope="process"):  # noqa: A002  (MXNet's name)
        if scope not in _MARK_SCOPES:
            raise ValueError(f"profiler.Marker.mark: scope must be one of {list(_MARK_SCOPES)},"
                             f" got {scope!r}")
        if _STATE.recording:
            _STATE.add({"name": self.name, "cat": f"{self.domain.name},instant_marker",
                        "ph": "i", "s": _MARK_SCOPES[scope], "ts": _now_us(), "pid": _PID,
                        "tid": threading.get_ident()})
