"""The virtual GPU rounds as a GPU does (issue 19): ``a * b + c`` contracted into one FMA as
NVRTC's default ``--fmad=true`` does, each product rounded on its own under ``--fmad=false``,
float denormals flushed to zero as CuPy's ``-ftz=true`` makes them (host NumPy untouched), and
float16 conversions as the GPU's: round to nearest even, half subnormals kept.
``HYBRIDGPU_VGPU_ROUNDING=ieee`` turns contraction and flushing off."""

from __future__ import annotations

import os
import shutil
import warnings

import numpy as np
import pytest

from hybridgpu import vgpu
from hybridgpu.vgpu import rounding

pytestmark = pytest.mark.skipif(shutil.which(os.environ.get("CXX", "g++")) is None,
                                reason="the virtual GPU compiles kernels with g++")

SOURCE = r"""
extern "C" __global__ void muladd(const float* a, const float* b, const float* c, float* y,
                                  int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a[i] * b[i] + c[i];
}
extern "C" __global__ void scale(const float* x, float s, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * s;
}
extern "C" __global__ void halves(const __half* h, float* widened, const float* f,
                                  __half* narrowed, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { widened[i] = __half2float(h[i]); narrowed[i] = __float2half(f[i]); }
}
"""


@pytest.fixture(scope="module")
def xp():
    return vgpu.module(1)


def _run(xp, name, arrays, out_dtypes, scalars=(), options=()):
    kernel = xp.RawModule(code=SOURCE, options=options).get_function(name)
    n = len(arrays[0])
    outs = [xp.zeros(n, dtype) for dtype in out_dtypes]
    args = [xp.asarray(a) for a in arrays]
    if name == "halves":
        args = [args[0], outs[0], args[1], outs[1]]
    else:
        args = [*args, *scalars, *outs]
    kernel(((n + 63) // 64,), (64,), (*args, np.int32(n)))
    return [xp.asnumpy(o) for o in outs]


def _fma_cases():
    """Products a*b whose float32 rounding, then + c = -round(a*b), leaves 0 when rounded
    on its own and the rounding error when fused: (1+e)^2 = 1 + 2e + e^2, e^2 below half an
    ulp of 1 + 2e."""
    e = np.float32(2.0 ** -12) * np.arange(1, 17, 2, dtype=np.float32)  # odd: e^2 leaves a rest
    a = (np.float32(1) + e).astype(np.float32)
    b = a.copy()
    rounded = (a * b).astype(np.float32)  # NumPy rounds the product to float32
    exact = a.astype(np.float64) * b.astype(np.float64)  # exact: 48 bits fit in a double
    c = -rounded
    return a, b, c, (exact - rounded.astype(np.float64)).astype(np.float32)


def test_multiply_add_is_one_fused_rounding_by_default(xp):
    a, b, c, fused = _fma_cases()
    (y,) = _run(xp, "muladd", [a, b, c], [np.float32])
    assert np.all(fused != 0)  # the cases do tell fused from unfused
    np.testing.assert_array_equal(y, fused)


@pytest.mark.parametrize("option", ["--fmad=false", "-fmad=false"])
def test_fmad_false_rounds_each_product_like_numpy(xp, option):
    a, b, c, _ = _fma_cases()
    rng = np.random.default_rng(3)
    ra, rb, rc = (rng.standard_normal(1000).astype(np.float32) for _ in range(3))
    a, b, c = np.concatenate([a, ra]), np.concatenate([b, rb]), np.concatenate([c, rc])
    (y,) = _run(xp, "muladd", [a, b, c], [np.float32], options=("-std=c++17", option))
    np.testing.assert_array_equal(y, a * b + c)  # NumPy: float32 product, then float32 sum


def test_a_bad_fmad_value_is_refused(xp):
    with pytest.raises(ValueError, match="--fmad takes true or false"):
        xp.RawModule(code=SOURCE, options=("--fmad=no",)).get_function("muladd")


def test_float_denormals_are_flushed_in_and_out_and_the_host_is_untouched(xp):
    tiny = np.finfo(np.float32).tiny  # smallest normal float32
    x = np.array([tiny, tiny * 4, 1e-40, -1e-41, 1.0], dtype=np.float32)
    (y,) = _run(xp, "scale", [x], [np.float32], scalars=(np.float32(0.5),))
    # tiny/2 is a denormal result: zero; tiny*4/2 stays normal; denormal inputs read as zero
    np.testing.assert_array_equal(y, np.array([0, tiny * 2, 0, 0, 0.5], dtype=np.float32))
    assert np.signbit(y[3])  # a sign-preserving zero, as the GPU's flush
    assert np.float32(1e-40) * np.float32(1) != 0  # NumPy after the launch keeps denormals


def test_float16_conversions_round_as_the_gpu(xp):
    rng = np.random.default_rng(7)
    f = np.concatenate([rng.standard_normal(2000) * 100, rng.standard_normal(500) * 1e-5,
                        [65504, 65520, 1e6, -1e6, 2.0 ** -25, 3 * 2.0 ** -26]])
    f = f.astype(np.float32)
    h = np.concatenate([np.arange(0, 1024, dtype=np.uint16),  # every half subnormal
                        rng.integers(0, 0x7C00, len(f) - 1024, dtype=np.uint16)])
    widened, narrowed = _run(xp, "halves", [h.view(np.float16), f], [np.float32, np.float16])
    np.testing.assert_array_equal(widened, h.view(np.float16).astype(np.float32))  # subnormals
    with np.errstate(over="ignore"):  # 65520 and beyond round to infinity, there as here
        want = f.astype(np.float16).view(np.uint16)
    np.testing.assert_array_equal(narrowed.view(np.uint16), want)  # nearest even


def test_the_ieee_mode_turns_contraction_and_flushing_off(xp, monkeypatch):
    monkeypatch.setenv("HYBRIDGPU_VGPU_ROUNDING", "ieee")
    a, b, c, _ = _fma_cases()
    (y,) = _run(xp, "muladd", [a, b, c], [np.float32])
    np.testing.assert_array_equal(y, a * b + c)
    x = np.array([np.finfo(np.float32).tiny, 1e-40], dtype=np.float32)
    (z,) = _run(xp, "scale", [x], [np.float32], scalars=(np.float32(0.5),))
    np.testing.assert_array_equal(z, x * np.float32(0.5))
    monkeypatch.setenv("HYBRIDGPU_VGPU_ROUNDING", "fast")
    with pytest.raises(ValueError, match="HYBRIDGPU_VGPU_ROUNDING='fast'"):
        rounding.mode()


def test_a_cpu_without_fma_warns_and_rounds_each_operation(monkeypatch):
    monkeypatch.setattr(rounding.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(rounding, "_cpu_flags", lambda: {"sse2", "avx"})
    rounding.fma_flags.cache_clear()
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            assert rounding.compile_flags(fmad=True) == ["-ffp-contract=off"]
        assert any("no FMA instructions" in str(w.message) for w in seen)
        monkeypatch.setattr(rounding, "_cpu_flags", lambda: {"sse2", "fma"})
        rounding.fma_flags.cache_clear()
        assert "-mfma" in rounding.compile_flags(fmad=True)
        assert rounding.compile_flags(fmad=False) == ["-ffp-contract=off"]
    finally:
        rounding.fma_flags.cache_clear()
