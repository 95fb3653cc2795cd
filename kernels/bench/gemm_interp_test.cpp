// The GEMM program on the CPU interpreter against a float64 reference at small shapes (ragged tile
// groups included): fresh random inputs, C poisoned with NaN first so that a missed tile fails.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "dsl/interp/float16.h"
#include "dsl/interp/interpreter.h"
#include "gtest/gtest.h"
#include "kernels/bench/gemm.h"
#include "tests/testing/compare.h"
#include "tests/testing/seed.h"

namespace monotile::kernels::bench {
namespace {

using dsl::interp::ArgValue;
using dsl::interp::bf16_bits_from_double;
using dsl::interp::bf16_bits_to_double;

std::vector<uint16_t> random_bf16(size_t count, std::mt19937& rng) {
  std::normal_distribution<double> dist(0.0, 1.0);
  std::vector<uint16_t> out(count);
  for (uint16_t& v : out) v = bf16_bits_from_double(dist(rng));
  return out;
}

void check_gemm(int m, int n, int k, const GemmConfig& tiles) {
  std::mt19937 rng = monotile::testing::case_rng();
  std::vector<uint16_t> a = random_bf16(size_t(m) * k, rng), b = random_bf16(size_t(n) * k, rng);
  std::vector<uint16_t> c(size_t(m) * n, 0x7fc1);
  BenchKernel kernel = gemm_kernel(m, n, k, tiles);
  EXPECT_EQ(kernel.program.name,
            "gemm_m" + std::to_string(m) + "_n" + std::to_string(n) + "_k" + std::to_string(k));
  dsl::interp::InterpretOptions options;
  options.allocations = {{a.data(), a.size() * 2, "a"}, {b.data(), b.size() * 2, "b"}, {c.data(), c.size() * 2, "c"}};
  std::vector<ArgValue> args = {ArgValue::pointer(a.data(), dsl::ScalarType::kBf16),
                                ArgValue::pointer(b.data(), dsl::ScalarType::kBf16),
                                ArgValue::pointer(c.data(), dsl::ScalarType::kBf16)};
  absl::Status status =
      dsl::interp::interpret(kernel.program, {kernel.grid[0], kernel.grid[1], kernel.grid[2]}, args, options);
  ASSERT_TRUE(status.ok()) << status;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double ref = 0, magnitude = 0;
      for (int kk = 0; kk < k; ++kk) {
        double term = bf16_bits_to_double(a[size_t(i) * k + kk]) * bf16_bits_to_double(b[size_t(j) * k + kk]);
        ref += term;
        magnitude += std::abs(term);
      }
      double got = bf16_bits_to_double(c[size_t(i) * n + j]);
      ASSERT_FALSE(std::isnan(got)) << "c[" << i << ", " << j << "] not written";
      // One bf16 rounding of the result plus f32 accumulation error over k terms.
      ASSERT_TRUE(monotile::testing::agrees(got, ref, {1e-5 * magnitude, 1e-2}))
          << "c[" << i << ", " << j << "]: " << got << ", float64 " << ref;
    }
  }
}

TEST(GemmInterp, MatchesFloat64) { check_gemm(64, 96, 48, {.block_m = 32, .block_n = 32, .block_k = 16, .group_m = 2, .num_warps = 4}); }

TEST(GemmInterp, RaggedLastGroupMatchesFloat64) {
  // Three tile rows in groups of two: the last group has one row, so its tile order differs.
  check_gemm(96, 64, 64, {.block_m = 32, .block_n = 16, .block_k = 32, .group_m = 2, .num_warps = 4});
}

TEST(GemmInterp, DefaultTilesMatchFloat64) { check_gemm(256, 256, 64, {}); }

}  // namespace
}  // namespace monotile::kernels::bench
