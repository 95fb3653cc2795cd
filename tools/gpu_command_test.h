// The fixture of the command-line tools' GPU tests: a test skips, naming discovery's reasons, where
// this machine has no GPU.
#pragma once

#include <gtest/gtest.h>

#include "runtime/discovery.h"

namespace monotile::tools {

class GpuCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime::DiscoveryOptions options;
    options.include_cpu = false;
    runtime::Discovery found = runtime::discover_devices(options);
    if (found.devices.empty()) GTEST_SKIP() << runtime::no_gpu_reason(found);
  }
};

}  // namespace monotile::tools
