// `monotile layer run --check --device gpu` at K3's TP 8 rank shapes (hidden 7168, 12 KDA heads,
// 6288 in_proj rows, 12 MLA heads: 1536 o_proj columns, 896 experts), seeded weights of k3: K1
// alone, a whole KDA layer (K1 then K2) and an FFN (MLA) layer (K2 on the core given), each
// JIT-compiled on the GPU against the float64 reference. Skips, with discovery's reason, without a
// GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/testing/command.h"
#include "tools/gpu_command_test.h"

namespace monotile::tools {
namespace {

using ::testing::HasSubstr;

using CommandResult = monotile::testing::CommandResult;

CommandResult run(const std::string& args) {
  const std::string command = std::string(MONOTILE_BINARY) + " layer " + args + " 2>&1";
  return monotile::testing::run_command(command);
}

class LayerCommandGpu : public GpuCommandTest {
 protected:
  void SetUp() override {
    GpuCommandTest::SetUp();
    if (IsSkipped()) return;
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("monotile_layer_gpu_" + std::to_string(getpid()) + "_" + info->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // `layer inputs` then `layer run --device gpu --check` on rank 3 of TP 8; the run's result,
  // printed.
  CommandResult inputs_then_check(int layer, const std::string& run_options) {
    const std::string in = (dir_ / "in.safetensors").string(),
                      out = (dir_ / "out.safetensors").string();
    const std::string where = "--model k3 --tp 8 --rank 3 --layer " + std::to_string(layer);
    CommandResult inputs = run("inputs " + where + " --requests 1 --q 4 --seed 11 --out " + in);
    EXPECT_EQ(inputs.status, 0) << inputs.output;
    CommandResult result = run("run " + where + " --seed 5 --inputs " + in + " --out " + out +
                               " --device gpu --check " + run_options);
    std::printf("%s", result.output.c_str());
    return result;
  }

  std::filesystem::path dir_;
};

void expect_passes_on_the_gpu(const CommandResult& result) {
  EXPECT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("every output passes"));
  EXPECT_THAT(result.output, ::testing::Not(HasSubstr("cpu interpreter")));
}

TEST_F(LayerCommandGpu, K1AtK3Tp8RankShapesMatchesTheReference) {
  const CommandResult result = inputs_then_check(1, "--stage k1");
  expect_passes_on_the_gpu(result);
  EXPECT_THAT(result.output, ::testing::Not(HasSubstr("K2 ran")));
}

TEST_F(LayerCommandGpu, AWholeKdaLayerAtK3Tp8RankShapesMatchesTheReference) {
  const CommandResult result = inputs_then_check(1, "");
  expect_passes_on_the_gpu(result);
  EXPECT_THAT(result.output, HasSubstr("K1 ran on"));
  EXPECT_THAT(result.output, HasSubstr("K2 ran on"));
  EXPECT_THAT(result.output, HasSubstr("\n  route  "));
}

TEST_F(LayerCommandGpu, AnFfnLayerAtK3Tp8RankShapesMatchesTheReference) {
  const CommandResult result = inputs_then_check(3, "");
  expect_passes_on_the_gpu(result);
  EXPECT_THAT(result.output, HasSubstr("(MLA: the FFN)"));
  EXPECT_THAT(result.output, HasSubstr("K2 ran on"));
  EXPECT_THAT(result.output, HasSubstr("\n  a  "));
}

}  // namespace
}  // namespace monotile::tools
