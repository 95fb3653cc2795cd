// Discovery on any machine: a GPU backend without its library gives the reason, every backend
// gives devices or a reason, and the CPU device is always there, last. (Each backend's own
// messages are tested in driver_cuda_test.cpp and driver_hip_test.cpp.)
#include "runtime/discovery.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace monotile::runtime {
namespace {

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

}  // namespace
}  // namespace monotile::runtime
