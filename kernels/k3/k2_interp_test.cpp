// K2 on the interpreter against the float64 reference, fresh random inputs and poisoned outputs: a,
// P', y, the route and the MoE output m, at widths 1..16, ordinary and block-write layers, fewer and
// more programs than tasks, K3's TP 8 rank shapes (every row on the same 16 experts, so that only
// their MXFP4 bytes need to exist), and routers with exact ties and NaN scores.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "kernels/k3/k2.h"
#include "kernels/k3/k2_test_support.h"
#include "model/config.h"
#include "tests/conformance/interpreter_executor.h"

namespace monotile::kernels::k3 {
namespace {

class K2Interp : public ::testing::TestWithParam<K2Case> {};

TEST_P(K2Interp, MatchesTheReference) {
  conformance::InterpreterExecutor executor;
  run_k2_case(GetParam(), executor);
}

std::vector<K2Case> cases() {
  std::vector<K2Case> out;
  for (int tokens : {1, 4, 16}) out.push_back({.tokens = tokens});
  out.push_back({.layer = 12, .tokens = 6});                // block-write layer: the prefix restarts at a
  out.push_back({.layer = 5, .tokens = 8, .programs = 3});  // fewer programs than tasks
  out.push_back({.tokens = 4, .programs = 64});             // more programs than tasks
  out.push_back({.tokens = 4, .router = Router::kTies});
  out.push_back({.tokens = 4, .router = Router::kNan});
  out.push_back({.tokens = 8, .router = Router::kSameExperts});
  // K3's TP 8 rank: H 7168 in 7 AttnRes chunks, 112 o_proj tasks from 1536 columns, 896 experts.
  out.push_back({.model = "k3", .tp = 8, .layer = 13, .tokens = 4, .programs = 132, .router = Router::kSameExperts});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Stages, K2Interp, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<K2Case>& info) { return case_name(info.param); });

TEST(K2Build, RefusesWhatItCannotServe) {
  model::ModelConfig config = *model::load_config("k3-tiny");
  model::RankDims dims = *model::rank_dims(config, 1, 0);
  EXPECT_THAT(k2_build(config, dims, 0, 256, 4).status().message(), ::testing::HasSubstr("dense"));
  EXPECT_THAT(k2_build(config, dims, 1, 256, 17).status().message(), ::testing::HasSubstr("tokens = 17, expected 1..16"));
  EXPECT_THAT(k2_build(config, dims, 99, 256, 4).status().message(), ::testing::HasSubstr("not a layer of the model"));
  EXPECT_THAT(k2_build(config, dims, 1, 100, 4).status().message(), ::testing::HasSubstr("expected multiples of"));
  ASSERT_TRUE(k2_build(config, dims, 12, 256, 4).ok());
  EXPECT_TRUE(k2_build(config, dims, 12, 256, 4)->reset);
  EXPECT_EQ(k2_build(config, dims, 12, 256, 4)->nblocks, config.previous_blocks(12) + 1);
}

}  // namespace
}  // namespace monotile::kernels::k3
