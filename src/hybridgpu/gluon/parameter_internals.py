"""MXNet 1.x's private ``Parameter`` names that GluonNLP's ``WeightDropParameter`` (AWD-LSTM's
weight drop) reads and copies: ``_allow_deferred_init``, ``_ctx_list``, ``_ctx_map``,
``_trainer`` and ``_check_and_get(arrays, ctx)``. hybridgpu keeps its parameters' data in one
``{context: NDArray}`` dict, so these are views of it; assigning ``_ctx_list``/``_ctx_map`` is
accepted and changes nothing (the contexts follow the data).

Example:
    >>> import hybridgpu as mx
    >>> p = mx.gluon.Parameter("w", shape=(2,), allow_deferred_init=True)
    >>> p.initialize()
    >>> p._allow_deferred_init, p._ctx_list, p._check_and_get(p._data, None).shape
    (True, [cpu(0)], (2,))
"""

from __future__ import annotations

__all__ = ["MXNetPrivateNames"]


class MXNetPrivateNames:
    """Mixed into ``Parameter``: MXNet's private attribute names over hybridgpu's state."""

    _ctx_map = None     # MXNet's context -> index table; hybridgpu indexes by context
    _trainer = None     # the Trainer MXNet remembers; hybridgpu's Trainer keeps its own list

    @property
    def _allow_deferred_init(self):
        return self.allow_deferred_init

    @_allow_deferred_init.setter
    def _allow_deferred_init(self, value):
        self.allow_deferred_init = value

    @property
    def _ctx_list(self):
        return None if self._data is None else list(self._data)

    @_ctx_list.setter
    def _ctx_list(self, value):
        pass  # the contexts are the keys of _data

    def _check_and_get(self, arrays, ctx):
        """The array of ``arrays`` (this parameter's ``_data`` or ``_grad``) on ``ctx``
        (``list``: all of them), with hybridgpu's ``data``/``grad`` rules and errors."""
        from .parameter import Parameter

        getter = Parameter.grad if arrays is self._grad and arrays is not None else Parameter.data
        if ctx is list:
            return [getter(self, c) for c in Parameter.list_ctx(self)]
        return getter(self, ctx)
