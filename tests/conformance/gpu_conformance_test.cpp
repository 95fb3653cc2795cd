// Every conformance case on the first GPU, through make_build, the JIT and runtime::Kernel, against
// the same references and tolerances as the interpreter suite. One test per op family, each
// printing a summary line; without a GPU every test skips with discovery's reason.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/conformance/cases.h"
#include "tests/conformance/gpu_executor.h"
#include "tests/testing/seed.h"

namespace monotile::conformance {
namespace {


struct Family {
  std::string name;
  std::function<std::vector<Case>()> cases;
};

// Test parameters print as their family's name (CTest's test names include this text).
void PrintTo(const Family& family, std::ostream* out) { *out << family.name; }

std::vector<Family> families() {
  return {{"elementwise", elementwise_cases}, {"math", math_cases},       {"convert", convert_cases},
          {"shape", shape_cases},             {"memory", memory_cases},   {"reduce", reduce_cases},
          {"sort", sort_cases},               {"dot", dot_cases},         {"control", control_cases}};
}

class GpuConformance : public ::testing::TestWithParam<Family> {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<GpuExecutor>> created = GpuExecutor::create();
    if (created.ok()) executor_ = created->release();
    else skip_reason_ = new std::string(created.status().message());
  }
  static void TearDownTestSuite() {
    delete executor_;
    executor_ = nullptr;
  }
  static GpuExecutor* executor_;
  static std::string* skip_reason_;
};
GpuExecutor* GpuConformance::executor_ = nullptr;
std::string* GpuConformance::skip_reason_ = nullptr;

TEST_P(GpuConformance, MatchesReference) {
  if (executor_ == nullptr) GTEST_SKIP() << *skip_reason_;
  const Family& family = GetParam();
  const std::vector<Case> cases = family.cases();
  const auto start = std::chrono::steady_clock::now();
  std::vector<dsl::Program> programs;
  for (const Case& c : cases) programs.push_back(c.build());
  const jit::CompileAllResult compiled = executor_->precompile(programs);
  const double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int passed = 0;
  for (const Case& c : cases) {
    // The interpreter suite's seeding: replaying a case needs only the base seed.
    const uint64_t seed = monotile::testing::shared_seed(c.name);
    const absl::Status status = run_case(*executor_, c, seed);
    executor_->release_all();
    if (status.ok()) ++passed;
    else ADD_FAILURE() << c.name << ": " << status.message();
  }
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("gpu conformance %-12s %4d/%-4zu passed on %s (%zu builds: %zu compiled, %zu cached, %zu failed; "
              "compile %.1f s, total %.1f s)\n",
              family.name.c_str(), passed, cases.size(), executor_->name().c_str(), compiled.unique, compiled.misses,
              compiled.hits, compiled.failures, compile_s, total_s);
}

INSTANTIATE_TEST_SUITE_P(Families, GpuConformance, ::testing::ValuesIn(families()),
                         [](const ::testing::TestParamInfo<Family>& info) { return info.param.name; });

TEST(GpuExecutorCache, AWarmExecutorCompilesNothing) {
  const std::vector<Case> cases = elementwise_cases();
  ASSERT_FALSE(cases.empty());
  absl::StatusOr<std::unique_ptr<GpuExecutor>> cold = GpuExecutor::create();
  if (!cold.ok()) GTEST_SKIP() << cold.status().message();
  ASSERT_TRUE(run_case(**cold, cases.front(), monotile::testing::test_seed()).ok());
  cold->reset();
  // A new executor (a new process's view): the program comes from the JIT's cache.
  absl::StatusOr<std::unique_ptr<GpuExecutor>> warm = GpuExecutor::create();
  ASSERT_TRUE(warm.ok()) << warm.status();
  ASSERT_TRUE(run_case(**warm, cases.front(), monotile::testing::test_seed() + 1).ok());
  EXPECT_EQ((*warm)->compiles(), 0);
}

}  // namespace
}  // namespace monotile::conformance
