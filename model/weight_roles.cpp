// The roles of weights and their uniform distributions; see weight_roles.h.
#include "model/weight_roles.h"

#include <algorithm>
#include <cmath>

namespace monotile::model {
namespace {

// The width of a uniform of variance 1.
const double kUnitVarianceWidth = std::sqrt(12.0);

// A scale code's exponent (bias 127): e2m1 codes have rms ~2.8, so 2^(code - 127) brings a row of
// `fan_in` weights to ~1/sqrt(fan-in). Kept within 118..130, where the decoded weights stay normal
// bf16 numbers.
int scale_code_base(double fan_in) {
  const int base = 127 + static_cast<int>(std::lround(std::log2(1.0 / (2.8 * std::sqrt(fan_in)))));
  return std::clamp(base, 118, 129);
}

}  // namespace

WeightRole weight_role(std::string_view name, Dtype dtype) {
  if (dtype == Dtype::kU8) {
    return name.ends_with("_scale") ? WeightRole::kScaleCodes : WeightRole::kPackedCodes;
  }
  if (name.ends_with("norm.weight")) return WeightRole::kNorm;
  if (name.ends_with("A_log")) return WeightRole::kALog;
  if (name.ends_with("dt_bias")) return WeightRole::kDtBias;
  if (name.ends_with("e_score_correction_bias")) return WeightRole::kRouterBias;
  if (name.find("conv1d") != std::string_view::npos) return WeightRole::kConv;
  if (name.find("embed_tokens") != std::string_view::npos) return WeightRole::kEmbedding;
  return WeightRole::kProjection;
}

WeightDistribution weight_distribution(std::string_view name, Dtype dtype,
                                       std::span<const int64_t> shape) {
  const double fan_in = shape.size() >= 2 ? static_cast<double>(shape.back()) : 1.0;
  const WeightRole role = weight_role(name, dtype);
  switch (role) {
    case WeightRole::kNorm:
      return {role, 1.0, 0.1};
    case WeightRole::kALog:
      return {role, std::log(16.0) / 2, std::log(16.0)};
    case WeightRole::kDtBias:
      return {role, 0.0, 0.5};
    case WeightRole::kRouterBias:
      return {role, 0.0, 0.01 * kUnitVarianceWidth};
    case WeightRole::kConv:
      return {role, 0.0, 1.0};
    case WeightRole::kEmbedding:
      return {role, 0.0, kUnitVarianceWidth};
    case WeightRole::kProjection:
      return {role, 0.0, kUnitVarianceWidth, std::sqrt(fan_in)};
    case WeightRole::kPackedCodes:
      return {role, 128.0, 256.0};
    case WeightRole::kScaleCodes:
      return {role, scale_code_base(32 * fan_in) + 1.0, 2.0};
  }
  return {role, 0.0, 0.0};
}

}  // namespace monotile::model
