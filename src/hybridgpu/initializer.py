"""``mx.init`` (= ``mx.initializer``): how parameters get their first values.

An initializer is called with an :class:`InitDesc` (the parameter's name, a ``str`` with
``attrs``) and the NDArray to fill, and writes into that array in place, keeping its dtype and
context. As in MXNet 1.x the name decides what happens: an ``__init__`` attribute (a name, a
``dumps()`` string or an instance) wins; otherwise ``*weight`` gets the initializer's own
rule, ``*bias``/``*beta``/``*min`` zeros, ``*gamma``/``*max`` ones, and any other name is an
error. Random initializers draw through ``mx.nd.random``, so ``mx.random.seed`` repeats them.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu import initializer as init
    >>> w, b = mx.nd.zeros((4, 3)), mx.nd.ones((4,))
    >>> xavier = init.Xavier(magnitude=3)
    >>> xavier(init.InitDesc("fc_weight"), w); xavier(init.InitDesc("fc_bias"), b)
    >>> bound = (3 / ((3 + 4) / 2)) ** 0.5  # sqrt(magnitude / avg(fan_in, fan_out))
    >>> bool(abs(w).max().asscalar() <= bound), b.asnumpy().tolist()
    (True, [0.0, 0.0, 0.0, 0.0])
    >>> init.create('["constant", {"value": 0.5}]').dumps()
    '["constant", {"value": 0.5}]'
"""

from __future__ import annotations

import json
import logging
import math
import re
import warnings

import numpy as np

from .base import MXNetError
from .context import cpu
from .ndarray import random as _random
from .ndarray.ndarray import NDArray
from .ndarray.utils import load as _load_params

__all__ = ["InitDesc", "Initializer", "register", "alias", "create", "Uniform", "Normal",
           "Xavier", "MSRAPrelu", "Zero", "One", "Constant", "Orthogonal", "Bilinear",
           "LSTMBias", "Mixed", "Load"]

_LOG = logging.getLogger(__name__)
_REGISTRY: dict = {}  # lower-case name -> Initializer subclass


class InitDesc(str):
    """The name of the parameter being initialized (a ``str``), with its ``attrs`` (a dict;
    ``attrs['__init__']`` names the parameter's own initializer) and ``global_init`` (the
    initializer the whole model was initialized with; set by the first one called).

    Example:
        >>> d = InitDesc("fc_bias", {"__init__": '["zero", {}]'})
        >>> d, d.endswith("bias"), d.attrs["__init__"], d.global_init
        ('fc_bias', True, '["zero", {}]', None)
    """

    def __new__(cls, name, attrs=None, global_init=None):
        desc = super().__new__(cls, name)
        desc.attrs = attrs or {}
        desc.global_init = global_init
        return desc


# -- registry ------------------------------------------------------------------------------
def register(klass):
    """Class decorator: make ``klass`` (an Initializer subclass) known to :func:`create` and
    to ``__init__`` attributes under its lower-cased class name.

    Example:
        >>> @register
        ... class Half(Initializer):
        ...     def _init_weight(self, name, arr):
        ...         arr[:] = 0.5
        >>> create("half").dumps()
        '["half", {}]'
    """
    if not (isinstance(klass, type) and issubclass(klass, Initializer)):
        raise TypeError(f"init.register: expected a subclass of mx.init.Initializer, got "
                        f"{klass!r}; derive your class from Initializer and override "
                        "_init_weight(self, name, arr)")
    return alias(klass.__name__)(klass)


def alias(*names):
    """Class decorator: register an Initializer subclass under more names (``'zeros'``)."""
    def decorate(klass):
        for name in names:
            key = name.lower()
            old = _REGISTRY.get(key)
            if old is not None and old is not klass:
                warnings.warn(f"init.register: {klass.__module__}.{klass.__name__} replaces "
                              f"{old.__module__}.{old.__name__} as initializer {key!r}",
                              stacklevel=3)
            _REGISTRY[key] = klass
        return klass
    return decorate


