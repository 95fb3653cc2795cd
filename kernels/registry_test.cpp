// The registry: one entry per name, the benchmark kernels with their grids and K1, lookups that say
// what is known, and programs that lower for both vendors (no compiler needed).
#include "kernels/registry.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace monotile::kernels {
namespace {

using ::testing::HasSubstr;

dsl::Target target(const char* text) {
  return *dsl::Target::parse(text);
}

TEST(Registry, NamesAreUnique) {
  std::set<std::string> names;
  for (const RegistryEntry& entry : registry())
    EXPECT_TRUE(names.insert(entry.name).second) << entry.name;
}

TEST(Registry, HoldsTheBenchKernelsAndTheLayerKernels) {
  absl::StatusOr<const RegistryEntry*> rms = find_kernel("rmsnorm_rows4_h7168");
  ASSERT_TRUE(rms.ok()) << rms.status();
  EXPECT_EQ((*rms)->family, KernelFamily::kBench);
  EXPECT_EQ((*rms)->grid[0], 4);
  std::vector<std::string> layer_kernels;
  for (const RegistryEntry& entry : registry()) {
    if (entry.family == KernelFamily::kLayer) layer_kernels.push_back(entry.name);
  }
  EXPECT_EQ(layer_kernels, (std::vector<std::string>{"k3_k1_tp8_t4_q4", "k3_k2_tp8_t4"}));
}

TEST(Registry, UnknownNameSuggestsSimilarNames) {
  absl::StatusOr<const RegistryEntry*> found = find_kernel("rmsnorm_rows4");
  ASSERT_FALSE(found.ok());
  EXPECT_TRUE(absl::IsNotFound(found.status()));
  EXPECT_THAT(
      std::string(found.status().message()),
      HasSubstr(
          "no kernel \"rmsnorm_rows4\" in the registry; hint: did you mean rmsnorm_rows4_h7168"));
}

TEST(Registry, UnknownNameWithNothingSimilarSaysHowToList) {
  absl::StatusOr<const RegistryEntry*> found = find_kernel("nosuch");
  ASSERT_FALSE(found.ok());
  EXPECT_THAT(
      std::string(found.status().message()),
      HasSubstr("no kernel \"nosuch\" in the registry; hint: `monotile compile --list` lists"));
}

TEST(Registry, CpuHasNoCompiledKernels) {
  EXPECT_THAT(std::string(registry_builds(dsl::Target::cpu()).status().message()),
              HasSubstr("target \"cpu\" has no compiled kernels"));
}

TEST(Registry, ChosenBuildsLowerForBothVendors) {
  const std::vector<std::string> names = {"rmsnorm_rows4_h7168", "softmax_rows8192_cols4096"};
  for (const char* text : {"sm_90a", "gfx90a"}) {
    absl::StatusOr<std::vector<jit::Build>> builds = registry_builds(target(text), names);
    ASSERT_TRUE(builds.ok()) << builds.status();
    ASSERT_EQ(builds->size(), 2u);
    EXPECT_EQ((*builds)[0].name, "rmsnorm_rows4_h7168");
    EXPECT_EQ((*builds)[0].target.str(), target(text).str());
  }
}

// Under the default resource policy on every target: AMD's SGPRs kept in VGPR lanes are not refused.
TEST(Registry, LayerKernelsLowerPerTargetUnderTheDefaultPolicy) {
  for (auto [name, kernel_prefix] : {std::pair{"k3_k1_tp8_t4_q4", "k3_k1_h7168_nh12_"}, {"k3_k2_tp8_t4", "k3_k2_h7168_c1536_t4_"}}) {
    absl::StatusOr<const RegistryEntry*> entry = find_kernel(name);
    ASSERT_TRUE(entry.ok()) << entry.status();
    for (const char* text : {"sm_90a", "gfx90a"}) {
      absl::StatusOr<jit::ProgramBuild> made = registry_build(**entry, target(text));
      ASSERT_TRUE(made.ok()) << made.status();
      EXPECT_EQ(made->build.name, name);
      EXPECT_THAT(made->build.kernel_name, ::testing::StartsWith(kernel_prefix));
      EXPECT_FALSE(made->build.policy.allow_spills) << text;
    }
  }
}

}  // namespace
}  // namespace monotile::kernels
