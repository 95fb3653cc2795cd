// CUDA spellings for the sample kernels, and the mma.sync m16n8k16 bf16 kernel (PTX fragment
// layouts: A rows groupID / groupID+8, k pairs threadID_in_group*2 (+8); B k pairs likewise, column
// groupID; C rows groupID / groupID+8, columns threadID_in_group*2, +1).
#include "absl/strings/str_cat.h"
#include "tests/jit_fixtures/spelling.h"

namespace monotile::testing::samples {

std::string cuda_spelling(const dsl::Target& target) {
  return absl::StrCat("#define MT_WARP_SIZE ", target.warp_size(), "\n",
                      "#define MT_KERNEL extern \"C\" __global__\n"
                      "#define MT_BARRIER() __syncthreads()\n"
                      "#define MT_SHFL_XOR(value, mask) __shfl_xor_sync(0xffffffffu, (value), (mask), MT_WARP_SIZE)\n"
                      "#define MT_ATOMIC_ADD(pointer, value) atomicAdd((pointer), (value))\n");
}

MatrixTile cuda_matrix_tile() { return {16, 8, 16}; }

std::string cuda_matrix_source() {
  return R"(#include "monotile_sample.h"
// Two bf16 in one register, the lower k in the low half.
__device__ inline unsigned mt_pack(mt_bf16 low, mt_bf16 high) {
  return (unsigned)low.bits | ((unsigned)high.bits << 16);
}

MT_KERNEL void __launch_bounds__(MT_WARP_SIZE) mt_matrix_tile(const mt_bf16* __restrict__ a,
    const mt_bf16* __restrict__ b, float* __restrict__ c, int m, int n, int k) {
  const int row0 = blockIdx.y * 16, col0 = blockIdx.x * 8;
  const int group = threadIdx.x >> 2, pair = (threadIdx.x & 3) * 2;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int k0 = 0; k0 < k; k0 += 16) {
    const mt_bf16* a_top = a + (row0 + group) * k + k0 + pair;
    const mt_bf16* a_bottom = a_top + 8 * k;
    const mt_bf16* b_col = b + (k0 + pair) * n + col0 + group;
    unsigned a_frag0 = mt_pack(a_top[0], a_top[1]);
    unsigned a_frag1 = mt_pack(a_bottom[0], a_bottom[1]);
    unsigned a_frag2 = mt_pack(a_top[8], a_top[9]);
    unsigned a_frag3 = mt_pack(a_bottom[8], a_bottom[9]);
    unsigned b_frag0 = mt_pack(b_col[0], b_col[n]);
    unsigned b_frag1 = mt_pack(b_col[8 * n], b_col[9 * n]);
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
        : "r"(a_frag0), "r"(a_frag1), "r"(a_frag2), "r"(a_frag3), "r"(b_frag0), "r"(b_frag1));
  }
  float* top = c + (row0 + group) * n + col0 + pair;
  top[0] = acc[0];
  top[1] = acc[1];
  top[8 * n] = acc[2];
  top[8 * n + 1] = acc[3];
}
)";
}

}  // namespace monotile::testing::samples
