"""``mx.AttrScope``: attributes (strings) attached to every symbol made inside the scope.

Example:
    >>> with AttrScope(ctx_group="dev1"):
    ...     current().get({"lr_mult": "2"})
    {'ctx_group': 'dev1', 'lr_mult': '2'}
"""

from __future__ import annotations

import threading

__all__ = ["AttrScope", "current"]

_local = threading.local()


class _AttrScopeType(type):
    """AttrScope's metaclass: ``AttrScope.current`` reads or sets this thread's scope, as
    MXNet 1.x's class attribute does."""

    @property
    def current(cls):
        """This thread's AttrScope."""
        return current()

    @current.setter
    def current(cls, scope):
        if not isinstance(scope, AttrScope):
            raise TypeError(f"AttrScope.current must be an AttrScope, got "
                            f"{type(scope).__name__}")
        _local.scope = scope


class AttrScope(metaclass=_AttrScopeType):
    """Attributes for the symbols created in a ``with`` block; nested scopes merge, inner
    values win; attributes given to a symbol explicitly win over the scope's."""

    def __init__(self, **kwargs):
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ValueError(f"AttrScope: attribute {key!r} must be a string, got "
                                 f"{type(value).__name__}")
        self._attr = kwargs
        self._previous = []

    def get(self, attr):
        """The scope's attributes updated with ``attr`` (a dict or None)."""
        merged = dict(self._attr)
        merged.update(attr or {})
        return merged

    def __enter__(self):
        outer = current()
        self._previous.append(outer)
        scope = AttrScope()
        scope._attr = outer.get(self._attr)
        _local.scope = scope
        return self

    def __exit__(self, *exc):
        _local.scope = self._previous.pop()


_default = AttrScope()


def current():
    """The AttrScope of this thread."""
    return getattr(_local, "scope", None) or _default
