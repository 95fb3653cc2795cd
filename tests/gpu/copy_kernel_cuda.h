// The CUDA source of gpu_copy_bench's copy kernel: each lane moves 16 bytes per step of a
// grid-stride loop. Shared by the benchmark and the compile test.
#pragma once

namespace monotile {

inline constexpr char kCopyKernel[] = R"(
extern "C" __global__ void __launch_bounds__(512) copy16(const uint4* __restrict__ source,
                                                          uint4* __restrict__ destination,
                                                          unsigned long long count) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    destination[i] = source[i];
  }
}
)";

}  // namespace monotile
