// The decode GEMV on the CPU interpreter against a float64 reference, at reduced shapes of the same
// builder: fresh random inputs, y poisoned (bf16 NaN) before every run so that a missed store fails,
// both paths (FMA rows, matrix unit), and split-K run twice on one workspace: the second launch is
// right too and the counters are back at zero after each.
#include "kernels/bench/gemv.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "dsl/error.h"
#include "dsl/interp/float16.h"
#include "dsl/interp/interpreter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/compare.h"
#include "tests/testing/seed.h"

namespace monotile::kernels::bench {
namespace {

using dsl::ScalarType;
using dsl::interp::ArgValue;
using dsl::interp::bf16_bits_from_double;
using dsl::interp::bf16_bits_to_double;

constexpr uint16_t kBf16Nan = 0x7fc1;

struct Problem {
  int m, n, k;
  std::vector<uint16_t> x, w;
  std::vector<double> ref, magnitude;
};

Problem make_problem(int m, int n, int k, std::mt19937& rng) {
  std::normal_distribution<double> dist(0.0, 1.0);
  Problem p{m, n, k, std::vector<uint16_t>(size_t(m) * k), std::vector<uint16_t>(size_t(n) * k), {}, {}};
  for (uint16_t& v : p.x) v = bf16_bits_from_double(dist(rng));
  for (uint16_t& v : p.w) v = bf16_bits_from_double(dist(rng));
  p.ref.assign(size_t(m) * n, 0.0);
  p.magnitude.assign(size_t(m) * n, 0.0);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      for (int l = 0; l < k; ++l) {
        double prod = bf16_bits_to_double(p.x[size_t(i) * k + l]) * bf16_bits_to_double(p.w[size_t(j) * k + l]);
        p.ref[size_t(i) * n + j] += prod;
        p.magnitude[size_t(i) * n + j] += std::abs(prod);
      }
    }
  }
  return p;
}

// Runs the kernel once on `p` with y poisoned and checks every element against float64: one bf16
// rounding of the result plus f32 accumulation error; NaN (an unwritten element) never passes.
void run_and_check(const BenchKernel& kernel, const Problem& p, std::vector<float>& partials,
                   std::vector<int32_t>& counters) {
  std::vector<uint16_t> y(size_t(p.m) * p.n, kBf16Nan);
  std::vector<ArgValue> args = {ArgValue::pointer(p.x.data(), ScalarType::kBf16),
                                ArgValue::pointer(p.w.data(), ScalarType::kBf16),
                                ArgValue::pointer(y.data(), ScalarType::kBf16)};
  dsl::interp::InterpretOptions options;
  options.allocations = {{p.x.data(), p.x.size() * 2, "x"}, {p.w.data(), p.w.size() * 2, "w"},
                         {y.data(), y.size() * 2, "y"}};
  if (!kernel.workspaces.empty()) {
    args.push_back(ArgValue::pointer(partials.data(), ScalarType::kF32));
    args.push_back(ArgValue::pointer(counters.data(), ScalarType::kI32));
    options.allocations.push_back({partials.data(), partials.size() * 4, "partials"});
    options.allocations.push_back({counters.data(), counters.size() * 4, "counters"});
  }
  absl::Status status =
      dsl::interp::interpret(kernel.program, {kernel.grid[0], kernel.grid[1], kernel.grid[2]}, args, options);
  ASSERT_TRUE(status.ok()) << status;
  for (size_t i = 0; i < y.size(); ++i) {
    double got = bf16_bits_to_double(y[i]);
    ASSERT_FALSE(std::isnan(got)) << "element " << i << " not written";
    ASSERT_TRUE(monotile::testing::agrees(got, p.ref[i], {1e-6 * p.magnitude[i], 1.0 / 128}))
        << "element " << i << ": " << got << ", float64 " << p.ref[i];
  }
}

