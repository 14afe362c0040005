"""``autograd.Function``: an operation with a hand-written backward (MXNet 1.x's API).

Subclass it and define ``forward(self, *inputs)`` and ``backward(self, *output_grads)`` on
NDArrays; ``self.save_for_backward(*arrays)`` keeps what backward needs (``self.saved_tensors``).

Example:
    >>> import hybridgpu as mx
    >>> class Square(Function):
    ...     def forward(self, x):
    ...         self.save_for_backward(x)
    ...         return x * x
    ...     def backward(self, dy):
    ...         (x,) = self.saved_tensors
    ...         return 2 * x * dy
    >>> x = mx.nd.array([3.0]); x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = Square()(x)
    >>> y.backward()
    >>> x.grad.asnumpy().tolist()
    [6.0]
"""

from __future__ import annotations

from .. import modes, tape
from ..base import MXNetError

__all__ = ["Function"]


class _FunctionOp:
    """Tape entry of a Function call: its backward is the user's ``backward``."""

    def __init__(self, function):
        self.function = function
        self.name = type(function).__name__

    def grad(self, F, ins, outs, gouts):
        with modes.recording(False):
            grads = self.function.backward(*gouts)
        grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
        if len(grads) != len(ins):
            raise MXNetError(f"{self.name}.backward returned {len(grads)} gradients for "
                             f"{len(ins)} inputs")
        return grads


class Function:
    """A differentiable operation with a custom backward; call an instance like a function."""

    def __init__(self):
        self.saved_tensors = ()

    def save_for_backward(self, *args):
        """Keep arrays for ``backward``."""
        self.saved_tensors = args

    def forward(self, *inputs):
        raise NotImplementedError

    def backward(self, *output_grads):
        raise NotImplementedError

    def __call__(self, *inputs):
        with modes.recording(False):
            outputs = self.forward(*inputs)
        outs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        tape.record(_FunctionOp(self), {}, inputs, outs)
        return outputs
