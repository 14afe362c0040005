"""Gluon parameters: ``Parameter``, ``Constant`` and ``ParameterDict`` (MXNet 1.x's API).

A Parameter keeps one copy of its data per context. ``data(ctx)`` on a context it was never
initialized on copies it there from an initialized one (MXNet raises "was not initialized on
context"); the Trainer sums the gradients of the copies. Shapes may hold 0 for "unknown":
initialization then waits (deferred) until the first forward fills the shape in.

Example:
    >>> import hybridgpu as mx
    >>> p = Parameter("w", shape=(2, 3), init="ones")
    >>> p.initialize()
    >>> p.data().asnumpy().sum().item(), p.data(mx.cpu(1)).context
    (6.0, cpu(1))
"""

from __future__ import annotations

import re
import warnings
from collections import OrderedDict

import numpy as np

from .. import autograd
from .. import ndarray as nd
from ..base import MXNetError
from ..context import Context, cpu, current_context
from .numpy_mode import numpy_parameters
from .parameter_internals import MXNetPrivateNames

__all__ = ["Parameter", "Constant", "ParameterDict", "DeferredInitializationError",
           "DeferredShapeError", "ParameterMissingError", "ParameterNotInBlockError",
           "ParameterNotInDictError"]


class DeferredInitializationError(MXNetError):
    """A parameter's data was asked for before its deferred initialization ran."""


# The exception types MXNet 1.9.1 raises (which user code catches), each also an MXNetError.
class DeferredShapeError(MXNetError, ValueError):
    """A deferred parameter whose shape the first forward could not infer (MXNet:
    ``ValueError``)."""


class ParameterMissingError(MXNetError, AssertionError):
    """A parameter of the block missing from the file being loaded (MXNet:
    ``AssertionError``)."""


class ParameterNotInBlockError(MXNetError, ValueError):
    """``Block.load_parameters``: the file holds a parameter the block lacks (MXNet:
    ``ValueError``)."""


class ParameterNotInDictError(MXNetError, AssertionError):
    """``ParameterDict.load``: the file holds a parameter the dict lacks (MXNet:
    ``AssertionError``)."""


class ParameterNotInitializedError(MXNetError, ValueError):
    """``reset_ctx`` on a parameter neither initialized nor waiting for deferred
    initialization (MXNet: ``ValueError``, which GluonCV's R-CNN builders catch)."""



def _shape_known(shape):
    return shape is not None and all(d > 0 for d in shape)


def _contexts(ctx):
    if ctx is None:
        return [current_context()]
    return [Context(c) for c in ctx] if isinstance(ctx, (list, tuple)) else [Context(ctx)]


