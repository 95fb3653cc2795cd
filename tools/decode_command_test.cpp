// `monotile decode` end to end on the built binary at k3-tiny on the CPU interpreter: the default
// run (the README's run command) and --check pass, every step's plan decision is printed (the
// prefill-like step refused with plan's reason), the table names who ran each layer; misuse and
// impossible deployments are refused by their words.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "tests/testing/command.h"

namespace monotile::tools {
namespace {

using ::testing::HasSubstr;
using monotile::testing::CommandResult;

CommandResult run(const std::string& args) {
  return monotile::testing::run_command(absl::StrCat(MONOTILE_BINARY, " decode ", args, " 2>&1"));
}

TEST(DecodeCommand, ChecksEveryServedLayerOfK3Tiny) {
  const CommandResult result = run("--device cpu --steps 2 --check --seed 4");
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("specialized decode: 12 layers (9 KDA, 3 MLA FFN) at widths 2,4,6,8,10,12,14,16"));
  EXPECT_THAT(result.output, HasSubstr("step 1: width 4, 2 requests (0 padded): kernels for 12 of 13 layers"));
  EXPECT_THAT(result.output, HasSubstr("step 2: width 4, 2 requests (1 padded): kernels for 12 of 13 layers"));
  EXPECT_THAT(result.output, HasSubstr("step 3: width 4, 2 requests: the host's layers (not pure decode)"));
  EXPECT_THAT(result.output, HasSubstr("    0  KDA + MLP: host stand-in (reference)"));
  EXPECT_THAT(result.output, HasSubstr("    1  KDA: kernels K1 + K2"));
  EXPECT_THAT(result.output, HasSubstr("    3  MLA: host attention stand-in + kernel K2"));
  EXPECT_THAT(result.output, HasSubstr("every served layer passes its check against the float64 reference"));
}

TEST(DecodeCommand, RefusesMoreRowsThanTheWidestLaunch) {
  const CommandResult result = run("--device cpu --q 4 --requests 3 --max-rows 8");
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("--requests 3 x --q 4 = 12 rows, expected at most --max-rows 8; hint:"));
}

TEST(DecodeCommand, RefusesADeploymentTheKernelsCannotServe) {
  const CommandResult result = run("--device cpu --tp 3");
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("decode_backend \"auto\" runs the stock decode"));
}

TEST(DecodeCommand, RefusesMisuse) {
  CommandResult result = run("--device tpu");
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("--device tpu: expected cpu or gpu; hint:"));
  result = run("--steps many");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("monotile decode: --steps many: expected an integer"));
  result = run("--seed=-3");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("monotile decode: --seed=-3: expected a non-negative integer"));
  result = run("--q 0");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("monotile decode: --q 0: expected a positive integer"));
  result = run("--requests=0");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("monotile decode: --requests 0: expected a positive integer"));
  result = run("--steps -1");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("monotile decode: --steps -1: expected a non-negative integer"));
  result = run("--tp");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("monotile decode: --tp needs a value; hint: monotile decode --help lists its options"));
  result = run("layer1");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("monotile decode: takes options only, got \"layer1\""));
}

TEST(DecodeCommand, RefusesAnOptionOfAnotherCommand) {
  CommandResult result = run("--graph");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("monotile decode: unknown option --graph; hint: monotile decode --help lists its options"));
  // --dir is monotile cache's.
  result = run("--dir /tmp");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("monotile decode: unknown option --dir; hint: monotile decode --help lists its options"));
}

TEST(DecodeCommand, HelpPrintsTheUsage) {
  const CommandResult result = run("--help");
  EXPECT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("usage: monotile decode [--model k3-tiny|k3|DIR]"));
}

}  // namespace
}  // namespace monotile::tools
