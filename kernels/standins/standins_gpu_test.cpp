// The stand-ins on the GPU (label gpu) against the float64 reference: the interpreter test's cases
// at k3-tiny, and a K3 TP 8 rank's MLA host half. Skips cleanly without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <string>

#include "kernels/k3/gpu_case_test.h"
#include "kernels/standins/standins_test_support.h"
#include "tests/testing/seed.h"

namespace monotile::kernels::standins {
namespace {

class StandinGpu : public kernels::k3::GpuCaseTest<StandinCase> {};

TEST_P(StandinGpu, MatchesTheReference) {
  if (executor_ == nullptr) GTEST_SKIP() << "no GPU: " << skip_reason_;
  const StandinCase& c = GetParam();
  runtime::Device& device = executor_->device();
  std::mt19937 rng = testing::case_rng();
  absl::StatusOr<StandinResult> result =
      c.layer == 0 ? run_kda_mlp_case(c, device, jit::Jit::process_default(), rng)
                   : run_mla_case(c, device, jit::Jit::process_default(), rng);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->ok()) << result->report();
  std::cout << case_name(c) << ":\n" << result->report();
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, StandinGpu,
    ::testing::Values(StandinCase{.layer = 0, .requests = 2, .q = 2},
                      StandinCase{.layer = 0, .requests = 3, .q = 3, .padded = 1},
                      StandinCase{.layer = 0, .requests = 4, .q = 4},
                      StandinCase{.layer = 3, .requests = 2, .q = 2},
                      StandinCase{.layer = 7, .requests = 3, .q = 3, .padded = 1},
                      StandinCase{.layer = 11, .requests = 8, .q = 2},
                      StandinCase{.model = "k3", .tp = 8, .layer = 3, .requests = 2, .q = 4}),
    [](const ::testing::TestParamInfo<StandinCase>& info) {
      std::string name = case_name(info.param) + "_" + std::to_string(info.index);
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

}  // namespace
}  // namespace monotile::kernels::standins
