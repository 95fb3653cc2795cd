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
  EXPECT_EQ(run("").status, 2);
  EXPECT_EQ(run("check k3 --tp").status, 2);
  CommandResult bad = run("check k3 --tp 5");
  EXPECT_EQ(bad.status, 1) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("expected a multiple of the TP size 5"));
}

}  // namespace
}  // namespace monotile::tools
