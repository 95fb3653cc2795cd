// ResourceReport's text round trip and the ptxas -v log parser.
#include "jit/resource_report.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/nvrtc.h"

namespace monotile::jit {
namespace {

using ::testing::HasSubstr;

TEST(ResourceReport, TextRoundTrips) {
  ResourceReport report{.registers = 40, .agprs = 8, .sgprs = 30, .spill_stores = 4, .spill_loads = 6,
                        .sgpr_spills = 12, .stack_frame = 128, .shared_memory = 4096, .wavefront_size = 64,
                        .max_threads_per_block = 256};
  absl::StatusOr<ResourceReport> back = ResourceReport::from_text(report.to_text());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, report);
}

TEST(ResourceReport, SummaryNamesSgprsKeptInVgprLanesApart) {
  ResourceReport report{.registers = 178, .sgprs = 108, .sgpr_spills = 79, .wavefront_size = 64};
  EXPECT_EQ(report.summary(),
            "regs 178, agprs 0, sgprs 108, spill stores 0, spill loads 0, sgpr spills to vgpr lanes 79, stack 0 B, "
            "smem 0 B, wave 64");
}

TEST(ResourceReport, IgnoresUnknownKeys) {
  absl::StatusOr<ResourceReport> back = ResourceReport::from_text("registers=3\nfuture_field=9\n");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->registers, 3);
}

TEST(ResourceReport, MalformedValueIsAnErrorNamingTheKey) {
  absl::StatusOr<ResourceReport> back = ResourceReport::from_text("registers=many\n");
  ASSERT_FALSE(back.ok());
  EXPECT_THAT(std::string(back.status().message()), HasSubstr("value of \"registers\" is not an integer: \"many\""));
}

constexpr std::string_view kPtxasLog =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'other' for 'sm_90a'\n"
    "ptxas info    : Function properties for other\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 8 registers, used 0 barriers, 0 bytes smem\n"
    "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
    "ptxas info    : Function properties for k\n"
    "ptxas         .     256 bytes stack frame, 12 bytes spill stores, 20 bytes spill loads\n"
    "ptxas info    : Used 32 registers, used 1 barriers, 256 bytes cumulative stack size, 1024 bytes smem\n"
    "ptxas info    : Compile time = 21.683 ms\n";

TEST(PtxasLog, ReadsTheNamedEntry) {
  absl::StatusOr<ResourceReport> report = parse_ptxas_log(kPtxasLog, "k");
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->registers, 32);
  EXPECT_EQ(report->stack_frame, 256);
  EXPECT_EQ(report->spill_stores, 12);
  EXPECT_EQ(report->spill_loads, 20);
  EXPECT_EQ(report->shared_memory, 1024);
  EXPECT_EQ(report->wavefront_size, 32);
}

TEST(PtxasLog, MissingEntryIsAnError) {
  absl::StatusOr<ResourceReport> report = parse_ptxas_log(kPtxasLog, "absent");
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(std::string(report.status().message()), HasSubstr("no entry function \"absent\""));
}

}  // namespace
}  // namespace monotile::jit
