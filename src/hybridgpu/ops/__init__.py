"""The op registry: one ``OpDef`` per operator (see ``opdef.py``). Imports nothing else from
hybridgpu but ``base``.

Importing this package registers every op module below, one module per op family.

Example:
    >>> from hybridgpu import ops
    >>> ops.get("_Plus") is ops.get("elemwise_add")
    True
"""

from . import (  # noqa: F401  (each module registers its ops)
    activations,
    amp_cast,
    assign,
    contrib_attention,
    contrib_box,
    contrib_nn,
    contrib_optim,
    contrib_roi,
    conv,
    creation,
    custom,
    elemwise_binary,
    elemwise_unary,
    histogram,
    image,
    image_color,
    index,
    join,
    linalg,
    linalg_extra,
    loss,
    nn_basic,
    nn_extra,
    nn_misc,
    norm,
    np_ops,
    np_reshape,
    pool,
    random,
    random_dists,
    reduce,
    rnn,
    shape,
    sort,
)
from .opdef import OpDef, all_ops, exists, get, register

__all__ = ["OpDef", "all_ops", "exists", "get", "register"]
