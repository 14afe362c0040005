"""``mx.onnx``: export a Symbol and its parameters as an ONNX model (MXNet 1.9's
``mx.onnx.export_model``; needs the ``onnx`` package).

Example:
    >>> import os, tempfile
    >>> import numpy as np
    >>> import hybridgpu as mx
    >>> net = mx.gluon.nn.Dense(2, in_units=3)
    >>> net.initialize()
    >>> net.hybridize()
    >>> y = net(mx.nd.ones((1, 3)))
    >>> prefix = os.path.join(tempfile.mkdtemp(), "dense")
    >>> files = net.export(prefix)
    >>> path = mx.onnx.export_model(prefix + "-symbol.json", prefix + "-0000.params",
    ...                             [(1, 3)], np.float32, prefix + ".onnx")
    >>> os.path.getsize(path) > 0
    True
"""

from .converters import CONVERTERS
from .export import export_model

__all__ = ["export_model", "CONVERTERS"]
