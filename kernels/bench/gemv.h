// The decode GEMV y = x W^T (bf16 x [m, k], W [n, k], y [m, n], f32 accumulation, one bf16
// rounding) for the side-by-side harness, and the configuration that shapes it. Small m streams W
// through FMA units with 16-byte loads; larger m goes through the matrix unit. Split-K programs
// hand their f32 partials to the last program to arrive on a row block, which sums them in a fixed
// order (deterministic), writes y and resets its counter: one graph-safe launch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dsl/ir.h"
#include "kernels/bench/bench_kernels.h"

namespace monotile::kernels::bench {

struct GemvConfig {
  bool matrix_unit = false;  // dot on the matrix unit (m padded to 16) instead of FMA per row of x
  int block_n = 16;          // rows of W per program (power of two; the FMA path needs n % block_n == 0,
                             // the matrix-unit paths mask the last block's rows)
  int block_k = 256;         // columns of W per loop step (power of two, a multiple of 8)
  int splits = 1;            // programs along K per row block (grid axis 1); k / splits % block_k == 0
  int num_warps = 4;
  bool prefetch = true;   // FMA path: load the next step's W before this step's FMAs
  bool streaming = true;  // W loads carry the streaming (evict-first) cache hint
  bool swap_operands = false;  // matrix unit: y^T = W x^T (W's rows as the unit's M, x's as N)
};

// The configuration the exported kernels use for this shape (rules from the H200 measurements:
// gemv.cpp). FMA path, splits: the fewest that give the target programs (two per SM, whose W
// tiles in flight, 8-16 KB each, cover HBM's bandwidth x latency), as long as the partials
// (written and read: 8 splits m n bytes) stay under an eighth of W's bytes. Matrix-unit paths
// (m > 2): long contiguous runs of W per step, every program resident at once (the pipeline's
// shared memory per SM decides), and x's L2 -> SM traffic (m / block_n of W's) kept down.
inline constexpr int kGemvFmaMaxRows = 2;
inline constexpr int kGemvTargetPrograms = 264;
GemvConfig gemv_config(int m, int n, int k);

// A short name of the configuration, the label of its variant: path (fma, wa: W as the matrix
// unit's A operand, xa: x as A), rows of W per program, warps, step, splits, "_pf" for prefetch
// (e.g. "wa_bn64_w4_bk32_s4").
std::string gemv_label(const GemvConfig& config);

// Requirements on (m, n, k, config); throws dsl::Error naming what does not divide.
// Parameters: x, w, y (ptr<bf16>), and with splits > 1 the workspaces kGemvPartials (ptr<f32>,
// splits x m x n) and kGemvCounters (ptr<i32>, n / block_n; zero before the first launch, left
// zero by every launch). Name: gemv_m{m}_k{k}_n{n}, or with `suffix` appended.
inline constexpr const char* kGemvPartials = "gemv_partials";
inline constexpr const char* kGemvCounters = "gemv_counters";
dsl::Program gemv_program(int m, int n, int k, const GemvConfig& config, const std::string& suffix = "");

// The bytes each workspace needs (0 when the configuration has no split).
int64_t gemv_partials_bytes(int m, int n, const GemvConfig& config);
int64_t gemv_counters_bytes(int n, const GemvConfig& config);

// The program with its grid (n / block_n, splits) and workspaces.
BenchKernel gemv_kernel(int m, int n, int k, const GemvConfig& config, const std::string& suffix = "");

// Other configurations of the harness shapes, exported as gemv_m{m}_k{k}_n{n}__{gemv_label} so
// that the harness measures them beside the chosen one (none equals the chosen configuration).
std::vector<BenchKernel> gemv_variant_kernels();

}  // namespace monotile::kernels::bench
