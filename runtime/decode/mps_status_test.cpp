// mps_status: the control pipe found or not in CUDA_MPS_PIPE_DIRECTORY, and the warning without it.
#include "runtime/decode/mps_status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace monotile::runtime::decode {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(MpsStatus, TheControlPipeInThePipeDirectoryMeansADaemon) {
  const fs::path dir = fs::path(::testing::TempDir()) / absl::StrCat("monotile_mps_", getpid());
  fs::create_directories(dir);
  ASSERT_EQ(setenv("CUDA_MPS_PIPE_DIRECTORY", dir.c_str(), 1), 0);
  MpsStatus without = mps_status();
  EXPECT_FALSE(without.daemon);
  EXPECT_EQ(without.directory, dir.string());
  EXPECT_EQ(without.why,
            absl::StrCat("CUDA_MPS_PIPE_DIRECTORY=", dir.string(), ": no control pipe"));
  const std::string warning = mps_report(without);
  EXPECT_THAT(warning, StartsWith("WARNING: no MPS control daemon (CUDA_MPS_PIPE_DIRECTORY="));
  EXPECT_THAT(warning,
              HasSubstr("two processes on one GPU are time-sliced by the driver, never "
                        "concurrent, so the two-process times below include context switches "
                        "and do NOT measure the exchanges; hint: start MPS "
                        "(nvidia-cuda-mps-control -d) and run again"));
  std::ofstream(dir / "control") << "";
  const MpsStatus with = mps_status();
  EXPECT_TRUE(with.daemon);
  EXPECT_THAT(with.why, HasSubstr(": its control pipe is there"));
  EXPECT_THAT(mps_report(with),
              StartsWith("MPS: a control daemon is running (CUDA_MPS_PIPE_DIRECTORY="));
  ASSERT_EQ(unsetenv("CUDA_MPS_PIPE_DIRECTORY"), 0);
  EXPECT_EQ(mps_status().directory, "/tmp/nvidia-mps");
  EXPECT_THAT(mps_status().why, StartsWith("the default pipe directory /tmp/nvidia-mps: "));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace monotile::runtime::decode
