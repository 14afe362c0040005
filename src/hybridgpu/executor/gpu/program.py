"""The GPU program, as data: steps over one arena.

A ``Program`` is what the GPU backend makes of an optimized graph: a list of steps, the CUDA
source of its kernels (one translation unit), and the layout of ONE preallocated arena (bytes
on the device) holding every intermediate value, the staged inputs and the outputs. Steps name
memory with ``Ref``: ``Ref.arena(offset)`` is a byte offset into the arena, ``Ref.ext(name)``
an array the call brings (a parameter read in place, by pointer) or the program holds (a
folded constant). The steps:

* ``Launch``: a generated kernel, its grid and block, its arguments (Buffers: a Ref with a
  dtype and an element count; numpy scalars; and
  ``ALIGNED``: 1 when every pointer argument is 16-byte aligned, else 0, so the kernel may use
  its ``float4`` path);
* ``Gemm``: one cuBLAS GEMM (column-major, as cuBLAS counts), strided-batched when ``batch > 1``;
* ``Copy``: a device-to-device copy of ``nbytes``;
* ``Eager``: an op without a kernel, run through its ``OpDef.compute`` on views of the arena;
  it allocates, so it cannot be captured: it splits the program into captured segments.

Nothing here touches a device; ``executor/gpu/runtime.py`` runs a Program on CuPy.

Example:
    >>> prog = Program(steps=[Copy(Ref.arena(256), Ref.ext("data"), 16, node=1)],
    ...                kernels=[], arena_bytes=512, inputs={}, outputs=[])
    >>> print(prog)
    gpu program: 1 step, 0 kernels, arena 512 B, 1 captured segment
      0  copy    16 B  arena[256] <- data  (%1)
    >>> prog.segments()
    [('graph', [0])]
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Ref", "Buffer", "Launch", "Gemm", "Copy", "Eager", "Program", "ALIGNED", "ALIGNMENT"]

#: Every arena region starts at a multiple of this (bytes): float4 loads and cuBLAS need 16.
ALIGNMENT = 256


class _Aligned:
    def __repr__(self):
        return "aligned"


#: A Launch argument filled in when the launch is bound: int32 1 if all pointers are aligned.
ALIGNED = _Aligned()


@dataclass(frozen=True)
class Ref:
    """Device memory a step reads or writes: ``kind`` ``"arena"`` (``offset`` bytes into the
    arena) or ``"ext"`` (``name``: an input read in place, or ``const<i>``, a folded constant
    the program holds)."""

    kind: str
    offset: int = 0
    name: str = ""

    @classmethod
    def arena(cls, offset):
        return cls("arena", offset=int(offset))

    @classmethod
    def ext(cls, name):
        return cls("ext", name=str(name))

    def __str__(self):
        return f"arena[{self.offset}]" if self.kind == "arena" else self.name


@dataclass(frozen=True)
class Buffer:
    """A kernel's pointer argument: ``count`` elements of ``dtype`` at ``ref``."""

    ref: Ref
    dtype: str
    count: int

    def __str__(self):
        return str(self.ref)


@dataclass(frozen=True)
class Launch:
    """Launch ``kernel`` (a name in the program's source) on ``grid`` x ``block``; ``args``
    are Buffers, numpy scalars and ``ALIGNED``."""

    kernel: str
    grid: tuple
    block: tuple
    args: tuple
    node: int = -1

    def describe(self):
        args = ", ".join(str(a) for a in self.args)
        return f"launch  {self.kernel} grid={self.grid[0]} block={self.block[0]} ({args})"


@dataclass(frozen=True)
class Gemm:
    """``C = alpha * op(A) @ op(B) + beta * C`` in cuBLAS's column-major terms (``m x n``
    result, ``k`` inner), ``dtype`` float32 or float64; ``batch`` GEMMs ``stride_*`` elements
    apart when ``batch > 1``."""

    dtype: str
    transa: int
    transb: int
    m: int
    n: int
    k: int
    a: Ref
    lda: int
    b: Ref
    ldb: int
    c: Ref
    ldc: int
    alpha: float = 1.0
    beta: float = 0.0
    batch: int = 1
    stride_a: int = 0
    stride_b: int = 0
    stride_c: int = 0
    node: int = -1

    def describe(self):
        ops = "NT"
        text = (f"gemm    {self.dtype} {ops[self.transa]}{ops[self.transb]} m={self.m} "
                f"n={self.n} k={self.k}  {self.c} = {self.a} x {self.b}")
        if self.beta:
            text += f" + {self.beta:g} C"
        return text + (f"  batch={self.batch}" if self.batch > 1 else "")


@dataclass(frozen=True)
class Copy:
    """Copy ``nbytes`` from ``src`` to ``dst`` (device to device)."""

    dst: Ref
    src: Ref
    nbytes: int
    node: int = -1

    def describe(self):
        return f"copy    {self.nbytes} B  {self.dst} <- {self.src}"