// Two launches on one workspace (fresh x, W each time); the counters must end at zero each time.
void check(int m, int n, int k, const GemvConfig& config) {
  SCOPED_TRACE("m " + std::to_string(m) + " n " + std::to_string(n) + " k " + std::to_string(k) + " splits " +
               std::to_string(config.splits) + (config.matrix_unit ? " matrix unit" : " fma"));
  std::mt19937 rng = monotile::testing::case_rng();
  BenchKernel kernel = gemv_kernel(m, n, k, config);
  EXPECT_EQ(kernel.grid[0], (n + config.block_n - 1) / config.block_n);
  EXPECT_EQ(kernel.grid[1], config.splits);
  std::vector<float> partials(gemv_partials_bytes(m, n, config) / 4, NAN);
  std::vector<int32_t> counters(gemv_counters_bytes(n, config) / 4, 0);
  for (int launch = 0; launch < (config.splits > 1 ? 2 : 1); ++launch) {
    SCOPED_TRACE("launch " + std::to_string(launch));
    run_and_check(kernel, make_problem(m, n, k, rng), partials, counters);
    for (int32_t counter : counters) ASSERT_EQ(counter, 0);
  }
}

GemvConfig fma(int splits, int block_k = 256) {
  return GemvConfig{.matrix_unit = false, .block_n = 16, .block_k = block_k, .splits = splits, .num_warps = 4};
}

TEST(GemvInterp, FmaOneRow) { check(1, 32, 512, fma(1)); }

TEST(GemvInterp, FmaRowsNotAPowerOfTwo) { check(3, 16, 512, fma(1)); }

TEST(GemvInterp, FmaWideStep) { check(2, 16, 1024, fma(1, 512)); }

TEST(GemvInterp, FmaSplitKTwiceOnOneWorkspace) { check(4, 32, 768, fma(3)); }

TEST(GemvInterp, FmaWithoutPrefetch) {
  GemvConfig config = fma(2);
  config.prefetch = false;
  check(2, 16, 1024, config);
}

TEST(GemvInterp, MatrixUnitPaddedRows) {
  check(20, 16, 256, GemvConfig{.matrix_unit = true, .block_n = 16, .block_k = 128, .splits = 1, .num_warps = 4});
}

TEST(GemvInterp, MatrixUnitSplitKTwiceOnOneWorkspace) {
  check(16, 32, 512, GemvConfig{.matrix_unit = true, .block_n = 16, .block_k = 128, .splits = 2, .num_warps = 4});
}

TEST(GemvInterp, SwappedMatrixUnitPaddedRows) {
  check(5, 32, 512, GemvConfig{.matrix_unit = true, .block_n = 16, .block_k = 128, .splits = 2, .num_warps = 1,
                               .swap_operands = true});
}

TEST(GemvInterp, SwappedMatrixUnitUnpaddedRows) {
  check(16, 16, 256, GemvConfig{.matrix_unit = true, .block_n = 16, .block_k = 256, .splits = 1, .num_warps = 1,
                                .swap_operands = true});
}

TEST(GemvInterp, SwappedMatrixUnitMasksTheLastRowBlock) {
  check(5, 80, 512, GemvConfig{.matrix_unit = true, .block_n = 64, .block_k = 128, .splits = 2, .num_warps = 4,
                               .swap_operands = true});
}

TEST(GemvInterp, MatrixUnitMasksTheLastRowBlock) {
  check(20, 48, 256, GemvConfig{.matrix_unit = true, .block_n = 32, .block_k = 128, .splits = 2, .num_warps = 4});
}

GemvConfig matrix(int block_n, int num_warps, int block_k, int splits, bool swap) {
  return GemvConfig{.matrix_unit = true, .block_n = block_n, .block_k = block_k, .splits = splits,
                    .num_warps = num_warps, .prefetch = false, .swap_operands = swap};
}

// The sweep's families at reduced shapes: W as A with 32-128 rows per program on 2-8 warps,
// 32-wide steps and several splits, m up to 64 (x as a 64-wide B), the last row block masked.
TEST(GemvInterp, SwappedFourRowsPaddedToEight) { check(4, 32, 512, matrix(16, 1, 128, 1, true)); }

TEST(GemvInterp, SwappedThirtyTwoRowsOnTwoWarps) { check(8, 64, 256, matrix(32, 2, 64, 2, true)); }

TEST(GemvInterp, SwappedSixtyFourRowsNarrowStepsSplit) { check(32, 128, 512, matrix(64, 4, 32, 4, true)); }

TEST(GemvInterp, SwappedEightWarpsMaskTheLastRowBlock) { check(64, 160, 256, matrix(128, 8, 32, 2, true)); }

