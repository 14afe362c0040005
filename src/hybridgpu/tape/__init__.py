"""Autograd's recording state, below ``ndarray``: the tape, its one node constructor
(``record``) and reverse mode (``backward``, ``run_backward``). The recording and train-mode
flags are ``hybridgpu.modes``.

``NDArray.attach_grad`` and ``NDArray.backward`` call down into this package; ``mx.autograd``
is the user-facing API (``record()``, ``pause()``, ``grad``, ``Function``) on top of it.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu import tape
    >>> x = mx.nd.array([3.0]); x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = x * x
    >>> tape.backward([y], [None], mx.nd)
    >>> x.grad.asnumpy().tolist()
    [6.0]
"""

from .node import AGInfo, TapeNode, mark_variables, record, tracked
from .reverse import backward, run_backward

__all__ = ["AGInfo", "TapeNode", "record", "tracked", "mark_variables", "backward",
           "run_backward"]
