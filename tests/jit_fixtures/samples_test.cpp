// Every sample (the JIT's hand-written fixtures) compiles for sm_90a and gfx90a with no spills or scratch, and its resource
// report says what the kernel is: shared memory where it uses some, the matrix unit's registers,
// the target's wavefront size. The warp size always comes from the Target.
#include "tests/jit_fixtures/samples.h"

#include <tuple>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/jit.h"
#include "jit/test_support.h"

namespace monotile::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

dsl::Target target(const char* text) { return *dsl::Target::parse(text); }

TEST(Prelude, WarpSizeComesFromTheTarget) {
  EXPECT_THAT(samples::prelude(target("sm_90a")).content, HasSubstr("#define MT_WARP_SIZE 32\n"));
  EXPECT_THAT(samples::prelude(target("gfx90a")).content, HasSubstr("#define MT_WARP_SIZE 64\n"));
  EXPECT_THAT(samples::prelude(target("gfx1030")).content, HasSubstr("#define MT_WARP_SIZE 32\n"));
}

TEST(Samples, SharedSourcesNameNoVendorIntrinsic) {
  for (const samples::Sample& entry : samples::samples()) {
    if (entry.name == "matrix_tile") continue;
    for (const char* text : {"sm_90a", "gfx90a"}) {
      jit::Build build = entry.make(target(text));
      EXPECT_THAT(build.source, Not(HasSubstr("__shfl"))) << entry.name;
      EXPECT_THAT(build.source, Not(HasSubstr("atomicAdd"))) << entry.name;
    }
  }
}

class SampleCompiles : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(SampleCompiles, WithoutSpillsAndWithItsResources) {
  const auto& [name, target_text] = GetParam();
  MT_SKIP_WITHOUT_COMPILER(target_text.c_str());
  jit::testing::TempDir dir;
  jit::Jit jit(jit::testing::config_in(dir.path()));
  const samples::Sample* entry = nullptr;
  for (const samples::Sample& candidate : samples::samples()) {
    if (candidate.name == name) entry = &candidate;
  }
  ASSERT_NE(entry, nullptr);
  dsl::Target gpu = target(target_text.c_str());
  absl::StatusOr<jit::CompiledBuild> compiled = jit.compile_build(entry->make(gpu));
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const jit::ResourceReport& report = compiled->report;
  EXPECT_FALSE(compiled->code_object.empty());
  EXPECT_GT(report.registers, 0);
  EXPECT_EQ(report.spill_stores, 0);
  EXPECT_EQ(report.stack_frame, 0);
  EXPECT_EQ(report.wavefront_size, gpu.warp_size());
  if (name == "block_reduce") {
    EXPECT_EQ(report.shared_memory, samples::kBlockThreads / gpu.warp_size() * 4);
  }
  if (name == "histogram") {
    EXPECT_EQ(report.shared_memory, samples::kHistogramBins * 4);
  }
  if (name == "vector_add") {
    EXPECT_EQ(report.shared_memory, 0);
  }
  if (gpu.vendor() == dsl::Vendor::kAmd) {
    EXPECT_GT(report.sgprs, 0);
    EXPECT_EQ(report.max_threads_per_block, compiled->launch.threads());
    // gfx90a accumulates MFMA results in AGPRs or, with unified registers, in 16 VGPRs at least.
    if (name == "matrix_tile") {
      EXPECT_GE(report.registers + report.agprs, 16);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Samples, SampleCompiles,
    ::testing::Combine(::testing::Values("vector_add", "block_reduce", "histogram", "bf16_axpby", "matrix_tile"),
                       ::testing::Values("sm_90a", "gfx90a")),
    [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });

}  // namespace
}  // namespace monotile::testing
