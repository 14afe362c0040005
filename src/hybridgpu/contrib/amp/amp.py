"""AMP's entry points as MXNet 1.x spells them (see the package docstring for what differs).

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.contrib import amp
    >>> net = mx.gluon.nn.Dense(1, in_units=2); net.initialize()
    >>> trainer = mx.gluon.Trainer(net.collect_params(), "sgd")
    >>> amp.init(); amp.init_trainer(trainer)
    >>> with amp.scale_loss(mx.nd.ones((1,)), trainer) as scaled:
    ...     scaled.asnumpy()
    array([65536.], dtype=float32)
"""

from __future__ import annotations

import contextlib

from ...gluon.trainer import Trainer
from .loss_scaler import LossScaler

__all__ = ["init", "init_trainer", "scale_loss", "unscale"]

_amp_initialized = False
_amp_loss_scale_initialized = False
_loss_scaler = None
_target_dtype = None


def init(target_dtype="float16", target_precision_ops=None, conditional_fp32_ops=None,
         fp32_ops=None):
    """Turn AMP on (once): records ``target_dtype`` and makes the first loss scaler. Ops keep
    their dtype in hybridgpu (MXNet rewrites its float16 op lists to cast).

    Example:
        >>> init("bfloat16") is None
        True
    """
    global _amp_initialized, _loss_scaler, _target_dtype
    if target_dtype not in ("float16", "bfloat16"):
        raise ValueError(f"amp.init: target_dtype must be 'float16' or 'bfloat16', got "
                         f"{target_dtype!r}")
    if not _amp_initialized:
        _amp_initialized = True
        _target_dtype = target_dtype
        _loss_scaler = LossScaler()


def _check_trainer(optimizer_or_trainer, what):
    if not isinstance(optimizer_or_trainer, Trainer):
        raise TypeError(f"amp.{what}: AMP works with a gluon.Trainer, got "
                        f"{type(optimizer_or_trainer).__name__}")


def init_trainer(optimizer_or_trainer):
    """Give a Trainer a loss scaler (the first Trainer gets ``init``'s).

    Example:
        >>> init_trainer(object())
        Traceback (most recent call last):
        ...
        TypeError: amp.init_trainer: AMP works with a gluon.Trainer, got object
    """
    global _amp_loss_scale_initialized
    _check_trainer(optimizer_or_trainer, "init_trainer")
    if not _amp_initialized:
        raise RuntimeError("AMP not initialized, did you forget to call amp.init()?")
    if _amp_loss_scale_initialized:
        scaler = LossScaler()
    else:
        _amp_loss_scale_initialized, scaler = True, _loss_scaler
    optimizer_or_trainer._amp_loss_scaler = scaler
    optimizer_or_trainer._amp_original_scale = optimizer_or_trainer._scale


@contextlib.contextmanager
def scale_loss(loss, optimizer_or_trainer):
    """Yields the loss (or list of losses) times the loss scale, and sets the Trainer's
    gradient scale to undo it."""
    scaler = getattr(optimizer_or_trainer, "_amp_loss_scaler", None)
    if scaler is None:
        raise RuntimeError("Loss scaler is not initialized, did you forget to call "
                           "amp.init_trainer()?")
    optimizer_or_trainer._scale = (optimizer_or_trainer._amp_original_scale
                                   / scaler.loss_scale)
    if isinstance(loss, (list, tuple)):
        yield [part * scaler.loss_scale for part in loss]
    else:
        yield scaler.loss_scale * loss


def unscale(optimizer_or_trainer):
    """Divide the Trainer's gradients by the loss scale now (before clipping them), and set
    its gradient scale to 1."""
    _check_trainer(optimizer_or_trainer, "unscale")
    for param in optimizer_or_trainer._params:
        if param.grad_req != "null" and param._grad is not None:
            for grad in param.list_grad():
                grad[:] *= optimizer_or_trainer._scale
    optimizer_or_trainer._scale = 1.0
