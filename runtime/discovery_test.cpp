// Discovery on any machine: a backend without a library, with a library that is not a driver, or
// with a driver but no GPU gives a reason; the CPU device is always there, last.
#include "runtime/discovery.h"

#include <cstring>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/device_cuda.h"
#include "runtime/device_hip.h"
#include "runtime/driver_cuda.h"
#include "runtime/driver_hip.h"

namespace monotile::runtime {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const MissingBackend* find_missing(const Discovery& discovery, dsl::Vendor vendor) {
  for (const MissingBackend& missing : discovery.missing) {
    if (missing.vendor == vendor) return &missing;
  }
  return nullptr;
}

TEST(Discovery, MissingLibrariesAreReasonsAndTheCpuDeviceRemains) {
  DiscoveryOptions options;
  options.cuda_libraries = {"libmonotile_no_cuda.so.1"};
  options.hip_libraries = {"libmonotile_no_hip.so.6", "libmonotile_no_hip.so.5"};
  Discovery discovery = discover_devices(options);
  ASSERT_EQ(discovery.devices.size(), 1u);
  EXPECT_EQ(discovery.devices[0]->info().vendor, dsl::Vendor::kCpu);
  const MissingBackend* nvidia = find_missing(discovery, dsl::Vendor::kNvidia);
  const MissingBackend* amd = find_missing(discovery, dsl::Vendor::kAmd);
  ASSERT_NE(nvidia, nullptr);
  ASSERT_NE(amd, nullptr);
  EXPECT_EQ(nvidia->reason,
            "no NVIDIA driver: dlopen(\"libmonotile_no_cuda.so.1\") failed: "
            "libmonotile_no_cuda.so.1: cannot open shared object file: No such file or directory");
  EXPECT_THAT(amd->reason, StartsWith("no AMD HIP runtime: dlopen(\"libmonotile_no_hip.so.6\") "
                                      "failed: "));
  EXPECT_THAT(amd->reason, HasSubstr("; dlopen(\"libmonotile_no_hip.so.5\") failed: "));
}

TEST(Discovery, ALibraryThatIsNotTheDriverNamesTheMissingEntryPoint) {
  absl::StatusOr<std::shared_ptr<const CudaDriver>> cuda = load_cuda_driver({"libc.so.6"});
  ASSERT_FALSE(cuda.ok());
  EXPECT_THAT(std::string(cuda.status().message()),
              AllOf(StartsWith("NVIDIA driver libc.so.6 lacks an entry point monotile needs: "
                               "symbol \"cuGetErrorName\" not found in libc.so.6"),
                    HasSubstr("hint: install an NVIDIA driver for CUDA 12 or newer")));
  absl::StatusOr<std::shared_ptr<const HipDriver>> hip = load_hip_driver({"libc.so.6"});
  ASSERT_FALSE(hip.ok());
  EXPECT_THAT(std::string(hip.status().message()),
              StartsWith("AMD HIP runtime libc.so.6 lacks an entry point monotile needs: symbol "
                         "\"hipGetErrorName\" not found in libc.so.6"));
}

// Whatever this machine has, every GPU backend either gives devices or says why not.
TEST(Discovery, EveryBackendGivesDevicesOrAReason) {
  Discovery discovery = discover_devices();
  for (dsl::Vendor vendor : {dsl::Vendor::kNvidia, dsl::Vendor::kAmd}) {
    bool found = false;
    for (const auto& device : discovery.devices) found |= device->info().vendor == vendor;
    const MissingBackend* missing = find_missing(discovery, vendor);
    EXPECT_NE(found, missing != nullptr) << dsl::vendor_name(vendor);
    if (missing != nullptr) {
      EXPECT_FALSE(missing->reason.empty());
    }
  }
  EXPECT_EQ(discovery.devices.back()->info().vendor, dsl::Vendor::kCpu);
}

// The HIP runtime is installed on CI machines without an AMD GPU: it loads, and then says so.
TEST(Discovery, HipRuntimeWithoutGpuSaysWhy) {
  absl::StatusOr<std::shared_ptr<const HipDriver>> driver = load_hip_driver();
  if (!driver.ok()) GTEST_SKIP() << "no HIP runtime here: " << driver.status().message();
  absl::StatusOr<BackendDevices> devices = open_hip_devices();
  if (devices.ok()) GTEST_SKIP() << "this machine has an AMD GPU";
  EXPECT_THAT(std::string(devices.status().message()),
              AllOf(StartsWith("AMD HIP runtime libamdhip64.so"),
                    AnyOf(HasSubstr("is present but hipInit failed: hipError"),
                          HasSubstr("is present but no GPU behind it"),
                          HasSubstr("is present but hipGetDeviceCount failed"))));
}

TEST(CudaDriver, ErrorNamesComeFromTheDriver) {
  CudaDriver driver;
  driver.cuGetErrorName = [](cuda_api::CUresult result, const char** name) -> cuda_api::CUresult {
    if (result != 1) return cuda_api::CUDA_ERROR_INVALID_VALUE;
    *name = "CUDA_ERROR_INVALID_VALUE";
    return cuda_api::CUDA_SUCCESS;
  };
  EXPECT_EQ(driver.error_name(1), "CUDA_ERROR_INVALID_VALUE");
  EXPECT_EQ(driver.error_name(4242), "CUresult 4242");
  EXPECT_TRUE(driver.check(0, "cuInit").ok());
  absl::Status status = driver.check(1, "cuMemAlloc_v2", "1.00 KiB (1024 bytes)");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(status.message()),
            "cuMemAlloc_v2 failed for 1.00 KiB (1024 bytes): CUDA_ERROR_INVALID_VALUE");
  EXPECT_EQ(cuda_status_code(cuda_api::CUDA_ERROR_OUT_OF_MEMORY),
            absl::StatusCode::kResourceExhausted);
}

