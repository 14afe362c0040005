"""What ``nd.*`` and ``sym.*`` share about generated op functions: which names go into which
namespace, their signatures, and how a call's arguments map to the op's inputs and attributes.
"""

from __future__ import annotations

import inspect

__all__ = ["bind_arguments", "namespace_of", "functions_of", "signature"]

_P = inspect.Parameter


def namespace_of(name):
    """``(submodule, public name)`` for an op name: ``_linalg_gemm2`` -> ``('linalg', 'gemm2')``,
    ``_random_uniform`` -> ``('random', 'uniform')``, ``relu`` -> ``('', 'relu')``.

    Example:
        >>> namespace_of("_linalg_gemm2"), namespace_of("relu")
        (('linalg', 'gemm2'), ('', 'relu'))
    """
    for prefix, module in (("_linalg_", "linalg"), ("_random_", "random"),
                           ("_contrib_", "contrib"), ("_image_", "image")):
        if name.startswith(prefix):
            return module, name[len(prefix):]
    return "", name


def functions_of(submodule):
    """``(op, name)`` pairs of the functions a namespace holds: top level (``''``) every name
    outside the submodules (``_plus_scalar`` too: gradient code calls ``F._plus_scalar``);
    ``'_internal'`` every name starting with ``_``; ``'linalg'``, ``'random'``, ``'contrib'``
    their prefixed ops without the prefix (``_linalg_gemm2`` -> ``gemm2``)."""
    from . import all_ops

    for op in all_ops():
        for name in (op.name, *op.aliases):
            module, public = namespace_of(name)
            if submodule == "_internal":
                if name.startswith("_"):
                    yield op, name
            elif module == submodule:
                yield op, public


def signature(op, keywords):
    """Inputs (default None; ``*data`` for variadic ops), then attributes (required ones show
    ``REQUIRED``), then the keyword-only ``keywords`` (default None), like MXNet's generated
    signatures."""
    attr_kind = _P.KEYWORD_ONLY if op.variadic else _P.POSITIONAL_OR_KEYWORD
    if op.variadic:
        params = [_P("data", _P.VAR_POSITIONAL)]
    else:
        params = [_P(n, _P.POSITIONAL_OR_KEYWORD, default=None) for n in op.inputs]
    params += [_P(key, attr_kind, default=spec.default)
               for key, spec in op.attrs.items() if key != "num_args"]
    params += [_P(k, _P.KEYWORD_ONLY, default=None) for k in keywords]
    return inspect.Signature(params)


def bind_arguments(op, args, kwargs):
    """Split a call into ``(inputs, attrs given)`` the way MXNet binds them: positional values
    go to the inputs, then to the attributes in declaration order; a variadic op takes every
    positional value as an input (a list), other ops give a dict of inputs by name.

    Example:
        >>> from hybridgpu import ops
        >>> bind_arguments(ops.get("_plus_scalar"), ("x", 2), {})
        ({'data': 'x'}, {'scalar': 2})
    """
    if op.variadic:
        return list(args), dict(kwargs)
    names = op.inputs + tuple(k for k in op.attrs if k != "num_args")
    if len(args) > len(names):
        raise TypeError(f"{op.name}() takes at most {len(names)} positional arguments "
                        f"({len(args)} given)")
    given = dict(zip(names, args))
    for key, value in kwargs.items():
        if key in given:
            raise TypeError(f"{op.name}() got multiple values for argument {key!r}")
        given[key] = value
    inputs = {n: given.pop(n) for n in op.inputs if n in given}
    return inputs, given
