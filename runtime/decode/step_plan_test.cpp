#include "runtime/decode/step_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/decode/in_process_group.h"

namespace monotile::runtime::decode {
namespace {

using model::Dtype;
using ::testing::HasSubstr;

constexpr std::string_view kKda = "model.layers.1.self_attn";
constexpr int kQ = 4;

const model::ModelConfig& k3() {
  static const model::ModelConfig config = *model::load_config("k3");
  return config;
}

StepPlanner make_planner() {
  return StepPlanner(DecodeConfig{kQ, 16}, k3(), *model::rank_dims(k3(), 8, 0), {3, 1, 2},
                     std::string(kKda));
}

std::vector<KdaCache> caches(uint64_t state_address) {
  return {{std::string(kKda), TensorView::dense(Dtype::kBF16, {4, kQ + 2, 4608}, 0x1000),
           TensorView::dense(Dtype::kF32, {4, 12, 128, 128}, state_address)}};
}

// A pure spec-verify step of `requests` uniform requests of q rows.
SpecMetadata verify(int requests) {
  SpecMetadata m;
  m.spec_sequence_masks = true;
  m.num_spec_decodes = requests;
  m.uniform_spec_sequence_length = kQ;
  m.spec_state_indices = TensorView::dense(Dtype::kI32, {requests, kQ});
  m.num_accepted_tokens = TensorView::dense(Dtype::kI32, {requests});
  m.spec_query_start_loc = TensorView::dense(Dtype::kI32, {requests + 1});
  return m;
}

struct Fixture {
  StepPlanner planner = make_planner();
  std::vector<KdaCache> bound = caches(0x100000);
  AttnMetadata metadata{{std::string(kKda), verify(2)}};
  StepInputs inputs{2 * kQ, false, true, GraphMode::kFull, &metadata, &bound[0].recurrent};

