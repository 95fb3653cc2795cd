// Every conformance case lowers for sm_90a and gfx90a (no Unimplemented op, no shared-memory
// overflow), and the generated source carries no header.
#include <string>

#include "dsl/lower/lower.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/conformance/cases.h"

namespace monotile::dsl::lower {
namespace {

TEST(ConformanceLowering, EveryCaseLowersForBothVendors) {
  int lowered = 0;
  for (const conformance::Case& c : conformance::all_cases()) {
    Program program = c.build();
    for (const char* text : {"sm_90a", "gfx90a"}) {
      absl::StatusOr<LoweredKernel> kernel = lower(program, Target::parse(text).value());
      EXPECT_TRUE(kernel.ok()) << c.name << " for " << text << ": " << kernel.status();
      if (!kernel.ok()) continue;
      EXPECT_THAT(kernel->source, ::testing::Not(::testing::HasSubstr("#include"))) << c.name;
      ++lowered;
    }
  }
  EXPECT_GT(lowered, 0);
  std::printf("lowered %d conformance programs\n", lowered);
}

}  // namespace
}  // namespace monotile::dsl::lower
