// K2 on the GPU (label gpu) against the float64 reference: K3's TP 8 rank shapes at the widths the
// benchmarks measure (every row on the same 16 experts, as on the interpreter) and k3-tiny's
// ordinary, block-write, tie and NaN cases; one program per SM, all resident. Skips cleanly without
// a GPU.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "kernels/k3/k2_test_support.h"
#include "tests/conformance/gpu_executor.h"

namespace monotile::kernels::k3 {
namespace {

class K2Gpu : public ::testing::TestWithParam<K2Case> {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<conformance::GpuExecutor>> created = conformance::GpuExecutor::create();
    if (created.ok()) {
      executor_ = created->release();
    } else {
      skip_reason_ = new std::string(created.status().ToString());
    }
  }
  static conformance::GpuExecutor* executor_;
  static std::string* skip_reason_;
};
conformance::GpuExecutor* K2Gpu::executor_ = nullptr;
std::string* K2Gpu::skip_reason_ = nullptr;

TEST_P(K2Gpu, MatchesTheReference) {
  if (executor_ == nullptr) GTEST_SKIP() << "no GPU: " << *skip_reason_;
  K2Case c = GetParam();
  c.target = executor_->device().info().target.arch();
  c.programs = executor_->device().info().compute_units;
  run_k2_case(c, *executor_);
}

std::vector<K2Case> cases() {
  std::vector<K2Case> out;
  for (int tokens : {4, 8, 16}) {
    out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = tokens, .router = Router::kSameExperts});
  }
  out.push_back({.model = "k3", .tp = 8, .layer = 12, .tokens = 8, .router = Router::kSameExperts});  // block write
  out.push_back({.tokens = 16});
  out.push_back({.layer = 12, .tokens = 6});
  out.push_back({.tokens = 4, .router = Router::kTies});
  out.push_back({.tokens = 4, .router = Router::kNan});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Shapes, K2Gpu, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<K2Case>& info) { return case_name(info.param); });

}  // namespace
}  // namespace monotile::kernels::k3
