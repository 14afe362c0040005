"""``mx.gluon.model_zoo``: predefined networks with MXNet 1.x's parameter names
(``vision``: image classification). Weights are never downloaded; load a file saved by MXNet
with ``net.load_parameters(path)``.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.gluon.model_zoo import vision
    >>> with mx.name.NameManager():
    ...     net = vision.get_model("alexnet", classes=10)
    >>> net.output.weight.name
    'alexnet0_dense2_weight'
"""

from . import model_store, vision
from .vision import get_model

__all__ = ["vision", "get_model", "model_store"]
