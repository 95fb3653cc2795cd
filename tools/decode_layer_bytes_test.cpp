// The floors' bytes at a K3 TP 8 rank: one row reads exactly top_k experts' slices, many rows
// approach every expert, the other weights count whole, a KDA layer's state is a slot read and q
// written per request, an MLA layer's its latent cache entries.
#include "tools/decode_layer_bytes.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/match.h"

namespace monotile::tools {
namespace {

class LayerBytesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = *model::load_config("k3");
    plan_ = *model::plan_rank(config_, 8, 0);
    dims_ = plan_.dims;
  }
  // The bytes of layer `layer`'s routed experts' tensors, and of the others.
  std::pair<double, double> split(int layer) const {
    double routed = 0, other = 0;
    for (const model::RankTensor& t : plan_.layers[static_cast<size_t>(layer)].tensors) {
      (absl::StrContains(t.name, "experts.w") ? routed : other) += static_cast<double>(t.nbytes());
    }
    return {routed, other};
  }
  model::ModelConfig config_;
  model::RankPlan plan_;
  model::RankDims dims_;
};

TEST_F(LayerBytesTest, OneRowReadsItsTopKExperts) {
  const auto [routed, other] = split(1);
  ASSERT_GT(routed, 0);
  const LayerBytes bytes =
      layer_bytes(config_, plan_.layers[1], dims_, {.requests = 1, .q = 1, .conv_state_len = 3});
  EXPECT_NEAR(bytes.weights, other + routed * config_.num_experts_per_token / config_.num_experts,
              1.0);
}

// A benchmark that knows its route counts the experts it chose instead of the expectation.
TEST_F(LayerBytesTest, TheExpertsChosenWhereKnown) {
  const auto [routed, other] = split(1);
  const LayerBytes bytes =
      layer_bytes(config_, plan_.layers[1], dims_,
                  {.requests = 2, .q = 4, .conv_state_len = 6, .chosen_experts = 100});
  EXPECT_NEAR(bytes.weights, other + routed * 100 / config_.num_experts, 1.0);
}

TEST_F(LayerBytesTest, ManyRowsApproachEveryExpert) {
  const auto [routed, other] = split(3);
  const LayerBytes few =
      layer_bytes(config_, plan_.layers[3], dims_, {.requests = 2, .q = 2, .mla_context = 8});
  const LayerBytes many =
      layer_bytes(config_, plan_.layers[3], dims_, {.requests = 512, .q = 2, .mla_context = 8});
  EXPECT_LT(few.weights, other + routed / 4);
  EXPECT_GT(many.weights, other + routed * 0.99);
  EXPECT_LE(many.weights, other + routed);
}

TEST_F(LayerBytesTest, StateIsASlotReadAndQWrittenPerRequest) {
  const LayerBytes kda =
      layer_bytes(config_, plan_.layers[1], dims_, {.requests = 2, .q = 4, .conv_state_len = 6});
  const double slot =
      6.0 * 3 * dims_.kda_projection * 2 + double{1} * dims_.kda_heads * 128 * 128 * 4;
  EXPECT_DOUBLE_EQ(kda.state, 2 * 5 * slot);
  const LayerBytes mla =
      layer_bytes(config_, plan_.layers[3], dims_, {.requests = 2, .q = 4, .mla_context = 10});
  EXPECT_DOUBLE_EQ(mla.state, 2.0 * 14 * (config_.kv_lora_rank + config_.qk_rope_head_dim) * 2);
  // The activations: the prefix read and written, the blocks, the delta in and the output out.
  EXPECT_DOUBLE_EQ(mla.activations, 8.0 * config_.hidden_size * 2 * (4 + config_.block_count()));
}

}  // namespace
}  // namespace monotile::tools
