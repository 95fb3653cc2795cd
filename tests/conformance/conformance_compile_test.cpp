// CI, no GPU: every conformance program compiles for sm_90a and gfx90a through make_build and the JIT
// with no spills and no scratch (the resource policy's default), on one thread per core.
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "jit/compiler.h"
#include "tests/conformance/cases.h"
#include "tests/conformance/compile_targets.h"

namespace monotile::conformance {
namespace {

TEST(ConformanceCompiles, EveryCaseForBothVendorsWithoutSpillsOrScratch) {
  for (const dsl::Target& target : ci_targets()) {
    absl::StatusOr<std::unique_ptr<jit::Compiler>> compiler = jit::make_compiler(target);
    if (!compiler.ok()) GTEST_SKIP() << "no compiler for " << target.str() << ": " << compiler.status().message();
  }
  const std::vector<Case> cases = all_cases();
  std::vector<dsl::Program> programs;
  for (const Case& c : cases) programs.push_back(c.build());
  absl::StatusOr<std::vector<jit::Build>> builds = ci_builds(programs);
  ASSERT_TRUE(builds.ok()) << builds.status();
  const int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const jit::CompileAllResult result = jit::compile_all(fresh_jit(), *builds, {.jobs = jobs, .on_progress = nullptr});
  for (size_t i = 0; i < builds->size(); ++i) {
    // ci_builds lists every program for the first target, then for the second.
    EXPECT_TRUE(result.results[i].ok()) << "case " << cases[i % cases.size()].name << " for " << (*builds)[i].target.str() << ": "
                                        << result.results[i].status().message();
  }
  std::printf("conformance compile: %zu cases, %zu builds (%zu unique) for sm_90a and gfx90a, %zu failed, %.1f s on %d "
              "jobs\n",
              programs.size(), builds->size(), result.unique, result.failures, result.seconds, jobs);
}

}  // namespace
}  // namespace monotile::conformance
