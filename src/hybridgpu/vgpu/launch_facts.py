"""What a kernel's source says about its launches: ``__launch_bounds__`` and the bytes of its
static ``__shared__`` arrays, read from the CUDA C text the way ptxas would count them.

Sizes are integer expressions over literals and the source's object-like ``#define`` names;
an array whose size or element type cannot be worked out here counts 0 (the check errs on the
side of passing). Arrays declared in device functions are not counted.

Example:
    >>> src = ('#define N 64\\nextern "C" __global__ void __launch_bounds__(128) k(float* x)'
    ...        ' { __shared__ double buf[N * 2]; __shared__ float4 v[4]; }')
    >>> launch_facts(src)
    {'k': (128, 1088)}
"""

from __future__ import annotations

import ast
import operator
import re

__all__ = ["launch_facts"]

_HEAD = re.compile(r'extern\s+"C"\s+((?:__launch_bounds__\s*\([^)]*\)\s*|__global__\s+|void\s+)+)'
                   r"(\w+)\s*\([^)]*\)\s*\{")
_BOUNDS = re.compile(r"__launch_bounds__\s*\(\s*([^,)]+)")
_ALIGN = r"(?:__align__\s*\(\s*\d+\s*\)\s*)?"
_SHARED = re.compile(r"(?<![\w])(?<!extern )__shared__\s+" + _ALIGN + r"((?:const\s+)?[\w:]+"
                     r"(?:\s+[\w:]+)*?)\s+" + _ALIGN + r"(\w+)\s*((?:\[[^\]]*\]\s*)*)[;=]")
_DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)\s+([^\n]+)$", re.M)
_SIZES = {"bool": 1, "char": 1, "signed char": 1, "unsigned char": 1, "int8_t": 1,
          "uint8_t": 1, "short": 2, "unsigned short": 2, "int16_t": 2, "uint16_t": 2,
          "__half": 2, "half": 2, "int": 4, "unsigned": 4, "unsigned int": 4, "float": 4,
          "int32_t": 4, "uint32_t": 4, "long": 8, "unsigned long": 8, "long long": 8,
          "unsigned long long": 8, "int64_t": 8, "uint64_t": 8, "size_t": 8, "double": 8,
          "float2": 8, "int2": 8, "uint2": 8, "float3": 12, "float4": 16, "int4": 16,
          "uint4": 16, "double2": 16, "longlong2": 16}
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.FloorDiv: operator.floordiv, ast.Div: operator.floordiv, ast.Mod: operator.mod,
        ast.LShift: operator.lshift, ast.RShift: operator.rshift}


def _strip_comments(source):
    source = re.sub(r"/\*.*?\*/", " ", source, flags=re.S)
    return re.sub(r"//[^\n]*", " ", source)


def _evaluate(text, names, depth=0):
    """The integer value of C expression ``text``, or None."""
    text = re.sub(r"(\d+)[uUlL]+\b", r"\1", text.strip()).replace("/", "//")
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None

    def value(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name) and node.id in names and depth < 8:
            return _evaluate(names[node.id], names, depth + 1)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            a, b = value(node.left), value(node.right)
            return None if a is None or b is None or (b == 0 and isinstance(
                node.op, (ast.FloorDiv, ast.Div, ast.Mod))) else _OPS[type(node.op)](a, b)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            a = value(node.operand)
            return None if a is None else -a
        return None

    return value(tree)


def _body(source, start):
    """The text from the ``{`` at ``start`` to its matching ``}``."""
    depth = 0
    for i in range(start, len(source)):
        if source[i] == "{":
            depth += 1
        elif source[i] == "}":
            depth -= 1
            if depth == 0:
                return source[start:i + 1]
    return source[start:]


def _shared_bytes(body, names):
    total = 0
    for ctype, _name, dims in _SHARED.findall(body):
        size = _SIZES.get(" ".join(w for w in ctype.split() if w not in ("const", "volatile")))
        count = 1
        for dim in re.findall(r"\[([^\]]*)\]", dims):
            n = _evaluate(dim, names)
            count = None if n is None or count is None else count * n
        if size is not None and count is not None:
            total += size * count
    return total


def launch_facts(source):
    """``{kernel: (max threads a block from __launch_bounds__ or None, static shared
    bytes)}`` for the ``extern "C"`` kernels of ``source``."""
    source = _strip_comments(source)
    names = {k: v.strip() for k, v in _DEFINE.findall(source)}
    facts = {}
    for m in _HEAD.finditer(source):
        if "__global__" not in m.group(1):
            continue
        bounds = _BOUNDS.search(m.group(1))
        limit = _evaluate(bounds.group(1), names) if bounds else None
        facts[m.group(2)] = (limit, _shared_bytes(_body(source, m.end() - 1), names))
    return facts

