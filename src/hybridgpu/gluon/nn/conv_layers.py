"""``gluon.nn`` convolution and pooling layers, as MXNet 1.x has them: ``Conv1D/2D/3D``,
``Conv1D/2D/3DTranspose``, ``MaxPool1D/2D/3D``, ``AvgPool1D/2D/3D``, ``GlobalMaxPool1D/2D/3D``,
``GlobalAvgPool1D/2D/3D`` and ``ReflectionPad2D``.

Each layer calls one op (``Convolution``, ``Deconvolution``, ``Pooling``, ``Pad``) with MXNet's
attributes, so names (``conv0_weight``, node ``conv0_fwd``), parameter shapes, ``repr`` and
exported JSON are MXNet's. A convolution built without ``in_channels`` defers its weight's
initialization until the first input gives the channel count. Only channels-first layouts
(``NCW``, ``NCHW``, ``NCDHW``) are supported; any other layout is refused at construction.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.gluon import nn
    >>> with mx.name.NameManager():
    ...     conv = nn.Conv2D(4, kernel_size=3, padding=1)
    ...     pool = nn.MaxPool2D()
    >>> conv
    Conv2D(None -> 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
    >>> conv.initialize()
    >>> y = pool(conv(mx.nd.ones((1, 2, 6, 6))))
    >>> y.shape, conv.weight.name, conv.weight.shape
    ((1, 4, 3, 3), 'conv0_weight', (4, 2, 3, 3))
"""

from __future__ import annotations

import numbers

from ... import modes
from ...base import MXNetError
from ..hybrid_block import HybridBlock

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose",
           "Conv3DTranspose", "MaxPool1D", "MaxPool2D", "MaxPool3D", "AvgPool1D", "AvgPool2D",
           "AvgPool3D", "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPool3D",
           "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalAvgPool3D", "ReflectionPad2D"]

#: The one layout supported per number of spatial dims.
_CHANNELS_FIRST = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


# -- argument checks ------------------------------------------------------------------------

