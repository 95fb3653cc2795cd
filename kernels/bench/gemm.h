// The square GEMM benchmark kernel: C = A B^T in bf16 with f32 accumulation on the matrix unit,
// written as a plain DSL program (a range over K whose loads feed only a dot, which the lowering
// stages through shared memory and pipelines). Specialized per shape; tiles must divide the shape.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dsl/ir.h"
#include "kernels/bench/bench_kernels.h"

namespace monotile::kernels::bench {

// One program instance computes a block_m x block_n tile of C, stepping K by block_k; instances
// are ordered in groups of `group_m` tile rows so that neighbours share A and B tiles in L2. The
// default (the fastest measured on the H200, docs/perf.md): two warpgroups of 64 x 256 on wgmma,
// each iteration's MMAs running on into the next, 48 KiB per pipeline stage (four stages, copies
// two iterations ahead), and L2 -> SM traffic of (1/128 + 1/256) x 2 bytes per multiply-add.
struct GemmConfig {
  std::string label{};  // "" for the exported gemm_m{m}_n{n}_k{k}, else the variant's `__label`
  int block_m = 128;
  int block_n = 256;
  int block_k = 64;
  int group_m = 8;
  int num_warps = 8;
  int num_stages = 0;                     // 0: the lowering's choice (dsl/ir.h KernelOptions)
  dsl::MmaKind mma = dsl::MmaKind::kAuto;  // the lowering's choice: wgmma on sm_90a, else mma.sync
  // C is written once and never read here: streaming stores keep L2 for the A and B panels.
  dsl::CacheHint c_cache = dsl::CacheHint::kStreaming;
};

// C = A B^T: a [m, k], b [n, k], c [m, n], bf16 row-major, f32 accumulation, one bf16 rounding.
// Parameters: a, b, c (ptr<bf16>). m, n, k multiples of the tiles'. Name: gemm_m{m}_n{n}_k{k},
// with `__{label}` appended for a labelled configuration.
dsl::Program gemm_program(int m, int n, int k, const GemmConfig& config = {});
BenchKernel gemm_kernel(int m, int n, int k, const GemmConfig& config = {});

// The configurations exported beside the default at 4096^3 as gemm_m4096_n4096_k4096__{label}
// (mma.sync, wgmma waiting in each iteration, other tilings and stage counts, C's cache policy);
// each compiles for sm_90a with no spills (gemm_compile_test) and is checked and timed by
// gemm_gpu_test.
std::vector<GemmConfig> gemm_variants();

}  // namespace monotile::kernels::bench
