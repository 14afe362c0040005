"""``Block``: the base of every Gluon layer and model (MXNet 1.x's API): naming, children,
parameters, initialization, saving and loading, hooks.

Example:
    >>> import hybridgpu as mx
    >>> class Scale(Block):
    ...     def __init__(self, **kwargs):
    ...         super().__init__(**kwargs)
    ...         with self.name_scope():
    ...             self.k = self.params.get("k", shape=(1,), init="ones")
    ...     def forward(self, x):
    ...         return x * self.k.data(x.context)
    >>> with mx.name.NameManager():
    ...     net = Scale()
    >>> net.initialize()
    >>> net.prefix, net(mx.nd.array([2.0])).item()
    ('scale0_', 2.0)
"""

from __future__ import annotations

import re
import threading
import warnings
import weakref
from collections import OrderedDict

from .. import ndarray as nd
from ..base import MXNetError
from .block_scope import BlockScope
from .parameter import Parameter, ParameterDict, ParameterMissingError, ParameterNotInBlockError

__all__ = ["Block", "HookHandle"]


def _indent(text, spaces):
    lines = text.split("\n")
    return "\n".join([lines[0]] + [" " * spaces + line for line in lines[1:]])


class HookHandle:
    """Removes a hook registered with ``register_forward_(pre_)hook``; also a ``with`` block."""

    _ids = iter(range(1 << 62))
    _lock = threading.Lock()

    def __init__(self, hooks):
        self._hooks = weakref.ref(hooks)
        with HookHandle._lock:
            self.id = next(HookHandle._ids)

    def detach(self):
        hooks = self._hooks()
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.detach()


class Block:
    """Base class of layers and models; override ``forward``.

    Children assigned as attributes (``self.dense = nn.Dense(2)``) and Parameters are
    registered automatically; ``prefix``/``params`` control naming and sharing as in MXNet.
    """

    def __init__(self, prefix=None, params=None):
        self._empty_prefix = prefix == ""
        self._prefix, self._params = BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith("_") else self._prefix
        self._scope = BlockScope(self)
        self._children = OrderedDict()
        self._reg_params = {}
        self._forward_hooks = OrderedDict()
        self._forward_pre_hooks = OrderedDict()

    def _alias(self):
        return type(self).__name__.lower()

    def __repr__(self):
        body = "\n".join(f"  ({key}): {_indent(repr(block), 2)}"
                         for key, block in self.__dict__.items() if isinstance(block, Block))
        return f"{type(self).__name__}(\n{body}\n)"

    def __setattr__(self, name, value):
        if hasattr(self, name):
            existing = getattr(self, name)
            if isinstance(existing, (Parameter, Block)) and not isinstance(value, type(existing)):
                raise TypeError(f"Changing attribute type for {name} from {type(existing)} to "
                                f"{type(value)} is not allowed.")
        if isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            if name in self.__dict__.get("_reg_params", {}):
                raise MXNetError(f"Overriding Parameter attribute {name} is not allowed. If you "
                                 "want to share parameters between blocks, please set 'params' "
                                 "at Block construction instead.")
            self._reg_params[name] = value
        super().__setattr__(name, value)

    # -- naming and structure -------------------------------------------------------------
    @property
    def prefix(self):
        """The prefix of this block's parameter and symbol names (``dense0_``)."""
        return self._prefix

    @property
    def name(self):
        """The prefix without its trailing underscore (``dense0``)."""
        return self._name

    @property
    def params(self):
        """This block's own ParameterDict (children's parameters not included)."""
        return self._params

    def name_scope(self):
        """``with block.name_scope():`` names children and symbols under this block's
        prefix."""
        return self._scope

    def register_child(self, block, name=None):
        """Register ``block`` as a child (attribute assignment does this)."""
        if name is None:
            name = str(len(self._children))
        self._children[name] = block

    def collect_params(self, select=None):
        """A ParameterDict of this block's and its descendants' parameters; ``select`` is a
        regular expression on names (``'.*weight|.*bias'``)."""
        out = ParameterDict(self._params.prefix)
        pattern = re.compile(select) if select else None
        out.update({k: v for k, v in self._params.items() if not pattern or pattern.match(k)})
        for child in self._children.values():
            out.update(child.collect_params(select=select))
        return out

    def _collect_params_with_prefix(self, prefix=""):
        """``{structural name: Parameter}`` (``'0.weight'``, ``'d.bias'``): the names
        ``save_parameters`` writes."""
        if prefix:
            prefix += "."
        out = {prefix + key: value for key, value in self._reg_params.items()}
        for name, child in self._children.items():
            out.update(child._collect_params_with_prefix(prefix + name))
        return out

    # -- parameters ---------------------------------------------------------------------
    def initialize(self, init=None, ctx=None, verbose=False, force_reinit=False):
        """Initialize every parameter of this block and its children."""
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def zero_grad(self):
        """Set every gradient of this block's parameters to 0."""
        self.collect_params().zero_grad()

    def reset_ctx(self, ctx):
        """Move every parameter to ``ctx``."""
        self.collect_params().reset_ctx(ctx)

    def cast(self, dtype):
        """Convert every parameter (and child) to ``dtype``."""
        for child in self._children.values():
            child.cast(dtype)
        for param in self.params.values():
            param.cast(dtype)

    def apply(self, fn):
        """Call ``fn(block)`` on every descendant, then on this block; returns self."""
        for child in self._children.values():
            child.apply(fn)
        fn(self)
        return self

    def save_parameters(self, filename, deduplicate=False):
        """Save parameters under their structural names (MXNet's ``.params`` format)."""
        params = self._collect_params_with_prefix()
        if deduplicate:  # a shared parameter is saved once, under its last name (as MXNet)
            last = {id(v): k for k, v in params.items()}
            params = {k: v for k, v in params.items() if last[id(v)] == k}
        nd.save(filename, {key: param._reduce() for key, param in params.items()})

    def load_parameters(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
                        cast_dtype=False, dtype_source="current"):
        """Load parameters saved by ``save_parameters`` (or, for files of full names, by
        ``collect_params().save``)."""
        loaded = nd.load(filename)
        if isinstance(loaded, list):
            loaded = {} if not loaded else _unnamed(filename)
        params = self._collect_params_with_prefix()
        if not loaded and not params:
            return
        if not any("." in key for key in loaded):  # full names: MXNet's legacy format
            if not allow_missing:
                _check_legacy_names(self, filename, loaded)
            self.collect_params().load(filename, ctx, allow_missing, ignore_extra, self.prefix,
                                       cast_dtype=cast_dtype, dtype_source=dtype_source)
            return
        if not allow_missing:
            present = {id(params[n]) for n in loaded if n in params}  # shared: any name counts
            for name in params:
                if name not in loaded and id(params[name]) not in present:
                    raise ParameterMissingError(
                        f"Parameter {name!r} is missing in file {filename!r}, which contains "
                        f"parameters: {sorted(loaded)[:10]}. Set allow_missing=True to ignore "
                        "missing parameters.")
        for name, value in loaded.items():
            if name not in params:
                if not ignore_extra:
                    raise ParameterNotInBlockError(
                        f"Parameter {name!r} loaded from file {filename!r} is not present in "
                        f"this block, which has parameters {sorted(params)[:10]}. Set "
                        "ignore_extra=True to ignore.")
                continue
            params[name]._load_init(value, ctx, cast_dtype=cast_dtype, dtype_source=dtype_source)

    def save_params(self, filename):
        """Deprecated MXNet name of ``collect_params().save(filename, prefix)``."""
        warnings.warn("save_params is deprecated. Please use save_parameters.", stacklevel=2)
        self.collect_params().save(filename, strip_prefix=self.prefix)

    def load_params(self, filename, ctx=None, allow_missing=False, ignore_extra=False):
        """Deprecated MXNet name of ``load_parameters``."""
        warnings.warn("load_params is deprecated. Please use load_parameters.", stacklevel=2)
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

    # -- calling --------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook):
        """Call ``hook(block, inputs)`` before every forward; returns a HookHandle."""
        handle = HookHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle.id] = hook
        return handle

    def register_forward_hook(self, hook):
        """Call ``hook(block, inputs, outputs)`` after every forward; returns a HookHandle."""
        handle = HookHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = hook
        return handle

    def __call__(self, *args):
        if self._forward_pre_hooks:
            for hook in list(self._forward_pre_hooks.values()):
                hook(self, args)
        out = self.forward(*args)
        if self._forward_hooks:
            for hook in list(self._forward_hooks.values()):
                hook(self, args, out)
        return out

    def forward(self, *args):
        """The computation; override it."""
        raise NotImplementedError(f"{type(self).__name__} must implement forward")

    def hybridize(self, active=True, **kwargs):
        """Hybridize every HybridBlock among the descendants (a plain Block runs as it is)."""
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    def summary(self, *inputs):
        """Print a table of each layer's output shape and parameter count for ``inputs``."""
        from .summary import print_summary

        print_summary(self, inputs)


