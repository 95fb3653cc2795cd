// Test-only: runs AMD-spelled generated kernels on the host, one std::thread per GPU thread, so that
// lowering can be checked against the interpreter on a machine without a GPU. It emulates what the
// HIP spelling uses: thread/block indices, __syncthreads, __shfl_xor, the __hip_atomic_* builtins,
// __builtin_amdgcn_* (fence, timer, sleep, rcp, MFMA bf16 32x32x8 / 16x16x16) and nontemporal access.
// The MFMA emulation follows the same fragment maps as matrix_unit.cpp: it checks that the lowering
// is self-consistent, not the hardware's maps.
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <thread>
#include <vector>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__
struct emu_dim3 { int x, y, z; };
thread_local emu_dim3 threadIdx, blockIdx, gridDim;
alignas(16) unsigned char mt_smem[1 << 20];
static std::barrier<>* emu_block_barrier;
static std::vector<std::barrier<>*> emu_warp_barriers;
static int emu_warp_size;
static unsigned long long emu_slots[1024][16];
inline void __syncthreads() { emu_block_barrier->arrive_and_wait(); }
template <typename T> T __shfl_xor(T v, int m) {
  int tid = threadIdx.x, lane = tid % emu_warp_size, warp = tid / emu_warp_size;
  std::memcpy(&emu_slots[tid][0], &v, sizeof(T));
  emu_warp_barriers[warp]->arrive_and_wait();
  T out; std::memcpy(&out, &emu_slots[warp * emu_warp_size + (lane ^ m)][0], sizeof(T));
  emu_warp_barriers[warp]->arrive_and_wait();
  return out;
}
inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
inline int __float_as_int(float f) { int u; std::memcpy(&u, &f, 4); return u; }
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline float __int_as_float(int u) { float f; std::memcpy(&f, &u, 4); return f; }
inline long long __double_as_longlong(double d) { long long u; std::memcpy(&u, &d, 8); return u; }
inline double __longlong_as_double(long long u) { double d; std::memcpy(&d, &u, 8); return d; }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) { return (unsigned long long)(((unsigned __int128)a * b) >> 64); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
#define __HIP_MEMORY_SCOPE_WORKGROUP 1
#define __HIP_MEMORY_SCOPE_AGENT 2
#define __HIP_MEMORY_SCOPE_SYSTEM 3
template <typename T, typename U> T __hip_atomic_fetch_add(T* p, U v, int, int) { return std::atomic_ref<T>(*p).fetch_add((T)v); }
template <typename T, typename U> T __hip_atomic_fetch_and(T* p, U v, int, int) { return std::atomic_ref<T>(*p).fetch_and((T)v); }
template <typename T, typename U> T __hip_atomic_fetch_or(T* p, U v, int, int) { return std::atomic_ref<T>(*p).fetch_or((T)v); }
template <typename T, typename U> T __hip_atomic_fetch_xor(T* p, U v, int, int) { return std::atomic_ref<T>(*p).fetch_xor((T)v); }
template <typename T, typename U> T __hip_atomic_exchange(T* p, U v, int, int) { return std::atomic_ref<T>(*p).exchange((T)v); }
template <typename T, typename U> T __hip_atomic_fetch_max(T* p, U v, int, int) { std::atomic_ref<T> a(*p); T old = a.load(); while (old < (T)v && !a.compare_exchange_weak(old, (T)v)) {} return old; }
template <typename T, typename U> T __hip_atomic_fetch_min(T* p, U v, int, int) { std::atomic_ref<T> a(*p); T old = a.load(); while ((T)v < old && !a.compare_exchange_weak(old, (T)v)) {} return old; }
template <typename T, typename U> bool __hip_atomic_compare_exchange_strong(T* p, T* expected, U desired, int, int, int) { return std::atomic_ref<T>(*p).compare_exchange_strong(*expected, (T)desired); }
template <typename T> T __hip_atomic_load(T* p, int, int) { return std::atomic_ref<T>(*p).load(); }
template <typename T, typename U> void __hip_atomic_store(T* p, U v, int, int) { std::atomic_ref<T>(*p).store((T)v); }
#define __builtin_amdgcn_fence(o, s) std::atomic_thread_fence(std::memory_order_seq_cst)
#define __builtin_amdgcn_s_memrealtime() ((unsigned long long)std::chrono::steady_clock::now().time_since_epoch().count() / 10)
#define __builtin_amdgcn_s_sleep(n) std::this_thread::yield()
#define __builtin_amdgcn_rcpf(x) (1.0f / (x))
#define __builtin_trap() std::abort()
extern "C" void emu_run_thread(void** args);
extern "C" void emu_launch(void** args, int gx, int gy, int gz, int threads, int warp_size) {
  emu_warp_size = warp_size;
  std::barrier<> block(threads);
  emu_block_barrier = &block;
  std::vector<std::barrier<>*> warps;
  for (int w = 0; w < threads / warp_size; ++w) warps.push_back(new std::barrier<>(warp_size));
  emu_warp_barriers = warps;
  for (int z = 0; z < gz; ++z) for (int y = 0; y < gy; ++y) for (int x = 0; x < gx; ++x) {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back([=] {
      threadIdx = {t, 0, 0}; blockIdx = {x, y, z}; gridDim = {gx, gy, gz};
      emu_run_thread(args);
    });
    for (auto& th : pool) th.join();
  }
  for (auto* w : warps) delete w;
}
#define __builtin_nontemporal_load(p) (*(p))
#define __builtin_nontemporal_store(v, p) (*(p) = (v))
// MFMA 32x32x8 / 16x16x16 (bf16_1k from short patterns, f16 from _Float16) across the wavefront:
// lanes publish their fragments, then each lane computes its C elements.
template <int M, typename V, typename C>
C emu_mfma(V a, V b, C c) {
  int tid = threadIdx.x, lane = tid % emu_warp_size, warp = tid / emu_warp_size;
  static float A[1024][4], B[1024][4];
  auto value = [](auto x) -> float {
    if constexpr (sizeof(x) == 2 && !__is_same(decltype(x), short)) {
      return (float)x;
    } else {
      unsigned u = (unsigned)(unsigned short)x << 16;
      float f;
      memcpy(&f, &u, 4);
      return f;
    }
  };
  for (int e = 0; e < 4; ++e) { A[tid][e] = value(a[e]); B[tid][e] = value(b[e]); }
  emu_warp_barriers[warp]->arrive_and_wait();
  int kgroups = M == 32 ? 2 : 4;  // lanes / M
  int n_c = M == 32 ? 16 : 4;
  for (int e = 0; e < n_c; ++e) {
    int row = M == 32 ? 8 * (e >> 2) + 4 * (lane >> 5) + (e & 3) : 4 * (lane >> 4) + e;
    int col = lane % M;
    float s = c[e];
    for (int g = 0; g < kgroups; ++g) for (int i = 0; i < 4; ++i) {
      int al = warp * emu_warp_size + g * M + row, bl = warp * emu_warp_size + g * M + col;
      s += A[al][i] * B[bl][i];
    }
    c[e] = s;
  }
  emu_warp_barriers[warp]->arrive_and_wait();
  return c;
}
template <int M, typename V, typename C> C emu_mfma_call(V a, V b, C c, int, int, int) { return emu_mfma<M>(a, b, c); }
#define __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(...) emu_mfma_call<32>(__VA_ARGS__)
#define __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(...) emu_mfma_call<16>(__VA_ARGS__)
#define __builtin_amdgcn_mfma_f32_32x32x8f16(...) emu_mfma_call<32>(__VA_ARGS__)
#define __builtin_amdgcn_mfma_f32_16x16x16f16(...) emu_mfma_call<16>(__VA_ARGS__)
