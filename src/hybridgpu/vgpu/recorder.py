"""Record every CuPy call made on the virtual GPU, to check each against the real CuPy.

``install(xp)`` wraps the stand-in module's functions (``cupy.*``, ``cupy.cuda.*``,
``cupy.cuda.runtime.*``, ``cupy.linalg.*``, ``cupy.random.*``, ``cupy.cuda.nccl.*``, the
stand-in ``cupyx``) and the public methods of its classes (``ndarray``, ``RawModule``,
``RawKernel``, ``Stream``, ``Event``, ``Graph``, ``Device``, the memory classes, the NCCL
communicator, ufuncs): each call from outside ``hybridgpu.vgpu`` is kept once per *shape*:
the CuPy dotted name (a constructor as the class's name), the Python type of each positional
argument and the names and types of the keyword arguments, and where it was first made.
``vgpu.cupy_signatures`` then binds each against the real CuPy object. Calls are kept while
a ``recording()`` block runs, or always once ``HYBRIDGPU_VGPU_RECORD`` installed it.

The CUDA sources given to ``RawModule``/``RawKernel`` are kept too (with their options), so
``vgpu.nvrtc_check`` can compile every kernel through the real CuPy's compile path.

``HYBRIDGPU_VGPU_RECORD=DIR`` installs it when the stand-in is built and writes
``DIR/cupy-calls-<pid>.json`` and ``DIR/cupy-sources-<pid>.json`` at exit (CI's gpu pass;
``python -m hybridgpu.vgpu.cupy_signatures DIR`` and ``python -m hybridgpu.vgpu.nvrtc_check
--recorded DIR`` check them).

Example:
    >>> from hybridgpu import vgpu
    >>> xp = vgpu.module(1)
    >>> with recording(xp):
    ...     x = xp.zeros((2, 3), dtype=xp.float32)
    >>> [c for c in calls() if c["name"] == "cupy.zeros"][-1]["args"]
    ['tuple[int]']
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import inspect
import json
import os
import sys
import threading
import types

import numpy as np

__all__ = ["install", "recording", "calls", "sources", "clear", "describe", "write", "ENV"]

ENV = "HYBRIDGPU_VGPU_RECORD"
_HERE = os.path.dirname(os.path.abspath(__file__))
_lock = threading.Lock()
_seen: dict = {}  # shape key -> record
_sources: dict = {}  # (code, options) -> {"code", "options", "site"}
_canonical: dict = {}  # stand-in class -> CuPy dotted name
_installed = [False]
_active = [0]  # recording while > 0
_KEEP_DUNDERS = ("__init__", "__call__")


def describe(value, depth=0):
    """The Python type of ``value`` as the checker reads it: ``int``, ``tuple[int|str]``,
    ``numpy.float32``, ``cupy.ndarray`` (a stand-in object as the CuPy class it plays)."""
    kind = type(value)
    if value is None:
        return "None"
    if kind in (bool, int, float, str, bytes, dict, complex):
        return kind.__name__
    if kind in (tuple, list):
        if depth >= 2:
            return kind.__name__
        inner = sorted({describe(v, depth + 1) for v in value})
        return f"{kind.__name__}[{'|'.join(inner)}]"
    if kind in _canonical:
        return _canonical[kind]
    if isinstance(value, np.generic):
        return f"numpy.{kind.__name__}"
    if isinstance(value, np.ndarray):
        return "numpy.ndarray"
    if isinstance(value, np.dtype):
        return "numpy.dtype"
    if isinstance(value, type):
        return "type"
    if callable(value):
        return "function"
    return f"{kind.__module__}.{kind.__qualname__}"


def _site(extra=0):
    """``file:line`` of the first frame outside hybridgpu.vgpu (who made the call)."""
    frame = sys._getframe(3 + extra)
    while frame is not None and frame.f_code.co_filename.startswith(_HERE):
        frame = frame.f_back
    if frame is None:
        return "?"
    path = frame.f_code.co_filename
    marker = f"{os.sep}hybridgpu{os.sep}"
    short = path[path.rfind(marker) + 1:] if marker in path else os.path.basename(path)
    return f"{short}:{frame.f_lineno}"


def _note(name, args, kwargs):
    if not _active[0] or sys._getframe(2).f_code.co_filename.startswith(_HERE):
        return  # the stand-in calling itself, not code that would call CuPy
    if name in ("cupy.RawModule", "cupy.RawKernel"):
        _keep_source(name, args, kwargs)
    pos = [describe(a) for a in args]
    kws = sorted((k, describe(v)) for k, v in kwargs.items())
    key = (name, tuple(pos), tuple(kws))
    if key in _seen:
        return
    record = {"name": name, "args": pos, "kwargs": dict(kws), "site": _site()}
    with _lock:
        _seen.setdefault(key, record)


def _keep_source(name, args, kwargs):
    code = kwargs.get("code", args[0] if args else None)
    options = kwargs.get("options", args[2] if len(args) > 2 else ())
    if not isinstance(code, str) or (code, repr(options)) in _sources:
        return
    entry = {"code": code, "options": [str(o) for o in options], "site": _site(1)}
    with _lock:
        _sources.setdefault((code, repr(options)), entry)


def _function(name, fn):
    @functools.wraps(fn)
    def recorded(*args, **kwargs):
        _note(name, args, kwargs)
        return fn(*args, **kwargs)

    recorded.__vgpu_recorded__ = True
    return recorded


def _method(name, fn):
    @functools.wraps(fn)
    def recorded(self, *args, **kwargs):
        _note(name, args, kwargs)
        return fn(self, *args, **kwargs)

    recorded.__vgpu_recorded__ = True
    return recorded


def _ufunc_method(method, fn):
    @functools.wraps(fn)
    def recorded(self, *args, **kwargs):
        _note(f"cupy.{self.__name__}{method}", args, kwargs)
        return fn(self, *args, **kwargs)

    recorded.__vgpu_recorded__ = True
    return recorded


def _ours(cls):
    return isinstance(cls, type) and cls.__module__.startswith("hybridgpu.vgpu")


def _patch_class(cls, dotted):
    """Wrap the public methods (and ``__init__``/``__call__``) of ``cls`` and its stand-in
    bases, recorded under ``dotted`` (the CuPy class name)."""
    _canonical.setdefault(cls, dotted)
    for klass in [k for k in cls.__mro__ if _ours(k)]:
        for attr, raw in list(vars(klass).items()):
            if attr.startswith("_") and attr not in _KEEP_DUNDERS:
                continue
            if getattr(raw, "__vgpu_recorded__", False) or isinstance(raw, property):
                continue
            name = dotted if attr == "__init__" else f"{dotted}.{attr}"
            if isinstance(raw, staticmethod):
                setattr(klass, attr, staticmethod(_function(name, raw.__func__)))
            elif isinstance(raw, classmethod):
                continue
            elif inspect.isfunction(raw):
                setattr(klass, attr, _method(name, raw))


def _patch_module(module, dotted, done):
    if id(module) in done:
        return
    done.add(id(module))
    for attr, value in list(vars(module).items()):
        if attr.startswith("_") or attr in ("is_virtual", "virtual_cublas_library"):
            continue
        name = f"{dotted}.{attr}"
        if isinstance(value, types.ModuleType):
            _patch_module(value, name, done)
        elif _ours(value):
            if value not in _canonical:
                _patch_class(value, name)
        elif type(value).__name__ == "Ufunc" and _ours(type(value)):
            _canonical.setdefault(type(value), "cupy.ufunc")
        elif inspect.isfunction(value) and not getattr(value, "__vgpu_recorded__", False):
            setattr(module, attr, _function(name, value))


def _patch_ufuncs(xp):
    ufunc = next((type(v) for v in vars(xp).values() if type(v).__name__ == "Ufunc"), None)
    if ufunc is None or getattr(ufunc.__call__, "__vgpu_recorded__", False):
        return
    ufunc.__call__ = _ufunc_method("", ufunc.__call__)
    for method in ("reduce", "accumulate", "outer", "at"):
        setattr(ufunc, method, _ufunc_method(f".{method}", getattr(ufunc, method)))


def install(xp):
    """Record every later CuPy call made on the stand-in module ``xp`` (and its cupyx)."""
    done = set()
    _patch_module(xp, "cupy", done)
    _patch_ufuncs(xp)
    for name in ("cupyx", "cupyx.scipy", "cupyx.scipy.special"):
        module = sys.modules.get(name)
        if module is not None and getattr(sys.modules.get("cupyx"), "is_virtual", False):
            _patch_module(module, name, done)
    _patch_random_state(xp)
    if os.environ.get(ENV) and not _installed[0]:
        atexit.register(write, os.environ[ENV])
        _active[0] += 1  # the whole process
    _installed[0] = True


@contextlib.contextmanager
def recording(xp):
    """Record the CuPy calls made on the stand-in ``xp`` while the block runs."""
    install(xp)
    _active[0] += 1
    try:
        yield
    finally:
        _active[0] -= 1


def _patch_random_state(xp):
    cls = xp.random.RandomState
    original = cls.__getattr__
    if getattr(original, "__vgpu_recorded__", False):
        return

    def getattr_recorded(self, name):  # the methods are made on demand: wrap what it hands out
        method = original(self, name)
        return _function(f"cupy.random.RandomState.{name}", method)

    getattr_recorded.__vgpu_recorded__ = True
    cls.__getattr__ = getattr_recorded


def calls():
    """The calls recorded so far (one record a distinct shape), sorted by name."""
    with _lock:
        return sorted(_seen.values(), key=lambda r: (r["name"], r["args"], list(r["kwargs"])))


def sources():
    """The kernel sources given to RawModule/RawKernel so far: ``{"code", "options",
    "site"}`` each."""
    with _lock:
        return list(_sources.values())


def clear():
    """Forget the calls and sources recorded so far."""
    with _lock:
        _seen.clear()
        _sources.clear()


def write(folder):
    """Write the recorded calls to ``folder/cupy-calls-<pid>.json`` and the kernel sources
    to ``folder/cupy-sources-<pid>.json``; the first path."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"cupy-calls-{os.getpid()}.json")
    for name, value in ((path, calls()),
                        (os.path.join(folder, f"cupy-sources-{os.getpid()}.json"), sources())):
        with open(name, "w", encoding="utf-8") as f:
            json.dump(value, f, indent=1)
    return path
