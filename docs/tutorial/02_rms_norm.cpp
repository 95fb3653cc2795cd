// Tutorial 2: a fused RMSNorm, one program instance per row.
//
//   y[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * w
//
// The whole row is one tile (`hidden` is a C++ constant, so the tile has a static shape). Data is
// bf16 in memory; `.to(f32)` converts after the load so the arithmetic runs in f32, and
// `.to(bf16)` rounds once (to nearest even) before the store. `sum(v * v)` reduces the tile to a
// scalar (f32 accumulation); dividing by the C++ int `hidden` and adding the C++ float `eps`
// bakes both in as constants. A scalar broadcasts against a tile (numpy rules), so `v * rstd`
// scales every lane. Fusing means x is read once and y written once: no intermediate buffer.
//
// The test checks every row against a float64 reference with a bf16 tolerance: the kernel's
// result differs from the exact value only by f32 arithmetic and the final bf16 rounding.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "docs/tutorial/tutorial_util.h"
#include "dsl/dsl.h"
#include "gtest/gtest.h"
#include "tests/testing/seed.h"

namespace monotile::tutorial {
namespace {

using namespace monotile::dsl;  // NOLINT

Program rms_norm(int hidden, float eps) {
  Builder b("rms_norm");
  Value x = b.arg("x", ptr(bf16)), w = b.arg("w", ptr(bf16)), y = b.arg("y", ptr(bf16));
  Value row = program_id(0);
  Value cols = arange(0, hidden);
  Value v = load(x + row * hidden + cols).to(f32);
  Value rstd = rsqrt(sum(v * v) / hidden + eps);
  store(y + row * hidden + cols, (v * rstd * load(w + cols).to(f32)).to(bf16));
  return b.finish();
}

TEST(TutorialRmsNorm, MatchesFloat64Reference) {
  constexpr int kRows = 4, kHidden = 7168;
  constexpr float kEps = 1e-6f;
  std::mt19937 rng = monotile::testing::case_rng();  // MONOTILE_TEST_SEED replays a draw
  std::normal_distribution<double> normal(0.0, 2.0);
  std::vector<uint16_t> x(kRows * kHidden), w(kHidden), y(kRows * kHidden, 0xffff);  // y poisoned (NaN)
  for (uint16_t& value : x) value = to_bf16(normal(rng));
  for (uint16_t& value : w) value = to_bf16(1.0 + 0.1 * normal(rng));

  dsl::interp::InterpretOptions options;
  options.allocations = {allocation(x, "x"), allocation(w, "w"), allocation(y, "y")};
  const std::vector<dsl::interp::ArgValue> args = {dsl::interp::ArgValue::pointer(x.data(), ScalarType::kBf16),
                                                  dsl::interp::ArgValue::pointer(w.data(), ScalarType::kBf16),
                                                  dsl::interp::ArgValue::pointer(y.data(), ScalarType::kBf16)};
  const Program program = rms_norm(kHidden, kEps);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(dsl::interp::interpret(program, {kRows, 1, 1}, args, options).ok());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("rms_norm %d x %d bf16 on the interpreter: %.3f ms\n", kRows, kHidden, ms);

  for (int r = 0; r < kRows; ++r) {
    double squares = 0;
    for (int c = 0; c < kHidden; ++c) squares += from_bf16(x[r * kHidden + c]) * from_bf16(x[r * kHidden + c]);
    const double rstd = 1.0 / std::sqrt(squares / kHidden + kEps);
    for (int c = 0; c < kHidden; ++c) {
      const double want = from_bf16(x[r * kHidden + c]) * rstd * from_bf16(w[c]);
      const double got = from_bf16(y[r * kHidden + c]);
      ASSERT_NEAR(got, want, 1e-2 + 1e-2 * std::fabs(want)) << "row " << r << " col " << c;
    }
  }
}

}  // namespace
}  // namespace monotile::tutorial
