"""``OpDef``: every fact about one operator, and the registry that holds them.

An OpDef carries MXNet's op name (the name written to JSON) and aliases, input names (which of
them are auxiliary states), the attribute schema, ``compute(xp, *arrays, **attrs)`` for NumPy and
CuPy, shape and dtype inference, the gradient written as ops, the CUDA C expression of an
elementwise op, and the properties compiler passes ask about.

Conventions (every op module follows them):

* ``inputs`` names every input in MXNet's order; ``input_filter(attrs)`` returns the ones in
  use when some are optional (``bias`` with ``no_bias=True``); ``aux`` names auxiliary states.
* ``compute(xp, *arrays, **attrs)`` returns one array or a tuple of all outputs. Random ops also
  get ``rng=`` (a ``RandomState`` of ``xp``); mode-dependent ops get ``is_train=``.
* ``infer_shape(attrs, in_shapes) -> (in_shapes, out_shapes)``: a shape is a tuple, ``None`` when
  unknown, and a ``0`` dimension is unknown (deferred init). Inputs it can complete (a weight from
  the data shape) come back filled.
* ``infer_type(attrs, in_types) -> (in_types, out_types)``: dtype names, ``None`` when unknown.
* ``grad(F, ins, outs, out_grads, **attrs) -> [grad or None per input]``, built only from ``F.*``
  ops and operators, so it works with ``F = nd`` (eager) and ``F = sym`` (graphs).
* ``cuda``: for elementwise ops, a C expression over ``in0, in1, ...`` and attribute names, of
  type ``T`` (the output's C type), e.g. ``"in0 + (T)scalar"``; or a dict of such expressions
  keyed by the value of the attribute ``cuda_key`` (``Activation``: one per ``act_type``).
  Ask ``cuda_for(attrs)``.
* ``input_init``: ``{input name: initializer JSON string}`` written as ``__init__`` on variables
  that ``sym.<op>`` creates for missing inputs (``{"moving_var": '["one", {}]'}``).
* ``host_sync``: True, or ``host_sync(attrs) -> bool`` when only some attributes need values on
  the host (``take(mode='raise')``). Ask ``needs_host_sync(attrs)``.
* ``lower``: how a backend emits the op into a generated program (``ops/lowering.py``): a
  ``Lowering`` for the ``"array"`` target (array-module calls writing into given outputs, for
  NumPy and CuPy alike), or a dict ``{target: lowering}`` when a backend adds its own (a CUDA
  kernel template). Ask ``lowering_for(target)``; ops without one run ``compute``.
* ``views``: ``compute`` may return a view of an input (``Reshape``, ``transpose``): a memory
  planner keeps the input's buffer alive while the result lives. Ops with a lowering are
  planned from it; for the others the planner assumes a view unless ``views=False``.

Example:
    >>> from hybridgpu import ops
    >>> fc = ops.get("FullyConnected")
    >>> fc.infer_shape(fc.parse_attrs({"num_hidden": 10}), [(2, 5), None, None])[0]
    [(2, 5), (10, 5), (10,)]
"""

from __future__ import annotations

import difflib

from ..base import MXNetError
from .attrs import REQUIRED, Attr, AttrError, Int

__all__ = ["OpDef", "register", "get", "all_ops", "exists"]

_REGISTRY: dict[str, OpDef] = {}
_UNIQUE: list[OpDef] = []


