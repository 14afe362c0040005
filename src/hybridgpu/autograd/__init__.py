"""``mx.autograd``: record imperative computations and differentiate them (MXNet 1.x's API).

Example:
    >>> import hybridgpu as mx
    >>> x = mx.nd.array([1.0, 2.0, 3.0])
    >>> x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = mx.nd.exp(x).sum()
    >>> y.backward()
    >>> bool((x.grad - mx.nd.exp(x)).abs().sum().item() < 1e-6)
    True
"""

from __future__ import annotations

import contextlib

from .. import modes, tape
from .. import ndarray as nd
from ..base import MXNetError
from ..ndarray import NDArray
from .function import Function

__all__ = ["record", "pause", "train_mode", "predict_mode", "is_recording", "is_training",
           "set_recording", "set_training", "mark_variables", "backward", "grad", "Function",
           "NDArray"]  # MXNet's autograd has no __all__: its star import also gives NDArray

is_recording = modes.is_recording
is_training = modes.is_training
set_recording = modes.set_recording
set_training = modes.set_training


@contextlib.contextmanager
def _scope(recording, training):
    old_rec = modes.set_recording(recording) if recording is not None else None
    old_train = modes.set_training(training) if training is not None else None
    try:
        yield
    finally:
        if recording is not None:
            modes.set_recording(old_rec)
        if training is not None:
            modes.set_training(old_train)


def record(train_mode=True):
    """Scope in which ops on tracked arrays are recorded (and, by default, run in train
    mode)."""
    return _scope(True, train_mode)


def pause(train_mode=False):
    """Scope inside ``record()`` where nothing is recorded."""
    return _scope(False, train_mode)


def train_mode():
    """Scope running ops in train mode (Dropout drops, BatchNorm uses batch statistics)."""
    return _scope(None, True)


def predict_mode():
    """Scope running ops in predict mode."""
    return _scope(None, False)


def mark_variables(variables, gradients, grad_reqs="write"):
    """Track ``variables``; their gradients go into ``gradients`` (arrays of the same shape)."""
    tape.mark_variables(variables, gradients, grad_reqs)


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):
    """Gradients of ``heads`` with respect to every tracked variable, written into their
    gradient buffers (``grad_req`` 'write' replaces, 'add' accumulates)."""
    heads = _as_list(heads)
    head_grads = [None] * len(heads) if head_grads is None else _as_list(head_grads)
    tape.backward(heads, head_grads, nd, retain_graph=retain_graph)


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False,
         train_mode=True):
    """Gradients of ``heads`` with respect to ``variables``, returned (not written to the
    buffers). With ``create_graph=True`` the gradient computation is recorded too, so it can
    be differentiated again."""
    heads, variables = _as_list(heads), _as_list(variables)
    for v in variables:
        if v._ag is None or v._ag.node is not None:
            raise MXNetError("grad: every variable must be marked with attach_grad() (or "
                             "mark_variables) before recording")
    head_grads = [None] * len(heads) if head_grads is None else _as_list(head_grads)
    retain = create_graph if retain_graph is None else retain_graph
    _, grads = tape.run_backward(heads, head_grads, nd, retain_graph=retain,
                                 create_graph=create_graph)
    out = [grads.get(id(v)) for v in variables]
    return [nd.zeros_like(v) if g is None else g for g, v in zip(out, variables)]
