"""Multi-tensor optimizer kernels: one kernel per optimizer *family* and dtype updates every
weight of a step in one launch, reading a flat table of pointers.

A family is one update rule with a fixed state layout (``FAMILIES``): ``sgd``, ``sgd_mom``,
``nag``, ``nag_mom``, ``adam``, ``rmsprop``, ``rmsprop_centered``, ``adagrad``. Each rule's
statements repeat, operation for operation, the NumPy/CuPy code of the per-parameter path
(``hybridgpu.optimizer``), so every intermediate rounds the same way; the kernels are compiled
with ``--fmad=false`` (``OPTIONS``) so NVRTC does not contract ``a * b + c`` into an FMA, which
would round once instead of twice.

The kernel's arguments, the same for every family:

* ``table``: ``unsigned long long[tensors][slots]``, per tensor the weight, gradient and state
  pointers, then the element count (``slots = 3 + states``);
* ``scalars``: ``T[HEADER + 2 * tensors]`` in device memory: first ``rescale``, ``clip`` and the
  family's hyperparameters ``h0..h3`` (``FAMILIES[name].hypers`` says which is which; unused
  ones are 0), then per tensor its learning rate and weight decay (multipliers, Adam's bias
  correction from the tensor's own step count, already applied);
* ``tensors`` (int) and ``has_clip`` (int).

Every value that may change from one step to the next (learning rate, ``1 / batch_size``,
step counts) is read from ``scalars``, never baked into the launch: a launch captured into a
CUDA graph sees the values written into the buffer before each replay.

``blockIdx.y`` picks a tensor (striding by ``gridDim.y`` past 65535 tensors), ``blockIdx.x``
and the threads stride over its elements. Identifiers come only from fixed names here (the
kernel is ``mu_<family>_<dtype>``); nothing from a model reaches the source.

Example:
    >>> kernel = generate("sgd_mom", "float32")
    >>> kernel.name, kernel.params, FAMILIES["sgd_mom"].hypers
    ('mu_sgd_mom_f32', ('const unsigned long long*', 'const float*', 'int', 'int'), ('momentum',))
    >>> loop = kernel.source.split("i += stride) {")[1].split("}")[0]
    >>> print("\\n".join(line.strip() for line in loop.strip().splitlines()))
    T wv = w[i];
    const T gv = gr[i];
    T g = gv * rescale;
    if (has_clip) g = mu_clip(g, clip);
    T s = s0[i] * h0;
    s = s - lr * wd * wv;
    s = s - lr * g;
    s0[i] = s;
    w[i] = wv + s;
    >>> launch_grid([10, 3000], block=256)
    ((12, 2, 1), (256, 1, 1))
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .source import CudaSource, ident

__all__ = ["Family", "FAMILIES", "MultiUpdateKernel", "generate", "launch_grid", "OPTIONS",
           "DTYPES", "BLOCK", "HYPERS", "HEADER", "MULTI_PRECISION"]

#: Threads a block.
BLOCK = 256
#: Blocks along x at most (the loop over a tensor's elements is grid-stride).
MAX_BLOCKS_X = 1024
#: Blocks in all at most (beyond that x shrinks): with many tensors and one large one, most
#: blocks of a row would find nothing to do.
MAX_BLOCKS = 32768
#: Compile options: no FMA contraction, so results round as the per-parameter path's.
OPTIONS = ("-std=c++17", "--fmad=false")
#: dtype name -> (C type, name suffix).
DTYPES = {"float32": ("float", "f32"), "float64": ("double", "f64")}
#: The multi-precision kernel: float16 weights and gradients, the rule run in float32 on the
#: float32 master copies (``multi_precision=True``), each updated weight rounded to float16.
#: Its table row is master, gradient, states, then the float16 weight, then the count.
MULTI_PRECISION = "float16_mp"

_SGD_GRAD = ("T g = gv * rescale;", "if (has_clip) g = mu_clip(g, clip);")
_DECAYED_GRAD = ("T g = gv * rescale + wv * wd;", "if (has_clip) g = mu_clip(g, clip);")


@dataclass(frozen=True)
class Family:
    """One fused update rule: its number of ``states``, the meaning of ``h0, h1...``
    (``hypers``) and its per-element C statements (``body``: ``wv`` is the weight read, the
    statements store the new weight and states)."""

    states: int
    hypers: tuple
    body: tuple


FAMILIES = {
    "sgd": Family(0, (), (*_SGD_GRAD, "w[i] = wv - (lr * wd * wv + lr * g);")),
    "sgd_mom": Family(1, ("momentum",), (
        *_SGD_GRAD, "T s = s0[i] * h0;", "s = s - lr * wd * wv;", "s = s - lr * g;",
        "s0[i] = s;", "w[i] = wv + s;")),
    "nag": Family(0, (), (*_SGD_GRAD, "wv = wv * ((T)1 - lr * wd);", "w[i] = wv - lr * g;")),
    "nag_mom": Family(1, ("momentum",), (
        *_SGD_GRAD, "const T step = lr * (g + wd * wv);",
        "wv = wv + (h0 * (h0 * s0[i] - step) - step);", "T s = s0[i] * h0;",
        "s0[i] = s - lr * (g + wd * wv);", "w[i] = wv;")),
    "adam": Family(2, ("beta1", "beta2", "epsilon"), (
        *_DECAYED_GRAD, "T m = s0[i] * h0;", "m = m + ((T)1 - h0) * g;", "T v = s1[i] * h1;",
        "v = v + ((T)1 - h1) * (g * g);", "s0[i] = m;", "s1[i] = v;",
        "w[i] = wv - lr * m / (sqrt(v) + h2);")),
    "rmsprop": Family(1, ("gamma1", "gamma2", "epsilon", "clip_weights"), (
        *_DECAYED_GRAD, "T n2 = s0[i] * h0;", "n2 = n2 + ((T)1 - h0) * (g * g);",
        "s0[i] = n2;", "wv = wv - lr * (g / sqrt(n2 + h2));",
        "if (h3 >= (T)0) wv = mu_clip(wv, h3);", "w[i] = wv;")),
    "rmsprop_centered": Family(3, ("gamma1", "gamma2", "epsilon", "clip_weights"), (
        *_DECAYED_GRAD, "T n2 = s0[i] * h0;", "n2 = n2 + ((T)1 - h0) * (g * g);",
        "s0[i] = n2;", "T m = s1[i] * h0;", "m = m + ((T)1 - h0) * g;", "s1[i] = m;",
        "const T q = g / sqrt(n2 - m * m + h2);", "const T d = s2[i] * h1 - lr * q;",
        "s2[i] = d;", "wv = wv + d;", "if (h3 >= (T)0) wv = mu_clip(wv, h3);", "w[i] = wv;")),
    "adagrad": Family(1, ("epsilon",), (
        *_SGD_GRAD, "const T h = s0[i] + g * g;", "s0[i] = h;",
        "const T dv = g / sqrt(h + h0);", "w[i] = wv + (dv + wv * wd) * (-lr);")),
}

#: Hyperparameters every kernel reads (unused ones are 0).
HYPERS = 4
#: Scalars before the per-tensor rates: rescale, clip, h0..h3.
HEADER = 2 + HYPERS


@dataclass(frozen=True)
class MultiUpdateKernel:
    """A generated kernel: ``name``, ``source`` (one translation unit), the C types of its
    ``params`` in order, and the table's ``slots`` per tensor."""

    name: str
    source: str
    params: tuple
    slots: int


