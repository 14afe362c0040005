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
           "recording", "note_read", "watching_reads", "unwatched"]


class _State(threading.local):
    """Per-thread flags; the class attributes are the defaults (a missing attribute would
    make every ``getattr(_state, name, False)`` take the slow exception path)."""

    recording = False
    training = False
    reads = None  # while a hybrid_forward is traced: the set of what its Python read


_state = _State()


def is_recording():
    """True inside ``autograd.record()``."""
    return getattr(_state, "recording", False)


def is_training():
    """True in train mode (``autograd.record()`` or ``autograd.train_mode()``). Read while
    a ``hybrid_forward`` is traced, it makes train mode part of that trace's key."""
    state = _state
    if state.reads is not None:
        state.reads.add("training")
    return state.training


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


def note_read(what):
    """Record that the Python being traced read ``what`` (``'shape'``, ``'dtype'``,
    ``'training'``): a trace that read it is run again when it changes (Symbol.shape calls this).
    """
    reads = _state.reads
    if reads is not None:
        reads.add(what)


@contextlib.contextmanager
def watching_reads():
    """Scope that collects, in the set it yields, what the code inside reads (``note_read``);
    what an inner scope collects counts for the outer one too.

    Example:
        >>> with watching_reads() as reads:
        ...     _ = is_training()
        >>> sorted(reads)
        ['training']
    """
    outer = _state.reads
    reads = _state.reads = set()
    try:
        yield reads
    finally:
        _state.reads = outer
        if outer is not None:
            outer.update(reads)


@contextlib.contextmanager
def unwatched():
    """Scope whose reads are not recorded: a layer's own checks of its input's shape, which
    only choose an error message, must not make every model retrace on a new shape."""
    outer = _state.reads
    _state.reads = None
    try:
        yield
    finally:
        _state.reads = outer
