// The config reader, the embedded configs' derived facts, and the per-rank shapes of k3 at TP 8
// against k3_layer.md 1.2 and k3_checkpoint.md 3.
#include "model/config.h"

#include <string>

#include "gtest/gtest.h"
#include "model/shard_plan.h"
#include "nlohmann/json.hpp"

namespace monotile::model {
namespace {

using Shape = std::vector<int64_t>;

ModelConfig load(std::string_view name) {
  absl::StatusOr<ModelConfig> config = load_config(name);
  EXPECT_TRUE(config.ok()) << config.status();
  return config.ok() ? *config : ModelConfig{};
}

TEST(ModelConfig, K3LayerKinds) {
  ModelConfig c = load("k3");
  std::vector<int> mla;
  for (int layer = 0; layer < c.num_hidden_layers; ++layer) {
    if (!c.is_kda_layer(layer)) mla.push_back(layer);
  }
  std::vector<int> expected;
  for (int layer = 3; layer <= 91; layer += 4) expected.push_back(layer);
  expected.push_back(92);
  EXPECT_EQ(mla, expected);
  EXPECT_EQ(c.block_count(), 8);
  for (int layer : mla) EXPECT_FALSE(c.is_block_write_layer(layer)) << layer;
  EXPECT_EQ(c.served_kind(0), ServedKind::kNone);
  EXPECT_EQ(c.served_kind(1), ServedKind::kWhole);
  EXPECT_EQ(c.served_kind(3), ServedKind::kFfn);
  EXPECT_EQ(c.served_kind(12), ServedKind::kWhole);
  EXPECT_EQ(c.served_kind(92), ServedKind::kFfn);
  EXPECT_EQ(c.previous_blocks(0), 0);
  EXPECT_EQ(c.previous_blocks(12), 1);
  EXPECT_EQ(c.previous_blocks(13), 2);
  EXPECT_FALSE(c.is_moe_layer(0));
  EXPECT_TRUE(c.is_moe_layer(1));
  EXPECT_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_EQ(c.mxfp4_group_size, 32);
}

TEST(ModelConfig, TinyKeepsTheStructure) {
  ModelConfig c = load("k3-tiny");
  EXPECT_GE(c.num_hidden_layers, 13);
  EXPECT_EQ(c.attn_res_block_size, 12);
  EXPECT_TRUE(c.is_block_write_layer(12));
  EXPECT_EQ(c.served_kind(12), ServedKind::kWhole);
  EXPECT_EQ(c.kda_head_dim, 128);
  EXPECT_EQ(c.conv_size, 4);
  EXPECT_FALSE(c.is_moe_layer(0));
  EXPECT_GT(c.num_shared_experts, 0);
  int mla = 0;
  for (int layer = 0; layer < c.num_hidden_layers; ++layer) mla += !c.is_kda_layer(layer);
  EXPECT_GT(mla, 0);
  for (int tp : {1, 2, 4, 8}) EXPECT_TRUE(rank_dims(c, tp, tp - 1).ok()) << tp;
}

TEST(ModelConfig, InProjRowsPerTp) {
  ModelConfig c = load("k3");
  const std::pair<int, int64_t> rows[] = {{1, 49376}, {2, 24752}, {4, 12448}, {8, 6288}};
  for (auto [tp, expected] : rows) {
    absl::StatusOr<RankDims> d = rank_dims(c, tp, 0);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->in_proj_rows, expected) << "tp " << tp;
  }
  EXPECT_EQ(rank_dims(c, 8, 0)->in_proj_pad, 4);
}

TEST(ModelConfig, K3RankShapesAtTp8) {
  ModelConfig c = load("k3");
  absl::StatusOr<RankPlan> plan = plan_rank(c, 8, 3);
  ASSERT_TRUE(plan.ok()) << plan.status();
  auto shape = [&](int layer, std::string_view name) {
    const RankTensor* t = plan->layers[layer].find(name);
    EXPECT_NE(t, nullptr) << name;
    return t ? t->shape : Shape{};
  };
  EXPECT_EQ(shape(1, "self_attn.in_proj_qkvgfab.weight"), (Shape{6288, 7168}));
  EXPECT_EQ(shape(1, "self_attn.f_b_proj.weight"), (Shape{1536, 128}));
  EXPECT_EQ(shape(1, "self_attn.conv1d.weight"), (Shape{4608, 1, 4}));
  EXPECT_EQ(shape(1, "self_attn.dt_bias"), (Shape{1536}));
  EXPECT_EQ(shape(1, "self_attn.A_log"), (Shape{12}));
  EXPECT_EQ(shape(1, "self_attn.o_norm.weight"), (Shape{128}));
  EXPECT_EQ(plan->layers[1].find("self_attn.o_norm.weight")->dtype, Dtype::kBF16);
  EXPECT_EQ(shape(1, "self_attn.o_proj.weight"), (Shape{7168, 1536}));
  EXPECT_EQ(shape(1, "block_sparse_moe.gate.weight"), (Shape{896, 7168}));
  EXPECT_EQ(shape(1, "block_sparse_moe.routed_expert_down_proj.weight"), (Shape{3584, 7168}));
  EXPECT_EQ(shape(1, "block_sparse_moe.routed_expert_up_proj.weight"), (Shape{896, 3584}));
  EXPECT_EQ(shape(1, "block_sparse_moe.shared_experts.gate_up_proj.weight"), (Shape{1536, 7168}));
  EXPECT_EQ(shape(1, "block_sparse_moe.shared_experts.down_proj.weight"), (Shape{7168, 768}));
  EXPECT_EQ(shape(1, "block_sparse_moe.experts.w13_weight"), (Shape{896, 768, 1792}));
  EXPECT_EQ(shape(1, "block_sparse_moe.experts.w13_weight_scale"), (Shape{896, 768, 112}));
  EXPECT_EQ(shape(1, "block_sparse_moe.experts.w2_weight"), (Shape{896, 3584, 192}));
  EXPECT_EQ(shape(1, "block_sparse_moe.experts.w2_weight_scale"), (Shape{896, 3584, 12}));
  EXPECT_EQ(shape(3, "self_attn.fused_qkv_a_proj.weight"), (Shape{3648, 7168}));
  EXPECT_EQ(shape(3, "self_attn.q_b_proj.weight"), (Shape{2304, 1536}));
  EXPECT_EQ(shape(3, "self_attn.kv_b_proj.weight"), (Shape{3072, 512}));
  EXPECT_EQ(shape(3, "self_attn.o_proj.weight"), (Shape{7168, 1536}));
  EXPECT_EQ(shape(0, "mlp.gate_up_proj.weight"), (Shape{8448, 7168}));
  EXPECT_EQ(shape(0, "mlp.down_proj.weight"), (Shape{7168, 4224}));
  // The in_proj slices: q k v g at 0, 1536, 3072, 4608; f_a (all 128 rows) at 6144; beta at 6272.
  const RankTensor* in_proj = plan->layers[1].find("self_attn.in_proj_qkvgfab.weight");
  ASSERT_EQ(in_proj->slices.size(), 6u);
  const int64_t offsets[] = {0, 1536, 3072, 4608, 6144, 6272};
  const int64_t sources[] = {3 * 1536, 3 * 1536, 3 * 1536, 3 * 1536, 0, 36};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(in_proj->slices[i].dest_row, offsets[i]) << i;
    EXPECT_EQ(in_proj->slices[i].row_begin, sources[i]) << i;
  }
}

