// Driver-call failures read "<call> failed for <subject>: <driver's error name>" (the vendors'
// own spellings are checked in driver_cuda_test.cpp and driver_hip_test.cpp).
#include "runtime/driver_error.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/launch_config.h"

namespace monotile::runtime {
namespace {

TEST(DriverError, NamesCallSubjectAndErrorName) {
  LaunchConfig config{{132, 1, 1}, {256, 1, 1}, 0};
  absl::Status status =
      driver_call_failed(absl::StatusCode::kInvalidArgument, "launch_kernel",
                         "\"vector_add\" (" + describe(config) + ")", "ERROR_INVALID_VALUE");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(status.message()),
            "launch_kernel failed for \"vector_add\" (grid 132x1x1, block 256x1x1, smem 0): "
            "ERROR_INVALID_VALUE");
}

TEST(DriverError, WithoutSubject) {
  absl::Status status =
      driver_call_failed(absl::StatusCode::kInternal, "device_synchronize", "", "ERROR_UNKNOWN");
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(std::string(status.message()), "device_synchronize failed: ERROR_UNKNOWN");
}

TEST(DriverError, DescribesLaunchDimensions) {
  EXPECT_EQ(describe(Dim3{4, 2, 3}), "4x2x3");
  EXPECT_EQ(describe(LaunchConfig{{1, 1, 1}, {64, 1, 1}, 49152}),
            "grid 1x1x1, block 64x1x1, smem 49152");
}

TEST(DriverError, DescribesBytes) {
  EXPECT_EQ(describe_bytes(256), "256 bytes");
  EXPECT_EQ(describe_bytes(49152), "48.00 KiB (49152 bytes)");
  EXPECT_EQ(describe_bytes(uint64_t{3} << 29), "1.50 GiB (1610612736 bytes)");
}

}  // namespace
}  // namespace monotile::runtime
