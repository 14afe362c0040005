"""What every model-zoo family shares: where MXNet keeps downloaded weights, and the error
``pretrained=True`` raises (hybridgpu never downloads anything).

Example:
    >>> try:
    ...     check_pretrained("resnet18_v1", True, root="/nonexistent")
    ... except MXNetError as err:
    ...     print(str(err).split(" (")[0])
    resnet18_v1(pretrained=True): hybridgpu does not download pretrained weights
"""

from __future__ import annotations

import glob
import os

from ....base import MXNetError

__all__ = ["default_root", "check_pretrained"]


def default_root():
    """MXNet's model cache: ``$MXNET_HOME/models``, by default ``~/.mxnet/models``."""
    home = os.environ.get("MXNET_HOME", os.path.join("~", ".mxnet"))
    return os.path.join(os.path.expanduser(home), "models")


def check_pretrained(name, pretrained, root=None):
    """Raise a clear error when ``pretrained`` is true: say how to load a local file of
    weights saved by MXNet (and name the ones found in ``root``, MXNet's download cache)."""
    if not pretrained:
        return
    root = os.path.expanduser(root or default_root())
    found = sorted(glob.glob(os.path.join(glob.escape(root), f"{name}-*.params")))
    where = (f"Found {found[0]!r} in {root!r}; load it with:\n"
             f"    net.load_parameters({found[0]!r})" if found else
             f"No file {name}-<hash>.params was found in {root!r} (MXNet's download cache). "
             "Copy one there from a machine where MXNet downloaded it, or point to it:\n"
             f"    net.load_parameters('/path/to/{name}-<hash>.params')")
    raise MXNetError(
        f"{name}(pretrained=True): hybridgpu does not download pretrained weights (it never "
        "uses the network). Build the model without them and load a parameter file saved by "
        f"MXNet's save_parameters (or downloaded by mxnet.gluon.model_zoo):\n"
        f"    net = get_model({name!r})\n{where}")
