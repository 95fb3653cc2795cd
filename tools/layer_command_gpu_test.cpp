// `monotile layer run --check --device gpu` at K3's TP 8 rank shapes (hidden 7168, 12 KDA heads,
// 6288 in_proj rows), layer 1, one request of q 4, seeded weights of k3: the JIT-compiled K1 on the
// GPU against the float64 reference. Skips, with discovery's reason, without a GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "absl/strings/str_join.h"
#include "runtime/discovery.h"
#include "tests/testing/command.h"

namespace monotile::tools {
namespace {

using ::testing::HasSubstr;

using CommandResult = monotile::testing::CommandResult;

CommandResult run(const std::string& args) {
  const std::string command = std::string(MONOTILE_BINARY) + " layer " + args + " 2>&1";
  return monotile::testing::run_command(command);
}

TEST(LayerCommandGpu, K3Tp8RankShapesMatchTheReference) {
  runtime::DiscoveryOptions options;
  options.include_cpu = false;
  runtime::Discovery found = runtime::discover_devices(options);
  if (found.devices.empty()) {
    std::vector<std::string> reasons;
    for (const runtime::MissingBackend& missing : found.missing) reasons.push_back(missing.reason);
    GTEST_SKIP() << "no GPU: " << absl::StrJoin(reasons, "; ");
  }
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("monotile_layer_gpu_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string in = (dir / "in.safetensors").string(), out = (dir / "out.safetensors").string();
  const std::string where = "--model k3 --tp 8 --rank 3 --layer 1";
  CommandResult inputs = run("inputs " + where + " --requests 1 --q 4 --seed 11 --out " + in);
  ASSERT_EQ(inputs.status, 0) << inputs.output;
  CommandResult result = run("run " + where + " --seed 5 --inputs " + in + " --out " + out + " --device gpu --check");
  std::printf("%s", result.output.c_str());
  EXPECT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("every output passes"));
  EXPECT_THAT(result.output, ::testing::Not(HasSubstr("cpu interpreter")));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace monotile::tools
