// The row softmax and its variants. A row lives in registers: one load, a max and a sum across the
// program, one store. exp(x - m) is computed as exp2(x log2e - m log2e), one FMA and one MUFU.EX2
// per element where expf needs a range reduction; its extra relative error (|x - m| log2e ulp of
// f32, under 1e-5 for bf16 inputs) is far below the bf16 output's rounding. The division by the sum
// becomes one reciprocal per row and a multiply per element (again within f32 rounding).
//
// Measured on the H200 (docs/perf.md, GPU run of 2026-12-02), 8192 x 4096, Triton 34.7 us: exp and
// a division, 8 warps 45.5 us (46 SASS instructions per element: issue-bound); exp2 and the
// reciprocal, 8 warps 36.6 us, 4 warps 37.3 us, 2 warps 42.6 us.
#include "kernels/bench/softmax.h"

#include <cmath>
#include <numbers>
#include "support/source_location.h"
#include <string>

#include "dsl/dsl.h"

namespace monotile::kernels::bench {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

Program softmax_program(int rows, int cols, const SoftmaxConfig& config) {
  const int per = config.rows_per_program;
  if (per < 1 || rows % per != 0) {
    const std::string expected = "rows a multiple of rows_per_program " + std::to_string(per);
    const std::string actual = "rows " + std::to_string(rows);
    throw Error(SourceLoc::from(SourceLocation::current()), "softmax_program",
                "the rows do not divide among programs: expected " + expected + ", got " + actual, expected, actual,
                "pick rows_per_program dividing rows");
  }
  Builder b("softmax_rows" + std::to_string(rows) + "_cols" + std::to_string(cols) +
                (config.label.empty() ? "" : "__" + config.label),
            {.num_warps = config.num_warps});
  // The row length is the C++ constant, not a run-time argument: the base stays a known multiple of
  // 8 elements, so each lane's chunks are 16-byte accesses.
  auto x = b.arg("x", ptr(bf16)), y = b.arg("y", ptr(bf16));
  auto offs = arange(0, cols);
  if (per > 1) {
    auto row_ids = program_id(0).to(i64) * per + arange(0, per).to(i64);
    offs = col(row_ids) * cols + row(offs);
  } else {
    offs = program_id(0).to(i64) * cols + offs;
  }
  auto v = load(x + offs).to(f32);
  std::optional<int> axis = per > 1 ? std::optional<int>(1) : std::nullopt;
  auto m = max(v, axis, per > 1);
  if (config.exp2) {
    constexpr float kLog2e = std::numbers::log2e_v<float>;
    auto e = exp2(v * kLog2e - m * kLog2e);
    auto inv = 1.0f / sum(e, axis, per > 1);
    store(y + offs, (e * inv).to(bf16));
  } else {
    auto e = exp(v - m);
    store(y + offs, (e / sum(e, axis, per > 1)).to(bf16));
  }
  return b.finish();
}

BenchKernel softmax_kernel(int rows, int cols, const SoftmaxConfig& config) {
  BenchKernel kernel;
  kernel.program = softmax_program(rows, cols, config);
  kernel.grid = {rows / config.rows_per_program, 1, 1};
  return kernel;
}

Program softmax_program(int rows, int cols) { return softmax_program(rows, cols, {}); }

BenchKernel softmax_kernel(int rows, int cols) { return softmax_kernel(rows, cols, {}); }

std::vector<SoftmaxConfig> softmax_variants() {
  return {
      {.label = "w8_exp", .exp2 = false},  // the first exported version
      {.label = "w4", .num_warps = 4},
      {.label = "w16", .num_warps = 16},
  };
}

}  // namespace monotile::kernels::bench
