"""hybridgpu: MXNet 1.x Gluon's hybrid programming model on NumPy (cpu) and CuPy (gpu).

Use it in place of MXNet: ``import hybridgpu as mx``.

Example:
    >>> import hybridgpu as mx
    >>> (mx.nd.ones((2, 3), ctx=mx.cpu()) * 2).sum().item()
    12.0
"""

from . import (
    attribute,
    autograd,
    base,
    context,
    gluon,
    initializer,
    lr_scheduler,
    metric,
    name,
    ndarray,
    ops,
    optimizer,
    random,
    symbol,
)
from .attribute import AttrScope
from .base import MXNetError
from .context import Context, cpu, cpu_pinned, current_context, gpu, num_gpus

nd = ndarray
sym = symbol
init = initializer

__version__ = "0.1.0"
__all__ = ["base", "context", "ndarray", "nd", "ops", "random", "symbol", "sym", "name",
           "gluon", "initializer", "init", "autograd", "metric", "optimizer",
           "lr_scheduler",
           "attribute", "AttrScope", "MXNetError", "Context", "cpu", "cpu_pinned", "gpu",
           "current_context", "num_gpus", "__version__"]

# ONNX export, CustomOp, profiling, network pictures (issue 12)
from . import onnx, operator, profiler, viz  # noqa: E402

__all__ += ["onnx", "operator", "profiler", "viz"]