def _ints(layer, what, value, count):
    """``value`` (an int or a sequence of ``count`` ints) as a tuple of ``count`` ints."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return (int(value),) * count
    try:
        out = tuple(value)
    except TypeError:
        out = None
    if out is None or len(out) != count or not all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in out):
        raise MXNetError(f"{layer}: {what} must be an int or a tuple of {count} ints (one per "
                         f"spatial dim), got {value!r}")
    return tuple(int(v) for v in out)


def _check_layout(layer, layout, count):
    want = _CHANNELS_FIRST[count]
    if layout != want:
        raise MXNetError(f"{layer}: layout {layout!r} is not supported; hybridgpu supports only "
                         f"the channels-first layout {want!r} for {count}-D layers. Build the "
                         f"layer with layout={want!r} and transpose the input to {want} (e.g. "
                         f"nd.transpose(x, axes=...)) instead")


def _input_shape(x):
    """The shape of an NDArray or a Symbol, or None when a Symbol's shape is not known. Only
    checks read it, so a trace does not depend on it (``modes.unwatched``): a hybridized layer
    does not run its Python again for a new input shape."""
    try:
        with modes.unwatched():
            return tuple(x.shape)
    except MXNetError:
        return None


def _check_rank(block, shape, layout):
    if shape is not None and len(shape) != len(layout):
        raise MXNetError(f"{block._what()}: expected a {len(layout)}-D input of layout {layout} "
                         f"({', '.join(layout)}), got shape {shape}")


# -- convolution ----------------------------------------------------------------------------

class _Conv(HybridBlock):
    """Shared code of the convolution layers; ``op_name`` is ``Convolution`` or
    ``Deconvolution``. The weight is ``(channels, in_channels/groups, *kernel)`` for a
    convolution and ``(in_channels, channels/groups, *kernel)`` for a transposed one."""

    def __init__(self, channels, kernel_size, strides, padding, dilation, groups, layout,
                 in_channels=0, activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", op_name="Convolution", adj=None, prefix=None,
                 params=None):
        count, cls = self._spatial, type(self).__name__
        _check_layout(cls, layout, count)
        kernel = _ints(cls, "kernel_size", kernel_size, count)
        geometry = {"kernel": kernel, "stride": _ints(cls, "strides", strides, count),
                    "dilate": _ints(cls, "dilation", dilation, count),
                    "pad": _ints(cls, "padding", padding, count)}
        _check_geometry(cls, geometry, channels, in_channels, groups)
        super().__init__(prefix=prefix, params=params)
        with self.name_scope():
            self._channels, self._in_channels = channels, in_channels
            self._op_name = op_name
            self._kwargs = {**geometry, "num_filter": channels, "num_group": groups,
                            "no_bias": not use_bias, "layout": layout}
            if adj is not None:
                self._kwargs["adj"] = _ints(cls, "output_padding", adj, count)
                _check_adj(cls, self._kwargs["adj"], self._kwargs["stride"])
            if op_name == "Convolution":
                wshape = (channels, in_channels // groups, *kernel)
            else:
                wshape = (in_channels, channels // groups, *kernel)
            self.weight = self.params.get("weight", shape=wshape, init=weight_initializer,
                                          allow_deferred_init=True)
            self.bias = self.params.get("bias", shape=(channels,), init=bias_initializer,
                                        allow_deferred_init=True) if use_bias else None
            self.act = _activation(activation)

    _spatial = 2

    def _alias(self):
        return "conv"

    def _what(self):
        return f"{type(self).__name__} {self.name!r}"

    def _known_in_channels(self):
        """The input channels fixed by the weight's shape, or 0 while still deferred."""
        shape = self.weight.shape
        if self._op_name == "Convolution":
            return shape[1] * self._kwargs["num_group"]
        return shape[0]

    def _check_input(self, x):
        layout = self._kwargs["layout"]
        shape = _input_shape(x)
        _check_rank(self, shape, layout)
        want = self._known_in_channels()
        if shape is None or not want or not shape[1] or shape[1] == want:
            return
        expected = (shape[0], want, *shape[2:])
        raise MXNetError(f"{self._what()}: expected input shape {expected} ({layout} with "
                         f"{want} channels, fixed by {self.weight.name} of shape "
                         f"{self.weight.shape}) but got shape {shape} with {shape[1]} channels; "
                         f"give it {want}-channel inputs, or build a new layer (in_channels=0 "
                         "infers the channel count from the first input)")

    def hybrid_forward(self, F, x, weight, bias=None):
        self._check_input(x)
        op = getattr(F, self._op_name)
        if bias is None:
            out = op(x, weight, name="fwd", **self._kwargs)
        else:
            out = op(x, weight, bias, name="fwd", **self._kwargs)
        if self.act is not None:
            out = self.act(out)
        return out

    def __repr__(self):
        kw = self._kwargs
        count = len(kw["kernel"])
        shape = self.weight.shape
        parts = [f"{shape[1] if shape[1] else None} -> {shape[0]}",  # MXNet's mapping text
                 f"kernel_size={kw['kernel']}", f"stride={kw['stride']}"]
        if kw["pad"] != (0,) * count:
            parts.append(f"padding={kw['pad']}")
        if kw["dilate"] != (1,) * count:
            parts.append(f"dilation={kw['dilate']}")
        if kw["num_group"] != 1:
            parts.append(f"groups={kw['num_group']}")
        if self.bias is None:
            parts.append("bias=False")
        if self.act is not None:
            parts.append(repr(self.act))
        return f"{type(self).__name__}({', '.join(parts)})"