def _known_names():
    return ", ".join(sorted(_REGISTRY))


def _parse_json(text):
    try:
        return json.loads(text)
    except ValueError as err:
        raise ValueError(f"init.create: {text!r} is not valid JSON ({err}); give a name like "
                         "'xavier' or a string written by Initializer.dumps()") from None


def _no_extra(spec, args, kwargs):
    if args or kwargs:
        raise TypeError(f"init.create: {spec!r} already says which initializer and its "
                        f"arguments; the extra arguments {args or ''}{kwargs or ''} are "
                        "invalid")


def create(*args, **kwargs):
    """An Initializer from a name (any case: ``'xavier'``, ``'Xavier'``, ``'zeros'``) plus its
    arguments, a ``dumps()`` string ``'["name", {...}]'``, a dict ``{'initializer': name, ...}``
    or an instance (returned as it is).

    Example:
        >>> create("Xavier", magnitude=2).dumps()
        '["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 2}]'
        >>> create('["normal", {"sigma": 0.5}]').sigma
        0.5
    """
    if args:
        spec, args = args[0], args[1:]
    elif "initializer" in kwargs:
        spec = kwargs.pop("initializer")
    else:
        raise TypeError("init.create: give an initializer: a name such as 'xavier', an "
                        "Initializer instance, a dumps() string or {'initializer': name, ...}")
    if isinstance(spec, Initializer):
        _no_extra(spec, args, kwargs)
        return spec
    if isinstance(spec, dict):
        _no_extra(spec, args, kwargs)
        return create(**spec)
    if isinstance(spec, (list, tuple)) and len(spec) == 2 and isinstance(spec[1], dict):
        _no_extra(spec, args, kwargs)
        return create(spec[0], **spec[1])
    if not isinstance(spec, str):
        raise TypeError(f"init.create: expected an initializer name, instance, dumps() string "
                        f"or dict, got {type(spec).__name__} {spec!r}")
    text = spec.strip()
    if text.startswith(("[", "{")):
        _no_extra(spec, args, kwargs)
        return create(_parse_json(text))
    klass = _REGISTRY.get(text.lower())
    if klass is None:
        raise ValueError(f"{spec} is not registered as an initializer; known names: "
                         f"{_known_names()}. Register a new one with the @mx.init.register "
                         "class decorator")
    return klass(*args, **kwargs)


# -- helpers -------------------------------------------------------------------------------
def _jsonable(value):
    """``value`` with arrays, numpy scalars and initializers turned into JSON types."""
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, NDArray):
        return value.asnumpy().tolist()
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    if isinstance(value, Initializer):
        return json.loads(value.dumps())
    return value


def _rms(arr):
    """The default statistic of ``set_verbosity``: ``norm(x) / sqrt(size(x))``."""
    return str((arr.norm() / math.sqrt(max(arr.size, 1))).asscalar())


def _check_choice(who, arg, value, choices):
    if value not in choices:
        raise ValueError(f"{who}: {arg}={value!r} is not one of {list(choices)}")


def _check_float(init, name, arr):
    """Random draws need a float array (as MXNet's samplers)."""
    if np.dtype(arr.dtype).kind != "f":
        raise MXNetError(f"{type(init).__name__} cannot initialize {name} of dtype "
                         f"{np.dtype(arr.dtype).name}: it draws random numbers, which need a "
                         "float16, float32 or float64 array; use Zero, One or Constant for "
                         "integer parameters")


def _fill(name, arr, value):
    """``arr[:] = value`` with an error naming the parameter when the shapes disagree."""
    if not isinstance(value, (NDArray, int, float, np.generic)):
        value = np.asarray(value)
    try:
        arr[:] = value
    except MXNetError as err:
        shape = getattr(value, "shape", ())
        raise ValueError(f"cannot initialize {name} of shape {arr.shape} with a value of "
                         f"shape {tuple(shape)}: it does not broadcast ({err})") from None


