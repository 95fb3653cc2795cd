// weight_roles: K3's tensors get their roles by name (checkpoint names and a rank's fused names
// alike, every slice of a rank tensor in the rank tensor's role), each role its distribution, and
// SeededWeights draws every tensor of k3-tiny inside its distribution, A_log uniform in
// [0, ln 16) as the device fill draws it.
#include "model/weight_roles.h"

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "model/config.h"
#include "model/seeded_weights.h"
#include "model/shard_plan.h"

namespace monotile::model {
namespace {

ModelConfig config(const std::string& name) {
  absl::StatusOr<ModelConfig> loaded = load_config(name);
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  return *std::move(loaded);
}

// The value of element `index` of a BF16, F32 or U8 tensor's bytes.
double value_at(const std::vector<uint8_t>& bytes, Dtype dtype, size_t index) {
  if (dtype == Dtype::kU8) return bytes[index];
  if (dtype == Dtype::kF32) {
    float value;
    std::memcpy(&value, bytes.data() + 4 * index, 4);
    return value;
  }
  uint16_t bits;
  std::memcpy(&bits, bytes.data() + 2 * index, 2);
  return bf16_to_float(bits);
}

TEST(WeightRoles, K3CheckpointNames) {
  const std::string layer = "language_model.model.layers.3.";
  struct Case {
    std::string name;
    Dtype dtype;
    WeightRole role;
  };
  const std::vector<Case> cases = {
      {layer + "input_layernorm.weight", Dtype::kBF16, WeightRole::kNorm},
      {layer + "self_attention_res_norm.weight", Dtype::kBF16, WeightRole::kNorm},
      {layer + "self_attn.q_a_layernorm.weight", Dtype::kBF16, WeightRole::kNorm},
      {layer + "self_attn.o_norm.weight", Dtype::kF32, WeightRole::kNorm},
      {layer + "self_attn.A_log", Dtype::kF32, WeightRole::kALog},
      {layer + "self_attn.dt_bias", Dtype::kF32, WeightRole::kDtBias},
      {layer + "block_sparse_moe.gate.e_score_correction_bias", Dtype::kF32,
       WeightRole::kRouterBias},
      {layer + "self_attn.q_conv1d.weight", Dtype::kBF16, WeightRole::kConv},
      {"language_model.model.embed_tokens.weight", Dtype::kBF16, WeightRole::kEmbedding},
      {"language_model.lm_head.weight", Dtype::kBF16, WeightRole::kProjection},
      {layer + "self_attn.kv_a_proj_with_mqa.weight", Dtype::kBF16, WeightRole::kProjection},
      {layer + "self_attention_res_proj.weight", Dtype::kBF16, WeightRole::kProjection},
      {layer + "block_sparse_moe.gate.weight", Dtype::kBF16, WeightRole::kProjection},
      {layer + "block_sparse_moe.experts.7.w1.weight_packed", Dtype::kU8, WeightRole::kPackedCodes},
      {layer + "block_sparse_moe.experts.7.w2.weight_scale", Dtype::kU8, WeightRole::kScaleCodes},
      // A rank's fused MXFP4 tensors.
      {"block_sparse_moe.experts.w13_weight", Dtype::kU8, WeightRole::kPackedCodes},
      {"block_sparse_moe.experts.w13_weight_scale", Dtype::kU8, WeightRole::kScaleCodes},
  };
  for (const Case& c : cases) EXPECT_EQ(weight_role(c.name, c.dtype), c.role) << c.name;
}

TEST(WeightRoles, Distributions) {
  const std::vector<int64_t> vector = {7168}, matrix = {12288, 7168}, scales = {3072, 3584 / 32};
  auto range = [](const WeightDistribution& d) { return std::pair{d.low(), d.low() + d.span()}; };
  EXPECT_EQ(range(weight_distribution("x.input_layernorm.weight", Dtype::kBF16, vector)),
            (std::pair{0.95, 1.05}));
  EXPECT_EQ(range(weight_distribution("x.A_log", Dtype::kF32, vector)),
            (std::pair{0.0, std::log(16.0)}));
  EXPECT_EQ(range(weight_distribution("x.dt_bias", Dtype::kF32, vector)), (std::pair{-0.25, 0.25}));
  EXPECT_EQ(range(weight_distribution("x.q_conv1d.weight", Dtype::kBF16, matrix)),
            (std::pair{-0.5, 0.5}));
  EXPECT_NEAR(weight_distribution("x.gate.e_score_correction_bias", Dtype::kF32, vector).span(),
              0.01 * std::sqrt(12.0), 1e-15);
  // Variance span^2 / 12: one over the fan-in, whatever the rows.
  EXPECT_NEAR(weight_distribution("x.q_proj.weight", Dtype::kBF16, matrix).span(),
              std::sqrt(12.0 / 7168), 1e-15);
  EXPECT_EQ(weight_distribution("x.q_proj.weight", Dtype::kBF16, matrix).low(),
            -weight_distribution("x.q_proj.weight", Dtype::kBF16, matrix).span() / 2);
  EXPECT_EQ(range(weight_distribution("x.w1.weight_packed", Dtype::kU8, matrix)),
            (std::pair{0.0, 256.0}));
  // Fan-in 3584: 2.8 * sqrt(3584) = 167.6, 2^-7.39 rounds to exponent 127 - 7.
  EXPECT_EQ(range(weight_distribution("x.w1.weight_scale", Dtype::kU8, scales)),
            (std::pair{120.0, 122.0}));
  // Past fan-in ~2^16 the exponent stays at 118, where decoded weights are normal bf16 numbers.
  const std::vector<int64_t> wide = {8, (int64_t{1} << 22) / 32};
  EXPECT_EQ(weight_distribution("x.w2.weight_scale", Dtype::kU8, wide).low(), 118.0);
}

// A rank's tensors (the device fill names them so) take the roles of the checkpoint tensors
// (SeededWeights names them so) their slices come from, and roles whose values do not depend on
// the fan-in the same values.
TEST(WeightRoles, RankTensorsShareTheirSourcesRoles) {
  const ModelConfig k3 = config("k3");
  absl::StatusOr<RankPlan> plan = plan_rank(k3, 8, 3);
  ASSERT_TRUE(plan.ok()) << plan.status();
  int checked = 0;
  for (const LayerPlan& layer : plan->layers) {
    std::map<std::string_view, const ExpectedTensor*> sources;
    for (const ExpectedTensor& expected : layer.expected) sources[expected.name] = &expected;
    for (const RankTensor& tensor : layer.tensors) {
      const WeightDistribution rank = weight_distribution(tensor.name, tensor.dtype, tensor.shape);
      // A vector's values never scale by a fan-in.
      if (tensor.shape.size() < 2) {
        EXPECT_NE(rank.role, WeightRole::kProjection) << tensor.name;
        EXPECT_NE(rank.role, WeightRole::kScaleCodes) << tensor.name;
      }
      for (const SourceSlice& slice : tensor.slices) {
        auto found = sources.find(slice.tensor);
        ASSERT_NE(found, sources.end()) << slice.tensor;
        const ExpectedTensor& source = *found->second;
        const WeightDistribution whole =
            weight_distribution(source.name, source.dtype, source.shape);
        EXPECT_EQ(rank.role, whole.role) << tensor.name << " from " << source.name;
        if (rank.role != WeightRole::kProjection && rank.role != WeightRole::kScaleCodes) {
          EXPECT_EQ(rank.low(), whole.low()) << tensor.name;
          EXPECT_EQ(rank.span(), whole.span()) << tensor.name;
        }
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

// Every element SeededWeights makes lies in its tensor's distribution (up to the dtype's rounding).
TEST(WeightRoles, SeededWeightsDrawFromTheTable) {
  absl::StatusOr<std::unique_ptr<SeededWeights>> weights =
      SeededWeights::create(config("k3-tiny"), 11);
  ASSERT_TRUE(weights.ok()) << weights.status();
  for (const TensorInfo& tensor : (*weights)->tensors()) {
    const WeightDistribution d = weight_distribution(tensor.name, tensor.dtype, tensor.shape);
    std::vector<uint8_t> bytes(tensor.nbytes());
    ASSERT_TRUE((*weights)->read(tensor, 0, bytes).ok());
    const double slack = tensor.dtype == Dtype::kBF16  ? 0x1.0p-8 * (std::fabs(d.low()) + d.span())
                         : tensor.dtype == Dtype::kF32 ? 1e-6
                                                       : 0.0;
    const double high = tensor.dtype == Dtype::kU8 ? d.low() + d.span() - 1 : d.low() + d.span();
    for (size_t i = 0; i < static_cast<size_t>(tensor.elements()); ++i) {
      const double value = value_at(bytes, tensor.dtype, i);
      ASSERT_GE(value, d.low() - slack) << tensor.name << " [" << i << "]";
      ASSERT_LE(value, high + slack) << tensor.name << " [" << i << "]";
    }
  }
}

// Uniform in [0, ln 16): mean ln 4 (log(1 + 15 u) would have a mean of ~1.96).
TEST(WeightRoles, ALogIsUniformInItsLogs) {
  absl::StatusOr<std::unique_ptr<SeededWeights>> weights =
      SeededWeights::create(config("k3-tiny"), 12);
  ASSERT_TRUE(weights.ok()) << weights.status();
  double sum = 0;
  int count = 0;
  for (const TensorInfo& tensor : (*weights)->tensors()) {
    if (weight_role(tensor.name, tensor.dtype) != WeightRole::kALog) continue;
    std::vector<uint8_t> bytes(tensor.nbytes());
    ASSERT_TRUE((*weights)->read(tensor, 0, bytes).ok());
    for (size_t i = 0; i < static_cast<size_t>(tensor.elements()); ++i) {
      sum += value_at(bytes, tensor.dtype, i);
      ++count;
    }
  }
  ASSERT_GT(count, 100);
  // The mean of `count` draws of standard deviation ln 16 / sqrt(12) = 0.8: within 0.3 of ln 4.
  EXPECT_NEAR(sum / count, std::log(4.0), 0.3);
}

}  // namespace
}  // namespace monotile::model