def _check_geometry(cls, geometry, channels, in_channels, groups):
    """Refuse sizes no input could make valid, naming the argument to fix."""
    for key, name, low in (("kernel", "kernel_size", 1), ("stride", "strides", 1),
                           ("dilate", "dilation", 1), ("pad", "padding", 0)):
        if min(geometry[key]) < low:
            raise MXNetError(f"{cls}: {name} must be at least {low} in every dim, got "
                             f"{geometry[key]}")
    for name, value, low in (("channels", channels, 1), ("groups", groups, 1),
                             ("in_channels", in_channels, 0)):
        if not isinstance(value, numbers.Integral) or value < low:
            raise MXNetError(f"{cls}: {name} must be an int >= {low}, got {value!r}")
    if channels % groups or in_channels % groups:
        raise MXNetError(f"{cls}: channels={channels} and in_channels={in_channels} must both "
                         f"be divisible by groups={groups}")


def _check_adj(cls, adj, stride):
    if any(a < 0 or a >= s for a, s in zip(adj, stride)):
        raise MXNetError(f"{cls}: output_padding {adj} must be non-negative and smaller than "
                         f"strides {stride} in every dim")


def _activation(activation):
    """The ``Activation`` child MXNet adds for ``activation=...`` (named ``<act>_``), or None."""
    if activation is None:
        return None
    from .activations import Activation

    return Activation(activation, prefix=f"{activation}_")


class Conv1D(_Conv):
    """1-D convolution over ``(N, C, W)`` inputs; weight ``(channels, in_channels/groups,
    k)``.

    Example:
        >>> import hybridgpu as mx
        >>> conv = Conv1D(4, 3, in_channels=2)
        >>> conv.initialize()
        >>> conv(mx.nd.ones((1, 2, 8))).shape
        (1, 4, 6)
    """

    _spatial = 1

    def __init__(self, channels, kernel_size, strides=1, padding=0, dilation=1, groups=1,
                 layout="NCW", activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, **kwargs)


class Conv2D(_Conv):
    """2-D convolution over ``(N, C, H, W)`` inputs; weight ``(channels, in_channels/groups,
    kh, kw)``.

    Example:
        >>> import hybridgpu as mx
        >>> conv = Conv2D(4, 3, strides=2, padding=1)
        >>> conv.initialize()
        >>> conv(mx.nd.ones((1, 3, 8, 8))).shape, conv.weight.shape
        ((1, 4, 4, 4), (4, 3, 3, 3))
    """

    _spatial = 2

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0),
                 dilation=(1, 1), groups=1, layout="NCHW", activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer="zeros", in_channels=0, **kwargs):
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, **kwargs)


class Conv3D(_Conv):
    """3-D convolution over ``(N, C, D, H, W)`` inputs; weight ``(channels,
    in_channels/groups, kd, kh, kw)``.

    Example:
        >>> import hybridgpu as mx
        >>> conv = Conv3D(2, 2, in_channels=1)
        >>> conv.initialize()
        >>> conv(mx.nd.ones((1, 1, 3, 3, 3))).shape
        (1, 2, 2, 2, 2)
    """

    _spatial = 3

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0),
                 dilation=(1, 1, 1), groups=1, layout="NCDHW", activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer="zeros", in_channels=0, **kwargs):
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, **kwargs)


class Conv1DTranspose(_Conv):
    """1-D transposed convolution (``Deconvolution``); weight ``(in_channels,
    channels/groups, k)``; output width ``(w-1)*stride - 2*pad + dilation*(k-1) + 1 +
    output_padding``.

    Example:
        >>> import hybridgpu as mx
        >>> up = Conv1DTranspose(2, 3, strides=2, output_padding=1)
        >>> up.initialize()
        >>> up(mx.nd.ones((1, 4, 5))).shape, up.weight.shape
        ((1, 2, 12), (4, 2, 3))
    """

    _spatial = 1

    def __init__(self, channels, kernel_size, strides=1, padding=0, output_padding=0,
                 dilation=1, groups=1, layout="NCW", activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer="zeros", in_channels=0, **kwargs):
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, op_name="Deconvolution", adj=output_padding,
                         **kwargs)