def _bilinear_kernel(name, shape):
    """The bilinear upsampling kernel of a 4-D ``(out, in, kh, kw)`` weight."""
    if len(shape) != 4:
        raise ValueError(f"Bilinear initializer needs a 4-D (num_filter, channels, kernel_h, "
                         f"kernel_w) weight, but {name} has shape {shape}")

    def axis(size):
        f = math.ceil(size / 2.0)
        center = (2 * f - 1 - f % 2) / (2.0 * f)
        return 1.0 - np.abs(np.arange(size) / f - center)

    return np.broadcast_to(np.outer(axis(shape[2]), axis(shape[3])), shape)


_DEFAULT_HELP = ('Default initialization is now limited to "weight", "bias", "gamma" (1.0), '
                 'and "beta" (0.0). Please use mx.sym.Variable(init=mx.init.*) or '
                 "gluon Parameter(init=mx.init.*) to set initialization pattern")

# (suffix, method, label): the order MXNet tries the name suffixes in.
_SUFFIX_RULES = (("weight", "_init_weight", "weight"), ("bias", "_init_bias", "bias"),
                 ("gamma", "_init_gamma", "gamma"), ("beta", "_init_beta", "beta"),
                 ("min", "_init_zero", "min"), ("max", "_init_one", "max"),
                 ("weight_quantize", "_init_quantized_weight", "weight_quantize"),
                 ("bias_quantize", "_init_quantized_bias", "bias_quantize"))

# init(str, arr), MXNet's deprecated form, also knows the auxiliary states of old symbols.
_LEGACY_SUFFIX_RULES = (("bias", "_init_bias"), ("gamma", "_init_gamma"),
                        ("beta", "_init_beta"), ("weight", "_init_weight"),
                        ("moving_mean", "_init_zero"), ("moving_var", "_init_one"),
                        ("moving_inv_var", "_init_zero"), ("moving_avg", "_init_zero"),
                        ("min", "_init_zero"), ("max", "_init_one"))


