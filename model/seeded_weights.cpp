// Seeded weights: each element drawn from a counter-based stream (splitmix64 of the tensor's key
// plus the element index), so any byte range costs only its own elements.
#include "model/seeded_weights.h"

#include <cmath>
#include <cstring>

#include "absl/strings/match.h"
#include "model/shard_plan.h"
#include "model/str_cat.h"
#include "support/status_macros.h"

namespace monotile::model {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t name_hash(std::string_view name) {
  uint64_t hash = 1469598103934665603ull;
  for (char c : name) hash = (hash ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return hash;
}

}  // namespace

uint64_t seeded_tensor_key(uint64_t seed, std::string_view name) { return splitmix64(seed ^ name_hash(name)); }

absl::StatusOr<std::unique_ptr<SeededWeights>> SeededWeights::create(const ModelConfig& config, uint64_t seed) {
  MT_ASSIGN_OR_RETURN(RankPlan plan, plan_rank(config, 1, 0));
  std::unique_ptr<SeededWeights> weights(new SeededWeights());
  weights->seed_ = seed;
  for (const LayerPlan& layer : plan.layers) {
    for (const ExpectedTensor& expected : layer.expected) {
      TensorInfo info;
      info.name = expected.name;
      info.dtype = expected.dtype;
      info.shape = expected.shape;
      // The published checkpoint's A_log is longer than the heads (128 for 96).
      if (absl::EndsWith(expected.name, "A_log")) info.shape = {(expected.shape[0] * 4 + 2) / 3};
      info.begin = 0;
      info.end = info.nbytes();
      info.file = str_cat("seeded weights (seed ", seed, ")");
      Recipe recipe;
      recipe.values = weight_distribution(info.name, info.dtype, info.shape);
      recipe.key = seeded_tensor_key(seed, info.name);
      weights->index_[info.name] = weights->tensors_.size();
      weights->tensors_.push_back(std::move(info));
      weights->recipes_.push_back(recipe);
    }
  }
  return weights;
}

const TensorInfo* SeededWeights::find(std::string_view name) const {
  auto found = index_.find(name);
  return found == index_.end() ? nullptr : &tensors_[found->second];
}

void SeededWeights::element(const TensorInfo& tensor, const Recipe& recipe, int64_t index, uint8_t* out) const {
  const uint64_t bits = splitmix64(recipe.key + static_cast<uint64_t>(index) * 0xd1342543de82ef95ull);
  const WeightDistribution& values = recipe.values;
  if (values.role == WeightRole::kPackedCodes) {
    // Every byte equally likely, as the distribution's [0, 256) has it; taken from the draw's low
    // bits rather than from u, so that seeded checkpoints keep the bytes they were written with.
    *out = static_cast<uint8_t>(bits & 0xff);
    return;
  }
  const double uniform = static_cast<double>(bits >> 11) * 0x1.0p-53;
  if (values.role == WeightRole::kScaleCodes) {
    // low + floor(span u) rather than floor(low + span u): the sum would round up just below a
    // code's end.
    *out = static_cast<uint8_t>(values.low() + std::floor(values.span() * uniform));
    return;
  }
  const double value = values.at(uniform);
  if (tensor.dtype == Dtype::kF32) {
    const float narrowed = static_cast<float>(value);
    std::memcpy(out, &narrowed, 4);
  } else {
    const uint16_t rounded = bf16_from_double(value);
    std::memcpy(out, &rounded, 2);
  }
}

absl::Status SeededWeights::read(const TensorInfo& tensor, uint64_t offset, std::span<uint8_t> out) const {
  auto found = index_.find(tensor.name);
  if (found == index_.end()) return absl::NotFoundError(str_cat("seeded weights have no tensor \"", tensor.name, "\""));
  const TensorInfo& info = tensors_[found->second];
  const Recipe& recipe = recipes_[found->second];
  if (offset + out.size() > info.nbytes()) {
    return absl::OutOfRangeError(str_cat("reading bytes [", offset, ", ", offset + out.size(), ") of \"", info.name,
                                         "\", which has ", info.nbytes()));
  }
  const uint64_t size = static_cast<uint64_t>(dtype_size(info.dtype));
  uint8_t bytes[8];
  for (uint64_t at = offset; at < offset + out.size();) {
    const uint64_t index = at / size, within = at % size;
    const uint64_t take = std::min<uint64_t>(size - within, offset + out.size() - at);
    if (within == 0 && take == size) {
      element(info, recipe, static_cast<int64_t>(index), out.data() + (at - offset));
    } else {
      element(info, recipe, static_cast<int64_t>(index), bytes);
      std::memcpy(out.data() + (at - offset), bytes + within, take);
    }
    at += take;
  }
  return absl::OkStatus();
}

}  // namespace monotile::model
