// The resource policy's rules and messages; the up-front refusal of targets hiprtc cannot build.
#include "jit/resource_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/hiprtc.h"

namespace monotile::jit {
namespace {

using ::testing::HasSubstr;

Build sample(const char* target) { return Build("tile", "k", "", *dsl::Target::parse(target)); }

TEST(ResourcePolicy, CleanReportPasses) {
  ResourceReport report;
  report.registers = 64;
  report.shared_memory = 1024;
  EXPECT_TRUE(check_resources(sample("sm_90a"), report).ok());
}

TEST(ResourcePolicy, SpillsFailWithTheReportAndTheOptOut) {
  ResourceReport report;
  report.registers = 255;
  report.spill_stores = 40;
  report.spill_loads = 48;
  absl::Status status = check_resources(sample("sm_90a"), report);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  std::string message(status.message());
  EXPECT_THAT(message, HasSubstr("build \"tile\" for sm_90a fails the resource policy"));
  EXPECT_THAT(message, HasSubstr("it spills registers (40 spill stores, 48 spill loads)"));
  EXPECT_THAT(message, HasSubstr("regs 255"));
  EXPECT_THAT(message, HasSubstr("opt out with policy.allow_spills"));
}

TEST(ResourcePolicy, OptOutAllowsSpills) {
  Build build = sample("gfx90a");
  build.policy.allow_spills = true;
  ResourceReport report;
  report.spill_stores = report.spill_loads = 3;
  EXPECT_TRUE(check_resources(build, report).ok());
}

// SGPRs kept in VGPR lanes move no memory: reported, never refused (resource_report.h).
TEST(ResourcePolicy, SgprsInVgprLanesPass) {
  ResourceReport report;
  report.registers = 178;
  report.sgprs = 108;
  report.sgpr_spills = 79;
  EXPECT_TRUE(check_resources(sample("gfx90a"), report).ok());
  report.spill_stores = report.spill_loads = 1;  // one VGPR spilled is refused
  EXPECT_THAT(std::string(check_resources(sample("gfx90a"), report).message()),
              HasSubstr("it spills registers (1 spill stores, 1 spill loads)"));
}

TEST(ResourcePolicy, ScratchFails) {
  ResourceReport report;
  report.stack_frame = 256;
  EXPECT_THAT(std::string(check_resources(sample("gfx90a"), report).message()),
              HasSubstr("it uses 256 bytes of scratch (local memory) per thread"));
}

TEST(ResourcePolicy, SharedMemoryBeyondTheTargetFails) {
  Build build = sample("gfx90a");
  build.launch.dynamic_shared_memory = 60 * 1024;
  ResourceReport report;
  report.shared_memory = 8 * 1024;
  EXPECT_THAT(std::string(check_resources(build, report).message()),
              HasSubstr("it needs 69632 bytes of shared memory (8192 static + 61440 dynamic), more than the "
                        "65536 a block has on gfx90a"));
}

TEST(ResourcePolicy, BlockLargerThanTheKernelLimitFails) {
  Build build = sample("gfx90a");
  build.launch.block_x = 512;
  ResourceReport report;
  report.max_threads_per_block = 256;
  EXPECT_THAT(std::string(check_resources(build, report).message()),
              HasSubstr("its launch block has 512 threads, more than the kernel's limit of 256"));
}

TEST(HiprtcSupport, RefusesGfx942OnHip52WithTheVersionNeeded) {
  absl::Status status = check_hiprtc_supports(*dsl::Target::parse("gfx942:sramecc+:xnack-"), {5, 2, 21153}, 2, 4);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("gfx942 needs ROCm 6.0 or newer hiprtc/comgr (LLVM 17+); installed: hiprtc 5.2.21153 "
                        "with comgr 2.4"));
}

TEST(HiprtcSupport, AcceptsGfx942OnRocm6AndGfx90aAnywhere) {
  EXPECT_TRUE(check_hiprtc_supports(*dsl::Target::parse("gfx942"), {6, 2, 0}, 2, 8).ok());
  EXPECT_TRUE(check_hiprtc_supports(*dsl::Target::parse("gfx90a"), {5, 2, 0}, 2, 4).ok());
  EXPECT_FALSE(check_hiprtc_supports(*dsl::Target::parse("gfx950"), {6, 2, 0}, 2, 8).ok());
}

}  // namespace
}  // namespace monotile::jit