# -- the base class ------------------------------------------------------------------------
class Initializer:
    """Base class: subclasses override ``_init_weight(self, name, arr)`` (and may override
    ``_init_bias``, ``_init_gamma``, ``_init_beta``) and pass their arguments to
    ``super().__init__(**kwargs)`` so :meth:`dumps` can write them.

    Example:
        >>> import hybridgpu as mx
        >>> g = mx.nd.zeros((2,))
        >>> Uniform()(InitDesc("bn_gamma"), g)
        >>> g.asnumpy().tolist()
        [1.0, 1.0]
    """

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func = None

    def set_verbosity(self, verbose=False, print_func=None):
        """Log (``logging.INFO``) a statistic of every array this initializer fills;
        ``print_func(arr) -> str`` defaults to ``norm(arr) / sqrt(arr.size)``. Returns self."""
        self._verbose = verbose
        self._print_func = _rms if print_func is None else print_func
        return self

    def _verbose_print(self, desc, how, arr):
        if self._verbose and self._print_func:
            _LOG.info("Initialized %s as %s: %s", desc, how, self._print_func(arr))

    def dumps(self):
        """The JSON ``["lower-case class name", {constructor arguments}]``; ``create`` reads
        it back."""
        return json.dumps([type(self).__name__.lower(), _jsonable(self._kwargs)])

    def __eq__(self, other):
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and _jsonable(self._kwargs) == _jsonable(other._kwargs)

    __hash__ = None  # equal by value, like MXNet's (which are unhashable)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in _jsonable(self._kwargs).items())
        return f"{type(self).__name__}({args})"

    def __call__(self, desc, arr):
        """Fill ``arr`` (an NDArray) in place for the parameter ``desc`` (an InitDesc)."""
        if not isinstance(desc, InitDesc):
            self._legacy_init(desc, arr)
            return
        self._check_array(desc, arr)
        if desc.global_init is None:
            desc.global_init = self
        own = desc.attrs.get("__init__")
        if own is not None and not (isinstance(own, str) and not own):
            create(own)._init_weight(desc, arr)
            self._verbose_print(desc, own, arr)
            return
        for suffix, method, label in _SUFFIX_RULES:
            if desc.endswith(suffix):
                getattr(self, method)(desc, arr)
                self._verbose_print(desc, label, arr)
                return
        self._init_default(desc, arr)

    def _check_array(self, name, arr):
        if not isinstance(arr, NDArray):
            raise TypeError(f"{type(self).__name__}: the array for {name} must be an "
                            f"mx.nd.NDArray, got {type(arr).__name__}; wrap it with "
                            "mx.nd.array(...)")

    def _legacy_init(self, name, arr):
        """MXNet's deprecated ``init(name_str, arr)``: the suffix table of old symbols."""
        if not isinstance(name, str):
            raise TypeError(f"{type(self).__name__}: the parameter name must be an "
                            f"mx.init.InitDesc or a str, got {type(name).__name__} {name!r}")
        self._check_array(name, arr)
        warnings.warn("Calling an initializer as init(str, NDArray) is deprecated; use "
                      "init(mx.init.InitDesc(name), NDArray) instead", DeprecationWarning,
                      stacklevel=3)
        if name.startswith("upsampling"):
            self._init_bilinear(name, arr)
        elif name.startswith("stn_loc") and name.endswith("weight"):
            self._init_zero(name, arr)
        elif name.startswith("stn_loc") and name.endswith("bias"):
            self._init_loc_bias(name, arr)
        else:
            method = next((m for s, m in _LEGACY_SUFFIX_RULES if name.endswith(s)),
                          "_init_default")
            getattr(self, method)(name, arr)

    def _init_weight(self, name, arr):
        raise NotImplementedError(f"{type(self).__name__} has no rule for weights such as "
                                  f"{name}: an Initializer subclass must override "
                                  "_init_weight(self, name, arr)")

    def _init_default(self, name, arr):
        raise ValueError(f"Unknown initialization pattern for {name}. {_DEFAULT_HELP}")

    def _init_bias(self, _, arr):
        arr[:] = 0.0

    def _init_gamma(self, _, arr):
        arr[:] = 1.0

    def _init_beta(self, _, arr):
        arr[:] = 0.0

    def _init_zero(self, _, arr):
        arr[:] = 0.0

    def _init_one(self, _, arr):
        arr[:] = 1.0

    def _init_quantized_bias(self, _, arr):
        arr[:] = 0

    def _init_quantized_weight(self, _, arr):
        """Integers drawn uniformly from [-127, 127), each element its own draw."""
        arr[:] = _random.randint(-127, 127, shape=arr.shape, ctx=arr.context)

    def _init_bilinear(self, name, arr):
        _fill(name, arr, _bilinear_kernel(name, arr.shape))

    def _init_loc_bias(self, name, arr):
        """The identity affine transform ``[1, 0, 0, 0, 1, 0]`` of a SpatialTransformer."""
        if arr.shape != (6,):
            raise ValueError(f"{name}: a SpatialTransformer localisation bias must have shape "
                             f"(6,) (a 2x3 affine transform), got {arr.shape}")
        arr[:] = np.array([1.0, 0.0, 0.0, 0.0, 1.0, 0.0])


# -- the initializers ----------------------------------------------------------------------
@register
class Uniform(Initializer):
    """Weights drawn uniformly from ``[-scale, scale)``.

    Example:
        >>> import hybridgpu as mx
        >>> w = mx.nd.zeros((100,))
        >>> Uniform(0.1)(InitDesc("w_weight"), w)
        >>> bool(abs(w).max().asscalar() <= 0.1)
        True
    """

    def __init__(self, scale=0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, name, arr):
        _check_float(self, name, arr)
        _random.uniform(-self.scale, self.scale, out=arr)


@register
class Normal(Initializer):
    """Weights drawn from N(0, sigma**2).

    Example:
        >>> Normal(sigma=0.5).dumps()
        '["normal", {"sigma": 0.5}]'
    """

    def __init__(self, sigma=0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, name, arr):
        _check_float(self, name, arr)
        _random.normal(0, self.sigma, out=arr)


