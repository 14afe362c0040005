"""Automatic names of symbols, as MXNet 1.x gives them (``mx.name``): a name is the called op's
name in lower case plus a counter per name (``fullyconnected0``, ``_plusscalar1``).

Example:
    >>> with NameManager():
    ...     current().get(None, "dense"), current().get(None, "dense"), current().get("x", "d")
    ('dense0', 'dense1', 'x')
    >>> with Prefix("net_"):
    ...     current().get(None, "conv")
    'net_conv0'
"""

from __future__ import annotations

import threading

__all__ = ["NameManager", "Prefix", "current"]

_local = threading.local()


class _NameManagerType(type):
    """NameManager's metaclass: ``NameManager.current`` reads or sets this thread's manager,
    as MXNet 1.x's class attribute does."""

    @property
    def current(cls):
        """This thread's NameManager."""
        return current()

    @current.setter
    def current(cls, manager):
        if not isinstance(manager, NameManager):
            raise TypeError(f"NameManager.current must be a NameManager, got "
                            f"{type(manager).__name__}")
        _local.manager = manager


class NameManager(metaclass=_NameManagerType):
    """Hands out names: the given name if any, else ``hint`` plus a per-hint counter.
    A ``with`` block makes it the current manager of this thread."""

    def __init__(self):
        self._counter: dict[str, int] = {}
        self._previous = []

    def get(self, name, hint):
        """``name`` if given, else the next ``hint<k>``."""
        if name:
            return name
        count = self._counter.get(hint, 0)
        self._counter[hint] = count + 1
        return f"{hint}{count}"

    def __enter__(self):
        self._previous.append(current())
        _local.manager = self
        return self

    def __exit__(self, *exc):
        _local.manager = self._previous.pop()


class Prefix(NameManager):
    """A NameManager that puts ``prefix`` before every name, given or automatic."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        return self._prefix + super().get(name, hint)


_default = NameManager()


def current():
    """The NameManager of this thread."""
    return getattr(_local, "manager", None) or _default
