"""How the virtual GPU rounds: as NVRTC and CuPy make a GPU round, by default.

- **FMA contraction.** NVRTC compiles with ``--fmad=true`` unless told otherwise: ``a * b + c``
  becomes one fused multiply-add, rounded once. g++ does the same with ``-ffp-contract=fast``
  (plus ``-mfma`` on an x86-64 CPU that has FMA, and ``-fexpensive-optimizations``, without which
  GCC forms no FMA at ``-O1``). A module compiled with ``--fmad=false`` (``-fmad=false``) gets
  ``-ffp-contract=off``: every product and sum rounded on its own, as on the GPU. On a CPU
  without FMA the virtual GPU cannot contract: it warns once and rounds each operation.
- **Flush to zero.** CuPy compiles every kernel with ``-ftz=true``: float32 denormal inputs
  read as zero and denormal results are written as zero. Each launch sets FTZ and DAZ in the
  thread's MXCSR (FZ in FPCR on AArch64) and restores it after, so host NumPy is untouched.
- **float16**: stored as ``__half``, computed in float; ``__float2half`` rounds to nearest
  even, ``__half2float`` keeps half subnormals (the GPU's ``cvt`` does both, ``-ftz`` or not).

What still differs from a GPU: which of two products GCC fuses in ``a * b + c * d`` may differ
from NVRTC's choice; float64 denormals (below 2.2e-308) are flushed here and kept on a GPU;
``__expf``-style intrinsics are libm's accurate functions here; summation order belongs to
each kernel and is the same on both.

``HYBRIDGPU_VGPU_ROUNDING=ieee`` turns both off (g++'s plain IEEE arithmetic), to tell a
rounding difference from a bug; ``gpu`` (the default) is the above.

Example:
    >>> fmad_enabled(("-std=c++17", "--fmad=false")), fmad_enabled(())
    (False, True)
    >>> "-ffp-contract=off" in compile_flags(fmad=False)
    True
"""

from __future__ import annotations

import functools
import os
import platform
import warnings

__all__ = ["MODES", "mode", "fmad_enabled", "compile_flags", "flushes", "launch_wrappers",
           "fma_flags"]

MODES = ("gpu", "ieee")
_ENV = "HYBRIDGPU_VGPU_ROUNDING"


def mode():
    """``gpu`` (the default) or ``ieee``, from ``HYBRIDGPU_VGPU_ROUNDING``."""
    value = os.environ.get(_ENV, "") or "gpu"
    if value not in MODES:
        raise ValueError(f"{_ENV}={value!r}: expected one of {', '.join(MODES)}")
    return value


def fmad_enabled(options):
    """NVRTC's ``--fmad`` for these RawModule options: the last ``--fmad=``/``-fmad=`` wins;
    true by default."""
    enabled = True
    for option in options:
        for prefix in ("--fmad=", "-fmad="):
            if isinstance(option, str) and option.startswith(prefix):
                value = option[len(prefix):]
                if value not in ("true", "false"):
                    raise ValueError(f"NVRTC option {option!r}: --fmad takes true or false "
                                     "(NVRTC_ERROR_INVALID_OPTION)")
                enabled = value == "true"
    return enabled


def _cpu_flags():
    """The feature flags of this CPU (``/proc/cpuinfo``), or None where unreadable."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


@functools.cache
def fma_flags():
    """The g++ flags that contract ``a * b + c`` into FMA on this CPU, or None (warned once)
    when it cannot."""
    machine = platform.machine().lower()
    contract = ["-ffp-contract=fast", "-fexpensive-optimizations"]
    if machine in ("aarch64", "arm64"):
        return contract  # FMA is part of ARMv8's floating point
    if machine in ("x86_64", "amd64"):
        features = _cpu_flags()
        if features is not None and "fma" in features:
            return ["-mfma", *contract]
        why = "its CPU has no FMA instructions" if features is not None else \
            "/proc/cpuinfo does not say whether the CPU has FMA"
    else:
        why = f"it does not know how to ask g++ for FMA on {machine!r}"
    warnings.warn(f"the virtual GPU cannot contract a*b+c into FMA as NVRTC does ({why}): "
                  "its kernels round every product, so results may differ from a GPU's in the "
                  "last bits", RuntimeWarning, stacklevel=2)
    return None


def compile_flags(fmad=True):
    """The g++ flags of the rounding mode (added to the base flags)."""
    if mode() == "gpu" and fmad:
        found = fma_flags()
        if found is not None:
            return list(found)
    return ["-ffp-contract=off"]


def flushes():
    """True when launches flush float denormals to zero (the ``gpu`` mode)."""
    return mode() == "gpu"


#: The guard each launch runs under in the ``gpu`` mode: FTZ and DAZ on, restored after.
FLUSH_GUARD = r"""
namespace vgpu_rounding {
struct FlushToZero {  // CuPy's -ftz=true: float denormals read and written as zero
#if defined(__x86_64__) || defined(__i386__)
  unsigned saved = __builtin_ia32_stmxcsr();
  FlushToZero() { __builtin_ia32_ldmxcsr(saved | 0x8040u); }  // FTZ (bit 15) | DAZ (bit 6)
  ~FlushToZero() { __builtin_ia32_ldmxcsr(saved); }
#elif defined(__aarch64__)
  unsigned saved = __builtin_aarch64_get_fpcr();
  FlushToZero() { __builtin_aarch64_set_fpcr(saved | (1u << 24)); }  // FZ
  ~FlushToZero() { __builtin_aarch64_set_fpcr(saved); }
#endif
};
}  // namespace vgpu_rounding
"""


def launch_wrappers(names, flush):
    """The text after a kernel source that exports each kernel's launcher (the shim's
    ``VGPU_EXPORT``), wrapped so it runs with denormals flushed when ``flush``."""
    if not flush:
        return "".join(f"VGPU_EXPORT({n})\n" for n in names)
    parts = [FLUSH_GUARD]
    for n in names:  # the shim's launcher under another name, then ours calling it
        parts.append(
            f"#define {n}__vgpu_launch {n}__vgpu_unflushed\nVGPU_EXPORT({n})\n"
            f"#undef {n}__vgpu_launch\n"
            f'extern "C" int {n}__vgpu_launch(const long long* cfg, void** args, '
            f"shim::Report* rep) {{\n  vgpu_rounding::FlushToZero flush;\n"
            f"  return {n}__vgpu_unflushed(cfg, args, rep);\n}}\n")
    return "".join(parts)
