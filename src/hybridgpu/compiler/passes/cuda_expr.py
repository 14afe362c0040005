"""Compose the CUDA C expressions of a fused group's members (``fuse_elementwise``'s helper).

Each member's expression (``op.cuda_for(attrs)``, over ``in0, in1, ...`` and attribute names)
gets its arguments substituted (the group's inputs ``inK`` or earlier members' values ``tJ``)
and its attributes written as C literals. ``compose`` returns the single expression of a
one-output group (values used twice are recomputed, inline) and the statement form that the
GPU backend can put in a kernel body for any number of outputs. ``T`` stays the element type
(every member of a group has the same dtype).

Example:
    >>> from hybridgpu import ops
    >>> from hybridgpu.compiler.passes.fuse_elementwise import Member
    >>> add, mul = ops.get("broadcast_add"), ops.get("_mul_scalar")
    >>> members = [Member(add, {}, (("in", 0), ("in", 1)), "a", {}),
    ...            Member(mul, mul.parse_attrs({"scalar": 0.5}), (("t", 0),), "m", {})]
    >>> expr, body = compose(members, [1])
    >>> expr
    '(in0 + in1) * ((T)(0.5))'
    >>> c_literal(float("inf")), c_literal(float("nan"))
    ('__int_as_float(0x7f800000)', '__int_as_float(0x7fc00000)')
    >>> print(body)
    T t0 = in0 + in1;
    T t1 = t0 * ((T)(0.5));
    out0 = t1;
"""

from __future__ import annotations

import math
import re

__all__ = ["compose", "c_literal", "substitute"]

# NVRTC has no INFINITY/NAN macros (they come from headers it lacks): write the bits.
_INF = "__int_as_float(0x7f800000)"
_NAN = "__int_as_float(0x7fc00000)"

#: Longest single expression kept (longer ones come only as statements).
MAX_EXPRESSION = 4000


def c_literal(value):
    """``value`` (an attribute) as a C literal, or None when it has no C form."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return _NAN
        if math.isinf(value):
            return _INF if value > 0 else f"-{_INF}"
        return repr(value)
    return None


def substitute(expr, args, attrs):
    """``expr`` with ``inK`` replaced by ``args[K]`` and attribute names by their values."""
    literals = {k: c_literal(v) for k, v in attrs.items()}
    literals = {k: v for k, v in literals.items() if v is not None}
    names = sorted(literals, key=len, reverse=True)
    pattern = r"\b(in\d+" + "".join(f"|{re.escape(n)}" for n in names) + r")\b"

    def repl(match):
        word = match.group(1)
        if word in literals:
            return f"({literals[word]})"
        return args[int(word[2:])]

    return re.sub(pattern, repl, expr)


def compose(members, outputs):
    """``(expression or None, statements)`` of a fused group (see the module docstring)."""
    lines, inline = [], []  # inline becomes None once an expression grows too long
    for j, m in enumerate(members):
        expr = m.op.cuda_for(m.attrs)
        names = [f"in{k}" if kind == "in" else f"t{k}" for kind, k in m.refs]
        lines.append(f"T t{j} = {substitute(expr, names, m.attrs)};")
        if inline is not None:
            args = [f"in{k}" if kind == "in" else f"({inline[k]})" for kind, k in m.refs]
            text = substitute(expr, args, m.attrs)
            if len(text) > MAX_EXPRESSION:
                inline = None
            else:
                inline.append(text)
    lines += [f"out{k} = t{j};" for k, j in enumerate(outputs)]
    single = inline[outputs[0]] if inline is not None and len(outputs) == 1 else None
    return single, "\n".join(lines)
