"""Build the ``nd.*`` functions from the op registry: real functions with a signature and
docstring taken from each OpDef (no generated source is executed).

Positional arguments bind to the op's inputs, then to its attributes in declaration order, as
in MXNet (``nd.clip(x, 0, 1)``, ``nd.FullyConnected(x, w, b, 10)``); ``out=`` writes the result
into an existing array; ops without inputs take ``ctx=``.

Example:
    >>> import inspect
    >>> from hybridgpu import ops
    >>> clip = make_function(ops.get("clip"), "clip")
    >>> clip.__name__, str(inspect.signature(clip))
    ('clip', '(data=None, a_min=REQUIRED, a_max=REQUIRED, *, out=None, name=None)')
"""

from __future__ import annotations

from ..base import ArgumentTypeError, MXNetError, missing_name_hook
from ..context import Context
from ..ops.calling import bind_arguments, functions_of, namespace_of, signature
from .imperative import invoke

__all__ = ["make_function", "namespace_of", "populate"]  # namespace_of: from ops.calling



def _signature(op):
    keywords = ["out", "ctx", "name"] if not op.inputs and not op.variadic else ["out", "name"]
    return signature(op, keywords)

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
            raise ArgumentTypeError(_wrong_input(op, name, value, kind))
    return values


def _wrong_input(op, name, value, kind):
    """Why ``value`` cannot be input ``name`` of ``op`` (and, for a Symbol, what to call)."""
    got = type(value).__name__
    message = f"{op.name}: input {name!r} must be an {kind}, got {got}"
    if got == "Symbol":
        return (f"{message}: nd.{op.name} was called while hybrid_forward is traced with "
                f"Symbols; write F.{op.name}(...) instead: F is mx.nd when the block runs "
                f"imperatively and mx.sym when it is hybridized, so F.{op.name} works in both")
    if hasattr(value, "__array__"):
        return f"{message}; convert it with mx.nd.array(...) first"
    return message


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


def populate(namespace, submodule=""):
    """Put an ``nd`` function for every op name of ``submodule`` into ``namespace`` (see
    ``ops.calling.functions_of`` for which names go where)."""
    for op, name in functions_of(submodule):
        namespace[name] = make_function(op, name)
    public = "mx.nd" + (f".{submodule}" if submodule else "")
    namespace.setdefault("__getattr__", missing_name_hook(namespace, public))
    return namespace
