"""MXNet 1.x's basic Gluon layers: containers (``Sequential``, ``HybridSequential``,
``Concatenate``), ``Dense``, ``Dropout``, the normalizations (``BatchNorm``, ``LayerNorm``,
``InstanceNorm``, ``GroupNorm``), ``Embedding``, ``Flatten``, ``Lambda``/``HybridLambda`` and
``Identity``, with MXNet's parameter names, ``repr`` text and graph node names, so exported
files and saved weights match MXNet's.

``Identity``, ``Concurrent`` and ``HybridConcurrent`` live in ``gluon.contrib.nn`` in MXNet
1.9; MXNet 2.0 moved them to ``gluon.nn`` and renamed the last two ``Concatenate`` and
``HybridConcatenate``. All five names are here.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.gluon import nn
    >>> with mx.name.NameManager():
    ...     net = nn.HybridSequential()
    ...     with net.name_scope():
    ...         net.add(nn.Dense(3, activation="relu"), nn.Dense(2))
    >>> net.initialize()
    >>> net(mx.nd.ones((4, 5))).shape
    (4, 2)
    >>> print(net)
    HybridSequential(
      (0): Dense(5 -> 3, Activation(relu))
      (1): Dense(3 -> 2, linear)
    )
    >>> list(net.collect_params())[:2]
    ['hybridsequential0_dense0_weight', 'hybridsequential0_dense0_bias']
"""

from __future__ import annotations

import warnings

import numpy as np

from ... import ndarray as nd
from ... import symbol as sym
from ...base import MXNetError
from ..block import Block, _indent
from ..hybrid_block import HybridBlock
from .activations import Activation

__all__ = ["Sequential", "HybridSequential", "Dense", "Dropout", "BatchNorm", "LayerNorm",
           "InstanceNorm", "GroupNorm", "Embedding", "Flatten", "Lambda", "HybridLambda",
           "Identity", "Concatenate", "HybridConcatenate", "Concurrent", "HybridConcurrent"]


# -- shared helpers ---------------------------------------------------------------------------

def _shape_of(value):
    """``value.shape`` as text, or ``'unknown'`` for a Symbol whose shape is not known."""
    try:
        return str(tuple(value.shape))
    except MXNetError:
        return "unknown"


def _run_op(block, op, data, *args, shown=None, **kwargs):
    """``op(data, *args, **kwargs)``; an MXNetError from it (the op's shape check, run
    imperatively) is re-raised naming the layer, the input's shape and
    ``block._shape_hint()``: what the layer expects and how to fix it; ``shown`` is the
    layer's input when ``data`` is a reshaped view of it. (Hybridized, the same
    conflict surfaces in the traced graph's shape inference; HybridBlock names the layer that
    owns the failing node there, with the same hint.)"""
    try:
        return op(data, *args, **kwargs)
    except MXNetError as err:
        if "dtype" in str(err):  # not a shape problem: say what it is
            raise MXNetError(f"{type(block).__name__} {block.name!r} cannot take an input of "
                             f"dtype {getattr(data, 'dtype', '?').__name__}: its parameters "
                             f"have another dtype; cast the input or the block ({err})") from err
        raise MXNetError(f"{type(block).__name__} {block.name!r} cannot take an input of shape "
                         f"{_shape_of(data if shown is None else shown)}: "
                         f"{block._shape_hint()}. ({err})") from err


def _children_repr(block):
    body = "\n".join(f"  ({key}): {_indent(repr(child), 2)}"
                     for key, child in block._children.items())
    return f"{type(block).__name__}(\n{body}\n)"


def _kwargs_repr(kwargs):
    return ", ".join(f"{key}={value!r}" for key, value in kwargs.items())


def _chain(children, x, args):
    """Feed ``x`` through ``children`` in order; a child returning a tuple/list passes its
    first element on as ``x`` and the rest as extra arguments (MXNet's rule)."""
    for child in children:
        x = child(x, *args)
        args = []
        if isinstance(x, (tuple, list)):
            args, x = x[1:], x[0]
    return tuple([x, *args]) if args else x


# -- containers -------------------------------------------------------------------------------

class _SequentialMixin:
    """``add``, indexing, ``len`` and ``repr`` shared by the sequential containers."""

    def add(self, *blocks):
        """Append ``blocks`` (in order) as children."""
        for block in blocks:
            self.register_child(block)

    def __repr__(self):
        return _children_repr(self)

    def __getitem__(self, key):
        layers = list(self._children.values())[key]
        if not isinstance(layers, list):
            return layers
        net = type(self)(prefix=self._prefix)
        with net.name_scope():
            net.add(*layers)
        return net

    def __len__(self):
        return len(self._children)


