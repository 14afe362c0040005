"""How a call of a generated op function (``nd.<op>`` or ``sym.<op>``) maps its arguments to the
op's inputs and attributes; shared by ndarray and symbol.
"""

from __future__ import annotations

__all__ = ["bind_arguments"]


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
