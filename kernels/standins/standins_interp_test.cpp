// The stand-ins on the CPU interpreter against the float64 reference at k3-tiny: layer 0 whole (K1
// and the dense MLP half) and an MLA layer's host half, at two widths, with a padded request.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <string>

#include "kernels/standins/kda_mlp_standin.h"
#include "kernels/standins/mla_standin.h"
#include "kernels/standins/standins_test_support.h"
#include "model/config.h"
#include "runtime/device_cpu.h"
#include "runtime/interpreter_module.h"
#include "tests/testing/seed.h"

namespace monotile::kernels::standins {
namespace {

std::unique_ptr<runtime::Device> cpu_device() {
  return runtime::make_cpu_device(runtime::interpreter_loader(runtime::ProgramCatalog::process()));
}

class StandinInterp : public ::testing::TestWithParam<StandinCase> {};

TEST_P(StandinInterp, MatchesTheReference) {
  const StandinCase& c = GetParam();
  std::unique_ptr<runtime::Device> device = cpu_device();
  std::mt19937 rng = testing::case_rng();
  absl::StatusOr<StandinResult> result =
      c.layer == 0 ? run_kda_mlp_case(c, *device, jit::Jit::process_default(), rng)
                   : run_mla_case(c, *device, jit::Jit::process_default(), rng);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->ok()) << result->report();
  std::cout << case_name(c) << ":\n" << result->report();
}

INSTANTIATE_TEST_SUITE_P(
    K3Tiny, StandinInterp,
    ::testing::Values(StandinCase{.layer = 0, .requests = 2, .q = 2},
                      StandinCase{.layer = 0, .requests = 3, .q = 3, .padded = 1},
                      StandinCase{.layer = 3, .requests = 2, .q = 2},
                      StandinCase{.layer = 7, .requests = 3, .q = 3, .padded = 1}),
    [](const ::testing::TestParamInfo<StandinCase>& info) {
      std::string name = case_name(info.param) + "_" + std::to_string(info.index);
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

TEST(StandinRefusals, NameTheLayerAndWhatIsWrong) {
  std::unique_ptr<runtime::Device> device = cpu_device();
  const model::ModelConfig config = *model::load_config("k3-tiny");
  const model::RankDims dims = *model::rank_dims(config, 1, 0);
  jit::Jit& jit = jit::Jit::process_default();
  absl::StatusOr<std::unique_ptr<KdaMlpStandin>> moe =
      KdaMlpStandin::create(*device, jit, config, dims, 1, {}, 4, 2, 4, true);
  EXPECT_THAT(moe.status().message(),
              ::testing::HasSubstr("layer 1 stand-in: expected a KDA layer with a dense MLP"));
  absl::StatusOr<std::unique_ptr<MlaStandin>> kda =
      MlaStandin::create(*device, jit, config, dims, 0, {}, 4, 2);
  EXPECT_THAT(kda.status().message(), ::testing::HasSubstr("layer 0 stand-in: not an MLA layer"));
  absl::StatusOr<std::unique_ptr<MlaStandin>> bare =
      MlaStandin::create(*device, jit, config, dims, 3, {}, 4, 2);
  EXPECT_THAT(
      bare.status().message(),
      ::testing::HasSubstr("layer 3 stand-in: no weight \"self_attention_res_norm.weight\""));
}

}  // namespace
}  // namespace monotile::kernels::standins