class Sequential(_SequentialMixin, Block):
    """Blocks run one after the other (any Block; see HybridSequential to hybridize).

    Example:
        >>> net = Sequential()
        >>> net.add(Lambda("tanh"), Lambda(lambda x: x * 2))
        >>> net(nd.zeros((1,))).asnumpy(), len(net)
        (array([0.], dtype=float32), 2)
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def forward(self, x, *args):
        return _chain(self._children.values(), x, args)

    def hybridize(self, active=True, **kwargs):
        if self._children and all(isinstance(c, HybridBlock) for c in self._children.values()):
            warnings.warn(f"All children of this Sequential layer {self.prefix!r} are "
                          "HybridBlocks. Consider using HybridSequential for the best "
                          "performance.", stacklevel=2)
        super().hybridize(active, **kwargs)


class HybridSequential(_SequentialMixin, HybridBlock):
    """HybridBlocks run one after the other; hybridizes as one graph.

    Example:
        >>> net = HybridSequential()
        >>> net.add(HybridLambda("relu"), HybridLambda(lambda F, x: x + 1))
        >>> net(nd.array([-1, 2])).asnumpy()
        array([1., 3.], dtype=float32)
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, x, *args):
        return _chain(self._children.values(), x, args)


class HybridConcatenate(HybridSequential):
    """Run every child on the same input and concatenate their outputs along ``axis``
    (MXNet 1.9: ``gluon.contrib.nn.HybridConcurrent``; MXNet 2.0: ``nn.HybridConcatenate``).

    Example:
        >>> net = HybridConcatenate(axis=1)
        >>> net.add(Identity(), HybridLambda(lambda F, x: x * 2))
        >>> net(nd.ones((1, 2))).asnumpy()
        array([[1., 1., 2., 2.]], dtype=float32)
    """

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F, x):
        out = [child(x) for child in self._children.values()]
        return F.concat(*out, dim=self.axis)


class Concatenate(Sequential):
    """``HybridConcatenate`` for any Blocks (MXNet 1.9: ``gluon.contrib.nn.Concurrent``).

    Example:
        >>> net = Concatenate(axis=0)
        >>> net.add(Lambda("sin"), Lambda("cos"))
        >>> net(nd.zeros((1,))).asnumpy()
        array([0., 1.], dtype=float32)
    """

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x):
        return nd.concat(*[child(x) for child in self._children.values()], dim=self.axis)


class HybridConcurrent(HybridConcatenate):
    """MXNet 1.9's name (``gluon.contrib.nn``) of ``HybridConcatenate``."""


class Concurrent(Concatenate):
    """MXNet 1.9's name (``gluon.contrib.nn``) of ``Concatenate``."""


class Identity(HybridBlock):
    """Returns its input unchanged (MXNet 1.9: ``gluon.contrib.nn.Identity``).

    Example:
        >>> Identity()(nd.array([1, 2])).asnumpy()
        array([1., 2.], dtype=float32)
    """

    def hybrid_forward(self, F, x):
        return x


# -- Dense, Dropout, Embedding, Flatten -------------------------------------------------------

class Dense(HybridBlock):
    """Fully connected layer: ``activation(dot(x, weight.T) + bias)``; weight shape
    ``(units, in_units)``; ``in_units=0`` infers it on the first forward. ``flatten=True``
    flattens all but the first axis of the input; ``False`` applies to the last axis only.

    Example:
        >>> layer = Dense(4, in_units=3, prefix="fc_")
        >>> layer, layer.weight.name, layer.weight.shape
        (Dense(3 -> 4, linear), 'fc_weight', (4, 3))
    """

    def __init__(self, units, activation=None, use_bias=True, flatten=True, dtype="float32",
                 weight_initializer=None, bias_initializer="zeros", in_units=0, **kwargs):
        super().__init__(**kwargs)
        self._flatten = flatten
        with self.name_scope():
            self._units = units
            self._in_units = in_units
            self.weight = self.params.get("weight", shape=(units, in_units),
                                          init=weight_initializer, dtype=dtype,
                                          allow_deferred_init=True)
            self.bias = self.params.get("bias", shape=(units,), init=bias_initializer,
                                        dtype=dtype, allow_deferred_init=True) if use_bias else None
            self.act = Activation(activation, prefix=activation + "_") if activation else None

    def hybrid_forward(self, F, x, weight, bias=None):
        out = _run_op(self, F.FullyConnected, x, weight, bias,
                      no_bias=bias is None, num_hidden=self._units, flatten=self._flatten,
                      name="fwd")
        return self.act(out) if self.act is not None else out

    def _shape_hint(self):
        in_units = self.weight.shape[1]
        where = "all axes but the first together" if self._flatten else "the last axis"
        return (f"it expects {in_units} input features ({where}; weight shape "
                f"{self.weight.shape}); pass inputs with {in_units} features, or build the "
                "layer with in_units=0 to take them from the first batch")

    def __repr__(self):
        units, in_units = self.weight.shape
        act = self.act if self.act is not None else "linear"
        return f"{type(self).__name__}({in_units or None} -> {units}, {act})"


