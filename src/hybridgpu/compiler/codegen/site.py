"""``Site``: one graph node as its op's lowering sees it (``ops/lowering.py``), and
``lowering_of(site)``, the one place a generator asks an op how it lowers.

A site carries the op, its attributes, the train mode, input and output shapes and dtypes
(``np.dtype``), and, when emitting, the source names ``ins`` and ``outs`` (``None`` for an
output nobody reads; output 0 is always materialized), ``scratch`` (buffers the lowering's
``scratch`` asked for, valid during this node only) and ``privates`` (zero-filled buffers of
this node alone, kept between calls). ``xp`` is the name of the array module in the program.

Names come from ``module`` (the generator's module builder; a small local stand-in when
None): ``const(value, dtype)`` names a module-level ``np.<dtype>(value)`` (``f32_0``),
``view(name, shape)`` reshapes an array (made once at module level when ``name`` is a
preallocated buffer, an inline ``.reshape`` otherwise), ``temp(hint)`` gives a fresh local
name, ``define(hint, expr)`` names a module-level object built once from module-level names,
``helper(fn)`` names a function the program may call (``im2col_views``), ``bind`` names an
op's ``compute`` with its attributes fixed.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> from hybridgpu.graph import Entry, Node
    >>> x = Node.variable("x")
    >>> node = Node(ops.get("relu"), "relu0", {}, [Entry(x, 0)])
    >>> site = Site(node, [(2, 3)], ["float32"], [(2, 3)], ["float32"], is_train=False)
    >>> site.ins, site.outs = ["x"], ["relu0"]
    >>> lowering = lowering_of(site)
    >>> lowering.kind, lowering.emit(site)
    ('out', ['np.maximum(x, f32_0, out=relu0)'])
    >>> site.module.constants
    {'f32_0': (0, 'float32')}
"""

from __future__ import annotations

import math
import zlib

import numpy as np

__all__ = ["Site", "lowering_of", "const_name"]


class Site:
    """One node as its lowering sees it (see the module docstring)."""

    xp = "np"

    def __init__(self, node, in_shapes, in_dtypes, out_shapes, out_dtypes, is_train,
                 module=None):
        self.node, self.op, self.attrs = node, node.op, node.attrs
        self.in_shapes = [tuple(s) for s in in_shapes]
        self.in_dtypes = [np.dtype(t) for t in in_dtypes]
        self.out_shapes = [tuple(s) for s in out_shapes]
        self.out_dtypes = [np.dtype(t) for t in out_dtypes]
        self.is_train = is_train
        self.ins: list = []
        self.outs: list = []
        self.scratch: list = []
        self.privates: list = []
        self.used = [True] * len(self.out_shapes)  # which outputs anything reads
        self.module = module if module is not None else _LocalModule()

    def const(self, value, dtype):
        """The name of a module-level constant ``np.<dtype>(value)``."""
        return self.module.const(value, np.dtype(dtype))

    def view(self, name, shape):
        """``name`` reshaped to ``shape`` (an expression)."""
        return self.module.view(name, tuple(shape))

    def temp(self, hint):
        """A fresh local variable name."""
        return self.module.temp(hint)

    def define(self, hint, expr):
        """The name of a module-level ``name = expr``."""
        return self.module.define(hint, expr)

    def helper(self, fn):
        """The name under which the program calls the Python function ``fn``."""
        return self.module.helper(fn)

    def is_static(self, name):
        """True when ``name`` is a module-level array (its views can be made once)."""
        return self.module.is_static(name)

    def bind(self, hint, op, attrs):
        """The name of a module-level ``op.compute`` with NumPy and ``attrs`` fixed."""
        return self.module.bind(hint, op, attrs)

    @staticmethod
    def number(value):
        """Python source of a number attribute (a Python float: NaN and infinities included),
        never anything else: an attribute is data, so a value that is not a plain number
        raises instead of being pasted into a program.

        Example:
            >>> Site.number(1e-05), Site.number(float("nan")), Site.number(-float("inf"))
            ('1e-05', "float('nan')", "float('-inf')")
        """
        if type(value) in (bool, int):
            value = float(value)
        if type(value) is not float:
            raise TypeError(f"expected a number attribute, got {type(value).__name__}")
        return repr(value) if math.isfinite(value) else f"float({str(value)!r})"


class _LocalModule:
    """What a Site uses outside a generator (doctests, tests): records constants."""

    def __init__(self):
        self.constants = {}

    def const(self, value, dtype):
        name = const_name(value, dtype)
        self.constants[name] = (value, dtype.name)
        return name

    def view(self, name, shape):
        return f"{name}.reshape({shape!r})"

    def temp(self, hint):
        return hint

    def define(self, hint, expr):
        return hint

    def helper(self, fn):
        return fn.__name__

    def is_static(self, name):
        return False

    def bind(self, hint, op, attrs):
        return hint


def const_name(value, dtype):
    """A readable identifier for ``np.<dtype>(value)``: ``f32_2``, ``f64_m0_5``, ``f32_1em05``
    (``f32_k`` plus a digest when the value does not spell well)."""
    dtype = np.dtype(dtype)
    short = {"f": "f", "i": "i", "u": "u", "b": "b"}.get(dtype.kind, "c") + str(
        dtype.itemsize * 8)
    text = repr(value).replace("-", "m").replace(".", "_").replace("+", "")
    name = f"{short}_{text}"
    if name.isidentifier() and len(name) <= 32:
        return name
    return f"{short}_k{zlib.crc32(repr(value).encode()):08x}"


def lowering_of(site, target="array"):
    """The Lowering this node is emitted with (a dispatching op resolved to the lowering it
    picks), or None: the node then calls its op's ``compute``. A fused group (an op with
    ``members``) lowers through its members' lowerings."""
    if getattr(site.op, "members", None) is not None:
        from .fused import FUSED

        lowering = FUSED
    else:
        lowering = site.op.lowering_for(target)
    if lowering is None or not lowering.applies(site):
        return None
    return lowering.resolve(site)
