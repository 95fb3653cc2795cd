#include "runtime/decode/weight_reasons.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "model/shard_plan.h"
#include "model/str_cat.h"

namespace monotile::runtime::decode {
namespace {

using model::Dtype;
using model::ServedKind;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const model::ModelConfig& tiny() {
  static const model::ModelConfig config = *model::load_config("k3-tiny");
  return config;
}

int first_layer(ServedKind kind) {
  for (int layer = 0; layer < tiny().num_hidden_layers; ++layer) {
    if (tiny().served_kind(layer) == kind) return layer;
  }
  return -1;
}

// Every per-rank tensor of every layer, dense, at TP 1.
Backbone good_backbone() {
  Backbone backbone{
      &tiny(), 1, 0, 0, tiny().num_hidden_layers, {}, "", std::string(kCheckpointExpertsLayout)};
  model::RankPlan plan = *model::plan_rank(tiny(), 1, 0);
  uint64_t address = 0x1000;
  for (const model::LayerPlan& layer : plan.layers) {
    for (const model::RankTensor& tensor : layer.tensors) {
      backbone.weights[layer.layer][tensor.name] =
          TensorView::dense(tensor.dtype, tensor.shape, address);
      address += (tensor.nbytes() + 255) / 256 * 256;  // as an allocator places them
    }
  }
  return backbone;
}

TEST(WeightReasons, EveryWeightAsPlannedIsAccepted) {
  ASSERT_GT(first_layer(ServedKind::kWhole), 0);
  ASSERT_GT(first_layer(ServedKind::kFfn), 0);
  EXPECT_THAT(weight_reasons(good_backbone()), ElementsAre());
}

TEST(WeightReasons, LayersPrefixEndingInADot) {
  Backbone backbone = good_backbone();
  backbone.layers_prefix = "model.layers.";
  EXPECT_THAT(
      weight_reasons(backbone),
      ElementsAre(
          "layers_prefix \"model.layers.\" ends in \".\": expected the decoder layers' module "
          "prefix without the index or its dot, as vLLM names it "
          "(\"language_model.model.layers\"), so that layer 1's attention is "
          "\"<layers_prefix>.1.self_attn\""));
  backbone.layers_prefix = "model.layers";
  EXPECT_THAT(weight_reasons(backbone), ElementsAre());
}

TEST(WeightReasons, ExpertsInAnotherLayoutNameTheCheckpoints) {
  Backbone backbone = good_backbone();
  backbone.experts_layout = "triton_kernels hopper swizzle";
  EXPECT_THAT(
      weight_reasons(backbone),
      ElementsAre(
          "experts_layout \"triton_kernels hopper swizzle\" is not read by the kernels: expected "
          "\"checkpoint\", the layout the kernels read the MXFP4 experts in (the checkpoint's "
          "w13/w2 "
          "bytes and E8M0 scales, split on the intermediate as vLLM loads them); hint: keep the "
          "checkpoint's expert bytes for the kernels (a MoE backend that re-lays them after "
          "loading "
          "gives other values in the same shapes) and declare Backbone::experts_layout "
          "\"checkpoint\""));
}

TEST(WeightReasons, ExpertsLayoutNotDeclared) {
  Backbone backbone = good_backbone();
  backbone.experts_layout.clear();
  EXPECT_THAT(weight_reasons(backbone),
              ElementsAre(testing::StartsWith(
                  "experts_layout is not declared: expected \"checkpoint\", the layout "
                  "the kernels read the MXFP4 experts in")));
}

// docs/decode.md's cost of keeping the checkpoint's expert bytes at K3 TP 8: 1,965,293,568 bytes a
// layer on each rank (1.83 GiB), 180,807,008,256 over the 92 MoE layers (168.4 GiB).
TEST(WeightReasons, K3ExpertBytesAtTp8AsTheDocsSay) {
  const model::ModelConfig k3 = *model::load_config("k3");
  const model::RankPlan plan = *model::plan_rank(k3, 8, 0);
  uint64_t bytes = 0, layer_one = 0;
  int layers = 0;
  for (const model::LayerPlan& layer : plan.layers) {
    bool any = false;
    for (const model::RankTensor& t : layer.tensors) {
      if (t.name.find("block_sparse_moe.experts.") == std::string::npos) continue;
      bytes += t.nbytes();
      if (layer.layer == 1) layer_one += t.nbytes();
      any = true;
    }
    layers += any;
  }
  EXPECT_EQ(layers, 92);
  EXPECT_EQ(layer_one, uint64_t{1'965'293'568});
  EXPECT_EQ(bytes, uint64_t{180'807'008'256});
}

TEST(WeightReasons, MissingWeight) {
  Backbone backbone = good_backbone();
  int layer = first_layer(ServedKind::kWhole);
  backbone.weights[layer].erase("block_sparse_moe.gate.weight");
  EXPECT_THAT(weight_reasons(backbone),
              ElementsAre(testing::MatchesRegex(
                  "layer [0-9]+ weight \"block_sparse_moe.gate.weight\" is missing: expected BF16 "
                  "\\[[0-9]+, [0-9]+\\] contiguous")));
}

TEST(WeightReasons, DtypeDiffers) {
  Backbone backbone = good_backbone();
  int layer = first_layer(ServedKind::kWhole);
  TensorView& view = backbone.weights.at(layer).at("self_attn.A_log");
  view.dtype = Dtype::kBF16;
  std::vector<std::string> reasons = weight_reasons(backbone);
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_THAT(reasons[0], HasSubstr("weight \"self_attn.A_log\": dtype differs: expected F32 ["));
  EXPECT_THAT(reasons[0], HasSubstr(", found BF16 ["));
}

TEST(WeightReasons, TheDocumentedExample) {
  Backbone backbone = good_backbone();
  backbone.weights.at(1).at("self_attn.A_log").dtype = Dtype::kBF16;
  EXPECT_THAT(weight_reasons(backbone),
              ElementsAre("layer 1 weight \"self_attn.A_log\": dtype differs: expected F32 "
                          "[8] contiguous, found BF16 [8] strides [1]"));
}

TEST(WeightReasons, ShapeDiffers) {
  Backbone backbone = good_backbone();
  int layer = first_layer(ServedKind::kFfn);
  TensorView& view = backbone.weights.at(layer).at("self_attn.o_proj.weight");
  std::vector<int64_t> expected = view.shape;
  view = TensorView::dense(view.dtype, {expected[0], expected[1] * 2});
  EXPECT_THAT(
      weight_reasons(backbone),
      ElementsAre(model::str_cat("layer ", layer,
                                 " weight \"self_attn.o_proj.weight\": shape differs: expected "
                                 "BF16 ",
                                 shape_text(expected), " contiguous, found ", describe(view))));
}

TEST(WeightReasons, StridedWeight) {
  Backbone backbone = good_backbone();
  int layer = first_layer(ServedKind::kWhole);
  TensorView& view = backbone.weights.at(layer).at("block_sparse_moe.gate.weight");
  view.strides[0] += 8;
  EXPECT_THAT(weight_reasons(backbone),
              ElementsAre(HasSubstr(
                  "weight \"block_sparse_moe.gate.weight\" is strided: expected BF16 [")));
  EXPECT_THAT(weight_reasons(backbone)[0],
              HasSubstr("(the kernels read weights in place; make the tensor contiguous)"));
}

// The kernels read every weight in 16-byte vectors: a view starting elsewhere would fault them.
TEST(WeightReasons, MisalignedWeight) {
  Backbone backbone = good_backbone();
  int layer = first_layer(ServedKind::kFfn);
  TensorView& view = backbone.weights.at(layer).at("block_sparse_moe.experts.w13_weight");
  view.data += 4;
  EXPECT_THAT(weight_reasons(backbone),
              ElementsAre(model::str_cat(
                  "layer ", layer,
                  " weight \"block_sparse_moe.experts.w13_weight\" starts at "
                  "byte address 0x",
                  absl::StrCat(absl::Hex(view.data)),
                  ", not a multiple of 16 (the kernels read it in 16-byte vectors: give "
                  "it its own allocation, or an offset into one that is a multiple of 16 "
                  "bytes)")));
}

TEST(WeightReasons, AnMlaLayersAttentionIsTheHostsAndNotChecked) {
  Backbone backbone = good_backbone();
  int layer = first_layer(ServedKind::kFfn);
  std::vector<std::string> host_weights;
  for (const auto& [name, view] : backbone.weights[layer]) {
    if ((name.starts_with("self_attn.") && name != "self_attn.o_proj.weight") ||
        name.starts_with("input_layernorm")) {
      host_weights.push_back(name);
    }
  }
  ASSERT_FALSE(host_weights.empty());
  for (const std::string& name : host_weights) backbone.weights[layer].erase(name);
  EXPECT_THAT(weight_reasons(backbone), ElementsAre());
}

TEST(WeightReasons, LayersOutsideTheRankRangeAreNotChecked) {
  Backbone backbone = good_backbone();
  int layer = first_layer(ServedKind::kWhole);
  backbone.weights.erase(layer);
  backbone.start_layer = layer + 1;
  EXPECT_THAT(weight_reasons(backbone), ElementsAre());
}

TEST(WeightReasons, NoServedLayerInRange) {
  Backbone backbone = good_backbone();
  backbone.end_layer = 1;
  EXPECT_THAT(weight_reasons(backbone),
              ElementsAre("no served layer in this rank's layers [0, 1): expected a KDA or MLA MoE "
                          "layer past layer 0"));
}

TEST(WeightReasons, ConfigReasonsComeFirst) {
  model::ModelConfig config = tiny();
  config.routed_scaling_factor = 2.5;
  Backbone backbone = good_backbone();
  backbone.config = &config;
  EXPECT_THAT(
      weight_reasons(backbone),
      ElementsAre(
          "config: routed_scaling_factor is 2.5; expected 1.0 (the kernels apply no scaling)"));
}

TEST(WeightReasons, ATpSplitTheConfigRefuses) {
  Backbone backbone = good_backbone();
  backbone.tp = 3;
  std::vector<std::string> reasons = weight_reasons(backbone);
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_THAT(reasons[0], HasSubstr("rank 0 of TP 3: "));
}

TEST(WeightReasons, EveryMismatchOfEveryLayerIsListedInLayerOrder) {
  Backbone backbone = good_backbone();
  int whole = first_layer(ServedKind::kWhole), ffn = first_layer(ServedKind::kFfn);
  backbone.weights[ffn].erase("block_sparse_moe.gate.weight");
  backbone.weights.at(whole).at("self_attn.dt_bias").dtype = Dtype::kBF16;
  backbone.weights[whole].erase("post_attention_layernorm.weight");
  std::vector<std::string> reasons = weight_reasons(backbone);
  ASSERT_EQ(reasons.size(), 3u);
  int low = std::min(whole, ffn);
  EXPECT_THAT(reasons[0], HasSubstr(model::str_cat("layer ", low, " weight")));
  EXPECT_THAT(reasons[2], HasSubstr(model::str_cat("layer ", std::max(whole, ffn), " weight")));
}

}  // namespace
}  // namespace monotile::runtime::decode
