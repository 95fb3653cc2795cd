// The runner itself can fail: an unwritten output, a wrong value, an unexpected NaN and an
// out-of-bounds launch are each reported with the case, the seed and the offending element.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/conformance/conformance_case.h"
#include "tests/conformance/interpreter_executor.h"
#include "tests/conformance/kernel_helpers.h"

namespace monotile::conformance {
namespace {

using namespace monotile::dsl;  // NOLINT
using ::testing::HasSubstr;

// y = x + 1 over 32 elements, storing only the lanes below `written`; the reference says `expected`.
Case add_one_case(int64_t written, std::function<double(double)> expected, Generator generate = uniform(-1, 1)) {
  Case c;
  c.name = "add_one/f32/[32]";
  c.build = [written] {
    Builder b("add_one");
    Value x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32));
    Value lanes = arange(0, 32);
    store(y + lanes, load(x + lanes) + 1.0f, lanes < written);
    return b.finish();
  };
  c.tensors = {{"x", ScalarType::kF32, {32}, Role::kInput, generate, std::nullopt},
               {"y", ScalarType::kF32, {32}, Role::kOutput, nullptr, std::nullopt}};
  c.reference = [expected](Tensors& t) {
    for (int64_t i = 0; i < 32; ++i) t["y"].set(i, expected(t["x"].get(i)));
  };
  return c;
}

TEST(ConformanceRunner, PassesAMatchingCase) {
  InterpreterExecutor executor;
  EXPECT_TRUE(run_case(executor, add_one_case(32, [](double x) { return x + 1; }), 1).ok());
}

TEST(ConformanceRunner, UnwrittenElementsFail) {
  InterpreterExecutor executor;
  const absl::Status status = run_case(executor, add_one_case(30, [](double x) { return x + 1; }), 7);
  const std::string message(status.message());
  EXPECT_THAT(message, HasSubstr("case \"add_one/f32/[32]\" on interpreter (seed 7)"));
  EXPECT_THAT(message, HasSubstr("2 of 32 elements of \"y\" differ"));
  EXPECT_THAT(message, HasSubstr("y[30]: never written (still the poison NaN), expected"));
}

TEST(ConformanceRunner, WrongValuesFail) {
  InterpreterExecutor executor;
  const absl::Status status = run_case(executor, add_one_case(32, [](double x) { return x + 1.001; }), 3);
  EXPECT_THAT(std::string(status.message()), HasSubstr("32 of 32 elements of \"y\" differ"));
}

TEST(ConformanceRunner, UnexpectedNanFails) {
  InterpreterExecutor executor;
  const absl::Status status =
      run_case(executor, add_one_case(32, [](double) { return 1.0; }, constant(std::nan(""))), 3);
  EXPECT_THAT(std::string(status.message()), HasSubstr("got nan, expected 1"));
}

TEST(ConformanceRunner, ReferenceMustWriteEveryOutput) {
  InterpreterExecutor executor;
  Case c = add_one_case(32, [](double x) { return x + 1; });
  c.reference = [](Tensors&) {};
  const absl::Status status = run_case(executor, c, 3);
  EXPECT_THAT(std::string(status.message()), HasSubstr("the reference did not write y[0]"));
}

TEST(ConformanceRunner, OutOfBoundsLaunchFails) {
  InterpreterExecutor executor;
  Case c = add_one_case(32, [](double x) { return x + 1; });
  c.tensors[0].shape = {16};  // the kernel reads 32 elements
  const absl::Status status = run_case(executor, c, 3);
  EXPECT_THAT(std::string(status.message()), HasSubstr("launch failed: load at runner_test.cpp:"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("element 16 of \"x\", which holds 16 elements"));
}

}  // namespace
}  // namespace monotile::conformance