std::string tiny_text() { return std::string(embedded_config_json("k3-tiny")); }

absl::Status parse_edited(void (*edit)(nlohmann::json&)) {
  nlohmann::json json = nlohmann::json::parse(tiny_text());
  edit(json);
  return parse_config(json.dump(), "config.json").status();
}

TEST(ModelConfig, LayersPrefixFollowsTheArchitecture) {
  // The published checkpoint's config nests the text model (vLLM names its layers under
  // language_model); a text-only config.json is the model itself.
  EXPECT_EQ(load("k3").layers_prefix, "language_model.model.layers");
  nlohmann::json nested = nlohmann::json::parse(tiny_text());
  absl::StatusOr<ModelConfig> text_only = parse_config(nested["text_config"].dump(), "config.json");
  ASSERT_TRUE(text_only.ok()) << text_only.status();
  EXPECT_EQ(text_only->layers_prefix, "model.layers");
}

TEST(ModelConfig, MissingFieldIsNamed) {
  absl::Status status = parse_edited([](nlohmann::json& j) { j["text_config"].erase("hidden_size"); });
  EXPECT_EQ(status.message(), "config.json: field \"text_config.hidden_size\" is missing; expected an integer >= 1");
}

TEST(ModelConfig, WrongTypeSaysExpectedAndActual) {
  absl::Status status = parse_edited([](nlohmann::json& j) { j["text_config"]["num_experts"] = "many"; });
  EXPECT_EQ(status.message(),
            "config.json: field \"text_config.num_experts\" is string \"many\"; expected an integer >= 1");
}

TEST(ModelConfig, ContradictionIsRefused) {
  absl::Status status = parse_edited([](nlohmann::json& j) { j["text_config"]["linear_attn_config"]["kda_layers"].push_back(14); });
  EXPECT_EQ(status.message(),
            "config.json: field \"linear_attn_config.kda_layers\" holds 14; expected 1-based layers in 1..13");
  status = parse_edited([](nlohmann::json& j) { j["text_config"]["num_experts_per_token"] = 17; });
  EXPECT_NE(status.message().find("num_experts_per_token"), absl::string_view::npos) << status;
  status = parse_edited([](nlohmann::json& j) { j["text_config"]["linear_attn_config"]["gate_lower_bound"] = -6.0; });
  EXPECT_NE(status.message().find("gate_lower_bound"), absl::string_view::npos) << status;
}

TEST(ModelConfig, TpThatDoesNotDivideIsRefused) {
  ModelConfig c = load("k3");
  absl::StatusOr<RankDims> d = rank_dims(c, 5, 0);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(), "config \"k3\" at tp 5: \"linear_attn_config.num_heads\" is 96; expected a multiple of the TP size 5");
  EXPECT_FALSE(rank_dims(c, 8, 8).ok());
}

TEST(ModelConfig, UnknownNameSaysWhatExists) {
  absl::StatusOr<ModelConfig> c = load_config("/nonexistent/k4");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("k3, k3-tiny"), absl::string_view::npos) << c.status();
}

}  // namespace
}  // namespace monotile::model