class OpDef:
    """The definition of one operator; see the module docstring for the conventions.

    Example:
        >>> import numpy as np
        >>> from hybridgpu.ops.rules import same_shape
        >>> op = OpDef("_demo_double", compute=lambda xp, x: x * 2, cuda="in0 * (T)2",
        ...            infer_shape=same_shape, elementwise=True)
        >>> op.compute(np, np.ones(2)), op.infer_shape({}, [(2,)])
        (array([2., 2.]), ([(2,)], [(2,)]))
    """

    def __init__(self, name, *, compute, inputs=("data",), input_filter=None, aux=(), attrs=None,
                 infer_shape=None,
                 infer_type=None, grad=None, cuda=None, aliases=(), num_outputs=1,
                 num_visible_outputs=None, output_names=None, variadic=False, doc="",
                 example="", elementwise=False, random=False, mode_dependent=False,
                 mutates_aux=False, host_sync=False, creation=False, differentiable=True,
                 nondiff_inputs=(), cuda_key=None, input_init=None, lower=None, views=True):
        self.name = name
        self.aliases = tuple(aliases)
        self.inputs = tuple(inputs)        # every input name, in MXNet's order
        self._input_filter = input_filter  # attrs -> the names in use (bias goes with no_bias)
        self.aux = tuple(aux)
        self.attrs: dict[str, Attr] = dict(attrs or {})
        if variadic and "num_args" not in self.attrs:
            self.attrs["num_args"] = Int(default=None, doc="number of inputs (set automatically)")
        self.compute = compute
        self._infer_shape = infer_shape
        self._infer_type = infer_type
        self.grad = grad
        self.cuda = cuda
        self.cuda_key = cuda_key  # with a dict ``cuda``: the attribute that selects the entry
        self._num_outputs = num_outputs
        self._num_visible = num_visible_outputs
        self._output_names = output_names
        self.variadic = variadic
        self.doc = doc
        self.example = example
        self.elementwise = elementwise      # same-shape or broadcasting, one C expression
        self.random = random                # draws random numbers (compute gets rng=)
        self.mode_dependent = mode_dependent  # behaves differently in train mode (is_train=)
        self.mutates_aux = mutates_aux      # writes its auxiliary states in place (BatchNorm)
        self.host_sync = host_sync          # needs values on the host (cannot be captured)
        self.creation = creation            # makes an array from attributes alone (no inputs)
        self.differentiable = differentiable and grad is not None
        self.nondiff_inputs = tuple(nondiff_inputs)  # inputs that never get a gradient
        # input name -> MXNet's ``__init__`` string for a variable the op creates itself
        # (BatchNorm's moving_mean is '["zero", {}]'); Gluon and JSON read it.
        self.input_init = dict(input_init or {})
        self.plain = not (random or mode_dependent)  # compute needs nothing but arrays, attrs
        self.lowerings = dict(lower) if isinstance(lower, dict) else (
            {} if lower is None else {"array": lower})  # target -> how a backend emits it
        self.views = views                  # compute may return a view of an input

    # -- inputs and outputs -------------------------------------------------------------
    def input_names(self, attrs):
        """Names of the inputs for these attributes (``bias`` disappears with ``no_bias``)."""
        if self.variadic:
            return tuple(f"arg{i}" for i in range(attrs.get("num_args") or 0))
        if self._input_filter is not None:
            return tuple(self._input_filter(attrs))
        return self.inputs

    def num_outputs(self, attrs):
        """How many arrays ``compute`` returns."""
        n = self._num_outputs
        return n(attrs) if callable(n) else n

    def num_visible_outputs(self, attrs):
        """How many outputs users see (BatchNorm computes 3, shows 1 unless asked)."""
        n = self._num_visible
        if n is None:
            return self.num_outputs(attrs)
        return n(attrs) if callable(n) else n

    def output_names(self, attrs):
        """MXNet's output names: ``output`` for one, ``output0, output1, ...`` for several."""
        if self._output_names is not None:
            names = self._output_names
            return tuple(names(attrs) if callable(names) else names)
        n = self.num_outputs(attrs)
        return ("output",) if n == 1 else tuple(f"output{i}" for i in range(n))

    def cuda_for(self, attrs):
        """The CUDA C expression of this op with these attributes, or None."""
        if isinstance(self.cuda, dict):
            return self.cuda.get(attrs.get(self.cuda_key))
        return self.cuda

    def lowering_for(self, target="array"):
        """How a backend of ``target`` emits this op (``ops/lowering.py``), or None."""
        return self.lowerings.get(target)

    def needs_host_sync(self, attrs):
        """True when running the op with these attributes reads values on the host."""
        return bool(self.host_sync(attrs) if callable(self.host_sync) else self.host_sync)

    # -- attributes ---------------------------------------------------------------------
    def parse_attrs(self, given, num_inputs=None):
        """Validate and complete attributes from Python values or MXNet's strings.

        Unknown names raise MXNetError listing the valid ones; names that start with ``__``
        (MXNet's graph-level attributes such as ``__lr_mult__``) are ignored here.
        """
        attrs = {}
        for key, value in given.items():
            if key.startswith("__") and key.endswith("__"):
                continue
            spec = self.attrs.get(key)
            if spec is None:
                hint = difflib.get_close_matches(key, self.attrs, n=1)
                raise MXNetError(
                    f"{self.name}: unknown attribute {key!r}"
                    + (f" (did you mean {hint[0]!r}?)" if hint else "")
                    + f"; valid attributes are {sorted(self.attrs) or 'none'}")
            try:
                attrs[key] = spec.parse(value)
            except AttrError as err:
                raise MXNetError(f"{self.name}: attribute {key!r}: {err}") from None
        if self.variadic:
            if attrs.get("num_args") is None:
                attrs["num_args"] = num_inputs
            elif num_inputs is not None and attrs["num_args"] != num_inputs:
                raise MXNetError(f"{self.name}: num_args={attrs['num_args']} but "
                                 f"{num_inputs} inputs were given")
        for key, spec in self.attrs.items():
            if key not in attrs:
                if spec.default is REQUIRED:
                    raise MXNetError(f"{self.name}: required attribute {key!r} is missing "
                                     f"(expected {spec.kind})")
                attrs[key] = spec.default
        return attrs

    def format_attrs(self, attrs):
        """``attrs`` (pass the ones the user gave: MXNet writes only those) as the strings
        MXNet writes in JSON."""
        return {key: self.attrs[key].format(value) if key in self.attrs else str(value)
                for key, value in attrs.items()}

    # -- inference ----------------------------------------------------------------------
    def infer_shape(self, attrs, in_shapes):
        """``(in_shapes, out_shapes)``; raises MXNetError naming the op on a conflict."""
        in_shapes = [None if s is None else tuple(s) for s in in_shapes]
        if self._infer_shape is None:
            raise MXNetError(f"{self.name}: no shape inference is defined")
        try:
            ins, outs = self._infer_shape(attrs, in_shapes)
        except MXNetError as err:
            if str(err).startswith(self.name):
                raise
            raise MXNetError(f"{self.name}: {err}") from None
        except (ValueError, IndexError, TypeError, ZeroDivisionError) as err:
            raise MXNetError(f"{self.name}: cannot infer shapes from inputs "
                             f"{in_shapes} with {attrs}: {err}") from None
        return [None if s is None else tuple(s) for s in ins], [
            None if s is None else tuple(s) for s in outs]

    def infer_type(self, attrs, in_types):
        """``(in_types, out_types)``: every input and output the same dtype unless defined."""
        if self._infer_type is not None:
            return self._infer_type(attrs, list(in_types))
        known = [t for t in in_types if t is not None]
        for t in known[1:]:
            if t != known[0]:
                raise MXNetError(f"{self.name}: inputs have different dtypes {in_types}; "
                                 "cast them to one dtype first")
        dtype = known[0] if known else None
        return [dtype] * len(in_types), [dtype] * self.num_outputs(attrs)

    # -- docs ---------------------------------------------------------------------------
    def docstring(self):
        """The docstring of the generated ``nd.<name>`` / ``sym.<name>`` functions."""
        lines = [self.doc or f"The {self.name} operator.", ""]
        lines.append(f"MXNet op name: ``{self.name}``"
                     + (f" (aliases: {', '.join(self.aliases)})" if self.aliases else ""))
        label = "any number (variadic)" if self.variadic else ", ".join(self.inputs) or "none"
        lines.append(f"Inputs: {label}")
        if self.attrs:
            lines.append("Attributes:")
            for key, spec in self.attrs.items():
                lines.append(f"    {key} ({spec!r}){': ' + spec.doc if spec.doc else ''}")
        if self.example:
            lines += ["", "Example:", *("    " + ln for ln in self.example.strip().splitlines())]
        return "\n".join(lines)

    def __repr__(self):
        return f"<OpDef {self.name}>"


def register(op):
    """Add ``op`` under its name and aliases; a name may be registered only once."""
    for key in (op.name, *op.aliases):
        if key in _REGISTRY:
            raise ValueError(f"op name {key!r} is registered twice")
        _REGISTRY[key] = op
    _UNIQUE.append(op)
    return op


def get(name):
    """The OpDef called ``name`` (its MXNet name or an alias)."""
    op = _REGISTRY.get(name)
    if op is None:
        hint = difflib.get_close_matches(name, _REGISTRY, n=3)
        raise MXNetError(f"unknown operator {name!r}"
                         + (f"; did you mean {', '.join(hint)}?" if hint else ""))
    return op


def exists(name):
    """True when an op is registered under ``name``."""
    return name in _REGISTRY


def all_ops():
    """Every registered OpDef once, in registration order."""
    return list(_UNIQUE)
