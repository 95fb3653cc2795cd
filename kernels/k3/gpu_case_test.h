// A parameterized GPU test suite over layer-kernel cases: one GpuExecutor for the suite, made when it
// starts, or the reason there is none (every case then skips with it).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tests/conformance/gpu_executor.h"

namespace monotile::kernels::k3 {

template <typename Case>
class GpuCaseTest : public ::testing::TestWithParam<Case> {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<conformance::GpuExecutor>> created = conformance::GpuExecutor::create();
    if (created.ok()) {
      executor_ = created->release();
    } else {
      skip_reason_ = created.status().ToString();
    }
  }
  static inline conformance::GpuExecutor* executor_ = nullptr;
  static inline std::string skip_reason_;
};

}  // namespace monotile::kernels::k3
