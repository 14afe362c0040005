"""Thread-local recording and training flags read by the dispatcher (autograd builds on them).

They live below ``ndarray`` so that eager dispatch can read them without importing autograd.

Example:
    >>> is_training()
    False
    >>> with training(True):
    ...     is_training()
    True
"""

from __future__ import annotations

import contextlib
import threading

__all__ = ["is_recording", "is_training", "set_recording", "set_training", "training",
           "recording"]


class _State(threading.local):
    """Per-thread flags; the class attributes are the defaults (a missing attribute would
    make every ``getattr(_state, name, False)`` take the slow exception path)."""

    recording = False
    training = False


_state = _State()


def is_recording():
    """True inside ``autograd.record()``."""
    return getattr(_state, "recording", False)


def is_training():
    """True in train mode (``autograd.record()`` or ``autograd.train_mode()``)."""
    return getattr(_state, "training", False)


def set_recording(flag):
    """Set the recording flag; returns the previous value."""
    old = is_recording()
    _state.recording = bool(flag)
    return old


def set_training(flag):
    """Set the train-mode flag; returns the previous value."""
    old = is_training()
    _state.training = bool(flag)
    return old


@contextlib.contextmanager
def training(flag):
    """Scope with the train-mode flag set to ``flag``."""
    old = set_training(flag)
    try:
        yield
    finally:
        set_training(old)


@contextlib.contextmanager
def recording(flag):
    """Scope with the recording flag set to ``flag``."""
    old = set_recording(flag)
    try:
        yield
    finally:
        set_recording(old)
