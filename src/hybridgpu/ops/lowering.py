"""How an op is emitted into a generated program: the ``lower=`` field of an OpDef.

A backend that generates code asks ``node.op.lowering_for(target)`` and applies what it gets;
it never looks at op names. The ``"array"`` target is a program of array-module calls
(``np.maximum(x, f32_0, out=y)``): the cpu code generator emits it over NumPy, and the same
text runs on CuPy, which has the same functions and ``out=``. A backend that generates
kernels adds its own target the same way (``lower={"array": ..., "cuda": ...}``), next to
the op's ``cuda`` expression, without a table of op names anywhere.

A ``Lowering`` has ``emit(site) -> [source line]`` and ``when(site)`` (can it lower this node:
dtypes, shapes, attributes); a node whose lowering declines calls its op's ``compute``.
The *site* is the backend's view of one node (see ``compiler/codegen/site.py``): ``site.op``,
``site.attrs``, ``site.is_train``, ``site.in_shapes``/``in_dtypes``/``out_shapes``/
``out_dtypes``, the names ``site.ins``/``site.outs``/``site.scratch``, the array module's name
``site.xp``, and the names it hands out (``const``, ``view``, ``temp``, ``define``,
``helper``, ``private``, ``is_static``).

Kinds:

* ``"out"``: writes every used output into ``site.outs`` (buffers the backend provides).
  ``inplace`` names the inputs whose buffer output 0 may take over when the input dies at
  this node (only inputs read before the output is first written); ``scratch(site)`` asks for
  buffers used during this node only; ``private(site)`` for zero-filled buffers of this node
  alone, kept between calls.
* ``"view"``: binds ``site.outs[0]`` to an expression that may be a view of an input.

Three ways to write one, in order of preference:

* an array-module call: ``ufunc("tanh")``, ``binary("add")``, ``scalar_call("add")``;
* a composition of other ops' lowerings: ``dispatch(pick)`` (Activation lowers as the op its
  ``act_type`` names);
* ``Lowering(emit, when, ...)`` with an ``emit(site)`` function of the op's module.

Example:
    >>> from types import SimpleNamespace
    >>> import numpy as np
    >>> low = ufunc("tanh")
    >>> site = SimpleNamespace(xp="np", ins=["x"], outs=["y"], in_dtypes=[np.dtype("f4")],
    ...                        out_dtypes=[np.dtype("f4")])
    >>> low.applies(site), low.emit(site), low.inplace_inputs(site)
    (True, ['np.tanh(x, out=y)'], (0,))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["Lowering", "ufunc", "binary", "scalar_call", "dispatch", "same_float",
           "same_dtype", "c_float", "FIRST"]

FIRST = (0,)


def _always(site):
    return True


def same_float(site):
    """Every input and output has one floating-point dtype."""
    dtypes = {*site.in_dtypes, *site.out_dtypes}
    return len(dtypes) == 1 and next(iter(dtypes)).kind == "f"


def same_dtype(site):
    """Input 0 and output 0 have one dtype."""
    return site.in_dtypes[0] == site.out_dtypes[0]


def c_float(value):
    """MXNet keeps some float attributes as C floats (clip's bounds): rounded to float32."""
    return float(np.float32(value))


@dataclass(frozen=True)
class Lowering:
    """How one op lowers (see the module docstring)."""

    emit: Callable
    when: Callable = _always
    kind: str = "out"
    inplace: object = ()  # input indices output 0 may overwrite, or site -> such a tuple
    scratch: Callable | None = None  # site -> [(shape, dtype)] of buffers used only here
    private: Callable | None = None  # site -> [(shape, dtype)] of zeroed buffers kept here

    def applies(self, site):
        """True when this node can use the lowering (else the backend calls compute)."""
        return bool(self.when(site))

    def resolve(self, site):
        """The Lowering that does the work for this node (itself, unless it dispatches)."""
        return self

    def inplace_inputs(self, site):
        """Indices of the inputs whose buffer output 0 may take over (if it dies here)."""
        return tuple(self.inplace(site) if callable(self.inplace) else self.inplace)

    def scratch_buffers(self, site):
        return list(self.scratch(site)) if self.scratch is not None else []

    def private_buffers(self, site):
        return list(self.private(site)) if self.private is not None else []


class _Dispatch(Lowering):
    """The lowering of another op, picked from the attributes (a composite op)."""

    def __init__(self, pick, when=same_float):
        super().__init__(emit=lambda site: self.resolve(site).emit(site), when=when)
        object.__setattr__(self, "pick", pick)

    def resolve(self, site):
        target = self.pick(site.attrs)
        lowering = target.lowering_for("array") if hasattr(target, "lowering_for") else target
        return lowering.resolve(site) if lowering is not None else None

    def applies(self, site):
        target = self.resolve(site)
        return bool(self.when(site)) and target is not None and target.applies(site)

    def inplace_inputs(self, site):
        return self.resolve(site).inplace_inputs(site)

    def scratch_buffers(self, site):
        return self.resolve(site).scratch_buffers(site)

    def private_buffers(self, site):
        return self.resolve(site).private_buffers(site)


def dispatch(pick, when=same_float):
    """Lower as ``pick(attrs)`` does (an OpDef or a Lowering): one definition per function."""
    return _Dispatch(pick, when)


def ufunc(fn, when=same_float):
    """``xp.<fn>(in0, out=out0)``, in place over input 0."""
    return Lowering(lambda site: [f"{site.xp}.{fn}({site.ins[0]}, out={site.outs[0]})"],
                    when, inplace=FIRST)


def binary(fn, when=same_float):
    """``xp.<fn>(in0, in1, out=out0)``, in place over either input."""

    def emit(site):
        (a, b), o = site.ins, site.outs[0]
        return [f"{site.xp}.{fn}({a}, {b}, out={o})"]

    return Lowering(emit, when, inplace=(0, 1))


def scalar_call(fn, reverse=False, when=same_float):
    """``xp.<fn>(in0, scalar, out=out0)`` (``reverse``: the scalar first), the scalar in the
    input's dtype."""

    def emit(site):
        a, o = site.ins[0], site.outs[0]
        s = site.const(site.attrs["scalar"], site.in_dtypes[0])
        args = f"{s}, {a}" if reverse else f"{a}, {s}"
        return [f"{site.xp}.{fn}({args}, out={o})"]

    return Lowering(emit, when, inplace=FIRST)