@register
class Xavier(Initializer):
    """Glorot/Xavier: ``scale = sqrt(magnitude / factor)`` where ``factor`` is fan_in, fan_out
    or their mean (``factor_type`` 'in', 'out', 'avg'); weights are uniform on
    ``[-scale, scale)`` (``rnd_type='uniform'``) or N(0, scale**2) (``'gaussian'``).

    For a weight of shape ``(out, in, *kernel)``: ``fan_in = in * prod(kernel)``,
    ``fan_out = out * prod(kernel)``. Weights need at least 2 dimensions.

    Example:
        >>> Xavier.fans("conv_weight", (8, 4, 3, 3))
        (36.0, 72.0)
    """

    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        _check_choice(type(self).__name__, "rnd_type", rnd_type, ("uniform", "gaussian"))
        _check_choice(type(self).__name__, "factor_type", factor_type, ("avg", "in", "out"))
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    @staticmethod
    def fans(name, shape, who="Xavier"):
        """``(fan_in, fan_out)`` of a weight of ``shape`` (as floats)."""
        if len(shape) < 2:
            raise ValueError(f"{who} initializer cannot be applied to vector {name}. It "
                             f"requires at least 2D (got shape {tuple(shape)}); give this "
                             "parameter its own init, e.g. init=mx.init.Zero()")
        receptive = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        return shape[1] * receptive, shape[0] * receptive

    def _scale(self, name, shape):
        fan_in, fan_out = self.fans(name, shape, type(self).__name__)
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[
            self.factor_type]
        if factor <= 0:
            raise ValueError(f"{type(self).__name__}: {name} has shape {tuple(shape)}, whose "
                             f"fan ({self.factor_type}) is 0; its shape must be complete")
        return math.sqrt(self.magnitude / factor)

    def _init_weight(self, name, arr):
        scale = self._scale(name, arr.shape)
        _check_float(self, name, arr)
        if self.rnd_type == "uniform":
            _random.uniform(-scale, scale, out=arr)
        else:
            _random.normal(0, scale, out=arr)


@register
class MSRAPrelu(Xavier):
    """He/MSRA initialization for PReLU nets: Gaussian Xavier with
    ``magnitude = 2 / (1 + slope**2)``.

    Example:
        >>> MSRAPrelu(slope=0).magnitude
        2.0
    """

    def __init__(self, factor_type="avg", slope=0.25):
        super().__init__("gaussian", factor_type, 2.0 / (1 + slope ** 2))
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@register
@alias("zeros")
class Zero(Initializer):
    """Weights set to 0 (also registered as ``'zeros'``).

    Example:
        >>> create("zeros").dumps()
        '["zero", {}]'
    """

    def _init_weight(self, _, arr):
        arr[:] = 0


@register
@alias("ones")
class One(Initializer):
    """Weights set to 1 (also registered as ``'ones'``).

    Example:
        >>> create("ones").dumps()
        '["one", {}]'
    """

    def _init_weight(self, _, arr):
        arr[:] = 1


@register
class Constant(Initializer):
    """Weights set to ``value``: a number, or an array (NDArray, NumPy, list) that
    broadcasts to the weight's shape.

    Example:
        >>> import hybridgpu as mx
        >>> w = mx.nd.zeros((2, 3))
        >>> Constant(mx.nd.array([1, 2, 3]))(InitDesc("w_weight"), w)
        >>> w.asnumpy().tolist()
        [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]
    """

    def __init__(self, value):
        super().__init__(value=value)
        self.value = value

    def _init_weight(self, name, arr):
        _fill(name, arr, self.value)

    def dumps(self):
        # as MXNet's: an array value is kept in its list form from now on (``_kwargs`` can
        # then be written as JSON by the caller too); ``value`` still holds the array
        self._kwargs["value"] = _jsonable(self._kwargs["value"])
        return super().dumps()


