// `monotile first-call` end to end on the built binary: misuse exits 2 naming what is wrong, and a
// machine without an NVIDIA GPU gets exit 1 and says so (the timing itself runs on the GPU machine,
// through the benchmark harness's JIT table).
#include <dlfcn.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/test_support.h"
#include "tests/testing/command.h"

namespace monotile::tools {
namespace {

using ::testing::HasSubstr;

using CommandRun = monotile::testing::CommandResult;

CommandRun first_call(const std::string& args) {
  jit::testing::TempDir dir;
  std::string command = "env MONOTILE_CACHE_DIR='" + (dir.path() / "cache").string() + "' " MONOTILE_BINARY
                        " first-call " + args + " 2>&1";
  return monotile::testing::run_command(command);
}

bool has_cuda_driver() {
  void* handle = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle != nullptr) ::dlclose(handle);
  return handle != nullptr;
}

TEST(FirstCallCommand, WithoutANameSaysSo) {
  CommandRun run = first_call("");
  EXPECT_EQ(run.status, 2);
  EXPECT_THAT(run.output, HasSubstr("monotile first-call: no kernel name"));
  EXPECT_THAT(run.output, HasSubstr("usage: monotile first-call NAME"));
}

TEST(FirstCallCommand, UnknownKernelSaysHowToList) {
  CommandRun run = first_call("rmsnorm_rows3_h7168");
  EXPECT_EQ(run.status, 2);
  EXPECT_THAT(run.output, HasSubstr("no kernel \"rmsnorm_rows3_h7168\" in the registry; hint: `monotile compile --list`"));
}

TEST(FirstCallCommand, LayerKernelHasNoGridToTime) {
  CommandRun run = first_call("k3_k1_tp8_t4_q4");
  EXPECT_EQ(run.status, 2);
  EXPECT_THAT(run.output, HasSubstr("\"k3_k1_tp8_t4_q4\" is not a benchmark kernel: it has no launch grid"));
}

TEST(FirstCallCommand, TwoNamesAreRefused) {
  CommandRun run = first_call("rmsnorm_rows4_h7168 copy_bytes67108864");
  EXPECT_EQ(run.status, 2);
  EXPECT_THAT(run.output, HasSubstr("one kernel name expected, got \"rmsnorm_rows4_h7168\" and \"copy_bytes67108864\""));
}

TEST(FirstCallCommand, MalformedOptionsAreRefused) {
  EXPECT_THAT(first_call("rmsnorm_rows4_h7168 --arg eps").output, HasSubstr("--arg \"eps\" is not NAME=VALUE"));
  EXPECT_THAT(first_call("rmsnorm_rows4_h7168 --arg eps=1 --arg=n").output, HasSubstr("--arg \"n\" is not NAME=VALUE"));
  EXPECT_THAT(first_call("rmsnorm_rows4_h7168 --buffer-bytes lots").output,
              HasSubstr("monotile first-call: --buffer-bytes lots: expected a non-negative integer"));
  EXPECT_THAT(first_call("rmsnorm_rows4_h7168 --buffer-bytes 0").output,
              HasSubstr("--buffer-bytes \"0\" is not a positive number of bytes"));
  EXPECT_THAT(first_call("rmsnorm_rows4_h7168 --cache-dir").output,
              HasSubstr("monotile first-call: --cache-dir needs a value; hint: monotile first-call --help lists its options"));
  EXPECT_THAT(first_call("rmsnorm_rows4_h7168 --fast yes").output,
              HasSubstr("monotile first-call: unknown option --fast; hint: monotile first-call --help lists its options"));
  EXPECT_EQ(first_call("rmsnorm_rows4_h7168 --fast yes").status, 2);
}

TEST(FirstCallCommand, WithoutAGpuExitsOneAndSaysWhy) {
  if (has_cuda_driver()) GTEST_SKIP() << "this machine has a CUDA driver: the harness's JIT table runs the command";
  CommandRun run = first_call("rmsnorm_rows4_h7168 --arg eps=1e-6");
  EXPECT_EQ(run.status, 1);
  EXPECT_THAT(run.output, HasSubstr("monotile first-call: no NVIDIA GPU: "));
}

}  // namespace
}  // namespace monotile::tools
