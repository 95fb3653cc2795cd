// The CUDA backend without a GPU: loading a library that is not the driver, error names through
// the driver's cuGetErrorName, the launch message, and the Target for a compute capability.
#include "runtime/driver_cuda.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/device_cuda.h"
#include "runtime/launch_config.h"

namespace monotile::runtime {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(CudaDriver, MissingLibraryIsNoNvidiaDriver) {
  absl::StatusOr<std::shared_ptr<const CudaDriver>> driver =
      load_cuda_driver({"libmonotile_no_cuda.so.1"});
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(std::string(driver.status().message()),
            "no NVIDIA driver: dlopen(\"libmonotile_no_cuda.so.1\") failed: "
            "libmonotile_no_cuda.so.1: cannot open shared object file: No such file or directory");
}

TEST(CudaDriver, ALibraryThatIsNotTheDriverNamesTheMissingEntryPoint) {
  absl::StatusOr<std::shared_ptr<const CudaDriver>> driver = load_cuda_driver({"libc.so.6"});
  ASSERT_FALSE(driver.ok());
  EXPECT_THAT(std::string(driver.status().message()),
              AllOf(StartsWith("NVIDIA driver libc.so.6 lacks an entry point monotile needs: "
                               "symbol \"cuGetErrorName\" not found in /"),
                    HasSubstr("hint: install an NVIDIA driver for CUDA 12 or newer")));
}

CudaDriver driver_with_error_names() {
  CudaDriver driver;
  driver.cuGetErrorName = [](cuda_api::CUresult result, const char** name) -> cuda_api::CUresult {
    if (result != cuda_api::CUDA_ERROR_INVALID_VALUE) return cuda_api::CUDA_ERROR_INVALID_VALUE;
    *name = "CUDA_ERROR_INVALID_VALUE";
    return cuda_api::CUDA_SUCCESS;
  };
  return driver;
}

TEST(CudaDriver, ErrorNamesComeFromTheDriver) {
  CudaDriver driver = driver_with_error_names();
  EXPECT_EQ(driver.error_name(cuda_api::CUDA_ERROR_INVALID_VALUE), "CUDA_ERROR_INVALID_VALUE");
  EXPECT_EQ(driver.error_name(4242), "CUresult 4242");
  EXPECT_TRUE(driver.check(cuda_api::CUDA_SUCCESS, "cuInit").ok());
}

TEST(CudaDriver, LaunchFailureNamesKernelAndConfig) {
  CudaDriver driver = driver_with_error_names();
  const LaunchConfig config{{132, 1, 1}, {256, 1, 1}, 0};
  absl::Status status = driver.check(cuda_api::CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel",
                                     "\"vector_add\" (" + describe(config) + ")");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(status.message()),
            "cuLaunchKernel failed for \"vector_add\" (grid 132x1x1, block 256x1x1, smem 0): "
            "CUDA_ERROR_INVALID_VALUE");
}

TEST(CudaDriver, StatusCodes) {
  EXPECT_EQ(cuda_status_code(cuda_api::CUDA_ERROR_OUT_OF_MEMORY),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(cuda_status_code(cuda_api::CUDA_ERROR_NO_DEVICE), absl::StatusCode::kNotFound);
  EXPECT_EQ(cuda_status_code(999), absl::StatusCode::kInternal);
}

TEST(CudaTarget, ArchSpecificFromHopperOn) {
  EXPECT_EQ(cuda_target(9, 0)->str(), "sm_90a");
  EXPECT_EQ(cuda_target(10, 0)->str(), "sm_100a");
  EXPECT_EQ(cuda_target(8, 0)->str(), "sm_80");
  EXPECT_EQ(cuda_target(8, 9)->str(), "sm_89");
}

TEST(CudaTarget, UnsupportedCapabilityIsAnError) {
  absl::StatusOr<dsl::Target> volta = cuda_target(7, 0);
  ASSERT_FALSE(volta.ok());
  EXPECT_EQ(volta.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(volta.status().message()),
              StartsWith("compute capability 7.0 (sm_70) is not a target monotile supports: "));
}

// Where there is no NVIDIA GPU, opening the backend says why; where there is one, it opens.
TEST(CudaDevices, OpenOrSayWhy) {
  absl::StatusOr<BackendDevices> devices = open_cuda_devices();
  if (devices.ok()) {
    ASSERT_FALSE(devices->devices.empty());
    EXPECT_EQ(devices->devices[0]->info().vendor, dsl::Vendor::kNvidia);
    return;
  }
  EXPECT_THAT(std::string(devices.status().message()),
              testing::AnyOf(StartsWith("no NVIDIA driver: dlopen(\"libcuda.so.1\") failed: "),
                             HasSubstr(") is present but ")));
}

}  // namespace
}  // namespace monotile::runtime
