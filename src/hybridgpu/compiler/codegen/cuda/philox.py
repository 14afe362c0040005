"""Dropout under CUDA-graph capture: a counter-based generator (Philox4x32-10) whose state
lives in device memory.

A captured graph replays the same kernels with the same arguments, so a generator whose state
lives on the host (cuRAND through CuPy) would draw the same numbers on every replay. Here every
random number is a pure function of a 64-bit key (the seed) and a 128-bit counter: element
``i`` of dropout node ``s`` on run ``r`` uses counter ``(i / 4, s, r_lo, r_hi)`` and takes word
``i % 4`` of the block. ``(seed, r)`` are two 64-bit words in the program's arena; one advance
kernel at the end of the program adds 1 to ``r``, so each run (eager or replayed) draws fresh
numbers, and a capture, which does not run, draws none.

``philox_reference`` is the same function in NumPy, for tests (it reproduces the Random123
known-answer vectors).

Example:
    >>> [hex(w) for w in philox_reference((0, 0, 0, 0), (0, 0))]
    ['0x6627e8d5', '0xe169c58d', '0xbc57ac4c', '0x9b00dbd8']
    >>> k = generate_dropout(DropoutSpec(10, "float32", 0.25, 3), "k3_drop")
    >>> k.params
    ('float*', 'float*', 'const float*', 'const unsigned long long*')
"""

from __future__ import annotations

from dataclasses import dataclass

from .ctype import COMPUTE, STORAGE, load, store
from .elementwise import BLOCK, Kernel
from .source import CudaSource

__all__ = ["DropoutSpec", "generate_dropout", "generate_advance", "philox_reference",
           "PHILOX_SOURCE"]

_M0, _M1, _W0, _W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85

#: The device function: 10 rounds of Philox4x32 on (c0..c3) with key (k0, k1), in place
#: (``NAME`` is replaced by the kernel's name, so each kernel has its own copy).
PHILOX_SOURCE = f"""__device__ __forceinline__ void NAME_philox(unsigned& c0, unsigned& c1, \
unsigned& c2, unsigned& c3, unsigned k0, unsigned k1) {{
  for (int r = 0; r < 10; ++r) {{
    const unsigned long long p0 = (unsigned long long){_M0:#x}u * c0;
    const unsigned long long p1 = (unsigned long long){_M1:#x}u * c2;
    const unsigned n0 = (unsigned)(p1 >> 32) ^ c1 ^ k0;
    const unsigned n2 = (unsigned)(p0 >> 32) ^ c3 ^ k1;
    c1 = (unsigned)p1;
    c3 = (unsigned)p0;
    c0 = n0;
    c2 = n2;
    k0 += {_W0:#x}u;
    k1 += {_W1:#x}u;
  }}
}}
"""


@dataclass(frozen=True)
class DropoutSpec:
    """``size`` elements of ``dtype``, drop probability ``p``, stream ``salt`` (node index)."""

    size: int
    dtype: str
    p: float
    salt: int


def philox_reference(counter, key):
    """Philox4x32-10 of ``counter`` (4 ints) under ``key`` (2 ints), in Python."""
    c0, c1, c2, c3 = (int(c) & 0xFFFFFFFF for c in counter)
    k0, k1 = (int(k) & 0xFFFFFFFF for k in key)
    for _ in range(10):
        p0, p1 = _M0 * c0, _M1 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0, p1 & 0xFFFFFFFF,
                          (p0 >> 32) ^ c3 ^ k1, p0 & 0xFFFFFFFF)
        k0, k1 = (k0 + _W0) & 0xFFFFFFFF, (k1 + _W1) & 0xFFFFFFFF
    return c0, c1, c2, c3


def generate_dropout(spec, name):
    """The Kernel of one dropout: arguments ``(out, mask, data, state)``; element ``i`` is
    kept when ``(word >> 8) * 2^-24 >= p`` and then scaled by ``1 / (1 - p)``."""
    t, acc = STORAGE[spec.dtype], COMPUTE[spec.dtype]
    scale = 1.0 / (1.0 - spec.p) if spec.p < 1.0 else 0.0
    src = CudaSource()
    head = (f'extern "C" __global__ void __launch_bounds__({BLOCK}) {name}({t}* __restrict__ o0, '
            f"{t}* __restrict__ o1, const {t}* __restrict__ i0, "
            "const unsigned long long* __restrict__ state)")
    with src.block(head):
        src.line("const unsigned long long seed = state[0], run = state[1];")
        with src.block(f"for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
                       f"i < {spec.size}; i += (long long)gridDim.x * blockDim.x)"):
            src.line(f"unsigned c0 = (unsigned)(i >> 2), c1 = {spec.salt}u, "
                     "c2 = (unsigned)run, c3 = (unsigned)(run >> 32);")
            src.line(f"{name}_philox(c0, c1, c2, c3, (unsigned)seed, (unsigned)(seed >> 32));")
            src.line("const int lane = (int)(i & 3);")
            src.line("const unsigned word = lane == 0 ? c0 : lane == 1 ? c1 : lane == 2 ? c2 : c3;")
            src.line("const float u = (float)(word >> 8) * 5.9604644775390625e-08f;")
            src.line(f"const {acc} m = u >= {spec.p!r}f ? ({acc})({scale!r}) : ({acc})0;")
            src.line(f"o1[i] = {store(spec.dtype, 'm')};")
            value = load(spec.dtype, "i0[i]", acc)
            src.line(f"o0[i] = {store(spec.dtype, f'{value} * m')};")
    params = (f"{t}*", f"{t}*", f"const {t}*", "const unsigned long long*")
    return Kernel(name, PHILOX_SOURCE.replace("NAME", name) + src.text(), params, spec.size,
                  False)


def generate_advance(name):
    """The Kernel ending a program with dropout: ``state[1] += 1`` (one thread)."""
    src = CudaSource()
    with src.block(f'extern "C" __global__ void {name}(unsigned long long* state)'):
        src.line("if (blockIdx.x == 0 && threadIdx.x == 0) state[1] += 1ull;")
    return Kernel(name, src.text(), ("unsigned long long*",), 1, False)
