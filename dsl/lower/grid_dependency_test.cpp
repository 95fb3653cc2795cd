// The dependent-launch ops in generated code: griddepcontrol in every thread on sm_90a (the wait
// with a memory clobber, before the loads it guards), nothing on older NVIDIA targets or AMD, and
// the kernel says it waits only where the instruction is there.
#include <string>

#include "dsl/dsl.h"
#include "dsl/lower/lower.h"
#include "dsl/lower/lower_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace monotile::dsl::lower {
namespace {

using testing::count;
using ::testing::HasSubstr;
using testing::lowered;
using ::testing::Not;

constexpr const char* kLaunch = "asm volatile(\"griddepcontrol.launch_dependents;\");";
constexpr const char* kWait = "asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");";

Program dependent_scale(bool wait) {
  Builder b("dependent_scale", {.num_warps = 4});
  auto x = b.arg("x", ptr(f32)), w = b.arg("w", ptr(f32)), y = b.arg("y", ptr(f32));
  auto offs = program_id(0) * 512 + arange(0, 512);
  launch_dependents();
  prefetch(w + offs);
  if (wait) wait_grid_dependency();
  store(y + offs, load(x + offs) * load(w + offs));
  return b.finish();
}

TEST(GridDependency, Sm90aLaunchesDependentsThenWaitsBeforeTheLoads) {
  LoweredKernel kernel = lowered(dependent_scale(true), "sm_90a");
  const std::string& source = kernel.source;
  EXPECT_EQ(count(source, kLaunch), 1);
  EXPECT_EQ(count(source, kWait), 1);
  EXPECT_LT(source.find(kLaunch), source.find("prefetch.global.L2"));
  EXPECT_LT(source.find("prefetch.global.L2"), source.find(kWait));
  EXPECT_LT(source.find(kWait), source.find("ld.global"));
  // Every thread executes them: no thread-0 guard on the line.
  const size_t line_start = source.rfind('\n', source.find(kWait));
  EXPECT_THAT(source.substr(line_start, source.find(kWait) - line_start), Not(HasSubstr("if")));
  EXPECT_TRUE(kernel.waits_for_grid_dependency);
}

TEST(GridDependency, WithoutTheWaitTheKernelLaunchesAsAnyOther) {
  LoweredKernel kernel = lowered(dependent_scale(false), "sm_90a");
  EXPECT_EQ(count(kernel.source, kLaunch), 1);
  EXPECT_EQ(count(kernel.source, "griddepcontrol.wait"), 0);
  EXPECT_FALSE(kernel.waits_for_grid_dependency);
}

TEST(GridDependency, NothingBeforeSm90OrOnAmd) {
  for (const char* target : {"sm_80", "sm_89", "gfx90a", "gfx942"}) {
    LoweredKernel kernel = lowered(dependent_scale(true), target);
    EXPECT_EQ(count(kernel.source, "griddepcontrol"), 0) << target;
    EXPECT_FALSE(kernel.waits_for_grid_dependency) << target;
  }
}

}  // namespace
}  // namespace monotile::dsl::lower