def _check_legacy_names(block, filename, loaded):
    """ParameterMissingError when a file of names without dots (``save_params`` writes the
    names less the block's prefix, ``collect_params().save`` the full names) lacks one of
    ``block``'s parameters; says which kind of file it looks like and how to load it."""
    names = [re.sub(r"^(arg|aux):", "", key) for key in loaded]
    params = list(block.collect_params().keys())
    wanted = {name[len(block.prefix):]: name for name in params if name.startswith(block.prefix)}
    missing = [(short, full) for short, full in wanted.items() if short not in names]
    missing += [(name, name) for name in params if not name.startswith(block.prefix)]
    if not missing:
        return
    held = ", ".join(names[:10]) + (f", ... ({len(names)} in all)" if len(names) > 10 else "")
    example = next(iter(block._collect_params_with_prefix()), "weight")
    relative = (f"names relative to the block (save_parameters' structural names such as "
                f"{example!r}, or save_params' names less the prefix {block.prefix!r})")
    head = f"{type(block).__name__} {block.name!r}: "
    tail = ". Set allow_missing=True to ignore missing parameters."
    if any(n in set(params) for n in names):
        raise ParameterMissingError(
            f"{head}file {filename!r} holds full parameter names ({held}), as "
            f"collect_params().save(filename) writes them, but load_parameters reads {relative}, "
            f"so it finds no {missing[0][0]!r} (parameter {missing[0][1]!r}); load this file with "
            f"net.collect_params().load(filename), or save with net.save_parameters(filename)"
            f"{tail}")
    raise ParameterMissingError(
        f"{head}Parameter {missing[0][1]!r} is missing in file {filename!r} (as "
        f"{missing[0][0]!r}), which holds {held}; "
        f"load_parameters reads {relative}{tail}")


def _unnamed(filename):
    raise MXNetError(f"{filename!r} holds a list of arrays without names; load_parameters "
                     "needs a file saved from a dict (save_parameters)")