  Fixture() {
    auto group = make_single_process_group();
    EXPECT_TRUE(planner.prepare_kv(bound, *group).ok());
  }
  std::optional<PlannedStep> plan() {
    absl::StatusOr<std::optional<PlannedStep>> step = planner.plan(inputs);
    EXPECT_TRUE(step.ok()) << step.status();
    return step.ok() ? *step : std::nullopt;
  }
};

TEST(StepReason, PureUniformSpecVerifyHasNone) {
  AttnMetadata md{{std::string(kKda), verify(3)}};
  EXPECT_EQ(step_reason(&md, kKda, 3 * kQ), std::nullopt);
}

TEST(StepReason, NoMetadata) {
  EXPECT_EQ(step_reason(nullptr, kKda, kQ), "no metadata");
}

TEST(StepReason, NotSpecVerifyWithoutTheKdaLayersEntry) {
  AttnMetadata md{{"model.layers.2.self_attn", verify(1)}};
  EXPECT_EQ(step_reason(&md, kKda, kQ), "not spec-verify");
}

TEST(StepReason, NotSpecVerifyWithoutSpecSequenceMasks) {
  AttnMetadata md{{std::string(kKda), verify(1)}};
  md.begin()->second.spec_sequence_masks = false;
  EXPECT_EQ(step_reason(&md, kKda, kQ), "not spec-verify");
}

TEST(StepReason, NotPureDecodeWithPrefills) {
  AttnMetadata md{{std::string(kKda), verify(1)}};
  md.begin()->second.num_prefills = 1;
  EXPECT_EQ(step_reason(&md, kKda, kQ), "not pure decode");
}

TEST(StepReason, NotPureDecodeWithPlainDecodes) {
  AttnMetadata md{{std::string(kKda), verify(1)}};
  md.begin()->second.num_decodes = 2;
  EXPECT_EQ(step_reason(&md, kKda, kQ), "not pure decode");
}

TEST(StepReason, NotPureDecodeWithoutSpecDecodes) {
  AttnMetadata md{{std::string(kKda), verify(1)}};
  md.begin()->second.num_spec_decodes = 0;
  EXPECT_EQ(step_reason(&md, kKda, 0), "not pure decode");
}

TEST(StepReason, NotUniformWhenLengthsDiffer) {
  AttnMetadata md{{std::string(kKda), verify(2)}};
  md.begin()->second.uniform_spec_sequence_length.reset();
  EXPECT_EQ(step_reason(&md, kKda, 2 * kQ), "not uniform");
  md.begin()->second.uniform_spec_sequence_length = kQ - 1;
  EXPECT_EQ(step_reason(&md, kKda, 2 * kQ), "not uniform");
}

TEST(StepReason, NotUniformWhenRequestsDoNotFillTheWidth) {
  AttnMetadata md{{std::string(kKda), verify(2)}};
  EXPECT_EQ(step_reason(&md, kKda, 3 * kQ), "not uniform");
}

TEST(StepReason, TheFirstReasonInTheSeedsOrderWins) {
  AttnMetadata md{{std::string(kKda), verify(2)}};
  md.begin()->second.num_prefills = 1;
  md.begin()->second.uniform_spec_sequence_length.reset();
  EXPECT_EQ(step_reason(&md, kKda, 5), "not pure decode");
  md.begin()->second.spec_sequence_masks = false;
  EXPECT_EQ(step_reason(&md, kKda, 5), "not spec-verify");
}

TEST(Plan, APureVerifyStepRunsTheKernelsOfTheServedLayers) {
  Fixture f;
  std::optional<PlannedStep> step = f.plan();
  ASSERT_TRUE(step.has_value());
  EXPECT_EQ(step->width, 2 * kQ);
  EXPECT_EQ(step->attn_metadata, &f.metadata);
  EXPECT_TRUE(step->serves(1));
  EXPECT_TRUE(step->serves(3));
  EXPECT_FALSE(step->serves(0));
  EXPECT_FALSE(step->serves(4));
}

TEST(Plan, EagerStepsRunTheKernelsToo) {
  Fixture f;
  f.inputs.graph_mode = GraphMode::kNone;
  EXPECT_TRUE(f.plan().has_value());
}

TEST(Plan, EveryWidthOfTheConfig) {
  Fixture f;
  for (int requests = 1; requests * kQ <= 16; ++requests) {
    f.metadata[std::string(kKda)] = verify(requests);
    f.inputs.width = requests * kQ;
    EXPECT_TRUE(f.plan().has_value()) << f.inputs.width;
  }
}

TEST(Plan, PipelineStageInputsRunTheHostsLayers) {
  Fixture f;
  f.inputs.pipeline_stage_inputs = true;
  EXPECT_FALSE(f.plan().has_value());
}

TEST(Plan, NoKvCacheBoundRunsTheHostsLayers) {
  Fixture f;
  StepPlanner unbound = make_planner();
  absl::StatusOr<std::optional<PlannedStep>> step = unbound.plan(f.inputs);
  ASSERT_TRUE(step.ok());
  EXPECT_FALSE(step->has_value());
}

TEST(Plan, NoForwardContextRunsTheHostsLayers) {
  Fixture f;
  f.inputs.forward_context = false;
  EXPECT_FALSE(f.plan().has_value());
}

TEST(Plan, PiecewiseGraphStepsRunTheHostsLayers) {
  Fixture f;
  f.inputs.graph_mode = GraphMode::kPiecewise;
  EXPECT_FALSE(f.plan().has_value());
}

TEST(Plan, WidthsWithoutKernelsRunTheHostsLayers) {
  Fixture f;
  for (int width : {0, kQ + 2, 20}) {
    f.inputs.width = width;
    EXPECT_FALSE(f.plan().has_value()) << width;
  }
}

TEST(Plan, EachStepReasonRunsTheHostsLayers) {
  Fixture f;
  f.inputs.attn_metadata = nullptr;
  EXPECT_FALSE(f.plan().has_value());
  f.inputs.attn_metadata = &f.metadata;
  f.metadata[std::string(kKda)].num_prefills = 1;
  EXPECT_FALSE(f.plan().has_value());
  f.metadata[std::string(kKda)] = verify(1);
  EXPECT_FALSE(f.plan().has_value());  // 1 request, 2q rows
}

TEST(Plan, AKvCacheReBoundWithoutPrepareKvIsAnError) {
  Fixture f;
  std::vector<KdaCache> rebound = caches(0x900000);
  f.inputs.kda_state = &rebound[0].recurrent;
  absl::StatusOr<std::optional<PlannedStep>> step = f.planner.plan(f.inputs);
  EXPECT_EQ(step.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(step.status().message(),
            "the KV cache of \"model.layers.1.self_attn\" was re-bound without prepare_kv: "
            "call prepare_kv after every KV-cache bind");
}

TEST(Plan, TheReBindCheckComesAfterTheStepRules) {
  Fixture f;
  std::vector<KdaCache> rebound = caches(0x900000);
  f.inputs.kda_state = &rebound[0].recurrent;
  f.inputs.graph_mode = GraphMode::kPiecewise;
  EXPECT_FALSE(f.plan().has_value());
}

TEST(PrepareKv, TheRealCacheAfterTheProfilingOneIsBound) {
  Fixture f;
  std::vector<KdaCache> real = caches(0x900000);
  auto group = make_single_process_group();
  ASSERT_TRUE(f.planner.prepare_kv(real, *group).ok());
  f.inputs.kda_state = &real[0].recurrent;
  EXPECT_TRUE(f.plan().has_value());
}

TEST(PrepareKv, NothingBoundForgetsThePreviousBinding) {
  Fixture f;
  auto group = make_single_process_group();
  ASSERT_TRUE(f.planner.prepare_kv({}, *group).ok());
  EXPECT_FALSE(f.planner.kv_bound());
  std::vector<KdaCache> empty = caches(0x100000);
  empty[0].recurrent.shape[0] = 0;
  ASSERT_TRUE(f.planner.prepare_kv(empty, *group).ok());
  EXPECT_FALSE(f.planner.kv_bound());
  EXPECT_FALSE(f.plan().has_value());
}

TEST(PrepareKv, ARefusedCacheIsAgreedAndLeavesNothingBound) {
  Fixture f;
  std::vector<KdaCache> bad = caches(0x900000);
  bad[0].conv.dtype = Dtype::kF32;
  auto group = make_single_process_group();
  absl::Status status = f.planner.prepare_kv(bad, *group);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("the specialized decode does not support the KV caches: layer "
                        "\"model.layers.1.self_attn\": "
                        "conv state dtype F32: expected BF16"));
  EXPECT_FALSE(f.planner.kv_bound());
}

TEST(PrepareKv, OneRanksBadCacheMakesEveryRankRefuse) {
  std::vector<absl::Status> statuses = InProcessGroup::run(4, [](Group& group) {
    StepPlanner planner = make_planner();
    std::vector<KdaCache> bound = caches(0x100000);
    if (group.rank() == 1) bound[0].conv = TensorView::dense(Dtype::kBF16, {4, 2, 4608});
    absl::Status status = planner.prepare_kv(bound, group);
    EXPECT_FALSE(planner.kv_bound());
    return status;
  });
  EXPECT_THAT(std::string(statuses[1].message()),
              HasSubstr("the KV caches: layer \"model.layers.1.self_attn\": conv "
                        "state_len 2"));
  for (int rank : {0, 2, 3}) {
    EXPECT_THAT(std::string(statuses[rank].message()),
                HasSubstr("the KV caches: another TP rank refused (rank 1)"));
  }
}

}  // namespace
}  // namespace monotile::runtime::decode
