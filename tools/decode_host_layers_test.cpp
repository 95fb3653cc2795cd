// `monotile decode` with its host stand-ins as DSL kernels (kernels/standins), on the CPU
// interpreter at k3-tiny: every served layer and every stand-in passes --check, the table says the
// stand-ins ran as kernels; padded requests and a second width (q 3) are covered. `--standins`
// misuse is refused by its words.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "tests/testing/command.h"

namespace monotile::tools {
namespace {

using monotile::testing::CommandResult;
using ::testing::HasSubstr;
using ::testing::Not;

CommandResult run(const std::string& args) {
  return monotile::testing::run_command(absl::StrCat(MONOTILE_BINARY, " decode ", args, " 2>&1"));
}

TEST(DecodeHostLayers, KernelStandinsPassTheCheck) {
  const CommandResult result = run("--device cpu --standins kernels --steps 2 --check --seed 3");
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("    0  KDA + MLP: host stand-in (DSL kernels)"));
  EXPECT_THAT(result.output,
              HasSubstr("    3  MLA: host attention stand-in + kernel K2; stand-in: DSL kernels"));
  EXPECT_THAT(result.output,
              HasSubstr("every served layer passes its check against the float64 reference"));
  EXPECT_THAT(result.output, Not(HasSubstr("FAIL")));
}

TEST(DecodeHostLayers, KernelStandinsAtAWiderStep) {
  const CommandResult result =
      run("--device cpu --standins kernels --q 3 --requests 2 --steps 2 --check --seed 9");
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("step 2: width 6, 2 requests (1 padded): kernels for 12 of 13 layers"));
  EXPECT_THAT(result.output, Not(HasSubstr("FAIL")));
}

TEST(DecodeHostLayers, RefusesAnUnknownStandinKind) {
  const CommandResult result = run("--standins fast");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("--standins fast: expected reference or kernels"));
}

}  // namespace
}  // namespace monotile::tools
