// The benchmark kernels on the CPU interpreter against float64 references: fresh random inputs,
// outputs poisoned (NaN bf16 / 0xA5 bytes) before the run so that a missed store fails.
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
#include "kernels/bench/bench_kernels.h"
#include "kernels/bench/copy.h"
#include "kernels/bench/softmax.h"
#include "tests/testing/compare.h"
#include "tests/testing/seed.h"

namespace monotile::kernels::bench {
namespace {

using dsl::ScalarType;
using dsl::interp::ArgValue;
using dsl::interp::bf16_bits_from_double;
using dsl::interp::bf16_bits_to_double;

constexpr uint16_t kBf16Nan = 0x7fc1;

std::vector<uint16_t> random_bf16(size_t count, double scale, std::mt19937& rng) {
  std::normal_distribution<double> dist(0.0, scale);
  std::vector<uint16_t> out(count);
  for (uint16_t& v : out) v = bf16_bits_from_double(dist(rng));
  return out;
}

template <typename T>
dsl::interp::Allocation alloc(const std::vector<T>& v, const char* name) {
  return {v.data(), v.size() * sizeof(T), name};
}

absl::Status run(const BenchKernel& kernel, const std::vector<ArgValue>& args,
                 std::vector<dsl::interp::Allocation> allocations) {
  dsl::interp::InterpretOptions options;
  options.allocations = std::move(allocations);
  return dsl::interp::interpret(kernel.program, {kernel.grid[0], kernel.grid[1], kernel.grid[2]}, args, options);
}

// Checks y against the float64 reference: within one bf16 rounding (plus f32 math) per element.
void expect_close(const std::vector<uint16_t>& y, const std::vector<double>& ref, double rel) {
  ASSERT_EQ(y.size(), ref.size());
  for (size_t i = 0; i < y.size(); ++i) {
    double got = bf16_bits_to_double(y[i]);
    ASSERT_FALSE(std::isnan(got)) << "element " << i << " not written";
    ASSERT_TRUE(monotile::testing::agrees(got, ref[i], {1e-6, rel})) << "element " << i << ": " << got << ", float64 " << ref[i];
  }
}

// Every copy shape, each on a fresh random source.
TEST(BenchKernelsInterp, CopyMovesEveryByte) {
  std::mt19937 rng = monotile::testing::case_rng();
  const int64_t bytes = int64_t{4} * 32768 * 3;  // a multiple of every variant's block
  std::vector<CopyConfig> configs = copy_variants();
  configs.insert(configs.begin(), CopyConfig{});
  for (const CopyConfig& config : configs) {
    SCOPED_TRACE(config.label);
    BenchKernel kernel = copy_kernel(bytes, config);
    EXPECT_EQ(kernel.program.name,
              "copy_bytes" + std::to_string(bytes) + (config.label.empty() ? "" : "__" + config.label));
    EXPECT_EQ(kernel.grid[0], bytes / 4 / config.block);
    std::vector<int32_t> src(bytes / 4), dst(bytes / 4);
    for (int32_t& v : src) v = static_cast<int32_t>(rng());
    std::memset(dst.data(), 0xA5, bytes);
    std::vector<ArgValue> args = {ArgValue::of(src.data()), ArgValue::of(dst.data())};
    absl::Status status = run(kernel, args, {alloc(src, "src"), alloc(dst, "dst")});
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_EQ(std::memcmp(src.data(), dst.data(), bytes), 0);
  }
}

TEST(BenchKernelsInterp, CopyRefusesASizeThatDoesNotDivide) {
  try {
    copy_program(int64_t{4} * kCopyBlock + 4, CopyConfig{});
    FAIL() << "expected dsl::Error";
  } catch (const dsl::Error& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("copy_program"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("the size does not divide into blocks: expected a positive "
                                                   "multiple of 4 x block = 131072 bytes, got 131076 bytes"));
  }
}

TEST(BenchKernelsInterp, CopyWritesNothingPastItsBytes) {
  BenchKernel kernel = copy_kernel(int64_t{4} * kCopyBlock * 2);
  std::vector<int32_t> src(2 * kCopyBlock, 7), dst(2 * kCopyBlock + 64, -1);
  std::vector<ArgValue> args = {ArgValue::of(src.data()), ArgValue::of(dst.data())};
  absl::Status status = run(kernel, args, {alloc(src, "src"), alloc(dst, "dst")});
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(dst[2 * kCopyBlock - 1], 7);
  EXPECT_EQ(dst[2 * kCopyBlock], -1);
}

TEST(BenchKernelsInterp, RmsNormMatchesFloat64) {
  std::mt19937 rng = monotile::testing::case_rng();
  const int rows = 3, hidden = 7168;
  const float eps = 1e-6f;
  BenchKernel kernel = rms_norm_kernel(rows, hidden);
  EXPECT_EQ(kernel.program.name, "rmsnorm_rows3_h7168");
  EXPECT_EQ(kernel.grid[0], rows);
  std::vector<uint16_t> x = random_bf16(size_t{rows} * hidden, 2.0, rng), w = random_bf16(hidden, 1.0, rng);
  std::vector<uint16_t> y(x.size(), kBf16Nan);
  std::vector<double> ref(x.size());
  for (int r = 0; r < rows; ++r) {
    double ss = 0;
    for (int c = 0; c < hidden; ++c) ss += std::pow(bf16_bits_to_double(x[r * hidden + c]), 2);
    double rstd = 1.0 / std::sqrt(ss / hidden + eps);
    for (int c = 0; c < hidden; ++c) {
      ref[r * hidden + c] = bf16_bits_to_double(x[r * hidden + c]) * rstd * bf16_bits_to_double(w[c]);
    }
  }
  std::vector<ArgValue> args = {ArgValue::pointer(x.data(), ScalarType::kBf16),
                                ArgValue::pointer(w.data(), ScalarType::kBf16),
                                ArgValue::pointer(y.data(), ScalarType::kBf16), ArgValue::of(eps)};
  absl::Status status = run(kernel, args, {alloc(x, "x"), alloc(w, "w"), alloc(y, "y")});
  ASSERT_TRUE(status.ok()) << status;
  expect_close(y, ref, 1e-2);
}

// Every softmax shape on fresh inputs, and two rows per program (not exported: the lowering does not
// yet make its stores 16 bytes wide).
TEST(BenchKernelsInterp, SoftmaxMatchesFloat64) {
  std::mt19937 rng = monotile::testing::case_rng();
  const int rows = 4, cols = 4096;
  std::vector<SoftmaxConfig> configs = softmax_variants();
  configs.insert(configs.begin(), SoftmaxConfig{});
  configs.push_back(SoftmaxConfig{});
  configs.back().label = "r2";
  configs.back().rows_per_program = 2;
  for (const SoftmaxConfig& config : configs) {
    SCOPED_TRACE(config.label);
    BenchKernel kernel = softmax_kernel(rows, cols, config);
    EXPECT_EQ(kernel.program.name, "softmax_rows4_cols4096" + (config.label.empty() ? "" : "__" + config.label));
    EXPECT_EQ(kernel.grid[0], rows / config.rows_per_program);
    std::vector<uint16_t> x = random_bf16(size_t{rows} * cols, 3.0, rng);
    std::vector<uint16_t> y(x.size(), kBf16Nan);
    std::vector<double> ref(x.size());
    for (int r = 0; r < rows; ++r) {
      double m = -INFINITY, s = 0;
      for (int c = 0; c < cols; ++c) m = std::max(m, bf16_bits_to_double(x[r * cols + c]));
      for (int c = 0; c < cols; ++c) s += std::exp(bf16_bits_to_double(x[r * cols + c]) - m);
      for (int c = 0; c < cols; ++c) ref[r * cols + c] = std::exp(bf16_bits_to_double(x[r * cols + c]) - m) / s;
    }
    std::vector<ArgValue> args = {ArgValue::pointer(x.data(), ScalarType::kBf16),
                                  ArgValue::pointer(y.data(), ScalarType::kBf16)};
    absl::Status status = run(kernel, args, {alloc(x, "x"), alloc(y, "y")});
    ASSERT_TRUE(status.ok()) << status;
    expect_close(y, ref, 1e-2);
  }
}

TEST(BenchKernelsInterp, SoftmaxRefusesRowsThatDoNotDivide) {
  SoftmaxConfig config;
  config.rows_per_program = 4;
  try {
    softmax_program(6, 4096, config);
    FAIL() << "expected dsl::Error";
  } catch (const dsl::Error& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("the rows do not divide among programs: expected rows a "
                                                   "multiple of rows_per_program 4, got rows 6"));
  }
}

TEST(BenchKernelsInterp, ExportListMatchesTheHarnessNames) {
  std::vector<std::string> names;
  for (const BenchKernel& kernel : bench_kernels()) names.push_back(kernel.program.name);
  // Variants (<name>__<label>) follow the kernels the harness asks for, each beside an exported name.
  std::set<std::string> seen;
  size_t harness = 0;
  for (const std::string& name : names) {
    EXPECT_TRUE(seen.insert(name).second) << "exported twice: " << name;
    const size_t separator = name.find("__");
    if (separator == std::string::npos) {
      EXPECT_EQ(harness, seen.size() - 1) << "a harness kernel after a variant: " << name;
      ++harness;
    } else {
      EXPECT_TRUE(seen.contains(name.substr(0, separator))) << "a variant of no exported kernel: " << name;
    }
  }
  EXPECT_GE(harness, 8u + 24u);  // at least the harness's copy, rows and gemv tables
  EXPECT_TRUE(seen.contains("copy_bytes1073741824__w4_b4096_cs"));
  EXPECT_TRUE(seen.contains("softmax_rows8192_cols4096__w8_exp"));
  EXPECT_TRUE(seen.contains("gemm_m4096_n4096_k4096__stages3"));
  for (const char* name : {"gemv_m1_k7168_n6288", "gemv_m64_k2304_n12288"}) EXPECT_TRUE(seen.contains(name)) << name;
  names.resize(8);
  EXPECT_EQ(names, (std::vector<std::string>{"copy_bytes67108864", "copy_bytes1073741824", "rmsnorm_rows4_h7168",
                                             "rmsnorm_rows8_h7168", "rmsnorm_rows16_h7168", "rmsnorm_rows32_h7168",
                                             "rmsnorm_rows64_h7168", "softmax_rows8192_cols4096"}));
  EXPECT_EQ(bench_kernels()[1].grid[0], (1 << 30) / 4 / kCopyBlock);
}

}  // namespace
}  // namespace monotile::kernels::bench
