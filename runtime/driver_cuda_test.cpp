// The CUDA backend without a GPU: loading a library that is not the driver, error names through
// the driver's cuGetErrorName, the launch message, and the Target for a compute capability.
#include "runtime/driver_cuda.h"

#include <cstdint>
#include <vector>

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

// What the fake cuLaunchKernelEx below was given.
struct SeenLaunch {
  cuda_api::CUlaunchConfig config{};
  std::vector<cuda_api::CUlaunchAttribute> attributes;
  cuda_api::CUfunction function = nullptr;
  void** params = nullptr;
  void** extra = nullptr;
};
SeenLaunch seen_launch;

TEST(CudaDriver, ProgrammaticLaunchAllowsProgrammaticStreamSerialization) {
  CudaDriver driver = driver_with_error_names();
  driver.cuLaunchKernelEx = [](const cuda_api::CUlaunchConfig* config,
                               cuda_api::CUfunction function, void** params,
                               void** extra) -> cuda_api::CUresult {
    seen_launch.config = *config;
    seen_launch.attributes.assign(config->attrs, config->attrs + config->numAttrs);
    seen_launch.function = function;
    seen_launch.params = params;
    seen_launch.extra = extra;
    return cuda_api::CUDA_SUCCESS;
  };
  LaunchConfig config{{132, 2, 1}, {256, 1, 1}, 4096};
  config.programmatic_dependency = true;
  auto* function = reinterpret_cast<cuda_api::CUfunction>(uintptr_t{0x1000});
  auto* stream = reinterpret_cast<cuda_api::CUstream>(uintptr_t{0x2000});
  void* argument = nullptr;
  void* args[] = {&argument};
  ASSERT_EQ(launch_programmatic(driver, function, config, stream, args), cuda_api::CUDA_SUCCESS);
  const cuda_api::CUlaunchConfig& got = seen_launch.config;
  EXPECT_EQ(got.gridDimX, 132u);
  EXPECT_EQ(got.gridDimY, 2u);
  EXPECT_EQ(got.gridDimZ, 1u);
  EXPECT_EQ(got.blockDimX, 256u);
  EXPECT_EQ(got.sharedMemBytes, 4096u);
  EXPECT_EQ(got.hStream, stream);
  EXPECT_EQ(seen_launch.function, function);
  EXPECT_EQ(seen_launch.params, args);
  EXPECT_EQ(seen_launch.extra, nullptr);
  ASSERT_EQ(seen_launch.attributes.size(), 1u);
  EXPECT_EQ(seen_launch.attributes[0].id,
            cuda_api::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
  EXPECT_EQ(seen_launch.attributes[0].value.programmaticStreamSerializationAllowed, 1);
}

TEST(CudaDriver, ProgrammaticLaunchFailureNamesTheCallAndTheMode) {
  CudaDriver driver = driver_with_error_names();
  LaunchConfig config{{132, 1, 1}, {256, 1, 1}, 0};
  config.programmatic_dependency = true;
  absl::Status status = driver.check(cuda_api::CUDA_ERROR_INVALID_VALUE, "cuLaunchKernelEx",
                                     "\"k3_k2\" (" + describe(config) + ")");
  EXPECT_EQ(
      std::string(status.message()),
      "cuLaunchKernelEx failed for \"k3_k2\" (grid 132x1x1, block 256x1x1, smem 0, programmatic): "
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
