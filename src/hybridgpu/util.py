"""``mx.util``: MXNet 1.x's NumPy-semantics switches and environment access.

MXNet 1.x has two flags for its NumPy-compatible mode: *NumPy shape* (``()`` is a scalar's
shape, ``0`` a zero-size axis and ``-1`` an unknown one, instead of ``0`` meaning unknown) and
*NumPy array* (Gluon creates ``mx.np.ndarray`` instead of ``mx.nd.NDArray``). This module
keeps both flags as MXNet does: NumPy shape per thread, or for every thread after
``set_np_shape(2)``; NumPy array per thread, in ``np_array()`` scopes. hybridgpu brings back
the ``nd``/``sym`` front end; what reads these flags is listed in docs/differences.md.

Example:
    >>> is_np_shape()
    False
    >>> with np_shape(True):
    ...     is_np_shape()
    True
    >>> @use_np_shape
    ... def inside():
    ...     return is_np_shape()
    >>> inside(), is_np_shape()
    (True, False)
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import threading

__all__ = ["set_np_shape", "is_np_shape", "np_shape", "use_np_shape", "np_array",
           "is_np_array", "use_np_array", "use_np", "set_np", "reset_np", "getenv", "setenv",
           "set_module"]

_OFF, _THREAD_ON, _GLOBAL_ON = 0, 1, 2


class _ShapeFlag(threading.local):
    value = _OFF


_thread_shape = _ShapeFlag()
_global_shape = [_OFF]  # a list so the functions below can set it without ``global``
_logged = [False]


def is_np_shape():
    """Whether NumPy shape semantics is on in this thread (on for all threads after
    ``set_np_shape(2)``)."""
    return bool(_global_shape[0] or _thread_shape.value)


def set_np_shape(active):
    """Turn NumPy shape semantics on (``True``/1: this thread; 2: every thread) or off
    (anything else: this thread and the global switch); returns the previous state.

    Example:
        >>> set_np_shape(True), is_np_shape(), set_np_shape(False)
        (False, True, True)
    """
    if isinstance(active, float) or not isinstance(active, int):
        raise TypeError(f"set_np_shape: active must be a bool or an int (2 for every thread), "
                        f"got {type(active).__name__}")
    previous = is_np_shape()
    if active in (_THREAD_ON, _GLOBAL_ON):
        if not _logged[0]:
            logging.info("NumPy-shape semantics has been activated: () is a scalar's shape, "
                         "0 a zero-size axis and -1 an unknown size")
            _logged[0] = True
        _thread_shape.value = _THREAD_ON
        if active == _GLOBAL_ON:
            _global_shape[0] = _GLOBAL_ON
    else:
        if is_np_array():
            raise ValueError("set_np_shape: NumPy shape semantics cannot be turned off while "
                             "NumPy array semantics is on (leave the np_array scope first, or "
                             "call reset_np())")
        _thread_shape.value = _OFF
        _global_shape[0] = _OFF
    return previous


class _NumpyShapeScope:
    """The scope ``np_shape(active)`` returns: sets the flag, restores it on exit."""

    def __init__(self, is_np_shape):  # noqa: A002 (MXNet's argument name)
        self._enter = is_np_shape
        self._previous = None

    def __enter__(self):
        if self._enter is not None:
            self._previous = set_np_shape(self._enter)
        return self

    def __exit__(self, *exc):
        if self._enter is not None and self._previous != self._enter:
            set_np_shape(self._previous)


def np_shape(active=True):
    """A ``with`` scope with NumPy shape semantics on (or off, ``active=False``)."""
    return _NumpyShapeScope(active)


class _NumpyArrayScope:
    """One NumPy-array setting; ``_current.value`` (per thread) is the one in force.

    ``np_array(active)`` returns one; entering it makes it current until it exits.
    """

    _current = threading.local()

    def __init__(self, is_np_array):  # noqa: A002 (MXNet's argument name)
        self._old_scope = None
        self._is_np_array = bool(is_np_array)

    def __enter__(self):
        current = _NumpyArrayScope._current
        if not hasattr(current, "value"):
            current.value = _NumpyArrayScope(False)
        self._old_scope = current.value
        current.value = self
        return self

    def __exit__(self, *exc):
        _NumpyArrayScope._current.value = self._old_scope


def np_array(active=True):
    """A ``with`` scope with NumPy array semantics on (or off, ``active=False``)."""
    return _NumpyArrayScope(active)


def is_np_array():
    """Whether NumPy array semantics is on in this thread."""
    current = _NumpyArrayScope._current
    return current.value._is_np_array if hasattr(current, "value") else False


def _scoped(func, make_scope, decorator):
    """``func`` (a callable, or every method and property of a class) run inside
    ``make_scope()``."""
    if inspect.isclass(func):
        def wanted(member):
            return inspect.isfunction(member) or inspect.ismethod(member) or \
                isinstance(member, property)
        for name, member in inspect.getmembers(func, predicate=wanted):
            if isinstance(member, property):
                wrapped = property(_scoped(member.__get__, make_scope, decorator),
                                   member.__set__, member.__delete__, member.__doc__)
            else:
                wrapped = _scoped(member, make_scope, decorator)
            setattr(func, name, wrapped)
        return func
    if not callable(func):
        raise TypeError(f"{decorator} can only decorate classes and callables, got "
                        f"{type(func).__name__}")

    @functools.wraps(func)
    def inside_scope(*args, **kwargs):
        with make_scope():
            return func(*args, **kwargs)
    return inside_scope


def use_np_shape(func):
    """Decorator: run ``func`` (or every method of a class) with NumPy shape semantics on."""
    return _scoped(func, lambda: np_shape(True), "use_np_shape")


def use_np_array(func):
    """Decorator: run ``func`` (or every method of a class) with NumPy array semantics on."""
    return _scoped(func, lambda: np_array(True), "use_np_array")


def use_np(func):
    """Decorator: ``use_np_shape`` and ``use_np_array`` together."""
    return use_np_shape(use_np_array(func))


def set_np(shape=True, array=True):
    """Set both switches for this thread; array semantics needs shape semantics."""
    if not shape and array:
        raise ValueError("set_np: NumPy array semantics needs NumPy shape semantics "
                         "(shape=True)")
    _NumpyArrayScope._current.value = _NumpyArrayScope(array)
    set_np_shape(shape)


def reset_np():
    """Turn both switches off (MXNet 1.x's default)."""
    set_np(shape=False, array=False)


def getenv(name):
    """The value of environment variable ``name`` as hybridgpu sees it, or None (there is
    no separate C runtime environment here)."""
    return os.environ.get(name)


def setenv(name, value):
    """Set environment variable ``name`` to ``value`` (None unsets it)."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def set_module(module):
    """Decorator setting a function's or class's ``__module__`` (None leaves it)."""
    def decorate(func):
        if module is not None:
            func.__module__ = module
        return func
    return decorate