class Conv2DTranspose(_Conv):
    """2-D transposed convolution (``Deconvolution``); weight ``(in_channels,
    channels/groups, kh, kw)``.

    Example:
        >>> import hybridgpu as mx
        >>> up = Conv2DTranspose(2, 4, strides=2, padding=1)
        >>> up.initialize()
        >>> up(mx.nd.ones((1, 3, 4, 4))).shape
        (1, 2, 8, 8)
    """

    _spatial = 2

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0),
                 output_padding=(0, 0), dilation=(1, 1), groups=1, layout="NCHW",
                 activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, op_name="Deconvolution", adj=output_padding,
                         **kwargs)


class Conv3DTranspose(_Conv):
    """3-D transposed convolution (``Deconvolution``); weight ``(in_channels,
    channels/groups, kd, kh, kw)``.

    Example:
        >>> import hybridgpu as mx
        >>> up = Conv3DTranspose(1, 2, strides=2)
        >>> up.initialize()
        >>> up(mx.nd.ones((1, 2, 2, 2, 2))).shape
        (1, 1, 4, 4, 4)
    """

    _spatial = 3

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0),
                 output_padding=(0, 0, 0), dilation=(1, 1, 1), groups=1, layout="NCDHW",
                 activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, op_name="Deconvolution", adj=output_padding,
                         **kwargs)


# -- pooling --------------------------------------------------------------------------------

class _Pooling(HybridBlock):
    """Shared code of the pooling layers: one ``Pooling`` op named ``<prefix>fwd``."""

    _spatial = 2

    def __init__(self, pool_size, strides, padding, ceil_mode, global_pool, pool_type, layout,
                 count_include_pad=None, prefix=None, params=None):
        count, cls = self._spatial, type(self).__name__
        _check_layout(cls, layout, count)
        kernel = _ints(cls, "pool_size", pool_size, count)
        stride = kernel if strides is None else _ints(cls, "strides", strides, count)
        pad = _ints(cls, "padding", padding, count)
        if min(kernel) < 1 or min(stride) < 1 or min(pad) < 0:
            raise MXNetError(f"{cls}: pool_size {kernel} and strides {stride} must be positive "
                             f"and padding {pad} non-negative")
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {"kernel": kernel, "stride": stride, "pad": pad,
                        "global_pool": global_pool, "pool_type": pool_type, "layout": layout,
                        "pooling_convention": "full" if ceil_mode else "valid"}
        if count_include_pad is not None:
            self._kwargs["count_include_pad"] = bool(count_include_pad)

    def _alias(self):
        return "pool"

    def _what(self):
        return f"{type(self).__name__} {self.name!r}"

    def hybrid_forward(self, F, x):
        _check_rank(self, _input_shape(x), self._kwargs["layout"])
        return F.Pooling(x, name="fwd", **self._kwargs)

    def __repr__(self):
        kw = self._kwargs
        return (f"{type(self).__name__}(size={kw['kernel']}, stride={kw['stride']}, "
                f"padding={kw['pad']}, ceil_mode={kw['pooling_convention'] == 'full'}, "
                f"global_pool={kw['global_pool']}, pool_type={kw['pool_type']}, "
                f"layout={kw['layout']})")


class MaxPool1D(_Pooling):
    """Max pooling over ``(N, C, W)``; ``strides`` defaults to ``pool_size``; ``ceil_mode``
    rounds the output size up (MXNet's ``pooling_convention='full'``).

    Example:
        >>> import hybridgpu as mx
        >>> MaxPool1D()(mx.nd.array([[[1, 3, 2, 5]]])).asnumpy().tolist()
        [[[3.0, 5.0]]]
    """

    _spatial = 1

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCW", ceil_mode=False,
                 **kwargs):
        super().__init__(pool_size, strides, padding, ceil_mode, False, "max", layout,
                         **kwargs)