class Parameter(MXNetPrivateNames):
    """A weight of a Block: data (per context), gradient, and how to initialize it.

    Example:
        >>> p = Parameter("fc_weight", shape=(4, 0), allow_deferred_init=True)
        >>> p
        Parameter fc_weight (shape=(4, 0), dtype=<class 'numpy.float32'>)
    """

    def __init__(self, name, grad_req="write", shape=None, dtype=np.float32, lr_mult=1.0,
                 wd_mult=1.0, init=None, allow_deferred_init=False, differentiable=True,
                 stype="default", grad_stype="default"):
        self.name = name
        self._shape = None if shape is None else (
            (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape))
        self.dtype = dtype  # as given: repr shows 'float32' or <class 'numpy.float32'>, as MXNet
        self.lr_mult, self.wd_mult = lr_mult, wd_mult
        self.init = init
        self.allow_deferred_init = allow_deferred_init
        self._differentiable = differentiable
        if stype != "default" or grad_stype != "default":
            raise MXNetError(f"Parameter {name!r}: sparse storage ({stype}/{grad_stype}) is not "
                             "supported by hybridgpu")
        self._data = None       # OrderedDict ctx -> NDArray
        self._grad = None       # OrderedDict ctx -> NDArray
        self._deferred_init = ()  # (init, contexts, default_init) while waiting for a shape
        self._var = None
        self._grad_req = None
        self.grad_req = grad_req if differentiable else "null"

    def __repr__(self):
        return f"{type(self).__name__} {self.name} (shape={self.shape}, dtype={self.dtype})"

    # -- attributes ---------------------------------------------------------------------
    @property
    def shape(self):
        """The shape; 0 marks a dimension not known yet."""
        return self._shape

    @shape.setter
    def shape(self, new_shape):
        new_shape = tuple(new_shape)
        if self._shape is None:
            self._shape = new_shape
            return
        ok = len(new_shape) == len(self._shape) and all(
            old in (0, new) for old, new in zip(self._shape, new_shape))
        if not ok:
            raise MXNetError(f"Parameter {self.name!r}: expected shape {self._shape} "
                             f"(0 = unknown) is incompatible with given shape {new_shape}")
        self._shape = new_shape

    @property
    def grad_req(self):
        """``'write'``, ``'add'`` or ``'null'``."""
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req):
        if req not in ("write", "add", "null"):
            raise MXNetError(f"Parameter {self.name!r}: grad_req must be 'write', 'add' or "
                             f"'null', got {req!r}")
        if not self._differentiable:
            req = "null"
        if self._grad_req == req:
            return
        self._grad_req = req
        if req == "null":
            self._grad = None
        elif self._data is not None:
            self._init_grad()

    # -- initialization -----------------------------------------------------------------
    def initialize(self, init=None, ctx=None, default_init=None, force_reinit=False):
        """Initialize data on ``ctx`` (a Context or list; default: the current context) with
        ``init``, else the Parameter's own ``init``, else ``default_init`` (Uniform)."""
        from .. import initializer

        if self._data is not None and not force_reinit:
            warnings.warn(f"Parameter {self.name!r} is already initialized, ignoring. Set "
                          "force_reinit=True to re-initialize.", stacklevel=2)
            return
        self._data = self._grad = None
        contexts = _contexts(ctx)
        default_init = default_init if default_init is not None else initializer.Uniform()
        chosen = default_init if init is None and self.init is None else (
            self.init if init is None else init)
        if not _shape_known(self._shape):
            if self.allow_deferred_init:
                self._deferred_init = (chosen, contexts, default_init)
                return
            raise MXNetError(f"Cannot initialize Parameter {self.name!r} because it has "
                             f"invalid shape: {self._shape}.")
        self._deferred_init = (chosen, contexts, default_init)
        self._finish_deferred_init()

    def _finish_deferred_init(self):
        """Run a pending initialization now that the shape is known."""
        if not self._deferred_init:
            return
        from .. import initializer

        init, contexts, default_init = self._deferred_init
        if not _shape_known(self._shape):
            raise DeferredShapeError(
                f"Deferred initialization failed because shape cannot be inferred: Parameter "
                f"{self.name!r} still has shape {self._shape} (0 = unknown) after the first "
                "forward; use it in an op that fixes its shape, or give the shape (in_units, "
                "in_channels, ...) when building the layer")
        data = nd.zeros(self._shape, ctx=cpu(), dtype=self.dtype)
        initializer.create(default_init)(
            initializer.InitDesc(self.name, {"__init__": init}), data)
        self._init_impl(data, contexts)
        self._deferred_init = ()

    def _init_impl(self, data, contexts):
        self._data = OrderedDict((ctx, data.copyto(ctx)) for ctx in contexts)
        numpy_parameters(self._data.values())  # mx.np arrays in NumPy mode
        self._init_grad()

    def _init_grad(self):
        if self._grad_req == "null" or self._data is None:
            self._grad = None
            for arr in (self._data or {}).values():
                arr._ag = None
            return
        self._grad = OrderedDict(
            (ctx, nd.zeros(arr.shape, ctx=ctx, dtype=arr.dtype)) for ctx, arr in self._data.items())
        numpy_parameters(self._grad.values())
        for ctx, arr in self._data.items():
            self._track(arr, self._grad[ctx])

    def _track(self, data, grad):
        """Make ``data`` an autograd variable whose gradient lands in ``grad``."""
        autograd.mark_variables([data], [grad], self._grad_req)

    # -- access -------------------------------------------------------------------------
    def _check_initialized(self):
        if self._data is not None:
            return
        if self._deferred_init:
            raise DeferredInitializationError(
                f"Parameter {self.name!r} has not been initialized yet because initialization "
                "was deferred. Actual initialization happens during the first forward pass. "
                "Please pass one batch of data through the network before accessing "
                "Parameters. You can also avoid deferred initialization by specifying "
                "in_units, num_features, etc., for network layers.")
        raise MXNetError(
            f"Parameter {self.name!r} has not been initialized. Note that you should "
            "initialize parameters and create Trainer with Block.collect_params() instead of "
            "Block.params because the later does not include Parameters of nested child Blocks")

    def data(self, ctx=None):
        """The data on ``ctx`` (default: the only context, else the current one), copied there
        from an initialized context on first use."""
        self._check_initialized()
        if ctx is None:
            if len(self._data) == 1:
                return next(iter(self._data.values()))
            ctx = current_context()
        ctx = Context(ctx)
        arr = self._data.get(ctx)
        if arr is None:  # MXNet raises here; hybridgpu copies (docs/gluon.md)
            arr = self._data[ctx] = next(iter(self._data.values())).copyto(ctx)
            if self._grad is not None:
                self._grad[ctx] = nd.zeros(arr.shape, ctx=ctx, dtype=arr.dtype)
                self._track(arr, self._grad[ctx])
        return arr

    def list_data(self):
        """The data on every context, in the order they were added."""
        self._check_initialized()
        return list(self._data.values())

    def grad(self, ctx=None):
        """The gradient buffer on ``ctx``."""
        if self._data is not None and self._grad is None:
            raise MXNetError(f"Cannot get gradient array for Parameter {self.name!r} because "
                             "grad_req='null'")
        self.data(ctx)  # checks initialization, makes the copy on ctx if needed
        if ctx is None:
            return next(iter(self._grad.values())) if len(self._grad) == 1 else self._grad[
                current_context()]
        return self._grad[Context(ctx)]

    def list_grad(self):
        """The gradient buffers on every context."""
        self._check_initialized()
        if self._grad is None:
            raise MXNetError(f"Cannot get gradient array for Parameter {self.name!r} because "
                             "grad_req='null'")
        return list(self._grad.values())

    def list_ctx(self):
        """The contexts holding data (or waiting for deferred initialization)."""
        if self._data is None:
            if self._deferred_init:
                return list(self._deferred_init[1])
            self._check_initialized()
        return list(self._data.keys())

    def zero_grad(self):
        """Set every gradient buffer to 0."""
        for g in (self._grad or {}).values():
            g[:] = 0

    def set_data(self, data):
        """Replace the data on every context with ``data`` (its shape completes this one's)."""
        self.shape = data.shape
        if self._data is None:
            if not self._deferred_init:
                raise MXNetError(f"Parameter {self.name!r} has not been initialized")
            data = data if isinstance(data, nd.NDArray) else nd.array(data, dtype=self.dtype)
            self._init_impl(data, self._deferred_init[1])
            self._deferred_init = ()
            return
        for arr in self._data.values():
            src = data if isinstance(data, nd.NDArray) else nd.array(data)
            with arr.context.scope():  # a copy on another device than the current one
                arr._data[...] = src.as_in_context(arr.context)._data  # not autograd-visible

    def reset_ctx(self, ctx):
        """Move the data (or the pending initialization) to ``ctx``."""
        contexts = _contexts(ctx)
        if self._data is not None:
            self._init_impl(self._reduce(), contexts)
        elif self._deferred_init:
            self._deferred_init = (self._deferred_init[0], contexts, self._deferred_init[2])
        else:
            raise ParameterNotInitializedError(
                f"Cannot reset context for Parameter {self.name!r} because it has not been "
                "initialized.")

    def cast(self, dtype):
        """Convert data and gradients to ``dtype``."""
        self.dtype = dtype
        self._var = None  # its variable carries the old dtype
        if self._data is None:
            return
        self._data = OrderedDict((c, a.astype(dtype)) for c, a in self._data.items())
        self._init_grad()

    def var(self):
        """A Symbol variable standing for this parameter (with its shape, dtype, lr/wd mult,
        init)."""
        from .. import symbol

        if self._var is None:
            self._var = symbol.var(self.name, shape=self._shape, dtype=self.dtype,
                                   lr_mult=self.lr_mult, wd_mult=self.wd_mult, init=self.init,
                                   stype="default")
        return self._var

    def _reduce(self):
        """The data as one cpu array (the mean of the copies when there are several)."""
        arrays = self.list_data()
        if len(arrays) == 1:
            return arrays[0].copyto(cpu())
        total = arrays[0].copyto(cpu())
        for arr in arrays[1:]:
            total += arr.copyto(cpu())
        return total / len(arrays)

    def _load_init(self, data, ctx, cast_dtype=False, dtype_source="current"):
        """Set data loaded from a file: checks the shape, casts the dtype if asked."""
        if self._shape is not None:
            known = all(a in (0, b) for a, b in zip(self._shape, data.shape))
            if len(self._shape) != len(data.shape) or not known:
                raise MXNetError(f"Failed loading Parameter {self.name!r} from saved params: "
                                 f"shape incompatible expected {self._shape} vs saved "
                                 f"{data.shape}")
        self._shape = tuple(data.shape)
        if np.dtype(self.dtype) != np.dtype(data.dtype):
            if not cast_dtype:
                raise MXNetError(f"Failed loading Parameter {self.name!r} from saved params: "
                                 f"dtype incompatible expected {np.dtype(self.dtype).name} vs "
                                 f"saved {np.dtype(data.dtype).name}. Set cast_dtype=True to "
                                 "cast the dtype of saved params.")
            if dtype_source == "saved":
                self.dtype = data.dtype
            else:
                data = data.astype(self.dtype)
        if self._data is None:
            contexts = self._deferred_init[1] if self._deferred_init else _contexts(ctx)
            self._init_impl(data, contexts if ctx is None else _contexts(ctx))
            self._deferred_init = ()
        else:
            self.set_data(data)


