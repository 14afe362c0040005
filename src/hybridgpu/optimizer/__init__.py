"""``mx.optimizer``: weight-update rules (MXNet 1.x's API) and the updater that applies them.

Built in: ``SGD``, ``NAG``, ``Signum``, ``Adam``, ``AdamW`` (not in MXNet 1.9, see its
docstring), ``RMSProp``, ``AdaGrad``, ``AdaDelta`` and ``FTML``, registered under their
lower-case names for ``create``. Every update runs on the parameters' own device (NumPy on cpu,
CuPy on gpu). On gpu the built-in rules of SGD, NAG, Adam, RMSProp and AdaGrad update every
weight of a step in one generated multi-tensor kernel launch per family and dtype
(``optimizer.fused``, through ``Optimizer.step_arrays``); ``gluon.TrainStep`` captures that
launch into the training step's CUDA graph (``fused.CapturedUpdate``).

Example:
    >>> import hybridgpu as mx
    >>> opt = mx.optimizer.create("adam", learning_rate=0.01, wd=1e-4)
    >>> type(opt).__name__, opt.learning_rate
    ('Adam', 0.01)
    >>> "rmsprop" in mx.optimizer.Optimizer.opt_registry
    True
"""

from . import optimizer, states_io
from .adaptive import FTML, AdaDelta, AdaGrad, Adam, AdamW, RMSProp
from .optimizer import Optimizer, create, register
from .sgd import NAG, SGD, Signum
from .updater import Updater, get_updater

__all__ = ["Optimizer", "register", "create", "get_updater", "Updater", "SGD", "NAG", "Signum",
           "Adam", "AdamW", "RMSProp", "AdaGrad", "AdaDelta", "FTML", "optimizer", "states_io"]
