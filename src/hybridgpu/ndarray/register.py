"""Build the ``nd.*`` functions from the op registry: real functions with a signature and
docstring taken from each OpDef (no generated source is executed).

Positional arguments bind to the op's inputs, then to its attributes in declaration order, as
in MXNet (``nd.clip(x, 0, 1)``, ``nd.FullyConnected(x, w, b, 10)``); ``out=`` writes the result
into an existing array; ops without inputs take ``ctx=``.

Example:
    >>> from hybridgpu import ops
    >>> clip = make_function(ops.get("clip"), "clip")
    >>> clip.__name__, str(inspect.signature(clip))
    ('clip', '(data=None, a_min=REQUIRED, a_max=REQUIRED, *, out=None, name=None)')
"""

from __future__ import annotations

import inspect

from ..base import MXNetError
from ..context import Context
from ..ops.calling import bind_arguments
from .imperative import invoke

__all__ = ["make_function", "namespace_of", "populate"]

_P = inspect.Parameter


def _signature(op):
    """Inputs (default None), then attributes (required ones show ``REQUIRED``), then
    ``out``/``ctx``/``name`` keywords, like MXNet's generated signatures."""
    attr_kind = _P.KEYWORD_ONLY if op.variadic else _P.POSITIONAL_OR_KEYWORD
    if op.variadic:
        params = [_P("data", _P.VAR_POSITIONAL)]
    else:
        params = [_P(n, _P.POSITIONAL_OR_KEYWORD, default=None) for n in op.inputs]
    params += [_P(key, attr_kind, default=spec.default)
               for key, spec in op.attrs.items() if key != "num_args"]
    params.append(_P("out", _P.KEYWORD_ONLY, default=None))
    if not op.inputs and not op.variadic:
        params.append(_P("ctx", _P.KEYWORD_ONLY, default=None))
    params.append(_P("name", _P.KEYWORD_ONLY, default=None))
    return inspect.Signature(params)


def select_inputs(op, inputs, attrs, is_input, kind):
    """The ordered input list for ``attrs``; MXNetError naming a missing or unused input."""
    if op.variadic:
        values = inputs
        names = [f"arg{i}" for i in range(len(values))]
    else:
        names = op.input_names(attrs)
        extra = [n for n, v in inputs.items() if v is not None and n not in names]
        if extra:
            raise MXNetError(f"{op.name}: input {extra[0]!r} is not used with these attributes "
                             f"({', '.join(f'{k}={v!r}' for k, v in attrs.items())})")
        values = [inputs.get(n) for n in names]
    for name, value in zip(names, values):
        if value is None:
            raise MXNetError(f"{op.name}: input {name!r} is missing")
        if not is_input(value):
            raise TypeError(f"{op.name}: input {name!r} must be an {kind}, got "
                            f"{type(value).__name__}")
    return values


def make_function(op, name):
    """The ``nd.<name>`` function for ``op``."""
    from .ndarray import NDArray

    def is_input(value):
        return isinstance(value, NDArray)

    def function(*args, **kwargs):
        out = kwargs.pop("out", None)
        ctx = kwargs.pop("ctx", None)
        kwargs.pop("name", None)
        inputs, given = bind_arguments(op, args, kwargs)
        attrs = op.parse_attrs(given, len(inputs) if op.variadic else None)
        values = select_inputs(op, inputs, attrs, is_input, "NDArray")
        return invoke(op, values, attrs, out=out,
                      ctx=None if ctx is None else Context(ctx) if isinstance(ctx, Context)
                      else _parse_context(ctx))

    function.__name__ = function.__qualname__ = name
    function.__doc__ = op.docstring()
    function.__signature__ = _signature(op)
    function.__module__ = "hybridgpu.ndarray"
    function.opdef = op
    return function


def _parse_context(text):
    """``'cpu(0)'`` or ``'gpu(1)'`` (as MXNet writes ``ctx`` attributes) to a Context."""
    text = str(text).strip()
    if text.endswith(")") and "(" in text:
        kind, _, num = text[:-1].partition("(")
        return Context(kind, int(num))
    return Context(text)


def namespace_of(name):
    """``(submodule, public name)`` for an op name: ``_linalg_gemm2`` -> ``('linalg', 'gemm2')``,
    ``_random_uniform`` -> ``('random', 'uniform')``, ``relu`` -> ``('', 'relu')``."""
    for prefix, module in (("_linalg_", "linalg"), ("_random_", "random"),
                           ("_contrib_", "contrib")):
        if name.startswith(prefix):
            return module, name[len(prefix):]
    return "", name


def populate(namespace, submodule=""):
    """Put a function for every op name that belongs to ``submodule`` into ``namespace``.

    Top level (``''``) gets every name outside the submodules, ``_plus_scalar`` too (gradient
    code calls ``F._plus_scalar`` with ``F`` = nd or sym); ``'_internal'`` gets every name
    starting with ``_``; ``'linalg'``, ``'random'``, ``'contrib'`` get their prefixed ops without
    the prefix (``_linalg_gemm2`` -> ``linalg.gemm2``).
    """
    from .. import ops

    for op in ops.all_ops():
        for name in (op.name, *op.aliases):
            module, public = namespace_of(name)
            if submodule == "_internal":
                if name.startswith("_"):
                    namespace[name] = make_function(op, name)
            elif module == submodule:
                namespace[public] = make_function(op, public)
    return namespace