class Dropout(HybridBlock):
    """Sets a fraction ``rate`` of the input to 0 in training (scaling the rest by
    ``1/(1-rate)``); the identity at inference. ``axes`` shares one mask along those axes.

    Example:
        >>> Dropout(0.5)(nd.ones((2,))).asnumpy()  # not training: unchanged
        array([1., 1.], dtype=float32)
    """

    def __init__(self, rate, axes=(), **kwargs):
        super().__init__(**kwargs)
        if not 0 <= rate <= 1:
            raise ValueError(f"Dropout: rate must be in [0, 1], got {rate!r}")
        self._rate = rate
        self._axes = axes

    def hybrid_forward(self, F, x):
        if self._rate > 0:
            return F.Dropout(x, p=self._rate, axes=self._axes, name="fwd", cudnn_off=False)
        return F.identity(x)

    def __repr__(self):
        return f"{type(self).__name__}(p = {self._rate}, axes={self._axes})"


class Embedding(HybridBlock):
    """Looks up rows of ``weight`` (shape ``(input_dim, output_dim)``) by integer index.

    ``sparse_grad=True`` is accepted and written to exported graphs, but the gradient is kept
    dense (hybridgpu has no row_sparse storage); its values are the same.

    Example:
        >>> emb = Embedding(10, 3)
        >>> emb.initialize()
        >>> emb(nd.array([[1, 2], [3, 9]])).shape, emb
        ((2, 2, 3), Embedding(10 -> 3, float32))
    """

    def __init__(self, input_dim, output_dim, dtype="float32", weight_initializer=None,
                 sparse_grad=False, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype,
                        "sparse_grad": sparse_grad}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim),
                                      init=weight_initializer, dtype=dtype,
                                      allow_deferred_init=True)

    def hybrid_forward(self, F, x, weight):
        return _run_op(self, F.Embedding, x, weight, name="fwd", **self._kwargs)

    def _shape_hint(self):
        return (f"it maps indices in [0, {self._kwargs['input_dim']}) to vectors of "
                f"{self._kwargs['output_dim']} (weight shape {self.weight.shape})")

    def __repr__(self):
        k = self._kwargs
        return f"{type(self).__name__}({k['input_dim']} -> {k['output_dim']}, {k['dtype']})"


