"""``mx.npx``'s operator functions: one thin function per registry op (``npx.fully_connected``
is ``FullyConnected``, ``npx.batch_norm`` is ``BatchNorm``, ...), binding arguments as the
``nd`` function of that op does and returning ``mx.np.ndarray`` (or a Symbol while
hybridized).

Example:
    >>> import hybridgpu as mx
    >>> x = mx.np.ones((2, 3))
    >>> fully_connected(x, mx.np.ones((4, 3)), mx.np.zeros(4), num_hidden=4)
    array([[3., 3., 3., 3.],
           [3., 3., 3., 3.]])
"""

from __future__ import annotations

from .. import ops
from ..base import MXNetError
from ..numpy import _dispatch
from ..numpy.multiarray import as_np
from ..ops.calling import bind_arguments, signature

# npx name -> registry op
OPS = {
    "relu": "relu", "sigmoid": "sigmoid", "softmax": "softmax", "log_softmax": "log_softmax",
    "activation": "Activation", "batch_norm": "BatchNorm", "convolution": "Convolution",
    "deconvolution": "Deconvolution", "fully_connected": "FullyConnected",
    "pooling": "Pooling", "dropout": "Dropout", "embedding": "Embedding",
    "one_hot": "one_hot", "pick": "pick", "topk": "topk", "sequence_mask": "SequenceMask",
    "batch_dot": "batch_dot", "gamma": "gamma", "gammaln": "gammaln", "erf": "erf",
    "erfinv": "erfinv", "layer_norm": "LayerNorm", "leaky_relu": "LeakyReLU",
    "batch_flatten": "Flatten", "arange_like": "_contrib_arange_like",
    "reshape_like": "reshape_like", "smooth_l1": "smooth_l1", "slice": "slice",
    "gather_nd": "gather_nd", "shape_array": "shape_array", "cast": "cast", "rnn": "RNN",
    "sequence_last": "SequenceLast", "sequence_reverse": "SequenceReverse",
    "instance_norm": "InstanceNorm", "group_norm": "GroupNorm", "softmin": "softmin",
}

__all__ = [*OPS, "nonzero"]


def make_function(npx_name, op_name):
    """``npx.<npx_name>``: registry op ``op_name`` on ``mx.np`` arrays."""
    op = ops.get(op_name)

    def function(*args, **kwargs):
        kwargs.pop("out", None)
        kwargs.pop("name", None)
        inputs, given = bind_arguments(op, args, kwargs)
        values = list(inputs) if op.variadic else [
            inputs.get(n) for n in op.input_names(op.parse_attrs(given))]
        if _dispatch.is_symbolic(values):
            return _dispatch.call(op_name, values, given)
        for name, value in zip(op.input_names(op.parse_attrs(given)), values):
            if value is None:
                raise MXNetError(f"npx.{npx_name}: input {name!r} is missing")
        return _dispatch.call(op_name, [as_np(v) for v in values], given)

    function.__name__ = function.__qualname__ = npx_name
    function.__doc__ = f"``npx.{npx_name}``: the ``{op_name}`` op.\n\n" + op.docstring()
    function.__signature__ = signature(op, ["out", "name"])
    function.__module__ = "hybridgpu.numpy_extension"
    return function


for _npx_name, _op_name in OPS.items():
    globals()[_npx_name] = make_function(_npx_name, _op_name)


def nonzero(a):
    """Indices of the nonzero elements, one row per element (shape ``(n, a.ndim)``), int64."""
    import numpy as onp

    from ..numpy.multiarray import from_host

    a = as_np(a)
    return from_host(onp.argwhere(a.asnumpy()).astype(onp.int64), a.ctx)
