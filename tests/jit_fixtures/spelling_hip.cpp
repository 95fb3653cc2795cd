// HIP spellings for the sample kernels, and the MFMA 32x32x8 bf16 kernel (one wavefront per 32x32
// tile: lane l holds A row l%32 and B column l%32 at k = 4*(l/32) .. +3; accumulator j of lane l is
// C row 8*(j/4) + 4*(l/32) + j%4, column l%32). hiprtc pre-includes the HIP device header.
#include "absl/strings/str_cat.h"
#include "tests/jit_fixtures/spelling.h"

namespace monotile::testing::samples {

std::string hip_spelling(const dsl::Target& target) {
  return absl::StrCat("#define MT_WARP_SIZE ", target.warp_size(), "\n",
                      "#define MT_KERNEL extern \"C\" __global__\n"
                      "#define MT_BARRIER() __syncthreads()\n"
                      "#define MT_SHFL_XOR(value, mask) __shfl_xor((value), (mask), MT_WARP_SIZE)\n"
                      "#define MT_ATOMIC_ADD(pointer, value) atomicAdd((pointer), (value))\n");
}

MatrixTile hip_matrix_tile() { return {32, 32, 8}; }

std::string hip_matrix_source() {
  return R"(#include "monotile_sample.h"
typedef short mt_short4 __attribute__((ext_vector_type(4)));
typedef float mt_float16 __attribute__((ext_vector_type(16)));

MT_KERNEL void __launch_bounds__(MT_WARP_SIZE) mt_matrix_tile(const mt_bf16* __restrict__ a,
    const mt_bf16* __restrict__ b, float* __restrict__ c, int m, int n, int k) {
  const int row0 = blockIdx.y * 32, col0 = blockIdx.x * 32;
  const int lane = threadIdx.x % 32, half = threadIdx.x / 32;
  mt_float16 acc;
  for (int j = 0; j < 16; ++j) acc[j] = 0.0f;
  for (int k0 = 0; k0 < k; k0 += 8) {
    mt_short4 a_frag, b_frag;
    for (int i = 0; i < 4; ++i) {
      a_frag[i] = (short)a[(row0 + lane) * k + k0 + half * 4 + i].bits;
      b_frag[i] = (short)b[(k0 + half * 4 + i) * n + col0 + lane].bits;
    }
    acc = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(a_frag, b_frag, acc, 0, 0, 0);
  }
  for (int j = 0; j < 16; ++j) {
    c[(row0 + 8 * (j / 4) + 4 * half + j % 4) * n + col0 + lane] = acc[j];
  }
}
)";
}

}  // namespace monotile::testing::samples