@register
class Orthogonal(Initializer):
    """Weights whose rows (or columns, if taller than wide) are orthonormal, times ``scale``:
    the weight is reshaped to ``(shape[0], prod(shape[1:]))``, a random matrix (uniform on
    [-1, 1) or standard normal, ``rand_type``) is drawn and its SVD factor of that shape kept.

    Example:
        >>> import hybridgpu as mx
        >>> w = mx.nd.zeros((2, 5))
        >>> Orthogonal(scale=1.0)(InitDesc("w_weight"), w)
        >>> m = w.asnumpy(); bool(abs(m @ m.T - np.eye(2)).max() < 1e-5)
        True
    """

    def __init__(self, scale=1.414, rand_type="uniform"):
        super().__init__(scale=scale, rand_type=rand_type)
        _check_choice("Orthogonal", "rand_type", rand_type, ("uniform", "normal"))
        self.scale = scale
        self.rand_type = rand_type

    def _init_weight(self, name, arr):
        if arr.ndim < 2:
            raise ValueError(f"Orthogonal initializer needs a weight of at least 2 dimensions, "
                             f"but {name} has shape {arr.shape}")
        _check_float(self, name, arr)
        rows, cols = arr.shape[0], int(np.prod(arr.shape[1:]))
        if rows * cols == 0:
            return
        if self.rand_type == "uniform":
            draw = _random.uniform(-1.0, 1.0, shape=(rows, cols), ctx=cpu())
        else:
            draw = _random.normal(0.0, 1.0, shape=(rows, cols), ctx=cpu())
        draw = draw.asnumpy().astype(np.float64)
        u, _, v = np.linalg.svd(draw, full_matrices=False)
        q = u if u.shape == draw.shape else v
        arr[:] = (self.scale * q).reshape(arr.shape).astype(arr.dtype)


@register
class Bilinear(Initializer):
    """A 4-D ``(out, in, kh, kw)`` weight set to the bilinear interpolation kernel (for
    ``Deconvolution`` upsampling), the same kernel for every (out, in) pair.

    Example:
        >>> import hybridgpu as mx
        >>> w = mx.nd.zeros((1, 1, 4, 4))
        >>> Bilinear()(InitDesc("up_weight"), w)
        >>> w.asnumpy()[0, 0, 1].tolist()
        [0.1875, 0.5625, 0.5625, 0.1875]
    """

    def __init__(self):
        super().__init__()

    def _init_weight(self, name, arr):
        self._init_bilinear(name, arr)


@register
class LSTMBias(Initializer):
    """An LSTM bias (gates in MXNet's order i, f, c, o; length ``4 * hidden``) set to 0 except
    the forget gate, set to ``forget_bias``. Use it as a bias parameter's own init.

    Example:
        >>> import hybridgpu as mx
        >>> b = mx.nd.ones((8,))
        >>> LSTMBias(2.0)(InitDesc("lstm_i2h_bias", {"__init__": LSTMBias(2.0)}), b)
        >>> b.asnumpy().tolist()
        [0.0, 0.0, 2.0, 2.0, 0.0, 0.0, 0.0, 0.0]
    """

    def __init__(self, forget_bias=1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, name, arr):
        if arr.ndim < 1 or arr.shape[0] % 4:
            raise ValueError(f"LSTMBias: {name} has shape {arr.shape}, but an LSTM bias has "
                             "4 * hidden_size entries (gates i, f, c, o)")
        hidden = arr.shape[0] // 4
        arr[:] = 0.0
        arr[hidden:2 * hidden] = self.forget_bias


