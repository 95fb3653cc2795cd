#include "dsl/target.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace monotile::dsl {
namespace {

using ::testing::HasSubstr;

Target parsed(std::string_view text) {
  absl::StatusOr<Target> target = Target::parse(text);
  EXPECT_TRUE(target.ok()) << target.status();
  return *target;
}

TEST(Target, RoundTripsEveryAcceptedForm) {
  for (std::string_view text : {"cpu", "sm_90a", "sm_90", "sm_80", "sm_75", "sm_120", "gfx90a",
                                "gfx942:sramecc+:xnack-", "gfx950", "gfx908:xnack+",
                                "gfx1100"}) {
    EXPECT_EQ(parsed(text).str(), text);
    EXPECT_EQ(Target::parse(parsed(text).str())->str(), text);
  }
}

TEST(Target, NvidiaHopperFacts) {
  Target t = parsed("sm_90a");
  EXPECT_EQ(t.vendor(), Vendor::kNvidia);
  EXPECT_EQ(t.warp_size(), 32);
  EXPECT_EQ(t.compute_capability(), 90);
  EXPECT_EQ(t.shared_memory_per_block(), 227 * 1024);
  EXPECT_TRUE(t.has_wgmma());
  EXPECT_FALSE(parsed("sm_90").has_wgmma());
  ASSERT_FALSE(t.matrix_shapes().empty());
  EXPECT_EQ(t.matrix_shapes()[0].k, 16);
}

TEST(Target, AmdFactsAndFeatures) {
  Target t = parsed("gfx942:sramecc+:xnack-");
  EXPECT_EQ(t.vendor(), Vendor::kAmd);
  EXPECT_EQ(t.arch(), "gfx942");
  EXPECT_EQ(t.warp_size(), 64);
  ASSERT_EQ(t.features().size(), 2u);
  EXPECT_EQ(t.features()[0], (TargetFeature{"sramecc", true}));
  EXPECT_EQ(t.features()[1], (TargetFeature{"xnack", false}));
  EXPECT_EQ(parsed("gfx950").shared_memory_per_block(), 160 * 1024);
  EXPECT_EQ(parsed("gfx1030").warp_size(), 32);
}

TEST(Target, CpuHasNoMatrixUnit) {
  EXPECT_EQ(Target::cpu().vendor(), Vendor::kCpu);
  EXPECT_TRUE(Target::cpu().matrix_shapes().empty());
}

TEST(Target, FingerprintIsStableAndDistinguishesFeatures) {
  EXPECT_EQ(parsed("gfx90a").fingerprint(), parsed("gfx90a").fingerprint());
  EXPECT_NE(parsed("gfx942:xnack-").fingerprint(), parsed("gfx942:xnack+").fingerprint());
  // XXH3-64 of "sm_90a" with seed 0, pinned: a change here would silently invalidate every cache key.
  EXPECT_EQ(parsed("sm_90a").fingerprint(), uint64_t{0x673cf7a847432266ull});
}

TEST(Target, ErrorsListTheAcceptedForms) {
  struct Case {
    std::string_view text;
    std::string_view what;
  };
  for (const Case& c : {Case{"sm_91", "unknown compute capability 91"},
                        Case{"sm_x", "the compute capability is not a number"},
                        Case{"gfx999", "unknown AMD architecture gfx999"},
                        Case{"gfx942:xnack-:sramecc+", "sramecc before xnack"},
                        Case{"gfx942:sramecc", "must end in + or -"},
                        Case{"gfx942:foo+", "unknown feature \"foo\""},
                        Case{"gfx1030:xnack+", "takes no target features"},
                        Case{"h100", "unknown vendor prefix"}}) {
    absl::StatusOr<Target> target = Target::parse(c.text);
    ASSERT_FALSE(target.ok()) << c.text;
    EXPECT_EQ(target.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(target.status().message()), HasSubstr(c.what));
    EXPECT_THAT(std::string(target.status().message()), HasSubstr("accepted forms: \"cpu\""));
    EXPECT_THAT(std::string(target.status().message()), HasSubstr(std::string(c.text)));
  }
}

}  // namespace
}  // namespace monotile::dsl