TEST(GemvInterp, SwappedFourWarpsOnAHundredTwentyEightRows) { check(64, 128, 128, matrix(128, 4, 32, 2, true)); }

TEST(GemvInterp, SwappedSevenSplits) { check(16, 64, 448, matrix(64, 4, 64, 7, true)); }

TEST(GemvInterp, MatrixUnitEightWarpsMaskTheLastRowBlock) { check(64, 160, 256, matrix(128, 8, 32, 2, false)); }

TEST(GemvInterp, FmaThirtyTwoRowsPerProgram) {
  check(1, 64, 512, GemvConfig{.matrix_unit = false, .block_n = 32, .block_k = 256, .splits = 1, .num_warps = 4,
                               .prefetch = false});
}

TEST(GemvInterp, LabelNamesPathBlocksAndSplits) {
  EXPECT_EQ(gemv_label(matrix(64, 4, 32, 4, true)), "wa_bn64_w4_bk32_s4");
  EXPECT_EQ(gemv_label(matrix(32, 4, 128, 1, false)), "xa_bn32_w4_bk128_s1");
  EXPECT_EQ(gemv_label(fma(2, 512)), "fma_bn16_w4_bk512_s2_pf");
}

TEST(GemvInterp, ConfigFillsTheGpuOnEveryHarnessShape) {
  for (int m : {1, 4, 8, 16, 32, 64}) {
    for (auto [k, n] : {std::pair{7168, 6288}, std::pair{1536, 7168}, std::pair{3584, 768}, std::pair{2304, 12288}}) {
      GemvConfig config = gemv_config(m, n, k);
      SCOPED_TRACE("m " + std::to_string(m) + " k " + std::to_string(k) + " n " + std::to_string(n));
      EXPECT_TRUE(n % config.block_n == 0 || config.matrix_unit);
      EXPECT_EQ(k % (config.block_k * config.splits), 0);
      EXPECT_EQ(config.matrix_unit, m > kGemvFmaMaxRows);
      const int programs = n / config.block_n * config.splits;
      EXPECT_TRUE(programs >= kGemvTargetPrograms / 2 || int64_t{32} * config.splits * m * 2 > k) << programs;
      EXPECT_TRUE(config.splits == 1 || int64_t{8} * config.splits * m <= k);  // partials: under W / 2
    }
  }
}

TEST(GemvInterp, WorkspacesNamedAsTheParameters) {
  BenchKernel kernel = gemv_kernel(4, 768, 3584);
  ASSERT_EQ(kernel.workspaces.size(), 2u);
  EXPECT_EQ(kernel.workspaces[0].name, kGemvPartials);
  EXPECT_EQ(kernel.workspaces[0].zero, WorkspaceZero::kNever);
  EXPECT_EQ(kernel.workspaces[1].name, kGemvCounters);
  EXPECT_EQ(kernel.workspaces[1].zero, WorkspaceZero::kOnce);
  std::vector<std::string> params;
  for (const dsl::Param& param : kernel.program.params) params.push_back(param.name);
  EXPECT_EQ(params, (std::vector<std::string>{"x", "w", "y", kGemvPartials, kGemvCounters}));
}

TEST(GemvInterp, VariantsAreNamedAfterAHarnessKernel) {
  std::set<std::string> harness, seen;
  for (const BenchKernel& kernel : bench_kernels()) harness.insert(kernel.program.name);
  std::vector<BenchKernel> variants = gemv_variant_kernels();
  EXPECT_GE(variants.size(), 24u);
  for (const BenchKernel& variant : variants) {
    const std::string& name = variant.program.name;
    const size_t separator = name.find("__");
    ASSERT_NE(separator, std::string::npos) << name;
    EXPECT_TRUE(harness.contains(name.substr(0, separator))) << name;
    EXPECT_TRUE(seen.insert(name).second) << "twice: " << name;
  }
}

TEST(GemvInterp, ShapeThatDoesNotDivideIsRefused) {
  try {
    gemv_program(4, 100, 512, fma(1));
    FAIL() << "expected dsl::Error";
  } catch (const dsl::Error& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("the shape does not divide into the configuration's blocks"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("m 4, n 100, k 512"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("hint: pick block sizes and splits that divide the shape"));
  }
}

}  // namespace
}  // namespace monotile::kernels::bench
