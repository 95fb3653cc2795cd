// The checks and the kernels' builds agree: every limit k1_build and k2_build enforce is one that
// model::config_reasons (or, for a rank's split, model::rank_dims) states first, so that `model
// check` and the deployment check say what construction would; and configs the checks accept
// (odd expert counts and top-k, other hidden sizes, the most AttnRes blocks) are built, their
// programs made, for every width and target without an error or an internal check (and the
// 40 experts with top-k 6, which once aborted K2, lowered for both vendors).
#include "runtime/decode/executor_builds.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dsl/error.h"
#include "dsl/printer.h"
#include "model/kernel_limits.h"
#include "model/weight_reasons.h"

namespace monotile::runtime::decode {
namespace {

using ::testing::HasSubstr;

model::ModelConfig tiny() {
  return *model::load_config("k3-tiny");
}

// The first refusal of the builds over every served layer and width of q 2..8 (max_rows 16), or
// "" when every one is built.
std::string build_refusal(const model::ModelConfig& config, const model::RankDims& dims) {
  for (int q = 2; q <= model::kKernelMaxQ; ++q) {
    for (const char* target : {"sm_90a", "gfx942"}) {
      absl::StatusOr<std::vector<LayerBuilds>> builds =
          executor_builds(config, dims, 0, config.num_hidden_layers, {.q = q, .max_rows = 16},
                          *dsl::Target::parse(target));
      if (!builds.ok()) return std::string(builds.status().message());
    }
  }
  return "";
}

// `layers` KDA layers, each a block of its own.
void every_layer_a_block(model::ModelConfig& c, int layers) {
  c.attn_res_block_size = 1;
  c.num_hidden_layers = layers;
  c.kda_layers.clear();
  for (int layer = 1; layer <= layers; ++layer) c.kda_layers.push_back(layer);  // 1-based
}

struct Limit {
  std::string name;
  std::function<void(model::ModelConfig&)> break_it;
  std::string build_says;  // in the build's refusal
  std::string checks_say;  // in config_reasons
};

// Each limit a build enforces from the config, broken alone on k3-tiny (which passes both).
std::vector<Limit> config_limits() {
  return {
      {"hidden size no multiple of 256", [](model::ModelConfig& c) { c.hidden_size = 384; },
       "hidden_size 384", "config: hidden_size is 384; expected a multiple of 256"},
      {"KDA head dim", [](model::ModelConfig& c) { c.kda_head_dim = 64; },
       "head_dim 64, expected 128", "config: KDA head_dim 64"},
      {"conv width", [](model::ModelConfig& c) { c.conv_size = 3; },
       "short_conv_kernel_size 3, expected 4", "short_conv_kernel_size 3"},
      {"latent no multiple of 32", [](model::ModelConfig& c) { c.routed_expert_hidden_size = 80; },
       "latent 80", "config: routed_expert_hidden_size is 80; expected a multiple of 32"},
      {"top-k above the experts", [](model::ModelConfig& c) { c.num_experts_per_token = 17; },
       "num_experts_per_token 17, expected 1..16",
       "config: num_experts_per_token is 17; expected 1..16"},
      {"top-k 0", [](model::ModelConfig& c) { c.num_experts_per_token = 0; },
       "num_experts_per_token 0", "config: num_experts_per_token is 0; expected 1..16"},
      // Every layer KDA and a block write: layer 15's MLP AttnRes reads 16 blocks.
      {"more than 15 AttnRes blocks", [](model::ModelConfig& c) { every_layer_a_block(c, 17); },
       "16 MLP AttnRes block sources, expected <= 15",
       "config: layer 16 reads 17 AttnRes blocks (attn_res_block_size 1, num_hidden_layers 17); "
       "expected at most 15"},
  };
}

TEST(ChecksAndBuilds, K3TinyPassesBoth) {
  const model::ModelConfig config = tiny();
  EXPECT_THAT(model::config_reasons(config), ::testing::IsEmpty());
  for (int tp : {1, 8})
    EXPECT_EQ(build_refusal(config, *model::rank_dims(config, tp, 0)), "") << "TP " << tp;
}

TEST(ChecksAndBuilds, EveryConfigLimitOfTheBuildsIsInConfigReasons) {
  for (const Limit& limit : config_limits()) {
    SCOPED_TRACE(limit.name);
    model::ModelConfig config = tiny();
    limit.break_it(config);
    absl::StatusOr<model::RankDims> dims = model::rank_dims(config, 1, 0);
    ASSERT_TRUE(dims.ok()) << dims.status();
    EXPECT_THAT(build_refusal(config, *dims), HasSubstr(limit.build_says));
    std::vector<std::string> reasons = model::config_reasons(config);
    EXPECT_THAT(reasons, ::testing::Contains(HasSubstr(limit.checks_say)));
  }
}

// The limits a rank's split decides: k2_build refuses the rank's widths, and rank_dims refuses the
// split that gives them.
TEST(ChecksAndBuilds, EveryRankLimitOfTheBuildsIsInRankDims) {
  const model::ModelConfig config = tiny();
  const model::RankDims good = *model::rank_dims(config, 1, 0);
  model::RankDims dims = good;
  dims.shared_intermediate = 48;
  EXPECT_THAT(build_refusal(config, dims), HasSubstr("shared rows 48"));
  model::ModelConfig shared = config;
  shared.num_shared_experts = 3;
  shared.moe_intermediate_size = 16 * 8;  // 384 / 8 = 48 at TP 8
  shared.min_moe_intermediate_per_partition = 16;
  shared.mxfp4_group_size = 16;
  EXPECT_THAT(
      std::string(model::rank_dims(shared, 8, 0).status().message()),
      HasSubstr(
          "moe_intermediate_size * num_shared_experts / tp is 48; expected a multiple of 32"));

  model::ModelConfig mla = config;
  mla.v_head_dim = 20;  // 8 heads: 160 at TP 1, 20 at TP 8
  EXPECT_THAT(build_refusal(mla, *model::rank_dims(mla, 1, 0)), ::testing::IsEmpty());
  absl::StatusOr<model::RankDims> split = model::rank_dims(mla, 8, 0);
  EXPECT_THAT(std::string(split.status().message()),
              HasSubstr("num_attention_heads / tp * v_head_dim is 20; expected a multiple of 32"));
  dims = good;
  dims.mla_heads = 1;
  EXPECT_THAT(build_refusal(mla, dims), HasSubstr("o_proj input 20"));
}

// Configs the checks accept that K3 and k3-tiny do not exercise: each is built at every width of
// every q for both vendors, and its programs made at sm_90a's builds (at q 3, widths 3..15, and q
// 8) with no refusal at a line and no internal check.
TEST(ChecksAndBuilds, WhatTheChecksAcceptIsBuilt) {
  struct Accepted {
    std::string name;
    std::function<void(model::ModelConfig&)> change;
  };
  const std::vector<Accepted> accepted = {
      {"40 experts, top-k 6",
       [](model::ModelConfig& c) { c.num_experts = 40, c.num_experts_per_token = 6; }},
      {"top-k 12", [](model::ModelConfig& c) { c.num_experts_per_token = 12; }},
      {"top-k 1", [](model::ModelConfig& c) { c.num_experts_per_token = 1; }},
      {"top-k = experts", [](model::ModelConfig& c) { c.num_experts_per_token = 16; }},
      {"hidden 768", [](model::ModelConfig& c) { c.hidden_size = 768; }},
      {"latent 96", [](model::ModelConfig& c) { c.routed_expert_hidden_size = 96; }},
      {"15 AttnRes blocks", [](model::ModelConfig& c) { every_layer_a_block(c, 15); }},
  };
  for (const Accepted& a : accepted) {
    SCOPED_TRACE(a.name);
    model::ModelConfig config = tiny();
    a.change(config);
    ASSERT_THAT(model::config_reasons(config), ::testing::IsEmpty());
    const model::RankDims dims = *model::rank_dims(config, 1, 0);
    EXPECT_EQ(build_refusal(config, dims), "");
    for (int q : {3, 8}) {
      absl::StatusOr<std::vector<LayerBuilds>> builds =
          executor_builds(config, dims, 0, config.num_hidden_layers, {.q = q, .max_rows = 16},
                          *dsl::Target::parse("sm_90a"));
      ASSERT_TRUE(builds.ok()) << builds.status();
      for (const std::function<dsl::Program()>& program : executor_programs(*builds)) {
        try {
          program();
        } catch (const dsl::Error& error) {
          ADD_FAILURE() << "q " << q << ": " << error.what();
        }
      }
    }
  }
}

// A layer's place among the AttnRes blocks is a launch value, not code (k1.h, k2.h): K3's executor
// at TP 8 makes one K1 a width and one K2 a width for each o_proj input width (KDA's, MLA's: one
// at TP 8), whatever the layer (before, a build a (kind, blocks, block write): 120 at q 4, 8 now),
// while its layers still differ in the values their launches pass; two layers' programs of one
// name are the same.
TEST(ExecutorBuilds, K3MakesOneBuildAWidthForEachKernelAndCoreWidth) {
  const model::ModelConfig config = *model::load_config("k3");
  const model::RankDims dims = *model::rank_dims(config, 8, 0);
  const dsl::Target target = *dsl::Target::parse("sm_90a");
  for (int q : {2, 4}) {
    SCOPED_TRACE(q);
    const DecodeConfig decode{.q = q, .max_rows = 16};
    absl::StatusOr<std::vector<LayerBuilds>> builds =
        executor_builds(config, dims, 0, config.num_hidden_layers, decode, target);
    ASSERT_TRUE(builds.ok()) << builds.status();
    std::set<int> cores;
    std::set<std::pair<int, int>> k1_places, k2_places;
    for (const LayerBuilds& l : *builds) {
      cores.insert(l.core_width);
      for (const auto& [width, b] : l.k1) k1_places.insert({b.nblocks, b.write_index});
      for (const auto& [width, b] : l.k2) k2_places.insert({b.nblocks, b.reset ? 1 : 0});
    }
    // At TP 8 KDA's o_proj input (12 heads x 128) is MLA's (12 heads x v_head_dim 128): 2 a width.
    EXPECT_EQ(cores, std::set<int>{1536});
    EXPECT_EQ(executor_programs(*builds).size(), decode.widths().size() * (1 + cores.size()));
    EXPECT_GE(k1_places.size(), 9u);
    EXPECT_GE(k2_places.size(), 9u);
  }
  const absl::StatusOr<std::vector<LayerBuilds>> two =
      executor_builds(config, dims, 1, 13, {.q = 4}, target);
  ASSERT_TRUE(two.ok()) << two.status();
  const LayerBuilds& first = two->front();
  const LayerBuilds& write = two->back();  // layer 12: a block write, the MLP's prefix restarts
  ASSERT_EQ(write.layer, 12);
  ASSERT_NE(first.k1.at(4).write_index, write.k1.at(4).write_index);
  ASSERT_NE(first.k2.at(4).reset, write.k2.at(4).reset);
  EXPECT_EQ(dsl::to_text(kernels::k3::k1_program(first.k1.at(4))),
            dsl::to_text(kernels::k3::k1_program(write.k1.at(4))));
  EXPECT_EQ(dsl::to_text(kernels::k3::k2_program(first.k2.at(4))),
            dsl::to_text(kernels::k3::k2_program(write.k2.at(4))));
}

// The odd config that once aborted K2 (40 experts, top-k 6) lowered for both vendors at
// q 4 (widths 4, 8, 12, 16): lowering reaches no internal check either.
TEST(ChecksAndBuilds, FortyExpertsTopSixLowersForBothVendors) {
  model::ModelConfig config = tiny();
  config.num_experts = 40;
  config.num_experts_per_token = 6;
  ASSERT_THAT(model::config_reasons(config), ::testing::IsEmpty());
  const model::RankDims dims = *model::rank_dims(config, 1, 0);
  for (const char* name : {"sm_90a", "gfx942"}) {
    const dsl::Target target = *dsl::Target::parse(name);
    absl::StatusOr<std::vector<LayerBuilds>> builds =
        executor_builds(config, dims, 1, 2, {.q = 4, .max_rows = 16}, target);
    ASSERT_TRUE(builds.ok()) << builds.status();
    absl::StatusOr<std::vector<jit::Build>> lowered = lowered_builds(*builds, target);
    EXPECT_TRUE(lowered.ok()) << name << ": " << lowered.status();
  }
}

// The builds of a rank in an exchanging group: every K2 reduces across the group (its name says
// "_tp2r1"), K1 is the rank-alone build's, and the list is otherwise the same.
TEST(ChecksAndBuilds, ExchangingBuildsReduceAcrossTheGroup) {
  const model::ModelConfig config = tiny();
  const model::RankDims dims = *model::rank_dims(config, 2, 1);
  const dsl::Target target = *dsl::Target::parse("sm_90a");
  absl::StatusOr<std::vector<LayerBuilds>> alone =
      executor_builds(config, dims, 0, config.num_hidden_layers, {.q = 4, .max_rows = 8}, target);
  ASSERT_TRUE(alone.ok()) << alone.status();
  const std::vector<LayerBuilds> exchanging = exchanging_builds(*alone, 2, 1);
  ASSERT_EQ(exchanging.size(), alone->size());
  absl::StatusOr<std::vector<jit::Build>> lowered = lowered_builds(exchanging, target);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  int k2s = 0;
  for (const jit::Build& build : *lowered) {
    if (build.name.rfind("k3_k2_", 0) != 0) continue;
    ++k2s;
    EXPECT_THAT(build.name, ::testing::HasSubstr("_tp2r1")) << build.name;
  }
  EXPECT_GT(k2s, 0);
  for (size_t i = 0; i < exchanging.size(); ++i) {
    EXPECT_EQ(exchanging[i].layer, (*alone)[i].layer);
    for (const auto& [width, build] : exchanging[i].k2) {
      EXPECT_EQ(build.tp, 2);
      EXPECT_EQ(build.rank, 1);
      EXPECT_EQ((*alone)[i].k2.at(width).tp, 1);
    }
    EXPECT_EQ(exchanging[i].k1.size(), (*alone)[i].k1.size());
  }
}

}  // namespace
}  // namespace monotile::runtime::decode
