"""Representative CUDA C kernels (as the CUDA backend writes them) with their NumPy meaning:
compiled with NVRTC for sm_90 (tests/test_vgpu_nvrtc.py) and run through the virtual GPU's
shim (tests/test_vgpu_kernels.py).

Each entry: ``name -> (source, kernel, launch)`` where ``launch(xp, rng)`` runs the kernel on
the virtual GPU and returns ``(got, want)`` as NumPy arrays.
"""

from __future__ import annotations

import numpy as np

ELEMENTWISE_FLOAT4 = r"""
extern "C" __global__ void __launch_bounds__(256)
axpy_relu4(const float* __restrict__ x, float* __restrict__ y, float a, long long n4) {
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* y4 = reinterpret_cast<float4*>(y);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4;
       i += (long long)blockDim.x * gridDim.x) {
    float4 v = x4[i];
    float4 w = y4[i];
    w.x = fmaxf(a * v.x + w.x, 0.0f); w.y = fmaxf(a * v.y + w.y, 0.0f);
    w.z = fmaxf(a * v.z + w.z, 0.0f); w.w = fmaxf(a * v.w + w.w, 0.0f);
    y4[i] = w;
  }
}
"""

HALF = r"""
#include <cuda_fp16.h>
extern "C" __global__ void gelu_half(const __half* __restrict__ x, __half* __restrict__ y,
                                     int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = __half2float(x[i]);
    y[i] = __float2half_rn(0.5f * v * (1.0f + erff(v * 0.70710678f)));
  }
}
"""

REDUCTION = r"""
extern "C" __global__ void row_sum(const double* __restrict__ x, double* __restrict__ out,
                                   int cols) {
  __shared__ double partial[32];
  const double* row = x + (long long)blockIdx.x * cols;
  double s = 0.0;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) s += row[j];
  for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_xor_sync(0xffffffffu, s, offset);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    s = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.0;
    for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_down_sync(0xffffffffu, s, offset);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
  }
}
"""

OVERLOADS = r"""
extern "C" __global__ void overloads(const float* x, const double* d, float* y, double* e,
                                     int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = abs(x[i]) + min(x[i], 0.25f) + max(x[i], -0.25f) + rsqrtf(abs(x[i]) + 1.0f);
    e[i] = abs(d[i]) + min(d[i], 0.25) + max(d[i], -0.25) + tanh(d[i]);
    if (x[i] > 100.0f) y[i] = __int_as_float(0x7f800000);
  }
}
"""

BROADCAST_2D = r"""
extern "C" __global__ void bias_add_2d(const float* a, const float* bias, float* c, int rows,
                                       int cols) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < rows && col < cols) c[row * cols + col] = a[row * cols + col] + bias[col];
}
"""

DYNAMIC_SHARED = r"""
extern "C" __global__ void reverse_blocks(const float* x, float* y) {
  extern __shared__ float buf[];
  int t = threadIdx.x, base = blockIdx.x * blockDim.x;
  buf[t] = x[base + t];
  __syncthreads();
  y[base + t] = buf[blockDim.x - 1 - t];
}
"""

ATOMIC_HISTOGRAM = r"""
extern "C" __global__ void histogram(const int* values, unsigned int* counts, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    atomicAdd(&counts[values[i]], 1u);
}
"""


def _elementwise(xp, rng):
    n = 4096
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    dx, dy = xp.asarray(x), xp.asarray(y)
    k = xp.RawModule(code=ELEMENTWISE_FLOAT4).get_function("axpy_relu4")
    k((2,), (256,), (dx, dy, np.float32(1.5), n // 4))  # a grid-stride loop: 2 blocks
    return xp.asnumpy(dy), np.maximum(np.float32(1.5) * x + y, 0)


def _half(xp, rng):
    import math

    x = rng.uniform(-3, 3, 1000).astype(np.float16)
    dx, dy = xp.asarray(x), xp.zeros(1000, xp.float16)
    xp.RawModule(code=HALF).get_function("gelu_half")((4,), (256,), (dx, dy, np.int32(1000)))
    v = x.astype(np.float64)
    want = 0.5 * v * (1 + np.array([math.erf(t / math.sqrt(2)) for t in v]))
    return xp.asnumpy(dy).astype(np.float64), want.astype(np.float16).astype(np.float64)


def _reduction(xp, rng):
    x = rng.standard_normal((5, 1000))
    out = xp.zeros(5, xp.float64)
    k = xp.RawModule(code=REDUCTION).get_function("row_sum")
    k((5,), (256,), (xp.asarray(x), out, np.int32(1000)))
    return xp.asnumpy(out), x.sum(axis=1)


def _overloads(xp, rng):
    x = np.array([-2.5, -0.5, -0.1, 0.0, 0.3, 1.7, 200.0], np.float32)
    d = x.astype(np.float64)
    y, e = xp.zeros(7, xp.float32), xp.zeros(7, xp.float64)
    k = xp.RawModule(code=OVERLOADS).get_function("overloads")
    k((1,), (32,), (xp.asarray(x), xp.asarray(d), y, e, np.int32(7)))
    want_y = (np.abs(x) + np.minimum(x, 0.25) + np.maximum(x, -0.25)
              + 1 / np.sqrt(np.abs(x) + 1)).astype(np.float32)
    want_y[x > 100] = np.inf
    want_e = np.abs(d) + np.minimum(d, 0.25) + np.maximum(d, -0.25) + np.tanh(d)
    return np.concatenate([xp.asnumpy(y), xp.asnumpy(e)]), np.concatenate([want_y, want_e])


def _broadcast(xp, rng):
    a = rng.standard_normal((37, 50)).astype(np.float32)
    b = rng.standard_normal(50).astype(np.float32)
    c = xp.zeros((37, 50), xp.float32)
    k = xp.RawModule(code=BROADCAST_2D).get_function("bias_add_2d")
    k((4, 10), (16, 4), (xp.asarray(a), xp.asarray(b), c, np.int32(37), np.int32(50)))
    return xp.asnumpy(c), a + b


def _dynamic_shared(xp, rng):
    x = rng.standard_normal(3 * 64).astype(np.float32)
    y = xp.zeros(3 * 64, xp.float32)
    k = xp.RawModule(code=DYNAMIC_SHARED).get_function("reverse_blocks")
    k((3,), (64,), (xp.asarray(x), y), shared_mem=64 * 4)
    return xp.asnumpy(y), x.reshape(3, 64)[:, ::-1].ravel()


def _histogram(xp, rng):
    values = rng.integers(0, 10, 5000).astype(np.int32)
    counts = xp.zeros(10, xp.uint32)
    k = xp.RawModule(code=ATOMIC_HISTOGRAM).get_function("histogram")
    k((3,), (128,), (xp.asarray(values), counts, np.int32(5000)))
    return xp.asnumpy(counts), np.bincount(values, minlength=10).astype(np.uint32)


KERNELS = {
    "elementwise_float4": (ELEMENTWISE_FLOAT4, _elementwise),
    "half": (HALF, _half),
    "reduction_shared_shuffle": (REDUCTION, _reduction),
    "math_overloads": (OVERLOADS, _overloads),
    "broadcast_2d_grid": (BROADCAST_2D, _broadcast),
    "dynamic_shared": (DYNAMIC_SHARED, _dynamic_shared),
    "atomic_histogram": (ATOMIC_HISTOGRAM, _histogram),
}
