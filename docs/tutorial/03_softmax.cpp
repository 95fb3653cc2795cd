// Tutorial 3: row softmax, numerically stable, with rows of any length.
//
//   y[r, c] = exp(x[r, c] - max_r) / sum_c exp(x[r, c] - max_r)
//
// A tile's size must suit a layout (a power of two or a multiple of 16), but rows need not: each
// instance loads a `block`-wide tile and masks the columns past `n_cols`, filling them with -inf.
// -inf is harmless in both reductions: max ignores it, and exp(-inf - max) = 0 adds nothing to
// the sum. Subtracting the row maximum keeps exp from overflowing (try x = 1000). `max(v)` and
// `sum(e)` reduce the whole tile to scalars, which then broadcast back over the row.
//
// The grid has one instance per row; `n_cols` and the row stride are kernel arguments, so one
// program serves every shape whose rows fit in `block`.
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "docs/tutorial/tutorial_util.h"
#include "dsl/dsl.h"
#include "gtest/gtest.h"
#include "tests/testing/seed.h"

namespace monotile::tutorial {
namespace {

using namespace monotile::dsl;  // NOLINT

Program softmax(int block) {
  Builder b("softmax");
  Value x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32));
  Value n_cols = b.arg("n_cols", i32), stride = b.arg("row_stride", i32);
  Value row = program_id(0);
  Value cols = arange(0, block);
  Value mask = cols < n_cols;
  Value v = load(x + row * stride + cols, mask, -std::numeric_limits<float>::infinity());
  Value e = exp(v - max(v));
  store(y + row * stride + cols, e / sum(e), mask);
  return b.finish();
}

TEST(TutorialSoftmax, MatchesReferenceForRaggedRowsAndLargeValues) {
  const Program program = softmax(1024);
  std::mt19937 rng = monotile::testing::case_rng();  // MONOTILE_TEST_SEED replays a draw
  for (int n_cols : {1, 100, 781, 1024}) {
    const int rows = 6;
    std::uniform_real_distribution<float> dist(-20.0f, 20.0f);
    std::vector<float> x(rows * n_cols), y(rows * n_cols, std::nanf(""));
    for (float& value : x) value = dist(rng);
    x[0] = 1000.0f;  // would overflow exp() without the max subtraction
    dsl::interp::InterpretOptions options;
    options.allocations = {allocation(x, "x"), allocation(y, "y")};
    const std::vector<dsl::interp::ArgValue> args = {dsl::interp::ArgValue::of(x.data()), dsl::interp::ArgValue::of(y.data()),
                                                    dsl::interp::ArgValue::of(n_cols), dsl::interp::ArgValue::of(n_cols)};
    ASSERT_TRUE(dsl::interp::interpret(program, {rows, 1, 1}, args, options).ok()) << n_cols;
    for (int r = 0; r < rows; ++r) {
      double largest = -INFINITY, total = 0;
      for (int c = 0; c < n_cols; ++c) largest = std::max(largest, double{x[r * n_cols + c]});
      for (int c = 0; c < n_cols; ++c) total += std::exp(x[r * n_cols + c] - largest);
      for (int c = 0; c < n_cols; ++c) {
        const double want = std::exp(x[r * n_cols + c] - largest) / total;
        ASSERT_NEAR(y[r * n_cols + c], want, 1e-6 + 1e-5 * want) << "n_cols " << n_cols << " row " << r << " col " << c;
      }
    }
  }
}

}  // namespace
}  // namespace monotile::tutorial
