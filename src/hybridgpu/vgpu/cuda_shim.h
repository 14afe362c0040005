// cuda_shim.h: hybridgpu's virtual GPU compiles CUDA C kernels with g++ through this header.
//
// A launch runs the blocks one after another on the calling thread. The threads of a block run
// in turn: straight through when the source has no barrier or shuffle, else as fibers
// (ucontext) that run up to their next barrier: a __syncthreads releases when every live
// thread of the block waits at the same one (else the launch fails: threads at different
// barriers deadlock or corrupt on a GPU); a shuffle, vote or __syncwarp releases when the lanes
// of its mask in the same warp of 32 all wait at one (each warp runs on through its warp syncs
// before the next warp starts, so a warp sync orders nothing between warps). Order flags of
// the launch (cfg[8]) run blocks, warps and lanes in reverse or shuffled order and fill shared
// memory with 0xff bytes (NaN) at the start of every block, so a race or a value assumed to
// survive from another block shows. Faults are caught and reported, not crashed on: a SIGSEGV/SIGBUS during the launch
// (the guard pages around every virtual allocation) and a misaligned vector
// (float2/float4/double2/int4...) load or store end the launch with a message (shim::Report).
// The math overloads are CUDA's (abs/min/max on float stay float; mixed int/float min/max is
// ambiguous, as under NVRTC). Static __shared__ arrays live in the section vgpu_shared (the
// library is linked with -fno-weak so inline functions' arrays may join it; arrays declared in
// templates are not poisoned).
#pragma once
#include <math.h>
#include <csetjmp>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>
#include <sys/mman.h>
#include <ucontext.h>
// NVRTC has no INFINITY/NAN (no C headers): g++ must reject them too.
#undef INFINITY
#undef NAN

#define __global__
#define __device__
#define __host__
#define __constant__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
// Static shared arrays: one copy, since the virtual GPU runs one launch at a time in the process.
#define __shared__ static __attribute__((section("vgpu_shared")))
extern "C" char __start_vgpu_shared[] __attribute__((weak, visibility("hidden")));
extern "C" char __stop_vgpu_shared[] __attribute__((weak, visibility("hidden")));

