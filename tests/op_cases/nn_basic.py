"""Cases for ``ops/nn_basic.py``: FullyConnected, Activation and LeakyReLU (every act_type;
rrelu outside training only, where it is a leaky ReLU with the mean slope)."""

from __future__ import annotations

import math

import numpy as np

from op_harness import OpCase

SELU_LAMBDA = 1.0507009873554805
SELU_ALPHA = 1.6732632423543772


def fc_ref(x, w, b=None, *, num_hidden, no_bias=False, flatten=True):
    """x @ w.T + b over the flattened features (or the last axis), in float64."""
    x2 = x.reshape(x.shape[0], -1) if flatten else x
    out = np.einsum("...i,hi->...h", x2.astype(np.float64), w.astype(np.float64))
    if b is not None:
        out = out + b
    return out.astype(x.dtype)


def _erf(z):
    return np.vectorize(math.erf, otypes=[np.float64])(z)


def _elementwise(fn):
    """Reference from a float64 function of one array, cast back to the input dtype."""
    return lambda x, **_: fn(x.astype(np.float64)).astype(x.dtype)


_ACT = {
    "relu": lambda x: np.where(x > 0, x, 0.0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "softrelu": lambda x: np.log1p(np.exp(x)),
    "softsign": lambda x: x / (1 + np.abs(x)),
}


def leaky_ref(x, gamma=None, *, act_type="leaky", slope=0.25, lower_bound=0.125,
              upper_bound=0.334, **_):
    """Each act_type from its formula, in float64."""
    v = x.astype(np.float64)
    if act_type == "rrelu":
        act_type, slope = "leaky", (lower_bound + upper_bound) / 2
    if act_type == "leaky":
        out = np.where(v > 0, v, slope * v)
    elif act_type == "elu":
        out = np.where(v > 0, v, slope * (np.exp(v) - 1))
    elif act_type == "selu":
        out = SELU_LAMBDA * np.where(v > 0, v, SELU_ALPHA * (np.exp(v) - 1))
    elif act_type == "gelu":
        out = 0.5 * v * (1 + _erf(v / math.sqrt(2)))
    else:  # prelu: gamma per channel (axis 1; axis 0 of 1-D data)
        shape = [1] * v.ndim
        shape[1 if v.ndim > 1 else 0] = -1
        out = np.where(v > 0, v, v * gamma.reshape(shape))
    return out.astype(x.dtype)


CASES = [
    OpCase("FullyConnected", shapes=[(3, 5), (4, 5), (4,)], attrs={"num_hidden": 4},
           ref=fc_ref, id="2d"),
    OpCase("FullyConnected", shapes=[(2, 3, 4), (5, 12), (5,)], attrs={"num_hidden": 5},
           ref=fc_ref, id="flatten-3d"),
    OpCase("FullyConnected", shapes=[(2, 3, 4), (5, 4), (5,)],
           attrs={"num_hidden": 5, "flatten": False}, ref=fc_ref, id="noflatten-3d"),
    OpCase("FullyConnected", shapes=[(3, 5), (2, 5)], attrs={"num_hidden": 2, "no_bias": True},
           ref=fc_ref, id="nobias"),
    OpCase("FullyConnected", shapes=[(2, 2, 2, 3), (4, 3)],
           attrs={"num_hidden": 4, "no_bias": True, "flatten": False}, ref=fc_ref,
           id="noflatten-4d-nobias"),
    OpCase("FullyConnected", shapes=[(5,), (3, 5), (3,)],
           attrs={"num_hidden": 3, "flatten": False}, ref=fc_ref, id="noflatten-1d"),
    OpCase("FullyConnected", shapes=[(5,), (3, 1), (3,)], attrs={"num_hidden": 3},
           ref=fc_ref, id="flatten-1d"),
    *[OpCase("Activation", shapes=[(3, 4)], attrs={"act_type": name},
             ref=_elementwise(fn), id=name) for name, fn in _ACT.items()],
    OpCase("Activation", shapes=[(2, 3, 2)], attrs={"act_type": "softrelu"}, domain=(-30, 30),
           ref=_elementwise(_ACT["softrelu"]), id="softrelu-wide", grad=False),
    OpCase("LeakyReLU", shapes=[(3, 4)], ref=leaky_ref, id="default"),
    OpCase("LeakyReLU", shapes=[(3, 4)], attrs={"act_type": "leaky", "slope": 0.1},
           ref=leaky_ref, id="leaky"),
    OpCase("LeakyReLU", shapes=[(3, 4)], attrs={"act_type": "elu", "slope": 0.5},
           ref=leaky_ref, id="elu"),
    OpCase("LeakyReLU", shapes=[(3, 4)], attrs={"act_type": "selu"}, ref=leaky_ref, id="selu"),
    OpCase("LeakyReLU", shapes=[(3, 4)], attrs={"act_type": "gelu"}, ref=leaky_ref, id="gelu"),
    OpCase("LeakyReLU", shapes=[(3, 4)], attrs={"act_type": "rrelu"}, ref=leaky_ref,
           id="rrelu-inference"),
    OpCase("LeakyReLU", shapes=[(3, 4)], ref=leaky_ref, id="rrelu-bounds",
           attrs={"act_type": "rrelu", "lower_bound": 0.1, "upper_bound": 0.5}),
    OpCase("LeakyReLU", shapes=[(2, 3, 2, 2), (3,)], attrs={"act_type": "prelu"},
           ref=leaky_ref, id="prelu-4d"),
    OpCase("LeakyReLU", shapes=[(4, 3), (3,)], attrs={"act_type": "prelu"}, ref=leaky_ref,
           id="prelu-2d"),
    OpCase("LeakyReLU", shapes=[(2, 3, 4), (1,)], attrs={"act_type": "prelu"}, ref=leaky_ref,
           id="prelu-shared-gamma"),
    OpCase("LeakyReLU", shapes=[(5,), (5,)], attrs={"act_type": "prelu"}, ref=leaky_ref,
           id="prelu-1d"),
]
