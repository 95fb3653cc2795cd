// The vendor spellings of the sample kernels: the prelude macros each vendor defines (warp size,
// shuffles, barriers, atomics) and the matrix-unit kernel, which differs whole between vendors.
// Each vendor's text lives in its spelling_<vendor>.cpp; nothing else names a vendor intrinsic.
#pragma once

#include <string>

#include "dsl/target.h"

namespace monotile::testing::samples {

// Macro definitions for the prelude header: MT_WARP_SIZE (from the target), MT_KERNEL,
// MT_BARRIER(), MT_SHFL_XOR(value, lane_mask), MT_ATOMIC_ADD(pointer, value).
std::string cuda_spelling(const dsl::Target& target);
std::string hip_spelling(const dsl::Target& target);

// C[M, N] (f32) = A[M, K] (bf16, row-major) x B[K, N] (bf16, row-major) on the matrix unit, one
// warp (wavefront) per tile; kernel "mt_matrix_tile"; the tile shape is in cuda/hip_matrix_tile().
std::string cuda_matrix_source();
std::string hip_matrix_source();

struct MatrixTile {
  int m;
  int n;
  int k;
};
MatrixTile cuda_matrix_tile();  // mma.sync m16n8k16
MatrixTile hip_matrix_tile();   // v_mfma_f32_32x32x8bf16_1k

}  // namespace monotile::testing::samples
