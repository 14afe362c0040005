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
    executor,  # noqa: F401  (registers the backends with the compiler)
    gluon,
    image,
    initializer,
    lr_scheduler,
    metric,
    name,
    ndarray,
    ops,
    optimizer,
    random,
    recordio,
    symbol,
)
from .attribute import AttrScope
from .base import MXNetError
from .context import Context, cpu, cpu_pinned, current_context, gpu, num_gpus
from .util import (
    is_np_array,
    is_np_shape,
    np_array,
    np_shape,
    set_np_shape,
    use_np,
    use_np_array,
    use_np_shape,
)

nd = ndarray
sym = symbol
init = initializer

__version__ = "0.1.0"


def __getattr__(name):
    """MXNet's other names: aliases (``mx.img``, ``mx.rnd``) resolve; a name MXNet 1.9.1 has
    and hybridgpu does not raises an AttributeError saying why (``mxnet_surface``)."""
    if name.startswith("__"):
        raise AttributeError(name)
    from .mxnet_surface import SURFACE, missing_attribute

    status, target = SURFACE.get(name, (None, None))
    if status == "alias":
        return globals()[target]
    if status in ("supported", "differs"):  # a submodule not imported yet
        import importlib

        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ImportError:
            pass
    raise missing_attribute(name)


__all__ = ["base", "context", "ndarray", "nd", "ops", "random", "symbol", "sym", "name",
           "gluon", "initializer", "init", "autograd", "metric", "optimizer",
           "lr_scheduler", "recordio", "image",
           "attribute", "AttrScope", "MXNetError", "Context", "cpu", "cpu_pinned", "gpu",
           "current_context", "num_gpus", "__version__"]
# MXNet's NumPy-mode switches (mx.util; flags only, see docs/coming_from_mxnet.md)
__all__ += ["util", "is_np_array", "is_np_shape", "np_array", "np_shape", "set_np_shape",
            "use_np", "use_np_array", "use_np_shape"]

# MXNet 1.x's training surface beyond Gluon (issue 12): data iterators, Module, checkpoints,
# callbacks, kvstore, test helpers.
from . import callback, io, kvstore, model, module, test_utils  # noqa: E402

kv = kvstore
mod = module
__all__ += ["io", "callback", "model", "kvstore", "kv", "module", "mod", "test_utils"]
# ONNX export, CustomOp, profiling, network pictures (issue 12)
from . import onnx, operator, profiler, viz  # noqa: E402
# MXNet 1.9's NumPy interface: mx.np arrays and mx.npx extensions (issue 23)
from . import numpy, numpy_extension  # noqa: E402

np = numpy
npx = numpy_extension
__all__ += ["np", "npx", "numpy", "numpy_extension"]

visualization = viz
__all__ += ["onnx", "operator", "profiler", "viz", "visualization"]
# `import mxnet` as hybridgpu, for third-party packages (issue 21): hybridgpu.install_mxnet_alias()
from .mxnet_alias import install as install_mxnet_alias  # noqa: E402

__all__ += ["install_mxnet_alias"]
