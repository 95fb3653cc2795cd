// The HIP backend without an AMD GPU: missing runtime, a library that is not the runtime, error
// names through hipGetErrorName, the runtime present but no GPU, and reading gcnArchName.
#include "runtime/driver_hip.h"

#include <cstring>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/device_hip.h"

namespace monotile::runtime {
namespace {

using ::testing::AllOf;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(HipDriver, MissingLibraryIsNoHipRuntime) {
  absl::StatusOr<std::shared_ptr<const HipDriver>> driver =
      load_hip_driver({"libmonotile_no_hip.so.6", "libmonotile_no_hip.so.5"});
  ASSERT_FALSE(driver.ok());
  EXPECT_THAT(std::string(driver.status().message()),
              AllOf(StartsWith("no AMD HIP runtime: dlopen(\"libmonotile_no_hip.so.6\") failed: "),
                    HasSubstr("; dlopen(\"libmonotile_no_hip.so.5\") failed: ")));
}

TEST(HipDriver, ALibraryThatIsNotTheRuntimeNamesTheMissingEntryPoint) {
  absl::StatusOr<std::shared_ptr<const HipDriver>> driver = load_hip_driver({"libc.so.6"});
  ASSERT_FALSE(driver.ok());
  EXPECT_THAT(std::string(driver.status().message()),
              AllOf(StartsWith("AMD HIP runtime libc.so.6 lacks an entry point monotile needs: "
                               "symbol \"hipGetErrorName\" not found in /"),
                    HasSubstr("hint: install ROCm 5.2 or newer")));
}

TEST(HipDriver, ErrorNamesComeFromTheRuntime) {
  HipDriver driver;
  driver.hipGetErrorName = [](hip_api::hipError_t error) -> const char* {
    return error == hip_api::hipErrorOutOfMemory ? "hipErrorOutOfMemory" : "";
  };
  absl::Status status =
      driver.check(hip_api::hipErrorOutOfMemory, "hipMalloc", "1.00 GiB (1073741824 bytes)");
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(std::string(status.message()),
            "hipMalloc failed for 1.00 GiB (1073741824 bytes): hipErrorOutOfMemory");
  EXPECT_EQ(driver.error_name(77), "hipError_t 77");
}

// The HIP runtime is installed on CI machines without an AMD GPU: it loads, and then says so.
TEST(HipDevices, RuntimeWithoutGpuSaysWhy) {
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
              AllOf(HasSubstr("gcnArchName at offset 1160 reads \"xxxxxxxx"),
                    HasSubstr("not an AMD architecture (\"gfx...\"): this HIP runtime's struct "
                              "layout is not one monotile knows")));
}

}  // namespace
}  // namespace monotile::runtime