class Flatten(HybridBlock):
    """Reshapes ``(N, d1, d2, ...)`` to ``(N, d1*d2*...)``.

    Example:
        >>> Flatten()(nd.ones((2, 3, 4))).shape
        (2, 12)
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def hybrid_forward(self, F, x):
        return F.Flatten(x)

    def __repr__(self):
        return type(self).__name__


# -- normalization ----------------------------------------------------------------------------

def _norm_params(block, shape, center, scale, beta_init, gamma_init, mark_differentiable=False):
    """``gamma`` and ``beta`` of a normalization layer (grad_req 'null' when not learned;
    ``mark_differentiable``: also ``differentiable=False`` then, as MXNet's BatchNorm does)."""
    gamma_kw = {"differentiable": scale} if mark_differentiable else {}
    beta_kw = {"differentiable": center} if mark_differentiable else {}
    block.gamma = block.params.get("gamma", grad_req="write" if scale else "null", shape=shape,
                                   init=gamma_init, allow_deferred_init=True, **gamma_kw)
    block.beta = block.params.get("beta", grad_req="write" if center else "null", shape=shape,
                                  init=beta_init, allow_deferred_init=True, **beta_kw)


def _channels_hint(block, axis):
    channels = block.gamma.shape[0]
    return (f"it was built for {channels} channels on axis {axis} (gamma shape "
            f"{block.gamma.shape}); pass inputs with {channels} channels there, or build the "
            "layer with in_channels=0 to take them from the first batch")


class BatchNorm(HybridBlock):
    """Batch normalization over ``axis`` (the channel axis). In training (under
    ``autograd.record()``) it normalizes with the batch's statistics and updates
    ``running_mean``/``running_var`` (``momentum``); otherwise it uses the running ones.
    ``scale=False`` fixes gamma at 1 (``fix_gamma=True``); running statistics have
    ``grad_req='null'`` and are the op's auxiliary states.

    Example:
        >>> bn = BatchNorm(in_channels=2, prefix="bn_")
        >>> bn, sorted(bn.params.keys())[:2]
        (BatchNorm(axis=1, eps=1e-05, momentum=0.9, fix_gamma=False, use_global_stats=False, \
in_channels=2), ['bn_beta', 'bn_gamma'])
    """

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, beta_initializer="zeros", gamma_initializer="ones",
                 running_mean_initializer="zeros", running_variance_initializer="ones",
                 in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"axis": axis, "eps": epsilon, "momentum": momentum,
                        "fix_gamma": not scale, "use_global_stats": use_global_stats}
        self._axis = axis
        if in_channels != 0:
            self.in_channels = in_channels
        shape = (in_channels,)
        _norm_params(self, shape, center, scale, beta_initializer, gamma_initializer,
                     mark_differentiable=True)
        self.running_mean = self.params.get("running_mean", grad_req="null", shape=shape,
                                            init=running_mean_initializer,
                                            allow_deferred_init=True, differentiable=False)
        self.running_var = self.params.get("running_var", grad_req="null", shape=shape,
                                           init=running_variance_initializer,
                                           allow_deferred_init=True, differentiable=False)

    def cast(self, dtype):
        """float16 stays float32 for the statistics (as MXNet); other dtypes as given."""
        if np.dtype(dtype).name == "float16":
            dtype = "float32"
        super().cast(dtype)

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        return _run_op(self, F.BatchNorm, x, gamma, beta, running_mean, running_var,
                       name="fwd", **self._kwargs)

    def _shape_hint(self):
        return _channels_hint(self, self._axis)

    def __repr__(self):
        channels = self.gamma.shape[0]
        return (f"{type(self).__name__}({_kwargs_repr(self._kwargs)}, "
                f"in_channels={channels or None})")


