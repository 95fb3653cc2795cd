// The square GEMM benchmark kernel: C = A B^T in bf16 with f32 accumulation on the matrix unit,
// written as a plain DSL program (a range over K whose loads feed only a dot, which the lowering
// stages through shared memory and pipelines). Specialized per shape; tiles must divide the shape.
#pragma once

#include <cstdint>
#include <vector>

#include "dsl/ir.h"
#include "kernels/bench/bench_kernels.h"

namespace monotile::kernels::bench {

// One program instance computes a block_m x block_n tile of C, stepping K by block_k; instances
// are ordered in groups of `group_m` tile rows so that neighbours share A and B tiles in L2. The
// default: 8 warps of 64 x 64 accumulators, 48 KiB per pipeline stage (four stages), and L2 -> SM
// traffic of (1/128 + 1/256) x 2 bytes per multiply-add, the least of the tilings that fit.
struct GemmTiles {
  int block_m = 128;
  int block_n = 256;
  int block_k = 64;
  int group_m = 8;
  int num_warps = 8;
};

// C = A B^T: a [m, k], b [n, k], c [m, n], bf16 row-major, f32 accumulation, one bf16 rounding.
// Parameters: a, b, c (ptr<bf16>). m, n, k multiples of the tiles'. Name: gemm_m{m}_n{n}_k{k}.
dsl::Program gemm_program(int m, int n, int k, const GemmTiles& tiles = {});
BenchKernel gemm_kernel(int m, int n, int k, const GemmTiles& tiles = {});

// Tile configurations worth timing at 4096^3 (the first is the default); each compiles for sm_90a
// with no spills (gemm_compile_test) and is timed by gemm_gpu_test.
std::vector<GemmTiles> gemm_tile_candidates();

}  // namespace monotile::kernels::bench
