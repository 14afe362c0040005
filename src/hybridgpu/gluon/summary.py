"""``Block.summary(*inputs)``: MXNet 1.x's table of every layer's output shape and parameter
count, collected with forward hooks during one imperative forward.

One row per call of a block (a block called twice gives two rows), in the order the calls
finish, so a child comes before its parent; ``Sequential``/``HybridSequential`` containers get no
row of their own. ``Param #`` counts the block's own parameters (not
its children's); a parameter met again (shared, or a block called twice) counts again in the
totals and also in "Shared params". Unlike MXNet, a hybridized network is summarized too (it
runs imperatively for the summary and keeps its traces), and the symbolic calls MXNet makes
while it infers deferred shapes do not show up as rows.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu import gluon
    >>> class Scale(gluon.HybridBlock):
    ...     def __init__(self, **kwargs):
    ...         super().__init__(**kwargs)
    ...         self.k = self.params.get("k", shape=(3,), init="ones")
    ...     def hybrid_forward(self, F, x, k):
    ...         return F.broadcast_mul(x, k)
    >>> with mx.name.NameManager():
    ...     net = Scale()
    >>> net.initialize()
    >>> net.summary(mx.nd.ones((2, 3)))
    --------------------------------------------------------------------------------
            Layer (type)                                Output Shape         Param #
    ================================================================================
                   Input                                      (2, 3)               0
                 Scale-1                                      (2, 3)               3
    ================================================================================
    Parameters in forward computation graph, duplicate included
       Total params: 3
       Trainable params: 3
       Non-trainable params: 0
    Shared params in forward computation graph: 0
    Unique parameters in model: 3
    --------------------------------------------------------------------------------
"""

from __future__ import annotations

import math

from ..ndarray import NDArray
from ..symbol import Symbol

__all__ = ["print_summary", "format_shapes"]

_ROW = "{:>20}  {:>42} {:>15}"
_WIDTH = 80


def format_shapes(value, top=True):
    """The ``Output Shape`` text of a forward's inputs or outputs: ``(2, 3)`` for one array,
    shapes joined by ``, `` for a list, nested lists in brackets."""
    if isinstance(value, NDArray):
        return str(value.shape)
    if isinstance(value, (list, tuple)):
        text = ", ".join(format_shapes(item, top=False) for item in value)
        return text if top else f"[{text}]"
    return str(value)


def _has_symbol(value):
    if isinstance(value, Symbol):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_symbol(item) for item in value)
    return False


class _Collector:
    """Forward hooks filling one row per finished call, plus the parameter totals."""

    def __init__(self):
        self.rows = []
        self.total = self.trainable = self.shared = 0
        self._seen = set()

    def hook(self, block, inputs, outputs):
        if _has_symbol(outputs):  # a call made while tracing for shapes, not a layer's run
            return
        count = 0
        for param in block._reg_params.values():
            size = math.prod(param.shape) if param.shape else 0
            count += size
            self.total += size
            if param.grad_req != "null":
                self.trainable += size
            if id(param) in self._seen:
                self.shared += size
            self._seen.add(id(param))
        name = f"{type(block).__name__}-{len(self.rows) + 1}"
        self.rows.append((name, format_shapes(outputs), count))


def _descendants(block):
    out = [block]
    for child in block._children.values():
        out.extend(_descendants(child))
    return out


def _is_container(block):
    from .nn import HybridSequential, Sequential

    return isinstance(block, (Sequential, HybridSequential))


def _run_imperatively(block, inputs, collector):
    blocks = _descendants(block)
    handles = [b.register_forward_hook(collector.hook) for b in blocks if not _is_container(b)]
    active = [(b, b._active) for b in blocks if hasattr(b, "_active")]
    try:
        for b, _ in active:
            b._active = False
        block(*inputs)
    finally:
        for b, flag in active:
            b._active = flag
        for handle in handles:
            handle.detach()


def print_summary(block, inputs):
    """Run ``block(*inputs)`` once imperatively and print MXNet's summary table."""
    collector = _Collector()
    _run_imperatively(block, inputs, collector)
    lines = ["-" * _WIDTH, _ROW.format("Layer (type)", "Output Shape", "Param #"), "=" * _WIDTH,
             _ROW.format("Input", format_shapes(list(inputs)), 0)]
    lines += [_ROW.format(name, shapes, count) for name, shapes, count in collector.rows]
    lines += ["=" * _WIDTH,
              "Parameters in forward computation graph, duplicate included",
              f"   Total params: {collector.total}",
              f"   Trainable params: {collector.trainable}",
              f"   Non-trainable params: {collector.total - collector.trainable}",
              f"Shared params in forward computation graph: {collector.shared}",
              f"Unique parameters in model: {collector.total - collector.shared}",
              "-" * _WIDTH]
    print("\n".join(lines))
