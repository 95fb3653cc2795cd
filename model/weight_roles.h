// What each tensor of a K3 checkpoint or rank plan is for, told by its name and dtype, and the
// uniform distribution its random values come from. Both makers of random weights read this one
// table, so that their weights have the same scales: SeededWeights on the host (float64, the values
// `monotile model tiny` writes) and the device fill of tools/decode_random_weights.h, which can
// only compute low + span * u. Every role is therefore a single uniform: A_log too, uniform in
// [0, ln 16), i.e. exp(A_log) log-uniform over the range of Mamba's A in [1, 16).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "model/dtype.h"

namespace monotile::model {

enum class WeightRole {
  kNorm,         // RMSNorm gains: near 1
  kALog,         // KDA's decay logs
  kDtBias,       // KDA's gate bias
  kRouterBias,   // the router's e_score_correction_bias
  kConv,         // short convolutions
  kEmbedding,    // token embeddings: variance 1, the scale of a normed hidden state
  kProjection,   // every other matrix: variance 1/fan-in, so a row's dot product keeps the scale
  kPackedCodes,  // MXFP4 weights: two e2m1 codes a byte, every byte equally likely
  kScaleCodes,   // MXFP4 E8M0 scale exponents, one per 32 weights
};

// The role by name suffix; any U8 tensor is MXFP4: scales end in "_scale", the rest is packed (a
// checkpoint's "weight_packed" and a rank's fused "w13_weight" alike).
WeightRole weight_role(std::string_view name, Dtype dtype);

// Values uniform over [center - width / 2, center + width / 2), the width divided by sqrt(fan-in)
// for the roles whose scale depends on it. Codes (U8) take the floor of the value.
struct WeightDistribution {
  WeightRole role = WeightRole::kProjection;
  double center = 0;
  double width = 0;
  // sqrt(fan-in) where the width depends on it, else 1. Kept apart from the width so that at(u)
  // divides by it, rounding as the seeded checkpoints' projections were computed.
  double width_divisor = 1;

  // The value of uniform u in [0, 1).
  double at(double u) const { return center + width * (u - 0.5) / width_divisor; }
  // As the device fill takes them: the value is low() + span() * u.
  double low() const { return center - span() / 2; }
  double span() const { return width / width_divisor; }
};

// The distribution of a tensor's values; `shape` is what the caller holds (the whole tensor, or
// one rank's slice of it), its last dimension the fan-in (times 32 for scale codes: one code per
// 32 weights of a row).
WeightDistribution weight_distribution(std::string_view name, Dtype dtype,
                                       std::span<const int64_t> shape);

}  // namespace monotile::model