@dataclass(frozen=True)
class Eager:
    """Run node ``node``'s ``op.compute`` on views: ``ins``/``outs`` are ``(Ref, shape,
    dtype)`` (an out is None when nothing reads it); ``attrs`` are the node's attributes."""

    op: object
    attrs: dict
    ins: tuple
    outs: tuple
    node: int = -1
    random: bool = False
    is_train: bool | None = None

    def describe(self):
        outs = ", ".join(str(o[0]) for o in self.outs if o is not None)
        ins = ", ".join(str(i[0]) for i in self.ins)
        return f"eager   {self.op.name}  {outs} <- ({ins})"


@dataclass
class Program:
    """Steps, kernels (``Kernel`` objects of ``compiler/codegen/cuda``), the arena size, the
    staged inputs (name -> ``(offset, nbytes)``: copied in before each run), the outputs
    (``(Ref, shape, dtype)``), the bound inputs (names read in place, by pointer), the
    folded constants (``const<i>`` -> array) the steps read, and the outputs ``written`` by
    their steps straight into arrays the caller binds (output index -> bound name)."""

    steps: list
    kernels: list
    arena_bytes: int
    inputs: dict
    outputs: list
    bound: tuple = ()
    constants: dict = field(default_factory=dict)
    workspace: int | None = None  # arena offset of the cuBLAS workspace (WORKSPACE_BYTES)
    rng_state: int | None = None  # arena offset of the Philox (seed, run) pair, 2 x uint64
    shaped: frozenset = frozenset()  # kernels taking their sizes as arguments (by name)
    written: dict = field(default_factory=dict)  # output index -> bound name of its array

    @property
    def source(self):
        """The CUDA source of every kernel: one translation unit (``cuda_fp16.h`` included
        only when a kernel uses ``__half``: it is the one header the kernels may need)."""
        return _translation_unit(self.kernels)

    def module_sources(self):
        """``(static source, shaped source)``: the kernels with constant sizes, compiled
        per program, and those taking their sizes as arguments (``shaped``), whose source
        is the same for every shape of the graph, compiled once; either may be ``""``."""
        static = [k for k in self.kernels if k.name not in self.shaped]
        shaped = [k for k in self.kernels if k.name in self.shaped]
        return _translation_unit(static), _translation_unit(shaped)

    def segments(self):
        """``[(kind, [step indices])]``: runs of capturable steps (``"graph"``) and single
        ``"eager"`` steps, in program order."""
        out = []
        for n, step in enumerate(self.steps):
            if isinstance(step, Eager):
                out.append(("eager", [n]))
            elif out and out[-1][0] == "graph":
                out[-1][1].append(n)
            else:
                out.append(("graph", [n]))
        return out

    def __repr__(self):
        return (f"<gpu Program: {_count(len(self.steps), 'step')}, "
                f"{_count(len(self.kernels), 'kernel')}, arena {_size(self.arena_bytes)}>")

    def __str__(self):
        graphs = sum(1 for kind, _ in self.segments() if kind == "graph")
        eager = len(self.steps) - sum(len(s) for k, s in self.segments() if k == "graph")
        lines = [f"gpu program: {_count(len(self.steps), 'step')}, "
                 f"{_count(len(self.kernels), 'kernel')}"
                 + (f" ({len(self.shaped)} taking shapes as arguments)" if self.shaped else "")
                 + f", arena {_size(self.arena_bytes)}, "
                 f"{_count(graphs, 'captured segment')}"
                 + (f" around {_count(eager, 'eager step')}" if eager else "")]
        for name, (offset, nbytes) in self.inputs.items():
            lines.append(f"  in      {_quote(name)} -> arena[{offset}] ({nbytes} B)")
        width = len(str(len(self.steps) - 1))
        for n, step in enumerate(self.steps):
            lines.append(f"  {n:>{width}}  {step.describe()}  (%{step.node})")
        for k, (ref, shape, dtype) in enumerate(self.outputs):
            lines.append(f"  out {k}   {ref} {shape} {dtype}")
        return "\n".join(lines)


def _translation_unit(kernels):
    if not kernels:
        return ""
    body = "\n".join(k.source for k in kernels)
    return ("#include <cuda_fp16.h>\n\n" + body) if "__half" in body else body


def _quote(name):
    """A variable's name for printing: printable, one line."""
    return repr(str(name))[1:-1]


def _count(n, word):
    return f"{n} {word}{'s' * (n != 1)}"


def _size(nbytes):
    if nbytes < 1024:
        return f"{nbytes} B"
    if nbytes < 1024 ** 2:
        return f"{nbytes / 1024:.1f} KiB"
    return f"{nbytes / 1024 ** 2:.1f} MiB"