class MaxPool2D(_Pooling):
    """Max pooling over ``(N, C, H, W)``; ``strides`` defaults to ``pool_size``.

    Example:
        >>> import hybridgpu as mx
        >>> MaxPool2D(3, strides=2, padding=1)(mx.nd.ones((1, 1, 7, 7))).shape
        (1, 1, 4, 4)
    """

    _spatial = 2

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, layout="NCHW",
                 ceil_mode=False, **kwargs):
        super().__init__(pool_size, strides, padding, ceil_mode, False, "max", layout,
                         **kwargs)


class MaxPool3D(_Pooling):
    """Max pooling over ``(N, C, D, H, W)``; ``strides`` defaults to ``pool_size``.

    Example:
        >>> import hybridgpu as mx
        >>> MaxPool3D()(mx.nd.ones((1, 1, 4, 4, 5))).shape
        (1, 1, 2, 2, 2)
    """

    _spatial = 3

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0, ceil_mode=False,
                 layout="NCDHW", **kwargs):
        super().__init__(pool_size, strides, padding, ceil_mode, False, "max", layout,
                         **kwargs)


class AvgPool1D(_Pooling):
    """Average pooling over ``(N, C, W)``; ``count_include_pad=False`` divides by the
    number of real (unpadded) elements of each window.

    Example:
        >>> import hybridgpu as mx
        >>> AvgPool1D()(mx.nd.array([[[1, 3, 2, 6]]])).asnumpy().tolist()
        [[[2.0, 4.0]]]
    """

    _spatial = 1

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCW", ceil_mode=False,
                 count_include_pad=True, **kwargs):
        super().__init__(pool_size, strides, padding, ceil_mode, False, "avg", layout,
                         count_include_pad, **kwargs)


class AvgPool2D(_Pooling):
    """Average pooling over ``(N, C, H, W)``.

    Example:
        >>> import hybridgpu as mx
        >>> AvgPool2D(3, 1, 1, count_include_pad=False)(mx.nd.ones((1, 1, 3, 3))).sum()
        <BLANKLINE>
        [9.]
        <NDArray 1 @cpu(0)>
    """

    _spatial = 2

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, ceil_mode=False,
                 layout="NCHW", count_include_pad=True, **kwargs):
        super().__init__(pool_size, strides, padding, ceil_mode, False, "avg", layout,
                         count_include_pad, **kwargs)


class AvgPool3D(_Pooling):
    """Average pooling over ``(N, C, D, H, W)``.

    Example:
        >>> import hybridgpu as mx
        >>> AvgPool3D()(mx.nd.ones((1, 1, 2, 2, 2))).asnumpy().ravel().tolist()
        [1.0]
    """

    _spatial = 3

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0, ceil_mode=False,
                 layout="NCDHW", count_include_pad=True, **kwargs):
        super().__init__(pool_size, strides, padding, ceil_mode, False, "avg", layout,
                         count_include_pad, **kwargs)


class _GlobalPooling(_Pooling):
    """Pooling over the whole spatial extent: output ``(N, C, 1, ...)``."""

    _pool_type = "max"

    def __init__(self, layout, **kwargs):
        ones = (1,) * self._spatial
        super().__init__(ones, None, 0, True, True, self._pool_type, layout, **kwargs)


class GlobalMaxPool1D(_GlobalPooling):
    """Max over the width: ``(N, C, W)`` to ``(N, C, 1)``.

    Example:
        >>> import hybridgpu as mx
        >>> GlobalMaxPool1D()(mx.nd.array([[[1, 3, 2]]])).asnumpy().tolist()
        [[[3.0]]]
    """

    _spatial, _pool_type = 1, "max"

    def __init__(self, layout="NCW", **kwargs):
        super().__init__(layout, **kwargs)