@functools.cache
def generate(family, dtype):
    """The kernel of ``family`` (a key of ``FAMILIES``) for ``dtype`` ('float32', 'float64',
    or ``MULTI_PRECISION``: float16 weights through float32 masters); generated once per
    pair."""
    if family not in FAMILIES:
        raise ValueError(f"unknown optimizer family {family!r}; known: {sorted(FAMILIES)}")
    mixed = str(dtype) == MULTI_PRECISION
    if str(dtype) not in DTYPES and not mixed:
        raise ValueError(f"fused optimizer kernels take float32, float64 or {MULTI_PRECISION}, "
                         f"not {dtype}")
    spec = FAMILIES[family]
    ctype, suffix = ("float", "f16mp") if mixed else DTYPES[str(dtype)]
    name = "_".join(ident(part) for part in ("mu", *family.split("_"), suffix))
    params = ("const unsigned long long*", f"const {ctype}*", "int", "int")
    names = ("table", "scalars", "tensors", "has_clip")
    src = CudaSource()
    if mixed:
        src.line("#include <cuda_fp16.h>")
    with src.block(f"__device__ __forceinline__ {ctype} mu_clip({ctype} v, {ctype} c)"):
        src.line("return v < -c ? -c : (v > c ? c : v);")
    args = ", ".join(f"{p}{' __restrict__' if '*' in p else ''} {n}"
                     for p, n in zip(params, names))
    slots = 3 + spec.states + (1 if mixed else 0)
    with src.block(f'extern "C" __global__ void __launch_bounds__({BLOCK}) {name}({args})'):
        src.line(f"typedef {ctype} T;")
        src.line("const T rescale = scalars[0], clip = scalars[1];")
        src.line("const T h0 = scalars[2], h1 = scalars[3], h2 = scalars[4], h3 = scalars[5];")
        src.line("(void)h0; (void)h1; (void)h2; (void)h3;")
        src.line("const long long stride = (long long)gridDim.x * blockDim.x;")
        with src.block("for (int t = blockIdx.y; t < tensors; t += gridDim.y)"):
            _row_pointers(src, spec, slots, mixed)
            src.line(f"const T lr = scalars[{HEADER} + 2 * t];")
            src.line(f"const T wd = scalars[{HEADER} + 2 * t + 1];")
            with src.block("for (long long i = (long long)blockIdx.x * blockDim.x + "
                           "threadIdx.x; i < n; i += stride)"):
                src.line("T wv = w[i];")
                src.line("const T gv = __half2float(gr[i]);" if mixed else "const T gv = gr[i];")
                for statement in spec.body:
                    src.line(statement)
                if mixed:
                    src.line("lw[i] = __float2half_rn(w[i]);")
    return MultiUpdateKernel(name, src.text(), params, slots)


def _row_pointers(src, spec, slots, mixed):
    """Tensor ``t``'s pointers from its table row (and, ``mixed``, its float16 weight)."""
    src.line(f"const unsigned long long* row = table + (long long)t * {slots};")
    src.line("T* w = (T*)row[0];")
    src.line("const __half* gr = (const __half*)row[1];" if mixed else
             "const T* gr = (const T*)row[1];")
    for k in range(spec.states):
        src.line(f"T* s{k} = (T*)row[{2 + k}];")
    if mixed:
        src.line(f"__half* lw = (__half*)row[{2 + spec.states}];")
    src.line(f"const long long n = (long long)row[{slots - 1}];")


def launch_grid(sizes, block=BLOCK):
    """``(grid, block)`` for tensors of ``sizes`` elements: x covers the largest tensor (at
    most ``MAX_BLOCKS_X`` blocks and ``MAX_BLOCKS`` in all, then grid-stride), y is one block
    row a tensor (at most 65535, then the kernel strides)."""
    largest = max(sizes) if sizes else 1
    y = max(1, min(65535, len(sizes)))
    x = max(1, min(MAX_BLOCKS_X, MAX_BLOCKS // y, -(-largest // block)))
    return (x, y, 1), (block, 1, 1)
