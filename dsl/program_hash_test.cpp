// program_hash: stable, blind to source locations, sensitive to anything that changes behaviour.
#include "dsl/program_hash.h"

#include <gtest/gtest.h>

#include "dsl/dsl.h"
#include "dsl/test_programs.h"

namespace monotile::dsl {
namespace {

Program scale(float factor) {
  Builder b("scale");
  auto x = b.arg("x", ptr(f32));
  auto lanes = arange(0, 64);
  auto v = load(x + lanes);
  store(x + lanes, v * factor);
  return b.finish();
}

// scale(2.0f) with an L2 hint first: unmasked, or masked to the first `masked_to` lanes.
Program warm_then_scale(int masked_to) {
  Builder b("scale");
  auto x = b.arg("x", ptr(f32));
  auto lanes = arange(0, 64);
  if (masked_to > 0) {
    prefetch(x + lanes, lanes < masked_to);
  } else {
    prefetch(x + lanes);
  }
  auto v = load(x + lanes);
  store(x + lanes, v * 2.0f);
  return b.finish();
}

TEST(ProgramHash, APrefetchAndItsMaskChangeTheHash) {
  EXPECT_NE(program_hash(scale(2.0f)), program_hash(warm_then_scale(0)));
  EXPECT_NE(program_hash(warm_then_scale(0)), program_hash(warm_then_scale(32)));
  EXPECT_NE(program_hash(warm_then_scale(16)), program_hash(warm_then_scale(32)));
}

TEST(ProgramHash, SameProgramSameHash) {
  EXPECT_EQ(program_hash(scale(2.0f)), program_hash(scale(2.0f)));
  EXPECT_EQ(program_hash(testing::rms_norm(7168, 1e-6f)), program_hash(testing::rms_norm(7168, 1e-6f)));
}

TEST(ProgramHash, IgnoresSourceLocations) {
  Program a = scale(2.0f);
  Program b = scale(2.0f);
  for (Op& op : b.body.ops) op.loc.line += 100;
  EXPECT_EQ(program_hash(a), program_hash(b));
}

TEST(ProgramHash, ChangesWithConstantsShapesAndOptions) {
  uint64_t base = program_hash(testing::rms_norm(7168, 1e-6f));
  EXPECT_NE(base, program_hash(testing::rms_norm(7168, 1e-5f)));
  EXPECT_NE(base, program_hash(testing::rms_norm(4096, 1e-6f)));
  EXPECT_NE(program_hash(scale(2.0f)), program_hash(scale(3.0f)));
  Program wider = scale(2.0f);
  wider.options.num_warps = 8;
  EXPECT_NE(program_hash(scale(2.0f)), program_hash(wider));
}

TEST(ProgramHash, IsTheSameInEveryBuild) {
  // XXH3-64 of the text form: a change here means every cached kernel's key changes, which must be
  // deliberate (a printer or IR change), never accidental.
  EXPECT_EQ(program_hash(scale(2.0f)), 0x02f0e31296e33413u) << std::hex << program_hash(scale(2.0f));
}

}  // namespace
}  // namespace monotile::dsl
