"""``mx.contrib.amp``: MXNet's automatic mixed precision entry points (``init``,
``init_trainer``, ``scale_loss``, ``unscale``) and its dynamic ``LossScaler``.

hybridgpu keeps the loss-scaling part exactly: ``scale_loss`` multiplies the loss by the
scaler's factor and the Trainer divides the gradients by it. ``init`` records the target dtype
but does not rewrite ops to float16 (MXNet casts its float16 op lists); models stay in their own
dtype (cast a block with ``block.cast('float16')`` for half precision).

Example:
    >>> from hybridgpu.contrib import amp
    >>> amp.init(); amp.amp._amp_initialized
    True
"""

from . import amp, loss_scaler
from .amp import init, init_trainer, scale_loss, unscale
from .loss_scaler import LossScaler

__all__ = ["amp", "loss_scaler", "init", "init_trainer", "scale_loss", "unscale",
           "LossScaler"]