@register
class Mixed(Initializer):
    """Picks an initializer by the parameter's name: the first regular expression in
    ``patterns`` that matches the start of the name (``re.match``) chooses the initializer at
    the same position of ``initializers`` (instances, names or dumps() strings).

    Example:
        >>> import hybridgpu as mx
        >>> mixed = Mixed(["fc1_.*", ".*"], [Constant(3), Zero()])
        >>> a, b = mx.nd.ones((2,)), mx.nd.ones((2,))
        >>> mixed(InitDesc("fc1_weight"), a); mixed(InitDesc("fc2_weight"), b)
        >>> a.asnumpy().tolist(), b.asnumpy().tolist()
        ([3.0, 3.0], [0.0, 0.0])
    """

    def __init__(self, patterns, initializers):
        if isinstance(patterns, str) or not isinstance(patterns, (list, tuple)) or \
                not isinstance(initializers, (list, tuple)):
            raise TypeError("Mixed(patterns, initializers): both must be lists, e.g. "
                            "Mixed(['.*bias', '.*'], [mx.init.Zero(), mx.init.Xavier()])")
        if len(patterns) != len(initializers):
            raise ValueError(f"Mixed: {len(patterns)} patterns but {len(initializers)} "
                             "initializers; give one initializer per pattern")
        inits = [create(i) for i in initializers]
        super().__init__(patterns=list(patterns), initializers=inits)
        self.map = list(zip([self._compile(p) for p in patterns], inits))

    @staticmethod
    def _compile(pattern):
        try:
            return re.compile(pattern)
        except (re.error, TypeError) as err:
            raise ValueError(f"Mixed: pattern {pattern!r} is not a regular expression: "
                             f"{err}") from None

    def _pick(self, name):
        for prog, init in self.map:
            if prog.match(name):
                return init
        patterns = [prog.pattern for prog, _ in self.map]
        raise ValueError(f"Parameter name {name} did not match any pattern of Mixed "
                         f"{patterns}. Consider adding a '.*' pattern at the end with a "
                         "default Initializer")

    def __call__(self, desc, arr):
        self._pick(desc)(desc, arr)

    def _init_weight(self, name, arr):
        self._pick(name)._init_weight(name, arr)


class Load(Initializer):
    """Values from saved arrays: ``param`` is a dict name -> NDArray or a ``.params`` file
    (``arg:``/``aux:`` prefixes are dropped). Names not found go to ``default_init``.

    Example:
        >>> import hybridgpu as mx
        >>> load = Load({"arg:fc_weight": mx.nd.ones((2,))}, default_init=Zero())
        >>> w, b = mx.nd.zeros((2,)), mx.nd.ones((2,))
        >>> load(InitDesc("fc_weight"), w); load(InitDesc("fc_bias"), b)
        >>> w.asnumpy().tolist(), b.asnumpy().tolist()
        ([1.0, 1.0], [0.0, 0.0])
    """

    def __init__(self, param, default_init=None, verbose=False):
        super().__init__()
        if isinstance(param, str):
            param = _load_params(param)
        if not isinstance(param, dict):
            raise TypeError("Load: param must be a dict name -> NDArray or the name of a file "
                            "saved with mx.nd.save(fname, dict)")
        self.param = {(k[4:] if k.startswith(("arg:", "aux:")) else k): v
                      for k, v in param.items()}
        self.default_init = None if default_init is None else create(default_init)
        self.verbose = verbose

    def __call__(self, name, arr):
        self._check_array(name, arr)
        if name in self.param:
            value = self.param[name]
            if tuple(value.shape) != tuple(arr.shape):
                raise ValueError(f"Parameter {name} cannot be initialized from loading. Shape "
                                 f"mismatch, target {arr.shape} vs loaded {value.shape}")
            arr[:] = value
            if self.verbose:
                _LOG.info("Initialized %s by loading", name)
            return
        if self.default_init is None:
            raise ValueError(f"Cannot Initialize {name}. Not found in loaded param and no "
                             "default Initializer is provided; pass default_init=")
        self.default_init(name, arr)
        if self.verbose:
            _LOG.info("Initialized %s by default", name)

    def _init_weight(self, name, arr):
        self(name, arr)

    def dumps(self):
        raise TypeError("Load holds arrays, so it has no JSON form; save the arrays with "
                        "mx.nd.save and build Load(fname) again")
