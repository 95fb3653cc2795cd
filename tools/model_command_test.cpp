// `monotile model` end to end on the built binary: tiny then check (exit 0), a corrupted copy
// (exit 1 with the tensor named), k3 at TP 8 rank 3 (the published per-rank shapes), misuse (2).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include "tests/testing/command.h"

namespace monotile::tools {
namespace {

using ::testing::HasSubstr;

using CommandResult = monotile::testing::CommandResult;

CommandResult run(const std::string& args) {
  std::string command = std::string(MONOTILE_BINARY) + " model " + args + " 2>&1";
  return monotile::testing::run_command(command);
}

std::string temp_dir(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / ("monotile_model_cmd_" + std::to_string(getpid()) + "_" + name)).string();
}

TEST(ModelCommand, TinyThenCheckPasses) {
  std::string dir = temp_dir("tiny");
  CommandResult tiny = run("tiny --out " + dir + " --seed 7");
  ASSERT_EQ(tiny.status, 0) << tiny.output;
  CommandResult check = run("check " + dir + " --tp 4 --rank 1");
  EXPECT_EQ(check.status, 0) << check.output;
  EXPECT_THAT(check.output, HasSubstr("supported: no weight reasons"));
  EXPECT_THAT(check.output, HasSubstr("tp 4 rank 1"));
  std::filesystem::remove(std::filesystem::path(dir) / "model-00002-of-00002.safetensors");
  check = run("check " + dir + " --tp 4 --rank 1");
  EXPECT_EQ(check.status, 1) << check.output;
  EXPECT_THAT(check.output, HasSubstr("model-00002-of-00002.safetensors"));
  std::filesystem::remove_all(dir);
}

TEST(ModelCommand, K3AtTp8Rank3) {
  CommandResult check = run("check k3 --tp 8 --rank 3");
  EXPECT_EQ(check.status, 0) << check.output;
  EXPECT_THAT(check.output, HasSubstr("self_attn.in_proj_qkvgfab.weight"));
  EXPECT_THAT(check.output, HasSubstr("[6288, 7168]"));
  EXPECT_THAT(check.output, HasSubstr("[896, 768, 1792]"));
  EXPECT_THAT(check.output, HasSubstr("[3648, 7168]"));
}

TEST(ModelCommand, Misuse) {
  EXPECT_THAT(run("").output, HasSubstr("monotile model: a subcommand is needed"));
  EXPECT_EQ(run("").status, 2);
  CommandResult no_value = run("check k3 --tp");
  EXPECT_EQ(no_value.status, 2);
  EXPECT_THAT(no_value.output,
              HasSubstr("monotile model check: --tp needs a value; hint: monotile model check --help lists its options"));
  EXPECT_THAT(run("check k3 --tp 0").output, HasSubstr("monotile model: --tp \"0\" is not a positive integer"));
  EXPECT_THAT(run("check k3 --rank=-1").output, HasSubstr("monotile model: --rank \"-1\" is not a rank"));
  EXPECT_THAT(run("check a b").output,
              HasSubstr("monotile model: one checkpoint folder or config name expected, got \"a\" and \"b\""));
  EXPECT_THAT(run("check").output, HasSubstr("monotile model: check needs a checkpoint folder or a config name"));
  EXPECT_THAT(run("tiny").output, HasSubstr("monotile model: tiny needs --out DIR"));
  EXPECT_THAT(run("tiny --out x --shards 0").output, HasSubstr("monotile model: --shards \"0\" is not a positive integer"));
  EXPECT_THAT(run("tiny --out x --seed x").output, HasSubstr("monotile model tiny: --seed x: expected a non-negative integer"));
  EXPECT_THAT(run("tiny x --out y").output, HasSubstr("monotile model: tiny takes options only, got \"x\""));
  EXPECT_THAT(run("frob").output, HasSubstr("monotile model: unknown subcommand \"frob\""));
  // Each subcommand takes its own options only.
  CommandResult other = run("check k3 --shards 2");
  EXPECT_EQ(other.status, 2);
  EXPECT_THAT(other.output,
              HasSubstr("monotile model check: unknown option --shards; hint: monotile model check --help lists its options"));
  EXPECT_THAT(run("tiny --out x --tp 2").output, HasSubstr("monotile model tiny: unknown option --tp; hint:"));
  CommandResult bad = run("check k3 --tp 5");
  EXPECT_EQ(bad.status, 1) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("expected a multiple of the TP size 5"));
}

}  // namespace
}  // namespace monotile::tools
