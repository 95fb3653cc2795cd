// Random weights for an embedded config, made tensor by tensor on request: every tensor the TP 1
// plan expects, each element a pure function of (seed, tensor name, element index), so that one
// rank's slices of one layer are produced without producing the rest (k3 is about 1 TB). Values by
// the tensor's role, as model/weight_roles.h lays them out: norm weights near 1, projections of
// variance 1/fan-in, A_log uniform in [0, ln 16), dt_bias small, conv weights U(-0.5, 0.5), MXFP4
// experts with random codes and scales giving rows of ~1/sqrt(fan-in). The tiny checkpoint
// generator writes exactly these values.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/weight_roles.h"

namespace monotile::model {

// The key of a tensor's stream: a hash of the seed and the tensor's name (other generators of
// seeded tensors, such as a fill on the device, draw from the same keys).
uint64_t seeded_tensor_key(uint64_t seed, std::string_view name);

class SeededWeights : public TensorSource {
 public:
  // Every tensor plan_rank(config, 1, 0) expects, in the plan's order (A_log as long as the
  // published checkpoint's: 4/3 of the heads, rounded up).
  static absl::StatusOr<std::unique_ptr<SeededWeights>> create(const ModelConfig& config, uint64_t seed);

  const TensorInfo* find(std::string_view name) const override;
  // Any byte range of a tensor; a read past its end is refused, naming the tensor.
  absl::Status read(const TensorInfo& tensor, uint64_t offset, std::span<uint8_t> out) const override;

  // The tensors in the plan's order (layers 0..n-1, then the model-level ones).
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  uint64_t seed() const { return seed_; }

 private:
  struct Recipe {
    WeightDistribution values;
    uint64_t key = 0;  // the stream of this tensor: hash of the seed and the name
  };
  SeededWeights() = default;
  // The element's bytes (1, 2 or 4 of them) written at `out`.
  void element(const TensorInfo& tensor, const Recipe& recipe, int64_t index, uint8_t* out) const;

  uint64_t seed_ = 0;
  std::vector<TensorInfo> tensors_;
  std::vector<Recipe> recipes_;
  std::map<std::string, size_t, std::less<>> index_;
};

}  // namespace monotile::model