class GlobalMaxPool2D(_GlobalPooling):
    """Max over height and width: ``(N, C, H, W)`` to ``(N, C, 1, 1)``.

    Example:
        >>> import hybridgpu as mx
        >>> GlobalMaxPool2D()(mx.nd.ones((2, 3, 4, 5))).shape
        (2, 3, 1, 1)
    """

    _spatial, _pool_type = 2, "max"

    def __init__(self, layout="NCHW", **kwargs):
        super().__init__(layout, **kwargs)


class GlobalMaxPool3D(_GlobalPooling):
    """Max over depth, height and width: ``(N, C, D, H, W)`` to ``(N, C, 1, 1, 1)``.

    Example:
        >>> import hybridgpu as mx
        >>> GlobalMaxPool3D()(mx.nd.ones((1, 2, 2, 3, 4))).shape
        (1, 2, 1, 1, 1)
    """

    _spatial, _pool_type = 3, "max"

    def __init__(self, layout="NCDHW", **kwargs):
        super().__init__(layout, **kwargs)


class GlobalAvgPool1D(_GlobalPooling):
    """Mean over the width: ``(N, C, W)`` to ``(N, C, 1)``.

    Example:
        >>> import hybridgpu as mx
        >>> GlobalAvgPool1D()(mx.nd.array([[[1, 3, 2]]])).asnumpy().tolist()
        [[[2.0]]]
    """

    _spatial, _pool_type = 1, "avg"

    def __init__(self, layout="NCW", **kwargs):
        super().__init__(layout, **kwargs)


class GlobalAvgPool2D(_GlobalPooling):
    """Mean over height and width: ``(N, C, H, W)`` to ``(N, C, 1, 1)``.

    Example:
        >>> import hybridgpu as mx
        >>> GlobalAvgPool2D()(mx.nd.ones((2, 3, 4, 5))).shape
        (2, 3, 1, 1)
    """

    _spatial, _pool_type = 2, "avg"

    def __init__(self, layout="NCHW", **kwargs):
        super().__init__(layout, **kwargs)


class GlobalAvgPool3D(_GlobalPooling):
    """Mean over depth, height and width: ``(N, C, D, H, W)`` to ``(N, C, 1, 1, 1)``.

    Example:
        >>> import hybridgpu as mx
        >>> GlobalAvgPool3D()(mx.nd.ones((1, 2, 2, 3, 4))).shape
        (1, 2, 1, 1, 1)
    """

    _spatial, _pool_type = 3, "avg"

    def __init__(self, layout="NCDHW", **kwargs):
        super().__init__(layout, **kwargs)


# -- padding --------------------------------------------------------------------------------

class ReflectionPad2D(HybridBlock):
    """Reflection padding of ``(N, C, H, W)`` inputs. ``padding`` is an int (every side of H
    and W) or MXNet's 8-tuple ``(0, 0, 0, 0, top, bottom, left, right)``; each must be smaller
    than the padded dim.

    Example:
        >>> import hybridgpu as mx
        >>> ReflectionPad2D(1)(mx.nd.array([[[[1, 2, 3]]]]).tile((1, 1, 2, 1))).shape
        (1, 1, 4, 5)
    """

    def __init__(self, padding=0, **kwargs):
        if isinstance(padding, numbers.Integral) and not isinstance(padding, bool):
            padding = (0, 0, 0, 0) + (int(padding),) * 4
        padding = _ints("ReflectionPad2D", "padding", padding, 8)
        if any(padding[:4]) or min(padding) < 0:
            raise MXNetError(f"ReflectionPad2D: padding {padding} must be non-negative and "
                             "zero for N and C: (0, 0, 0, 0, top, bottom, left, right)")
        super().__init__(**kwargs)
        self._padding = padding

    def hybrid_forward(self, F, x):
        _check_rank(self, _input_shape(x), "NCHW")
        return F.pad(x, mode="reflect", pad_width=self._padding)

    def _what(self):
        return f"ReflectionPad2D {self.name!r}"
