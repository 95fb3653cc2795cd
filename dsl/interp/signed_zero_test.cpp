// min/max of -0 and +0 in the interpreter: the elementwise ops, the reductions and the atomics all
// order -0 below +0 whichever operand comes first (dsl/scalar_semantics.h, Triton's
// propagate_nan=ALL), so a result never depends on a reduction's order.
#include <cmath>
#include <vector>

#include "dsl/dsl.h"
#include "dsl/interp/interpreter.h"
#include "gtest/gtest.h"

namespace monotile::dsl::interp {
namespace {

// out = {max(x, axis 0), min(x, axis 0), max(x0, x1), min(x0, x1)}; high and low receive
// atomic_max/atomic_min of x1 (the host sets both to x0 first).
Program zeros_program() {
  Builder b("signed_zeros");
  Value x = b.arg("x", ptr(f32)), out = b.arg("out", ptr(f32));
  Value high = b.arg("high", ptr(f32)), low = b.arg("low", ptr(f32));
  Value both = load(x + arange(0, 2));
  Value first = load(x), second = load(x + 1);
  store(out, max(both, 0));
  store(out + 1, min(both, 0));
  store(out + 2, max(first, second));
  store(out + 3, min(first, second));
  atomic_max(high, second, MemScope::kGpu, MemOrder::kRelaxed);
  atomic_min(low, second, MemScope::kGpu, MemOrder::kRelaxed);
  return b.finish();
}

struct Results {
  std::vector<float> out;
  float high, low;
};

Results run(float first, float second) {
  std::vector<float> x = {first, second}, out(4, 1.0f);
  float high = first, low = first;
  InterpretOptions options;
  options.allocations = {
      {x.data(), 8, "x"}, {out.data(), 16, "out"}, {&high, 4, "high"}, {&low, 4, "low"}};
  const std::vector<ArgValue> args = {ArgValue::of(x.data()), ArgValue::of(out.data()),
                                      ArgValue::of(&high), ArgValue::of(&low)};
  const absl::Status status = interpret(zeros_program(), {1, 1, 1}, args, options);
  EXPECT_TRUE(status.ok()) << status;
  return {out, high, low};
}

void expect_ordered(const Results& results) {
  EXPECT_EQ(results.out[0], 0.0f);
  EXPECT_FALSE(std::signbit(results.out[0])) << "max reduction";
  EXPECT_TRUE(std::signbit(results.out[1])) << "min reduction";
  EXPECT_FALSE(std::signbit(results.out[2])) << "elementwise max";
  EXPECT_TRUE(std::signbit(results.out[3])) << "elementwise min";
  EXPECT_FALSE(std::signbit(results.high)) << "atomic_max";
  EXPECT_TRUE(std::signbit(results.low)) << "atomic_min";
}

TEST(SignedZeros, NegativeZeroFirst) {
  expect_ordered(run(-0.0f, 0.0f));
}

TEST(SignedZeros, PositiveZeroFirst) {
  expect_ordered(run(0.0f, -0.0f));
}

}  // namespace
}  // namespace monotile::dsl::interp