TEST(HipDriver, ErrorNamesComeFromTheRuntime) {
  HipDriver driver;
  driver.hipGetErrorName = [](hip_api::hipError_t error) -> const char* {
    return error == 2 ? "hipErrorOutOfMemory" : "";
  };
  absl::Status status = driver.check(2, "hipMalloc", "1.00 GiB (1073741824 bytes)");
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(std::string(status.message()),
            "hipMalloc failed for 1.00 GiB (1073741824 bytes): hipErrorOutOfMemory");
  EXPECT_EQ(driver.error_name(77), "hipError_t 77");
}

TEST(CudaTarget, ArchSpecificFromHopperOn) {
  EXPECT_EQ(cuda_target(9, 0)->str(), "sm_90a");
  EXPECT_EQ(cuda_target(10, 0)->str(), "sm_100a");
  EXPECT_EQ(cuda_target(8, 0)->str(), "sm_80");
  EXPECT_EQ(cuda_target(8, 9)->str(), "sm_89");
  absl::StatusOr<dsl::Target> volta = cuda_target(7, 0);
  ASSERT_FALSE(volta.ok());
  EXPECT_THAT(std::string(volta.status().message()),
              StartsWith("compute capability 7.0 (sm_70) is not a target monotile supports: "));
}

TEST(HipProperties, ReadsGcnArchNameAtTheLayoutsOffset) {
  for (const hip_api::DevicePropLayout& layout :
       {hip_api::kDevicePropR0000, hip_api::kDevicePropR0600}) {
    std::vector<unsigned char> properties(hip_api::kDevicePropBufferBytes, 0);
    std::strcpy(reinterpret_cast<char*>(properties.data()), "AMD Instinct MI300X");
    std::strcpy(reinterpret_cast<char*>(properties.data() + layout.gcn_arch_name),
                "gfx942:sramecc+:xnack-");
    absl::StatusOr<std::string> arch = gcn_arch_name(properties.data(), layout);
    ASSERT_TRUE(arch.ok()) << arch.status();
    EXPECT_EQ(*arch, "gfx942:sramecc+:xnack-");
  }
}

TEST(HipProperties, AnUnknownLayoutIsAnErrorNotGarbage) {
  std::vector<unsigned char> properties(hip_api::kDevicePropBufferBytes, 'x');
  absl::StatusOr<std::string> arch = gcn_arch_name(properties.data(), hip_api::kDevicePropR0600);
  ASSERT_FALSE(arch.ok());
  EXPECT_THAT(std::string(arch.status().message()),
              HasSubstr("gcnArchName at offset 1160 reads \"xxxxxxxx"));
  EXPECT_THAT(std::string(arch.status().message()),
              HasSubstr("not an AMD architecture (\"gfx...\"): this HIP runtime's struct layout "
                        "is not one monotile knows"));
}

}  // namespace
}  // namespace monotile::runtime