class Constant(Parameter):
    """A parameter that never changes (``grad_req='null'``), initialized to ``value``.

    Example:
        >>> import hybridgpu as mx
        >>> c = Constant("anchors", mx.nd.array([1, 2]))
        >>> c, c.grad_req
        (Constant anchors (shape=(2,), dtype=<class 'numpy.float32'>), 'null')
    """

    def __init__(self, name, value):
        from .. import initializer

        if not isinstance(value, nd.NDArray):
            value = nd.array(value)
        self.value = value
        super().__init__(name, grad_req="null", shape=value.shape, dtype=value.dtype,
                         init=initializer.Constant(value))

    @Parameter.grad_req.setter
    def grad_req(self, req):
        if req != "null":
            warnings.warn(f"Constant parameter {self.name!r} does not support grad_req other "
                          f"than 'null', and new value {req!r} is ignored.", stacklevel=2)
        Parameter.grad_req.fset(self, "null")


class ParameterDict:
    """An ordered dict of Parameters sharing a name prefix (MXNet's ``ParameterDict``).

    Example:
        >>> pd = ParameterDict("net_")
        >>> w = pd.get("weight", shape=(2, 2))
        >>> w.name, list(pd.keys())
        ('net_weight', ['net_weight'])
    """

    def __init__(self, prefix="", shared=None):
        self._prefix = prefix
        self._params = OrderedDict()
        self._shared = shared

    def __repr__(self):
        name = f"{self._prefix} " if self._prefix else ""
        body = "\n".join(f"  {p!r}" for p in self._params.values())
        return f"{name}(\n{body}\n)"

    def __getitem__(self, key):
        return self._params[key]

    def __iter__(self):
        return iter(self._params)

    def __len__(self):
        return len(self._params)

    def __contains__(self, key):
        return key in self._params

    def items(self):
        return self._params.items()

    def keys(self):
        return self._params.keys()

    def values(self):
        return self._params.values()

    @property
    def prefix(self):
        """The prefix of the names of parameters made by ``get``."""
        return self._prefix

    def _get_impl(self, name):
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._params[name]
        return None

    def get(self, name, **kwargs):
        """The Parameter ``prefix + name``, created with ``kwargs`` if it does not exist; an
        existing one must agree with them (unknown 0 dims are filled in)."""
        name = self._prefix + name
        param = self._get_impl(name)
        if param is None:
            param = self._params[name] = Parameter(name, **kwargs)
            return param
        for key, value in kwargs.items():
            existing = getattr(param, key, None)
            if existing is None or value is None:
                if value is not None:
                    setattr(param, key, value)
                continue
            if key == "shape":
                param._shape = _merged_shape(name, existing, tuple(value))
            elif key == "dtype" and np.dtype(value) == np.dtype(existing):
                continue
            elif value != existing:
                raise MXNetError(f"Cannot retrieve Parameter {name!r} because desired "
                                 f"attribute does not match with stored for attribute {key!r}: "
                                 f"desired {value!r} vs stored {existing!r}.")
        return param

    def get_constant(self, name, value=None):
        """The Constant ``prefix + name``, created from ``value`` if it does not exist."""
        name = self._prefix + name
        param = self._get_impl(name)
        if param is None:
            if value is None:
                raise KeyError(f"No constant named {name!r}. Please specify value if you want "
                               "to create a new constant.")
            param = self._params[name] = Constant(name, value)
        elif value is not None and not isinstance(param, Constant):
            raise MXNetError(f"Parameter {name!r} already exists but it is not a constant.")
        return param

    def update(self, other):
        """Add the parameters of ``other``; a name bound to another Parameter is an error."""
        for key, value in other.items():
            if key in self._params and self._params[key] is not value:
                raise MXNetError(f"Cannot update self with other because they have different "
                                 f"Parameters with the same name {key!r}")
            self._params[key] = value

    def initialize(self, init=None, ctx=None, verbose=False, force_reinit=False):
        """Initialize every parameter (``init`` is the default initializer)."""
        from .. import initializer

        init = initializer.Uniform() if init is None else initializer.create(init)
        if verbose:
            init.set_verbosity(verbose=verbose)
        for param in self.values():
            param.initialize(None, ctx, init, force_reinit=force_reinit)

    def zero_grad(self):
        """Set every gradient to 0."""
        for param in self.values():
            param.zero_grad()

    def reset_ctx(self, ctx):
        """Move every parameter to ``ctx``."""
        for param in self.values():
            param.reset_ctx(ctx)

    def setattr(self, name, value):
        """Set attribute ``name`` (e.g. ``grad_req``, ``lr_mult``) of every parameter."""
        for param in self.values():
            setattr(param, name, value)

    def list_ctx(self):
        """Every context used by some parameter."""
        seen = []
        for param in self.values():
            seen += [c for c in param.list_ctx() if c not in seen]
        return seen

    def save(self, filename, strip_prefix=""):
        """Save every parameter's data (one cpu copy each) under its name, with
        ``strip_prefix`` removed (MXNet's format)."""
        arrays = {}
        for param in self.values():
            if strip_prefix and not param.name.startswith(strip_prefix):
                raise MXNetError(f"Prefix {strip_prefix!r} is to be striped before saving, but "
                                 f"Parameter's name {param.name!r} does not start with it.")
            arrays[param.name[len(strip_prefix):]] = param._reduce()
        nd.save(filename, arrays)

    def load(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
             restore_prefix="", cast_dtype=False, dtype_source="current"):
        """Load parameters saved by ``save`` (or by MXNet's ``export``: ``arg:``/``aux:``
        prefixes are dropped)."""
        loaded = {restore_prefix + _strip_kind(k): v for k, v in _load_dict(filename).items()}
        if not allow_missing:
            for name in self.keys():
                if name not in loaded:
                    raise ParameterMissingError(
                        f"Parameter {name!r} is missing in file {filename!r}, "
                        f"which contains parameters: {_few(loaded)}. Set "
                        "allow_missing=True to ignore missing parameters.")
        for name, value in loaded.items():
            if name not in self._params:
                if not ignore_extra:
                    raise ParameterNotInDictError(
                        f"Parameter {name!r} loaded from file {filename!r} is not present in "
                        f"ParameterDict, choices are: {_few(self)}. Set ignore_extra=True to "
                        "ignore.")
                continue
            self[name]._load_init(value, ctx, cast_dtype=cast_dtype, dtype_source=dtype_source)


def _merged_shape(name, stored, desired):
    """Two shapes that agree where both are known (0 = unknown), merged; else MXNetError."""
    if len(stored) == len(desired) and all(a == b or 0 in (a, b)
                                           for a, b in zip(stored, desired)):
        return tuple(max(a, b) for a, b in zip(stored, desired))
    raise MXNetError(f"Cannot retrieve Parameter {name!r} because desired attribute does not "
                     f"match with stored for attribute 'shape': desired {desired} vs stored "
                     f"{stored}.")


def _strip_kind(key):
    return re.sub(r"^(arg|aux):", "", key)


def _load_dict(filename):
    loaded = nd.load(filename)
    if isinstance(loaded, list):
        if loaded:
            raise MXNetError(f"{filename!r} holds a list of arrays without names; parameters "
                             "need a file saved from a dict")
        return {}
    return loaded


def _few(names):
    names = list(names)
    return ", ".join(names[:10]) + (f", ... ({len(names)} in all)" if len(names) > 10 else "")
