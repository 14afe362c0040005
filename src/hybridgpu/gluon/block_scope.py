"""Block naming as MXNet 1.x does it: a top-level block takes ``<class name lower><k>_`` from
the global name counters (``dense0_``); a block made inside a parent's ``name_scope()`` takes
the parent's prefix plus a per-parent counter (``hybridsequential0_dense0_``), and shares the
parent's ParameterDict prefix.

Example:
    >>> from hybridgpu import name
    >>> with name.NameManager():
    ...     prefix, params = BlockScope.create(None, None, "dense")
    >>> prefix, params.prefix
    ('dense0_', 'dense0_')
"""

from __future__ import annotations

import threading

from .. import name as naming
from .parameter import ParameterDict

__all__ = ["BlockScope"]

_local = threading.local()


class BlockScope:
    """The naming scope a Block opens with ``with block.name_scope():``."""

    def __init__(self, block):
        self._block = block
        self._counter: dict[str, int] = {}
        self._stacks = threading.local()  # (outer scope, Prefix) entered, per thread

    def _entered(self):
        stack = getattr(self._stacks, "entered", None)
        if stack is None:
            stack = self._stacks.entered = []
        return stack

    @staticmethod
    def current():
        """The innermost open scope of this thread, or None."""
        return getattr(_local, "scope", None)

    @staticmethod
    def create(prefix, params, hint):
        """``(prefix, ParameterDict)`` for a new block whose class name is ``hint``."""
        current = BlockScope.current()
        if current is None:
            if prefix is None:
                prefix = naming.current().get(None, hint) + "_"
            params = ParameterDict(prefix) if params is None else ParameterDict(
                params.prefix, params)
            return prefix, params
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = f"{hint}{count}_"
            current._counter[hint] = count + 1
        if params is None:
            parent = current._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return current._block.prefix + prefix, params

    def __enter__(self):
        if self._block._empty_prefix:
            return self
        names = naming.Prefix(self._block.prefix)
        self._entered().append((BlockScope.current(), names))
        _local.scope = self
        names.__enter__()  # symbols made inside get the block's prefix
        return self

    def __exit__(self, *exc):
        if self._block._empty_prefix:
            return
        outer, names = self._entered().pop()
        names.__exit__(*exc)
        _local.scope = outer