class LayerNorm(HybridBlock):
    """Normalizes each sample over ``axis`` (default the last), then scales by ``gamma`` and
    shifts by ``beta`` (shape ``(in_channels,)``).

    Example:
        >>> ln = LayerNorm()
        >>> ln.initialize()
        >>> ln(nd.array([[1, 3]])).asnumpy().round(3), ln
        (array([[-1.,  1.]], dtype=float32), LayerNorm(eps=1e-05, axis=-1, center=True, \
scale=True, in_channels=2))
    """

    def __init__(self, axis=-1, epsilon=1e-5, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", in_channels=0, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis, self._epsilon = axis, epsilon
        self._center, self._scale = center, scale
        _norm_params(self, (in_channels,), center, scale, beta_initializer, gamma_initializer)

    def hybrid_forward(self, F, data, gamma, beta):
        return _run_op(self, F.LayerNorm, data, gamma=gamma, beta=beta, axis=self._axis,
                       eps=self._epsilon)

    def _shape_hint(self):
        return _channels_hint(self, self._axis)

    def __repr__(self):
        return (f"{type(self).__name__}({_kwargs_repr(self._kwargs)}, "
                f"in_channels={self.gamma.shape[0]})")


class InstanceNorm(HybridBlock):
    """Normalizes each sample and channel (``axis``) over the remaining axes, then applies
    ``gamma`` and ``beta`` per channel. ``scale`` defaults to False (gamma stays 1 unless set).

    Example:
        >>> inorm = InstanceNorm(in_channels=1)
        >>> inorm.initialize()
        >>> inorm(nd.array([[[1, 3]]])).asnumpy().round(3)
        array([[[-1.,  1.]]], dtype=float32)
    """

    def __init__(self, axis=1, epsilon=1e-5, center=True, scale=False, beta_initializer="zeros",
                 gamma_initializer="ones", in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis, self._epsilon = axis, epsilon
        _norm_params(self, (in_channels,), center, scale, beta_initializer, gamma_initializer)

    def hybrid_forward(self, F, x, gamma, beta):
        if self._axis == 1:
            return _run_op(self, F.InstanceNorm, x, gamma, beta, name="fwd", eps=self._epsilon)
        swapped = x.swapaxes(1, self._axis)
        out = _run_op(self, F.InstanceNorm, swapped, gamma, beta, shown=x, name="fwd",
                      eps=self._epsilon)
        return out.swapaxes(1, self._axis)

    def _shape_hint(self):
        return _channels_hint(self, self._axis)

    def __repr__(self):
        return (f"{type(self).__name__}({_kwargs_repr(self._kwargs)}, "
                f"in_channels={self.gamma.shape[0]})")


class GroupNorm(HybridBlock):
    """Splits axis 1 into ``num_groups`` groups and normalizes each sample's group over it and
    the remaining axes; ``gamma``/``beta`` have one value per group (MXNet 1.x).

    Example:
        >>> gn = GroupNorm(num_groups=2)
        >>> gn.initialize()
        >>> gn(nd.array([[[1, 3], [5, 9]]])).asnumpy().round(3)
        array([[[-1.,  1.],
                [-1.,  1.]]], dtype=float32)
    """

    def __init__(self, num_groups=1, epsilon=1e-5, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {"eps": epsilon, "num_groups": num_groups, "center": center,
                        "scale": scale}
        self._num_groups, self._epsilon = num_groups, epsilon
        self._center, self._scale = center, scale
        _norm_params(self, (num_groups,), center, scale, beta_initializer, gamma_initializer)

    def hybrid_forward(self, F, data, gamma, beta):
        return _run_op(self, F.GroupNorm, data, gamma=gamma, beta=beta,
                       num_groups=self._num_groups, eps=self._epsilon)

    def _shape_hint(self):
        return (f"it splits axis 1 into {self._num_groups} groups, so the input needs at least "
                f"2 axes and a multiple of {self._num_groups} channels on axis 1")

    def __repr__(self):
        return f"{type(self).__name__}({_kwargs_repr(self._kwargs)})"


# -- wrapping functions -----------------------------------------------------------------------

class Lambda(Block):
    """Wraps a function (or the name of an ``nd`` function) as a Block.

    Example:
        >>> Lambda("tanh"), Lambda(lambda x: x + 1)(nd.zeros((1,))).asnumpy()
        (Lambda(tanh), array([1.], dtype=float32))
    """

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            if not hasattr(nd, function):
                raise ValueError(f"Lambda: function name {function!r} is not found in "
                                 "ndarray; pass the name of an nd function (e.g. 'tanh') or a "
                                 "callable")
            self._func_impl = getattr(nd, function)
        elif callable(function):
            self._func_impl = function
        else:
            raise ValueError(f"Unrecognized function in lambda: {function!r} of type "
                             f"{type(function)}; pass a callable or the name of an nd function")

    def forward(self, *args):
        return self._func_impl(*args)

    def __repr__(self):
        return f"{type(self).__name__}({self._func_impl.__name__})"


class HybridLambda(HybridBlock):
    """Wraps ``function(F, x, *args)`` (or the name of an op in both ``nd`` and ``sym``, e.g.
    ``'tanh'``) as a HybridBlock.

    Example:
        >>> HybridLambda("tanh"), HybridLambda(lambda F, x: F.relu(x))(nd.array([-1])).asnumpy()
        (HybridLambda(tanh), array([0.], dtype=float32))
    """

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            if not (hasattr(nd, function) and hasattr(sym, function)):
                raise ValueError(f"HybridLambda: function name {function!r} is not found in "
                                 "symbol/ndarray; pass the name of an op in both (e.g. 'tanh') "
                                 "or a callable function(F, x, *args)")
            ops = {nd: getattr(nd, function), sym: getattr(sym, function)}
            self._func = lambda F, *args: ops[F](*args)
            self._func_name = function
        elif callable(function):
            self._func = function
            self._func_name = function.__name__
        else:
            raise ValueError(f"Unrecognized function in lambda: {function!r} of type "
                             f"{type(function)}; pass a callable function(F, x, *args) or an "
                             "op name")

    def hybrid_forward(self, F, x, *args):
        return self._func(F, x, *args)

    def __repr__(self):
        return f"{type(self).__name__}({self._func_name})"
