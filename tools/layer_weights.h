// The weights `monotile layer` runs one KDA layer on one TP rank with: a checkpoint folder, or an
// embedded config with seeded weights (model/seeded_weights.h, the values `monotile model tiny`
// writes for the same seed; at k3's size only the requested rank's slices are made). Only the
// tensors K1 reads are loaded.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/reference/k3_layer_reference.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/shard_plan.h"

namespace monotile::tools {

struct LayerModel {
  model::ModelConfig config;
  model::RankDims dims;
  int layer = 0;
  model::LayerPlan plan;  // the rank's tensors of the layer that K1 reads
  std::unique_ptr<model::TensorSource> source;
  std::string weights;    // "checkpoint DIR" or "seeded weights of k3-tiny (seed 1)"
};

// `model` is a folder (config.json and the shards) or an embedded config's name; `seed` applies
// to a name only (default 1). Refused with the reason: an unknown name or unreadable folder, a seed
// given with a folder, a rank outside 0..tp-1, a layer outside the model, an MLA layer.
absl::StatusOr<LayerModel> open_layer_model(const std::string& model, std::optional<uint64_t> seed, int tp, int rank,
                                            int layer);

// One per-rank tensor's bytes as the kernels read it (the plan's dtype); refused naming the tensor.
absl::StatusOr<std::vector<uint8_t>> load_tensor(const LayerModel& model, const std::string& name);

// The rank's K1 tensors as doubles, for the float64 reference.
absl::StatusOr<kernels::reference::RankLayerWeights> load_reference_weights(const LayerModel& model);

}  // namespace monotile::tools
