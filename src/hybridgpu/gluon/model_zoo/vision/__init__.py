"""``mx.gluon.model_zoo.vision``: MXNet 1.x's image classification models (ResNet V1/V2,
MobileNet V1/V2, VGG, AlexNet, SqueezeNet, DenseNet, Inception V3) with MXNet's block and
parameter names, so parameter files saved by MXNet (``save_parameters``, or the model zoo's
downloads) load.

Nothing is ever downloaded: ``pretrained=True`` raises an error saying how to load a local
file (``net.load_parameters(path)``).

Example:
    >>> import hybridgpu as mx
    >>> net = get_model("resnet18_v1", classes=10)
    >>> net.initialize()
    >>> net(mx.nd.ones((1, 3, 32, 32))).shape
    (1, 10)
    >>> with mx.name.NameManager():  # fresh name counters: the first model is ...0
    ...     [type(get_model(n)).__name__ for n in ("mobilenet1.0", "mobilenet1_0")]
    ['MobileNet', 'MobileNet']
"""

from __future__ import annotations

import difflib

from .alexnet import *  # noqa: F403
from .alexnet import __all__ as _alexnet_all
from .densenet import *  # noqa: F403
from .densenet import __all__ as _densenet_all
from .inception import *  # noqa: F403
from .inception import __all__ as _inception_all
from .mobilenet import *  # noqa: F403
from .mobilenet import __all__ as _mobilenet_all
from .resnet import *  # noqa: F403
from .resnet import __all__ as _resnet_all
from .squeezenet import *  # noqa: F403
from .squeezenet import __all__ as _squeezenet_all
from .vgg import *  # noqa: F403
from .vgg import __all__ as _vgg_all

__all__ = ["get_model", "list_models", *_resnet_all, *_mobilenet_all, *_vgg_all,
           *_alexnet_all, *_squeezenet_all, *_densenet_all, *_inception_all]

#: ``get_model`` names (MXNet's spelling) -> constructor.
_models = {
    "resnet18_v1": resnet18_v1, "resnet34_v1": resnet34_v1,  # noqa: F405
    "resnet50_v1": resnet50_v1, "resnet101_v1": resnet101_v1,  # noqa: F405
    "resnet152_v1": resnet152_v1, "resnet18_v2": resnet18_v2,  # noqa: F405
    "resnet34_v2": resnet34_v2, "resnet50_v2": resnet50_v2,  # noqa: F405
    "resnet101_v2": resnet101_v2, "resnet152_v2": resnet152_v2,  # noqa: F405
    "vgg11": vgg11, "vgg13": vgg13, "vgg16": vgg16, "vgg19": vgg19,  # noqa: F405
    "vgg11_bn": vgg11_bn, "vgg13_bn": vgg13_bn,  # noqa: F405
    "vgg16_bn": vgg16_bn, "vgg19_bn": vgg19_bn,  # noqa: F405
    "alexnet": alexnet,  # noqa: F405
    "densenet121": densenet121, "densenet161": densenet161,  # noqa: F405
    "densenet169": densenet169, "densenet201": densenet201,  # noqa: F405
    "inceptionv3": inception_v3,  # noqa: F405
    "squeezenet1.0": squeezenet1_0, "squeezenet1.1": squeezenet1_1,  # noqa: F405
    "mobilenet1.0": mobilenet1_0, "mobilenet0.75": mobilenet0_75,  # noqa: F405
    "mobilenet0.5": mobilenet0_5, "mobilenet0.25": mobilenet0_25,  # noqa: F405
    "mobilenetv2_1.0": mobilenet_v2_1_0, "mobilenetv2_0.75": mobilenet_v2_0_75,  # noqa: F405
    "mobilenetv2_0.5": mobilenet_v2_0_5, "mobilenetv2_0.25": mobilenet_v2_0_25,  # noqa: F405
}

#: The module functions' names accepted too (``mobilenet1_0`` for ``mobilenet1.0``).
_aliases = {fn.__name__: name for name, fn in _models.items() if fn.__name__ != name}


def list_models():
    """The names ``get_model`` accepts, in MXNet's spelling, sorted."""
    return sorted(_models)


def get_model(name, **kwargs):
    """The model called ``name`` (MXNet's names: ``resnet18_v1``, ``mobilenet1.0``,
    ``mobilenetv2_1.0``, ``squeezenet1.0``, ...; the module functions' spellings such as
    ``mobilenet1_0`` work too); keywords go to the model (``classes``, ``prefix``, ...).

    ``pretrained=True`` raises an error: hybridgpu never downloads. Load weights saved by
    MXNet with ``net.load_parameters(path)`` instead.
    """
    key = name.lower()
    key = _aliases.get(key, key)
    if key not in _models:
        close = difflib.get_close_matches(key, list(_models) + list(_aliases), n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        options = "\n\t".join(list_models())
        raise ValueError(f"Model {name} is not supported.{hint} Available options are\n\t"
                         f"{options}")
    return _models[key](**kwargs)
