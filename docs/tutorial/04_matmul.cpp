// Tutorial 4: a tiled matrix multiply with `dot`.
//
//   C[M, N] = A[M, K] @ B[K, N]     (A, B bf16 row-major; C f32)
//
// Each program instance owns one [BM, BN] tile of C: instance (i, j) of a (M/BM, N/BN) grid. It
// walks K in steps of BK with a *runtime* loop, `range(lo, hi, step, carried..., body)`, carrying
// the f32 accumulator: the body gets the loop index and the carried value and returns the next
// one. (A C++ `for` would instead unroll at build time: fine for a few steps, wasteful for many.)
//
// Tile addressing uses broadcasting: `col(rows)` is [BM, 1], `row(ks)` is [1, BK], and
// `A + col(rows) * K + row(ks)` is a [BM, BK] tile of pointers. `dot(a, b, acc)` multiplies
// [BM, BK] by [BK, BN] on the matrix units, accumulating in f32 into acc. Block sizes are C++
// values: each choice is its own program (autotuning = building a few and timing them). Here M,
// N and K are multiples of the blocks; ragged edges would take masks as in tutorial 1.
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

Program matmul(int n, int k, int bm, int bn, int bk) {  // M only sets the grid
  Builder b("matmul");
  Value pa = b.arg("a", ptr(bf16)), pb = b.arg("b", ptr(bf16)), pc = b.arg("c", ptr(f32));
  Value rows = program_id(0) * bm + arange(0, bm);  // [BM]
  Value cols = program_id(1) * bn + arange(0, bn);  // [BN]
  Value acc = range(0, k, bk, zeros({bm, bn}, f32), [&](Value k0, Value acc) {
    Value ks = k0 + arange(0, bk);                 // [BK]
    Value a = load(pa + col(rows) * k + row(ks));  // [BM, BK]
    Value bt = load(pb + col(ks) * n + row(cols)); // [BK, BN]
    return dot(a, bt, acc);
  });
  store(pc + col(rows) * n + row(cols), acc);
  return b.finish();
}

void check_matmul(int m, int n, int k, int bm, int bn, int bk) {
  std::mt19937 rng = monotile::testing::case_rng();  // MONOTILE_TEST_SEED replays a draw
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<uint16_t> a(m * k), bmat(k * n);
  std::vector<float> c(m * n, std::nanf(""));
  for (uint16_t& value : a) value = to_bf16(dist(rng));
  for (uint16_t& value : bmat) value = to_bf16(dist(rng));
  dsl::interp::InterpretOptions options;
  options.allocations = {allocation(a, "a"), allocation(bmat, "b"), allocation(c, "c")};
  const std::vector<dsl::interp::ArgValue> args = {dsl::interp::ArgValue::pointer(a.data(), ScalarType::kBf16),
                                                  dsl::interp::ArgValue::pointer(bmat.data(), ScalarType::kBf16),
                                                  dsl::interp::ArgValue::of(c.data())};
  const Program program = matmul(n, k, bm, bn, bk);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(dsl::interp::interpret(program, {m / bm, n / bn, 1}, args, options).ok());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("matmul %dx%dx%d (tiles %dx%dx%d) on the interpreter: %.3f ms\n", m, n, k, bm, bn, bk, ms);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double want = 0;
      for (int kk = 0; kk < k; ++kk) want += from_bf16(a[i * k + kk]) * from_bf16(bmat[kk * n + j]);
      ASSERT_NEAR(c[i * n + j], want, 2e-6 * k) << i << ", " << j;
    }
  }
}

TEST(TutorialMatmul, SquareTiles) { check_matmul(128, 128, 128, 32, 32, 32); }
TEST(TutorialMatmul, RectangularTilesAndLongK) { check_matmul(64, 256, 512, 16, 64, 64); }

}  // namespace
}  // namespace monotile::tutorial
