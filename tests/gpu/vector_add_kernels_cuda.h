// The CUDA source of the GPU vector-add test's kernels (vector_add, vector_add_staged, set_flag):
// shared by the GPU test and by the compile test that checks it builds for sm_90a on any machine.
#pragma once

namespace monotile {

inline constexpr char kVectorAddKernels[] = R"(
extern "C" __global__ void vector_add(const float* __restrict__ a, const float* __restrict__ b,
                                      float* __restrict__ c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// The same sum through dynamic shared memory, touching both ends of a buffer of smem_floats.
extern "C" __global__ void vector_add_staged(const float* a, const float* b, float* c, int n,
                                             int smem_floats) {
  extern __shared__ float stage[];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int far = smem_floats - 1 - threadIdx.x;
  stage[threadIdx.x] = i < n ? a[i] : 0.0f;
  stage[far] = i < n ? b[i] : 0.0f;
  __syncthreads();
  if (i < n) c[i] = stage[threadIdx.x] + stage[far];
}

// Writes a health word in host-mapped memory, visible to the host without a synchronize.
extern "C" __global__ void set_flag(volatile unsigned int* flag, unsigned int value) {
  __threadfence_system();
  *flag = value;
  __threadfence_system();
}
)";

}  // namespace monotile