struct uint3 { unsigned x, y, z; };
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  dim3() = default;
  dim3(unsigned x_, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
inline thread_local uint3 threadIdx, blockIdx;
inline thread_local dim3 blockDim, gridDim;
constexpr int warpSize = 32;

namespace shim {
struct Report { int code; unsigned long long address; unsigned block[3], thread[3]; char what[96]; };
inline thread_local sigjmp_buf* fault_exit = nullptr;
inline thread_local Report* report = nullptr;
inline thread_local void* dyn_shared = nullptr;
[[noreturn]] inline void fail(int code, const void* address, const char* what) {
  report->code = code;
  report->address = (unsigned long long)(uintptr_t)address;
  report->block[0] = blockIdx.x; report->block[1] = blockIdx.y; report->block[2] = blockIdx.z;
  report->thread[0] = threadIdx.x; report->thread[1] = threadIdx.y; report->thread[2] = threadIdx.z;
  snprintf(report->what, sizeof report->what, "%s", what);
  siglongjmp(*fault_exit, 1);
}
// The address is laundered through asm so g++ cannot fold the check away from the type's
// alignment (a misaligned T* is exactly what is being looked for).
inline void check_aligned(const void* p, uintptr_t align, const char* what) {
  uintptr_t a = (uintptr_t)p;
  asm volatile("" : "+r"(a));
  if (a & (align - 1)) fail(2, p, what);
}
}  // namespace shim

// Vector types: every copy from or to memory checks the address's alignment, as the GPU's
// 64/128-bit loads require.
#define SHIM_VEC2(T, E, A)                                                                 \
  struct __attribute__((aligned(A))) T {                                                   \
    E x, y;                                                                                \
    T() = default;                                                                         \
    T(E x_, E y_) : x(x_), y(y_) {}                                                        \
    T(const T& o) { shim::check_aligned(&o, A, #T " load"); x = o.x; y = o.y; }            \
    T& operator=(const T& o) {                                                             \
      shim::check_aligned(&o, A, #T " load"); shim::check_aligned(this, A, #T " store");   \
      x = o.x; y = o.y; return *this;                                                      \
    }                                                                                      \
  };                                                                                       \
  inline T make_##T(E x, E y) { return T(x, y); }
#define SHIM_VEC4(T, E, A)                                                                 \
  struct __attribute__((aligned(A))) T {                                                   \
    E x, y, z, w;                                                                          \
    T() = default;                                                                         \
    T(E x_, E y_, E z_, E w_) : x(x_), y(y_), z(z_), w(w_) {}                              \
    T(const T& o) { shim::check_aligned(&o, A, #T " load"); x = o.x; y = o.y; z = o.z; w = o.w; } \
    T& operator=(const T& o) {                                                             \
      shim::check_aligned(&o, A, #T " load"); shim::check_aligned(this, A, #T " store");   \
      x = o.x; y = o.y; z = o.z; w = o.w; return *this;                                    \
    }                                                                                      \
  };                                                                                       \
  inline T make_##T(E x, E y, E z, E w) { return T(x, y, z, w); }
SHIM_VEC2(float2, float, 8)
SHIM_VEC4(float4, float, 16)
SHIM_VEC2(double2, double, 16)
SHIM_VEC2(int2, int, 8)
SHIM_VEC4(int4, int, 16)
SHIM_VEC2(uint2, unsigned, 8)
SHIM_VEC4(uint4, unsigned, 16)
SHIM_VEC2(longlong2, long long, 16)
struct float3 { float x, y, z; };
inline float3 make_float3(float x, float y, float z) { return {x, y, z}; }
inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return {x, y, z}; }

// CUDA's min/max overloads (math_functions.hpp): same-type and the listed mixed pairs only.
#define SHIM_MINMAX(A, B, R)                                                               \
  inline R min(A a, B b) { return (R)b < (R)a ? (R)b : (R)a; }                             \
  inline R max(A a, B b) { return (R)a < (R)b ? (R)b : (R)a; }
SHIM_MINMAX(int, int, int)
SHIM_MINMAX(unsigned, unsigned, unsigned)
SHIM_MINMAX(int, unsigned, unsigned)
SHIM_MINMAX(unsigned, int, unsigned)
SHIM_MINMAX(long, long, long)
SHIM_MINMAX(unsigned long, unsigned long, unsigned long)
SHIM_MINMAX(long long, long long, long long)
SHIM_MINMAX(unsigned long long, unsigned long long, unsigned long long)
SHIM_MINMAX(long long, unsigned long long, unsigned long long)
SHIM_MINMAX(unsigned long long, long long, unsigned long long)
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline double min(float a, double b) { return fmin(a, b); }
inline double max(float a, double b) { return fmax(a, b); }
inline double min(double a, float b) { return fmin(a, b); }
inline double max(double a, float b) { return fmax(a, b); }

// Intrinsics. The fast-math ones are exact here (the GPU's are approximate).
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline float __powf(float a, float b) { return powf(a, b); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline float __saturatef(float x) { return fminf(fmaxf(x, 0.0f), 1.0f); }
inline float normcdff(float x) { return 0.5f * erfcf(-x * 0.70710678118654752f); }
inline double normcdf(double x) { return 0.5 * erfc(-x * 0.70710678118654752); }
template <class To, class From> inline To shim_bits(From v) { To t; memcpy(&t, &v, sizeof t); return t; }
inline int __float_as_int(float f) { return shim_bits<int>(f); }
inline unsigned __float_as_uint(float f) { return shim_bits<unsigned>(f); }
inline float __int_as_float(int i) { return shim_bits<float>(i); }
inline float __uint_as_float(unsigned i) { return shim_bits<float>(i); }
inline long long __double_as_longlong(double d) { return shim_bits<long long>(d); }
inline double __longlong_as_double(long long i) { return shim_bits<double>(i); }
template <class T> inline T __ldg(const T* p) { return *p; }
inline unsigned __activemask() { return 0xffffffffu; }

// Half precision: GCC's _Float16 (conversions round to nearest even, as __float2half_rn).
using __half = _Float16;
using half = _Float16;
inline float __half2float(__half h) { return (float)h; }
inline __half __float2half(float f) { return (__half)f; }
inline __half __float2half_rn(float f) { return (__half)f; }
inline __half __double2half(double d) { return (__half)d; }

// Atomics: the blocks and threads of a launch run one at a time, so plain updates are atomic.
#define SHIM_ATOMIC(name, T, expr) inline T name(T* p, T v) { T old = *p; *p = (expr); return old; }
#define SHIM_ATOMICS(T)                                                                    \
  SHIM_ATOMIC(atomicAdd, T, old + v) SHIM_ATOMIC(atomicExch, T, v)                         \
  inline T atomicCAS(T* p, T c, T v) { T old = *p; if (old == c) *p = v; return old; }
SHIM_ATOMICS(int)
SHIM_ATOMICS(unsigned)
SHIM_ATOMICS(unsigned long long)
SHIM_ATOMIC(atomicAdd, float, old + v)
SHIM_ATOMIC(atomicAdd, double, old + v)
SHIM_ATOMIC(atomicExch, float, v)
SHIM_ATOMIC(atomicSub, int, old - v)
SHIM_ATOMIC(atomicSub, unsigned, old - v)
SHIM_ATOMIC(atomicMax, int, v > old ? v : old)
SHIM_ATOMIC(atomicMax, unsigned, v > old ? v : old)
SHIM_ATOMIC(atomicMax, long long, v > old ? v : old)
SHIM_ATOMIC(atomicMax, unsigned long long, v > old ? v : old)
SHIM_ATOMIC(atomicMin, int, v < old ? v : old)
SHIM_ATOMIC(atomicMin, unsigned, v < old ? v : old)
SHIM_ATOMIC(atomicMin, long long, v < old ? v : old)
SHIM_ATOMIC(atomicMin, unsigned long long, v < old ? v : old)

namespace shim {
// Fibers: one per thread of the block; a barrier hands control back to the scheduler, which
// runs one warp's fibers through their warp syncs up to a __syncthreads (or their end), then
// the next warp's, then releases the block.
// On x86-64 a fiber switch saves the callee-saved registers and swaps stacks (a few ns);
// elsewhere it is ucontext's swapcontext (which also saves the signal mask: a system call).
struct Fiber {
  void* sp; uint3 tid; bool done; unsigned char wait; unsigned exchanges, mask, passed; int line;
  char* stack;
#if !defined(__x86_64__)
  ucontext_t ctx;
#endif
};
constexpr size_t kStack = 1 << 17;  // a thread's stack (local variables); a guard page below
constexpr size_t kGuard = 1 << 12;
inline char* new_stack() {
  void* p = mmap(nullptr, kStack + kGuard, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  mprotect(p, kGuard, PROT_NONE);
  return (char*)p + kGuard;
}
inline thread_local Fiber* current = nullptr;
// The fibers and their stacks live in a pool the virtual GPU hands every launch (cfg[10]): one
// for the process, shared by every kernel library (each library has its own copy of this
// header's variables; launches run one at a time).
struct FiberPool { Fiber* fibers; unsigned long long count; };
inline thread_local Fiber* fibers = nullptr;
inline thread_local FiberPool* pool = nullptr;
inline thread_local void (*body)(void*);
inline thread_local void* body_arg;
inline unsigned lane_index() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
#if defined(__x86_64__)
extern "C" void vgpu_shim_switch(void** save_sp, void* load_sp);
asm(R"(
  .text
  .p2align 4
  .type vgpu_shim_switch, @function
vgpu_shim_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size vgpu_shim_switch, .-vgpu_shim_switch
)");
inline thread_local void* scheduler_sp = nullptr;
[[noreturn]] inline void fiber_main() {
  body(body_arg);
  current->done = true;
  vgpu_shim_switch(&current->sp, scheduler_sp);
  __builtin_unreachable();
}
inline void fiber_init(Fiber& x) {
  uintptr_t top = ((uintptr_t)(x.stack + kStack)) & ~(uintptr_t)15;
  void** sp = (void**)top;
  *--sp = nullptr;                              // fiber_main's (unused) return address
  *--sp = (void*)&fiber_main;                   // where the first switch "returns" to
  for (int r = 0; r < 6; ++r) *--sp = nullptr;  // rbp rbx r12-r15
  x.sp = sp;
}
inline void to_scheduler() { vgpu_shim_switch(&current->sp, scheduler_sp); }
inline void to_fiber(Fiber& x) { vgpu_shim_switch(&scheduler_sp, x.sp); }
#else
inline thread_local ucontext_t scheduler;
inline void fiber_entry() { body(body_arg); current->done = true; }
inline void fiber_init(Fiber& x) {
  getcontext(&x.ctx);
  x.ctx.uc_stack.ss_sp = x.stack; x.ctx.uc_stack.ss_size = kStack; x.ctx.uc_link = &scheduler;
  makecontext(&x.ctx, fiber_entry, 0);
}
inline void to_scheduler() { swapcontext(&current->ctx, &scheduler); }
inline void to_fiber(Fiber& x) { swapcontext(&scheduler, &x.ctx); }
#endif
// Launch order flags (cfg[8]) and the seed of the shuffled order (cfg[9]).
constexpr long long kReverse = 1, kShuffle = 2, kPoison = 4;
inline thread_local long long order_flags = 0;
inline thread_local unsigned long long order_seed = 0;
inline unsigned long long mix(unsigned long long x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
// What a fiber waits at: nothing (it runs), a __syncthreads, or a warp-scoped sync.
enum : unsigned char { kRunning = 0, kAtBlockBarrier = 1, kAtWarpSync = 2 };
inline void yield(unsigned char wait, unsigned mask, int line) {
  current->wait = wait; current->mask = mask; current->line = line;
  to_scheduler();
}
inline void block_barrier(int line) {
  if (current) { ++current->passed; yield(kAtBlockBarrier, 0, line); return; }
  if (blockDim.x * blockDim.y * blockDim.z > 1) fail(3, nullptr, "barrier outside fiber mode");
}
inline void warp_sync(unsigned mask) {
  if (current) { yield(kAtWarpSync, mask, 0); return; }
  if (blockDim.x * blockDim.y * blockDim.z > 1) fail(3, nullptr, "barrier outside fiber mode");
}
inline uint3 thread_of(unsigned t) {
  return uint3{t % blockDim.x, t / blockDim.x % blockDim.y, t / (blockDim.x * blockDim.y)};
}
// A shuffle: write own slot, sync the warp, read the source lane's slot. Two slot sets used in
// turn, so one sync a shuffle suffices (a set is rewritten only after every lane has read it).
// The source lane is in the caller's warp: the width must divide 32.
inline void check_width(int width) {
  if (width < 1 || width > 32 || (width & (width - 1)))
    fail(7, nullptr, "shuffles with a width other than 1, 2, 4, 8, 16 or 32 (a warp)");
}
template <class T> T exchange(T v, unsigned src, unsigned mask) {
  static thread_local T slots[2][1024];
  unsigned set = current ? current->exchanges++ & 1u : 0u;
  slots[set][lane_index()] = v;
  warp_sync(mask);
  return slots[set][src];
}
// The order threads are started (and resumed) in, warp by warp: warps and the lanes of each as
// numbered, reversed or shuffled. thread_order[warp_first[i] .. warp_first[i + 1]) holds the
// i-th warp to run.
inline thread_local unsigned thread_order[1024], warp_first[33];
inline void shuffle(unsigned* items, unsigned n, unsigned long long salt) {
  for (unsigned t = n; t > 1; --t) {
    unsigned j = (unsigned)(mix(order_seed ^ mix(salt * 1031 + t)) % t);
    unsigned keep = items[t - 1]; items[t - 1] = items[j]; items[j] = keep;
  }
}
inline void order_threads(unsigned n, unsigned long long block) {
  unsigned warps = (n + 31) / 32, seq[32];
  bool reverse = order_flags & kReverse, mixed = order_flags & kShuffle;
  for (unsigned w = 0; w < warps; ++w) seq[w] = reverse ? warps - 1 - w : w;
  if (mixed) shuffle(seq, warps, block * 33 + 32);
  unsigned pos = 0;
  for (unsigned i = 0; i < warps; ++i) {
    unsigned first = seq[i] * 32, lanes = n - first < 32 ? n - first : 32;
    warp_first[i] = pos;
    for (unsigned l = 0; l < lanes; ++l) thread_order[pos + l] = first + (reverse ? lanes - 1 - l : l);
    if (mixed) shuffle(thread_order + pos, lanes, block * 33 + i);
    pos += lanes;
  }
  warp_first[warps] = n;
}
[[noreturn]] inline void diverged(unsigned t, const char* what) {
  threadIdx = thread_of(t);
  fail(7, nullptr, what);
}
// Release the lanes of the warp starting at thread `first` when every lane named by the masks
// of those waiting at a warp sync waits at one. True when some were released.
inline bool release_warp(unsigned first, unsigned n) {
  unsigned need = 0, end = first + 32 < n ? first + 32 : n;
  for (unsigned t = first; t < end; ++t)
    if (!fibers[t].done && fibers[t].wait == kAtWarpSync) need |= fibers[t].mask | 1u << (t - first);
  if (!need) return false;
  for (unsigned t = first; t < end; ++t) {
    if (!(need >> (t - first) & 1u)) continue;
    if (fibers[t].done) diverged(t, "has exited, but a lane of its warp waits for it at a warp sync");
    if (fibers[t].wait != kAtWarpSync) return false;
  }
  for (unsigned t = first; t < end; ++t)
    if (need >> (t - first) & 1u) fibers[t].wait = kRunning;
  return true;
}
// Release the block when every live thread waits at the same __syncthreads (line and count);
// false when all ended; a thread elsewhere is a deadlock on a GPU: the launch fails.
inline bool release_block(unsigned n) {
  const Fiber* lead = nullptr;
  for (unsigned t = 0; t < n; ++t) {
    Fiber& x = fibers[t];
    if (x.done) continue;
    if (x.wait != kAtBlockBarrier)
      diverged(t, "waits at a warp sync that lanes of its warp pass by to wait at __syncthreads");
    if (!lead) { lead = &x; continue; }
    if (x.line != lead->line || x.passed != lead->passed) {
      static thread_local char what[96];
      snprintf(what, sizeof what, "waits at __syncthreads #%u (line %d), another at #%u (line %d)",
               x.passed, x.line, lead->passed, lead->line);
      diverged(t, what);
    }
  }
  if (!lead) return false;
  for (unsigned t = 0; t < n; ++t) fibers[t].wait = kRunning;
  return true;
}
// Run each warp in turn as far as it goes (through its warp syncs) before the next one starts,
// then release the block at its __syncthreads.
inline void run_warps(unsigned n) {
  for (;;) {
    for (unsigned i = 0; warp_first[i] < n; ++i) {
      unsigned first = thread_order[warp_first[i]] / 32 * 32;
      do {
        for (unsigned k = warp_first[i]; k < warp_first[i + 1]; ++k) {
          Fiber& x = fibers[thread_order[k]];
          if (x.done || x.wait != kRunning) continue;
          current = &x; threadIdx = x.tid;
          to_fiber(x);
        }
        current = nullptr;
      } while (release_warp(first, n));
    }
    if (!release_block(n)) return;
  }
}
template <class F> void run_block(F& f, bool use_fibers, unsigned long long block) {
  unsigned n = blockDim.x * blockDim.y * blockDim.z;
  order_threads(n, block);
  if (!use_fibers) {
    for (unsigned k = 0; k < n; ++k) { threadIdx = thread_of(thread_order[k]); f(); }
    return;
  }
  if (pool->count < n) {
    Fiber* grown = (Fiber*)realloc(pool->fibers, n * sizeof(Fiber));
    if (!grown) fail(8, nullptr, "out of host memory for the block's threads");
    pool->fibers = grown;
    for (; pool->count < n; ++pool->count)
      if (!(grown[pool->count].stack = new_stack()))
        fail(8, nullptr, "could not map a thread's stack (mmap failed: too many mappings?)");
  }
  fibers = pool->fibers;
  body = [](void* p) { (*static_cast<F*>(p))(); };
  body_arg = &f;
  for (unsigned t = 0; t < n; ++t) {
    Fiber& x = fibers[t];
    x.tid = thread_of(t); x.done = false; x.exchanges = 0;
    x.wait = kRunning; x.mask = 0; x.line = 0; x.passed = 0;
    fiber_init(x);
  }
  run_warps(n);
}
// The blocks in launch order: as numbered, reversed, or an affine permutation of the seed.
struct BlockOrder {
  unsigned long long n, a = 1, c = 0;
  explicit BlockOrder(unsigned long long count) : n(count) {
    if (!(order_flags & kShuffle) || n < 2) return;
    a = mix(order_seed) % n | 1u;
    while (gcd(a, n) != 1) a += 2;
    c = mix(order_seed + 1) % n;
  }
  static unsigned long long gcd(unsigned long long x, unsigned long long y) {
    while (y) { unsigned long long r = x % y; x = y; y = r; }
    return x;
  }
  unsigned long long operator[](unsigned long long i) const {
    if (order_flags & kReverse) i = n - 1 - i;
    return (unsigned long long)(((unsigned __int128)a * i + c) % n);
  }
};
inline void poison_shared(long long dynamic_bytes) {
  if (!(order_flags & kPoison)) return;
  if (__stop_vgpu_shared > __start_vgpu_shared)
    memset(__start_vgpu_shared, 0xff, (size_t)(__stop_vgpu_shared - __start_vgpu_shared));
  if (dynamic_bytes > 0) memset(dyn_shared, 0xff, (size_t)dynamic_bytes);
}

inline thread_local struct sigaction saved_segv, saved_bus, saved_fpe;
inline thread_local bool in_launch = false;
inline void on_fault(int sig, siginfo_t* info, void* context) {
  if (!in_launch) {
    sigaction(sig, sig == SIGSEGV ? &saved_segv : sig == SIGBUS ? &saved_bus : &saved_fpe, nullptr);
    return;
  }
  if (sig == SIGFPE) fail(4, info->si_addr, "integer division by zero");
#if defined(__x86_64__)
  uintptr_t sp = (uintptr_t)((ucontext_t*)context)->uc_mcontext.gregs[REG_RSP];
  if (current && sp < (uintptr_t)current->stack + 256)  // the thread's frame left its stack
    fail(6, info->si_addr, "stack overflow (over 128 KiB of local memory in one thread)");
#else
  (void)context;
#endif
  fail(1, info->si_addr, sig == SIGSEGV ? "segmentation fault" : "bus error");
}
// cfg: grid x y z, block x y z, fibers, dynamic shared bytes, order flags, seed, fiber pool
// address. Returns 0, or
// a fault code with *rep filled.
// The fault handlers are installed for the launch and restored after it; the virtual GPU runs
// one launch at a time in the process, so installs and restores nest.
template <class... A, size_t... I>
int launch(void (*k)(A...), const long long* cfg, void** args, Report* rep, std::index_sequence<I...>) {
  static thread_local char alt_stack[1 << 16];
  stack_t ss{}, saved_ss{}; ss.ss_sp = alt_stack; ss.ss_size = sizeof alt_stack;
  sigaltstack(&ss, &saved_ss);
  struct sigaction sa{}; sa.sa_sigaction = on_fault; sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &saved_segv); sigaction(SIGBUS, &sa, &saved_bus);
  sigaction(SIGFPE, &sa, &saved_fpe);
  sigjmp_buf exit_point; fault_exit = &exit_point; report = rep; rep->code = 0;
  void* shared = cfg[7] > 0 ? calloc(1, (size_t)cfg[7]) : nullptr;
  dyn_shared = shared;
  in_launch = true;
  if (sigsetjmp(exit_point, 1) == 0) {
    gridDim = dim3((unsigned)cfg[0], (unsigned)cfg[1], (unsigned)cfg[2]);
    blockDim = dim3((unsigned)cfg[3], (unsigned)cfg[4], (unsigned)cfg[5]);
    order_flags = cfg[8]; order_seed = (unsigned long long)cfg[9];
    pool = reinterpret_cast<FiberPool*>(cfg[10]);
    auto f = [&] { k(*static_cast<std::remove_reference_t<A>*>(args[I])...); };
    unsigned long long gx = gridDim.x, gxy = gx * gridDim.y;
    BlockOrder order(gxy * gridDim.z);
    for (unsigned long long i = 0; i < order.n; ++i) {
      unsigned long long b = order[i];
      blockIdx = uint3{(unsigned)(b % gx), (unsigned)(b / gx % gridDim.y), (unsigned)(b / gxy)};
      poison_shared(cfg[7]);
      run_block(f, cfg[6] != 0, b);
    }
  }
  in_launch = false; current = nullptr;
  sigaction(SIGSEGV, &saved_segv, nullptr); sigaction(SIGBUS, &saved_bus, nullptr);
  sigaction(SIGFPE, &saved_fpe, nullptr);
  sigaltstack(&saved_ss, nullptr);
  free(shared);
  return rep->code;
}
template <class... A> constexpr size_t arity(void (*)(A...)) { return sizeof...(A); }
}  // namespace shim

// __syncthreads is a macro so the check can name the line each thread waits at.
#define __syncthreads() ::shim::block_barrier(__LINE__)
[[noreturn]] inline void __trap() { shim::fail(5, nullptr, "__trap()"); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { shim::warp_sync(mask); }
inline void __threadfence() {}
inline void __threadfence_block() {}
// Warp votes: every lane posts its predicate, one warp sync, then each reads its warp's.
namespace shim {
inline unsigned warp_lanes() {  // the lanes of this thread's warp that exist in the block
  unsigned n = blockDim.x * blockDim.y * blockDim.z, first = lane_index() / 32 * 32;
  return n - first >= 32 ? 0xffffffffu : (1u << (n - first)) - 1u;
}
inline unsigned ballot(unsigned mask, int predicate) {
  static thread_local unsigned char posted[2][1024];
  unsigned set = current ? current->exchanges++ & 1u : 0u;
  unsigned t = lane_index(), first = t / 32 * 32, lanes = warp_lanes(), bits = 0;
  posted[set][t] = predicate != 0;
  warp_sync(mask);
  for (unsigned lane = 0; lane < 32; ++lane)
    if ((lanes >> lane & 1u) && posted[set][first + lane]) bits |= 1u << lane;
  return bits & mask;
}
// The lane of the caller's group of `width` that `lane` (0..width-1) names, as a block index.
inline unsigned group_lane(int width, unsigned lane) {
  check_width(width);
  unsigned t = lane_index();
  return t / (unsigned)width * (unsigned)width + lane;
}
}  // namespace shim
inline unsigned __ballot_sync(unsigned mask, int predicate) { return shim::ballot(mask, predicate); }
inline int __any_sync(unsigned mask, int predicate) { return shim::ballot(mask, predicate) != 0; }
inline int __all_sync(unsigned mask, int predicate) {
  return shim::ballot(mask, predicate) == (mask & shim::warp_lanes());
}
template <class T> T __shfl_sync(unsigned mask, T v, int src, int width = warpSize) {
  return shim::exchange(v, shim::group_lane(width, (unsigned)src % (unsigned)width), mask);
}
template <class T> T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = warpSize) {
  unsigned lane = shim::lane_index() % (unsigned)width;
  return shim::exchange(v, shim::group_lane(width, lane + delta < (unsigned)width ? lane + delta
                                                                                   : lane), mask);
}
template <class T> T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = warpSize) {
  unsigned lane = shim::lane_index() % (unsigned)width;
  return shim::exchange(v, shim::group_lane(width, lane >= delta ? lane - delta : lane), mask);
}
template <class T> T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = warpSize) {
  unsigned lane = shim::lane_index() % (unsigned)width, other = lane ^ (unsigned)lane_mask;
  return shim::exchange(v, shim::group_lane(width, other < (unsigned)width ? other : lane), mask);
}

// After the kernel source, the virtual GPU adds VGPU_EXPORT(name) for each kernel:
// extern "C" int name__vgpu_launch(cfg, args, report), args laid out like cuLaunchKernel's.
#define VGPU_EXPORT(k)                                                                     \
  extern "C" int k##__vgpu_launch(const long long* cfg, void** args, shim::Report* rep) {  \
    return shim::launch(k, cfg, args, rep, std::make_index_sequence<shim::arity(k)>{});    \
  }
